"""Consumer groups against kwire's group coordinator with real clients: librdkafka
(confluent-kafka) with ``subscribe()``, kafka-python's ``KafkaConsumer`` and aiokafka's
``AIOKafkaConsumer`` with a ``group_id``. Every loop is bounded in count and time.
"""

from __future__ import annotations

import asyncio
import time
import warnings
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.interop

NO_DELAY = {"group.initial.rebalance.delay.ms": "0"}
DEADLINE_S = 60.0


def produce_confluent(bootstrap: str, topic: str, partitions: int, count: int, start: int) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    for i in range(start, start + count):
        producer.produce(topic, value=f"v{i}".encode(), partition=i % partitions)
    assert producer.flush(30) == 0


def test_confluent_group_shares_partitions_and_resumes_after_restart(
    start_broker: Any, tmp_path: Path
) -> None:
    from confluent_kafka import Consumer, TopicPartition

    data_dir = tmp_path / "data"
    broker = start_broker(data_dir=data_dir, config=NO_DELAY)
    broker.create_topic("t", 4)
    produce_confluent(broker.bootstrap, "t", 4, 40, 0)

    def consumer(name: str) -> Any:
        return Consumer(
            {
                "bootstrap.servers": broker.bootstrap,
                "group.id": "g",
                "client.id": name,
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
                "session.timeout.ms": 10000,
                "heartbeat.interval.ms": 500,
            }
        )

    a, b = consumer("a"), consumer("b")
    a.subscribe(["t"])
    b.subscribe(["t"])
    seen: dict[str, list[bytes]] = {"a": [], "b": []}
    deadline = time.monotonic() + DEADLINE_S
    shared = False
    for _ in range(2000):
        if time.monotonic() > deadline:
            break
        for name, c in (("a", a), ("b", b)):
            msg = c.poll(0.1)
            if msg is not None and msg.error() is None:
                seen[name].append(msg.value())
        pa = {p.partition for p in a.assignment()}
        pb = {p.partition for p in b.assignment()}
        shared = len(pa) == 2 and len(pb) == 2 and pa | pb == {0, 1, 2, 3}
        if shared and len(set(seen["a"]) | set(seen["b"])) == 40:
            break
    assert shared, (a.assignment(), b.assignment())
    assert len(set(seen["a"]) | set(seen["b"])) == 40
    a.commit(asynchronous=False)
    b.commit(asynchronous=False)
    committed = a.committed([TopicPartition("t", p) for p in range(4)], timeout=10)
    assert sorted(tp.offset for tp in committed) == [10, 10, 10, 10]
    a.close()
    b.close()

    broker.stop()
    again = start_broker(data_dir=data_dir, config=NO_DELAY)
    produce_confluent(again.bootstrap, "t", 4, 8, 40)
    c = Consumer(
        {
            "bootstrap.servers": again.bootstrap,
            "group.id": "g",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    c.subscribe(["t"])
    got: list[bytes] = []
    deadline = time.monotonic() + DEADLINE_S
    for _ in range(1000):
        if time.monotonic() > deadline or len(got) >= 8:
            break
        msg = c.poll(0.2)
        if msg is not None and msg.error() is None:
            got.append(msg.value())
    # and nothing more arrives: the committed offsets were where the group resumed
    for _ in range(5):
        msg = c.poll(0.2)
        if msg is not None and msg.error() is None:
            got.append(msg.value())
    c.close()
    assert sorted(got) == sorted(f"v{i}".encode() for i in range(40, 48))


def test_kafka_python_group_commits_and_resumes(start_broker: Any) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from kafka import KafkaConsumer, KafkaProducer

    broker = start_broker(config=NO_DELAY)
    broker.create_topic("kp", 2)
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap)
    for i in range(10):
        producer.send("kp", f"m{i}".encode(), partition=i % 2)
    producer.flush(30)
    producer.close()

    def consume(expected: int) -> list[bytes]:
        consumer = KafkaConsumer(
            "kp",
            bootstrap_servers=broker.bootstrap,
            group_id="kpg",
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            consumer_timeout_ms=3000,
        )
        out: list[bytes] = []
        deadline = time.monotonic() + DEADLINE_S
        while len(out) < expected and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=500).values():
                out.extend(r.value for r in records)
        consumer.commit()
        consumer.close()
        return out

    assert sorted(consume(10)) == sorted(f"m{i}".encode() for i in range(10))
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap)
    producer.send("kp", b"late", partition=0)
    producer.flush(30)
    producer.close()
    assert consume(1) == [b"late"]


def test_aiokafka_group_commits_and_resumes(start_broker: Any) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

    broker = start_broker(config=NO_DELAY)
    broker.create_topic("ak", 2)

    async def produce(values: list[bytes]) -> None:
        producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap)
        await producer.start()
        try:
            for i, v in enumerate(values):
                await producer.send_and_wait("ak", v, partition=i % 2)
        finally:
            await producer.stop()

    async def consume(expected: int) -> list[bytes]:
        consumer = AIOKafkaConsumer(
            "ak",
            bootstrap_servers=broker.bootstrap,
            group_id="akg",
            auto_offset_reset="earliest",
            enable_auto_commit=False,
        )
        await consumer.start()
        out: list[bytes] = []
        try:
            deadline = time.monotonic() + DEADLINE_S
            while len(out) < expected and time.monotonic() < deadline:
                batches = await consumer.getmany(timeout_ms=500)
                for records in batches.values():
                    out.extend(r.value for r in records if r.value is not None)
            await consumer.commit()
        finally:
            await consumer.stop()
        return out

    async def scenario() -> None:
        await produce([f"a{i}".encode() for i in range(6)])
        assert sorted(await consume(6)) == sorted(f"a{i}".encode() for i in range(6))
        await produce([b"next"])
        assert await consume(1) == [b"next"]

    asyncio.run(asyncio.wait_for(scenario(), 120))


def test_confluent_static_leader_restart_does_not_rebalance(start_broker: Any) -> None:
    """KIP-345 (issue 21 item 9): the group leader, a static member, closes (librdkafka sends no
    LeaveGroup for a static member) and comes back with the same ``group.instance.id`` within
    ``session.timeout.ms``. Kafka keeps the group Stable at the same generation: the other
    member's partitions are never revoked and the leader gets its old partitions back."""
    from confluent_kafka import Consumer
    from confluent_kafka.admin import AdminClient

    broker = start_broker(config=NO_DELAY)
    broker.create_topic("t", 4)
    revoked: dict[str, list[list[int]]] = {"a": [], "b": []}

    def consumer(name: str) -> Any:
        c = Consumer(
            {
                "bootstrap.servers": broker.bootstrap,
                "group.id": "static",
                "group.instance.id": f"instance-{name}",
                "client.id": name,
                "session.timeout.ms": 10000,
                "heartbeat.interval.ms": 300,
                "partition.assignment.strategy": "range",
            }
        )

        def on_revoke(_: Any, partitions: list[Any]) -> None:
            if partitions:
                revoked[name].append(sorted(p.partition for p in partitions))

        c.subscribe(["t"], on_revoke=on_revoke)
        return c

    def poll_until(what: str, done: Any, *consumers: Any) -> None:
        deadline = time.monotonic() + DEADLINE_S
        for _ in range(3000):
            if done() or time.monotonic() > deadline:
                break
            for c in consumers:
                c.poll(0.05)
        assert done(), what

    def owned(c: Any) -> list[int]:
        return sorted(p.partition for p in c.assignment())

    open_consumers: list[Any] = []
    try:
        a = consumer("a")  # the first member: the leader of generation 1 and after
        open_consumers.append(a)
        poll_until("a owns every partition", lambda: owned(a) == [0, 1, 2, 3], a)
        b = consumer("b")
        open_consumers.append(b)
        poll_until("a and b share", lambda: len(owned(a)) == 2 and len(owned(b)) == 2, a, b)
        a_parts, b_parts = owned(a), owned(b)
        revoked["b"].clear()
        open_consumers.remove(a)
        a.close()
        a = consumer("a")
        open_consumers.append(a)
        poll_until("the leader is back", lambda: owned(a) == a_parts, a, b)
        for _ in range(40):  # two seconds more of b's heartbeats
            b.poll(0.05)
            a.poll(0.0)
        assert revoked["b"] == [] and owned(b) == b_parts
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        (described,) = admin.describe_consumer_groups(["static"]).values()
        group = described.result(timeout=30)
        assert str(group.state).endswith("STABLE") and len(group.members) == 2
        assert sorted(m.group_instance_id for m in group.members) == ["instance-a", "instance-b"]
    finally:
        for c in open_consumers:
            c.close()
