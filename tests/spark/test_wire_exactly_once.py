"""The kafka-wire streaming sink with ``exactlyOnce=true``, its Spark driver killed mid-batch.

A streaming query (a subprocess: its own Python driver and JVM) reads ``eos-in`` with kafka-wire,
60 offsets per micro-batch, and writes every value to ``eos-out`` with the exactly-once sink. Its
driver is killed with SIGKILL three times, each time in a later micro-batch and at another point
of the sink's commit, and the query is started again from its checkpoint:

* ``before``: the tasks wrote their transactions, the driver dies before committing any;
* ``partial``: the driver committed one task's transaction and dies before the others;
* ``after``: the driver committed every transaction and dies before Spark's commit log.

Spark replays the unfinished batch each time. At the end a read_committed librdkafka consumer
finds every input value in ``eos-out`` exactly once, while the log itself (read uncommitted)
holds the aborted copies the crashes left behind.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.spark

N = 300

DRIVER = """
import json, os, signal, sys, time
from pathlib import Path

import kwire.spark
from kwire.spark._wire_sink import KafkaWireStreamWriter, WireTxnCommit
from kwire.spark._wire_source import KafkaWireDataSource

bootstrap, checkpoint, crash, work = sys.argv[1:5]
crash_batch, _, crash_mode = crash.partition(":")


def die() -> None:
    # the whole driver: its Python process and its JVM (local mode: the executors too)
    pids = json.loads(Path(work, "pids.json").read_text())
    Path(work, "crashed").write_text(crash)
    for pid in (pids["jvm"], pids["driver"]):
        os.kill(pid, signal.SIGKILL)
    time.sleep(60)  # the python daemon's SIGHUP ends this worker first
    os._exit(1)


class CrashingWriter(KafkaWireStreamWriter):
    def commit(self, messages, batchId):
        mode = crash_mode if str(batchId) == crash_batch else ""
        if mode == "before":
            die()
        if mode == "partial":
            opened = [m for m in messages if isinstance(m, WireTxnCommit) and m.producer_id >= 0]
            assert len(opened) >= 2, messages
            super().commit(opened[:1], batchId)
            die()
        super().commit(messages, batchId)
        if mode == "after":
            die()


class CrashingSource(KafkaWireDataSource):
    @classmethod
    def name(cls):
        return "kafka-wire-crashing"

    def streamWriter(self, schema, overwrite):
        w = super().streamWriter(schema, overwrite)
        return CrashingWriter(
            w.client_options, w.topic, schema, exactly_once=w.exactly_once,
            transactional_id_prefix=w.prefix,
        )


spark = kwire.spark.get_session(
    "local[2]", log_level="ERROR", config={"spark.sql.shuffle.partitions": "2"}
)
spark.dataSource.register(CrashingSource)
jvm = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()
Path(work, "pids.json").write_text(json.dumps({"driver": os.getpid(), "jvm": int(jvm)}))
query = (
    spark.readStream.format("kafka-wire")
    .option("kafka.bootstrap.servers", bootstrap)
    .option("subscribe", "eos-in")
    .option("startingOffsets", "earliest")
    .option("maxOffsetsPerTrigger", "60")
    .load()
    .selectExpr("value")
    .writeStream.format("kafka-wire-crashing")
    .option("kafka.bootstrap.servers", bootstrap)
    .option("topic", "eos-out")
    .option("exactlyOnce", "true")
    .option("checkpointLocation", checkpoint)
    .trigger(availableNow=True)
    .start()
)
assert query.awaitTermination(240), "the query did not finish in 240 s"
assert query.exception() is None, query.exception()
print(json.dumps({"done": True}))
"""


def run_driver(work: Path, bootstrap: str, crash: str) -> subprocess.CompletedProcess[str]:
    script = work / "driver.py"
    script.write_text(textwrap.dedent(DRIVER))
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    return subprocess.run(
        [sys.executable, str(script), bootstrap, str(work / "checkpoint"), crash, str(work)],
        capture_output=True,
        text=True,
        timeout=400,
        env=env,
        check=False,
    )


def read_values(bootstrap: str, topic: str, partitions: int, isolation: str) -> list[bytes]:
    import confluent_kafka as ck

    consumer = ck.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "broker.address.family": "v4",
            "group.id": f"check-{isolation}",
            "enable.auto.commit": False,
            "isolation.level": isolation,
            "enable.partition.eof": True,
        }
    )
    out: list[bytes] = []
    at_end: set[int] = set()
    try:
        consumer.assign([ck.TopicPartition(topic, p, 0) for p in range(partitions)])
        deadline = time.monotonic() + 60
        while len(at_end) < partitions and time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is None:
                continue
            if msg.error() is not None:
                assert msg.error().code() == ck.KafkaError._PARTITION_EOF, msg.error()
                at_end.add(msg.partition())
                continue
            out.append(msg.value())
    finally:
        consumer.close()
    assert len(at_end) == partitions, f"{topic} not read to its end"
    return out


def test_driver_killed_mid_batch_every_row_once(kwire_broker: Any, tmp_path: Path) -> None:
    import confluent_kafka as ck

    kwire_broker.create_topic("eos-in", partitions=3)
    kwire_broker.create_topic("eos-out", partitions=2)
    producer = ck.Producer({"bootstrap.servers": kwire_broker.bootstrap, "linger.ms": 5})
    for i in range(N):
        producer.produce("eos-in", value=f"r{i}".encode(), partition=i % 3)
    assert producer.flush(30) == 0
    del producer  # librdkafka would reconnect to the stopped broker at teardown

    for crash in ("1:before", "2:partial", "3:after"):
        (tmp_path / "crashed").unlink(missing_ok=True)
        proc = run_driver(tmp_path, kwire_broker.bootstrap, crash)
        assert proc.returncode == -signal.SIGKILL, (crash, proc.returncode, proc.stderr[-3000:])
        assert (tmp_path / "crashed").read_text() == crash
    proc = run_driver(tmp_path, kwire_broker.bootstrap, "")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == {"done": True}

    committed = Counter(read_values(kwire_broker.bootstrap, "eos-out", 2, "read_committed"))
    assert committed == Counter(f"r{i}".encode() for i in range(N))
    everything = read_values(kwire_broker.bootstrap, "eos-out", 2, "read_uncommitted")
    assert len(everything) > N  # the crashed batches' aborted copies are in the log, unseen


def test_exactly_once_options() -> None:
    from pyspark.sql.types import BinaryType, StructField, StructType

    from kwire.errors import OptionError
    from kwire.spark._wire_sink import KafkaWireStreamWriter
    from kwire.spark._wire_source import KafkaWireDataSource

    schema = StructType([StructField("value", BinaryType())])
    base = {"kafka.bootstrap.servers": "127.0.0.1:1", "topic": "t"}

    def stream(**options: str) -> KafkaWireStreamWriter:
        return KafkaWireDataSource({**base, **options}).streamWriter(schema, False)

    assert not stream().exactly_once
    writer = stream(exactlyOnce="true", transactionalIdPrefix="p")
    assert (writer.exactly_once, writer.prefix) == (True, "p")
    with pytest.raises(OptionError, match="true or false"):
        stream(exactlyOnce="yes")
    with pytest.raises(OptionError, match="for exactlyOnce=true"):
        stream(transactionalIdPrefix="p")
    with pytest.raises(OptionError, match="transactionalIdPrefix"):
        stream(exactlyOnce="true", **{"kafka.transactional.id": "mine"})
    with pytest.raises(OptionError, match="idempotent"):
        stream(exactlyOnce="true", **{"kafka.acks": "1"})
    with pytest.raises(OptionError, match="for writeStream"):
        KafkaWireDataSource({**base, "exactlyOnce": "true"}).writer(schema, False)


def test_stream_sink_default_is_at_least_once(
    spark: Any, kwire_broker: Any, tmp_path: Path
) -> None:
    """Without exactlyOnce the streaming sink is Spark's Kafka sink's: idempotent producers, no
    transactions (read uncommitted and read committed see the same records)."""
    import confluent_kafka as ck

    from kwire.spark import register

    register(spark)
    kwire_broker.create_topic("plain-in", partitions=2)
    kwire_broker.create_topic("plain-out", partitions=1)
    producer = ck.Producer({"bootstrap.servers": kwire_broker.bootstrap})
    for i in range(50):
        producer.produce("plain-in", value=f"p{i}".encode(), partition=i % 2)
    assert producer.flush(30) == 0
    del producer
    query = (
        spark.readStream.format("kafka-wire")
        .option("kafka.bootstrap.servers", kwire_broker.bootstrap)
        .option("subscribe", "plain-in")
        .option("startingOffsets", "earliest")
        .load()
        .selectExpr("value")
        .writeStream.format("kafka-wire")
        .option("kafka.bootstrap.servers", kwire_broker.bootstrap)
        .option("topic", "plain-out")
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(180), "the stream did not finish in 180 s"
    assert query.exception() is None
    expected = Counter(f"p{i}".encode() for i in range(50))
    assert (
        Counter(read_values(kwire_broker.bootstrap, "plain-out", 1, "read_uncommitted")) == expected
    )
    assert (
        Counter(read_values(kwire_broker.bootstrap, "plain-out", 1, "read_committed")) == expected
    )
