"""Offset retention (KIP-211) and the deletion of expired groups, with a clock the test moves:
``offsets.retention.minutes`` (1 minute here), checked every ``offsets.retention.check.interval.ms``.

Requests go through the wire as in test_group.py; the tombstones are read back from
``__consumer_offsets`` and decoded with kwire's codecs.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import pytest

from kwire.broker import BrokerState, ManualClock, personality, testing
from kwire.broker._apis import implemented_versions
from kwire.broker._state import partition_for
from kwire.broker.group import EMPTY, GROUP_TOPIC, STABLE, GroupCoordinator, group_coordinator
from kwire.protocol import (
    ZERO_UUID,
    message_class,
    struct_class,
)
from kwire.records import read_batches

NOW = 1_700_000_000_000
RETENTION = 60_000
GROUP = "g1"
CONFIG = {
    "group.initial.rebalance.delay.ms": "0",
    "offsets.retention.minutes": "1",
    "offsets.retention.check.interval.ms": "1000",
}
PROTOCOL = struct_class("JoinGroupRequest", "protocols")
ASSIGNMENT = struct_class("SyncGroupRequest", "assignments")
LEAVE_MEMBER = struct_class("LeaveGroupRequest", "members")
COMMIT_TOPIC = struct_class("OffsetCommitRequest", "topics")
COMMIT_PARTITION = struct_class("OffsetCommitRequest", "topics", "partitions")
FETCH_TOPIC = struct_class("OffsetFetchRequest", "topics")
SUBSCRIPTION = message_class("ConsumerProtocolSubscription")


def make_state(path: Path, **config: str) -> BrokerState:
    return testing.make_state(path, config={**CONFIG, **config})


@pytest.fixture
def state(tmp_path: Path) -> Any:
    s = make_state(tmp_path / "data")
    s.create_topic("t", 2)
    s.create_topic("u", 1)
    yield s
    s.close()


def clock(state: BrokerState) -> ManualClock:
    assert isinstance(state.clock, ManualClock)
    return state.clock


def coordinator(state: BrokerState) -> GroupCoordinator:
    return group_coordinator(state)


def call(state: BrokerState, name: str, version: int, **fields: Any) -> Any:
    return testing.call(
        state,
        name,
        version,
        settle=False,
        client_id="test-client",
        context={"client_address": "127.0.0.1:5555"},
        **fields,
    )


def subscription(*topics: str) -> bytes:
    """A consumer's JoinGroup metadata: ConsumerProtocolSubscription v1, version-prefixed."""
    message = SUBSCRIPTION(topics=list(topics), user_data=None, owned_partitions=[])
    return struct.pack(">h", 1) + bytes(message.encode(1))


def join_and_sync(state: BrokerState, *topics: str) -> str:
    """One consumer joins (KIP-394: twice) and syncs: the group is Stable; its member id."""
    fields = dict(
        group_id=GROUP,
        session_timeout_ms=10_000,
        rebalance_timeout_ms=30_000,
        group_instance_id=None,
        protocol_type="consumer",
        protocols=[PROTOCOL(name="range", metadata=subscription(*topics))],
    )
    first = call(state, "JoinGroup", 9, member_id="", **fields)
    joined = call(state, "JoinGroup", 9, member_id=first.member_id, **fields)
    assert joined.error_code == 0
    synced = call(
        state,
        "SyncGroup",
        5,
        group_id=GROUP,
        generation_id=joined.generation_id,
        member_id=joined.member_id,
        group_instance_id=None,
        protocol_type="consumer",
        protocol_name="range",
        assignments=[ASSIGNMENT(member_id=joined.member_id, assignment=b"")],
    )
    assert synced.error_code == 0
    return str(joined.member_id)


def leave(state: BrokerState, member_id: str) -> None:
    response = call(
        state, "LeaveGroup", 5, group_id=GROUP, members=[LEAVE_MEMBER(member_id=member_id)]
    )
    assert response.error_code == 0


def commit(
    state: BrokerState,
    offsets: dict[tuple[str, int], int],
    *,
    version: int = 8,
    generation: int = -1,
    member_id: str = "",
    retention_ms: int = -1,
) -> None:
    by_topic: dict[str, list[Any]] = {}
    for (topic, index), offset in offsets.items():
        by_topic.setdefault(topic, []).append(
            COMMIT_PARTITION(
                partition_index=index,
                committed_offset=offset,
                committed_leader_epoch=-1,
                committed_metadata="",
            )
        )
    response = call(
        state,
        "OffsetCommit",
        version,
        group_id=GROUP,
        generation_id_or_member_epoch=generation,
        member_id=member_id,
        retention_time_ms=retention_ms,
        topics=[
            COMMIT_TOPIC(name=name, topic_id=ZERO_UUID, partitions=parts)
            for name, parts in by_topic.items()
        ],
    )
    assert all(p.error_code == 0 for t in response.topics for p in t.partitions)


def fetch(state: BrokerState) -> dict[tuple[str, int], int]:
    """OffsetFetch v7 of t-0, t-1 and u-0: partition -> committed offset (-1: none)."""
    response = call(
        state,
        "OffsetFetch",
        7,
        group_id=GROUP,
        topics=[
            FETCH_TOPIC(name="t", partition_indexes=[0, 1]),
            FETCH_TOPIC(name="u", partition_indexes=[0]),
        ],
        require_stable=False,
    )
    return {
        (t.name, p.partition_index): p.committed_offset
        for t in response.topics
        for p in t.partitions
    }


def listed(state: BrokerState) -> list[str]:
    return [g.group_id for g in call(state, "ListGroups", 4, states_filter=[]).groups]


def tombstones(state: BrokerState) -> list[tuple[int, Any]]:
    """The null-valued records of the group's ``__consumer_offsets`` partition: (key version,
    decoded key, None for a consumer group's keys)."""
    partition = state.partition(GROUP_TOPIC, partition_for(GROUP, 50))
    assert partition is not None
    out = []
    for batch in read_batches(partition.log.read(0, 1 << 22).read_bytes()):
        for record in batch:
            if record.value is not None:
                continue
            key = bytes(record.key or b"")
            version = int.from_bytes(key[:2], "big")
            if version > 2:  # a KIP-848 consumer group's records (key versions 3..8)
                out.append((version, None))
                continue
            name = "GroupMetadataKey" if version == 2 else "OffsetCommitKey"
            out.append((version, message_class(name).decode(memoryview(key)[2:], version)))
    return out


def offset_tombstones(state: BrokerState) -> list[tuple[str, int]]:
    return [(k.topic, k.partition) for v, k in tombstones(state) if v in (0, 1)]


# --- classic groups -----------------------------------------------------------------------------


def test_empty_group_offsets_expire_retention_after_it_became_empty(tmp_path: Path) -> None:
    state = make_state(tmp_path / "d")
    state.create_topic("t", 2)
    state.create_topic("u", 1)
    member = join_and_sync(state, "t")
    commit(state, {("t", 0): 10, ("t", 1): 11}, generation=1, member_id=member)
    clock(state).advance(30_000)
    leave(state, member)  # Empty at NOW + 30000: the retention counts from here
    group = coordinator(state).groups[GROUP]
    assert group.state == EMPTY and group.state_timestamp == NOW + 30_000
    emptied = NOW + 30_000
    assert coordinator(state).cleanup_group_metadata(emptied + RETENTION - 1) == 0
    assert fetch(state)[("t", 0)] == 10 and listed(state) == [GROUP]
    assert offset_tombstones(state) == []
    assert coordinator(state).cleanup_group_metadata(emptied + RETENTION) == 2
    assert fetch(state) == {("t", 0): -1, ("t", 1): -1, ("u", 0): -1}
    assert GROUP not in coordinator(state).groups and listed(state) == []
    found = tombstones(state)
    assert offset_tombstones(state) == [("t", 0), ("t", 1)]
    assert [(v, k.group) for v, k in found if v == 2] == [(2, GROUP)]  # the group is Dead
    state.close()
    again = make_state(tmp_path / "d")
    try:
        assert fetch(again) == {("t", 0): -1, ("t", 1): -1, ("u", 0): -1}
        assert GROUP not in coordinator(again).groups and listed(again) == []
    finally:
        again.close()


def test_an_empty_group_reloaded_keeps_when_it_became_empty(tmp_path: Path) -> None:
    state = make_state(tmp_path / "d")
    state.create_topic("t", 2)
    member = join_and_sync(state, "t")
    commit(state, {("t", 0): 10}, generation=1, member_id=member)
    clock(state).advance(5_000)
    leave(state, member)
    state.close()
    again = make_state(tmp_path / "d")  # the clock starts at NOW again
    try:
        group = coordinator(again).groups[GROUP]
        assert group.state == EMPTY and group.state_timestamp == NOW + 5_000
        assert coordinator(again).cleanup_group_metadata(NOW + 5_000 + RETENTION - 1) == 0
        assert coordinator(again).cleanup_group_metadata(NOW + 5_000 + RETENTION) == 1
        assert GROUP not in coordinator(again).groups
    finally:
        again.close()


def test_stable_group_keeps_subscribed_topics_offsets(state: BrokerState) -> None:
    member = join_and_sync(state, "t")
    commit(state, {("t", 0): 10, ("u", 0): 20}, generation=1, member_id=member)
    assert coordinator(state).cleanup_group_metadata(NOW + RETENTION - 1) == 0
    assert coordinator(state).cleanup_group_metadata(NOW + RETENTION) == 1
    assert fetch(state) == {("t", 0): 10, ("t", 1): -1, ("u", 0): -1}
    assert offset_tombstones(state) == [("u", 0)]
    assert coordinator(state).groups[GROUP].state == STABLE and listed(state) == [GROUP]
    # much later, still subscribed: kept
    assert coordinator(state).cleanup_group_metadata(NOW + 100 * RETENTION) == 0
    assert fetch(state)[("t", 0)] == 10


def test_stable_group_with_unknown_subscriptions_expires_nothing(state: BrokerState) -> None:
    """Kafka only expires a Stable group's offsets when its members' subscriptions decode."""
    fields = dict(
        group_id=GROUP,
        session_timeout_ms=10_000,
        rebalance_timeout_ms=30_000,
        group_instance_id=None,
        protocol_type="connect",
        protocols=[PROTOCOL(name="sessioned", metadata=b"x")],
    )
    first = call(state, "JoinGroup", 9, member_id="", **fields)
    joined = call(state, "JoinGroup", 9, member_id=first.member_id, **fields)
    call(
        state, "SyncGroup", 5, group_id=GROUP, generation_id=1, member_id=joined.member_id,
        group_instance_id=None, protocol_type="connect", protocol_name="sessioned",
        assignments=[],
    )  # fmt: skip
    commit(state, {("u", 0): 1}, generation=1, member_id=joined.member_id)
    assert coordinator(state).cleanup_group_metadata(NOW + 100 * RETENTION) == 0
    assert fetch(state)[("u", 0)] == 1


def test_simple_group_offsets_expire_by_commit_time(state: BrokerState) -> None:
    commit(state, {("t", 0): 1})
    clock(state).advance(30_000)
    commit(state, {("t", 1): 2})
    assert coordinator(state).cleanup_group_metadata(NOW + RETENTION) == 1
    assert fetch(state) == {("t", 0): -1, ("t", 1): 2, ("u", 0): -1}
    assert listed(state) == [GROUP]
    assert coordinator(state).cleanup_group_metadata(NOW + 30_000 + RETENTION - 1) == 0
    assert coordinator(state).cleanup_group_metadata(NOW + 30_000 + RETENTION) == 1
    assert listed(state) == [] and GROUP not in coordinator(state).groups
    assert offset_tombstones(state) == [("t", 0), ("t", 1)]
    assert [v for v, _ in tombstones(state)] == [1, 1, 2]


def test_an_explicit_retention_time_sets_the_expiry(state: BrokerState) -> None:
    """OffsetCommit v2..v4's retention time: the offset expires at commit time + it."""
    commit(state, {("t", 0): 1}, version=2, retention_ms=5_000)
    commit(state, {("t", 1): 2}, version=2, retention_ms=10 * RETENTION)
    assert coordinator(state).cleanup_group_metadata(NOW + 4_999) == 0
    assert coordinator(state).cleanup_group_metadata(NOW + 5_000) == 1
    assert coordinator(state).cleanup_group_metadata(NOW + 5 * RETENTION) == 0
    assert fetch(state) == {("t", 0): -1, ("t", 1): 2, ("u", 0): -1}


def test_offsets_with_a_pending_transaction_stay(state: BrokerState) -> None:
    commit(state, {("t", 0): 1})
    coordinator(state).stage_txn_offsets(
        GROUP, 4000, 0, {("t", 0): coordinator(state).groups[GROUP].offsets[("t", 0)]}, NOW
    )
    assert coordinator(state).cleanup_group_metadata(NOW + RETENTION) == 0
    coordinator(state).complete_txn(4000, False)
    assert coordinator(state).cleanup_group_metadata(NOW + RETENTION) == 1
    assert GROUP not in coordinator(state).groups


def test_the_check_runs_every_interval(state: BrokerState) -> None:
    coordinator(state)  # the coordinator and its timer start
    commit(state, {("t", 0): 1})
    clock(state).advance(RETENTION)
    state.run_tickers()  # a check is due: expired
    assert fetch(state)[("t", 0)] == -1
    commit(state, {("t", 0): 2})  # at NOW + RETENTION
    clock(state).advance(RETENTION)
    state.run_tickers()
    assert fetch(state)[("t", 0)] == -1


def test_defaults(tmp_path: Path) -> None:
    state = BrokerState(
        tmp_path / "d", personality=personality("4.3", implemented_versions()), clock=ManualClock()
    )
    try:
        assert state.broker_int("offsets.retention.minutes") == 10080
        assert state.broker_int("offsets.retention.check.interval.ms") == 600_000
        assert coordinator(state).conf("offsets.retention.minutes") == 10080
    finally:
        state.close()


# --- KIP-848 consumer groups --------------------------------------------------------------------


def heartbeat(state: BrokerState, member_id: str, epoch: int, **fields: Any) -> Any:
    response = call(
        state,
        "ConsumerGroupHeartbeat",
        1,
        group_id=GROUP,
        member_id=member_id,
        member_epoch=epoch,
        **fields,
    )
    assert response.error_code == 0
    return response


def test_consumer_group_offsets_expire_by_commit_time(tmp_path: Path) -> None:
    """Kafka's ``ConsumerGroup.offsetExpirationCondition``: commit time + retention, for the
    topics no member subscribes to; the group is deleted once empty with no offsets left."""
    state = make_state(tmp_path / "d")
    state.create_topic("t", 2)
    state.create_topic("u", 1)
    joined = heartbeat(
        state,
        "m" * 22,
        0,
        rebalance_timeout_ms=30_000,
        subscribed_topic_names=["t"],
        topic_partitions=[],
    )
    epoch = joined.member_epoch
    commit(state, {("t", 0): 5, ("u", 0): 6}, version=9, generation=epoch, member_id="m" * 22)
    assert coordinator(state).cleanup_group_metadata(NOW + RETENTION - 1) == 0
    assert coordinator(state).cleanup_group_metadata(NOW + RETENTION) == 1
    assert fetch(state) == {("t", 0): 5, ("t", 1): -1, ("u", 0): -1}
    assert listed(state) == [GROUP]
    heartbeat(state, "m" * 22, -1)  # leaves: the group is empty
    assert coordinator(state).cleanup_group_metadata(NOW + RETENTION) == 1
    assert fetch(state) == {("t", 0): -1, ("t", 1): -1, ("u", 0): -1}
    assert listed(state) == [] and GROUP not in coordinator(state).groups
    assert offset_tombstones(state) == [("u", 0), ("t", 0)]
    versions = [v for v, _ in tombstones(state)]
    # the last batch: t-0's tombstone, then the group's (target epoch, metadata, epoch)
    assert versions[-4:] == [1, 6, 4, 3]
    state.close()
    again = make_state(tmp_path / "d")
    try:
        assert fetch(again) == {("t", 0): -1, ("t", 1): -1, ("u", 0): -1}
        assert GROUP not in coordinator(again).groups and listed(again) == []
    finally:
        again.close()
