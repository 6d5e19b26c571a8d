"""Start-up costs of ``kwire broker``: spawn to the first Metadata answer, idle RSS, the first
CreateTopics + 1 KiB produce (confluent-kafka) and the RSS after it; median of ``--rounds``.

    .venv/bin/python bench/bench_broker_startup.py [--rounds 5]

Every broker listens on 127.0.0.1 on a free port and is stopped by its process id.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_broker as bb  # the shared helpers of the broker benchmark


def measure(rounds: int) -> dict[str, list[float]]:
    from confluent_kafka import Producer

    results: dict[str, list[float]] = {
        "spawn_ms": [],
        "idle_mb": [],
        "first_ms": [],
        "after_mb": [],
    }
    for _ in range(rounds):
        data_dir = tempfile.mkdtemp(prefix="kwire-startup-")
        port = bb.free_port()
        started = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-m", "kwire", "broker", "--data-dir", data_dir, "--port", str(port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            bb.wait_metadata(port, proc)
            results["spawn_ms"].append((time.perf_counter() - started) * 1000)
            time.sleep(0.5)
            results["idle_mb"].append(bb.rss_mb(proc.pid))
            first = time.perf_counter()
            bootstrap = f"127.0.0.1:{port}"
            bb.create_topic(bootstrap, "startup", 1)
            producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
            producer.produce("startup", b"v" * 1024)
            if producer.flush(30) != 0:
                raise RuntimeError("the first produce was not acknowledged")
            results["first_ms"].append((time.perf_counter() - first) * 1000)
            results["after_mb"].append(bb.rss_mb(proc.pid))
        finally:
            proc.terminate()
            proc.wait(30)
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    for name, values in measure(args.rounds).items():
        print(
            f"{name:10} median {statistics.median(values):8.1f}   {[round(v, 1) for v in values]}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
