"""KIP-932 share groups with confluent-kafka's ``ShareConsumer`` (librdkafka 2.16) against kwire's
broker. Every broker is in-process on a free port and stopped by the fixture; every poll loop is
bounded in count and time.

A new share partition starts at the high watermark (``share.auto.offset.reset=latest``), so each
test first polls until the broker has initialized every share partition, then produces.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

from kwire.broker import Broker, BrokerState

pytestmark = pytest.mark.interop

DEADLINE_S = 30.0


def share_consumer(broker: Broker, group: str, **extra: str) -> Any:
    from confluent_kafka import ShareConsumer

    return ShareConsumer({"bootstrap.servers": broker.bootstrap, "group.id": group, **extra})


def produce(broker: Broker, topic: str, partitions: int, count: int) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    for i in range(count):
        producer.produce(topic, value=f"v{i}".encode(), partition=i % partitions)
    assert producer.flush(30) == 0


def initialized(group: str) -> Callable[[BrokerState], int]:
    def count(state: BrokerState) -> int:
        coordinator = state.services.get("share")
        if coordinator is None:
            return 0
        return sum(p.initialized for (g, _, _), p in coordinator.partitions.items() if g == group)

    return count


def start_offsets(group: str) -> Callable[[BrokerState], list[int]]:
    def read(state: BrokerState) -> list[int]:
        coordinator = state.services["share"]
        return [
            p.start_offset
            for (g, _, _), p in sorted(coordinator.partitions.items(), key=lambda kv: kv[0][2])
            if g == group
        ]

    return read


def settled(group: str, members: int) -> Callable[[BrokerState], bool]:
    """Every member fetches from exactly the partitions assigned to it."""

    def check(state: BrokerState) -> bool:
        coordinator = state.services.get("share")
        found = None if coordinator is None else coordinator.groups.get(group)
        if found is None or len(found.members) != members:
            return False
        for member in found.members.values():
            session = coordinator.sessions.get((group, member.member_id))
            assigned = {(t, p) for t, parts in member.assignment.items() for p in parts}
            if session is None or set(session.partitions) != assigned:
                return False
        return True

    return check


def poll_until(broker: Broker, check: Callable[[BrokerState], Any], consumers: list[Any]) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not broker.call(check):
        assert time.monotonic() < deadline, "the share group did not settle"
        for c in consumers:
            assert len(c.poll(0.1)) == 0


FAST_HEARTBEAT = {"group.share.heartbeat.interval.ms": "300"}


@pytest.mark.kwire_broker(config=FAST_HEARTBEAT)
def test_two_share_consumers_split_the_records_each_delivered_once(kwire_broker: Broker) -> None:
    kwire_broker.create_topic("queue", partitions=3)
    a = share_consumer(kwire_broker, "workers")
    b = share_consumer(kwire_broker, "workers")
    try:
        a.subscribe(["queue"])
        b.subscribe(["queue"])
        poll_until(kwire_broker, settled("workers", 2), [a, b])
        assert kwire_broker.call(initialized("workers")) == 3
        produce(kwire_broker, "queue", 3, 60)
        seen: dict[str, Counter[tuple[int, int]]] = {"a": Counter(), "b": Counter()}
        deadline = time.monotonic() + DEADLINE_S
        while sum(len(c) for c in seen.values()) < 60 and time.monotonic() < deadline:
            for name, consumer in (("a", a), ("b", b)):
                for m in consumer.poll(0.2):
                    assert m.error() is None, m.error()
                    seen[name][(m.partition(), m.offset())] += 1
        both = seen["a"] + seen["b"]
        assert sorted(both) == [(p, o) for p in range(3) for o in range(20)]
        assert set(both.values()) == {1}  # each record delivered once
        assert seen["a"] and seen["b"]  # both members did work
        for consumer in (a, b):
            # implicit mode: the last poll's records are accepted by the next poll or a commit
            assert all(error is None for error in consumer.commit_sync(10).values())
    finally:
        a.close()
        b.close()
    # Implicit acknowledgement accepted everything: every share partition moved past the end.
    assert kwire_broker.call(start_offsets("workers")) == [20, 20, 20]
