"""df.write.format("kafka-log"): read back by kwire and by Kafka's own MemoryRecords."""

from __future__ import annotations

import json
import subprocess
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kwire.log import SampleSummary

pytestmark = pytest.mark.spark

COLUMNS = ["key", "value", "headers", "topic", "partition", "timestamp"]


@pytest.fixture(scope="module")
def kafka_reader() -> Iterator[Any]:
    """Kafka's MemoryRecords behind tools/java/RecordsOracle.java: ``read(bytes) -> batches``."""
    from kafka_jars import compile_java, java_command

    proc = subprocess.Popen(
        java_command("RecordsOracle", compile_java("RecordsOracle")),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None

    def read(data: bytes) -> list[dict[str, Any]]:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(json.dumps({"op": "read", "bytes": data.hex()}) + "\n")
        proc.stdin.flush()
        answer = json.loads(proc.stdout.readline())
        assert "error" not in answer, answer
        batches: list[dict[str, Any]] = answer["batches"]
        return batches

    yield read
    proc.stdin.close()
    proc.wait(timeout=30)
    proc.stdout.close()


def _rows(df: Any) -> Counter[tuple[Any, ...]]:
    return Counter(
        (
            r["topic"],
            r["partition"],
            r["timestamp"],
            r["key"],
            r["value"],
            None if r["headers"] is None else tuple((h["key"], h["value"]) for h in r["headers"]),
        )
        for r in df.collect()
    )


@pytest.mark.oracle
def test_sink_writes_logs_kafka_reads_back(
    spark: Any, sample: tuple[Path, SampleSummary], tmp_path: Path, kafka_reader: Any
) -> None:
    from kwire.spark import write_kafka_log

    path, _ = sample
    source = (
        spark.read.format("kafka-log")
        .option("subscribe", "orders,payments")
        .load(str(path))
        .select(*COLUMNS)
    )
    out = tmp_path / "v2"
    write_kafka_log(source, str(out), compression="zstd", recordsPerBatch="40", segmentBytes="4000")
    back = spark.read.format("kafka-log").load(str(out))
    assert _rows(back.select(*COLUMNS)) == _rows(source)
    stats = back.groupBy("topic", "partition").agg({"offset": "max", "*": "count"}).collect()
    for r in stats:  # offsets are dense from 0 in every topic-partition
        assert r["max(offset)"] == r["count(1)"] - 1
    assert {r["compression"] for r in back.select("compression").distinct().collect()} == {"zstd"}

    logs = sorted(out.rglob("*.log"))
    assert len(logs) > len(stats)  # segments rolled at segmentBytes
    total = 0
    for log in logs:
        assert log.with_suffix(".index").exists() and log.with_suffix(".timeindex").exists()
        batches = kafka_reader(log.read_bytes())
        assert batches and all(b["valid"] for b in batches), log
        assert all(b["magic"] == 2 and b["compression"] == "zstd" for b in batches)
        total += sum(len(b["records"]) for b in batches)
    assert total == back.count()


@pytest.mark.oracle
def test_sink_legacy_magic_and_tasks_sharing_a_partition(
    spark: Any, sample: tuple[Path, SampleSummary], tmp_path: Path, kafka_reader: Any
) -> None:
    path, summary = sample
    source = (
        spark.read.format("kafka-log")
        .option("subscribe", "clicks-legacy")
        .load(str(path))
        .select("key", "value", "topic", "partition", "timestamp")
        .repartition(3)  # one topic-partition spread over three tasks: merged on commit
    )
    out = tmp_path / "v1"
    (
        source.write.format("kafka-log")
        .option("magic", "1")
        .option("compression", "gzip")
        .option("recordsPerBatch", "25")
        .mode("overwrite")
        .save(str(out))
    )
    assert not (out / "_kwire_staging").exists()
    back = spark.read.format("kafka-log").load(str(out))
    assert back.count() == summary.partitions["clicks-legacy-0"].records
    assert sorted(r["offset"] for r in back.select("offset").collect()) == list(range(back.count()))
    assert {
        (r["magic"], r["compression"])
        for r in back.select("magic", "compression").distinct().collect()
    } == {(1, "gzip")}
    for log in out.rglob("*.log"):
        batches = kafka_reader(log.read_bytes())
        assert all(b["valid"] and b["magic"] == 1 for b in batches)

    # append: new batches (magic 2 now, as after a format upgrade) follow the log end offset
    n = back.count()
    source.write.format("kafka-log").mode("append").option("recordsPerBatch", "40").save(str(out))
    appended = spark.read.format("kafka-log").load(str(out))
    assert sorted(r["offset"] for r in appended.select("offset").collect()) == list(range(2 * n))
    assert {r["magic"] for r in appended.where(f"offset >= {n}").select("magic").collect()} == {2}
    for log in out.rglob("*.log"):
        assert all(b["valid"] for b in kafka_reader(log.read_bytes()))
    with pytest.raises(Exception, match="value"):
        source.select("key", "topic").write.format("kafka-log").mode("overwrite").save(
            str(tmp_path / "x")
        )
