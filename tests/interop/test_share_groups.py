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

from kwire.broker import Broker, BrokerState, Cluster

pytestmark = pytest.mark.interop

DEADLINE_S = 30.0


def share_consumer(broker: Broker | Cluster, group: str, **extra: str) -> Any:
    from confluent_kafka import ShareConsumer

    return ShareConsumer({"bootstrap.servers": broker.bootstrap, "group.id": group, **extra})


def produce(broker: Broker | Cluster, topic: str, partitions: int, count: int) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    for i in range(count):
        producer.produce(topic, value=f"v{i}".encode(), partition=i % partitions)
    assert producer.flush(30) == 0


def initialized(group: str) -> Callable[[BrokerState], int]:
    def count(state: BrokerState) -> int:
        coordinator = state.services.share
        if coordinator is None:
            return 0
        return sum(p.initialized for (g, _, _), p in coordinator.partitions.items() if g == group)

    return count


def start_offsets(group: str) -> Callable[[BrokerState], list[int]]:
    def read(state: BrokerState) -> list[int]:
        coordinator = state.services.share
        assert coordinator is not None
        return [
            p.start_offset
            for (g, _, _), p in sorted(coordinator.partitions.items(), key=lambda kv: kv[0][2])
            if g == group
        ]

    return read


def settled(group: str, members: int) -> Callable[[BrokerState], bool]:
    """Every member knows the group's latest assignment and fetches exactly its partitions from
    the brokers leading them (librdkafka may leave a session with a broker it no longer fetches
    from as it was)."""

    def check(state: BrokerState) -> bool:
        coordinator = state.services.share
        found = None if coordinator is None else coordinator.groups.get(group)
        if coordinator is None or found is None or len(found.members) != members:
            return False
        for member in found.members.values():
            if member.member_epoch != found.group_epoch:
                return False
            assigned = {(t, p) for t, parts in member.assignment.items() for p in parts}
            leaders = {state.topics_by_id[t].partitions[p].leader_id for t, p in assigned}
            fetched: set[Any] = set()
            for (g, m, node), session in coordinator.sessions.items():
                if (g, m) == (group, member.member_id) and node in leaders:
                    fetched |= set(session.partitions)
            if fetched != assigned:
                return False
        return True

    return check


def poll_until(
    broker: Broker | Cluster, check: Callable[[BrokerState], Any], consumers: list[Any]
) -> None:
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


def poll_records(consumer: Any, want: int, timeout_s: float = DEADLINE_S) -> list[Any]:
    """Poll until ``want`` records came (bounded in time); the messages."""
    got: list[Any] = []
    deadline = time.monotonic() + timeout_s
    while len(got) < want and time.monotonic() < deadline:
        for m in consumer.poll(0.2):
            assert m.error() is None, m.error()
            got.append(m)
    return got


def test_explicit_release_redelivers_reject_archives_and_the_delivery_limit_ends_it(
    kwire_broker: Broker,
) -> None:
    from confluent_kafka import AcknowledgeType

    kwire_broker.create_topic("jobs", partitions=1)
    c = share_consumer(kwire_broker, "explicit", **{"share.acknowledgement.mode": "explicit"})
    try:
        c.subscribe(["jobs"])
        poll_until(kwire_broker, lambda st: initialized("explicit")(st) == 1, [c])
        produce(kwire_broker, "jobs", 1, 10)
        first = poll_records(c, 10)
        assert [(m.offset(), m.delivery_count()) for m in first] == [(o, 1) for o in range(10)]
        for m in first:
            kind = {0: "RELEASE", 1: "RELEASE", 2: "REJECT", 3: "REJECT"}.get(m.offset(), "ACCEPT")
            c.acknowledge(m, getattr(AcknowledgeType, kind))
        assert all(error is None for error in c.commit_sync(10).values())
        # RELEASE: delivered again, counted; REJECT and ACCEPT: never again
        for delivery in range(2, 6):
            again = poll_records(c, 2)
            assert [(m.offset(), m.delivery_count()) for m in again] == [
                (0, delivery),
                (1, delivery),
            ]
            for m in again:
                c.acknowledge(m, AcknowledgeType.RELEASE)
            assert all(error is None for error in c.commit_sync(10).values())
        # the fifth delivery was the last (group.share.delivery.count.limit=5): archived
        assert poll_records(c, 1, timeout_s=2.0) == []
        assert kwire_broker.call(start_offsets("explicit")) == [10]
    finally:
        c.close()


@pytest.mark.kwire_broker(config={**FAST_HEARTBEAT, "group.share.record.lock.duration.ms": "1500"})
def test_a_lock_that_times_out_redelivers_to_another_member(kwire_broker: Broker) -> None:
    kwire_broker.create_topic("slow", partitions=1)
    explicit = {"share.acknowledgement.mode": "explicit"}
    a = share_consumer(kwire_broker, "locks", **explicit)
    b = share_consumer(kwire_broker, "locks", **explicit)
    try:
        a.subscribe(["slow"])
        poll_until(kwire_broker, lambda st: initialized("locks")(st) == 1, [a])
        produce(kwire_broker, "slow", 1, 5)
        held = poll_records(a, 5)
        assert [m.delivery_count() for m in held] == [1] * 5
        # a holds them and never acknowledges; b gets them once the locks run out
        b.subscribe(["slow"])
        again = poll_records(b, 5)
        assert [(m.offset(), m.delivery_count()) for m in again] == [(o, 2) for o in range(5)]
        for m in again:
            b.acknowledge(m)
        assert all(error is None for error in b.commit_sync(10).values())
        assert kwire_broker.call(start_offsets("locks")) == [5]
    finally:
        a.close()
        b.close()


HOLDER = """
import sys, time
from confluent_kafka import ShareConsumer
c = ShareConsumer({"bootstrap.servers": sys.argv[1], "group.id": sys.argv[2],
                   "share.acknowledgement.mode": "explicit"})
c.subscribe([sys.argv[3]])
got = 0
deadline = time.monotonic() + 60
while time.monotonic() < deadline:
    got += len(c.poll(0.2))
    if got:
        print("got", got, flush=True)
        time.sleep(120)  # hold them until killed
"""


@pytest.mark.kwire_broker(config={**FAST_HEARTBEAT, "group.share.session.timeout.ms": "2000"})
def test_a_killed_member_has_its_records_released(kwire_broker: Broker) -> None:
    import os
    import signal
    import subprocess
    import sys

    kwire_broker.create_topic("work", partitions=1)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, kwire_broker.bootstrap, "dies", "work"],
        stdout=subprocess.PIPE,
        text=True,
    )
    b = None
    try:
        poll_until(kwire_broker, lambda st: initialized("dies")(st) == 1, [])
        produce(kwire_broker, "work", 1, 5)
        assert holder.stdout is not None
        line = holder.stdout.readline()  # the holder prints once it holds records
        assert line.startswith("got"), line
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait(10)
        # The lock lasts 30 s; the dead member's session (2 s) ends first and frees its records.
        b = share_consumer(kwire_broker, "dies")
        b.subscribe(["work"])
        again = poll_records(b, 5, timeout_s=20.0)
        assert [(m.offset(), m.delivery_count()) for m in again] == [(o, 2) for o in range(5)]
        assert all(error is None for error in b.commit_sync(10).values())
        assert kwire_broker.call(start_offsets("dies")) == [5]
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait(10)
        if holder.stdout is not None:
            holder.stdout.close()
        if b is not None:
            b.close()


def test_share_auto_offset_reset_earliest_set_with_incremental_alter_configs(
    kwire_broker: Broker,
) -> None:
    from confluent_kafka.admin import (
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        ResourceType,
    )

    kwire_broker.create_topic("backlog", partitions=2)
    produce(kwire_broker, "backlog", 2, 10)  # before the group exists
    admin = AdminClient({"bootstrap.servers": kwire_broker.bootstrap})
    reset = ConfigEntry(
        "share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET
    )
    altered = admin.incremental_alter_configs(
        [ConfigResource(ResourceType.GROUP, "early", incremental_configs=[reset])]
    )
    for future in altered.values():
        assert future.result(10) is None
    bad = ConfigEntry(
        "share.auto.offset.reset", "never", incremental_operation=AlterConfigOpType.SET
    )
    refused = admin.incremental_alter_configs(
        [ConfigResource(ResourceType.GROUP, "early", incremental_configs=[bad])]
    )
    for future in refused.values():
        with pytest.raises(Exception, match="String must be one of: latest, earliest"):
            future.result(10)
    described = admin.describe_configs([ConfigResource(ResourceType.GROUP, "early")])
    for future in described.values():
        entries = future.result(10)
        assert entries["share.auto.offset.reset"].value == "earliest"
        assert not entries["share.auto.offset.reset"].is_default
    c = share_consumer(kwire_broker, "early")
    try:
        c.subscribe(["backlog"])
        got = poll_records(c, 10)
        assert sorted((m.partition(), m.offset()) for m in got) == [
            (p, o) for p in range(2) for o in range(5)
        ]
        assert all(error is None for error in c.commit_sync(10).values())
    finally:
        c.close()


def test_acknowledged_records_stay_acknowledged_across_a_restart(
    kwire_broker_factory: Callable[..., Broker], tmp_path: Any
) -> None:
    from confluent_kafka import AcknowledgeType

    data_dir = tmp_path / "restarted"
    first = kwire_broker_factory(data_dir)
    first.create_topic("durable", partitions=1)
    # a short socket timeout: closing after the broker stopped gives up quickly
    explicit = {"share.acknowledgement.mode": "explicit", "socket.timeout.ms": "2000"}
    c = share_consumer(first, "keeps", **explicit)
    try:
        c.subscribe(["durable"])
        poll_until(first, lambda st: initialized("keeps")(st) == 1, [c])
        produce(first, "durable", 1, 10)
        got = poll_records(c, 10)
        assert len(got) == 10
        for m in got:  # 0-5 done, 6-7 released, 8-9 still held when the broker stops
            if m.offset() < 6:
                c.acknowledge(
                    m, AcknowledgeType.ACCEPT if m.offset() % 2 else AcknowledgeType.REJECT
                )
            elif m.offset() < 8:
                c.acknowledge(m, AcknowledgeType.RELEASE)
        assert all(error is None for error in c.commit_sync(10).values())
    finally:
        first.stop()  # the consumer's last words go nowhere
        c.close()
    second = kwire_broker_factory(data_dir)
    d = share_consumer(second, "keeps")
    try:
        d.subscribe(["durable"])
        again = poll_records(d, 4)
        assert sorted((m.offset(), m.delivery_count()) for m in again) == [
            (6, 2),
            (7, 2),
            (8, 2),
            (9, 2),
        ]
        assert poll_records(d, 1, timeout_s=2.0) == []  # 0-5 never again
        assert all(error is None for error in d.commit_sync(10).values())
        assert second.call(start_offsets("keeps")) == [10]
    finally:
        d.close()


def test_read_committed_share_group_skips_aborted_transactions(kwire_broker: Broker) -> None:
    from confluent_kafka import Producer
    from confluent_kafka.admin import (
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        ResourceType,
    )

    kwire_broker.create_topic("txns", partitions=1)
    producer = Producer({"bootstrap.servers": kwire_broker.bootstrap, "transactional.id": "tx"})
    producer.init_transactions(30)
    for outcome, values in (("commit", "abc"), ("abort", "xy"), ("commit", "de")):
        producer.begin_transaction()
        for v in values:
            producer.produce("txns", value=v.encode(), partition=0)
        assert producer.flush(30) == 0  # in the log before the outcome (abort purges the queue)
        if outcome == "commit":
            producer.commit_transaction(30)
        else:
            producer.abort_transaction(30)
    admin = AdminClient({"bootstrap.servers": kwire_broker.bootstrap})
    configs = [
        ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)
        for name, value in (
            ("share.auto.offset.reset", "earliest"),
            ("share.isolation.level", "read_committed"),
        )
    ]
    for future in admin.incremental_alter_configs(
        [ConfigResource(ResourceType.GROUP, "committed", incremental_configs=configs)]
    ).values():
        assert future.result(10) is None
    c = share_consumer(kwire_broker, "committed")
    try:
        c.subscribe(["txns"])
        got = poll_records(c, 5)
        assert [m.value() for m in got] == [b"a", b"b", b"c", b"d", b"e"]
        assert poll_records(c, 1, timeout_s=2.0) == []
        assert all(error is None for error in c.commit_sync(10).values())
        # every offset, markers and aborted records included, is finished with
        assert kwire_broker.call(start_offsets("committed")) == [10]
    finally:
        c.close()


def test_a_sigkilled_broker_keeps_acknowledgements(
    broker_cli: Callable[..., Any], tmp_path: Any
) -> None:
    from confluent_kafka import AcknowledgeType, Producer
    from confluent_kafka.admin import (
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        ResourceType,
    )

    data_dir = tmp_path / "killed"
    first = broker_cli(data_dir)
    producer = Producer({"bootstrap.servers": first.bootstrap, "linger.ms": 0})
    for i in range(10):
        producer.produce("killed", value=f"v{i}".encode(), partition=0)  # auto-created, 1 partition
    assert producer.flush(30) == 0
    admin = AdminClient({"bootstrap.servers": first.bootstrap})
    earliest = ConfigEntry(
        "share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET
    )
    for future in admin.incremental_alter_configs(
        [ConfigResource(ResourceType.GROUP, "survivors", incremental_configs=[earliest])]
    ).values():
        assert future.result(10) is None
    c = survivor(first.bootstrap, "explicit")
    try:
        c.subscribe(["killed"])
        got = poll_records(c, 10)
        assert len(got) == 10
        for m in got:  # 0-5 done, 6-7 released, 8-9 held when the broker dies
            if m.offset() < 6:
                c.acknowledge(m, AcknowledgeType.ACCEPT)
            elif m.offset() < 8:
                c.acknowledge(m, AcknowledgeType.RELEASE)
        assert all(error is None for error in c.commit_sync(10).values())
        assert first.kill() == -9
    finally:
        c.close()
    second = broker_cli(data_dir)
    d = survivor(second.bootstrap, "implicit")
    try:
        d.subscribe(["killed"])
        again = poll_records(d, 4)
        assert sorted((m.offset(), m.delivery_count()) for m in again) == [
            (6, 2),
            (7, 2),
            (8, 2),
            (9, 2),
        ]
        assert poll_records(d, 1, timeout_s=2.0) == []
    finally:
        d.close()


def survivor(bootstrap: str, mode: str) -> Any:
    """A consumer of the group "survivors" that gives up quickly on a dead broker."""
    from confluent_kafka import ShareConsumer

    return ShareConsumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "survivors",
            "share.acknowledgement.mode": mode,
            "socket.timeout.ms": "2000",
        }
    )


@pytest.mark.kwire_cluster(nodes=3, config=FAST_HEARTBEAT)
def test_share_group_on_a_three_node_cluster(kwire_cluster: Cluster) -> None:
    kwire_cluster.create_topic("spread", partitions=3)
    assert len(set(kwire_cluster.leaders("spread"))) == 3  # each partition on another node
    a = share_consumer(kwire_cluster, "nodes")
    b = share_consumer(kwire_cluster, "nodes")
    try:
        a.subscribe(["spread"])
        b.subscribe(["spread"])
        poll_until(kwire_cluster, settled("nodes", 2), [a, b])
        produce(kwire_cluster, "spread", 3, 30)
        seen: Counter[tuple[int, int]] = Counter()
        deadline = time.monotonic() + DEADLINE_S
        while sum(seen.values()) < 30 and time.monotonic() < deadline:
            for consumer in (a, b):
                for m in consumer.poll(0.2):
                    assert m.error() is None, m.error()
                    seen[(m.partition(), m.offset())] += 1
        assert sorted(seen) == [(p, o) for p in range(3) for o in range(10)]
        assert set(seen.values()) == {1}
    finally:
        a.close()
        b.close()
