"""Slow and expensive clients against ``kwire broker`` (issue 21, items 4-6).

One ``kwire broker`` subprocess on 127.0.0.1 (a free port, a temporary data directory); every
attack is measured beside the same numbers without it, in the same run:

* codecs and the GIL (``gil_holds``): whether each codec's decompression of 63 MiB of zeros
  (kwire's codec table), and the validation of a bomb, keeps the GIL (how late another thread's
  20 ms sleep wakes with the switch interval at 1 s);
* slow readers: a 64 MiB topic (v2 batches of 1 MiB, uncompressed); 8 connections each send a
  Fetch (v9, then v12) for 100 MB from offset 0 with a 4 KiB receive buffer and never read. The
  broker's RSS (VmRSS, sampled every 50 ms for 8 s) is reported beside its idle RSS, and a
  well-behaved client's produce round trip (acks=1, one 100-byte record) beside its value alone;
* compression bombs: two connections loop a Produce of one gzip batch of 60 MiB of zeros (~60 KB
  on the wire); the well-behaved client's produce round trips, p50/p99, beside the same without.

``--src DIR`` runs the broker from another ``src`` tree (a ``git archive`` of an older commit) to
compare before and after; the client side is always this tree's ``kwire.protocol``.

    .venv/bin/python bench/bench_slow_clients.py [--src DIR] [--json]
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import socket
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_broker import HOST, KwireServer, rss_mb

from kwire.protocol import ClientConnection, message_class, struct_class
from kwire.records import Compression, build_batch

NOW = 1_700_000_000_000
MIB = 1 << 20


# --- a raw client -------------------------------------------------------------------------------


class Raw:
    """One blocking connection speaking kwire.protocol."""

    def __init__(self, port: int, rcvbuf: int | None = None) -> None:
        self.sock = socket.socket()
        if rcvbuf is not None:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.sock.settimeout(60)
        self.sock.connect((HOST, port))
        self.conn = ClientConnection("bench-slow-clients")

    def send(self, message: Any, version: int) -> None:
        self.sock.sendall(self.conn.send(message, version))

    def receive(self) -> Any:
        while True:
            response = self.conn.next_response()
            if response is not None:
                return response.message
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise ConnectionError("closed by the broker")
            self.conn.receive_data(chunk)

    def call(self, message: Any, version: int) -> Any:
        self.send(message, version)
        return self.receive()

    def close(self) -> None:
        self.sock.close()


def produce_request(topic: str, records: bytes, acks: int = 1) -> Any:
    cls = message_class("ProduceRequest")
    return cls(
        acks=acks,
        timeout_ms=30000,
        topic_data=[
            struct_class(cls, "topic_data")(
                name=topic,
                partition_data=[
                    struct_class(cls, "topic_data", "partition_data")(index=0, records=records)
                ],
            )
        ],
    )


def fetch_request(topic: str, topic_id: Any, max_bytes: int) -> Any:
    cls = message_class("FetchRequest")
    return cls(
        replica_id=-1,
        max_wait_ms=0,
        min_bytes=1,
        max_bytes=max_bytes,
        isolation_level=0,
        session_id=0,
        session_epoch=-1,
        topics=[
            struct_class(cls, "topics")(
                topic=topic,
                topic_id=topic_id,
                partitions=[
                    struct_class(cls, "topics", "partitions")(
                        partition=0, fetch_offset=0, partition_max_bytes=max_bytes
                    )
                ],
            )
        ],
    )


def create_topic(client: Raw, name: str) -> Any:
    cls = message_class("CreateTopicsRequest")
    topic = struct_class(cls, "topics")(name=name, num_partitions=1, replication_factor=1)
    client.call(cls(topics=[topic], timeout_ms=30000), 5)
    meta = client.call(
        message_class("MetadataRequest")(
            topics=[struct_class(message_class("MetadataRequest"), "topics")(name=name)]
        ),
        12,
    )
    return meta.topics[0].topic_id


# --- measurements -------------------------------------------------------------------------------


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def produce_latencies(port: int, count: int, stop: threading.Event | None = None) -> list[float]:
    """Round trips (ms) of ``count`` sequential one-record produces, acks=1, on one connection."""
    client = Raw(port)
    out: list[float] = []
    try:
        for i in range(count):
            frame = produce_request("small", build_batch([(None, NOW, None, b"%0100d" % i)]))
            t0 = time.perf_counter()
            response = client.call(frame, 9)
            out.append((time.perf_counter() - t0) * 1000)
            assert response.responses[0].partition_responses[0].error_code == 0
            if stop is not None and stop.is_set():
                break
    finally:
        client.close()
    return out


def gil_holds() -> dict[str, float]:
    """Whether each codec keeps the GIL while it decompresses 63 MiB of zeros, and the whole
    validation of a bomb. With the switch interval at 1 s, a thread that keeps the GIL keeps it
    for a second; the main thread sleeps 20 ms while another thread loops over the job and
    reports how late it wakes (median of 5): ~1000 ms, the job holds the GIL; a few ms, it lets
    go of it (CPU contention aside). A pure Python loop is the reference for "holds"."""
    from kwire.records import validate_and_assign
    from kwire.records._codecs import compress as codec_compress
    from kwire.records._codecs import decompress

    payload = bytes(63 * MIB)

    def python_loop() -> None:
        total = 0
        for i in range(2_000_000):
            total += i

    jobs: dict[str, Any] = {"reference: a Python loop": python_loop}
    for codec in (Compression.GZIP, Compression.SNAPPY, Compression.LZ4, Compression.ZSTD):
        data = codec_compress(codec, payload)
        name = f"{codec.name.lower()} decompression ({len(data) // 1024} KiB -> 63 MiB)"
        jobs[name] = functools.partial(decompress, codec, data)
    big = build_batch([(None, NOW, None, bytes(MIB))] * 60, 2, Compression.GZIP)
    jobs["validation of the bench's bomb (gzip, 60 x 1 MiB records)"] = functools.partial(
        validate_and_assign, big, next_offset=0, now_ms=NOW
    )
    small = build_batch([(None, NOW, None, bytes(100))] * 100_000, 2, Compression.GZIP)
    jobs["validation of gzip, 100,000 x 100-byte records"] = functools.partial(
        validate_and_assign, small, next_offset=0, now_ms=NOW, compiled=False
    )
    interval = sys.getswitchinterval()
    out: dict[str, float] = {}
    for name, job in jobs.items():
        late: list[float] = []
        for _ in range(5):
            done = threading.Event()

            def work(job: Any = job, done: threading.Event = done) -> None:
                while not done.is_set():
                    job()

            sys.setswitchinterval(1.0)
            try:
                worker = threading.Thread(target=work)
                worker.start()
                time.sleep(0.005)
                t0 = time.perf_counter()
                time.sleep(0.02)
                late.append((time.perf_counter() - t0 - 0.02) * 1000)
                done.set()
            finally:
                sys.setswitchinterval(interval)
            worker.join()
        out[name] = statistics.median(late)
    return out


def slow_readers(port: int, pid: int) -> dict[str, Any]:
    admin = Raw(port)
    topic_id = create_topic(admin, "big")
    create_topic(admin, "small")
    value = b"x" * 1024
    batch = build_batch([(None, NOW, None, value)] * 1000)
    for _ in range(64):
        admin.call(produce_request("big", batch), 9)
    admin.close()
    time.sleep(1.0)
    result: dict[str, Any] = {"idle_rss_mb": rss_mb(pid)}
    result["produce_alone_ms"] = produce_latencies(port, 300)
    for version in (9, 12):
        readers = [Raw(port, rcvbuf=4096) for _ in range(8)]
        for r in readers:
            r.send(fetch_request("big", topic_id, 100_000_000), version)
        stop = threading.Event()
        samples: list[float] = []

        def sample(stop: threading.Event = stop, samples: list[float] = samples) -> None:
            end = time.monotonic() + 8.0
            while time.monotonic() < end:
                samples.append(rss_mb(pid))
                time.sleep(0.05)
            stop.set()

        sampler = threading.Thread(target=sample)
        sampler.start()
        latencies = produce_latencies(port, 100_000, stop)
        sampler.join()
        result[f"v{version}_peak_rss_mb"] = max(samples)
        result[f"v{version}_produce_ms"] = latencies
        for r in readers:
            r.close()
        time.sleep(1.0)
    return result


def bombs(port: int) -> dict[str, Any]:
    bomb = build_batch([(None, NOW, None, bytes(MIB))] * 60, 2, Compression.GZIP)
    frame = produce_request("bombed", bomb)
    admin = Raw(port)
    create_topic(admin, "bombed")
    create_topic(admin, "small")  # (already there after slow_readers)
    admin.close()
    result: dict[str, Any] = {"bomb_bytes": len(bomb)}
    result["produce_alone_ms"] = produce_latencies(port, 500)
    stop = threading.Event()
    counts: list[int] = []

    def attack() -> None:
        client, n = Raw(port), 0
        try:
            while not stop.is_set():
                response = client.call(frame, 9)
                assert response.responses[0].partition_responses[0].error_code == 0
                n += 1
        finally:
            counts.append(n)
            client.close()

    attackers = [threading.Thread(target=attack) for _ in range(2)]
    for a in attackers:
        a.start()
    time.sleep(0.5)
    t0 = time.perf_counter()
    result["produce_under_bombs_ms"] = produce_latencies(port, 500)
    elapsed = time.perf_counter() - t0
    stop.set()
    for a in attackers:
        a.join()
    result["bombs_per_s"] = sum(counts) / (elapsed + 0.5)
    return result


def summary(ms: list[float]) -> str:
    return f"p50 {statistics.median(ms):.2f} ms, p99 {percentile(ms, 0.99):.2f} ms (n={len(ms)})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--src", help="run the broker from this src tree (default: this one)")
    parser.add_argument("--json", action="store_true", help="print the raw results as JSON")
    args = parser.parse_args()
    src = Path(args.src).resolve() if args.src else Path(__file__).resolve().parents[1] / "src"
    KwireServer.env = {"PYTHONPATH": str(src)}
    print(f"python {platform.python_version()}, broker src {src}, load {os.getloadavg()[0]:.1f}")
    results: dict[str, Any] = {"gil_late_ms": gil_holds()}
    for name, late in results["gil_late_ms"].items():
        print(f"  {name}: a 20 ms sleep on another thread wakes {late:.1f} ms late")
    with KwireServer() as server:
        results["slow_readers"] = slow_readers(server.port, server.pid)
        results["bombs"] = bombs(server.port)
    slow, bomb = results["slow_readers"], results["bombs"]
    print(f"idle RSS {slow['idle_rss_mb']:.1f} MB")
    for version in (9, 12):
        peak = slow[f"v{version}_peak_rss_mb"]
        print(
            f"8 slow readers of Fetch v{version}: peak RSS {peak:.1f} MB "
            f"(+{peak - slow['idle_rss_mb']:.1f} MB); another client's produce "
            f"{summary(slow[f'v{version}_produce_ms'])}"
        )
    print(f"produce without slow readers: {summary(slow['produce_alone_ms'])}")
    print(f"bomb: {bomb['bomb_bytes']} bytes of gzip, 60 MiB inside")
    print(f"produce without bombs: {summary(bomb['produce_alone_ms'])}")
    print(
        f"produce under 2 bomb connections: {summary(bomb['produce_under_bombs_ms'])}; "
        f"{bomb['bombs_per_s']:.1f} bombs/s validated"
    )
    print(f"load at the end {os.getloadavg()[0]:.1f}")
    if args.json:
        print(json.dumps(results))


if __name__ == "__main__":
    main()
