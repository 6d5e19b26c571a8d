"""Coordinator benchmark: kwire's group and transaction coordinators, with librdkafka, on loopback.

``kwire broker`` runs as a subprocess on 127.0.0.1 (a free port, a temporary data dir); the clients
are confluent-kafka (librdkafka) in this process. Measured:

* rebalance: three consumers subscribe to a six-partition topic at once; the time from the first
  ``subscribe()`` until all three own their two partitions (target: within one
  ``group.initial.rebalance.delay.ms`` plus one ``heartbeat.interval.ms``; note that Kafka's
  ``InitialDelayedJoin``, which kwire follows, waits one more delay when members joined during the
  first one, so Kafka's own bound for this case is two delays plus a heartbeat, also reported);
  then one closes and the time until the other two own all six (target: the same bound);
* offset commit round trip: ``Consumer.commit(offsets, asynchronous=False)`` of one partition,
  repeated (target: p50 < 2 ms);
* transaction commit: a transactional producer sends 100 records (flushed), then
  ``commit_transaction()``; its time (target: p50 < 10 ms), and the whole transaction's
  (``begin_transaction`` to the end of the commit).

    .venv/bin/python bench/bench_coordinators.py [--quick] [--rounds R] [--delay-ms D]
                                                 [--heartbeat-ms H] [--commits N] [--txns N] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

LISTENING = re.compile(r"kwire broker listening on (\S+):(\d+)")
PARTITIONS = 6


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class KwireBroker:
    """``python -m kwire broker`` on a temporary data dir; stopped with SIGTERM (then SIGKILL)."""

    def __init__(self, delay_ms: int) -> None:
        self.tmp = tempfile.TemporaryDirectory(prefix="kwire-bench-coord-")
        self.out = Path(self.tmp.name) / "broker.out"
        argv = [
            sys.executable,
            "-m",
            "kwire",
            "broker",
            "--data-dir",
            str(Path(self.tmp.name) / "data"),
            "--host",
            "127.0.0.1",
            "--port",
            str(free_port()),
            "--config",
            f"group.initial.rebalance.delay.ms={delay_ms}",
            "--config",
            f"num.partitions={PARTITIONS}",
        ]
        with open(self.out, "wb") as out:
            self.proc = subprocess.Popen(
                argv, stdout=out, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL
            )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            found = LISTENING.search(self.out.read_text(errors="replace"))
            if found:
                self.bootstrap = f"{found.group(1)}:{found.group(2)}"
                return
            if self.proc.poll() is not None:
                raise RuntimeError(f"kwire broker exited: {self.out.read_text()}")
            time.sleep(0.05)
        self.stop()
        raise RuntimeError("kwire broker did not listen within 30 s")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.tmp.cleanup()


def conf(bootstrap: str, **extra: Any) -> dict[str, Any]:
    return {"bootstrap.servers": bootstrap, "broker.address.family": "v4", **extra}


def prepare_topic(bootstrap: str, topic: str) -> None:
    from confluent_kafka import Producer

    producer = Producer(conf(bootstrap, **{"linger.ms": 0}))
    for p in range(PARTITIONS):
        producer.produce(topic, value=b"x", partition=p)
    if producer.flush(30) != 0:
        raise RuntimeError("could not create the benchmark topic")


def rebalance(bootstrap: str, group: str, topic: str, heartbeat_ms: int) -> dict[str, float]:
    """Seconds until 3 consumers own 2 partitions each, then until 2 own 3 each after a close."""
    from confluent_kafka import Consumer

    def consumer(name: str) -> Any:
        return Consumer(
            conf(
                bootstrap,
                **{
                    "group.id": group,
                    "client.id": name,
                    "enable.auto.commit": False,
                    "auto.offset.reset": "latest",
                    "session.timeout.ms": 10000,
                    "heartbeat.interval.ms": heartbeat_ms,
                },
            )
        )

    members = [consumer(f"c{i}") for i in range(3)]

    def owned(cs: list[Any]) -> list[int]:
        return [len(c.assignment()) for c in cs]

    def wait(cs: list[Any], want: list[int], what: str) -> float:
        start = time.perf_counter()
        deadline = time.monotonic() + 60
        while owned(cs) != want:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{what}: still {owned(cs)} after 60 s")
            for c in cs:
                c.poll(0.01)
        return time.perf_counter() - start

    start = time.perf_counter()
    for c in members:
        c.subscribe([topic])
    wait(members, [2, 2, 2], "3 members")
    formed = time.perf_counter() - start
    leaving = members.pop()
    leaving.close()
    after_leave = wait(members, [3, 3], "2 members after a close")
    for c in members:
        c.close()
    return {"join": formed, "leave": after_leave}


def commit_round_trips(bootstrap: str, topic: str, n: int) -> list[float]:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer(conf(bootstrap, **{"group.id": "bench-commit", "enable.auto.commit": False}))
    c.assign([TopicPartition(topic, 0)])
    out = []
    try:
        for i in range(n + 10):
            t0 = time.perf_counter()
            c.commit(offsets=[TopicPartition(topic, 0, i)], asynchronous=False)
            if i >= 10:  # the first commits find the coordinator
                out.append(time.perf_counter() - t0)
    finally:
        c.close()
    return out


def transactions(bootstrap: str, topic: str, n: int, records: int = 100) -> dict[str, list[float]]:
    from confluent_kafka import Producer

    p = Producer(conf(bootstrap, **{"transactional.id": "bench-txn", "linger.ms": 0}))
    p.init_transactions(30)
    commit: list[float] = []
    whole: list[float] = []
    value = b"v" * 100
    for i in range(n + 2):
        t0 = time.perf_counter()
        p.begin_transaction()
        for r in range(records):
            p.produce(topic, value=value, partition=r % PARTITIONS)
        if p.flush(30) != 0:
            raise RuntimeError("undelivered records")
        t1 = time.perf_counter()
        p.commit_transaction(30)
        t2 = time.perf_counter()
        if i >= 2:  # the first ones register partitions with a fresh coordinator
            commit.append(t2 - t1)
            whole.append(t2 - t0)
    return {"commit": commit, "whole": whole}


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def run(rounds: int, delay_ms: int, heartbeat_ms: int, commits: int, txns: int) -> dict[str, Any]:
    broker = KwireBroker(delay_ms)
    try:
        topic = "bench-coord"
        prepare_topic(broker.bootstrap, topic)
        joins, leaves = [], []
        for r in range(rounds):
            result = rebalance(broker.bootstrap, f"bench-group-{r}", topic, heartbeat_ms)
            joins.append(result["join"])
            leaves.append(result["leave"])
        rtts = commit_round_trips(broker.bootstrap, topic, commits)
        txn = transactions(broker.bootstrap, topic, txns)
    finally:
        broker.stop()
    bound = (delay_ms + heartbeat_ms) / 1000
    return {
        "delay_ms": delay_ms,
        "heartbeat_ms": heartbeat_ms,
        "rebalance_bound_s": bound,
        "join_s": joins,
        "leave_s": leaves,
        "commit_ms": {
            "n": len(rtts),
            "p50": 1000 * statistics.median(rtts),
            "p99": 1000 * pct(rtts, 0.99),
        },
        "txn_commit_ms": {
            "n": len(txn["commit"]),
            "p50": 1000 * statistics.median(txn["commit"]),
            "p99": 1000 * pct(txn["commit"], 0.99),
        },
        "txn_whole_ms": {
            "p50": 1000 * statistics.median(txn["whole"]),
            "p99": 1000 * pct(txn["whole"], 0.99),
        },
        "kafka_join_bound_s": (2 * delay_ms + heartbeat_ms) / 1000,
        "targets": {
            "rebalance_join": max(joins) <= bound,
            "rebalance_join_within_kafkas_bound": max(joins)
            <= (2 * delay_ms + heartbeat_ms) / 1000,
            "rebalance_leave": max(leaves) <= bound,
            "commit_p50_under_2ms": statistics.median(rtts) < 0.002,
            "txn_commit_p50_under_10ms": statistics.median(txn["commit"]) < 0.010,
        },
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="1 round, 100 commits, 20 transactions")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--delay-ms", type=int, default=3000, help="group.initial.rebalance.delay.ms")
    ap.add_argument("--heartbeat-ms", type=int, default=1000, help="heartbeat.interval.ms")
    ap.add_argument("--commits", type=int, default=1000)
    ap.add_argument("--txns", type=int, default=100)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    if args.quick:
        args.rounds, args.commits, args.txns = 1, 100, 20
    result = run(args.rounds, args.delay_ms, args.heartbeat_ms, args.commits, args.txns)
    result["machine"] = (
        f"{platform.machine()}, {os.cpu_count()} cpus, Python {sys.version.split()[0]}"
    )
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    bound = result["rebalance_bound_s"]
    print(f"kwire broker coordinators ({result['machine']})")
    print(
        f"rebalance, 3 consumers join   : {', '.join(f'{s:.2f}' for s in result['join_s'])} s "
        f"(bound {bound:.2f} s = delay {args.delay_ms} ms + heartbeat {args.heartbeat_ms} ms)"
    )
    print(f"rebalance, 1 of 3 closes      : {', '.join(f'{s:.2f}' for s in result['leave_s'])} s")
    c = result["commit_ms"]
    print(
        f"offset commit round trip      : p50 {c['p50']:.2f} ms, p99 {c['p99']:.2f} ms (n={c['n']})"
    )
    t = result["txn_commit_ms"]
    w = result["txn_whole_ms"]
    print(
        f"100-record transaction commit : p50 {t['p50']:.2f} ms, p99 {t['p99']:.2f} ms "
        f"(whole transaction p50 {w['p50']:.2f} ms, p99 {w['p99']:.2f} ms; n={t['n']})"
    )
    for name, met in result["targets"].items():
        print(f"target {name:27}: {'met' if met else 'NOT met'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
