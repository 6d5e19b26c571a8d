"""Benchmark of the Spark pipeline: exporting Kafka log segments with the kafka-log source.

What it measures, in one run on this machine (see docs/benchmarks.md, section "Pipeline"):

* export of >= 1 GiB of log segments (uncompressed, and >= 1 GiB of zstd segments) to Parquet
  (best of 2), and the source alone (Spark's "noop" sink, best of 3), as rows/s and MB/s of
  segment bytes read;
* the same export with ``kwire pipeline export --engine arrow`` (tasks write Parquet with pyarrow;
  its time includes the pipeline's read-back count of the output);
* kwire's read path alone, in one Python process (one core, no Spark), to show where time goes;
* the naive baseline in the same run: ``binaryFile`` + a Python UDF that decodes each segment
  with kafka-python 3.0.12, exploded into rows and written to Parquet the same way (on a copy
  of the same records in 16 MiB segments: with one 128 MiB segment per row it runs out of JVM
  heap);
* the peak resident memory of the Python workers, for a dataset and one 4x larger: bounded means
  it does not grow with the size or number of segments;
* the cold start of the first query: a fresh process, SparkSession creation, the first query
  (Python workers start, numba kernels load from their cache), then a second query.

Usage: .venv/bin/python bench/bench_pipeline.py [--gib 1.0] [--baseline-gib 0.25] [--quick]
Data goes to a temporary directory (or --workdir) and is removed afterwards.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import string
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from kwire.log import LogWriter
from kwire.records import BatchBuilder, Compression

RECORDS_PER_BATCH = 500
TEMPLATES = 32
PARTITIONS = 4
SEGMENT_BYTES = 128 << 20
BASELINE_SEGMENT_BYTES = 16 << 20


def _templates(codec: int, seed: int = 7) -> list[bytes]:
    """Distinct v2 batches: 10-byte keys, 100-byte values, a header on every other record."""
    rng = random.Random(seed)
    alphabet = (string.ascii_letters + string.digits).encode()
    out = []
    for t in range(TEMPLATES):
        b = BatchBuilder(2, codec, base_offset=0)
        for i in range(RECORDS_PER_BATCH):
            b.append(
                timestamp=1_700_000_000_000 + t * RECORDS_PER_BATCH + i,
                key=b"key-%06d" % rng.randrange(1_000_000),
                value=bytes(rng.choice(alphabet) for _ in range(100)),
                headers=[("trace", b"%08x" % rng.randrange(1 << 32))] if i % 2 else (),
            )
        out.append(b.build())
    return out


def make_log(
    root: Path, records: int, codec: int, segment_bytes: int = SEGMENT_BYTES
) -> dict[str, int]:
    """A log directory of PARTITIONS partitions holding ``records`` records in total."""
    templates = _templates(codec)
    batches = records // RECORDS_PER_BATCH
    written = 0
    for p in range(PARTITIONS):
        with LogWriter(root, "bench", p, segment_bytes=segment_bytes, fsync=False) as w:
            for i in range(batches // PARTITIONS):
                data = bytearray(templates[(i + p) % TEMPLATES])
                data[0:8] = w.next_offset.to_bytes(8, "big")  # outside the CRC
                w.append(data)
                written += RECORDS_PER_BATCH
    size = sum(f.stat().st_size for f in root.rglob("*.log"))
    return {"records": written, "bytes": size, "segments": len(list(root.rglob("*.log")))}


def records_for_bytes(target_bytes: int, codec: int) -> int:
    """How many records make ``target_bytes`` of segments with this codec."""
    per_batch = sum(len(t) for t in _templates(codec)) / TEMPLATES
    batches = int(target_bytes / per_batch) + 1
    batches += -batches % PARTITIONS
    return batches * RECORDS_PER_BATCH


class WorkerMemory:
    """Peak resident memory of Spark's Python workers: VmRSS polled from /proc every 0.1 s
    during the block (the workers outlive a job, so their VmHWM would carry earlier peaks)."""

    def __init__(self) -> None:
        self.peak_kib = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def _poll(self) -> None:
        while not self._stop.is_set():
            for pid in os.listdir("/proc"):
                if not pid.isdigit():
                    continue
                try:
                    cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
                    if b"pyspark" not in cmd or (b"daemon" not in cmd and b"worker" not in cmd):
                        continue
                    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                        if line.startswith("VmRSS:"):
                            self.peak_kib = max(self.peak_kib, int(line.split()[1]))
                except OSError:
                    continue
            self._stop.wait(0.1)

    def __enter__(self) -> WorkerMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def _timed(fn: Any) -> tuple[float, Any]:
    t0 = time.perf_counter()
    value = fn()
    return time.perf_counter() - t0, value


def kafka_python_udf() -> Any:
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    schema = T.ArrayType(
        T.StructType(
            [
                T.StructField("offset", T.LongType()),
                T.StructField("timestamp", T.LongType()),
                T.StructField("key", T.BinaryType()),
                T.StructField("value", T.BinaryType()),
                T.StructField(
                    "headers",
                    T.ArrayType(
                        T.StructType(
                            [
                                T.StructField("key", T.StringType()),
                                T.StructField("value", T.BinaryType()),
                            ]
                        )
                    ),
                ),
            ]
        )
    )

    def decode(content: bytes) -> list[tuple[Any, ...]]:
        from kafka.record import MemoryRecords

        out = []
        records = MemoryRecords(bytes(content))
        while True:
            batch = records.next_batch()
            if batch is None:
                break
            for r in batch:
                out.append((r.offset, r.timestamp, r.key, r.value, r.headers or None))
        return out

    return F.udf(decode, schema)


def run_export(spark: Any, log_dir: Path, out: Path, info: dict[str, int]) -> dict[str, Any]:
    """kwire's source to Parquet, and to Spark's noop sink (the source alone)."""
    df = spark.read.format("kafka-log").load(str(log_dir))
    results: dict[str, Any] = {}
    with WorkerMemory() as mem:
        seconds = min(
            _timed(lambda: df.write.format("noop").mode("overwrite").save())[0] for _ in range(3)
        )
    results["scan"] = _rates(seconds, info, mem.peak_kib)
    with WorkerMemory() as mem:
        seconds = min(
            _timed(lambda: df.write.mode("overwrite").parquet(str(out)))[0] for _ in range(2)
        )
    results["parquet"] = _rates(seconds, info, mem.peak_kib)
    results["parquet"]["rows_check"] = spark.read.parquet(str(out)).count()
    from kwire.spark._pipeline import export

    arrow_out = out.with_name(out.name + "-arrow")
    with WorkerMemory() as mem:
        seconds = min(
            _timed(
                lambda: export(
                    spark, str(log_dir), str(arrow_out), engine="arrow", mode="overwrite"
                )
            )[0]
            for _ in range(2)
        )
    results["parquet_arrow_engine"] = _rates(seconds, info, mem.peak_kib)
    results["parquet_arrow_engine"]["rows_check"] = spark.read.parquet(str(arrow_out)).count()
    return results


def run_decode_only(log_dir: Path, info: dict[str, int]) -> dict[str, Any]:
    """kwire's read path without Spark: plan + read every split in this one process (one core)."""
    from kwire.records._columnar import warm_up
    from kwire.spark._fs import list_files, read_bytes, resolve
    from kwire.spark._options import parse_read_options
    from kwire.spark._plan import plan_splits
    from kwire.spark._read import read_split
    from kwire.spark._schema import CORRUPT_RECORD, RECORD_COLUMNS, arrow_schema

    warm_up()
    fs, root = resolve(str(log_dir))
    options = parse_read_options({})
    target = arrow_schema([*RECORD_COLUMNS, CORRUPT_RECORD])

    def scan() -> int:
        splits = plan_splits(list_files(fs, root), options, lambda p: read_bytes(fs, p))
        return sum(b.num_rows for s in splits for b in read_split(s, options, target))

    seconds, rows = min(_timed(scan) for _ in range(2))
    assert rows == info["records"]
    return _rates(seconds, info, 0)


def run_baseline(spark: Any, log_dir: Path, out: Path, info: dict[str, int]) -> dict[str, Any]:
    from pyspark.sql import functions as F

    decode = kafka_python_udf()
    files = (
        spark.read.format("binaryFile")
        .option("pathGlobFilter", "*.log")
        .option("recursiveFileLookup", "true")
        .load(str(log_dir))
    )
    rows = files.select(F.explode(decode("content")).alias("r")).select("r.*")
    shutil.rmtree(out, ignore_errors=True)
    with WorkerMemory() as mem:
        seconds, _ = _timed(lambda: rows.write.mode("overwrite").parquet(str(out)))
    result = _rates(seconds, info, mem.peak_kib)
    result["rows_check"] = spark.read.parquet(str(out)).count()
    return result


def _rates(seconds: float, info: dict[str, int], peak_kib: int) -> dict[str, Any]:
    return {
        "seconds": round(seconds, 2),
        "rows_per_s": round(info["records"] / seconds),
        "mb_per_s": round(info["bytes"] / 1e6 / seconds, 1),
        "worker_peak_rss_mib": round(peak_kib / 1024, 1),
    }


COLD = """
import json, sys, time
t0 = time.perf_counter()
from kwire.spark import get_session
spark = get_session("local[2]")
t1 = time.perf_counter()
df = spark.read.format("kafka-log").load(sys.argv[1])
first = df.limit(10).collect()
t2 = time.perf_counter()
n = df.where("partition = 0").count()
t3 = time.perf_counter()
print(json.dumps({"session_s": round(t1 - t0, 2), "first_query_s": round(t2 - t1, 2),
                  "second_query_s": round(t3 - t2, 2), "total_to_first_rows_s": round(t2 - t0, 2)}))
"""


def cold_start(log_dir: Path) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, "-c", COLD, str(log_dir)],
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--gib", type=float, default=1.0, help="uncompressed segments (GiB)")
    parser.add_argument(
        "--baseline-gib", type=float, default=None, help="data for the baseline (default: --gib)"
    )
    parser.add_argument("--quick", action="store_true", help="64 MiB smoke run")
    parser.add_argument("--workdir", default=None)
    args = parser.parse_args()
    gib = 1 / 16 if args.quick else args.gib
    base_gib = gib if args.baseline_gib is None else args.baseline_gib
    work = Path(args.workdir or tempfile.mkdtemp(prefix="kwire-bench-"))
    from kwire.spark import get_session

    report: dict[str, Any] = {"gib": gib}
    try:
        t = time.perf_counter()
        n = records_for_bytes(int(gib * (1 << 30)), Compression.NONE)
        plain = make_log(work / "plain", n, Compression.NONE)
        zstd = make_log(
            work / "zstd",
            records_for_bytes(int(gib * (1 << 30)), Compression.ZSTD),
            Compression.ZSTD,
        )
        small = make_log(work / "small", n // 4, Compression.NONE)
        # The baseline holds a whole segment per row (binaryFile) and its UDF returns all of a
        # segment's records in one array: with 128 MiB segments that needs more JVM heap than
        # this machine gives a task, so its copy of the data has BASELINE_SEGMENT_BYTES segments.
        nb = records_for_bytes(int(base_gib * (1 << 30)), Compression.NONE)
        base = make_log(work / "base", nb, Compression.NONE, BASELINE_SEGMENT_BYTES)
        base_dir = work / "base"
        report["data"] = {"plain": plain, "zstd": zstd, "small": small, "baseline": base}
        report["generate_s"] = round(time.perf_counter() - t, 1)
        print(json.dumps(report["data"]), flush=True)

        report["cold_start"] = cold_start(work / "small")
        print("cold start", report["cold_start"], flush=True)

        spark = get_session("local[2]", config={"spark.driver.memory": "8g"})
        # warm up: every local Python worker started, numba kernels loaded
        spark.read.format("kafka-log").load(str(work / "small")).write.format("noop").mode(
            "overwrite"
        ).save()
        for name, info in (("small", small), ("plain", plain), ("zstd", zstd)):
            report[name] = run_export(spark, work / name, work / f"out-{name}", info)
            report[name]["decode_only_1_core"] = run_decode_only(work / name, info)
            assert report[name]["parquet"]["rows_check"] == info["records"]
            assert report[name]["parquet_arrow_engine"]["rows_check"] == info["records"]
            print(name, report[name], flush=True)
        report["baseline"] = run_baseline(spark, base_dir, work / "out-baseline", base)
        assert report["baseline"]["rows_check"] == base["records"]
        print("baseline", report["baseline"], flush=True)
        for job in ("parquet", "parquet_arrow_engine"):
            report[f"speedup_{job}_vs_baseline_rows"] = round(
                report["plain"][job]["rows_per_s"] / report["baseline"]["rows_per_s"], 1
            )
        spark.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
