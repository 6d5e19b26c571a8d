"""The streams coordinator without a socket: the simplified ``StickyTaskAssignor`` (every task
active on exactly one member, balanced, sticky; standbys of stateful tasks on other processes),
session timeouts on an injected clock, and the record bytes against Kafka 4.3's schema layout."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import pytest

from kwire.broker import BrokerState, ManualClock, RequestContext, personality
from kwire.broker._apis import dispatch, implemented_versions
from kwire.broker.group._streams_assignor import sticky_assign
from kwire.broker.group._streams_group import StreamsGroup, StreamsMember, Tasks
from kwire.broker.group._streams_records import metadata_record
from kwire.protocol import message_class, struct_class

NOW = 1_700_000_000_000
TOPOLOGY = struct_class("StreamsGroupHeartbeatRequest", "topology")
SUBTOPOLOGY = struct_class("StreamsGroupHeartbeatRequest", "topology", "subtopologies")


def members(*pairs: tuple[str, str]) -> dict[str, StreamsMember]:
    return {m: StreamsMember(m, process_id=p) for m, p in pairs}


def actives(target: dict[str, Tasks]) -> dict[str, list[tuple[str, int]]]:
    return {m: sorted((s, p) for s, ps in t.active.items() for p in ps) for m, t in target.items()}


def test_every_task_has_one_active_owner_and_the_load_is_balanced() -> None:
    group = members(("a", "p1"), ("b", "p2"), ("c", "p3"))
    target = sticky_assign(group, {}, {"0": 5, "1": 2}, [], 0)
    owned = [task for tasks in actives(target).values() for task in tasks]
    assert sorted(owned) == [("0", p) for p in range(5)] + [("1", 0), ("1", 1)]
    assert sorted(len(t) for t in actives(target).values()) == [2, 2, 3]


def test_previous_owners_keep_their_tasks_up_to_their_share() -> None:
    before = sticky_assign(members(("a", "p1")), {}, {"0": 4}, [], 0)
    after = sticky_assign(members(("a", "p1"), ("b", "p2")), before, {"0": 4}, [], 0)
    assert actives(after) == {"a": [("0", 0), ("0", 1)], "b": [("0", 2), ("0", 3)]}
    again = sticky_assign(members(("a", "p1"), ("b", "p2")), after, {"0": 4}, [], 0)
    assert again == after


def test_standbys_of_stateful_tasks_go_to_other_processes() -> None:
    group = members(("a", "p1"), ("a2", "p1"), ("b", "p2"))
    target = sticky_assign(group, {}, {"0": 3, "1": 3}, ["0"], 1)
    for member_id, tasks in target.items():
        assert "1" not in tasks.standby  # stateless: no standby
        for s, ps in tasks.standby.items():
            for p in ps:
                owner = next(m for m, t in target.items() if p in t.active.get(s, ()))
                assert group[owner].process_id != group[member_id].process_id
    assert sum(len(ps) for t in target.values() for ps in t.standby.values()) == 3


def test_metadata_value_bytes_follow_kafka_4_3_layout() -> None:
    """Epoch, MetadataHash, then tagged ValidatedTopologyEpoch (tag 0) and LastAssignmentConfigs
    (tag 1), as the 4.3 schema lays them out (bytes worked out from the schema by hand)."""
    group = StreamsGroup("g", group_epoch=7, metadata_hash=0x0102030405060708)
    group.validated_topology_epoch = 0
    key, value = metadata_record(group, "g", num_standby=0)
    assert key == struct.pack(">hh", 17, 1) + b"g"
    assert value == (
        b"\x00\x00\x00\x00\x00\x07\x01\x02\x03\x04\x05\x06\x07\x08"
        b"\x02\x00\x04\x00\x00\x00\x00\x01\x19\x02\x15num.standby.replicas\x020\x00"
    )


def call(state: BrokerState, name: str, **fields: Any) -> Any:
    request = message_class(f"{name}Request")(**fields)
    api_key = request.API_KEY
    assert api_key is not None
    ctx = RequestContext(api_key, 0, 1, "c", client_address="127.0.0.1:5555")
    return dispatch(state, ctx, request)


def test_a_member_whose_session_ends_is_removed_and_its_tasks_move(tmp_path: Path) -> None:
    clock = ManualClock(NOW)
    state = BrokerState(
        tmp_path / "data",
        personality=personality("4.3", implemented_versions()),
        clock=clock,
        static_config={"group.streams.session.timeout.ms": "1000"},
    )
    try:
        state.create_topic("in", 2)
        topology = TOPOLOGY(
            epoch=0, subtopologies=[SUBTOPOLOGY(subtopology_id="0", source_topics=["in"])]
        )

        def beat(member: str, epoch: int, owned: list[int] | None = None) -> Any:
            task = struct_class("StreamsGroupHeartbeatRequest", "active_tasks")
            return call(
                state,
                "StreamsGroupHeartbeat",
                group_id="g",
                member_id=member,
                member_epoch=epoch,
                rebalance_timeout_ms=1000 if epoch == 0 else -1,
                topology=topology if epoch == 0 else None,
                process_id=member if epoch == 0 else None,
                active_tasks=[task(subtopology_id="0", partitions=owned or [])],
                standby_tasks=[],
                warmup_tasks=[],
            )

        assert beat("a", 0).member_epoch == 1
        r = beat("b", 0)
        assert r.error_code == 0
        r = beat("a", 1, [0, 1])
        assert r.member_epoch == 1  # revoking one task for b
        clock.advance(600)
        beat("a", 1, [0])  # a keeps its session; b says nothing
        clock.advance(600)
        r = beat("a", 2, [0])
        # b's session ended: a new epoch gives a both tasks
        tasks = sorted(p for t in r.active_tasks for p in t.partitions)
        assert (r.error_code, r.member_epoch, tasks) == (0, 3, [0, 1])
        assert beat("b", 2).error_code == 25  # UNKNOWN_MEMBER_ID
    finally:
        state.close()


@pytest.mark.parametrize("seed", [1071, 2, 3])
def test_no_active_task_is_ever_owned_twice_and_the_group_settles(
    tmp_path: Path, seed: int
) -> None:
    """Seeded random joins, leaves and heartbeats of members that do what they are told (own
    what the last response gave them): no active task is ever held by two members (assigned or
    pending revocation), and once membership stops changing the group reaches Stable with every
    task active exactly once."""
    import random

    rng = random.Random(seed)
    state = BrokerState(
        tmp_path / "data",
        personality=personality("4.3", implemented_versions()),
        clock=ManualClock(NOW),
    )
    task = struct_class("StreamsGroupHeartbeatRequest", "active_tasks")
    try:
        state.create_topic("in", 6)
        topology = TOPOLOGY(
            epoch=0, subtopologies=[SUBTOPOLOGY(subtopology_id="0", source_topics=["in"])]
        )
        live: dict[str, tuple[int, list[int]]] = {}  # member -> (epoch, owned tasks)

        def beat(member: str) -> None:
            epoch, owned = live.get(member, (0, []))
            r = call(
                state,
                "StreamsGroupHeartbeat",
                group_id="g",
                member_id=member,
                member_epoch=epoch,
                rebalance_timeout_ms=1000 if epoch == 0 else -1,
                topology=topology if epoch == 0 else None,
                process_id=member if epoch == 0 else None,
                active_tasks=[task(subtopology_id="0", partitions=owned)],
                standby_tasks=[],
                warmup_tasks=[],
            )
            assert r.error_code == 0, (member, r.error_message)
            if r.active_tasks is not None:
                owned = sorted(p for t in r.active_tasks for p in t.partitions)
            live[member] = (r.member_epoch, owned)

        def check_disjoint() -> None:
            group = state.services.group.streams.groups["g"]
            seen: set[int] = set()
            for m in group.members.values():
                held = set(m.assigned.active.get("0", ())) | set(
                    m.pending_revocation.active.get("0", ())
                )
                assert not held & seen, (m.member_id, held, seen)
                seen |= held

        names = [f"m{i}" for i in range(5)]
        for _ in range(120):
            member = rng.choice(names)
            if member in live and rng.random() < 0.15:
                call(state, "StreamsGroupHeartbeat", group_id="g", member_id=member,
                     member_epoch=-1)  # fmt: skip
                del live[member]
            else:
                beat(member)
            check_disjoint()
        if not live:
            beat("m0")
        for _ in range(4):  # membership settles: everyone heartbeats until stable
            for member in sorted(live):
                beat(member)
                check_disjoint()
        group = state.services.group.streams.groups["g"]
        assert group.state(state.services.group.streams.configured(group)) == "Stable"
        owned = sorted(p for _, ps in live.values() for p in ps)
        assert owned == list(range(6))
    finally:
        state.close()
