"""Spark batch read over the wire: ``kafka-wire`` vs confluent-kafka in ``mapInArrow`` vs ``kafka-log``.

One ``kwire broker`` process on loopback holds a topic (1 KiB values, lz4, produced by librdkafka);
each contender reads every record of it into Parquet with the same local Spark session, in the
same run:

* ``kafka-wire``: ``spark.read.format("kafka-wire")`` (kwire.client in each task: Fetch to the
  leader, the columnar decoder to Arrow);
* ``confluent-kafka in mapInArrow``: a DataFrame of (partition, start, end) rows, one per
  partition, and a ``mapInArrow`` function that consumes its range with a confluent-kafka
  ``Consumer`` into Arrow batches: what a PySpark job without a JVM connector does today;
* ``kafka-log``: ``spark.read.format("kafka-log")`` of the broker's own data directory.

All write the same columns (key, value, topic, partition, offset, timestamp) to Parquet; each is
checked to have written every record. Best of ``--rounds``.

    .venv/bin/python bench/bench_wire.py [--mb 1024] [--partitions 4] [--rounds 2] [--json]

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

            def wire(out: str) -> None:
                (
                    spark.read.format("kafka-wire")
                    .option("kafka.bootstrap.servers", bootstrap)
                    .option("subscribe", "bench")
                    .option("kafka.max.partition.fetch.bytes", str(8 << 20))
                    .load()
                    .select(*COLUMNS)
                    .write.parquet(out)
                )

            def log_dir(out: str) -> None:
                (
                    spark.read.format("kafka-log")
                    .option("subscribe", "bench")
                    .load(data)
                    .select(*COLUMNS)
                    .write.parquet(out)
                )

            def confluent(out: str) -> None:
                from pyspark.sql.types import StructType

                ranges = spark.createDataFrame(
                    [(p, 0, e) for p, e in sorted(ends.items())],
                    "partition int, start long, end long",
                ).repartition(args.partitions)
                schema = StructType.fromDDL(
                    "key binary, value binary, topic string, partition int, offset long, "
                    "timestamp timestamp"
                )
                ranges.mapInArrow(confluent_ranges(bootstrap, "bench"), schema).write.parquet(out)

            results: dict[str, float] = {}
            for name, fn in (
                ("kafka-wire", wire),
                ("confluent-kafka mapInArrow", confluent),
                ("kafka-log", log_dir),
            ):
                best = float("inf")
                for r in range(args.rounds):
                    out = os.path.join(tmp, f"out-{len(results)}-{r}")
                    t0 = time.perf_counter()
                    fn(out)
                    best = min(best, time.perf_counter() - t0)
                    written = spark.read.parquet(out).count()
                    assert written == count, (name, written, count)
                    shutil.rmtree(out)
                results[name] = best
            spark.stop()
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(30)
    mib = count * VALUE / (1 << 20)
    rates = {k: mib / v for k, v in results.items()}
    doc = {
        "records": count,
        "MiB": mib,
        "seconds": results,
        "MiB_per_s": rates,
        "wire_over_confluent": rates["kafka-wire"] / rates["confluent-kafka mapInArrow"],
        "wire_over_log": rates["kafka-wire"] / rates["kafka-log"],
    }
    if args.json:
        print(json.dumps(doc, indent=2))
        return
    print(
        f"{count:,} records, {mib:.0f} MiB of values, {args.partitions} partitions, lz4, "
        f"best of {args.rounds}, Parquet sink, local[2]"
    )
    print(f"{'reader':<30}{'seconds':>10}{'MiB/s':>10}")
    for name, secs in results.items():
        print(f"{name:<30}{secs:>10.1f}{rates[name]:>10.1f}")
    print(
        f"kafka-wire / confluent-kafka mapInArrow: {doc['wire_over_confluent']:.2f}x "
        f"(target >= 3); kafka-wire / kafka-log: {doc['wire_over_log']:.2f}x (target >= 0.5)"
    )


if __name__ == "__main__":
    main()
