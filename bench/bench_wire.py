"""Spark batch read over the wire: ``kafka-wire`` vs confluent-kafka in ``mapInArrow`` vs ``kafka-log``.

One ``kwire broker`` process on loopback holds a topic (1 KiB values, lz4, produced by librdkafka);
each contender reads every record of it into Parquet with the same local Spark session, in the
same run:

* ``kafka-wire``: ``spark.read.format("kafka-wire")`` (kwire.client in each task: Fetch to the
  leader, the columnar decoder to Arrow);
* ``confluent-kafka in mapInArrow``: a DataFrame of (partition, start, end) rows, one per
  partition, and a ``mapInArrow`` function that consumes its range with a confluent-kafka
  ``Consumer`` into Arrow batches: what a PySpark job without a JVM connector does today;
* ``kafka-log``: ``spark.read.format("kafka-log")`` of the broker's own data directory;
* the floor: a Python data source whose tasks yield kafka-wire's own Arrow batches of the same
  columns from memory (Arrow IPC files written before the clock starts, memory-mapped): the cost
  of Spark's Python data source path (Arrow to the JVM, rows, Parquet) with nothing fetched or
  decoded. No reader of a Python data source can be faster than this.

All write the same columns (key, value, topic, partition, offset, timestamp) to Parquet; each is
checked to have written every record. Spark's Python data sources get no column pruning, so a
``.select`` after ``load()`` still makes the source build (and ship to the JVM) every column of
its schema: the kwire sources are run both ways, with their default schema and with the
``columns`` option naming the six columns the confluent-kafka job builds. Every contender gets one
Spark task per topic-partition, in the same session. Best of ``--rounds``, the rounds taken in
turn (round 1 of every contender, then round 2, ...).

    .venv/bin/python bench/bench_wire.py [--mb 1024] [--partitions 4] [--rounds 2] [--json] [--only NAME;NAME]

PySpark's ``mapInArrow`` needs pandas (``pip install "pandas>=2.2"`` in the venv); kwire does not.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_client import VALUE, produce, start_broker

COLUMNS = ["key", "value", "topic", "partition", "offset", "timestamp"]


def floor_source() -> Any:
    """A Python data source yielding the Arrow batches of IPC files (one file per Spark task)."""
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

    class FloorReader(DataSourceReader):  # type: ignore[misc]
        def __init__(self, paths: list[str]) -> None:
            self.paths = paths

        def partitions(self) -> list[Any]:
            return [InputPartition(p) for p in self.paths]

        def read(self, partition: Any) -> Any:
            import pyarrow as pa

            with pa.memory_map(partition.value) as source:
                reader = pa.ipc.open_file(source)
                for i in range(reader.num_record_batches):
                    yield reader.get_batch(i)

    class FloorSource(DataSource):  # type: ignore[misc]
        @classmethod
        def name(cls) -> str:
            return "bench-arrow-floor"

        def schema(self) -> str:
            return (
                "key binary, value binary, topic string, partition int, offset long, "
                "timestamp timestamp"
            )

        def reader(self, schema: Any) -> FloorReader:
            return FloorReader(self.options["paths"].split(","))

    return FloorSource


def write_floor_files(bootstrap: str, ends: dict[int, int], tmp: str) -> list[str]:
    """kafka-wire's batches of each partition (the six columns), as Arrow IPC files."""
    import pyarrow as pa
    from pyspark.sql.pandas.types import from_arrow_schema

    from kwire.spark._schema import arrow_schema
    from kwire.spark._wire_source import KafkaWireDataSource, WireRange

    source = KafkaWireDataSource(
        {"kafka.bootstrap.servers": bootstrap, "subscribe": "bench", "columns": ",".join(COLUMNS)}
    )
    reader = source.reader(from_arrow_schema(arrow_schema(COLUMNS)))
    paths = []
    for part, end in sorted(ends.items()):
        path = os.path.join(tmp, f"floor-{part}.arrow")
        batches = list(reader.read(WireRange("bench", part, 0, end)))
        with pa.OSFile(path, "wb") as sink, pa.ipc.new_file(sink, batches[0].schema) as out:
            for b in batches:
                out.write_batch(b)
        paths.append(path)
    return paths


def confluent_ranges(bootstrap: str, topic: str) -> Any:
    """The mapInArrow function: consume each (partition, start, end) row's range into Arrow."""

    def consume(batches: Any) -> Any:
        import confluent_kafka as ck

        for batch in batches:
            for row in batch.to_pylist():
                part, start, end = row["partition"], row["start"], row["end"]
                consumer = ck.Consumer(
                    {
                        "bootstrap.servers": bootstrap,
                        "group.id": "bench-mapinarrow",
                        "enable.auto.commit": False,
                        "fetch.max.bytes": 64 << 20,
                        "max.partition.fetch.bytes": 8 << 20,
                    }
                )
                consumer.assign([ck.TopicPartition(topic, part, start)])
                cols: dict[str, list[Any]] = {c: [] for c in COLUMNS}
                offset = start
                deadline = time.monotonic() + 600
                while offset < end and time.monotonic() < deadline:
                    for m in consumer.consume(10000, 1.0):
                        if m.error() or m.offset() >= end:
                            continue
                        cols["key"].append(m.key())
                        cols["value"].append(m.value())
                        cols["topic"].append(topic)
                        cols["partition"].append(part)
                        cols["offset"].append(m.offset())
                        cols["timestamp"].append(m.timestamp()[1] * 1000)
                        offset = m.offset() + 1
                        if len(cols["offset"]) >= 50_000:
                            yield _arrow(cols)
                            cols = {c: [] for c in COLUMNS}
                consumer.close()
                if cols["offset"]:
                    yield _arrow(cols)

    def _arrow(cols: dict[str, list[Any]]) -> Any:
        import pyarrow as pa

        return pa.RecordBatch.from_arrays(
            [
                pa.array(cols["key"], pa.binary()),
                pa.array(cols["value"], pa.binary()),
                pa.array(cols["topic"], pa.string()),
                pa.array(cols["partition"], pa.int32()),
                pa.array(cols["offset"], pa.int64()),
                pa.array(cols["timestamp"], pa.int64()).cast(pa.timestamp("us", tz="UTC")),
            ],
            names=COLUMNS,
        )

    return consume


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=int, default=1024, help="MiB of values to produce")
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--only", help="run only these contenders (names separated by ';')")
    args = ap.parse_args()

    import kwire.spark
    from kwire.client import LATEST, KafkaClient

    with tempfile.TemporaryDirectory(prefix="kwire-bench-wire-") as tmp:
        data = os.path.join(tmp, "data")
        proc, bootstrap = start_broker(data)
        try:
            count = produce(bootstrap, "bench", args.mb, args.partitions)
            with KafkaClient({"bootstrap.servers": bootstrap}) as client:
                client.metadata(["bench"])
                tps = [("bench", p) for p in range(args.partitions)]
                ends = {p: o for (_, p), o in client.list_offsets(tps, LATEST).items()}
            spark = kwire.spark.get_session("local[2]", config={"spark.driver.memory": "4g"})
            kwire.spark.register(spark)
            time.sleep(6)  # the broker's high-watermark checkpoint (kafka-log reads to it)

            floor_paths = write_floor_files(bootstrap, ends, tmp)
            spark.dataSource.register(floor_source())
            pruned = {"columns": ",".join(COLUMNS)}

            def wire(out: str, extra: dict[str, str] | None = None) -> None:
                (
                    spark.read.format("kafka-wire")
                    .option("kafka.bootstrap.servers", bootstrap)
                    .option("subscribe", "bench")
                    .options(**(extra or {}))
                    .load()
                    .select(*COLUMNS)
                    .write.parquet(out)
                )

            def log_dir(out: str, extra: dict[str, str] | None = None) -> None:
                (
                    spark.read.format("kafka-log")
                    .option("subscribe", "bench")
                    .options(**(extra or {}))
                    .load(data)
                    .select(*COLUMNS)
                    .write.parquet(out)
                )

            def floor(out: str) -> None:
                (
                    spark.read.format("bench-arrow-floor")
                    .option("paths", ",".join(floor_paths))
                    .load()
                    .write.parquet(out)
                )

            def confluent(out: str) -> None:
                from pyspark.sql.types import StructType

                rows = [(p, 0, e) for p, e in sorted(ends.items())]
                # one range per Spark partition, as kafka-wire plans them (a repartition() of
                # a few rows spreads them unevenly)
                ranges = spark.createDataFrame(
                    spark.sparkContext.parallelize(rows, len(rows)),
                    "partition int, start long, end long",
                )
                schema = StructType.fromDDL(
                    "key binary, value binary, topic string, partition int, offset long, "
                    "timestamp timestamp"
                )
                ranges.mapInArrow(confluent_ranges(bootstrap, "bench"), schema).write.parquet(out)

            results: dict[str, float] = {}
            contenders: list[tuple[str, Any]] = [
                ("kafka-wire", wire),
                ("kafka-wire, columns option", lambda out: wire(out, pruned)),
                ("confluent-kafka mapInArrow", confluent),
                ("kafka-log", log_dir),
                ("kafka-log, columns option", lambda out: log_dir(out, pruned)),
                ("floor: Arrow from memory", floor),
            ]
            if args.only:
                contenders = [c for c in contenders if c[0] in args.only.split(";")]
            # rounds outside, contenders inside: on a shared machine each contender's best
            # round comes from the same stretches of load as the others'
            for r in range(args.rounds):
                for i, (name, fn) in enumerate(contenders):
                    out = os.path.join(tmp, f"out-{i}-{r}")
                    t0 = time.perf_counter()
                    fn(out)
                    elapsed = time.perf_counter() - t0
                    results[name] = min(results.get(name, elapsed), elapsed)
                    written = spark.read.parquet(out).count()
                    assert written == count, (name, written, count)
                    shutil.rmtree(out)
                    print(f"  round {r} {name}: {elapsed:.2f} s", file=sys.stderr, flush=True)
            spark.stop()
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(30)
    mib = count * VALUE / (1 << 20)
    rates = {k: mib / v for k, v in results.items()}
    ratios = {
        f"{a} / {b}": rates[a] / rates[b]
        for a, b in (
            ("kafka-wire", "confluent-kafka mapInArrow"),
            ("kafka-wire, columns option", "confluent-kafka mapInArrow"),
            ("floor: Arrow from memory", "confluent-kafka mapInArrow"),
            ("kafka-wire", "kafka-log"),
            ("kafka-wire, columns option", "kafka-log, columns option"),
            ("kafka-wire, columns option", "floor: Arrow from memory"),
        )
        if a in rates and b in rates
    }
    doc = {"records": count, "MiB": mib, "seconds": results, "MiB_per_s": rates, "ratios": ratios}
    if args.json:
        print(json.dumps(doc, indent=2))
        return
    print(
        f"{count:,} records, {mib:.0f} MiB of values, {args.partitions} partitions, lz4, "
        f"best of {args.rounds}, Parquet sink, local[2]"
    )
    print(f"{'reader':<32}{'seconds':>10}{'MiB/s':>10}")
    for name, secs in results.items():
        print(f"{name:<32}{secs:>10.2f}{rates[name]:>10.1f}")
    for name, ratio in ratios.items():
        print(f"{name}: {ratio:.2f}x")


if __name__ == "__main__":
    main()
