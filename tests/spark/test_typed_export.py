"""Exports with decoded values and views: the arrow engine (the default) and the incremental
export write what the kafka-log DataFrame source reads with the same options, typed columns and
all, never the raw bytes."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.spark

SCHEMA = {
    "type": "record",
    "name": "Reading",
    "namespace": "lab",
    "fields": [
        {"name": "sensor", "type": "string"},
        {"name": "celsius", "type": "double"},
        {"name": "flags", "type": {"type": "array", "items": "string"}},
    ],
}


def _value(i: int) -> dict[str, Any]:
    return {"sensor": f"s{i % 3}", "celsius": i / 4, "flags": ["hot"] * (i % 2)}


def _framed(i: int) -> bytes:
    from fastavro import parse_schema, schemaless_writer

    out = io.BytesIO()
    out.write(b"\x00" + (1).to_bytes(4, "big"))  # Confluent's magic byte and schema id 1
    schemaless_writer(out, parse_schema(SCHEMA), _value(i))
    return out.getvalue()


def _write(path: Path, start: int, count: int) -> None:
    """Topic ``readings`` (2 partitions; keys repeat, so view=latest keeps fewer rows) and the
    registry's ``_schemas`` topic, as Confluent's registry writes it."""
    from kwire.log import LogWriter
    from kwire.records import build_batch

    if start == 0:
        key = {"keytype": "SCHEMA", "subject": "readings-value", "version": 1, "magic": 1}
        doc = {"subject": "readings-value", "version": 1, "id": 1, "schema": json.dumps(SCHEMA)}
        with LogWriter(str(path), "_schemas", 0, fsync=False) as w:
            w.append(build_batch([(None, 0, json.dumps(key).encode(), json.dumps(doc).encode())]))
    # later records are written apart, then their segment moved in beside the first, as a broker
    # rolls segments
    target = path if start == 0 else path.parent / f"staging-{start}"
    for p in range(2):
        with LogWriter(str(target), "readings", p, start_offset=start, fsync=False) as w:
            for i in range(start, start + count, 10):
                records = [
                    (None, 1_714_000_000_000 + j * 1000, f"k{j % 7}".encode(), _framed(j))
                    for j in range(i, min(i + 10, start + count))
                ]
                w.append(build_batch(records, base_offset=i))
        if target != path:
            for f in (target / f"readings-{p}").iterdir():
                if f.suffix in (".log", ".index", ".timeindex"):
                    f.rename(path / f"readings-{p}" / f.name)


def _rows(table: Any) -> list[tuple[int, int, dict[str, Any]]]:
    d = table.select(["partition", "offset", "value"]).to_pydict()
    return sorted(zip(d["partition"], d["offset"], d["value"], strict=True))


def test_arrow_export_writes_decoded_values_and_views(spark: Any, tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    from kwire.spark._pipeline import export

    log = tmp_path / "log"
    _write(log, 0, 40)
    options = {"valueFormat": "avro"}
    result = export(spark, str(log), str(tmp_path / "typed"), options=options)
    assert result.name.endswith("(arrow)") and result.records == 80
    table = pq.read_table(str(tmp_path / "typed"))
    assert str(table.schema.field("value").type).startswith("struct<sensor: string")
    assert _rows(table) == [(p, i, _value(i)) for p in range(2) for i in range(40)]
    # the DataFrame source with the same options reads the same rows
    df = spark.read.format("kafka-log").options(**options).load(str(log))
    assert sorted((r.partition, r.offset, r.value.asDict()) for r in df.collect()) == _rows(table)

    latest = export(spark, str(log), str(tmp_path / "latest"), options={"view": "latest"})
    assert latest.records == 2 * 7  # seven keys per partition
    kept = pq.read_table(str(tmp_path / "latest")).to_pydict()
    assert sorted(zip(kept["partition"], kept["key"], kept["offset"], strict=True)) == sorted(
        (p, f"k{k}".encode(), max(i for i in range(40) if i % 7 == k))
        for p in range(2)
        for k in range(7)
    )


def test_incremental_export_writes_decoded_values(spark: Any, tmp_path: Path) -> None:
    from deltalake import DeltaTable

    from kwire.spark._pipeline import export

    log, out = tmp_path / "log", tmp_path / "delta"
    _write(log, 0, 30)
    first = export(
        spark, str(log), str(out), "delta", incremental=True, options={"valueFormat": "avro"}
    )
    assert first.records == 60
    _write(log, 30, 20)
    second = export(
        spark, str(log), str(out), "delta", incremental=True, options={"valueFormat": "avro"}
    )
    assert second.records == 40
    table = DeltaTable(str(out)).to_pyarrow_table()
    assert str(table.schema.field("value").type).startswith("struct<sensor: string")
    assert _rows(table) == [(p, i, _value(i)) for p in range(2) for i in range(50)]
