"""kafka-wire against real producers and a broker that misbehaves (issue 20).

Records come from real clients into kwire's broker; Spark reads them with ``kafka-wire`` and
every record appears once, keys, values and headers as produced: with ``minPartitions`` splitting
the ranges (batch and streaming, inside transactions too).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.spark


def produce_ck(bootstrap: str, topic: str, start: int, count: int, partitions: int) -> None:
    """confluent-kafka (librdkafka): record i to partition i % partitions, headers on every third."""
    import confluent_kafka as ck

    producer = ck.Producer(
        {"bootstrap.servers": bootstrap, "broker.address.family": "v4", "linger.ms": 5}
    )
    for i in range(start, start + count):
        producer.produce(
            topic,
            key=None if i % 7 == 0 else f"k{i}".encode(),
            value=f"v{i}".encode(),
            partition=i % partitions,
            headers=[("i", str(i).encode())] if i % 3 == 0 else None,
        )
    assert producer.flush(30) == 0


def expected(start: int, count: int) -> list[tuple[bytes, bytes | None, list[Any]]]:
    return sorted(
        (
            f"v{i}".encode(),
            None if i % 7 == 0 else f"k{i}".encode(),
            [("i", str(i).encode())] if i % 3 == 0 else [],
        )
        for i in range(start, start + count)
    )


def got(rows: list[Any]) -> list[tuple[bytes, bytes | None, list[Any]]]:
    return sorted((r.value, r.key, [(h.key, h.value) for h in r.headers or []]) for r in rows)


def read(spark: Any, bootstrap: str, **options: str) -> Any:
    from kwire.spark import register

    register(spark)
    reader = spark.read.format("kafka-wire").option("kafka.bootstrap.servers", bootstrap)
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load()


def run_stream(spark: Any, bootstrap: str, out: Path, checkpoint: Path, **options: str) -> Any:
    """One availableNow run of a kafka-wire -> Parquet query; the output's rows."""
    from kwire.spark import register

    register(spark)
    reader = spark.readStream.format("kafka-wire").option("kafka.bootstrap.servers", bootstrap)
    for k, v in options.items():
        reader = reader.option(k, v)
    query = (
        reader.load()
        .select("topic", "partition", "offset", "key", "value", "headers")
        .writeStream.format("parquet")
        .option("path", str(out))
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(240), "the stream did not finish in 240 s"
    assert query.exception() is None
    return spark.read.parquet(str(out)).collect()


def test_min_partitions_batch_and_streaming(spark: Any, kwire_broker: Any, tmp_path: Path) -> None:
    import confluent_kafka as ck

    from kwire.spark._wire_source import KafkaWireDataSource, WireRange

    bootstrap = kwire_broker.bootstrap
    kwire_broker.create_topic("skew", partitions=2)
    produce_ck(bootstrap, "skew", 0, 200, 2)
    produce_ck(bootstrap, "skew", 200, 1, 1)  # partition 0 gets 101, partition 1 gets 100
    # a transactional topic: a range split inside a committed and an aborted transaction
    kwire_broker.create_topic("txn", partitions=1)
    producer = ck.Producer({"bootstrap.servers": bootstrap, "transactional.id": "split"})
    producer.init_transactions(30)
    for commit in (True, False, True):
        producer.begin_transaction()
        for i in range(20):
            producer.produce("txn", value=f"{commit}-{i}".encode(), partition=0)
        producer.flush(30)
        (producer.commit_transaction if commit else producer.abort_transaction)(30)

    df = read(spark, bootstrap, subscribe="skew", minPartitions="7")
    assert df.rdd.getNumPartitions() >= 7
    assert got(df.collect()) == expected(0, 201)
    committed = read(
        spark,
        bootstrap,
        subscribe="txn",
        minPartitions="9",
        **{"kafka.isolation.level": "read_committed"},
    )
    assert committed.rdd.getNumPartitions() >= 9
    values = sorted(r.value for r in committed.select("value").collect())
    assert values == sorted(f"True-{i}".encode() for i in range(20) for _ in (1, 2))
    assert len(read(spark, bootstrap, subscribe="txn", minPartitions="9").collect()) == 60

    # streaming: a micro-batch's ranges are split the same way, each offset once
    source = KafkaWireDataSource(
        {"kafka.bootstrap.servers": bootstrap, "subscribe": "skew", "minPartitions": "5"}
    )
    stream = source.streamReader(source.schema())
    try:
        start = json.dumps({"skew": {"0": 0, "1": 0}})
        end = json.dumps({"skew": {"0": 101, "1": 100}})
        pieces = stream.partitions(json.loads(start), json.loads(end))
    finally:
        stream.stop()
    assert len(pieces) >= 5 and all(isinstance(p, WireRange) for p in pieces)
    for partition, until in ((0, 101), (1, 100)):
        covered = sorted(
            o for p in pieces if p.partition == partition for o in range(p.start, p.end)
        )
        assert covered == list(range(until))
    rows = run_stream(
        spark,
        bootstrap,
        tmp_path / "out",
        tmp_path / "checkpoint",
        subscribe="skew",
        startingOffsets="earliest",
        minPartitions="5",
    )
    assert got(rows) == expected(0, 201)
