"""A consumer-group test in the pytest fixture's broker: subscribe to the first assignment.

Issue 17's target: a consumer-group test's first assignment within 1.5 s in the fixture. In one
process, rounds interleaved: an in-process ``Broker`` with the fixture's settings
(``kwire.broker.pytest_plugin.TEST_CONFIG``: ``group.initial.rebalance.delay.ms=0``, one partition
for the internal topics) and one with Kafka's production defaults (what ``kwire broker`` keeps),
each on a fresh data directory; a confluent-kafka consumer (librdkafka, the classic protocol and
the KIP-848 ``consumer`` protocol) subscribes to a 3-partition topic and the time from
``subscribe()`` to its first ``on_assign`` callback is recorded. Medians of the rounds.

    .venv/bin/python bench/bench_fixture_group.py --rounds 5
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer

from kwire.broker import Broker
from kwire.broker.pytest_plugin import TEST_CONFIG


def first_assignment_ms(config: dict[str, str], protocol: str, timeout_s: float = 30.0) -> float:
    """Start a broker with ``config``; subscribe a consumer; ms from subscribe to assignment."""
    with tempfile.TemporaryDirectory() as tmp, Broker(Path(tmp) / "data", config=config) as b:
        b.create_topic("t", 3)
        settings: dict[str, Any] = {
            "bootstrap.servers": f"127.0.0.1:{b.port}",
            "group.id": "g",
            "auto.offset.reset": "earliest",
            "group.protocol": protocol,
        }
        if protocol == "classic":
            settings["session.timeout.ms"] = 6000
        consumer = Consumer(settings)
        assigned: list[float] = []
        try:
            start = time.perf_counter()
            consumer.subscribe(["t"], on_assign=lambda c, p: assigned.append(time.perf_counter()))
            deadline = start + timeout_s
            while not assigned and time.perf_counter() < deadline:
                consumer.poll(0.01)
            if not assigned:
                raise TimeoutError(f"no assignment within {timeout_s} s")
            return (assigned[0] - start) * 1e3
        finally:
            consumer.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    cases = {
        "fixture settings": dict(TEST_CONFIG),
        "production defaults": {},
    }
    results: dict[tuple[str, str], list[float]] = {}
    for _ in range(args.rounds):
        for protocol in ("classic", "consumer"):
            for name, config in cases.items():
                results.setdefault((name, protocol), []).append(
                    first_assignment_ms(config, protocol)
                )
    print(
        "| broker settings | group.protocol | subscribe to first assignment (ms, median) | min-max |"
    )
    print("| --- | --- | ---: | --- |")
    for (name, protocol), values in results.items():
        print(
            f"| {name} | {protocol} | {statistics.median(values):.0f} | "
            f"{min(values):.0f}-{max(values):.0f} |"
        )


if __name__ == "__main__":
    main()
