"""``kwire pipeline export --bootstrap``: the incremental, exactly-once exports of a log directory,
from a live cluster read with kafka-wire (issue 20).

confluent-kafka (librdkafka) produces into kwire's broker; each export's table holds every produced
record once, keys, values and headers as produced; a re-run adds only new records, and a run
stopped before its commit, re-run, adds them once.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.spark

COLS = ["topic", "partition", "offset", "key", "value", "headers"]
TOPICS = {"a": 2, "b": 1}


def produce(bootstrap: str, start: int, count: int) -> None:
    """``count`` records per topic, spread over its partitions, numbered from ``start``."""
    import confluent_kafka as ck

    producer = ck.Producer(
        {"bootstrap.servers": bootstrap, "broker.address.family": "v4", "linger.ms": 5}
    )
    for topic, partitions in TOPICS.items():
        for i in range(start, start + count):
            producer.produce(
                topic,
                key=None if i % 7 == 0 else f"k{i}".encode(),
                value=f"{topic}-{i}".encode(),
                partition=i % partitions,
                headers=[("i", str(i).encode())] if i % 3 == 0 else None,
            )
    assert producer.flush(30) == 0


def _table(spark: Any, out: Path, fmt: str) -> Any:
    if fmt == "delta":
        from deltalake import DeltaTable

        files = DeltaTable(str(out)).file_uris()
        df = spark.read.option("basePath", str(out)).parquet(*files)
    elif fmt == "iceberg":
        from kwire.spark._pipeline import ICEBERG_TABLE, _iceberg_catalog

        table = _iceberg_catalog(str(out)).load_table(ICEBERG_TABLE)
        df = spark.read.parquet(*[t.file.file_path for t in table.scan().plan_files()])
    else:
        df = spark.read.parquet(str(out))
    return df.select(*COLS)


Row = tuple[str, bytes, bytes | None, list[Any]]


def _values(df: Any) -> list[Row]:
    return sorted(
        (r.topic, r.value, r.key, [(h.key, h.value) for h in r.headers or []]) for r in df.collect()
    )


def _produced(start: int, count: int) -> list[Row]:
    return sorted(
        (
            topic,
            f"{topic}-{i}".encode(),
            None if i % 7 == 0 else f"k{i}".encode(),
            [("i", str(i).encode())] if i % 3 == 0 else [],
        )
        for topic in TOPICS
        for i in range(start, start + count)
    )


@pytest.mark.parametrize("fmt", ["delta", "iceberg"])
def test_incremental_export_from_a_cluster_writes_each_record_once(
    spark: Any, kwire_broker: Any, tmp_path: Path, fmt: str
) -> None:
    from kwire.errors import KwireError
    from kwire.spark._pipeline import export, export_incremental

    for topic, partitions in TOPICS.items():
        kwire_broker.create_topic(topic, partitions=partitions)
    produce(kwire_broker.bootstrap, 0, 60)
    out = tmp_path / fmt
    options = {"kafka.bootstrap.servers": kwire_broker.bootstrap, "subscribePattern": ".*"}

    first = export(spark, None, str(out), fmt, options=options, incremental=True)
    assert first.records == 2 * 60
    assert _values(_table(spark, out, fmt)) == _produced(0, 60)
    again = export(spark, None, str(out), fmt, options=options, incremental=True)
    assert again.records == 0 and "nothing new" in again.notes[0]

    produce(kwire_broker.bootstrap, 60, 25)  # new records arrive
    with pytest.raises(KwireError, match="before its commit"):
        export_incremental(spark, None, str(out), fmt, options=options, _fail_before_commit=True)
    assert _table(spark, out, fmt).count() == 2 * 60  # the stopped run added nothing

    rerun = export(spark, None, str(out), fmt, options=options, incremental=True)
    assert rerun.records == 2 * 25
    table = _table(spark, out, fmt)
    assert _values(table) == _produced(0, 85)
    # offsets as the cluster numbered them: each (topic, partition) from 0, without gaps
    offsets = sorted((r.topic, r.partition, r.offset) for r in table.collect())
    assert offsets == sorted(
        (t, p, o)
        for t, n in TOPICS.items()
        for p in range(n)
        for o in range(85 // n + (p < 85 % n))
    )
    note = json.loads(rerun.notes[0].split("offsets now ", 1)[1])
    assert note == {"a": {"0": 43, "1": 42}, "b": {"0": 85}}


def test_cli_exports_a_cluster_topic_to_parquet(
    spark: Any, kwire_broker: Any, tmp_path: Path, capsys: Any
) -> None:
    from kwire.cli._main import main

    for topic, partitions in TOPICS.items():
        kwire_broker.create_topic(topic, partitions=partitions)
    produce(kwire_broker.bootstrap, 0, 30)
    out = tmp_path / "parquet"
    argv = ["pipeline", "export", "--bootstrap", kwire_broker.bootstrap, "--subscribe", "b"]
    assert main([*argv, "--output", str(out), "--json"]) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result["records"] == 30
    assert _values(_table(spark, out, "parquet")) == [v for v in _produced(0, 30) if v[0] == "b"]
    # Spark's own writer (the kafka-wire DataFrame) gives the same rows
    out = tmp_path / "by-spark"
    assert main([*argv, "--output", str(out), "--engine", "spark", "--json"]) == 0
    assert _values(_table(spark, out, "parquet")) == [v for v in _produced(0, 30) if v[0] == "b"]
    # one input or the other, not both
    with pytest.raises(SystemExit) as usage:
        main([*argv, "--input", str(tmp_path), "--output", str(tmp_path / "x")])
    assert usage.value.code == 2
