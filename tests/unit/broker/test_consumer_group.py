"""KIP-848 consumer groups through the wire: ConsumerGroupHeartbeat / ConsumerGroupDescribe and
the offset and group APIs that see them, with a clock the test moves.

``Consumer`` plays a client: it heartbeats with the partitions it owns, drops what a response
no longer assigns at once and takes what it gives, as Kafka's consumer reconciles.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kwire.broker import BrokerState, Deferred, ManualClock, personality, testing
from kwire.broker._apis import implemented_versions
from kwire.broker._releases import group_version_features
from kwire.broker.group import (
    ASSIGNING,
    EMPTY,
    GROUP_TOPIC,
    RECONCILING,
    STABLE,
    ConsumerGroup,
    group_coordinator,
    range_assign,
    uniform_assign,
)
from kwire.protocol import (
    ZERO_UUID,
    ErrorCode,
    message_class,
    struct_class,
)
from kwire.records import read_batches

NOW = 1_700_000_000_000
GROUP = "cg"
SESSION = 45_000
REBALANCE = 30_000

OWNED = struct_class("ConsumerGroupHeartbeatRequest", "topic_partitions")
COMMIT_TOPIC = struct_class("OffsetCommitRequest", "topics")
COMMIT_PARTITION = struct_class("OffsetCommitRequest", "topics", "partitions")
FETCH_GROUP = struct_class("OffsetFetchRequest", "groups")
FETCH_GROUP_TOPIC = struct_class("OffsetFetchRequest", "groups", "topics")


def make_state(path: Path, release: str = "4.3", **config: str) -> BrokerState:
    config.setdefault("group.initial.rebalance.delay.ms", "0")
    return testing.make_state(path, release=release, config=config)


@pytest.fixture
def state(tmp_path: Path) -> Any:
    s = make_state(tmp_path / "data")
    s.create_topic("t", 6)
    yield s
    s.close()


def call(state: BrokerState, name: str, version: int, **fields: Any) -> Any:
    """One request encoded, decoded as the server does, handled; the response round-tripped."""
    response = testing.call(
        state,
        name,
        version,
        client_id="test-client",
        context={"client_address": "127.0.0.1:5555"},
        **fields,
    )
    assert not isinstance(response, Deferred)
    return response


def hb(state: BrokerState, version: int = 1, **fields: Any) -> Any:
    fields.setdefault("group_id", GROUP)
    return call(state, "ConsumerGroupHeartbeat", version, **fields)


def advance(state: BrokerState, ms: int) -> None:
    clock = state.clock
    assert isinstance(clock, ManualClock)
    clock.advance(ms)
    state.run_tickers()


def cgroup(state: BrokerState, group_id: str = GROUP) -> ConsumerGroup:
    found = group_coordinator(state).consumer.group(group_id)
    assert found is not None
    return found


Parts = dict[uuid.UUID, set[int]]


class Consumer:
    """A KIP-848 client: joins with epoch 0, reports what it owns, reconciles at once."""

    def __init__(
        self,
        state: BrokerState,
        topics: tuple[str, ...] = ("t",),
        assignor: str | None = None,
        instance: str | None = None,
        version: int = 1,
        member_id: str | None = None,
    ) -> None:
        self.state = state
        self.topics = topics
        self.assignor = assignor
        self.instance = instance
        self.version = version
        self.member_id = member_id or (uuid.uuid4().hex[:22] if version >= 1 else "")
        self.epoch = 0
        self.owned: Parts = {}
        self.error = ErrorCode.NONE

    def owned_rows(self) -> list[Any]:
        return [OWNED(topic_id=t, partitions=sorted(ps)) for t, ps in sorted(self.owned.items())]

    def join(self) -> Any:
        self.epoch = 0
        self.owned = {}
        return self._send(
            member_epoch=0,
            instance_id=self.instance,
            rebalance_timeout_ms=REBALANCE,
            subscribed_topic_names=list(self.topics),
            server_assignor=self.assignor,
            topic_partitions=[],
        )

    def heartbeat(self) -> Any:
        return self._send(member_epoch=self.epoch, topic_partitions=self.owned_rows())

    def leave(self, epoch: int = -1) -> Any:
        response = self._send(member_epoch=epoch, instance_id=self.instance)
        self.owned = {}
        return response

    def _send(self, **fields: Any) -> Any:
        response = hb(self.state, self.version, member_id=self.member_id, **fields)
        self.error = ErrorCode(response.error_code)
        if self.error is not ErrorCode.NONE:
            if self.error in (ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID):
                self.owned = {}  # the consumer drops everything and rejoins
            return response
        if response.member_id:
            self.member_id = response.member_id
        self.epoch = response.member_epoch
        if response.assignment is not None:
            self.owned = {
                tp.topic_id: set(tp.partitions)
                for tp in response.assignment.topic_partitions
                if tp.partitions
            }
        return response

    def count(self) -> int:
        return sum(len(ps) for ps in self.owned.values())


def assert_disjoint(consumers: list[Consumer]) -> None:
    seen: dict[tuple[uuid.UUID, int], str] = {}
    for c in consumers:
        for t, ps in c.owned.items():
            for p in ps:
                assert (t, p) not in seen, f"{t}-{p} owned by {seen[t, p]} and {c.member_id}"
                seen[t, p] = c.member_id


def assert_server_disjoint(group: ConsumerGroup) -> None:
    seen: set[tuple[uuid.UUID, int]] = set()
    for m in group.members.values():
        for assignment in (m.assigned, m.pending_revocation):
            for t, ps in assignment.items():
                for p in ps:
                    assert (t, p) not in seen
                    seen.add((t, p))


def converge(state: BrokerState, consumers: list[Consumer], rounds: int = 20) -> None:
    """Heartbeat round-robin until the group is Stable (bounded), checking the invariant."""
    for _ in range(rounds):
        for c in consumers:
            c.heartbeat()
            assert c.error is ErrorCode.NONE, c.error
            assert_disjoint(consumers)
            assert_server_disjoint(cgroup(state))
        group = cgroup(state)
        if group.state == STABLE and all(c.epoch == group.assignment_epoch for c in consumers):
            return
    raise AssertionError(f"no convergence: {cgroup(state).state}")


# --- joining, versions, the basics --------------------------------------------------------------


@pytest.mark.parametrize("version", [0, 1])
def test_single_member_gets_every_partition(state: BrokerState, version: int) -> None:
    c = Consumer(state, version=version)
    response = c.join()
    assert response.error_code == 0
    assert response.member_id  # v0: the coordinator makes it; v1: the client's comes back
    assert response.member_epoch == 1
    assert response.heartbeat_interval_ms == 5000
    assert c.count() == 6
    topic_id = state.topics["t"].topic_id
    assert c.owned == {topic_id: set(range(6))}
    # a heartbeat without changes has no assignment in the response
    again = c.heartbeat()
    assert again.error_code == 0 and again.assignment is None and again.member_epoch == 1
    group = cgroup(state)
    assert (group.group_epoch, group.assignment_epoch, group.state) == (1, 1, STABLE)


def test_v1_requires_the_member_id(state: BrokerState) -> None:
    response = hb(
        state,
        1,
        member_id="",
        member_epoch=0,
        rebalance_timeout_ms=REBALANCE,
        subscribed_topic_names=["t"],
        topic_partitions=[],
    )
    assert response.error_code == ErrorCode.INVALID_REQUEST
    assert response.error_message == "MemberId can't be empty."


@pytest.mark.parametrize("assignor", ["uniform", "range"])
def test_one_to_five_members_join_and_leave(state: BrokerState, assignor: str) -> None:
    consumers: list[Consumer] = []
    for _ in range(5):
        c = Consumer(state, assignor=assignor)
        c.join()
        consumers.append(c)
        converge(state, consumers)
        counts = sorted(c.count() for c in consumers)
        assert sum(counts) == 6
        assert counts[-1] - counts[0] <= 1, counts
        assert cgroup(state).preferred_assignor("uniform") == assignor
    if assignor == "range":
        # contiguous ranges in member order, the first ones one more
        ordered = sorted(consumers, key=lambda c: c.member_id)
        topic_id = state.topics["t"].topic_id
        flat = [sorted(c.owned.get(topic_id, set())) for c in ordered]
        assert [p for ps in flat for p in ps] == list(range(6))
    while len(consumers) > 1:
        leaving = consumers.pop(0)
        response = leaving.leave()
        assert response.error_code == 0 and response.member_epoch == -1
        converge(state, consumers)
        assert sum(c.count() for c in consumers) == 6
    assert cgroup(state).state == STABLE
    consumers[0].leave()
    assert cgroup(state).state == EMPTY


def test_revocation_comes_before_assignment(state: BrokerState) -> None:
    a = Consumer(state)
    a.join()
    assert a.count() == 6
    b = Consumer(state)
    response = b.join()
    # b is at the new epoch but gets nothing: a still owns every partition
    assert response.member_epoch == 2 and b.count() == 0
    group = cgroup(state)
    assert group.state == RECONCILING
    assert sum(len(ps) for ps in group.target[b.member_id].values()) == 3
    # a is asked to revoke three; it stays at epoch 1 until it says it did
    response = a.heartbeat()
    assert response.member_epoch == 1 and a.count() == 3
    # b still gets nothing: the coordinator has not heard a give them up
    assert b.heartbeat().assignment is None and b.count() == 0
    response = a.heartbeat()
    assert response.member_epoch == 2
    response = b.heartbeat()
    assert response.member_epoch == 2 and b.count() == 3
    assert_disjoint([a, b])
    assert cgroup(state).state == STABLE


def test_fencing_and_unknown_members(state: BrokerState) -> None:
    a = Consumer(state)
    a.join()
    b = Consumer(state)
    b.join()
    a.heartbeat()
    a.heartbeat()  # a at epoch 2 after revoking
    assert a.epoch == 2
    ahead = hb(state, member_id=a.member_id, member_epoch=5, topic_partitions=a.owned_rows())
    assert ahead.error_code == ErrorCode.FENCED_MEMBER_EPOCH
    behind = hb(state, member_id=a.member_id, member_epoch=0, topic_partitions=a.owned_rows())
    assert behind.error_code == ErrorCode.INVALID_REQUEST  # epoch 0 is a join: no partitions
    # the previous epoch with a subset of the assignment is accepted (a lost response)
    previous = hb(state, member_id=a.member_id, member_epoch=1, topic_partitions=a.owned_rows())
    assert previous.error_code == 0 and previous.member_epoch == 2
    unknown = hb(state, member_id="nobody", member_epoch=3, topic_partitions=[])
    assert unknown.error_code == ErrorCode.UNKNOWN_MEMBER_ID
    no_group = hb(state, group_id="other", member_id="x", member_epoch=1, topic_partitions=[])
    assert no_group.error_code == ErrorCode.GROUP_ID_NOT_FOUND


def test_request_errors(tmp_path: Path) -> None:
    state = make_state(tmp_path, **{"group.consumer.max.size": "1"})
    try:
        state.create_topic("t", 2)
        base = {"member_id": "m1", "rebalance_timeout_ms": REBALANCE, "topic_partitions": []}

        def join(**over: Any) -> Any:
            fields = {**base, "member_epoch": 0, "subscribed_topic_names": ["t"], **over}
            return hb(state, **fields)

        cases: list[tuple[dict[str, Any], ErrorCode]] = [
            ({"group_id": ""}, ErrorCode.INVALID_REQUEST),
            ({"instance_id": ""}, ErrorCode.INVALID_REQUEST),
            ({"rack_id": ""}, ErrorCode.INVALID_REQUEST),
            ({"rebalance_timeout_ms": -1}, ErrorCode.INVALID_REQUEST),
            ({"topic_partitions": None}, ErrorCode.INVALID_REQUEST),
            ({"subscribed_topic_names": None}, ErrorCode.INVALID_REQUEST),
            ({"member_epoch": -3}, ErrorCode.INVALID_REQUEST),
            ({"subscribed_topic_regex": "("}, ErrorCode.INVALID_REQUEST),
            ({"server_assignor": "sticky"}, ErrorCode.UNSUPPORTED_ASSIGNOR),
        ]
        for over, error in cases:
            assert join(**over).error_code == error, over
        assert join().error_code == 0
        full = join(member_id="m2")
        assert full.error_code == ErrorCode.GROUP_MAX_SIZE_REACHED
        # -2 needs an instance id
        assert hb(state, member_id="m1", member_epoch=-2).error_code == ErrorCode.INVALID_REQUEST
    finally:
        state.close()


def test_a_classic_group_with_members_is_not_a_consumer_group(state: BrokerState) -> None:
    protocol = struct_class("JoinGroupRequest", "protocols")
    joined = call(
        state,
        "JoinGroup",
        9,
        group_id=GROUP,
        session_timeout_ms=10_000,
        rebalance_timeout_ms=REBALANCE,
        member_id="",
        group_instance_id=None,
        protocol_type="consumer",
        protocols=[protocol(name="range", metadata=b"")],
        reason=None,
    )
    assert joined.error_code == ErrorCode.MEMBER_ID_REQUIRED
    call(
        state,
        "JoinGroup",
        9,
        group_id=GROUP,
        session_timeout_ms=10_000,
        rebalance_timeout_ms=REBALANCE,
        member_id=joined.member_id,
        group_instance_id=None,
        protocol_type="consumer",
        protocols=[protocol(name="range", metadata=b"")],
        reason=None,
    )
    c = Consumer(state)
    response = c.join()
    assert response.error_code == ErrorCode.GROUP_ID_NOT_FOUND
    assert response.error_message == f"Group {GROUP} is not a consumer group."


# --- timers -------------------------------------------------------------------------------------


def test_session_timeout_fences_a_silent_member(state: BrokerState) -> None:
    a, b = Consumer(state), Consumer(state)
    a.join()
    b.join()
    converge(state, [a, b])
    epoch = cgroup(state).group_epoch
    for _ in range(10):  # a heartbeats, b is silent
        advance(state, 5_000)
        a.heartbeat()
    assert b.member_id not in cgroup(state).members
    assert cgroup(state).group_epoch == epoch + 1
    a.heartbeat()
    assert a.count() == 6
    # the fenced member learns it on its next heartbeat and rejoins
    assert b.heartbeat().error_code == ErrorCode.UNKNOWN_MEMBER_ID
    assert b.owned == {}


def test_rebalance_timeout_fences_a_member_that_does_not_revoke(state: BrokerState) -> None:
    a = Consumer(state)
    a.join()
    b = Consumer(state)
    b.join()
    # a hears it must revoke, but keeps reporting every partition
    hb(state, member_id=a.member_id, member_epoch=1, topic_partitions=[
        OWNED(topic_id=state.topics["t"].topic_id, partitions=list(range(6)))
    ])  # fmt: skip
    advance(state, REBALANCE - 1)
    b.heartbeat()
    assert a.member_id in cgroup(state).members
    advance(state, 2)
    assert a.member_id not in cgroup(state).members
    b.heartbeat()
    assert b.count() == 6


# --- static members -----------------------------------------------------------------------------


def test_static_member_leaves_and_comes_back(state: BrokerState) -> None:
    a = Consumer(state, instance="i-a")
    b = Consumer(state, instance="i-b")
    a.join()
    b.join()
    converge(state, [a, b])
    kept = {t: set(ps) for t, ps in a.owned.items()}
    epoch = cgroup(state).group_epoch
    response = a.leave(-2)
    assert response.error_code == 0 and response.member_epoch == -2
    # a -2 leave keeps the partitions and the group epoch: nobody else gets them
    assert cgroup(state).group_epoch == epoch
    b.heartbeat()
    assert b.count() == 3
    # the instance id is not released to a member that did not leave
    other = Consumer(state, instance="i-b")
    assert other.join().error_code == ErrorCode.UNRELEASED_INSTANCE_ID
    wrong = hb(state, member_id="zzz", member_epoch=3, instance_id="i-b", topic_partitions=[])
    assert wrong.error_code == ErrorCode.FENCED_INSTANCE_ID
    # the same instance with a new member id takes the old assignment back
    again = Consumer(state, instance="i-a")
    response = again.join()
    assert response.error_code == 0
    assert again.owned == kept
    assert a.member_id not in cgroup(state).members
    assert cgroup(state).group_epoch == epoch
    converge(state, [again, b])
    # a -1 leave of a static member gives its partitions away
    again.leave(-1)
    converge(state, [b])
    assert b.count() == 6


# --- topic changes, regex -----------------------------------------------------------------------


def test_new_partitions_bump_the_group_epoch(state: BrokerState) -> None:
    a, b = Consumer(state), Consumer(state)
    a.join()
    b.join()
    converge(state, [a, b])
    epoch = cgroup(state).group_epoch
    state.create_partitions("t", 10)
    a.heartbeat()
    assert cgroup(state).group_epoch == epoch + 1
    converge(state, [a, b])
    assert a.count() + b.count() == 10 and abs(a.count() - b.count()) <= 1


def test_a_deleted_topic_leaves_the_assignment(state: BrokerState) -> None:
    """A deleted topic leaves the subscription metadata at the next heartbeat (the metadata
    image no longer has it): the group epoch moves, the new target has none of its partitions,
    and the members revoke them as any others (CurrentAssignmentBuilder); a recreated topic of
    the name is a new id, assigned afresh."""
    state.create_topic("u", 2)
    a, b = Consumer(state, ("t", "u")), Consumer(state, ("t", "u"))
    a.join()
    b.join()
    converge(state, [a, b])
    old = state.topics["t"].topic_id
    u_id = state.topics["u"].topic_id
    assert a.count() + b.count() == 8
    epoch = cgroup(state).group_epoch
    state.delete_topic("t")
    a.heartbeat()
    group = cgroup(state)
    assert group.group_epoch == epoch + 1
    assert all(old not in target for target in group.target.values())
    converge(state, [a, b])
    assert {t for c in (a, b) for t in c.owned} == {u_id}
    assert all(old not in m.assigned and not m.pending_revocation for m in group.members.values())
    assert old not in {t for t, _ in cgroup(state).owners}
    state.create_topic("t", 2)
    converge(state, [a, b])
    new = state.topics["t"].topic_id
    assert {t for c in (a, b) for t in c.owned} == {u_id, new}
    assert a.count() + b.count() == 4


def test_regex_subscription(state: BrokerState) -> None:
    state.create_topic("orders-eu", 2)
    state.create_topic("orders-us", 2)
    response = hb(
        state,
        member_id="rx",
        member_epoch=0,
        rebalance_timeout_ms=REBALANCE,
        subscribed_topic_regex="orders-.*",
        topic_partitions=[],
    )
    assert response.error_code == 0
    topics = {state.topics_by_id[tp.topic_id].name for tp in response.assignment.topic_partitions}
    assert topics == {"orders-eu", "orders-us"}
    state.create_topic("orders-jp", 1)
    again = hb(state, member_id="rx", member_epoch=response.member_epoch, topic_partitions=[
        OWNED(topic_id=tp.topic_id, partitions=list(tp.partitions))
        for tp in response.assignment.topic_partitions
    ])  # fmt: skip
    assert again.member_epoch == response.member_epoch + 1
    names = {state.topics_by_id[tp.topic_id].name for tp in again.assignment.topic_partitions}
    assert "orders-jp" in names


# --- assignors ----------------------------------------------------------------------------------


def test_assignors_directly() -> None:
    t1, t2 = uuid.UUID(int=1), uuid.UUID(int=2)
    both = frozenset({t1, t2})
    none: dict[uuid.UUID, frozenset[int]] = {}
    members = {m: (both, none, None) for m in ("a", "b")}
    ranged = range_assign(members, {t1: 3, t2: 3})
    assert ranged == {"a": {t1: {0, 1}, t2: {0, 1}}, "b": {t1: {2}, t2: {2}}}  # co-partitioned
    uniform = uniform_assign(members, {t1: 3, t2: 3})
    assert sorted(sum(len(p) for p in a.values()) for a in uniform.values()) == [3, 3]
    # sticky: a third member takes from both without moving what can stay
    third = {**{m: (both, uniform[m], None) for m in uniform}, "c": (both, none, None)}
    after = uniform_assign(third, {t1: 3, t2: 3})
    assert sorted(sum(len(p) for p in a.values()) for a in after.values()) == [2, 2, 2]
    for m in ("a", "b"):
        for t, ps in after[m].items():
            assert ps <= uniform[m].get(t, frozenset())
    # heterogeneous: only subscribers get a topic
    mixed = {"a": (frozenset({t1}), none, None), "b": (both, none, None)}
    result = uniform_assign(mixed, {t1: 2, t2: 4})
    assert t2 not in result["a"] and result["b"][t2] == frozenset(range(4))


# --- offsets ------------------------------------------------------------------------------------


def commit(state: BrokerState, version: int, member_id: str, epoch: int, offset: int = 5) -> int:
    response = call(
        state,
        "OffsetCommit",
        version,
        group_id=GROUP,
        generation_id_or_member_epoch=epoch,
        member_id=member_id,
        group_instance_id=None,
        retention_time_ms=-1,
        topics=[
            COMMIT_TOPIC(
                name="t" if version < 10 else "",
                topic_id=state.topics["t"].topic_id if version >= 10 else ZERO_UUID,
                partitions=[
                    COMMIT_PARTITION(
                        partition_index=0,
                        committed_offset=offset,
                        committed_leader_epoch=-1,
                        committed_metadata="",
                    )
                ],
            )
        ],
    )
    return int(response.topics[0].partitions[0].error_code)


def fetch(state: BrokerState, version: int, member_id: str | None, epoch: int) -> Any:
    response = call(
        state,
        "OffsetFetch",
        version,
        groups=[
            FETCH_GROUP(
                group_id=GROUP,
                member_id=member_id,
                member_epoch=epoch,
                topics=[
                    FETCH_GROUP_TOPIC(
                        name="t" if version < 10 else "",
                        topic_id=state.topics["t"].topic_id if version >= 10 else ZERO_UUID,
                        partition_indexes=[0],
                    )
                ],
            )
        ],
        require_stable=False,
    )
    return response.groups[0]


def test_offsets_use_the_member_epoch(state: BrokerState) -> None:
    c = Consumer(state)
    c.join()
    assert commit(state, 9, c.member_id, c.epoch) == 0
    assert commit(state, 10, c.member_id, c.epoch, 7) == 0
    assert commit(state, 9, c.member_id, c.epoch + 1) == ErrorCode.STALE_MEMBER_EPOCH
    assert commit(state, 9, "nobody", c.epoch) == ErrorCode.UNKNOWN_MEMBER_ID
    assert commit(state, 8, c.member_id, c.epoch) == ErrorCode.UNSUPPORTED_VERSION
    # a simple commit (epoch -1) is refused while the group has members
    assert commit(state, 9, "", -1) == ErrorCode.UNKNOWN_MEMBER_ID
    group = fetch(state, 9, c.member_id, c.epoch)
    assert group.error_code == 0 and group.topics[0].partitions[0].committed_offset == 7
    assert fetch(state, 9, c.member_id, c.epoch + 3).error_code == ErrorCode.STALE_MEMBER_EPOCH
    assert fetch(state, 9, "nobody", 1).error_code == ErrorCode.UNKNOWN_MEMBER_ID
    assert fetch(state, 9, None, -1).error_code == 0  # the admin client's fetch
    c.leave()
    assert commit(state, 9, "", -1, 11) == 0  # empty: simple commits are fine


# --- listing, describing, deleting --------------------------------------------------------------


def test_list_describe_delete(state: BrokerState) -> None:
    c = Consumer(state)
    c.join()
    listed = call(state, "ListGroups", 5, states_filter=[], types_filter=[])
    (entry,) = [g for g in listed.groups if g.group_id == GROUP]
    assert (entry.group_type, entry.group_state, entry.protocol_type) == (
        "consumer",
        "Stable",
        "consumer",
    )
    assert not call(state, "ListGroups", 5, states_filter=[], types_filter=["classic"]).groups
    assert call(state, "ListGroups", 5, states_filter=["stable"], types_filter=["consumer"]).groups
    assert not call(state, "ListGroups", 4, states_filter=["Empty"]).groups

    for version in (0, 1):
        described = call(
            state, "ConsumerGroupDescribe", version, group_ids=[GROUP, "nope"],
            include_authorized_operations=True,
        )  # fmt: skip
        group, missing = described.groups
        assert (group.error_code, group.group_state, group.group_epoch) == (0, "Stable", 1)
        assert (group.assignment_epoch, group.assignor_name) == (1, "uniform")
        (member,) = group.members
        assert member.member_id == c.member_id and member.member_epoch == 1
        assert member.client_id == "test-client" and member.client_host == "/127.0.0.1"
        assert member.subscribed_topic_names == ["t"]
        assert member.assignment.topic_partitions[0].topic_name == "t"
        assert member.target_assignment.topic_partitions[0].partitions == list(range(6))
        if version >= 1:
            assert member.member_type == 1
        assert missing.error_code == ErrorCode.GROUP_ID_NOT_FOUND

    old = call(state, "DescribeGroups", 5, groups=[GROUP], include_authorized_operations=False)
    assert old.groups[0].group_state == "Dead"
    v6 = call(state, "DescribeGroups", 6, groups=[GROUP], include_authorized_operations=False)
    assert v6.groups[0].error_code == ErrorCode.GROUP_ID_NOT_FOUND

    deleted = call(state, "DeleteGroups", 2, groups_names=[GROUP])
    assert deleted.results[0].error_code == ErrorCode.NON_EMPTY_GROUP
    c.leave()
    listed = call(state, "ListGroups", 5, states_filter=["empty"], types_filter=[])
    assert [g.group_id for g in listed.groups] == [GROUP]
    deleted = call(state, "DeleteGroups", 2, groups_names=[GROUP])
    assert deleted.results[0].error_code == 0
    assert group_coordinator(state).consumer.group(GROUP) is None
    gone = call(
        state, "ConsumerGroupDescribe", 0, group_ids=[GROUP], include_authorized_operations=False
    )
    assert gone.groups[0].error_code == ErrorCode.GROUP_ID_NOT_FOUND


# --- records and restarts -----------------------------------------------------------------------


def _records(state: BrokerState) -> list[tuple[int, bytes, bytes | None]]:
    out = []
    for partition in state.topics[GROUP_TOPIC].partitions:
        data = partition.log.read(0, 1 << 22).read_bytes()
        for batch in read_batches(data):
            for record in batch:
                assert record.key is not None
                key = bytes(record.key)
                value = None if record.value is None else bytes(record.value)
                out.append((int.from_bytes(key[:2], "big"), key, value))
    return out


def test_records_are_kafkas_and_a_restart_keeps_the_group(tmp_path: Path) -> None:
    path = tmp_path / "data"
    state = make_state(path)
    state.create_topic("t", 4)
    a, b = Consumer(state, instance="i-a"), Consumer(state)
    a.join()
    b.join()
    converge(state, [a, b])
    assert commit(state, 9, a.member_id, a.epoch, 42) == 0
    kinds = {kind for kind, _, _ in _records(state)}
    assert {1, 3, 4, 5, 6, 7, 8} <= kinds
    for kind, key, value in _records(state):
        if kind == 5 and value is not None:
            k = message_class("ConsumerGroupMemberMetadataKey").decode(memoryview(key)[2:], 5)
            v = message_class("ConsumerGroupMemberMetadataValue").decode(memoryview(value)[2:], 0)
            assert k.group_id == GROUP and v.subscribed_topic_names == ["t"]
            assert int.from_bytes(value[:2], "big") == 0
    before = cgroup(state)
    snapshot = (
        before.group_epoch,
        before.assignment_epoch,
        {m: (x.member_epoch, x.assigned, x.instance_id) for m, x in before.members.items()},
        dict(before.target),
    )
    state.close()

    state = make_state(path)
    try:
        after = cgroup(state)
        assert (
            after.group_epoch,
            after.assignment_epoch,
            {m: (x.member_epoch, x.assigned, x.instance_id) for m, x in after.members.items()},
            dict(after.target),
        ) == snapshot
        assert after.static_members == {"i-a": a.member_id}
        # the members carry on with their epochs; offsets are there
        a.state = b.state = state
        converge(state, [a, b])
        assert fetch(state, 9, a.member_id, a.epoch).topics[0].partitions[0].committed_offset == 42
        # and the session timers run again after the load
        for _ in range(10):
            advance(state, 5_000)
            a.heartbeat()
        assert list(cgroup(state).members) == [a.member_id]
    finally:
        state.close()


# --- the personality ----------------------------------------------------------------------------


def test_api_versions_advertise_the_consumer_protocol() -> None:
    implemented = implemented_versions()
    assert implemented[68] == (0, 1) and implemented[69] == (0, 1)
    assert 68 not in personality("3.6", implemented).advertised
    assert personality("3.7", implemented).advertised[68] == (0, 0)
    assert 69 not in personality("3.7", implemented).advertised
    assert personality("3.9", implemented).advertised[69] == (0, 0)
    assert personality("4.0", implemented).advertised[68] == (0, 1)
    assert personality("4.0", implemented).advertised[69] == (0, 1)
    assert group_version_features("4.0") == ({"group.version": (0, 1)}, {"group.version": 1})
    assert group_version_features("3.9") == ({}, {})


# --- the reconciliation invariant ---------------------------------------------------------------

ACTIONS = st.lists(
    st.one_of(
        st.tuples(st.just("join"), st.integers(0, 4)),
        st.tuples(st.just("heartbeat"), st.integers(0, 4)),
        st.tuples(st.just("leave"), st.integers(0, 4)),
        st.tuples(st.just("wait"), st.integers(1, 50_000)),
        st.tuples(st.just("grow"), st.integers(1, 3)),
    ),
    min_size=1,
    max_size=60,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(actions=ACTIONS, assignor=st.sampled_from(["uniform", "range"]))
def test_no_partition_is_owned_twice(
    tmp_path_factory: pytest.TempPathFactory, actions: list[Any], assignor: str
) -> None:
    state = make_state(tmp_path_factory.mktemp("inv"), **{"offsets.topic.num.partitions": "1"})
    try:
        state.create_topic("t", 5)
        state.create_topic("u", 3)
        consumers = [
            Consumer(state, topics=("t", "u") if i % 2 else ("t",), assignor=assignor)
            for i in range(5)
        ]
        joined = [False] * 5
        for kind, arg in actions:
            if kind == "join" and not joined[arg]:
                joined[arg] = consumers[arg].join().error_code == 0
            elif kind == "heartbeat" and joined[arg]:
                c = consumers[arg]
                c.heartbeat()
                if c.error is not ErrorCode.NONE:
                    joined[arg] = False
            elif kind == "leave" and joined[arg]:
                consumers[arg].leave()
                joined[arg] = False
            elif kind == "wait":
                advance(state, arg)
            elif kind == "grow":
                topic = state.topics["u"]
                state.create_partitions("u", len(topic.partitions) + arg)
            group = group_coordinator(state).consumer.group(GROUP)
            if group is None:
                continue
            assert_server_disjoint(group)
            # every member the coordinator still knows owns what the coordinator thinks, at most
            live = [
                c for i, c in enumerate(consumers) if joined[i] and c.member_id in group.members
            ]
            assert_disjoint(live)
            assert group.state in (EMPTY, ASSIGNING, RECONCILING, STABLE)
        # and once everybody heartbeats, the group settles
        live = [c for i, c in enumerate(consumers) if joined[i]]
        live = [c for c in live if c.member_id in cgroup(state).members]
        if live:
            converge(state, live, rounds=30)
    finally:
        state.close()
