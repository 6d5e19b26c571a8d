"""``__transaction_state`` values against Kafka's Java code (tools/java/TxnLogOracle.java).

What the transaction coordinator writes (``_txn_records.record_of``), TransactionLogValue v0 (Kafka
3.9's record, written while ``transaction.version`` < 2) and v1 (Kafka 4.x's, flexible, with the
tagged PreviousProducerId, NextProducerId and ClientTransactionVersion), is byte for byte what
Kafka's protocol types write for the schemas its generator makes of TransactionLogValue.json, and
Kafka reads kwire's bytes back to the same fields; kwire reads Kafka's bytes to the same state.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import pytest

from kwire.broker._txn_records import TransactionMetadata, decode_record, record_of
from kwire.log.internal_topics import TransactionState

pytestmark = pytest.mark.oracle

SEED = 20261126
STATES = [s for s in TransactionState if s is not TransactionState.DEAD]


@pytest.fixture(scope="module")
def oracle(start_java: Callable[..., Any]) -> Any:
    return start_java("TxnLogOracle", ["TxnLogOracle"])


def random_meta(rng: random.Random) -> TransactionMetadata:
    state = rng.choice(STATES)
    partitions = frozenset(
        (rng.choice(["t", "topic-é", "__consumer_offsets", "x" * rng.randint(1, 300)]),
         rng.randint(0, 2**31 - 1))
        for _ in range(0 if state is TransactionState.EMPTY else rng.randint(0, 6))
    )  # fmt: skip
    return TransactionMetadata(
        "txn",
        producer_id=rng.choice([0, 1, rng.randint(0, 2**63 - 1)]),
        producer_epoch=rng.choice([0, 1, 32766, 32767, rng.randint(0, 32767)]),
        timeout_ms=rng.randint(1, 900_000),
        state=state,
        partitions=partitions,
        start_ms=rng.choice([-1, rng.randint(0, 2**45)]),
        last_update_ms=rng.randint(0, 2**45),
        previous_producer_id=rng.choice([-1, rng.randint(0, 2**63 - 1)]),
        next_producer_id=rng.choice([-1, -1, rng.randint(0, 2**63 - 1)]),
        client_transaction_version=rng.choice([0, 1, 2]),
    )


def as_json(meta: TransactionMetadata) -> dict[str, Any]:
    by_topic: dict[str, list[int]] = {}
    for topic, index in sorted(meta.partitions):
        by_topic.setdefault(topic, []).append(index)
    return {
        "producerId": meta.producer_id,
        "producerEpoch": meta.producer_epoch,
        "timeoutMs": meta.timeout_ms,
        "status": int(meta.state),
        "partitions": None
        if meta.state is TransactionState.EMPTY
        else [{"topic": t, "ids": ids} for t, ids in by_topic.items()],
        "lastUpdateMs": meta.last_update_ms,
        "startMs": meta.start_ms,
        "previousProducerId": meta.previous_producer_id,
        "nextProducerId": meta.next_producer_id,
        "clientTransactionVersion": meta.client_transaction_version,
    }


@pytest.mark.parametrize("version", [0, 1])
def test_kafka_writes_and_reads_the_same_value(oracle: Any, version: int) -> None:
    rng = random.Random(SEED + version)
    for _ in range(200):
        meta = random_meta(rng)
        value = record_of(meta, version).value
        assert value is not None
        wanted = as_json(meta)
        java = oracle.request({"op": "encode", "version": version, "value": wanted})
        assert "error" not in java, java
        assert value.hex() == java["hex"], meta
        read = oracle.request({"op": "decode", "hex": value.hex()})
        if version == 0:  # v0 has no room for these: Kafka reads them at their defaults
            wanted.update(previousProducerId=-1, nextProducerId=-1, clientTransactionVersion=0)
        assert read == {"version": version, "value": wanted}
        decoded = decode_record(record_of(meta, version).key, bytes.fromhex(java["hex"]))
        assert decoded is not None and decoded[1] is not None
        assert as_json(decoded[1]) == wanted
