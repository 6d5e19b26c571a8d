"""The transaction coordinator's shard and runtime without a broker: its records are the state.

A property test drives random InitProducerId / AddPartitionsToTxn / EndTxn (TV1 and TV2) / timer
sequences through the real shard and runtime, whose records go to an in-memory
``__transaction_state``; a second shard rebuilt only by replaying those records must hold exactly
the same state, and a load from the log's bytes the same state but for what Kafka does not write
(the last epoch; and, in value v0, the fields v0 has no room for). Then the records themselves:
value v1 with KIP-890's tagged fields, v0 without, both read back.
"""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kwire.broker._txn import MemoryTransactionLog, TransactionCoordinator
from kwire.broker._txn_records import (
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    TransactionMetadata,
    TxnRecord,
    decode_record,
    record_of,
)
from kwire.broker._txn_shard import TransactionShard
from kwire.log.internal_topics import TransactionState, read_version
from kwire.log.storage import KafkaStorageError
from kwire.protocol import ErrorCode
from kwire.protocol.messages import TransactionLogValue

NOW = 1_700_000_000_000
IDS = ["a", "b", "c"]
PARTITIONS = [("t", 0), ("t", 1), ("u", 0), ("__consumer_offsets", 7)]
TIMEOUT = 10_000

ACTIONS = st.lists(
    st.tuples(
        st.sampled_from(["init", "init_expected", "add", "end", "end_v2", "wait", "exhaust"]),
        st.integers(0, len(IDS) - 1),
        st.integers(-1, 1),  # an epoch offset: stale, current, ahead
        st.booleans(),  # commit
        st.integers(0, 40_000),  # ms to wait
    ),
    max_size=60,
)


def coordinator(log: MemoryTransactionLog, tv: int) -> TransactionCoordinator:
    pids = itertools.count(1000)
    return TransactionCoordinator(
        None,
        log=log,
        allocate_producer_id=lambda: next(pids),
        transaction_version=lambda: tv,
        now_ms=NOW,
    )


def not_written(meta: TransactionMetadata, tv: int) -> TransactionMetadata:
    """``meta`` without what a record of that transaction version does not carry (Kafka's load
    starts those at their defaults)."""
    meta = dataclasses.replace(meta, last_producer_epoch=NO_PRODUCER_EPOCH)
    if tv < 2:
        meta = dataclasses.replace(
            meta,
            previous_producer_id=NO_PRODUCER_ID,
            next_producer_id=NO_PRODUCER_ID,
            client_transaction_version=0,
        )
    return meta


def drive(coord: TransactionCoordinator, actions: list[Any]) -> None:
    now = NOW
    for action, who, offset, commit, ms in actions:
        txn = IDS[who]
        meta = coord.transactions.get(txn)
        pid = meta.producer_id if meta else 0
        epoch = (meta.producer_epoch if meta else 0) + offset
        if action == "init":
            coord.init_producer_id(txn, TIMEOUT, None, now)
        elif action == "init_expected" and meta is not None:
            coord.init_producer_id(txn, TIMEOUT, (pid, epoch), now)
        elif action == "add":
            tps = [PARTITIONS[(who + offset + i) % len(PARTITIONS)] for i in range(1 + ms % 3)]
            coord.add_partitions(txn, pid, epoch, tps, now)
        elif action in ("end", "end_v2"):
            coord.end_txn(txn, pid, epoch, commit, now, epoch_bump=action == "end_v2")
        elif action == "wait":
            now += ms * 100  # up to an hour: timeouts and, with the ticks, expirations
            coord.tick(now)
            coord.expire_transactional_ids(now)
        elif action == "exhaust" and meta is not None and meta.state is not TransactionState.DEAD:
            # a producer near the end of its epochs, written as a record (so replayed too)
            coord._apply(meta.transit(producer_epoch=32764 + offset + 1), now)
        for m in coord.transactions.values():
            # the runtime completes what it prepares before it answers
            assert m.state not in (TransactionState.PREPARE_COMMIT, TransactionState.PREPARE_ABORT)
            assert 0 <= m.producer_epoch <= 2**15 - 1


@settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(actions=ACTIONS, tv=st.sampled_from([1, 2]))
def test_replaying_the_records_rebuilds_the_state(actions: list[Any], tv: int) -> None:
    log = MemoryTransactionLog(3)
    live = coordinator(log, tv)
    decided: dict[str, TransactionMetadata] = {}
    make_record = live.shard.record

    def record(meta: TransactionMetadata) -> TxnRecord:
        decided[meta.transactional_id] = meta
        return make_record(meta)

    live.shard.record = record  # type: ignore[method-assign]
    drive(live, actions)

    # 0. what each operation decided is what its record, replayed, made (nothing is lost)
    alive = {t: m for t, m in decided.items() if m.state is not TransactionState.DEAD}
    assert live.transactions == alive

    # 1. the records with what Kafka keeps beside them: exactly the same state
    replayed = TransactionShard(
        allocate_producer_id=lambda: -2, value_version=lambda: 1 if tv >= 2 else 0
    )
    for written in log.records:
        replayed.replay(written.key, written.value, written.transit)
    assert replayed.transactions == live.transactions

    # 2. a restart: the same replay over the log's bytes (nothing is prepared, so it writes
    #    nothing); equal but for what the records do not carry
    count = len(log.records)
    loaded = coordinator(log, tv)
    loaded.load()
    assert len(log.records) == count
    assert {t: not_written(m, tv) for t, m in live.transactions.items()} == loaded.transactions

    # 3. every value is of the version the transaction.version asks for
    versions = {read_version(r.value)[0] for r in log.records if r.value is not None}
    assert versions <= {1 if tv >= 2 else 0}


def test_a_failed_append_changes_nothing() -> None:
    class OfflineLog(MemoryTransactionLog):
        offline = False

        def append(self, transactional_id: str, record: TxnRecord, now_ms: int) -> None:
            if self.offline:
                raise KafkaStorageError(message="the log dir is offline")
            super().append(transactional_id, record, now_ms)

    log = OfflineLog(3)
    coord = coordinator(log, 2)
    first = coord.init_producer_id("a", TIMEOUT, None, NOW)
    assert first.error is ErrorCode.NONE
    before = dict(coord.transactions)
    log.offline = True
    assert coord.init_producer_id("a", TIMEOUT, None, NOW).error is ErrorCode.NOT_COORDINATOR
    assert coord.add_partitions("a", first.producer_id, 0, [("t", 0)], NOW) is (
        ErrorCode.NOT_COORDINATOR
    )
    assert coord.init_producer_id("new", TIMEOUT, None, NOW).error is ErrorCode.NOT_COORDINATOR
    assert coord.transactions == before


def test_a_prepared_transaction_found_at_load_is_completed() -> None:
    """The TV2 rotation survives a crash after the Prepare record: the record names the next
    producer id, and the completion at load moves to it."""
    log = MemoryTransactionLog(3)
    coord = coordinator(log, 2)
    pid = coord.init_producer_id("a", TIMEOUT, None, NOW).producer_id
    meta = coord.transactions["a"]
    coord._apply(
        meta.transit(
            state=TransactionState.PREPARE_COMMIT,
            producer_epoch=32767,
            next_producer_id=4242,
            partitions=frozenset({("t", 0)}),
        ),
        NOW,
    )
    again = coordinator(log, 2)
    again.load()
    done = again.transactions["a"]
    assert done.state is TransactionState.COMPLETE_COMMIT
    assert (done.producer_id, done.producer_epoch, done.previous_producer_id) == (4242, 0, pid)
    assert done.partitions == frozenset()


# --- the records ----------------------------------------------------------------------------


def sample(**changes: Any) -> TransactionMetadata:
    return TransactionMetadata(
        "txn-é",
        producer_id=17,
        producer_epoch=3,
        last_producer_epoch=2,
        previous_producer_id=11,
        timeout_ms=60_000,
        state=TransactionState.ONGOING,
        partitions=frozenset({("t", 1), ("t", 0), ("u", 5)}),
        start_ms=NOW,
        last_update_ms=NOW + 5,
        next_producer_id=23,
        client_transaction_version=2,
    ).transit(**changes)


def test_value_v1_carries_the_tagged_fields() -> None:
    record = record_of(sample(), 1)
    assert record.value is not None
    version, body = read_version(record.value)
    assert version == 1
    value = TransactionLogValue.decode(body, 1)
    assert (value.previous_producer_id, value.next_producer_id) == (11, 23)
    assert value.client_transaction_version == 2
    assert [(p.topic, p.partition_ids) for p in value.transaction_partitions or ()] == [
        ("t", [0, 1]),
        ("u", [5]),
    ]
    # the bytes end with the three tags, in tag order (0, 1, 2), after the last fixed field
    # (TransactionStartTimestampMs, an int64): count 3, then tag, size, value for each
    tail = bytes(body)[-(1 + 2 + 8 + 2 + 8 + 2 + 2) :]
    assert tail[:1] == b"\x03"
    assert tail[1:3] == b"\x00\x08" and int.from_bytes(tail[3:11], "big") == 11
    assert tail[11:13] == b"\x01\x08" and int.from_bytes(tail[13:21], "big") == 23
    assert tail[21:23] == b"\x02\x02" and tail[23:] == b"\x00\x02"
    # read back: everything but the last epoch, which no record carries
    decoded = decode_record(record.key, record.value)
    assert decoded is not None
    assert decoded[1] == sample(last_producer_epoch=NO_PRODUCER_EPOCH)


def test_value_v1_writes_no_tag_at_its_default() -> None:
    meta = sample(previous_producer_id=-1, next_producer_id=-1, client_transaction_version=0)
    value = record_of(meta, 1).value
    assert value is not None and value.endswith(b"\x00")  # no tagged field
    decoded = TransactionLogValue.decode(read_version(value)[1], 1)
    assert (decoded.previous_producer_id, decoded.next_producer_id) == (-1, -1)
    assert decoded.client_transaction_version == 0 and decoded.unknown_tags is None


def test_value_v0_is_kafka_3_9s_layout() -> None:
    """Version 0: ProducerId int64, ProducerEpoch int16, TransactionTimeoutMs int32,
    TransactionStatus int8, TransactionPartitions (nullable array: topic string, int32 ids),
    TransactionLastUpdateTimestampMs int64, TransactionStartTimestampMs int64; no tags."""
    record = record_of(sample(partitions=frozenset({("t", 0)})), 0)
    assert record.key == b"\x00\x00" + b"\x00\x06" + "txn-é".encode()
    expected = (
        b"\x00\x00"
        + (17).to_bytes(8, "big")
        + (3).to_bytes(2, "big")
        + (60_000).to_bytes(4, "big")
        + bytes([TransactionState.ONGOING])
        + (1).to_bytes(4, "big")
        + b"\x00\x01t"
        + (1).to_bytes(4, "big")
        + (0).to_bytes(4, "big")
        + (NOW + 5).to_bytes(8, "big")
        + NOW.to_bytes(8, "big")
    )
    assert record.value == expected
    empty = record_of(sample(state=TransactionState.EMPTY), 0).value
    assert empty is not None and empty[17:21] == b"\xff\xff\xff\xff"  # null partitions
    decoded = decode_record(record.key, record.value)
    assert decoded is not None and decoded[1] is not None
    assert decoded[1].previous_producer_id == NO_PRODUCER_ID  # v0 has no room for it


def test_a_tombstone_and_unknown_versions() -> None:
    tomb = record_of(sample(state=TransactionState.DEAD), 1)
    assert tomb.value is None
    assert decode_record(tomb.key, None) == ("txn-é", None)
    good = record_of(sample(), 1)
    assert good.value is not None
    assert decode_record(b"\x00\x01" + good.key[2:], good.value) is None  # unknown key version
    assert decode_record(good.key, b"\x00\x09" + good.value[2:]) is None  # unknown value version
    shard = TransactionShard(allocate_producer_id=lambda: 0, value_version=lambda: 1)
    shard.replay(good.key, good.value, good.transit)
    assert "txn-é" in shard.transactions
    shard.replay(tomb.key, tomb.value)
    assert shard.transactions == {}


@pytest.mark.parametrize("tv", [1, 2])
def test_the_transaction_version_picks_the_value_version(tv: int) -> None:
    log = MemoryTransactionLog(1)
    coord = coordinator(log, tv)
    assert coord.init_producer_id("a", TIMEOUT, None, NOW).error is ErrorCode.NONE
    (record,) = log.records
    assert record.value is not None
    assert read_version(record.value)[0] == (1 if tv >= 2 else 0)
