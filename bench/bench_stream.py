"""Streaming benchmark: produced-to-committed latency of ``readStream.format("kafka-log")``.

A ``kwire broker`` runs as a subprocess on a temporary data directory; confluent-kafka produces
1 KiB values at a fixed rate (10 MB/s by default) to a 3-partition topic; a streaming query reads
the broker's data directory and, in ``foreachBatch``, appends each micro-batch to Parquet. A
record's latency is the time its micro-batch's Parquet write returned (committed) minus its
CreateTime (set by librdkafka at ``produce()``). The first ``--warmup`` seconds are left out.
Each mode runs on its own topic, one after the other:

* ``auto`` (the default ``streamEnd``): the log end for partitions whose only replica is the
  broker (every partition here: a single-node broker, replication factor 1), by the metadata log
  in the data directory; else the high watermark;
* ``highWatermark``: micro-batches end at the high watermark of the
  ``replication-offset-checkpoint``, which the broker writes every
  ``--checkpoint-interval-ms`` (its ``replica.high.watermark.checkpoint.interval.ms``; 5000 by
  default, as Kafka);
* ``logEnd``: micro-batches end at the last whole batch of the log.

    .venv/bin/python bench/bench_stream.py [--mb-per-s 10] [--seconds 30]
        [--modes auto,highWatermark,logEnd] [--checkpoint-interval-ms 5000]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BROKER = """
import sys, time
from kwire.broker import Broker
config = {"replica.high.watermark.checkpoint.interval.ms": sys.argv[3]}
b = Broker(sys.argv[1], port=int(sys.argv[2]), config=config).start()
print("ready", flush=True)
while True:
    time.sleep(3600)
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _produce(bootstrap: str, topic: str, mb_per_s: float, seconds: float) -> tuple[int, float]:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": 1})
    value = os.urandom(1024)
    per_tick = max(1, int(mb_per_s * 1e6 / 1024 / 100))  # 100 ticks a second
    sent = 0
    begin = time.monotonic()
    tick = 0
    while time.monotonic() - begin < seconds:
        for i in range(per_tick):
            producer.produce(topic, value=value, partition=(sent + i) % 3)
        sent += per_tick
        producer.poll(0)
        tick += 1
        delay = begin + tick / 100 - time.monotonic()
        if delay > 0:
            time.sleep(delay)
    producer.flush(60)
    return sent, sent * 1024 / (time.monotonic() - begin) / 1e6


def run_mode(
    spark: Any, data: Path, bootstrap: str, mode: str, args: argparse.Namespace
) -> dict[str, Any]:
    from confluent_kafka.admin import AdminClient, NewTopic

    topic = f"bench-{mode}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 3, 1)])[topic].result(30)
    out = Path(tempfile.mkdtemp(prefix=f"stream-{mode}-"))
    latencies: list[tuple[float, float]] = []  # (produce time ms, latency ms)
    batches: list[tuple[int, int, float]] = []  # (batch id, rows, seconds)
    seen = [0]

    def sink(df: Any, batch_id: int) -> None:
        import pyarrow.parquet as pq

        t0 = time.time()
        target = out / "data" / f"batch={batch_id}"
        df.write.mode("overwrite").parquet(str(target))  # the micro-batch is committed here
        done = time.time() * 1000
        if not target.exists():
            return
        stamps = pq.read_table(target, columns=["timestamp"]).column("timestamp")
        millis = stamps.cast("int64").to_pylist()  # microseconds
        latencies.extend((us / 1000, done - us / 1000) for us in millis)
        seen[0] += len(millis)
        batches.append((batch_id, len(millis), time.time() - t0))

    query = (
        spark.readStream.format("kafka-log")
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("streamEnd", mode)
        .load(str(data))
        .select("timestamp", "value")
        .writeStream.foreachBatch(sink)
        .option("checkpointLocation", str(out / "checkpoint"))
        .start()
    )
    time.sleep(3)  # the first (empty) micro-batch
    start_ms = time.time() * 1000
    sent, rate = _produce(bootstrap, topic, args.mb_per_s, args.seconds)
    deadline = time.monotonic() + 60
    while seen[0] < sent and time.monotonic() < deadline:
        time.sleep(0.5)
    query.stop()
    measured = [lat for ts, lat in latencies if ts >= start_ms + args.warmup * 1000]
    return {
        "mode": mode,
        "records_produced": sent,
        "records_committed": seen[0],
        "produce_mb_per_s": round(rate, 2),
        "latency_ms": {
            "p50": round(_percentile(measured, 0.50)),
            "p95": round(_percentile(measured, 0.95)),
            "p99": round(_percentile(measured, 0.99)),
            "max": round(max(measured)),
        }
        if measured
        else None,
        "micro_batches": len([b for b in batches if b[1]]),
        "mean_batch_seconds": round(
            sum(b[2] for b in batches if b[1]) / max(1, len([b for b in batches if b[1]])), 2
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mb-per-s", type=float, default=10.0)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--warmup", type=float, default=5.0)
    parser.add_argument(
        "--modes",
        default="auto,highWatermark,logEnd",
        help="comma list of streamEnd values (auto, highWatermark, logEnd)",
    )
    parser.add_argument(
        "--checkpoint-interval-ms",
        type=int,
        default=5000,
        help="the broker's replica.high.watermark.checkpoint.interval.ms",
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    import pyspark

    from kwire.spark import get_session

    data = Path(tempfile.mkdtemp(prefix="stream-bench-"))
    port = _free_port()
    broker = subprocess.Popen(
        [sys.executable, "-c", BROKER, str(data), str(port), str(args.checkpoint_interval_ms)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert broker.stdout is not None
        if broker.stdout.readline().strip() != "ready":
            raise SystemExit("the broker did not start")
        spark = get_session("local[2]", app_name="bench_stream")
        results = [
            run_mode(spark, data, f"127.0.0.1:{port}", mode, args) for mode in args.modes.split(",")
        ]
        spark.stop()
    finally:
        broker.terminate()
        broker.wait(30)
    report = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "python": platform.python_version(),
        "pyspark": pyspark.__version__,
        "target_mb_per_s": args.mb_per_s,
        "seconds": args.seconds,
        "checkpoint_interval_ms": args.checkpoint_interval_ms,
        "results": results,
    }
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(
        f"{report['machine']}, Python {report['python']}, PySpark {report['pyspark']}, "
        f"replica.high.watermark.checkpoint.interval.ms={args.checkpoint_interval_ms}"
    )
    print(
        f"{'mode':<14} {'MB/s':>6} {'records':>9} {'batches':>7} {'s/batch':>7} "
        f"{'p50 ms':>7} {'p95 ms':>7} {'p99 ms':>7} {'max ms':>7}"
    )
    for r in results:
        lat = r["latency_ms"] or {}
        print(
            f"{r['mode']:<14} {r['produce_mb_per_s']:>6} {r['records_committed']:>9} "
            f"{r['micro_batches']:>7} {r['mean_batch_seconds']:>7} {lat.get('p50', '-'):>7} "
            f"{lat.get('p95', '-'):>7} {lat.get('p99', '-'):>7} {lat.get('max', '-'):>7}"
        )


if __name__ == "__main__":
    main()
