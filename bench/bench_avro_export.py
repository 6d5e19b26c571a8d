"""End-to-end export with Avro decoding: a Kafka log directory of Confluent-framed Avro values
to Parquet on the embedded Spark session, in MB/s of segment bytes.

The data: topic ``orders`` (4 partitions, 128 MiB segments, v2 batches of 500 records) holding
the ``Order`` values of bench/bench_avro.py (magic 0, schema id 1, Avro binary; 200,000 distinct
values made with fastavro, their batches repeated with fresh offsets up to ``--mb``), and the
registry's ``_schemas`` topic written as Confluent's registry writes it (a NOOP key, then the
``orders-value`` registration), the way tests/spark/test_registry.py builds it.

The jobs, in one run, each best of ``--repeat`` after a warm-up on a small copy (Python workers
started, numba kernels loaded), all with ``subscribe=orders``:

* ``kwire.spark._pipeline.export`` (what ``kwire pipeline export --option subscribe=orders
  --option valueFormat=avro`` runs) with ``--engine spark``: the DataFrame
  ``spark.read.format("kafka-log").option("valueFormat", "avro").load(dir)`` into Spark's Parquet
  writer; and the same without ``valueFormat`` (value stays binary);
* the same with the default arrow engine, with and without ``valueFormat``: each Spark task runs
  the reader the DataFrame source would use (with ``valueFormat``, the typed source's reader, which
  decodes in the Python task) and writes its Arrow batches to one Parquet file with pyarrow.

Each job records the Parquet type of ``value`` it wrote (a struct when decoded, else binary).
Wall seconds include the pipeline's read-back count of the output (as in bench_pipeline.py).
MB/s = segment bytes of ``orders`` on disk (10^6 bytes) / wall seconds.

    .venv/bin/python bench/bench_avro_export.py [--mb 300] [--codec none|lz4] [--repeat 2]
        [--workdir DIR]

Data goes to a temporary directory (or --workdir) and is removed afterwards.
docs/benchmarks.md ("Avro decoding", "Avro export, end to end") records a run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_avro import SCHEMA, make_values

from kwire.log import LogWriter
from kwire.records import BatchBuilder, Compression
from kwire.spark._avro import parse_avro

TOPIC = "orders"
PARTITIONS = 4
RECORDS_PER_BATCH = 500
DISTINCT = 200_000
SEGMENT_BYTES = 128 << 20
CODECS = {"none": Compression.NONE, "lz4": Compression.LZ4}


def _templates(codec: int, distinct: int) -> list[bytes]:
    """Batches of the distinct Avro values, keyed like a producer keying by id."""
    values = make_values(distinct, parse_avro(json.dumps(SCHEMA)))
    out = []
    for start in range(0, len(values), RECORDS_PER_BATCH):
        b = BatchBuilder(2, codec, base_offset=0)
        for i, v in enumerate(values[start : start + RECORDS_PER_BATCH]):
            b.append(timestamp=1_700_000_000_000 + start + i, key=b"%d" % (start + i), value=v)
        out.append(b.build())
    return out


def _write_schemas_topic(root: Path) -> None:
    """``_schemas`` as Confluent's registry writes it: a NOOP record, then the registration."""
    key = {"keytype": "SCHEMA", "subject": f"{TOPIC}-value", "version": 1, "magic": 1}
    value = {
        "subject": f"{TOPIC}-value",
        "version": 1,
        "id": 1,
        "schema": json.dumps(SCHEMA),
        "references": [],
        "deleted": False,
    }
    b = BatchBuilder(2, Compression.NONE, base_offset=0)
    b.append(timestamp=1_700_000_000_000, key=b'{"keytype":"NOOP","magic":0}', value=None)
    b.append(
        timestamp=1_700_000_000_001,
        key=json.dumps(key).encode(),
        value=json.dumps(value).encode(),
    )
    with LogWriter(root, "_schemas", 0, fsync=False) as w:
        w.append(b.build())


def make_log(root: Path, templates: list[bytes], target_bytes: int) -> dict[str, int]:
    per_partition = target_bytes // PARTITIONS
    records = 0
    for p in range(PARTITIONS):
        size = 0
        with LogWriter(root, TOPIC, p, segment_bytes=SEGMENT_BYTES, fsync=False) as w:
            i = 0
            while size < per_partition:
                data = bytearray(templates[(i + p * 97) % len(templates)])
                data[0:8] = w.next_offset.to_bytes(8, "big")  # outside the CRC
                w.append(data)
                size += len(data)
                records += RECORDS_PER_BATCH
                i += 1
    _write_schemas_topic(root)
    logs = list((root).glob(f"{TOPIC}-*/*.log"))
    return {
        "records": records,
        "bytes": sum(f.stat().st_size for f in logs),
        "segments": len(logs),
    }


def _timed(fn: Any) -> tuple[float, Any]:
    t0 = time.perf_counter()
    value = fn()
    return time.perf_counter() - t0, value


def _parquet_value_type(out: Path) -> str:
    import pyarrow.parquet as pq

    return str(pq.read_schema(next(out.rglob("*.parquet"))).field("value").type)


def run_jobs(
    spark: Any, log_dir: Path, out: Path, info: dict[str, int], repeat: int
) -> dict[str, Any]:
    from kwire.spark._pipeline import export

    avro = {"subscribe": TOPIC, "valueFormat": "avro", "mode": "FAILFAST"}
    plain = {"subscribe": TOPIC, "mode": "FAILFAST"}

    def pipeline(engine: str, options: dict[str, str]) -> Any:
        def run() -> int:
            result = export(
                spark, str(log_dir), str(out), options=options, engine=engine, mode="overwrite"
            )
            assert not result.skipped_bytes
            return int(result.records)

        return run

    jobs: list[tuple[str, Any]] = [
        ("kwire pipeline export --engine spark, valueFormat=avro", pipeline("spark", avro)),
        ("kwire pipeline export --engine spark, value binary", pipeline("spark", plain)),
        ("kwire pipeline export (arrow engine), valueFormat=avro", pipeline("arrow", avro)),
        ("kwire pipeline export (arrow engine), value binary", pipeline("arrow", plain)),
    ]
    results: dict[str, Any] = {}
    for name, job in jobs:
        runs = []
        for _ in range(repeat):
            seconds, rows = _timed(job)
            assert rows == info["records"], (rows, info["records"])
            runs.append(seconds)
        best = min(runs)
        results[name] = {
            "seconds": round(best, 2),
            "runs_s": [round(s, 2) for s in runs],
            "rows_per_s": round(info["records"] / best),
            "mb_per_s": round(info["bytes"] / 1e6 / best, 1),
            "parquet_value_type": _parquet_value_type(out)[:60],
        }
        print(name, results[name], flush=True)
    return results


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mb", type=float, default=300, help="segment bytes of the topic (10^6)")
    ap.add_argument("--codec", choices=tuple(CODECS), default="none")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--workdir", default=None)
    args = ap.parse_args()
    work = Path(args.workdir or tempfile.mkdtemp(prefix="kwire-bench-avro-"))
    report: dict[str, Any] = {
        "mb": args.mb,
        "codec": args.codec,
        "cpus": os.cpu_count(),
        "loadavg_at_start": os.getloadavg(),
    }
    try:
        t = time.perf_counter()
        templates = _templates(CODECS[args.codec], DISTINCT)
        data = make_log(work / "log", templates, int(args.mb * 1e6))
        make_log(work / "small", templates[:40], 8 * 1_000_000)
        report["data"] = data
        report["generate_s"] = round(time.perf_counter() - t, 1)
        print(json.dumps(report), flush=True)

        from kwire.spark import get_session
        from kwire.spark._pipeline import export

        spark = get_session("local[2]", config={"spark.driver.memory": "4g"})
        # warm up: Python workers started, numba kernels (records + Avro) loaded from the cache
        for options in ({"subscribe": TOPIC, "valueFormat": "avro"}, {"subscribe": TOPIC}):
            for engine in ("arrow", "spark"):
                export(
                    spark,
                    str(work / "small"),
                    str(work / "out-warm"),
                    options=options,
                    engine=engine,
                    mode="overwrite",
                )
        report["jobs"] = run_jobs(spark, work / "log", work / "out", data, args.repeat)
        report["loadavg_at_end"] = os.getloadavg()
        spark.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
