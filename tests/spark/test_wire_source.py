"""The kafka-wire source: a running broker read over the wire into Spark, with Spark's Kafka options.

Records are written by confluent-kafka (librdkafka) into ``kwire broker`` (the pytest fixture) and
read back with ``spark.read.format("kafka-wire")``: every record once, with keys, values, headers,
offsets and timestamps as produced; ranges from offset options; read_committed under Spark's own
option name; data loss named; the options Spark requires.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

pytestmark = pytest.mark.spark

N = 240


def produce(bootstrap: str, topic: str, n: int, partitions: int, **conf: Any) -> None:
    import confluent_kafka as ck

    producer = ck.Producer(
        {"bootstrap.servers": bootstrap, "broker.address.family": "v4", "linger.ms": 5, **conf}
    )
    for i in range(n):
        headers = [("i", str(i).encode()), ("none", None)] if i % 3 == 0 else None
        producer.produce(
            topic,
            key=None if i % 5 == 0 else f"k{i}".encode(),
            value=f"v{i}".encode() * (1 + i % 4),
            partition=i % partitions,
            timestamp=1_700_000_000_000 + i,
            headers=headers,
        )
    assert producer.flush(30) == 0


@pytest.fixture
def loaded(spark: Any, kwire_broker: Any) -> Any:
    from kwire.spark import register

    register(spark)
    kwire_broker.create_topic("orders", partitions=3)
    produce(kwire_broker.bootstrap, "orders", N, 3, **{"compression.type": "lz4"})
    return kwire_broker


def read(spark: Any, bootstrap: str, **options: str) -> Any:
    reader = spark.read.format("kafka-wire").option("kafka.bootstrap.servers", bootstrap)
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load()


def test_every_record_once_as_produced(spark: Any, loaded: Any) -> None:
    df = read(spark, loaded.bootstrap, subscribe="orders")
    rows = df.select("key", "value", "partition", "offset", "timestamp", "headers").collect()
    assert len(rows) == N
    by_value = {(r.partition, r.offset): r for r in rows}
    for i in range(N):
        partition, offset = i % 3, i // 3
        r = by_value[(partition, offset)]
        assert r.key == (None if i % 5 == 0 else f"k{i}".encode())
        assert r.value == f"v{i}".encode() * (1 + i % 4)
        assert int(r.timestamp.timestamp() * 1000) == 1_700_000_000_000 + i
        expected = [("i", str(i).encode()), ("none", None)] if i % 3 == 0 else []
        assert [
            (h.key, h.value) for h in r.headers or []
        ] == expected  # null without headers, as Spark
    # a DataFrame means the same rows each time it is used
    assert df.count() == N
    assert df.where("partition = 1").count() == N // 3
    assert df.count() == N


def test_offset_ranges(spark: Any, loaded: Any) -> None:
    starting = json.dumps({"orders": {"0": 10, "1": -2}})
    ending = json.dumps({"orders": {"0": 20, "1": 5}})
    df = read(
        spark,
        loaded.bootstrap,
        assign=json.dumps({"orders": [0, 1]}),
        startingOffsets=starting,
        endingOffsets=ending,
    )
    got = sorted((r.partition, r.offset) for r in df.select("partition", "offset").collect())
    assert got == [(0, o) for o in range(10, 20)] + [(1, o) for o in range(5)]


def test_read_committed_by_spark_option_name(spark: Any, kwire_broker: Any) -> None:
    import confluent_kafka as ck

    from kwire.spark import register

    register(spark)
    kwire_broker.create_topic("txn", partitions=1)
    producer = ck.Producer(
        {"bootstrap.servers": kwire_broker.bootstrap, "transactional.id": "spark-t"}
    )
    producer.init_transactions(30)
    for commit in (True, False):
        producer.begin_transaction()
        for i in range(5):
            producer.produce("txn", value=f"{commit}-{i}".encode(), partition=0)
        producer.flush(30)
        (producer.commit_transaction if commit else producer.abort_transaction)(30)
    committed = read(
        spark,
        kwire_broker.bootstrap,
        subscribe="txn",
        **{"kafka.isolation.level": "read_committed"},
    )
    assert sorted(r.value for r in committed.select("value").collect()) == [
        f"True-{i}".encode() for i in range(5)
    ]
    everything = read(spark, kwire_broker.bootstrap, subscribe="txn")
    assert everything.count() == 10


def test_data_loss_is_named(spark: Any, loaded: Any) -> None:
    import confluent_kafka as ck
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": loaded.bootstrap, "broker.address.family": "v4"})
    for f in admin.delete_records([ck.TopicPartition("orders", 0, 30)]).values():
        f.result(20)
    start = json.dumps({"orders": {"0": 3}})
    df = read(spark, loaded.bootstrap, assign=json.dumps({"orders": [0]}), startingOffsets=start)
    with pytest.raises(Exception, match=r"orders-0: offsets 3 to 29"):
        df.count()
    lenient = read(
        spark,
        loaded.bootstrap,
        assign=json.dumps({"orders": [0]}),
        startingOffsets=start,
        failOnDataLoss="false",
    )
    assert sorted(r.offset for r in lenient.select("offset").collect()) == list(range(30, N // 3))


def test_options_spark_requires(spark: Any, loaded: Any) -> None:
    with pytest.raises(Exception, match="subscribe, subscribePattern or assign"):
        read(spark, loaded.bootstrap).count()
    with pytest.raises(Exception, match=r"kafka\.bootstrap\.servers"):
        spark.read.format("kafka-wire").option("subscribe", "orders").load().count()
    with pytest.raises(Exception, match="no such topic: nope"):
        read(spark, loaded.bootstrap, subscribe="nope").count()


def run_stream(spark: Any, bootstrap: str, out: Any, checkpoint: Any, **options: str) -> None:
    reader = spark.readStream.format("kafka-wire").option("kafka.bootstrap.servers", bootstrap)
    for k, v in options.items():
        reader = reader.option(k, v)
    query = (
        reader.load()
        .select("topic", "partition", "offset", "value")
        .writeStream.format("parquet")
        .option("path", str(out))
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(180), "the stream did not finish in 180 s"
    assert query.exception() is None


def test_stream_exactly_once_across_restarts(spark: Any, loaded: Any, tmp_path: Any) -> None:
    """Two runs of one query on one checkpoint, records produced between them, a topic that
    appears in between (subscribePattern): every record in the output once."""
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    options = {"subscribePattern": "orders|late", "startingOffsets": "earliest"}
    run_stream(spark, loaded.bootstrap, out, checkpoint, maxOffsetsPerTrigger="50", **options)
    first = spark.read.parquet(str(out)).count()
    assert first == N
    loaded.create_topic("late", partitions=1)
    produce(loaded.bootstrap, "orders", 30, 3)
    produce(loaded.bootstrap, "late", 10, 1)
    run_stream(spark, loaded.bootstrap, out, checkpoint, **options)
    rows = spark.read.parquet(str(out)).collect()
    assert len(rows) == N + 40
    assert len({(r.topic, r.partition, r.offset) for r in rows}) == N + 40


def test_write_then_read_by_librdkafka(spark: Any, kwire_broker: Any) -> None:
    import confluent_kafka as ck
    from pyspark.sql import Row

    from kwire.client import default_partition
    from kwire.spark import register

    register(spark)
    kwire_broker.create_topic("sunk", partitions=3)
    rows = [
        Row(
            key=f"k{i}".encode(),
            value=f"v{i}",
            headers=[Row(key="h", value=str(i).encode())] if i % 2 else None,
        )
        for i in range(90)
    ]
    df = spark.createDataFrame(
        rows, "key binary, value string, headers array<struct<key string, value binary>>"
    )
    (
        df.write.format("kafka-wire")
        .option("kafka.bootstrap.servers", kwire_broker.bootstrap)
        .option("topic", "sunk")
        .mode("append")
        .save()
    )
    consumer = ck.Consumer(
        {
            "bootstrap.servers": kwire_broker.bootstrap,
            "group.id": "check",
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe(["sunk"])
    got = []
    deadline = 60
    import time

    end = time.monotonic() + deadline
    while len(got) < 90 and time.monotonic() < end:
        got.extend(m for m in consumer.consume(100, 1.0) if not m.error())
    consumer.close()
    assert len(got) == 90
    for m in got:
        i = int(m.value()[1:])
        assert m.key() == f"k{i}".encode()
        assert m.partition() == default_partition(m.key(), 3, 0)  # Kafka's murmur2
        assert (m.headers() or []) == ([("h", str(i).encode())] if i % 2 else [])
    with pytest.raises(Exception, match="append"):
        df.write.format("kafka-wire").option(
            "kafka.bootstrap.servers", kwire_broker.bootstrap
        ).option("topic", "sunk").mode("overwrite").save()


def test_stream_min_offsets_per_trigger_waits(spark: Any, loaded: Any) -> None:
    """minOffsetsPerTrigger: with fewer new offsets than the minimum, the trigger is skipped
    (the same offsets come back) until maxTriggerDelay has passed, as Spark's delayBatch."""
    from kwire.spark._wire_source import KafkaWireDataSource

    source = KafkaWireDataSource(
        {
            "kafka.bootstrap.servers": loaded.bootstrap,
            "subscribe": "orders",
            "minOffsetsPerTrigger": "1000",
            "maxTriggerDelay": "1h",
        }
    )
    reader = source.streamReader(source.schema())
    try:
        from pyspark.sql.streaming.datasource import ReadAllAvailable

        start = reader.initialOffset()  # latest: nothing new yet
        first = reader.latestOffset({"orders": {"0": 0, "1": 0, "2": 0}}, ReadAllAvailable())
        assert first == {"orders": {"0": N // 3, "1": N // 3, "2": N // 3}}  # the first batch runs
        produce(loaded.bootstrap, "orders", 30, 3)
        again = reader.latestOffset(first, ReadAllAvailable())
        assert again == first  # 30 new offsets < 1000: skipped
        assert start == first
    finally:
        reader.stop()


def test_users_own_session_reuses_a_dataframe(kwire_broker: Any, user_job: Any) -> None:
    """A user's own ``SparkSession.builder.getOrCreate()`` (a fresh interpreter, no
    PYSPARK_PYTHON): one kafka-wire DataFrame means the same rows in every query on it."""
    kwire_broker.create_topic("orders", partitions=3)
    produce(kwire_broker.bootstrap, "orders", N, 3)
    out = user_job(
        f"""
        import json
        from pyspark.sql import SparkSession
        import kwire.spark

        spark = SparkSession.builder.master("local[2]").getOrCreate()
        kwire.spark.register(spark)
        df = (spark.read.format("kafka-wire")
              .option("kafka.bootstrap.servers", {kwire_broker.bootstrap!r})
              .option("subscribe", "orders").load())
        df.createOrReplaceTempView("orders")
        counts = [df.count(), df.where("partition = 1").count(), df.count(),
                  spark.sql("select count(*) from orders").first()[0]]
        spark.stop()
        print(json.dumps({{"counts": counts}}))
        """
    )
    assert out["counts"] == [N, N // 3, N, N]


def test_users_own_session_writes_exactly_once(
    kwire_broker: Any, user_job: Any, tmp_path: Any
) -> None:
    """The exactly-once kafka-wire sink from a user's own ``getOrCreate()`` session: one
    AvailableNow run, then a second from the same checkpoint with nothing new; a read_committed
    librdkafka consumer finds every input value in the output once."""
    import time

    import confluent_kafka as ck

    kwire_broker.create_topic("eos-src", partitions=2)
    kwire_broker.create_topic("eos-dst", partitions=2)
    produce(kwire_broker.bootstrap, "eos-src", N, 2)
    job = f"""
        import json
        from pyspark.sql import SparkSession
        import kwire.spark

        spark = SparkSession.builder.master("local[2]").getOrCreate()
        kwire.spark.register(spark)
        src = (spark.readStream.format("kafka-wire")
               .option("kafka.bootstrap.servers", {kwire_broker.bootstrap!r})
               .option("subscribe", "eos-src").option("startingOffsets", "earliest")
               .load().select("key", "value"))
        query = (src.writeStream.format("kafka-wire")
                 .option("kafka.bootstrap.servers", {kwire_broker.bootstrap!r})
                 .option("topic", "eos-dst").option("exactlyOnce", "true")
                 .option("checkpointLocation", {str(tmp_path / "chk")!r})
                 .trigger(availableNow=True).start())
        query.awaitTermination(300)
        spark.stop()
        print(json.dumps({{"done": True}}))
        """
    assert user_job(job)["done"]
    assert user_job(job)["done"]  # a restart from the checkpoint writes nothing again
    consumer = ck.Consumer(
        {
            "bootstrap.servers": kwire_broker.bootstrap,
            "group.id": "eos-check",
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed",
        }
    )
    consumer.subscribe(["eos-dst"])
    got: list[bytes] = []
    end = time.monotonic() + 60
    while len(got) < N and time.monotonic() < end:
        got.extend(m.value() for m in consumer.consume(100, 1.0) if not m.error())
    got.extend(m.value() for m in consumer.consume(100, 2.0) if not m.error())  # no extras
    consumer.close()
    assert len(got) == N and len(set(got)) == N
