"""Consumer groups with Kafka's own KafkaConsumer (kafka-clients 3.9.1, the classic protocol) against
kwire's group coordinator: tools/java/GroupsProgram.java drives several consumers in one JVM.

* three consumers of a six-partition topic share it 2/2/2; when one closes (LeaveGroup) the other
  two own all six within a bounded time;
* static membership (``group.instance.id``): a member that restarts gets its partitions back without
  a rebalance (the others keep theirs, no callbacks, the generation does not move);
* the CooperativeStickyAssignor: a third member joins and only the partitions that move are revoked;
* committed offsets survive a broker restart.

Needs a JDK (java, javac); Kafka's jars come from tools/kafka_jars.py.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.interop

NO_DELAY = {"group.initial.rebalance.delay.ms": "0"}
TAKEOVER_BOUND_MS = 15_000  # a close's LeaveGroup, the survivors' next heartbeat, a join and sync


def groups_program(*args: str, timeout: float = 240.0) -> dict[str, Any]:
    """Runs tools/java/GroupsProgram.java with ``args``; returns its JSON answer."""
    from kafka_jars import compile_java, java_command

    missing = [tool for tool in ("java", "javac") if shutil.which(tool) is None]
    if missing:
        pytest.fail(f"the Java interop tests need a JDK ({', '.join(missing)} missing)")
    classes = compile_java("GroupsProgram")
    proc = subprocess.run(
        [*java_command("GroupsProgram", classes), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    lines = proc.stdout.strip().splitlines()
    assert proc.returncode == 0 and lines, (
        f"GroupsProgram {args[0]} exited {proc.returncode}\nstdout: {proc.stdout[-2000:]}\n"
        f"stderr: {proc.stderr[-4000:]}"
    )
    reply: dict[str, Any] = json.loads(lines[-1])
    assert reply.get("error") is None, (
        f"GroupsProgram {args[0]}: {reply['error']}\nreply: {reply}\nstderr: {proc.stderr[-4000:]}"
    )
    return reply


def produce(bootstrap: str, topic: str, partitions: int, start: int, count: int) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    for i in range(start, start + count):
        producer.produce(topic, value=f"v{i}".encode(), partition=i % partitions)
    assert producer.flush(30) == 0


def as_sets(assignment: dict[str, list[int]]) -> dict[str, set[int]]:
    return {name: set(ps) for name, ps in assignment.items()}


def test_three_consumers_share_and_take_over(start_broker: Any) -> None:
    broker = start_broker(config=NO_DELAY)
    broker.create_topic("jg-share", 6)
    reply = groups_program("share", broker.bootstrap, "jg-share", "jg-share")
    initial = as_sets(reply["initial"])
    assert sorted(len(ps) for ps in initial.values()) == [2, 2, 2]
    assert set().union(*initial.values()) == set(range(6))
    assert len(set(reply["initialGenerations"].values())) == 1  # one generation for all
    final = as_sets(reply["final"])
    assert set(final) == {"c0", "c1"}
    assert sorted(len(ps) for ps in final.values()) == [3, 3]
    assert set().union(*final.values()) == set(range(6))
    generations = set(reply["finalGenerations"].values())
    assert len(generations) == 1 and generations.pop() > max(reply["initialGenerations"].values())
    assert reply["takeoverMs"] < TAKEOVER_BOUND_MS, reply


def test_static_member_restart_without_rebalance(start_broker: Any) -> None:
    broker = start_broker(config=NO_DELAY)
    broker.create_topic("jg-static", 6)
    reply = groups_program("static", broker.bootstrap, "jg-static", "jg-static")
    initial = as_sets(reply["initial"])
    final = as_sets(reply["final"])
    assert sorted(len(ps) for ps in initial.values()) == [2, 2, 2]
    # Everyone owns what it owned before the restart, the restarted member included.
    assert final == initial, reply
    # No rebalance: the same generation, and the members that stayed saw no callback.
    assert reply["finalGenerations"] == reply["initialGenerations"], reply
    assert reply["events"]["c0"] == [] and reply["events"]["c1"] == [], reply["events"]
    # The restarted member was handed its partitions (one "assigned" callback).
    assert [kind for kind, _ in reply["events"]["c2"]] == ["assigned"], reply["events"]
    assert set(reply["events"]["c2"][0][1]) == initial["c2"]


def test_cooperative_sticky_rebalances_incrementally(start_broker: Any) -> None:
    broker = start_broker(config=NO_DELAY)
    broker.create_topic("jg-coop", 6)
    reply = groups_program("cooperative", broker.bootstrap, "jg-coop", "jg-coop")
    initial = as_sets(reply["initial"])
    final = as_sets(reply["final"])
    assert sorted(len(ps) for ps in initial.values()) == [3, 3]
    assert sorted(len(ps) for ps in final.values()) == [2, 2, 2]
    assert set().union(*final.values()) == set(range(6))
    events = reply["events"]
    for name in ("c0", "c1"):
        # Sticky: what it keeps it owned before; cooperative: it revokes only what moved, never
        # everything, and loses nothing.
        assert final[name] <= initial[name], (name, reply)
        revoked = set().union(*(set(ps) for kind, ps in events[name] if kind == "revoked"))
        assert revoked == initial[name] - final[name], (name, events)
        assert len(revoked) == 1, (name, events)
        assert all(kind != "lost" for kind, _ in events[name]), (name, events)
    # The newcomer got exactly the partitions the others gave up.
    assert final["c2"] == (initial["c0"] | initial["c1"]) - (final["c0"] | final["c1"])


def test_committed_offsets_survive_a_broker_restart(start_broker: Any, tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    broker = start_broker(data_dir=data_dir, config=NO_DELAY)
    broker.create_topic("jg-commit", 6)
    produce(broker.bootstrap, "jg-commit", 6, 0, 60)
    first = groups_program("commit", broker.bootstrap, "jg-commit", "jg-commit", "60", "500")
    assert all(v is None for v in first["committedBefore"].values()), first
    assert sorted(first["values"]) == sorted(f"v{i}" for i in range(60))
    assert first["committedAfter"] == {str(p): 10 for p in range(6)}
    broker.stop()

    again = start_broker(data_dir=data_dir, config=NO_DELAY)
    produce(again.bootstrap, "jg-commit", 6, 60, 6)
    second = groups_program("commit", again.bootstrap, "jg-commit", "jg-commit", "6", "2000")
    assert second["committedBefore"] == {str(p): 10 for p in range(6)}, second
    assert sorted(second["values"]) == sorted(f"v{i}" for i in range(60, 66)), second
    assert second["committedAfter"] == {str(p): 11 for p in range(6)}


def test_admin_removes_a_static_member_by_instance_id(start_broker: Any) -> None:
    """KIP-345's ``Admin.removeMembersFromConsumerGroup``: LeaveGroup v3+ naming only the
    ``group.instance.id``. A closed librdkafka static member (no LeaveGroup on close) is removed
    at once instead of after its 60 s session; an unknown instance id is UNKNOWN_MEMBER_ID."""
    import time

    from confluent_kafka import Consumer
    from interop_helpers import java_admin

    broker = start_broker(config=NO_DELAY)
    broker.create_topic("jg-remove", 4)

    def consumer(name: str) -> Any:
        c = Consumer(
            {
                "bootstrap.servers": broker.bootstrap,
                "group.id": "jg-remove",
                "group.instance.id": f"instance-{name}",
                "session.timeout.ms": 60000,
                "heartbeat.interval.ms": 300,
            }
        )
        c.subscribe(["jg-remove"])
        return c

    def owned(c: Any) -> int:
        return len(c.assignment())

    def poll_until(what: str, done: Any, *consumers: Any, bound_s: float = 30.0) -> None:
        deadline = time.monotonic() + bound_s
        for _ in range(3000):
            if done() or time.monotonic() > deadline:
                break
            for c in consumers:
                c.poll(0.05)
        assert done(), what

    a = consumer("a")
    try:
        b = consumer("b")
        poll_until("a and b share", lambda: owned(a) == 2 and owned(b) == 2, a, b)
        b.close()
        (removed,) = java_admin(
            broker.bootstrap,
            {
                "op": "removeMembersFromConsumerGroup",
                "group": "jg-remove",
                "instances": ["instance-b"],
            },
        )
        assert removed["result"] == {"instance-b": None}, removed
        # well inside b's 60 s session: the removal, not the session timeout, frees its partitions
        poll_until(
            "a owns every partition", lambda: owned(a) == 4, a, bound_s=TAKEOVER_BOUND_MS / 1000
        )
        (unknown,) = java_admin(
            broker.bootstrap,
            {"op": "removeMembersFromConsumerGroup", "group": "jg-remove", "instances": ["nope"]},
        )
        assert "UnknownMemberIdException" in str(unknown["result"]["nope"]), unknown
    finally:
        a.close()
