"""Share-group benchmark: records delivered and acknowledged per second by confluent-kafka
``ShareConsumer``s (KIP-932) against ``kwire broker``, beside a classic consumer group.

``kwire broker`` runs as a subprocess on 127.0.0.1 (a free port, a temporary data dir); a
3-partition topic gets ``--records`` records of ``--size`` bytes. Then, one run each:

* share group with 1, 2 and 4 ``ShareConsumer``s (implicit acknowledgement, each in its own
  thread, the group set to ``share.auto.offset.reset=earliest`` with IncrementalAlterConfigs): the
  time from the first poll until every record was delivered, and until the last acknowledgement
  was committed (``commit_sync``); records/s over the latter;
* classic consumer group with 1, 2 and 4 ``Consumer``s (``auto.offset.reset=earliest``,
  ``group.initial.rebalance.delay.ms=0``, commit at the end): the same measure.

Each record is counted once per group; a record delivered twice would make the count exceed
``--records`` (reported as ``duplicates``).

    .venv/bin/python bench/bench_share.py [--records N] [--size B] [--json]
"""

from __future__ import annotations

import argparse
import json
import platform
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

LISTENING = re.compile(r"kwire broker listening on (\S+):(\d+)")
PARTITIONS = 3
TOPIC = "bench-share"
DEADLINE_S = 300.0


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class KwireBroker:
    """``python -m kwire broker`` on a temporary data dir; stopped with SIGTERM (then SIGKILL)."""

    def __init__(self) -> None:
        self.tmp = tempfile.TemporaryDirectory(prefix="kwire-bench-share-")
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
            "group.initial.rebalance.delay.ms=0",
            "--config",
            f"num.partitions={PARTITIONS}",  # the topic is auto-created by the producer
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


def produce(bootstrap: str, records: int, size: int) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    value = b"x" * size
    for i in range(records):
        while True:
            try:
                producer.produce(TOPIC, value=value, partition=i % PARTITIONS)
                break
            except BufferError:
                producer.poll(0.05)
    if producer.flush(60) != 0:
        raise RuntimeError("could not produce the benchmark records")


def earliest(bootstrap: str, group: str) -> None:
    from confluent_kafka.admin import (
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        ResourceType,
    )

    entry = ConfigEntry(
        "share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET
    )
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.incremental_alter_configs(
        [ConfigResource(ResourceType.GROUP, group, incremental_configs=[entry])]
    ).values():
        future.result(10)


def run_group(bootstrap: str, kind: str, members: int, records: int) -> dict[str, Any]:
    """``members`` consumers of a new group read the topic; seconds to deliver and to commit."""
    from confluent_kafka import Consumer, KafkaError, KafkaException, ShareConsumer

    group = f"{kind}-{members}"
    if kind == "share":
        earliest(bootstrap, group)
    counted = 0
    lock = threading.Lock()
    done = threading.Event()
    delivered_at: list[float] = []
    committed_at: list[float] = []

    def member() -> None:
        nonlocal counted
        if kind == "share":
            consumer: Any = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group})
        else:
            consumer = Consumer(
                {
                    "bootstrap.servers": bootstrap,
                    "group.id": group,
                    "auto.offset.reset": "earliest",
                    "enable.auto.commit": False,
                }
            )
        consumer.subscribe([TOPIC])
        deadline = time.monotonic() + DEADLINE_S
        try:
            while not done.is_set() and time.monotonic() < deadline:
                if kind == "share":
                    got = [m for m in consumer.poll(0.2) if m.error() is None]
                else:
                    got = [m for m in consumer.consume(500, 0.2) if m.error() is None]
                with lock:
                    counted += len(got)
                    if counted >= records and not done.is_set():
                        delivered_at.append(time.perf_counter())
                        done.set()
            if kind == "share":
                consumer.commit_sync(30)
            else:
                try:
                    consumer.commit(asynchronous=False)
                except KafkaException as exc:  # a member that consumed nothing has no offsets
                    if exc.args[0].code() != KafkaError._NO_OFFSET:
                        raise
            with lock:
                committed_at.append(time.perf_counter())
        finally:
            consumer.close()

    start = time.perf_counter()
    threads = [threading.Thread(target=member) for _ in range(members)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(DEADLINE_S + 60)
    if not delivered_at:
        raise RuntimeError(f"{group}: only {counted} of {records} records within {DEADLINE_S} s")
    deliver_s = delivered_at[0] - start
    commit_s = max(committed_at) - start
    return {
        "group": kind,
        "members": members,
        "deliver_s": round(deliver_s, 3),
        "deliver_and_commit_s": round(commit_s, 3),
        "records_per_s": round(records / commit_s),
        "duplicates": counted - records,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=300000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    import confluent_kafka

    broker = KwireBroker()
    try:
        produce(broker.bootstrap, args.records, args.size)
        rows = [
            run_group(broker.bootstrap, kind, members, args.records)
            for members in (1, 2, 4)
            for kind in ("share", "classic")
        ]
    finally:
        broker.stop()
    facts = {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "librdkafka": confluent_kafka.libversion()[0],
        "records": args.records,
        "size": args.size,
    }
    if args.json:
        print(json.dumps({"facts": facts, "rows": rows}))
        return 0
    print(facts)
    print(
        "| group | members | delivered (s) | delivered and committed (s) | records/s | duplicates |"
    )
    print("| --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(
            f"| {r['group']} | {r['members']} | {r['deliver_s']} | {r['deliver_and_commit_s']} "
            f"| {r['records_per_s']} | {r['duplicates']} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
