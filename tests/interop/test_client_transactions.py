"""kwire.client's transactional producer against kwire's broker, read back by librdkafka.

A ``read_committed`` confluent-kafka consumer must see the records of committed transactions and
none of aborted ones, with transaction version 2 (Kafka 4.x personality: partitions added by the
broker, KIP-890 part 2) and version 1 (Kafka 3.9: AddPartitionsToTxn, AddOffsetsToTxn); offsets
sent in a transaction are the group's committed offsets only once it commits. A second producer
with the same ``transactional.id`` fences the first: the first gets ``ProducerFencedError`` and
the transaction it left open is aborted.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from interop_helpers import ck_conf

from kwire.client import (
    ClientConfig,
    KafkaClient,
    ProducerFencedError,
    TransactionState,
)
from kwire.errors import OptionError

pytestmark = pytest.mark.interop


def read_committed(bootstrap: str, topic: str, partitions: int) -> list[tuple[int, bytes]]:
    """Every record of ``topic`` a read_committed librdkafka consumer sees, up to the end of each
    partition (bounded: 30 s)."""
    import confluent_kafka as ck

    consumer = ck.Consumer(
        ck_conf(
            bootstrap,
            **{
                "group.id": f"reader-{topic}",
                "enable.auto.commit": False,
                "isolation.level": "read_committed",
                "enable.partition.eof": True,
            },
        )
    )
    out: list[tuple[int, bytes]] = []
    at_end: set[int] = set()
    try:
        consumer.assign(
            [ck.TopicPartition(topic, p, ck.OFFSET_BEGINNING) for p in range(partitions)]
        )
        deadline = time.monotonic() + 30
        while len(at_end) < partitions and time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is None:
                continue
            if msg.error() is not None:
                assert msg.error().code() == ck.KafkaError._PARTITION_EOF, msg.error()
                at_end.add(msg.partition())
                continue
            out.append((msg.partition(), msg.value()))
    finally:
        consumer.close()
    assert len(at_end) == partitions, "the consumer did not reach the end of every partition"
    return out


def committed_by_librdkafka(bootstrap: str, group: str, topic: str, partition: int) -> int:
    import confluent_kafka as ck

    consumer = ck.Consumer(ck_conf(bootstrap, **{"group.id": group, "enable.auto.commit": False}))
    try:
        (tp,) = consumer.committed([ck.TopicPartition(topic, partition)], timeout=20)
        return int(tp.offset)
    finally:
        consumer.close()


@pytest.mark.parametrize("kafka_version", ["4.3", "3.9"])
def test_committed_seen_aborted_not(start_broker: Callable[..., Any], kafka_version: str) -> None:
    b = start_broker(kafka_version=kafka_version)
    b.create_topic("out", partitions=2)
    b.create_topic("in", partitions=1)
    options = {"bootstrap.servers": b.bootstrap, "transactional.id": "t-commit"}
    with KafkaClient(options) as client:
        txn = client.init_transactions()
        assert txn.transaction_v2 is (kafka_version == "4.3")
        for round_, commit in enumerate([True, False, True]):
            client.begin_transaction(txn)
            for p in (0, 1):
                client.produce(
                    "out",
                    p,
                    [(None, f"{round_}-{p}-{i}".encode(), (), 0) for i in range(5)],
                    transaction=txn,
                )
            client.send_offsets_to_transaction(txn, {("in", 0): (10 * (round_ + 1), "m")}, "g1")
            (client.commit_transaction if commit else client.abort_transaction)(txn)
            assert txn.state is TransactionState.READY
        assert client.committed_offsets("g1") == {("in", 0): (30, "m")}
    got = read_committed(b.bootstrap, "out", 2)
    assert sorted(got) == sorted(
        (p, f"{r}-{p}-{i}".encode()) for r in (0, 2) for p in (0, 1) for i in range(5)
    )
    assert committed_by_librdkafka(b.bootstrap, "g1", "in", 0) == 30


def test_second_producer_fences_the_first(start_broker: Callable[..., Any]) -> None:
    b = start_broker()
    b.create_topic("fenced", partitions=1)
    options = {"bootstrap.servers": b.bootstrap, "transactional.id": "t-fence"}
    with KafkaClient(options) as first, KafkaClient(options) as second:
        old = first.init_transactions()
        first.begin_transaction(old)
        first.produce("fenced", 0, [(None, b"left open", (), 0)], transaction=old)

        new = second.init_transactions()  # aborts the open transaction, bumps the epoch
        assert (new.producer_id, new.producer_epoch) != (old.producer_id, old.producer_epoch)
        second.begin_transaction(new)
        second.produce("fenced", 0, [(None, b"kept", (), 0)], transaction=new)
        second.commit_transaction(new)

        with pytest.raises(ProducerFencedError):
            first.produce("fenced", 0, [(None, b"zombie", (), 0)], transaction=old)
        assert old.state is TransactionState.FATAL_ERROR
        with pytest.raises(Exception, match="fatal"):
            first.commit_transaction(old)
    assert read_committed(b.bootstrap, "fenced", 1) == [(0, b"kept")]


def test_fenced_commit(start_broker: Callable[..., Any]) -> None:
    """EndTxn from a fenced producer (Kafka 3.9: no epoch bump by EndTxn) is PRODUCER_FENCED."""
    b = start_broker(kafka_version="3.9")
    b.create_topic("fenced2", partitions=1)
    options = {"bootstrap.servers": b.bootstrap, "transactional.id": "t-fence2"}
    with KafkaClient(options) as first, KafkaClient(options) as second:
        old = first.init_transactions()
        first.begin_transaction(old)
        first.produce("fenced2", 0, [(None, b"left open", (), 0)], transaction=old)
        second.init_transactions()
        with pytest.raises(ProducerFencedError):
            first.commit_transaction(old)
    assert read_committed(b.bootstrap, "fenced2", 1) == []


def test_transactional_options_follow_kafka() -> None:
    config = ClientConfig.from_options(
        {"bootstrap.servers": "h:1", "transactional.id": "x", "transaction.timeout.ms": "5000"}
    )
    assert (config.transactional_id, config.transaction_timeout_ms) == ("x", 5000)
    with pytest.raises(OptionError, match="without also enabling idempotence"):
        ClientConfig.from_options(
            {"bootstrap.servers": "h:1", "transactional.id": "x", "enable.idempotence": "false"}
        )
    with pytest.raises(OptionError, match="acks=all"):
        ClientConfig.from_options(
            {"bootstrap.servers": "h:1", "transactional.id": "x", "acks": "1"}
        )


def test_brokers_before_0_11_have_no_transactions(start_broker: Callable[..., Any]) -> None:
    from kwire.errors import UnsupportedVersionError

    b = start_broker(kafka_version="0.10.2")
    options = {"bootstrap.servers": b.bootstrap, "transactional.id": "t-old"}
    with (
        KafkaClient(options) as client,
        pytest.raises(UnsupportedVersionError, match=r"Kafka 0\.11"),
    ):
        client.init_transactions()
