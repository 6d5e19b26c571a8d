"""KIP-848's consumer group protocol (``group.protocol=consumer``) with real clients against
kwire's broker: librdkafka (confluent-kafka) and Kafka's Java consumer. Every broker runs on a
free port and is stopped in a ``finally``; every loop is bounded in count and time.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from kwire.broker import Broker

pytestmark = pytest.mark.interop

NO_DELAY = {"group.initial.rebalance.delay.ms": "0"}
DEADLINE_S = 60.0


def produce(bootstrap: str, topic: str, partitions: int, count: int, start: int) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    for i in range(start, start + count):
        producer.produce(topic, value=f"v{i}".encode(), partition=i % partitions)
    assert producer.flush(30) == 0


def consumer(bootstrap: str, name: str) -> Any:
    from confluent_kafka import Consumer

    return Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "g848",
            "group.protocol": "consumer",
            "client.id": name,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )


def group_state(broker: Broker, group_id: str) -> tuple[str, int, dict[str, int]] | None:
    """(state, group epoch, member id -> member epoch) as the coordinator has it."""

    def read(state: Any) -> tuple[str, int, dict[str, int]] | None:
        from kwire.broker.group import group_coordinator

        group = group_coordinator(state).consumer.group(group_id)
        if group is None:
            return None
        return (
            group.state,
            group.group_epoch,
            {m: x.member_epoch for m, x in group.members.items()},
        )

    return broker.call(read)


def test_confluent_two_consumers_share_commit_and_resume(tmp_path: Path) -> None:
    from confluent_kafka import TopicPartition

    data_dir = tmp_path / "data"
    broker = Broker(data_dir, config=NO_DELAY).start()
    try:
        broker.create_topic("t", 4)
        produce(broker.bootstrap, "t", 4, 40, 0)
        a, b = consumer(broker.bootstrap, "a"), consumer(broker.bootstrap, "b")
        a.subscribe(["t"])
        b.subscribe(["t"])
        seen: set[bytes] = set()
        shared = False
        deadline = time.monotonic() + DEADLINE_S
        for _ in range(3000):
            if time.monotonic() > deadline:
                break
            for c in (a, b):
                msg = c.poll(0.05)
                if msg is not None and msg.error() is None:
                    seen.add(msg.value())
            pa = {p.partition for p in a.assignment()}
            pb = {p.partition for p in b.assignment()}
            shared = len(pa) == 2 and len(pb) == 2 and pa | pb == {0, 1, 2, 3}
            if shared and len(seen) == 40:
                break
        assert shared, (a.assignment(), b.assignment(), group_state(broker, "g848"))
        assert len(seen) == 40
        found = group_state(broker, "g848")
        assert found is not None and found[0] == "Stable" and len(found[2]) == 2
        # Commit each member's own partitions explicitly: which member read which records depends
        # on when the second one joined (the first may have read everything before), so a plain
        # commit() of stored positions can find none ("No offset stored").
        for c in (a, b):
            mine = [TopicPartition("t", p.partition, 10) for p in c.assignment()]
            c.commit(offsets=mine, asynchronous=False)
        committed = a.committed([TopicPartition("t", p) for p in range(4)], timeout=10)
        assert sorted(tp.offset for tp in committed) == [10, 10, 10, 10]
        a.close()
        b.close()
        # both left with epoch -1: the group is empty and keeps its offsets
        found = group_state(broker, "g848")
        assert found is not None and found[0] == "Empty"
    finally:
        broker.stop()

    broker = Broker(data_dir, config=NO_DELAY).start()
    try:
        found = group_state(broker, "g848")
        assert found is not None and found[0] == "Empty"  # replayed from __consumer_offsets
        produce(broker.bootstrap, "t", 4, 20, 40)
        c = consumer(broker.bootstrap, "c")
        c.subscribe(["t"])
        resumed: list[bytes] = []
        deadline = time.monotonic() + DEADLINE_S
        for _ in range(3000):
            if time.monotonic() > deadline or len(resumed) >= 20:
                break
            msg = c.poll(0.05)
            if msg is not None and msg.error() is None:
                resumed.append(msg.value())
        for _ in range(10):  # nothing older than the committed offsets comes back
            msg = c.poll(0.05)
            if msg is not None and msg.error() is None:
                resumed.append(msg.value())
        assert sorted(resumed) == sorted(f"v{i}".encode() for i in range(40, 60))
        assert {p.partition for p in c.assignment()} == {0, 1, 2, 3}
        c.close()
    finally:
        broker.stop()


def java_consumer(*args: str, timeout: float = 120.0) -> dict[str, Any]:
    """Runs tools/java/ConsumerProtocolProgram.java; returns its JSON answer."""
    from kafka_jars import compile_java, java_command  # tools/ is on pytest's pythonpath

    missing = [tool for tool in ("java", "javac") if shutil.which(tool) is None]
    if missing:
        pytest.fail(f"the Java interop tests need a JDK ({', '.join(missing)} missing)")
    classes = compile_java("ConsumerProtocolProgram")
    proc = subprocess.run(
        [*java_command("ConsumerProtocolProgram", classes), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    lines = proc.stdout.strip().splitlines()
    assert proc.returncode == 0 and lines, (
        f"ConsumerProtocolProgram exited {proc.returncode}\nstdout: {proc.stdout[-2000:]}\n"
        f"stderr: {proc.stderr[-4000:]}"
    )
    reply: dict[str, Any] = json.loads(lines[-1])
    assert reply.get("error") is None, f"ConsumerProtocolProgram: {reply['error']}"
    return reply


def test_java_consumer_with_the_consumer_protocol(tmp_path: Path) -> None:
    broker = Broker(tmp_path / "data", config=NO_DELAY).start()
    try:
        broker.create_topic("jt", 3)
        produce(broker.bootstrap, "jt", 3, 30, 0)
        first = java_consumer(broker.bootstrap, "jt", "jg", "30", "60000")
        assert first["count"] == 30
        assert sorted(first["assignment"]) == [0, 1, 2]
        assert first["committed"] == {"0": 10, "1": 10, "2": 10}
        found = group_state(broker, "jg")
        assert found is not None and found[0] == "Empty"  # the consumer left on close
        produce(broker.bootstrap, "jt", 3, 9, 30)
        second = java_consumer(broker.bootstrap, "jt", "jg", "9", "60000")
        assert second["count"] == 9  # resumed from the committed offsets
        assert sorted(second["values"]) == sorted(f"v{i}" for i in range(30, 39))
    finally:
        broker.stop()
