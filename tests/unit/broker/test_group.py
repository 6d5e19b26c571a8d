"""The group coordinator through the wire: requests encoded at a version, decoded as the server
decodes them, handled with a clock the test moves, responses encoded and decoded again.

JoinGroup and SyncGroup may park (a ``Deferred``); ``settle`` completes a parked response the way
the server does: after a notification or at its deadline.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kwire._wire import java_string_hash
from kwire.broker import BrokerState, Deferred, ManualClock, testing
from kwire.broker._state import partition_for
from kwire.broker.group import (
    COMPLETING_REBALANCE,
    EMPTY,
    GROUP_TOPIC,
    PREPARING_REBALANCE,
    STABLE,
    GroupCoordinator,
    MemoryOffsetsLog,
    group_coordinator,
)
from kwire.protocol import (
    ZERO_UUID,
    ErrorCode,
    decode_response_frame,
    encode_response_frame,
    struct_class,
)
from kwire.records import read_batches

NOW = 1_700_000_000_000
SESSION = 10_000
REBALANCE = 30_000
GROUP = "g1"


def make_state(path: Path, **config: str) -> BrokerState:
    config.setdefault("group.initial.rebalance.delay.ms", "0")
    return testing.make_state(path, config=config)


@pytest.fixture
def state(tmp_path: Path) -> Any:
    s = make_state(tmp_path / "data")
    s.create_topic("t", 4)
    yield s
    s.close()


def roundtrip_response(message: Any, version: int) -> Any:
    frame = encode_response_frame(message, version, correlation_id=7)
    return decode_response_frame(frame, message.API_KEY, version).message


def call(state: BrokerState, name: str, version: int, **fields: Any) -> Any:
    """One request through the wire and the handler: the decoded response, or a Deferred."""
    return testing.call(
        state,
        name,
        version,
        client_id="test-client",
        context={"client_address": "127.0.0.1:5555"},
        **fields,
    )


def settle(outcome: Any, version: int, final: bool = False) -> Any:
    """A parked response completed (None if it still waits)."""
    if not isinstance(outcome, Deferred):
        return outcome
    result = outcome.complete(final)
    return None if result is None else roundtrip_response(result, version)


PROTOCOL = struct_class("JoinGroupRequest", "protocols")
ASSIGNMENT = struct_class("SyncGroupRequest", "assignments")
LEAVE_MEMBER = struct_class("LeaveGroupRequest", "members")


def join(
    state: BrokerState,
    member_id: str = "",
    version: int = 9,
    instance: str | None = None,
    protocols: tuple[str, ...] = ("range",),
    session: int = SESSION,
    group: str = GROUP,
) -> Any:
    return call(
        state,
        "JoinGroup",
        version,
        group_id=group,
        session_timeout_ms=session,
        rebalance_timeout_ms=REBALANCE,
        member_id=member_id,
        group_instance_id=instance,
        protocol_type="consumer",
        protocols=[PROTOCOL(name=p, metadata=p.encode()) for p in protocols],
    )


def join_new(state: BrokerState, version: int = 9, **kw: Any) -> Any:
    """A new member's two joins (KIP-394 from v4): the second one's outcome."""
    first = settle(join(state, version=version, **kw), version)
    if version >= 4 and kw.get("instance") is None:
        assert first.error_code == ErrorCode.MEMBER_ID_REQUIRED
        assert first.member_id.startswith("test-client-")
        return join(state, first.member_id, version=version, **kw)
    return first


def sync(
    state: BrokerState,
    member_id: str,
    generation: int,
    assignments: dict[str, bytes] | None = None,
    version: int = 5,
    instance: str | None = None,
) -> Any:
    return call(
        state,
        "SyncGroup",
        version,
        group_id=GROUP,
        generation_id=generation,
        member_id=member_id,
        group_instance_id=instance,
        protocol_type="consumer",
        protocol_name="range",
        assignments=[ASSIGNMENT(member_id=m, assignment=a) for m, a in (assignments or {}).items()],
    )


def heartbeat(state: BrokerState, member_id: str, generation: int, version: int = 4) -> int:
    response = call(
        state,
        "Heartbeat",
        version,
        group_id=GROUP,
        generation_id=generation,
        member_id=member_id,
    )
    return int(response.error_code)


def advance(state: BrokerState, ms: int) -> None:
    clock = state.clock
    assert isinstance(clock, ManualClock)
    clock.advance(ms)
    state.run_tickers()


def coordinator(state: BrokerState) -> GroupCoordinator:
    return group_coordinator(state)


# --- FindCoordinator ----------------------------------------------------------------------------


@pytest.mark.parametrize("version", range(7))
def test_find_coordinator_every_version(state: BrokerState, version: int) -> None:
    if version >= 4:
        response = call(state, "FindCoordinator", version, key_type=0, coordinator_keys=["a", "b"])
        assert [c.key for c in response.coordinators] == ["a", "b"]
        assert all(c.node_id == state.node_id and c.error_code == 0 for c in response.coordinators)
        bad = call(state, "FindCoordinator", version, key_type=5, coordinator_keys=["a"])
        assert bad.coordinators[0].error_code == ErrorCode.INVALID_REQUEST
    else:
        response = call(state, "FindCoordinator", version, key="a", key_type=0)
        assert response.error_code == 0 and response.node_id == state.node_id
        assert response.port == 9092
        if version >= 1:
            txn = call(state, "FindCoordinator", version, key="tx", key_type=1)
            assert txn.error_code == 0 and txn.node_id == state.node_id
            bad = call(state, "FindCoordinator", version, key="a", key_type=7)
            assert bad.error_code == ErrorCode.INVALID_REQUEST and bad.node_id == -1
    topic = state.topics[GROUP_TOPIC]
    assert len(topic.partitions) == 50
    assert topic.configs["cleanup.policy"] == "compact"


def test_partition_for_is_javas_hash() -> None:
    # "".hashCode() == 0, "hello" == 99162322; Kafka's Utils.abs is Math.abs with
    # Integer.MIN_VALUE mapped to 0 (not a sign-bit mask: "my-group" hashes negative)
    assert java_string_hash("") == 0
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("polygenelubricants") == -(2**31)
    assert partition_for("polygenelubricants", 50) == 0
    assert partition_for("hello", 50) == 99162322 % 50
    assert java_string_hash("my-group") == -1906497762
    assert partition_for("my-group", 50) == 1906497762 % 50 == 12
    assert java_string_hash("é𝄞") == ((0xE9 * 31 + 0xD834) * 31 + 0xDD1E)


# --- join, sync, heartbeat, leave ---------------------------------------------------------------


def test_single_member_joins_syncs_and_heartbeats(state: BrokerState) -> None:
    joined = settle(join_new(state), 9)
    assert joined.error_code == 0 and joined.generation_id == 1
    assert joined.leader == joined.member_id and joined.protocol_name == "range"
    assert joined.protocol_type == "consumer"
    assert [m.member_id for m in joined.members] == [joined.member_id]
    assert joined.members[0].metadata == b"range"
    me = joined.member_id
    synced = settle(sync(state, me, 1, {me: b"assignment"}), 5)
    assert synced.error_code == 0 and synced.assignment == b"assignment"
    assert synced.protocol_name == "range"
    assert coordinator(state).groups[GROUP].state == STABLE
    assert heartbeat(state, me, 1) == 0
    assert heartbeat(state, me, 0) == ErrorCode.ILLEGAL_GENERATION
    assert heartbeat(state, "nobody", 1) == ErrorCode.UNKNOWN_MEMBER_ID


@pytest.mark.parametrize("version", range(10))
def test_join_every_version(state: BrokerState, version: int) -> None:
    joined = settle(join_new(state, version=version), version)
    assert joined.error_code == 0 and joined.generation_id == 1
    assert joined.leader == joined.member_id
    synced = settle(
        sync(state, joined.member_id, 1, {joined.member_id: b"x"}, version=min(version, 5)),
        min(version, 5),
    )
    assert synced.assignment == b"x"


def test_two_members_rebalance(state: BrokerState) -> None:
    a = settle(join_new(state), 9)
    a_id = a.member_id
    assert settle(sync(state, a_id, 1, {a_id: b"all"}), 5).assignment == b"all"
    # b joins: the group prepares a rebalance; b waits for a to rejoin
    b_wait = join_new(state)
    assert isinstance(b_wait, Deferred)
    assert coordinator(state).groups[GROUP].state == PREPARING_REBALANCE
    assert settle(b_wait, 9) is None
    assert heartbeat(state, a_id, 1) == ErrorCode.REBALANCE_IN_PROGRESS
    a2 = settle(join(state, a_id), 9)
    assert a2.error_code == 0 and a2.generation_id == 2 and a2.leader == a_id
    assert len(a2.members) == 2
    b2 = settle(b_wait, 9)
    assert b2.error_code == 0 and b2.generation_id == 2 and b2.members == []
    b_id = b2.member_id
    assert coordinator(state).groups[GROUP].state == COMPLETING_REBALANCE
    # the follower's sync waits for the leader's
    b_sync = sync(state, b_id, 2)
    assert isinstance(b_sync, Deferred) and settle(b_sync, 5) is None
    a_sync = settle(sync(state, a_id, 2, {a_id: b"A", b_id: b"B"}), 5)
    assert a_sync.assignment == b"A"
    assert settle(b_sync, 5).assignment == b"B"
    assert coordinator(state).groups[GROUP].state == STABLE
    # b leaves: a rebalance with a alone
    left = call(state, "LeaveGroup", 5, group_id=GROUP, members=[LEAVE_MEMBER(member_id=b_id)])
    assert left.error_code == 0 and left.members[0].error_code == 0
    assert heartbeat(state, a_id, 2) == ErrorCode.REBALANCE_IN_PROGRESS
    a3 = settle(join(state, a_id), 9)
    assert a3.generation_id == 3 and len(a3.members) == 1


def test_session_timeout_expires_a_member(state: BrokerState) -> None:
    a = settle(join_new(state), 9)
    settle(sync(state, a.member_id, 1, {a.member_id: b""}), 5)
    advance(state, SESSION - 100)
    assert heartbeat(state, a.member_id, 1) == 0
    advance(state, SESSION - 100)
    assert coordinator(state).groups[GROUP].members
    advance(state, 200)
    group = coordinator(state).groups[GROUP]
    assert not group.members and group.state == EMPTY and group.generation_id == 2
    assert heartbeat(state, a.member_id, 1) == ErrorCode.UNKNOWN_MEMBER_ID


def test_rebalance_timeout_drops_members_that_do_not_rejoin(state: BrokerState) -> None:
    a = settle(join_new(state), 9)
    settle(sync(state, a.member_id, 1, {a.member_id: b""}), 5)
    b_wait = join_new(state)
    for _ in range(REBALANCE // 1000):
        advance(state, 1000)
        if heartbeat(state, a.member_id, 1) != ErrorCode.REBALANCE_IN_PROGRESS:
            break  # a keeps heart-beating but never rejoins
    advance(state, 1000)
    b = settle(b_wait, 9)
    assert b.error_code == 0 and b.generation_id == 2 and b.leader == b.member_id
    assert list(coordinator(state).groups[GROUP].members) == [b.member_id]


def test_initial_rebalance_delay(tmp_path: Path) -> None:
    state = make_state(tmp_path / "d", **{"group.initial.rebalance.delay.ms": "3000"})
    try:
        first = join_new(state)
        assert isinstance(first, Deferred) and settle(first, 9) is None
        second = join_new(state)
        advance(state, 2900)
        assert settle(first, 9) is None
        advance(state, 200)  # a member joined during the delay: one more delay
        assert settle(first, 9) is None
        advance(state, 3000)
        a, b = settle(first, 9), settle(second, 9)
        assert a.generation_id == b.generation_id == 1 and a.leader == b.leader
        assert len(a.members if a.leader == a.member_id else b.members) == 2
    finally:
        state.close()


def test_join_errors(state: BrokerState) -> None:
    assert settle(join(state, "unknown-member"), 9).error_code == ErrorCode.UNKNOWN_MEMBER_ID
    assert settle(join(state, session=1000), 9).error_code == ErrorCode.INVALID_SESSION_TIMEOUT
    assert settle(join(state, session=10**8), 9).error_code == ErrorCode.INVALID_SESSION_TIMEOUT
    assert settle(join(state, group=""), 9).error_code == ErrorCode.INVALID_GROUP_ID
    a = settle(join_new(state, protocols=("range",)), 9)
    assert a.error_code == 0
    other = settle(join_new(state, version=3, protocols=("roundrobin",)), 3)
    assert other.error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL


def test_protocol_vote(state: BrokerState) -> None:
    a = settle(join_new(state, protocols=("cooperative-sticky", "range")), 9)
    settle(sync(state, a.member_id, 1, {}), 5)
    b_wait = join_new(state, protocols=("range", "cooperative-sticky"))
    c_wait = join_new(state, protocols=("range",))
    a2 = settle(join(state, a.member_id, protocols=("cooperative-sticky", "range")), 9)
    assert a2.protocol_name == "range"  # the only candidate everyone supports
    assert settle(b_wait, 9).protocol_name == settle(c_wait, 9).protocol_name == "range"


def test_static_member_rejoins_without_rebalance_and_fences_the_old_id(state: BrokerState) -> None:
    a = settle(join(state, instance="i-1"), 9)
    assert a.error_code == 0  # static members need no MEMBER_ID_REQUIRED
    settle(sync(state, a.member_id, 1, {a.member_id: b"A"}, instance="i-1"), 5)
    # the same instance restarts with no member id: a new id, same generation, no rebalance
    b_wait = join_new(state)  # a second, dynamic member first makes a rebalance ...
    a2 = settle(join(state, a.member_id, instance="i-1"), 9)
    b = settle(b_wait, 9)
    assert a2.generation_id == b.generation_id == 2
    settle(sync(state, b.member_id, 2), 5)
    settle(sync(state, a2.member_id, 2, {a2.member_id: b"A", b.member_id: b"B"}, instance="i-1"), 5)
    group = coordinator(state).groups[GROUP]
    assert group.state == STABLE
    # the leader restarts with JoinGroup v9: a new member id, no rebalance, and the leader is
    # told to skip the assignment (KIP-814); the group keeps generation 2
    restarted = settle(join(state, "", instance="i-1"), 9)
    assert restarted.error_code == 0 and restarted.member_id != a2.member_id
    assert restarted.generation_id == 2 and restarted.leader == restarted.member_id
    assert restarted.skip_assignment and len(restarted.members) == 2
    assert group.state == STABLE
    old = call(
        state,
        "Heartbeat",
        4,
        group_id=GROUP,
        generation_id=2,
        member_id=a2.member_id,
        group_instance_id="i-1",
    )
    assert old.error_code == ErrorCode.FENCED_INSTANCE_ID
    # before v9 (librdkafka sends v5) the returning leader is answered as a follower: no
    # rebalance, the leader field names its previous id, and it syncs to get its old assignment
    # (updateStaticMemberThenRebalanceOrCompleteJoin)
    older = settle(join(state, "", version=5, instance="i-1"), 5)
    assert older.error_code == 0 and older.generation_id == 2
    assert older.member_id not in (a2.member_id, restarted.member_id)
    assert older.leader == restarted.member_id and older.members == []
    assert group.state == STABLE and group.generation_id == 2
    assert group.leader_id == older.member_id
    assert heartbeat(state, b.member_id, 2) == 0  # the other member sees nothing
    synced = settle(sync(state, older.member_id, 2, instance="i-1"), 5)
    assert synced.error_code == 0 and synced.assignment == b"A"
    left = call(
        state,
        "LeaveGroup",
        4,
        group_id=GROUP,
        members=[LEAVE_MEMBER(member_id="", group_instance_id="nope")],
    )
    assert left.members[0].error_code == ErrorCode.UNKNOWN_MEMBER_ID


def test_static_follower_restart_keeps_generation(state: BrokerState) -> None:
    a = settle(join_new(state), 9)
    settle(sync(state, a.member_id, 1, {}), 5)
    f_wait = join(state, instance="f")
    a2 = settle(join(state, a.member_id), 9)
    f = settle(f_wait, 9)
    f_sync = sync(state, f.member_id, 2, instance="f")
    settle(sync(state, a2.member_id, 2, {f.member_id: b"F"}), 5)
    assert settle(f_sync, 5).assignment == b"F"
    again = settle(join(state, "", instance="f"), 9)
    assert again.error_code == 0 and again.generation_id == 2 and again.member_id != f.member_id
    assert coordinator(state).groups[GROUP].state == STABLE
    synced = settle(sync(state, again.member_id, 2, instance="f"), 5)
    assert synced.assignment == b"F"


@pytest.mark.parametrize("version", range(6))
def test_leave_every_version(state: BrokerState, version: int) -> None:
    a = settle(join_new(state), 9)
    if version >= 3:
        left = call(
            state,
            "LeaveGroup",
            version,
            group_id=GROUP,
            members=[LEAVE_MEMBER(member_id=a.member_id), LEAVE_MEMBER(member_id="x")],
        )
        assert [m.error_code for m in left.members] == [0, ErrorCode.UNKNOWN_MEMBER_ID]
    else:
        left = call(state, "LeaveGroup", version, group_id=GROUP, member_id=a.member_id)
        assert left.error_code == 0
    assert coordinator(state).groups[GROUP].state == EMPTY


def test_describe_list_delete(state: BrokerState) -> None:
    a = settle(join_new(state), 9)
    settle(sync(state, a.member_id, 1, {a.member_id: b"A"}), 5)
    for version in range(7):
        described = call(state, "DescribeGroups", version, groups=[GROUP, "missing"])
        group, missing = described.groups
        assert group.group_state == "Stable" and group.protocol_data == "range"
        assert group.members[0].member_assignment == b"A"
        assert group.members[0].client_host == "/127.0.0.1"
        if version >= 6:
            assert missing.error_code == ErrorCode.GROUP_ID_NOT_FOUND
        else:
            assert missing.group_state == "Dead" and missing.error_code == 0
    for version in range(6):
        fields: dict[str, Any] = {}
        if version >= 4:
            fields["states_filter"] = ["stable"]
        if version >= 5:
            fields["types_filter"] = ["classic"]
        listed = call(state, "ListGroups", version, **fields)
        assert [(g.group_id, g.protocol_type) for g in listed.groups] == [(GROUP, "consumer")]
    assert call(state, "ListGroups", 4, states_filter=["Empty"]).groups == []
    deleted = call(state, "DeleteGroups", 2, groups_names=[GROUP, "missing"])
    assert [r.error_code for r in deleted.results] == [
        ErrorCode.NON_EMPTY_GROUP,
        ErrorCode.GROUP_ID_NOT_FOUND,
    ]
    call(state, "LeaveGroup", 5, group_id=GROUP, members=[LEAVE_MEMBER(member_id=a.member_id)])
    deleted = call(state, "DeleteGroups", 0, groups_names=[GROUP])
    assert deleted.results[0].error_code == 0
    assert GROUP not in coordinator(state).groups


# --- offsets ------------------------------------------------------------------------------------

COMMIT_TOPIC = struct_class("OffsetCommitRequest", "topics")
COMMIT_PARTITION = struct_class("OffsetCommitRequest", "topics", "partitions")
FETCH_TOPIC = struct_class("OffsetFetchRequest", "topics")
FETCH_GROUP = struct_class("OffsetFetchRequest", "groups")
FETCH_GROUP_TOPIC = struct_class("OffsetFetchRequest", "groups", "topics")


def commit(
    state: BrokerState,
    version: int,
    offsets: dict[int, int],
    generation: int = -1,
    member_id: str = "",
    metadata: str = "m",
    group: str = GROUP,
    instance: str | None = None,
) -> list[int]:
    topic = state.topics["t"]
    response = call(
        state,
        "OffsetCommit",
        version,
        group_id=group,
        generation_id_or_member_epoch=generation,
        member_id=member_id,
        group_instance_id=instance,
        retention_time_ms=-1,
        topics=[
            COMMIT_TOPIC(
                name="t" if version < 10 else "",
                topic_id=topic.topic_id if version >= 10 else ZERO_UUID,
                partitions=[
                    COMMIT_PARTITION(
                        partition_index=p,
                        committed_offset=o,
                        committed_leader_epoch=3,
                        committed_metadata=metadata,
                    )
                    for p, o in offsets.items()
                ],
            )
        ],
    )
    return [p.error_code for t in response.topics for p in t.partitions]


def fetch(
    state: BrokerState, version: int, partitions: list[int] | None, group: str = GROUP
) -> dict[int, tuple[int, int, str, int]]:
    topic = state.topics["t"]
    if version >= 8:
        topics = (
            None
            if partitions is None
            else [
                FETCH_GROUP_TOPIC(
                    name="t" if version < 10 else "",
                    topic_id=topic.topic_id if version >= 10 else ZERO_UUID,
                    partition_indexes=partitions,
                )
            ]
        )
        response = call(
            state,
            "OffsetFetch",
            version,
            groups=[FETCH_GROUP(group_id=group, member_id=None, member_epoch=-1, topics=topics)],
        )
        (g,) = response.groups
        rows = [p for t in g.topics for p in t.partitions]
    else:
        topics = (
            None if partitions is None else [FETCH_TOPIC(name="t", partition_indexes=partitions)]
        )
        response = call(state, "OffsetFetch", version, group_id=group, topics=topics)
        rows = [p for t in response.topics for p in t.partitions]
    return {
        p.partition_index: (p.committed_offset, p.committed_leader_epoch, p.metadata, p.error_code)
        for p in rows
    }


@pytest.mark.parametrize("version", range(11))
def test_offset_commit_and_fetch_every_version(state: BrokerState, version: int) -> None:
    assert commit(state, version, {0: 10, 1: 20}) == [0, 0]
    epoch = 3 if version >= 6 else -1
    for fetch_version in (1, 5, 7, 8, 10):
        got = fetch(state, fetch_version, [0, 1, 2])
        fetched_epoch = epoch if fetch_version >= 5 else -1
        assert got[0] == (10, fetched_epoch, "m", 0)
        assert got[1] == (20, fetched_epoch, "m", 0)
        assert got[2] == (-1, -1, "", 0)
    if version >= 2:
        everything = fetch(state, 8 if version >= 8 else 2, None)
        assert sorted(everything) == [0, 1]


@pytest.mark.parametrize("version", range(11))
def test_offset_fetch_every_version(state: BrokerState, version: int) -> None:
    commit(state, 2, {3: 7})
    got = fetch(state, version, [3, 0])
    assert got[3][0] == 7 and got[0][0] == -1


def test_offset_commit_checks(state: BrokerState) -> None:
    assert commit(state, 8, {0: 1}, metadata="x" * 4097) == [ErrorCode.OFFSET_METADATA_TOO_LARGE]
    assert commit(state, 8, {9: 1}) == [ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]
    # a group that does not exist with a generation: ILLEGAL_GENERATION, GROUP_ID_NOT_FOUND v9+
    assert commit(state, 8, {0: 1}, generation=1, member_id="m", group="nope") == [
        ErrorCode.ILLEGAL_GENERATION
    ]
    assert commit(state, 9, {0: 1}, generation=1, member_id="m", group="nope") == [
        ErrorCode.GROUP_ID_NOT_FOUND
    ]
    a = settle(join_new(state), 9)
    # CompletingRebalance: REBALANCE_IN_PROGRESS
    assert commit(state, 8, {0: 1}, generation=1, member_id=a.member_id) == [
        ErrorCode.REBALANCE_IN_PROGRESS
    ]
    settle(sync(state, a.member_id, 1, {}), 5)
    assert commit(state, 8, {0: 1}, generation=1, member_id=a.member_id) == [0]
    assert commit(state, 8, {0: 1}, generation=2, member_id=a.member_id) == [
        ErrorCode.ILLEGAL_GENERATION
    ]
    assert commit(state, 8, {0: 1}, generation=1, member_id="x") == [ErrorCode.UNKNOWN_MEMBER_ID]
    # a non-empty group refuses a simple commit
    assert commit(state, 8, {0: 1}) == [ErrorCode.UNKNOWN_MEMBER_ID]


TXN_TOPIC = struct_class("TxnOffsetCommitRequest", "topics")
TXN_PARTITION = struct_class("TxnOffsetCommitRequest", "topics", "partitions")


def test_txn_offsets_are_unstable_until_the_marker(state: BrokerState) -> None:
    response = call(
        state,
        "TxnOffsetCommit",
        3,
        transactional_id="tx",
        group_id=GROUP,
        producer_id=4000,
        producer_epoch=0,
        generation_id=-1,
        member_id="",
        topics=[
            TXN_TOPIC(
                name="t",
                partitions=[
                    TXN_PARTITION(partition_index=0, committed_offset=5, committed_metadata="")
                ],
            )
        ],
    )
    assert response.topics[0].partitions[0].error_code == 0
    stable = call(
        state,
        "OffsetFetch",
        7,
        group_id=GROUP,
        topics=[FETCH_TOPIC(name="t", partition_indexes=[0])],
        require_stable=True,
    )
    assert stable.topics[0].partitions[0].error_code == ErrorCode.UNSTABLE_OFFSET_COMMIT
    assert fetch(state, 7, [0])[0][0] == -1  # not visible before the commit
    coordinator(state).complete_txn(4000, True)
    assert fetch(state, 7, [0])[0][0] == 5


def test_offset_delete(state: BrokerState) -> None:
    commit(state, 8, {0: 1, 1: 2})
    topic_cls = struct_class("OffsetDeleteRequest", "topics")
    part_cls = struct_class("OffsetDeleteRequest", "topics", "partitions")
    response = call(
        state,
        "OffsetDelete",
        0,
        group_id=GROUP,
        topics=[topic_cls(name="t", partitions=[part_cls(partition_index=0)])],
    )
    assert response.error_code == 0 and response.topics[0].partitions[0].error_code == 0
    assert fetch(state, 8, [0, 1]) == {0: (-1, -1, "", 0), 1: (2, 3, "m", 0)}
    missing = call(state, "OffsetDelete", 0, group_id="nope", topics=[])
    assert missing.error_code == ErrorCode.GROUP_ID_NOT_FOUND


# --- persistence --------------------------------------------------------------------------------


def test_records_are_kafkas_and_survive_a_restart(tmp_path: Path) -> None:
    state = make_state(tmp_path / "d")
    state.create_topic("t", 4)
    a = settle(join_new(state), 9)
    settle(sync(state, a.member_id, 1, {a.member_id: b"A"}), 5)
    assert commit(state, 8, {0: 42, 1: 43}, generation=1, member_id=a.member_id) == [0, 0]
    partition = state.partition(GROUP_TOPIC, partition_for(GROUP, 50))
    assert partition is not None and partition.high_watermark > 0
    data = partition.log.read(0, 1 << 20).read_bytes()
    records = [r for b in read_batches(data) for r in b]
    key_versions = [int.from_bytes(bytes(r.key or b"")[:2], "big") for r in records]
    assert key_versions == [2, 1, 1]  # GroupMetadataKey v2 after the sync, then offsets
    value_versions = [int.from_bytes(bytes(r.value or b"")[:2], "big") for r in records]
    assert value_versions == [3, 3, 3]
    state.close()
    again = make_state(tmp_path / "d")
    try:
        assert fetch(again, 8, [0, 1]) == {0: (42, 3, "m", 0), 1: (43, 3, "m", 0)}
        group = coordinator(again).groups[GROUP]
        assert group.state == STABLE and group.generation_id == 1
        assert list(group.members) == [a.member_id]
        assert heartbeat(again, a.member_id, 1) == 0
        # the group is deleted once empty: tombstones, and nothing comes back
        call(again, "LeaveGroup", 5, group_id=GROUP, members=[LEAVE_MEMBER(member_id=a.member_id)])
        assert call(again, "DeleteGroups", 2, groups_names=[GROUP]).results[0].error_code == 0
    finally:
        again.close()
    third = make_state(tmp_path / "d")
    try:
        assert GROUP not in coordinator(third).groups
        assert fetch(third, 8, [0]) == {0: (-1, -1, "", 0)}
    finally:
        third.close()


# --- a property: many members joining, leaving and timing out -----------------------------------

ACTIONS = st.lists(
    st.tuples(
        st.sampled_from(["join", "rejoin", "sync", "leave", "heartbeat", "wait"]),
        st.integers(0, 5),
        st.integers(0, 12_000),
    ),
    max_size=40,
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(actions=ACTIONS)
def test_group_invariants(tmp_path_factory: pytest.TempPathFactory, actions: list[Any]) -> None:
    """One leader who is a member, generations never go back, a Stable group's members all
    have their assignment, parked responses answer consistently; and what the coordinator wrote
    (through its runtime, to an in-memory ``__consumer_offsets``) loads back as the same group."""
    config = {"group.initial.rebalance.delay.ms": "0"}
    log = MemoryOffsetsLog()
    coord = GroupCoordinator(None, config=config, log=log)
    now = NOW
    members: list[str] = []
    parked: list[Any] = []
    last_generation = 0
    for action, who, ms in actions:
        group = coord.groups.get(GROUP)
        if action == "join":
            w = coord.join(GROUP, "", None, "consumer", [("range", b"")], SESSION, REBALANCE,
                           "c", "/h", True, now)  # fmt: skip
            assert w.done
            w = coord.join(GROUP, w.result.member_id, None, "consumer", [("range", b"")],
                           SESSION, REBALANCE, "c", "/h", True, now)  # fmt: skip
            parked.append(w)
        elif action == "rejoin" and group and group.members:
            mid = list(group.members)[who % len(group.members)]
            parked.append(coord.join(GROUP, mid, None, "consumer", [("range", b"")], SESSION,
                                     REBALANCE, "c", "/h", True, now))  # fmt: skip
        elif action == "sync" and group and group.members:
            mid = list(group.members)[who % len(group.members)]
            assignments = [(m, m.encode()) for m in group.members] if mid == group.leader_id else []
            parked.append(coord.sync(GROUP, group.generation_id, mid, None, None, None,
                                     assignments, now))  # fmt: skip
        elif action == "leave" and group and group.members:
            mid = list(group.members)[who % len(group.members)]
            coord.leave(GROUP, [(mid, None)], now)
        elif action == "heartbeat" and group and group.members:
            mid = list(group.members)[who % len(group.members)]
            coord.heartbeat(GROUP, group.generation_id, mid, None, now)
        elif action == "wait":
            now += ms
            coord.tick(now)
        group = coord.groups.get(GROUP)
        if group is None:
            continue
        assert group.generation_id >= last_generation
        last_generation = group.generation_id
        if group.state in (STABLE, COMPLETING_REBALANCE):
            assert group.leader_id in group.members
        if group.state == STABLE:
            for m in group.members.values():
                assert m.assignment == m.member_id.encode()
                assert m.join_waiter is None and m.sync_waiter is None
        if group.state == EMPTY:
            assert not group.members
        for w in parked:
            if w.done and w.result is not None and hasattr(w.result, "generation_id"):
                assert w.result.generation_id <= group.generation_id
        members = list(group.members)
    assert len(members) == len(set(members))
    group = coord.groups.get(GROUP)
    if group is not None and group.generation_id > 0 and group.state in (STABLE, EMPTY):
        again = GroupCoordinator(None, config=config, log=log)
        again.load()
        loaded = again.groups[GROUP]
        assert loaded.state == group.state
        assert (loaded.generation_id, loaded.protocol_type, loaded.protocol_name) == (
            group.generation_id,
            group.protocol_type,
            group.protocol_name,
        )
        assert {m.member_id: m.assignment for m in loaded.members.values()} == {
            m.member_id: m.assignment for m in group.members.values()
        }
        if group.state == STABLE:
            assert loaded.leader_id == group.leader_id


def test_transactional_offsets_replay_with_their_markers(tmp_path: Path) -> None:
    """Staged offsets are written in transactional batches; at start the markers decide."""
    from kwire.broker.group import OffsetAndMetadata
    from kwire.records import AppendOrigin, build_end_txn_marker

    state = make_state(tmp_path / "d")
    state.create_topic("t", 4)
    coord = coordinator(state)
    coord.stage_txn_offsets(GROUP, 7001, 0, {("t", 0): OffsetAndMetadata(11, -1, "", NOW)})
    coord.stage_txn_offsets(GROUP, 7002, 0, {("t", 1): OffsetAndMetadata(22, -1, "", NOW)})
    coord.stage_txn_offsets(GROUP, 7003, 0, {("t", 2): OffsetAndMetadata(33, -1, "", NOW)})
    partition = state.partition(GROUP_TOPIC, partition_for(GROUP, 50))
    assert partition is not None
    for pid, commit_it in ((7001, True), (7002, False)):
        marker = build_end_txn_marker(
            commit_it, coordinator_epoch=0, producer_id=pid, producer_epoch=0, timestamp=NOW
        )
        partition.log.append_as_leader(marker, now_ms=NOW, origin=AppendOrigin.COORDINATOR)
        coord.complete_txn(pid, commit_it)
    partition.log.high_watermark = partition.log.log_end_offset
    assert fetch(state, 8, [0, 1]) == {0: (11, -1, "", 0), 1: (-1, -1, "", 0)}
    state.close()
    again = make_state(tmp_path / "d")
    try:
        assert fetch(again, 8, [0, 1]) == {0: (11, -1, "", 0), 1: (-1, -1, "", 0)}
        # 7003's transaction is still open: its offset is pending, unstable for require_stable
        assert 7003 in coordinator(again).groups[GROUP].pending_txn
    finally:
        again.close()


def test_deleting_a_topic_deletes_its_offsets_in_every_group(tmp_path: Path) -> None:
    """OffsetMetadataManager.onPartitionsDeleted: committed offsets of the deleted partitions
    and a pending transactional one go (tombstones, so a restart agrees); others stay."""
    from kwire.broker.group import OffsetAndMetadata

    state = make_state(tmp_path / "d")
    state.create_topic("t", 2)
    state.create_topic("u", 1)
    coord = coordinator(state)
    for group_id in ("a", "b"):
        coord.groups[group_id] = coord.loaded_group(group_id, NOW)
        coord.commit_offsets(
            coord.groups[group_id],
            {
                ("t", 0): OffsetAndMetadata(5, -1, "", NOW),
                ("u", 0): OffsetAndMetadata(7, -1, "", NOW),
            },
            NOW,
        )
    coord.stage_txn_offsets("a", 7001, 0, {("t", 1): OffsetAndMetadata(9, -1, "", NOW)})
    state.delete_topic("t")
    coord.complete_txn(7001, True)  # its offset of the deleted t-1 is not applied

    def offsets(c: GroupCoordinator) -> dict[str, dict[tuple[str, int], int]]:
        return {g: {tp: om.offset for tp, om in c.groups[g].offsets.items()} for g in ("a", "b")}

    assert offsets(coord) == {"a": {("u", 0): 7}, "b": {("u", 0): 7}}
    state.close()
    again = make_state(tmp_path / "d")
    try:
        assert offsets(coordinator(again)) == {"a": {("u", 0): 7}, "b": {("u", 0): 7}}
    finally:
        again.close()


# --- KIP-345 static members: every path of a returning instance ---------------------------------


def heartbeat_as(state: BrokerState, member_id: str, generation: int, instance: str | None) -> int:
    response = call(
        state,
        "Heartbeat",
        4,
        group_id=GROUP,
        generation_id=generation,
        member_id=member_id,
        group_instance_id=instance,
    )
    return int(response.error_code)


def static_pair(state: BrokerState, join_version: int = 5) -> tuple[Any, Any]:
    """Two static members, "l" the leader, Stable at generation 2 with assignments L and F."""
    first = settle(join(state, version=join_version, instance="l"), join_version)
    settle(sync(state, first.member_id, 1, {first.member_id: b"L"}, instance="l"), 5)
    f_wait = join(state, version=join_version, instance="f")
    leader = settle(join(state, first.member_id, version=join_version, instance="l"), join_version)
    follower = settle(f_wait, join_version)
    assert leader.leader == leader.member_id and follower.generation_id == 2
    f_sync = sync(state, follower.member_id, 2, instance="f")
    assignments = {leader.member_id: b"L", follower.member_id: b"F"}
    settle(sync(state, leader.member_id, 2, assignments, instance="l"), 5)
    assert settle(f_sync, 5).assignment == b"F"
    return leader, follower


@pytest.mark.parametrize("version", [5, 8])
def test_static_leader_restart_before_v9_keeps_the_group_stable(
    state: BrokerState, version: int
) -> None:
    """Issue 21 item 9: librdkafka's leader closes and returns with its instance id (JoinGroup
    v5): Kafka keeps the group Stable at the same generation; the follower's heartbeat is fine."""
    leader, follower = static_pair(state, version)
    back = settle(join(state, "", version=version, instance="l"), version)
    assert back.error_code == 0 and back.generation_id == 2 and back.members == []
    assert back.member_id != leader.member_id and back.leader == leader.member_id
    group = coordinator(state).groups[GROUP]
    assert group.state == STABLE and group.generation_id == 2
    assert heartbeat_as(state, follower.member_id, 2, "f") == 0
    synced = settle(sync(state, back.member_id, 2, instance="l"), 5)
    assert synced.error_code == 0 and synced.assignment == b"L"
    assert heartbeat_as(state, back.member_id, 2, "l") == 0
    # the previous id of the instance is fenced everywhere (ClassicGroup.validateMember)
    assert heartbeat_as(state, leader.member_id, 2, "l") == ErrorCode.FENCED_INSTANCE_ID
    old_sync = settle(sync(state, leader.member_id, 2, instance="l"), 5)
    assert old_sync.error_code == ErrorCode.FENCED_INSTANCE_ID
    old_commit = commit(state, 8, {0: 1}, generation=2, member_id=leader.member_id, instance="l")
    assert old_commit == [ErrorCode.FENCED_INSTANCE_ID]
    old_join = settle(join(state, leader.member_id, version=version, instance="l"), version)
    assert old_join.error_code == ErrorCode.FENCED_INSTANCE_ID
    assert group.state == STABLE and group.generation_id == 2


def test_static_leader_restart_v9_skips_the_assignment(state: BrokerState) -> None:
    _leader, follower = static_pair(state, 9)
    back = settle(join(state, "", version=9, instance="l"), 9)
    assert back.error_code == 0 and back.skip_assignment and back.generation_id == 2
    assert back.leader == back.member_id and len(back.members) == 2
    assert heartbeat_as(state, follower.member_id, 2, "f") == 0
    # a returning follower is not told to skip
    again = settle(join(state, "", version=9, instance="f"), 9)
    assert again.error_code == 0 and not again.skip_assignment and again.members == []
    assert again.leader == back.member_id
    assert settle(sync(state, again.member_id, 2, instance="f"), 5).assignment == b"F"


def test_static_member_returning_during_a_rebalance(state: BrokerState) -> None:
    leader, follower = static_pair(state)
    # CompletingRebalance: the leader may have assigned to the old id: a new generation
    b_wait = join_new(state)
    leader_wait = join(state, leader.member_id, version=5, instance="l")
    f_wait = join(state, follower.member_id, version=5, instance="f")
    b = settle(b_wait, 9)
    assert settle(leader_wait, 5).generation_id == settle(f_wait, 5).generation_id == 3
    assert coordinator(state).groups[GROUP].state == COMPLETING_REBALANCE
    back_wait = join(state, "", version=5, instance="f")
    assert isinstance(back_wait, Deferred)
    assert coordinator(state).groups[GROUP].state == PREPARING_REBALANCE
    # PreparingRebalance: the returning member takes the old one's place in the join
    settle(join(state, b.member_id), 9)
    leader_again = settle(join(state, leader.member_id, version=5, instance="l"), 5)
    back = settle(back_wait, 5)
    assert back.error_code == 0 and back.generation_id == leader_again.generation_id == 4
    group = coordinator(state).groups[GROUP]
    assert len(group.members) == 3 and group.static_members["f"] == back.member_id


def test_leave_group_by_instance_id(state: BrokerState) -> None:
    """The admin client's removeMembersFromConsumerGroup: LeaveGroup v3+ with no member id."""
    leader, follower = static_pair(state)
    left = call(
        state,
        "LeaveGroup",
        3,
        group_id=GROUP,
        members=[
            LEAVE_MEMBER(member_id="", group_instance_id="f"),
            LEAVE_MEMBER(member_id="", group_instance_id="nope"),
            LEAVE_MEMBER(member_id="other", group_instance_id="l"),
        ],
    )
    assert [m.error_code for m in left.members] == [
        0,
        ErrorCode.UNKNOWN_MEMBER_ID,
        ErrorCode.FENCED_INSTANCE_ID,
    ]
    # each answer echoes the request's identity: Java's admin matches its removals by it
    assert [(m.member_id, m.group_instance_id) for m in left.members] == [
        ("", "f"),
        ("", "nope"),
        ("other", "l"),
    ]
    group = coordinator(state).groups[GROUP]
    assert list(group.members) == [leader.member_id] and "f" not in group.static_members
    assert group.state == PREPARING_REBALANCE
    assert heartbeat_as(state, follower.member_id, 2, "f") == ErrorCode.UNKNOWN_MEMBER_ID


def test_unknown_instance_id_is_an_unknown_member(state: BrokerState) -> None:
    """``ClassicGroup.validateMember``: an instance id the group does not know is
    UNKNOWN_MEMBER_ID even with a member id it knows."""
    a = settle(join_new(state), 9)
    settle(sync(state, a.member_id, 1, {}), 5)
    assert heartbeat_as(state, a.member_id, 1, "stranger") == ErrorCode.UNKNOWN_MEMBER_ID


# --- item 10: Kafka's order of checks, and timers at their deadline -----------------------------


def completing_pair(state: BrokerState) -> tuple[Any, Any]:
    """a (leader) and b, the group in CompletingRebalance at generation 2."""
    a = settle(join_new(state), 9)
    settle(sync(state, a.member_id, 1, {}), 5)
    b_wait = join_new(state)
    a2 = settle(join(state, a.member_id), 9)
    b = settle(b_wait, 9)
    assert a2.generation_id == b.generation_id == 2
    assert coordinator(state).groups[GROUP].state == COMPLETING_REBALANCE
    return a2, b


def test_offset_commit_checks_member_and_generation_before_the_state(state: BrokerState) -> None:
    """``ClassicGroup.validateOffsetCommit``: member, generation, then CompletingRebalance."""
    a, _b = completing_pair(state)
    assert commit(state, 8, {0: 1}, generation=1, member_id=a.member_id) == [
        ErrorCode.ILLEGAL_GENERATION
    ]
    assert commit(state, 8, {0: 1}, generation=2, member_id="x") == [ErrorCode.UNKNOWN_MEMBER_ID]
    assert commit(state, 8, {0: 1}, generation=2, member_id=a.member_id) == [
        ErrorCode.REBALANCE_IN_PROGRESS
    ]
    assert commit(state, 8, {0: 1}) == [ErrorCode.UNKNOWN_MEMBER_ID]  # a simple commit


def txn_commit(state: BrokerState, version: int, generation: int = -1, member_id: str = "") -> int:
    response = call(
        state,
        "TxnOffsetCommit",
        version,
        transactional_id="tx",
        group_id=GROUP,
        producer_id=4000,
        producer_epoch=0,
        generation_id=generation,
        member_id=member_id,
        topics=[
            TXN_TOPIC(
                name="t",
                partitions=[
                    TXN_PARTITION(partition_index=0, committed_offset=5, committed_metadata="")
                ],
            )
        ],
    )
    return int(response.topics[0].partitions[0].error_code)


def test_txn_offset_commit_checks(state: BrokerState) -> None:
    """Transactional commits are not held by the group's state, and one without a member id
    and generation (v0-2, or a producer outside the group) is accepted in any state."""
    a, _b = completing_pair(state)
    assert txn_commit(state, 2) == 0
    assert txn_commit(state, 3) == 0
    assert txn_commit(state, 3, generation=2, member_id=a.member_id) == 0
    assert txn_commit(state, 3, generation=1, member_id=a.member_id) == (
        ErrorCode.ILLEGAL_GENERATION
    )
    assert txn_commit(state, 3, generation=2, member_id="x") == ErrorCode.UNKNOWN_MEMBER_ID


def test_session_expires_at_its_deadline_not_at_the_next_tick(state: BrokerState) -> None:
    """Kafka runs a timer per member: a request just after the deadline finds it gone even
    when the broker's housekeeping tick has not run yet."""
    a = settle(join_new(state), 9)
    settle(sync(state, a.member_id, 1, {}), 5)
    clock = state.clock
    assert isinstance(clock, ManualClock)
    clock.advance(SESSION)  # no tick
    deleted = call(state, "DeleteGroups", 2, groups_names=[GROUP])
    assert deleted.results[0].error_code == 0


@pytest.mark.parametrize("request_name", ["Heartbeat", "DescribeGroups", "OffsetCommit"])
def test_requests_after_the_deadline_see_the_member_expired(
    state: BrokerState, request_name: str
) -> None:
    a = settle(join_new(state), 9)
    settle(sync(state, a.member_id, 1, {}), 5)
    clock = state.clock
    assert isinstance(clock, ManualClock)
    clock.advance(SESSION + 1)  # no tick
    if request_name == "Heartbeat":
        assert heartbeat(state, a.member_id, 1) == ErrorCode.UNKNOWN_MEMBER_ID
    elif request_name == "DescribeGroups":
        described = call(state, "DescribeGroups", 5, groups=[GROUP])
        assert described.groups[0].group_state == EMPTY and described.groups[0].members == []
    else:
        assert commit(state, 8, {0: 1}, generation=1, member_id=a.member_id) == [
            ErrorCode.UNKNOWN_MEMBER_ID
        ]


def test_request_level_checks_before_the_coordinator(state: BrokerState) -> None:
    """``GroupCoordinatorService``: an empty group id is INVALID_GROUP_ID for SyncGroup,
    Heartbeat, LeaveGroup and TxnOffsetCommit; a LeaveGroup of a group that does not exist
    answers UNKNOWN_MEMBER_ID per member; DeleteGroups looks the empty id up like any other."""
    synced = settle(
        call(
            state,
            "SyncGroup",
            5,
            group_id="",
            generation_id=1,
            member_id="m",
            assignments=[],
            protocol_type="consumer",
            protocol_name="range",
        ),
        5,
    )
    assert synced.error_code == ErrorCode.INVALID_GROUP_ID
    beat = call(state, "Heartbeat", 4, group_id="", generation_id=1, member_id="m")
    assert beat.error_code == ErrorCode.INVALID_GROUP_ID
    left = call(state, "LeaveGroup", 5, group_id="", members=[LEAVE_MEMBER(member_id="m")])
    assert left.error_code == ErrorCode.INVALID_GROUP_ID
    response = call(
        state,
        "TxnOffsetCommit",
        3,
        transactional_id="tx",
        group_id="",
        producer_id=4000,
        producer_epoch=0,
        generation_id=-1,
        member_id="",
        topics=[
            TXN_TOPIC(
                name="t",
                partitions=[
                    TXN_PARTITION(partition_index=0, committed_offset=5, committed_metadata="")
                ],
            )
        ],
    )
    assert response.topics[0].partitions[0].error_code == ErrorCode.INVALID_GROUP_ID
    gone = call(
        state,
        "LeaveGroup",
        4,
        group_id="nope",
        members=[LEAVE_MEMBER(member_id="m1"), LEAVE_MEMBER(member_id="", group_instance_id="i")],
    )
    assert gone.error_code == 0
    assert [(m.member_id, m.group_instance_id, m.error_code) for m in gone.members] == [
        ("m1", None, ErrorCode.UNKNOWN_MEMBER_ID),
        ("", "i", ErrorCode.UNKNOWN_MEMBER_ID),
    ]
    old = call(state, "LeaveGroup", 2, group_id="nope", member_id="m1")
    assert old.error_code == ErrorCode.UNKNOWN_MEMBER_ID
    deleted = call(state, "DeleteGroups", 2, groups_names=["", "nope", "nope"])
    assert [(r.group_id, r.error_code) for r in deleted.results] == [
        ("", ErrorCode.GROUP_ID_NOT_FOUND),
        ("nope", ErrorCode.GROUP_ID_NOT_FOUND),
    ]


def test_a_group_error_wins_over_a_too_large_metadata(state: BrokerState) -> None:
    """``OffsetMetadataManager.commitOffset`` checks the metadata size after the group: a commit
    the group refuses answers the group's error on every partition it would have written."""
    a = settle(join_new(state), 9)
    settle(sync(state, a.member_id, 1, {}), 5)
    refused = commit(state, 8, {0: 1}, generation=7, member_id=a.member_id, metadata="x" * 4097)
    assert refused == [ErrorCode.ILLEGAL_GENERATION]
    accepted = commit(state, 8, {0: 1}, generation=1, member_id=a.member_id, metadata="x" * 4097)
    assert accepted == [ErrorCode.OFFSET_METADATA_TOO_LARGE]


def test_group_max_size_is_checked_first(tmp_path: Path) -> None:
    """``acceptJoiningMember`` comes before the protocol check (GROUP_MAX_SIZE_REACHED, not
    INCONSISTENT_GROUP_PROTOCOL); in PreparingRebalance it counts the members awaiting a join."""
    state = make_state(tmp_path / "d", **{"group.max.size": "1"})
    state.create_topic("t", 1)
    try:
        a = settle(join_new(state), 9)
        settle(sync(state, a.member_id, 1, {}), 5)
        other = settle(join(state, version=3, protocols=("roundrobin",)), 3)
        assert other.error_code == ErrorCode.GROUP_MAX_SIZE_REACHED and other.member_id == ""
    finally:
        state.close()


def test_a_member_that_never_syncs_is_removed_after_the_rebalance_timeout(
    state: BrokerState,
) -> None:
    """KIP-814's pending sync (``expirePendingSync``): the leader syncs, the group is Stable, a
    follower that keeps heart-beating but never sends SyncGroup is removed at the rebalance
    timeout and the group rebalances; a follower that syncs in time stays."""
    a, b = completing_pair(state)
    settle(sync(state, a.member_id, 2, {a.member_id: b"A", b.member_id: b"B"}), 5)
    group = coordinator(state).groups[GROUP]
    assert group.state == STABLE
    for _ in range(REBALANCE // 2000 - 1):
        advance(state, 2000)
        assert heartbeat(state, a.member_id, 2) == 0
        assert heartbeat(state, b.member_id, 2) == 0
    advance(state, 2000)  # the rebalance timeout since the join completed
    assert b.member_id not in group.members and group.state == PREPARING_REBALANCE
    assert heartbeat(state, b.member_id, 2) == ErrorCode.UNKNOWN_MEMBER_ID
    # the same, with the follower syncing after the group became Stable: nobody is removed
    rejoined = settle(join(state, a.member_id), 9)
    c_wait = join_new(state)
    a3 = settle(join(state, rejoined.member_id), 9)
    c = settle(c_wait, 9)
    settle(sync(state, a3.member_id, a3.generation_id, {c.member_id: b"C"}), 5)
    assert settle(sync(state, c.member_id, c.generation_id), 5).assignment == b"C"
    for _ in range(REBALANCE // 2000 + 1):
        advance(state, 2000)
        assert heartbeat(state, a3.member_id, a3.generation_id) == 0
        assert heartbeat(state, c.member_id, c.generation_id) == 0
    assert set(group.members) == {a3.member_id, c.member_id} and group.state == STABLE
