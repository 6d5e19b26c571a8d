"""Views: Kafka's internal topics as tables (consumer offsets, transactions), and latest-per-key,
read from the data directory a kwire broker wrote while confluent-kafka clients used it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.spark


def _produce(bootstrap: str, topic: str, items: list[tuple[bytes | None, bytes | None]]) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for key, value in items:
        producer.produce(topic, key=key, value=value)
    assert producer.flush(30) == 0


def test_consumer_offsets_and_transactions_views(
    spark: Any, kwire_broker_factory: Callable[..., Any], tmp_path: Path
) -> None:
    from confluent_kafka import Consumer, Producer, TopicPartition

    broker = kwire_broker_factory(tmp_path / "data")
    broker.create_topic("events", partitions=2)
    _produce(broker.bootstrap, "events", [(str(i).encode(), b"v") for i in range(40)])
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": "billing",
            "enable.auto.commit": False,
        }
    )
    for offset in (5, 12, 20):
        consumer.commit(
            offsets=[
                TopicPartition("events", 0, offset),
                TopicPartition("events", 1, offset + 1),
            ],
            asynchronous=False,
        )
    consumer.close()
    producer = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "tx-1"})
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce("events", key=b"t", value=b"committed")
    producer.commit_transaction(30)
    del producer  # closes the client before the broker stops
    broker.stop()
    data = str(tmp_path / "data")

    offsets = spark.read.format("kafka-log").option("view", "consumer_offsets").load(data)
    assert offsets.columns[:4] == ["group", "topic", "partition", "committedOffset"]
    rows = offsets.orderBy("logOffset").collect()
    commits = [(r["group"], r["topic"], r["partition"], r["committedOffset"]) for r in rows]
    assert commits == [("billing", "events", p, o + p) for o in (5, 12, 20) for p in (0, 1)]
    assert all(r["commitTimestamp"] is not None for r in rows)
    latest_commit = (
        offsets.groupBy("group", "topic", "partition").agg({"committedOffset": "max"}).collect()
    )
    assert sorted(r[3] for r in latest_commit) == [20, 21]

    txns = spark.read.format("kafka-log").option("view", "transactions").load(data)
    states = [
        r["state"] for r in txns.orderBy("logOffset").collect() if r["transactionalId"] == "tx-1"
    ]
    assert states == ["Empty", "Ongoing", "PrepareCommit", "CompleteCommit"]
    parts = [r["partitions"] for r in txns.collect() if r["state"] == "Ongoing"]
    assert parts and parts[0][0]["topic"] == "events"


def test_latest_view_is_the_compacted_topic(spark: Any, tmp_path: Path) -> None:
    from kwire.log import LogWriter
    from kwire.records import build_batch

    path = tmp_path / "log"
    expected: dict[tuple[int, bytes], bytes] = {}
    for partition in (0, 1):
        with LogWriter(str(path), "accounts", partition, segment_bytes=4096, fsync=False) as w:
            for i in range(400):
                key = f"k{i % 37}".encode()
                value = None if i % 11 == 0 else f"{partition}-{i}".encode()
                w.append(build_batch([(None, 1_700_000_000_000 + i, key, value)], base_offset=i))
                if value is None:
                    expected.pop((partition, key), None)
                else:
                    expected[(partition, key)] = value
    df = (
        spark.read.format("kafka-log")
        .option("view", "latest")
        .option("maxSplitBytes", "8192")  # several splits per partition: one task still owns each
        .load(str(path))
    )
    got = {(r["partition"], r["key"]): r["value"] for r in df.collect()}
    assert got == expected
