"""kwire.client's fetch to Arrow vs confluent-kafka's consumer building the same Arrow table.

Both read the same topic (1 KiB values, lz4, produced by librdkafka) from one ``kwire broker``
process on loopback, from offset 0 to the end of every partition, into an Arrow table of key,
value, partition, offset and timestamp:

* kwire: ``KafkaClient.fetch_range`` per partition (Fetch to the leader, the batches decoded by the
  columnar decoder: no Python object per record);
* confluent-kafka: a ``Consumer`` assigned every partition from offset 0, ``consume(10000)`` until
  each partition's end, the fields appended to Python lists, then ``pa.table``: what a PySpark job
  with confluent-kafka inside ``mapInArrow`` does per task.

Rounds alternate between the two; a first round warms both up (kwire's columnar decoder compiles
with numba on first use, or loads its on-disk cache) and is reported apart; medians of the rest
are reported with the ratio, all from one run.

    .venv/bin/python bench/bench_client.py [--mb 256] [--partitions 4] [--rounds 3] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

HOST = "127.0.0.1"
VALUE = 1024


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def start_broker(data_dir: str) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kwire",
            "broker",
            "--data-dir",
            data_dir,
            "--host",
            HOST,
            "--port",
            str(port),
            "--log-level",
            "WARNING",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((HOST, port), timeout=0.5):
                return proc, f"{HOST}:{port}"
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError("kwire broker did not start in 60 s")


def produce(bootstrap: str, topic: str, total_mb: int, partitions: int) -> int:
    import confluent_kafka as ck
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(topic, partitions, 1)]).values():
        f.result(30)
    rnd = random.Random(7)
    words = [bytes(rnd.choice(b"abcdefghij") for _ in range(rnd.randint(2, 8))) for _ in range(500)]
    values = []
    for _ in range(256):
        text = b""
        while len(text) < VALUE:
            text += rnd.choice(words) + b" "
        values.append(text[:VALUE])
    count = total_mb * 1024
    producer = ck.Producer(
        {
            "bootstrap.servers": bootstrap,
            "compression.type": "lz4",
            "linger.ms": 20,
            "batch.size": 256 * 1024,
            "queue.buffering.max.messages": 1_000_000,
        }
    )
    for i in range(count):
        while True:
            try:
                producer.produce(
                    topic, key=b"k%d" % i, value=values[i % 256], partition=i % partitions
                )
                break
            except BufferError:
                producer.poll(0.05)
        if i % 10000 == 0:
            producer.poll(0)
    assert producer.flush(300) == 0
    return count


def read_kwire(bootstrap: str, topic: str, ends: dict[int, int]) -> Any:
    import pyarrow as pa

    from kwire.client import KafkaClient

    columns = ("key", "value", "partition", "offset", "timestamp")
    batches = []
    with KafkaClient(
        {
            "bootstrap.servers": bootstrap,
            "max.partition.fetch.bytes": str(8 << 20),
            "fetch.max.bytes": str(64 << 20),
        }
    ) as client:
        for partition, end in sorted(ends.items()):
            batches.extend(client.fetch_range(topic, partition, 0, end, columns=columns))
    return pa.Table.from_batches(batches)


def read_confluent(bootstrap: str, topic: str, ends: dict[int, int]) -> Any:
    import confluent_kafka as ck
    import pyarrow as pa

    consumer = ck.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"bench-{time.monotonic_ns()}",
            "enable.auto.commit": False,
            "fetch.max.bytes": 64 << 20,
            "max.partition.fetch.bytes": 8 << 20,
        }
    )
    consumer.assign([ck.TopicPartition(topic, p, 0) for p in ends])
    keys, values, parts, offsets, stamps = [], [], [], [], []
    left = {p: e for p, e in ends.items() if e > 0}
    deadline = time.monotonic() + 600
    while left and time.monotonic() < deadline:
        for m in consumer.consume(10000, 1.0):
            if m.error():
                continue
            p, o = m.partition(), m.offset()
            if p in left and o < left[p]:
                keys.append(m.key())
                values.append(m.value())
                parts.append(p)
                offsets.append(o)
                stamps.append(m.timestamp()[1])
                if o + 1 >= left[p]:
                    del left[p]
    consumer.close()
    assert not left, f"confluent-kafka did not reach the end of {sorted(left)}"
    return pa.table(
        {
            "key": pa.array(keys, pa.binary()),
            "value": pa.array(values, pa.binary()),
            "partition": pa.array(parts, pa.int32()),
            "offset": pa.array(offsets, pa.int64()),
            "timestamp": pa.array(stamps, pa.int64()).cast(pa.timestamp("ms")),
        }
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=int, default=256, help="MiB of values to produce")
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="kwire-bench-client-") as tmp:
        proc, bootstrap = start_broker(os.path.join(tmp, "data"))
        try:
            count = produce(bootstrap, "bench", args.mb, args.partitions)
            from kwire.client import LATEST, KafkaClient

            with KafkaClient({"bootstrap.servers": bootstrap}) as client:
                client.metadata(["bench"])
                ends = {
                    p: o
                    for (_, p), o in client.list_offsets(
                        [("bench", p) for p in range(args.partitions)], LATEST
                    ).items()
                }
            assert sum(ends.values()) == count
            times: dict[str, list[float]] = {"kwire.client": [], "confluent-kafka": []}
            first: dict[str, float] = {}
            for round_ in range(args.rounds + 1):  # round 0 warms up (numba's compile, caches)
                for name, fn in (("kwire.client", read_kwire), ("confluent-kafka", read_confluent)):
                    t0 = time.perf_counter()
                    table = fn(bootstrap, "bench", ends)
                    elapsed = time.perf_counter() - t0
                    assert table.num_rows == count, (name, table.num_rows, count)
                    if round_ == 0:
                        first[name] = elapsed
                    else:
                        times[name].append(elapsed)
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(30)
    mb = count * VALUE / (1 << 20)
    result = {
        name: {"median_s": statistics.median(t), "MiB_per_s": mb / statistics.median(t)}
        for name, t in times.items()
    }
    ratio = result["kwire.client"]["MiB_per_s"] / result["confluent-kafka"]["MiB_per_s"]
    if args.json:
        print(
            json.dumps({"records": count, "MiB": mb, "results": result, "ratio": ratio}, indent=2)
        )
        return
    print(
        f"{count:,} records, {mb:.0f} MiB of values, {args.partitions} partitions, lz4, "
        f"{args.rounds} rounds (medians)"
    )
    print(f"{'reader':<18}{'seconds':>10}{'MiB/s':>10}")
    for name, r in result.items():
        print(f"{name:<18}{r['median_s']:>10.2f}{r['MiB_per_s']:>10.1f}")
    print(f"kwire.client / confluent-kafka: {ratio:.2f}x")
    print("first (warm-up) round, s: " + ", ".join(f"{k} {v:.2f}" for k, v in first.items()))


if __name__ == "__main__":
    main()
