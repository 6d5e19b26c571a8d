"""The group coordinator: classic consumer groups and committed offsets, kept in ``__consumer_offsets``.

Approach: a sans-IO state machine with Kafka's state names (Empty, PreparingRebalance,
CompletingRebalance, Stable, Dead), driven by requests and ``now_ms`` (style rule 27). It follows
Kafka 3.9's group-coordinator module: ``ClassicGroup`` for the states and members,
``GroupMetadataManager`` for JoinGroup / SyncGroup / Heartbeat / LeaveGroup and the timers, and
``OffsetMetadataManager`` for OffsetCommit / OffsetFetch / OffsetDelete and transactional offsets.

A request that has to wait (a JoinGroup until the rebalance completes, a follower's SyncGroup until
the leader's assignment) gets a ``Waiter``; the coordinator fills it when the group moves and then
calls ``notify(("group", group_id))`` so the server wakes the parked response. Timers (the
initial rebalance delay, the rebalance timeout, session timeouts, KIP-394 pending members) are
deadlines checked by ``tick(now_ms)``, which the broker runs every 100 ms.

Persistence (``GroupMetadataManager`` / ``GroupCoordinatorRecordHelpers``): every change is a
record in the group's partition of ``__consumer_offsets`` (``abs(groupId.hashCode()) % n``), as
Kafka 3.9 writes them: OffsetCommitKey v1 + OffsetCommitValue v3 (v1 when the commit carried a
retention time), GroupMetadataKey v2 + GroupMetadataValue v3, ``null`` values as tombstones.
Transactional offsets are written in transactional batches (the transaction coordinator writes
the markers) and applied by ``complete_txn``. ``load`` replays the topic at start. KIP-848
consumer groups (key versions 3..8) are ``_consumer_group``'s: a ``Group`` holds one in
``group.consumer`` and its committed offsets here, as Kafka's groups share one offset store.

Offset retention (KIP-211; ``GroupMetadataManager.cleanupGroupMetadata``,
``OffsetMetadataManager.cleanupExpiredOffsets`` and the groups' ``offsetExpirationCondition``):
every ``offsets.retention.check.interval.ms`` the offsets of topics a group is not subscribed to
expire ``offsets.retention.minutes`` after a base time: for a classic group in Empty, when it
became Empty (its ``currentStateTimestamp``; the commit time when unknown); for a simple group (no
protocol type) and a KIP-848 consumer group, the commit time; a Stable classic ``consumer`` group
whose subscriptions are known expires the offsets of the topics it no longer subscribes to by
commit time; other classic groups expire nothing. An offset committed with an explicit expire
timestamp (OffsetCommit v1..v4 retention time) expires at that time instead; an offset with a
pending transactional commit stays. Each expired offset gets an OffsetCommit tombstone; a group
left empty whose offsets all expired is deleted (GroupMetadata tombstone, or the consumer group's
tombstones), so it leaves ListGroups.
"""

from __future__ import annotations

import logging
import struct
import uuid
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from kwire.broker._consumer_group import ConsumerGroup, ConsumerGroupError, ConsumerGroups
from kwire.broker._state import BrokerState, Partition, partition_for
from kwire.broker._streams_group import KEY_VERSIONS as STREAMS_KEY_VERSIONS
from kwire.broker._streams_group import StreamsGroups
from kwire.protocol import ErrorCode, message_class, struct_class
from kwire.records import BatchBuilder
from kwire.records._control import parse_control_key

__all__ = [
    "COMPLETING_REBALANCE",
    "DEAD",
    "EMPTY",
    "GROUP_TOPIC",
    "PREPARING_REBALANCE",
    "STABLE",
    "Group",
    "GroupCoordinator",
    "GroupError",
    "JoinResult",
    "Member",
    "OffsetAndMetadata",
    "Waiter",
    "group_coordinator",
]

log = logging.getLogger("kwire.broker.group")

GROUP_TOPIC: Final = "__consumer_offsets"
EMPTY: Final = "Empty"
PREPARING_REBALANCE: Final = "PreparingRebalance"
COMPLETING_REBALANCE: Final = "CompletingRebalance"
STABLE: Final = "Stable"
DEAD: Final = "Dead"
STATES: Final = (EMPTY, PREPARING_REBALANCE, COMPLETING_REBALANCE, STABLE, DEAD)

NEW_MEMBER_JOIN_TIMEOUT_MS: Final = 5 * 60 * 1000  # ClassicGroupMember.NEW_MEMBER_JOIN_TIMEOUT_MS

OFFSET_COMMIT_KEY: Final = message_class("OffsetCommitKey")
OFFSET_COMMIT_VALUE: Final = message_class("OffsetCommitValue")
GROUP_METADATA_KEY: Final = message_class("GroupMetadataKey")
GROUP_METADATA_VALUE: Final = message_class("GroupMetadataValue")
MEMBER_METADATA: Final = struct_class(GROUP_METADATA_VALUE, "members")
SUBSCRIPTION: Final = message_class("ConsumerProtocolSubscription")
_VERSION: Final = struct.Struct(">h")

_DEFAULTS: Final = {
    "offsets.topic.num.partitions": 50,
    "group.initial.rebalance.delay.ms": 3000,
    "group.min.session.timeout.ms": 6000,
    "group.max.session.timeout.ms": 1800000,
    "offset.metadata.max.bytes": 4096,
    "group.max.size": 2**31 - 1,
    "offsets.retention.minutes": 10080,
    "offsets.retention.check.interval.ms": 600_000,
}


class GroupError(Exception):
    """A request-level failure with the Kafka error to answer."""

    def __init__(self, error: ErrorCode) -> None:
        self.error = error
        super().__init__(error.name)


# --- the model ----------------------------------------------------------------------------------


@dataclass
class Waiter:
    """A parked response: ``result`` is set (with ``error``) when the group decides."""

    result: Any = None
    done: bool = False

    def resolve(self, result: Any) -> None:
        if not self.done:
            self.result = result
            self.done = True


@dataclass
class JoinResult:
    error: ErrorCode
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    member_id: str = ""
    members: list[tuple[str, str | None, bytes]] = field(default_factory=list)
    skip_assignment: bool = False  # KIP-814: a rejoining static leader keeps the assignment


@dataclass
class SyncResult:
    error: ErrorCode
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


@dataclass
class Member:
    """``ClassicGroupMember``."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    assignment: bytes = b""
    join_waiter: Waiter | None = None
    sync_waiter: Waiter | None = None
    heartbeat_deadline: int = 0
    is_new: bool = False

    def metadata(self, protocol: str | None) -> bytes:
        for name, meta in self.protocols:
            if name == protocol:
                return meta
        return b""

    def matches(self, protocols: list[tuple[str, bytes]]) -> bool:
        return self.protocols == protocols


@dataclass
class OffsetAndMetadata:
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp: int
    expire_timestamp: int = -1


@dataclass
class Group:
    """``ClassicGroup``: members, generation, the chosen protocol, and committed offsets."""

    group_id: str
    state: str = EMPTY
    generation_id: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str | None = None
    members: dict[str, Member] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)  # instance id -> member id
    pending_members: dict[str, int] = field(default_factory=dict)  # member id -> deadline
    #: KIP-814: members of this generation that have not sent SyncGroup yet (``rebalance_deadline``
    #: is then their deadline, in CompletingRebalance and in Stable)
    pending_sync: set[str] = field(default_factory=set)
    state_timestamp: int = -1
    rebalance_deadline: int | None = None
    initial_delay_remaining: int = 0
    in_initial_delay: bool = False
    new_member_added: bool = False
    offsets: dict[tuple[str, int], OffsetAndMetadata] = field(default_factory=dict)
    #: producer id -> staged transactional offsets
    pending_txn: dict[int, dict[tuple[str, int], OffsetAndMetadata]] = field(default_factory=dict)
    #: set when this is a KIP-848 consumer group (``_consumer_group``); its classic part is empty
    consumer: ConsumerGroup | None = None

    def is_empty(self) -> bool:
        return not self.members

    def candidate_protocols(self) -> set[str]:
        """The protocols every member supports (``ClassicGroup.candidateProtocols``)."""
        sets = [{name for name, _ in m.protocols} for m in self.members.values()]
        return set.intersection(*sets) if sets else set()

    def supports(self, protocol_type: str, protocols: list[tuple[str, bytes]]) -> bool:
        """``ClassicGroup.supportsProtocols``."""
        if self.is_empty():
            return bool(protocol_type) and bool(protocols)
        names = {name for name, _ in protocols}
        return self.protocol_type == protocol_type and bool(names & self.candidate_protocols())

    def select_protocol(self) -> str:
        """``ClassicGroup.selectProtocol``: each member votes for its first candidate; most votes
        wins, ties broken by the order of the first member's preferences... (Kafka: max by count)."""
        candidates = self.candidate_protocols()
        votes: dict[str, int] = {}
        order: list[str] = []
        for member in self.members.values():
            vote = next(name for name, _ in member.protocols if name in candidates)
            if vote not in votes:
                order.append(vote)
            votes[vote] = votes.get(vote, 0) + 1
        return max(order, key=lambda name: votes[name])

    def all_joined(self) -> bool:
        return not self.pending_members and all(
            m.join_waiter is not None for m in self.members.values()
        )

    def subscribed_topics(self) -> set[str] | None:
        """Topics the consumer members subscribe to (None when not a consumer group)."""
        if self.protocol_type != "consumer" or self.protocol_name is None:
            return None
        topics: set[str] = set()
        for member in self.members.values():
            meta = member.metadata(self.protocol_name)
            try:
                version = _VERSION.unpack_from(meta, 0)[0]
                sub = SUBSCRIPTION.decode(memoryview(meta)[2:], min(version, 3))
            except Exception:
                return None
            topics.update(sub.topics)
        return topics


# --- the coordinator ----------------------------------------------------------------------------


class GroupCoordinator:
    """All classic groups of this node, their offsets and ``__consumer_offsets`` (module doc)."""

    def __init__(
        self,
        state: BrokerState | None,
        *,
        config: Mapping[str, str] | None = None,
        notify: Callable[[Hashable], None] | None = None,
    ) -> None:
        self.state = state
        conf = dict(state.static_config if state is not None else {})
        conf.update(config or {})
        self._conf = conf
        self.groups: dict[str, Group] = {}
        self._notify = notify or (state.notify if state is not None else (lambda key: None))
        self.persist = state is not None
        #: the KIP-848 consumer groups, kept in this coordinator's ``Group`` objects
        self.consumer = ConsumerGroups(self)
        #: the KIP-1071 streams groups (``_streams_group``), apart: they share only the id space
        self.streams = StreamsGroups(self)
        # the first check one interval after the coordinator starts; without a broker (no clock
        # yet) one interval after its first tick
        self._next_offsets_cleanup: int | None = (
            None
            if state is None
            else self._now() + self.conf("offsets.retention.check.interval.ms")
        )

    # --- configuration ------------------------------------------------------------------------

    def conf(self, name: str) -> int:
        value = self._conf.get(name)
        return int(value) if value is not None else int(_DEFAULTS[name])

    @property
    def num_partitions(self) -> int:
        topic = self.state.topics.get(GROUP_TOPIC) if self.state is not None else None
        if topic is not None:
            return len(topic.partitions)
        return self.conf("offsets.topic.num.partitions")

    def partition_for(self, group_id: str) -> int:
        return partition_for(group_id, self.num_partitions)

    def _moved(self, group: Group) -> None:
        self._notify(("group", group.group_id))

    # --- JoinGroup ----------------------------------------------------------------------------

    def join(
        self,
        group_id: str,
        member_id: str,
        group_instance_id: str | None,
        protocol_type: str,
        protocols: list[tuple[str, bytes]],
        session_timeout_ms: int,
        rebalance_timeout_ms: int,
        client_id: str,
        client_host: str,
        require_known_member_id: bool,
        now_ms: int,
        *,
        supports_skip_assignment: bool = False,
    ) -> Waiter:
        """``GroupMetadataManager.classicGroupJoin``: a waiter, already done or done later.

        ``supports_skip_assignment`` (JoinGroup v9+, KIP-814) lets a static leader that rejoins a
        Stable group keep the group's assignment instead of causing a rebalance."""
        waiter = Waiter()
        if not group_id:
            waiter.resolve(JoinResult(ErrorCode.INVALID_GROUP_ID, member_id=member_id))
            return waiter
        if not (
            self.conf("group.min.session.timeout.ms")
            <= session_timeout_ms
            <= self.conf("group.max.session.timeout.ms")
        ):
            waiter.resolve(JoinResult(ErrorCode.INVALID_SESSION_TIMEOUT, member_id=member_id))
            return waiter
        self.expire_due(group_id, now_ms)
        group = self.groups.get(group_id)
        if group is None:
            if member_id:
                waiter.resolve(JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id=member_id))
                return waiter
            group = self.groups[group_id] = Group(group_id, state_timestamp=now_ms)
        if group.consumer is not None:
            if group.consumer.members:
                # a classic member cannot join a consumer group that has members (Kafka's
                # ``group.consumer.migration.policy`` disabled)
                waiter.resolve(
                    JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id=member_id)
                )
                return waiter
            # an empty consumer group becomes a classic group (its records are tombstoned)
            self._append(group_id, ConsumerGroups.tombstones(group.consumer), now_ms)
            group.consumer = None
        if not self._accept_joining_member(group, member_id):
            # classicGroupJoinToClassicGroup: the group's size before anything else
            group.pending_members.pop(member_id, None)
            if member_id in group.members:
                self._remove_member(group, member_id)
            waiter.resolve(JoinResult(ErrorCode.GROUP_MAX_SIZE_REACHED, member_id=""))
            return waiter
        if group.state == DEAD:
            waiter.resolve(JoinResult(ErrorCode.COORDINATOR_NOT_AVAILABLE, member_id=member_id))
            return waiter
        if not group.supports(protocol_type, protocols):
            waiter.resolve(JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id=member_id))
            return waiter
        if not member_id:
            self._join_unknown(
                group,
                waiter,
                group_instance_id,
                protocol_type,
                protocols,
                session_timeout_ms,
                rebalance_timeout_ms,
                client_id,
                client_host,
                require_known_member_id,
                now_ms,
                supports_skip_assignment,
            )
        else:
            self._join_known(
                group,
                waiter,
                member_id,
                group_instance_id,
                protocol_type,
                protocols,
                session_timeout_ms,
                rebalance_timeout_ms,
                client_id,
                client_host,
                now_ms,
            )
        self._maybe_complete_join(group, now_ms)
        return waiter

    def _join_unknown(
        self,
        group: Group,
        waiter: Waiter,
        instance_id: str | None,
        protocol_type: str,
        protocols: list[tuple[str, bytes]],
        session_timeout_ms: int,
        rebalance_timeout_ms: int,
        client_id: str,
        client_host: str,
        require_known_member_id: bool,
        now_ms: int,
        supports_skip_assignment: bool = False,
    ) -> None:
        new_id = (instance_id or client_id) + "-" + str(uuid.uuid4())
        if instance_id is not None:
            old_id = group.static_members.get(instance_id)
            if old_id is not None and old_id in group.members:
                self._replace_static_member(
                    group, waiter, old_id, new_id, protocols, session_timeout_ms,
                    rebalance_timeout_ms, client_id, client_host, now_ms,
                    supports_skip_assignment,
                )  # fmt: skip
                return
        elif require_known_member_id:
            # KIP-394: the member id comes back with MEMBER_ID_REQUIRED; the member rejoins with it
            group.pending_members[new_id] = now_ms + session_timeout_ms
            waiter.resolve(JoinResult(ErrorCode.MEMBER_ID_REQUIRED, member_id=new_id))
            return
        member = Member(
            new_id, instance_id, client_id, client_host, rebalance_timeout_ms,
            session_timeout_ms, protocol_type, protocols, is_new=True,
        )  # fmt: skip
        self._add_member_and_rebalance(group, member, waiter, now_ms)

    def _replace_static_member(
        self,
        group: Group,
        waiter: Waiter,
        old_id: str,
        new_id: str,
        protocols: list[tuple[str, bytes]],
        session_timeout_ms: int,
        rebalance_timeout_ms: int,
        client_id: str,
        client_host: str,
        now_ms: int,
        supports_skip_assignment: bool = False,
    ) -> None:
        """``updateStaticMemberThenRebalanceOrCompleteJoin``: a known instance rejoins with a
        new member id; the old one is fenced (``ClassicGroup.replaceStaticMember``)."""
        current_leader = group.leader_id
        old = group.members.pop(old_id)
        group.pending_sync.discard(old_id)
        if old.join_waiter is not None:
            old.join_waiter.resolve(JoinResult(ErrorCode.FENCED_INSTANCE_ID, member_id=old_id))
        if old.sync_waiter is not None:
            old.sync_waiter.resolve(SyncResult(ErrorCode.FENCED_INSTANCE_ID))
        old.join_waiter = old.sync_waiter = None
        # the new member keeps the old one's client id and host (replaceStaticMember), and takes
        # the request's protocols and timeouts (updateMember)
        member = Member(
            new_id, old.group_instance_id, old.client_id, old.client_host, rebalance_timeout_ms,
            session_timeout_ms, old.protocol_type, protocols, assignment=old.assignment,
        )  # fmt: skip
        group.members[new_id] = member
        assert old.group_instance_id is not None
        group.static_members[old.group_instance_id] = new_id
        if group.leader_id == old_id:
            group.leader_id = new_id
        member.heartbeat_deadline = now_ms + old.session_timeout_ms
        if group.state == STABLE and group.select_protocol() == group.protocol_name:
            # The next generation would select the same protocol: no rebalance, the member keeps
            # its assignment under the new id (KIP-345; the subscription bytes may differ, a
            # restarted consumer owns nothing yet). From JoinGroup v9 (KIP-814) a returning leader
            # is told so and skips the assignment; before v9 every returning member, the leader
            # too, is answered as a follower (the leader field names the old leader id), so it
            # syncs and gets its old assignment; the other members see nothing.
            self._store_group(group, now_ms)
            result = self._join_result(group, member, ErrorCode.NONE)
            if supports_skip_assignment:
                result.skip_assignment = group.leader_id == new_id
            else:
                result.members = []
                result.leader = current_leader or ""
            waiter.resolve(result)
            return
        member.join_waiter = waiter
        if group.state in (STABLE, COMPLETING_REBALANCE):
            # Stable: the protocol changes; CompletingRebalance: the leader may have assigned to
            # the old member id, so a new generation is needed
            self._prepare_rebalance(group, now_ms)

    def _accept_joining_member(self, group: Group, member_id: str) -> bool:
        """``GroupMetadataManager.acceptJoiningMember``: while preparing a rebalance the members
        awaiting a join count (the last to rejoin are kicked out if the limit went down);
        otherwise the members."""
        limit = self.conf("group.max.size")
        member = group.members.get(member_id)
        if group.state in (EMPTY, DEAD):
            return True
        if group.state == PREPARING_REBALANCE:
            if member is not None and member.join_waiter is not None:
                return True
            awaiting = sum(1 for m in group.members.values() if m.join_waiter is not None)
            return awaiting < limit
        return member is not None or len(group.members) < limit

    def _join_known(
        self,
        group: Group,
        waiter: Waiter,
        member_id: str,
        instance_id: str | None,
        protocol_type: str,
        protocols: list[tuple[str, bytes]],
        session_timeout_ms: int,
        rebalance_timeout_ms: int,
        client_id: str,
        client_host: str,
        now_ms: int,
    ) -> None:
        if member_id in group.pending_members:
            del group.pending_members[member_id]
            member = Member(
                member_id, instance_id, client_id, client_host, rebalance_timeout_ms,
                session_timeout_ms, protocol_type, protocols, is_new=True,
            )  # fmt: skip
            self._add_member_and_rebalance(group, member, waiter, now_ms)
            return
        error = self._validate_member(group, member_id, instance_id)
        if error is not ErrorCode.NONE:
            waiter.resolve(JoinResult(error, member_id=member_id))
            return
        member = group.members[member_id]
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.session_timeout_ms = session_timeout_ms
        member.client_id = client_id
        if group.state == PREPARING_REBALANCE:
            self._update_member_and_rebalance(group, member, protocols, waiter, now_ms)
        elif group.state == COMPLETING_REBALANCE:
            if member.matches(protocols):
                # the member lost the join response: send it again
                waiter.resolve(self._join_result(group, member, ErrorCode.NONE))
            else:
                self._update_member_and_rebalance(group, member, protocols, waiter, now_ms)
        elif group.state == STABLE:
            if group.leader_id == member_id or not member.matches(protocols):
                self._update_member_and_rebalance(group, member, protocols, waiter, now_ms)
            else:
                waiter.resolve(self._join_result(group, member, ErrorCode.NONE))
        else:
            waiter.resolve(JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id=member_id))

    def _validate_member(self, group: Group, member_id: str, instance_id: str | None) -> ErrorCode:
        """``ClassicGroup.validateMember``: the instance id first (unknown, or mapped to another
        member id: fenced), then the member id."""
        if instance_id is not None:
            known = group.static_members.get(instance_id)
            if known is None:
                return ErrorCode.UNKNOWN_MEMBER_ID
            if known != member_id:
                return ErrorCode.FENCED_INSTANCE_ID
        if member_id not in group.members:
            return ErrorCode.UNKNOWN_MEMBER_ID
        return ErrorCode.NONE

    def _add_member_and_rebalance(
        self, group: Group, member: Member, waiter: Waiter, now_ms: int
    ) -> None:
        member.join_waiter = waiter
        member.heartbeat_deadline = now_ms + NEW_MEMBER_JOIN_TIMEOUT_MS
        group.members[member.member_id] = member
        if member.group_instance_id is not None:
            group.static_members[member.group_instance_id] = member.member_id
        if group.protocol_type is None or group.is_empty() or len(group.members) == 1:
            group.protocol_type = member.protocol_type
        group.new_member_added = True
        if group.state != PREPARING_REBALANCE:
            self._prepare_rebalance(group, now_ms)

    def _update_member_and_rebalance(
        self,
        group: Group,
        member: Member,
        protocols: list[tuple[str, bytes]],
        waiter: Waiter,
        now_ms: int,
    ) -> None:
        member.protocols = protocols
        if member.join_waiter is not None and member.join_waiter is not waiter:
            member.join_waiter.resolve(
                JoinResult(ErrorCode.REBALANCE_IN_PROGRESS, member_id=member.member_id)
            )
        member.join_waiter = waiter
        if group.state in (STABLE, COMPLETING_REBALANCE, EMPTY):
            self._prepare_rebalance(group, now_ms)

    def _prepare_rebalance(self, group: Group, now_ms: int) -> None:
        """``prepareRebalance``: cancel the sync phase, start the join phase and its timer."""
        if group.state == COMPLETING_REBALANCE:
            for member in group.members.values():
                member.assignment = b""
                if member.sync_waiter is not None:
                    member.sync_waiter.resolve(SyncResult(ErrorCode.REBALANCE_IN_PROGRESS))
                    member.sync_waiter = None
        group.pending_sync.clear()  # removeSyncExpiration
        initial = group.state == EMPTY
        group.state = PREPARING_REBALANCE
        group.state_timestamp = now_ms
        timeout = max((m.rebalance_timeout_ms for m in group.members.values()), default=0)
        delay = self.conf("group.initial.rebalance.delay.ms")
        if initial and delay > 0:
            # InitialDelayedJoin: wait for more members, up to the rebalance timeout
            group.in_initial_delay = True
            group.new_member_added = False
            group.rebalance_deadline = now_ms + delay
            group.initial_delay_remaining = max(timeout - delay, 0)
        else:
            group.in_initial_delay = False
            group.rebalance_deadline = now_ms + timeout
        self._moved(group)

    def _maybe_complete_join(self, group: Group, now_ms: int) -> None:
        if group.state == PREPARING_REBALANCE and not group.in_initial_delay and group.all_joined():
            self._complete_join(group, now_ms)

    def _complete_join(self, group: Group, now_ms: int) -> None:
        """``completeClassicGroupJoin``: drop who did not rejoin, next generation, answer all."""
        for member in list(group.members.values()):
            if member.join_waiter is None:
                self._remove_member(group, member.member_id)
        group.pending_members.clear()
        group.generation_id += 1
        group.rebalance_deadline = None
        group.in_initial_delay = False
        group.state_timestamp = now_ms
        if group.is_empty():
            group.state = EMPTY
            group.protocol_name = None
            group.leader_id = None
            self._store_group(group, now_ms)
            self._moved(group)
            return
        if group.leader_id not in group.members or (
            group.members[group.leader_id].join_waiter is None
        ):
            group.leader_id = next(iter(group.members))
        group.protocol_name = group.select_protocol()
        group.state = COMPLETING_REBALANCE
        # every member must sync within the rebalance timeout (KIP-814's pending sync timer)
        group.rebalance_deadline = now_ms + max(
            m.rebalance_timeout_ms for m in group.members.values()
        )
        group.pending_sync = set(group.members)
        for member in group.members.values():
            waiter = member.join_waiter
            member.join_waiter = None
            member.is_new = False
            member.heartbeat_deadline = now_ms + member.session_timeout_ms
            if waiter is not None:
                waiter.resolve(self._join_result(group, member, ErrorCode.NONE))
        self._moved(group)

    def _join_result(self, group: Group, member: Member, error: ErrorCode) -> JoinResult:
        members: list[tuple[str, str | None, bytes]] = []
        if member.member_id == group.leader_id:
            members = [
                (m.member_id, m.group_instance_id, m.metadata(group.protocol_name))
                for m in group.members.values()
            ]
        return JoinResult(
            error,
            generation_id=group.generation_id,
            protocol_type=group.protocol_type,
            protocol_name=group.protocol_name,
            leader=group.leader_id or "",
            member_id=member.member_id,
            members=members,
        )

    # --- SyncGroup ----------------------------------------------------------------------------

    def sync(
        self,
        group_id: str,
        generation_id: int,
        member_id: str,
        group_instance_id: str | None,
        protocol_type: str | None,
        protocol_name: str | None,
        assignments: Iterable[tuple[str, bytes]],
        now_ms: int,
    ) -> Waiter:
        """``GroupMetadataManager.classicGroupSync``."""
        waiter = Waiter()
        if not group_id:  # GroupCoordinatorService.syncGroup
            waiter.resolve(SyncResult(ErrorCode.INVALID_GROUP_ID))
            return waiter
        self.expire_due(group_id, now_ms)
        group = self.groups.get(group_id)
        if group is None or group.state == DEAD:
            waiter.resolve(SyncResult(ErrorCode.UNKNOWN_MEMBER_ID))
            return waiter
        error = self._validate_member(group, member_id, group_instance_id)
        if error is ErrorCode.NONE and generation_id != group.generation_id:
            error = ErrorCode.ILLEGAL_GENERATION
        if error is ErrorCode.NONE and (
            (protocol_type is not None and protocol_type != group.protocol_type)
            or (protocol_name is not None and protocol_name != group.protocol_name)
        ):
            error = ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        if error is not ErrorCode.NONE:
            waiter.resolve(SyncResult(error))
            return waiter
        member = group.members[member_id]
        if group.state == EMPTY:
            waiter.resolve(SyncResult(ErrorCode.UNKNOWN_MEMBER_ID))
        elif group.state == PREPARING_REBALANCE:
            waiter.resolve(SyncResult(ErrorCode.REBALANCE_IN_PROGRESS))
        elif group.state == STABLE:
            member.heartbeat_deadline = now_ms + member.session_timeout_ms
            self._synced(group, member_id)
            waiter.resolve(self._sync_result(group, member))
        else:  # CompletingRebalance
            member.heartbeat_deadline = now_ms + member.session_timeout_ms
            self._synced(group, member_id)
            if member.sync_waiter is not None:
                member.sync_waiter.resolve(SyncResult(ErrorCode.REBALANCE_IN_PROGRESS))
            member.sync_waiter = waiter
            if member_id == group.leader_id:
                given = dict(assignments)
                for m in group.members.values():
                    m.assignment = bytes(given.get(m.member_id, b""))
                group.state = STABLE
                group.state_timestamp = now_ms
                self._store_group(group, now_ms)
                for m in group.members.values():
                    if m.sync_waiter is not None:
                        m.sync_waiter.resolve(self._sync_result(group, m))
                        m.sync_waiter = None
                self._moved(group)
        return waiter

    @staticmethod
    def _synced(group: Group, member_id: str) -> None:
        """``removePendingSyncMember``: the sync timer ends when every member has synced."""
        group.pending_sync.discard(member_id)
        if not group.pending_sync:
            group.rebalance_deadline = None

    @staticmethod
    def _sync_result(group: Group, member: Member) -> SyncResult:
        return SyncResult(
            ErrorCode.NONE, group.protocol_type, group.protocol_name, member.assignment
        )

    # --- Heartbeat and LeaveGroup -------------------------------------------------------------

    def heartbeat(
        self,
        group_id: str,
        generation_id: int,
        member_id: str,
        group_instance_id: str | None,
        now_ms: int,
    ) -> ErrorCode:
        """``GroupMetadataManager.classicGroupHeartbeat``."""
        if not group_id:  # GroupCoordinatorService.heartbeat
            return ErrorCode.INVALID_GROUP_ID
        self.expire_due(group_id, now_ms)
        group = self.groups.get(group_id)
        if group is None or group.state == DEAD:
            return ErrorCode.UNKNOWN_MEMBER_ID
        # validateClassicGroupHeartbeat: member, generation; then the state
        error = self._validate_member(group, member_id, group_instance_id)
        if error is not ErrorCode.NONE:
            return error
        if generation_id != group.generation_id:
            return ErrorCode.ILLEGAL_GENERATION
        if group.state == EMPTY:
            return ErrorCode.UNKNOWN_MEMBER_ID
        member = group.members[member_id]
        member.heartbeat_deadline = now_ms + member.session_timeout_ms
        if group.state == PREPARING_REBALANCE:
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    def leave(
        self, group_id: str, members: list[tuple[str, str | None]], now_ms: int
    ) -> tuple[ErrorCode, list[tuple[str, str | None, ErrorCode]]]:
        """``classicGroupLeave``: the top-level error and one error per leaving member."""
        if not group_id:  # GroupCoordinatorService.leaveGroup
            return ErrorCode.INVALID_GROUP_ID, []
        self.expire_due(group_id, now_ms)
        group = self.groups.get(group_id)
        if group is None or group.state == DEAD:
            # the service answers a missing group member by member
            return ErrorCode.NONE, [(m, i, ErrorCode.UNKNOWN_MEMBER_ID) for m, i in members]
        results: list[tuple[str, str | None, ErrorCode]] = []
        left = False
        # classicGroupLeaveToClassicGroup; every answer echoes the request's member id (the
        # admin client matches its removals by (member id, instance id), the member id empty)
        for member_id, instance_id in members:
            error = ErrorCode.NONE
            if not member_id:  # removal by instance id (Admin.removeMembersFromConsumerGroup)
                known = group.static_members.get(instance_id) if instance_id is not None else None
                if known is None:
                    error = ErrorCode.UNKNOWN_MEMBER_ID
                else:
                    self._remove_member(group, known)
            elif member_id in group.pending_members:
                del group.pending_members[member_id]
            else:
                error = self._validate_member(group, member_id, instance_id)
                if error is ErrorCode.NONE:
                    self._remove_member(group, member_id)
            results.append((member_id, instance_id, error))
            left = left or error is ErrorCode.NONE
        if left:
            self._after_removal(group, now_ms)
        return ErrorCode.NONE, results

    def _remove_member(self, group: Group, member_id: str) -> None:
        member = group.members.pop(member_id)
        group.pending_sync.discard(member_id)
        instance_id = member.group_instance_id
        if instance_id is not None and group.static_members.get(instance_id) == member_id:
            del group.static_members[instance_id]
        if member.join_waiter is not None:
            member.join_waiter.resolve(JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id=member_id))
        if member.sync_waiter is not None:
            member.sync_waiter.resolve(SyncResult(ErrorCode.UNKNOWN_MEMBER_ID))
        member.join_waiter = member.sync_waiter = None
        if group.leader_id == member_id:
            group.leader_id = next(iter(group.members), None)  # a new leader is chosen on join

    def _after_removal(self, group: Group, now_ms: int) -> None:
        """``removeMemberAndUpdateClassicGroup``."""
        if group.state in (STABLE, COMPLETING_REBALANCE):
            self._prepare_rebalance(group, now_ms)
        if group.state == PREPARING_REBALANCE:
            self._maybe_complete_join(group, now_ms)

    # --- timers -------------------------------------------------------------------------------

    def tick(self, now_ms: int) -> None:
        """Expire sessions, pending members and rebalance deadlines (every 100 ms), and offsets
        (every ``offsets.retention.check.interval.ms``)."""
        self.consumer.tick(now_ms)
        if self._next_offsets_cleanup is None:
            self._next_offsets_cleanup = now_ms + self.conf("offsets.retention.check.interval.ms")
        if now_ms >= self._next_offsets_cleanup:
            self._next_offsets_cleanup = now_ms + self.conf("offsets.retention.check.interval.ms")
            self.cleanup_group_metadata(now_ms)
        for group in list(self.groups.values()):
            self._run_timers(group, now_ms)

    def expire_due(self, group_id: str, now_ms: int) -> None:
        """Run the group's timers that are due before a request looks at it: Kafka keeps a
        timer per member (and per rebalance), which fires at its deadline; ``tick`` runs every
        100 ms, so a request just after a deadline would otherwise see the member still there
        (a DeleteGroups answered NON_EMPTY_GROUP, a heartbeat accepted)."""
        group = self.groups.get(group_id)
        if group is None:
            return
        if group.consumer is not None:
            self.consumer.run_timers(group.consumer, now_ms)
        else:
            self._run_timers(group, now_ms)

    def _run_timers(self, group: Group, now_ms: int) -> None:
        """The group's due timers: pending members, sessions, the rebalance deadline."""
        changed = False
        for pending, expiry in list(group.pending_members.items()):
            if now_ms >= expiry:
                del group.pending_members[pending]
                changed = True
        for member in list(group.members.values()):
            if member.join_waiter is not None or member.sync_waiter is not None:
                continue  # ClassicGroupMember.shouldKeepAlive
            if now_ms >= member.heartbeat_deadline:
                log.info("member %s of group %s expired", member.member_id, group.group_id)
                self._remove_member(group, member.member_id)
                changed = True
        if changed:
            self._after_removal(group, now_ms)
        deadline = group.rebalance_deadline
        if deadline is not None and now_ms >= deadline:
            if group.state == PREPARING_REBALANCE:
                if (
                    group.in_initial_delay
                    and group.new_member_added
                    and group.initial_delay_remaining > 0
                ):
                    delay = min(
                        self.conf("group.initial.rebalance.delay.ms"),
                        group.initial_delay_remaining,
                    )
                    group.initial_delay_remaining -= delay
                    group.new_member_added = False
                    group.rebalance_deadline = now_ms + delay
                else:
                    group.in_initial_delay = False
                    self._complete_join(group, now_ms)
            elif group.state in (COMPLETING_REBALANCE, STABLE) and group.pending_sync:
                # expirePendingSync: drop who did not sync in time, rebalance again
                for member_id in sorted(group.pending_sync):
                    if member_id in group.members:
                        self._remove_member(group, member_id)
                group.pending_sync.clear()
                self._prepare_rebalance(group, now_ms)
                self._maybe_complete_join(group, now_ms)
            else:
                group.rebalance_deadline = None

    # --- offset retention (KIP-211) -----------------------------------------------------------

    def cleanup_group_metadata(self, now_ms: int) -> int:
        """``cleanupGroupMetadata``: expire offsets (module doc), tombstone them, and delete the
        empty groups whose offsets all expired. The number of offsets expired."""
        retention_ms = self.conf("offsets.retention.minutes") * 60_000
        expired_count = 0
        for group in list(self.groups.values()):
            if group.state == DEAD:
                continue
            expired, all_expired = self._expired_offsets(group, now_ms, retention_ms)
            records: list[tuple[bytes, bytes | None]] = [
                (_offset_key(group.group_id, tp), None) for tp in expired
            ]
            delete = all_expired and (
                not group.consumer.members if group.consumer is not None else group.state == EMPTY
            )
            if delete:
                if group.consumer is not None:
                    records += ConsumerGroups.tombstones(group.consumer)
                else:
                    records.append((_group_key(group.group_id), None))
            if not records:
                continue
            self._append(group.group_id, records, now_ms)
            for tp in expired:
                del group.offsets[tp]
            expired_count += len(expired)
            if expired:
                log.info(
                    "group %s: %d offsets expired (%s)",
                    group.group_id,
                    len(expired),
                    ", ".join(f"{t}-{p}" for t, p in expired),
                )
            if delete:
                log.info("group %s: empty with no offsets left, deleted", group.group_id)
                group.state = DEAD
                del self.groups[group.group_id]
                self._moved(group)
        return expired_count

    def _expired_offsets(
        self, group: Group, now_ms: int, retention_ms: int
    ) -> tuple[list[tuple[str, int]], bool]:
        """``cleanupExpiredOffsets``: the group's expired partitions, and whether all of its
        offsets expired (None of them kept, no transaction pending)."""
        use_state_time = False
        if group.consumer is not None:  # ConsumerGroup: by commit time
            subscribed = group.consumer.subscribed_topic_names() | set(
                group.consumer.subscription_metadata
            )
        elif not group.protocol_type:  # a simple group: by commit time
            subscribed = set()
        elif group.state == EMPTY:  # since it became Empty (else by commit time)
            subscribed, use_state_time = set(), group.state_timestamp >= 0
        elif group.state == STABLE and (topics := group.subscribed_topics()) is not None:
            subscribed = topics
        else:
            return [], False
        pending: set[tuple[str, int]] = set()
        for staged in group.pending_txn.values():
            pending.update(staged)
        expired: list[tuple[str, int]] = []
        all_expired = not group.pending_txn
        for tp, om in sorted(group.offsets.items()):
            if tp[0] in subscribed or tp in pending:
                all_expired = False
                continue
            if om.expire_timestamp >= 0:
                gone = now_ms >= om.expire_timestamp
            else:
                base = group.state_timestamp if use_state_time else om.commit_timestamp
                gone = now_ms - base >= retention_ms
            if gone:
                expired.append(tp)
            else:
                all_expired = False
        return expired, all_expired

    # --- offsets ------------------------------------------------------------------------------

    def validate_offset_commit(
        self,
        group_id: str,
        generation_id: int,
        member_id: str,
        group_instance_id: str | None,
        version: int,
        transactional: bool,
        now_ms: int,
    ) -> Group:
        """``OffsetMetadataManager.validateOffsetCommit`` / ``ClassicGroup.validateOffsetCommit``."""
        self.expire_due(group_id, now_ms)
        if group_id in self.streams.groups:  # a streams group's offsets: kept in a holder
            error = self.streams.validate_offset_commit(
                group_id, member_id, generation_id, transactional, now_ms
            )
            if error:
                raise GroupError(ErrorCode(error))
            return self._loaded_group(group_id, now_ms)
        group = self.groups.get(group_id)
        if group is None or group.state == DEAD:
            if generation_id < 0:
                group = self.groups[group_id] = Group(group_id, state_timestamp=now_ms)
                return group
            if transactional:
                raise GroupError(ErrorCode.ILLEGAL_GENERATION)
            raise GroupError(
                ErrorCode.GROUP_ID_NOT_FOUND if version >= 9 else ErrorCode.ILLEGAL_GENERATION
            )
        if group.consumer is not None:
            try:
                self.consumer.validate_offset_commit(
                    group.consumer, member_id, generation_id, version, transactional
                )
            except ConsumerGroupError as exc:
                raise GroupError(exc.error) from None
            return group
        if generation_id < 0 and group.state == EMPTY:
            return group  # a simple (admin / manual) commit
        # the member and its generation first, the group's state last: a member with a stale
        # generation learns ILLEGAL_GENERATION (and rejoins), not REBALANCE_IN_PROGRESS
        if generation_id >= 0 or member_id or group_instance_id is not None:
            error = self._validate_member(group, member_id, group_instance_id)
            if error is not ErrorCode.NONE:
                raise GroupError(error)
            if generation_id != group.generation_id:
                raise GroupError(ErrorCode.ILLEGAL_GENERATION)
        elif not transactional:
            # no member and no generation (OffsetCommit v0): only into an Empty group; a
            # transactional commit without them (TxnOffsetCommit v0-2) is accepted
            raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID)
        if transactional:
            return group  # the group's state does not hold transactional offsets
        if group.state == COMPLETING_REBALANCE:
            raise GroupError(ErrorCode.REBALANCE_IN_PROGRESS)
        # a commit keeps the member's session in Stable and PreparingRebalance
        # (OffsetMetadataManager.commitOffset)
        member = group.members[member_id]
        member.heartbeat_deadline = now_ms + member.session_timeout_ms
        return group

    def commit_offsets(
        self,
        group: Group,
        offsets: Mapping[tuple[str, int], OffsetAndMetadata],
        now_ms: int,
    ) -> None:
        if not offsets:
            return
        records = [_offset_record(group.group_id, tp, om) for tp, om in offsets.items()]
        self._append(group.group_id, records, now_ms)
        group.offsets.update(offsets)

    def stage_txn_offsets(
        self,
        group_id: str,
        producer_id: int,
        producer_epoch: int,
        offsets: Mapping[tuple[str, int], OffsetAndMetadata],
        now_ms: int | None = None,
    ) -> None:
        """TxnOffsetCommit: offsets that become visible when the transaction commits."""
        now = self._now() if now_ms is None else now_ms
        group = self.groups.get(group_id)
        if group is None:
            group = self.groups[group_id] = Group(group_id, state_timestamp=now)
        if offsets:
            records = [_offset_record(group_id, tp, om) for tp, om in offsets.items()]
            self._append(group_id, records, now, producer=(producer_id, producer_epoch))
        group.pending_txn.setdefault(producer_id, {}).update(offsets)

    def complete_txn(self, producer_id: int, commit: bool) -> None:
        """The transaction's marker is written: apply (commit) or drop its staged offsets."""
        for group in self.groups.values():
            staged = group.pending_txn.pop(producer_id, None)
            if staged and commit:
                group.offsets.update(staged)

    def fetch_offsets(
        self,
        group_id: str,
        wanted: list[tuple[str, list[int] | None]] | None,
        require_stable: bool,
    ) -> list[tuple[str, list[tuple[int, OffsetAndMetadata | None, ErrorCode]]]]:
        """Offsets by topic; ``wanted`` None means every committed offset."""
        group = self.groups.get(group_id)
        offsets = group.offsets if group is not None else {}
        pending: set[tuple[str, int]] = set()
        if require_stable and group is not None:
            for staged in group.pending_txn.values():
                pending.update(staged)
        if wanted is None:
            by_topic: dict[str, list[int]] = {}
            for topic, index in sorted(offsets):
                by_topic.setdefault(topic, []).append(index)
            wanted = [(topic, indexes) for topic, indexes in by_topic.items()]
        out: list[tuple[str, list[tuple[int, OffsetAndMetadata | None, ErrorCode]]]] = []
        for topic, indexes in wanted:
            if indexes is None:
                indexes = sorted(i for t, i in offsets if t == topic)
            rows: list[tuple[int, OffsetAndMetadata | None, ErrorCode]] = []
            for index in indexes:
                if (topic, index) in pending:
                    rows.append((index, None, ErrorCode.UNSTABLE_OFFSET_COMMIT))
                else:
                    rows.append((index, offsets.get((topic, index)), ErrorCode.NONE))
            out.append((topic, rows))
        return out

    def delete_offsets(
        self, group_id: str, partitions: list[tuple[str, int]], now_ms: int
    ) -> tuple[ErrorCode, dict[tuple[str, int], ErrorCode]]:
        """``OffsetMetadataManager.deleteOffsets``."""
        self.expire_due(group_id, now_ms)
        group = self.groups.get(group_id)
        if group is None or group.state == DEAD:
            return ErrorCode.GROUP_ID_NOT_FOUND, {}
        subscribed: set[str] = set()
        if group.consumer is not None:
            subscribed = group.consumer.subscribed_topic_names()
        elif not group.is_empty():
            topics = group.subscribed_topics()
            if topics is None:
                return ErrorCode.NON_EMPTY_GROUP, {}
            subscribed = topics
        errors: dict[tuple[str, int], ErrorCode] = {}
        tombstones = []
        for tp in partitions:
            if tp[0] in subscribed:
                errors[tp] = ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC
                continue
            errors[tp] = ErrorCode.NONE
            if tp in group.offsets:
                tombstones.append((_offset_key(group_id, tp), None))
        if tombstones:
            self._append(group_id, tombstones, now_ms)
            for tp, error in errors.items():
                if error is ErrorCode.NONE:
                    group.offsets.pop(tp, None)
        return ErrorCode.NONE, errors

    def delete_group(self, group_id: str, now_ms: int) -> ErrorCode:
        """``GroupMetadataManager.deleteGroups``: only an empty (or dead) group."""
        self.expire_due(group_id, now_ms)
        group = self.groups.get(group_id)
        if group is None or group.state == DEAD:  # the empty id too (GroupCoordinatorService)
            return ErrorCode.GROUP_ID_NOT_FOUND
        if group.consumer is not None and group.consumer.members:
            return ErrorCode.NON_EMPTY_GROUP
        if group.state != EMPTY:
            return ErrorCode.NON_EMPTY_GROUP
        records: list[tuple[bytes, bytes | None]] = [
            (_offset_key(group_id, tp), None) for tp in sorted(group.offsets)
        ]
        if group.consumer is not None:
            records += ConsumerGroups.tombstones(group.consumer)
        else:
            records.append((_group_key(group_id), None))
        self._append(group_id, records, now_ms)
        group.state = DEAD
        del self.groups[group_id]
        return ErrorCode.NONE

    # --- persistence --------------------------------------------------------------------------

    def _now(self) -> int:
        return self.state.now_ms() if self.state is not None else 0

    def offsets_partition(self, group_id: str) -> Partition | None:
        """The group's partition of ``__consumer_offsets``, created on first use."""
        state = self.state
        if state is None:
            return None
        topic = state.topics.get(GROUP_TOPIC)
        if topic is None:
            topic = state.create_topic(
                GROUP_TOPIC,
                self.conf("offsets.topic.num.partitions"),
                {
                    "cleanup.policy": "compact",
                    "segment.bytes": "104857600",
                    "compression.type": "producer",
                },
            )
        return topic.partitions[partition_for(group_id, len(topic.partitions))]

    def _append(
        self,
        group_id: str,
        records: Sequence[tuple[bytes, bytes | None]],
        now_ms: int,
        producer: tuple[int, int] | None = None,
    ) -> None:
        if not self.persist:
            return
        partition = self.offsets_partition(group_id)
        if partition is None:
            return
        options: dict[str, Any] = {}
        if producer is not None:
            options = {
                "producer_id": producer[0],
                "producer_epoch": producer[1],
                "is_transactional": True,
            }
        builder = BatchBuilder(2, 0, **options)
        for key, value in records:
            builder.append(None, now_ms, key, value)
        assert self.state is not None
        self.state.append_as_coordinator(partition, builder.build(), now_ms)

    def _store_group(self, group: Group, now_ms: int) -> None:
        """``GroupCoordinatorRecordHelpers.newGroupMetadataRecord`` (value v3)."""
        members = [
            MEMBER_METADATA(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                client_id=m.client_id,
                client_host=m.client_host,
                rebalance_timeout=m.rebalance_timeout_ms,
                session_timeout=m.session_timeout_ms,
                subscription=m.metadata(group.protocol_name),
                assignment=m.assignment,
            )
            for m in group.members.values()
        ]
        value = GROUP_METADATA_VALUE(
            protocol_type=group.protocol_type or "",
            generation=group.generation_id,
            protocol=group.protocol_name,
            leader=group.leader_id,
            current_state_timestamp=now_ms,
            members=members,
        )
        self._append(group.group_id, [(_group_key(group.group_id), _versioned(value, 3))], now_ms)

    def load(self) -> None:
        """Replay ``__consumer_offsets`` (``GroupMetadataManager.loadGroupsAndOffsets``)."""
        state = self.state
        if state is None or GROUP_TOPIC not in state.topics:
            return
        now = state.now_ms()
        for partition in state.topics[GROUP_TOPIC].partitions:
            self._load_partition(partition, now)

    def _load_partition(self, partition: Partition, now_ms: int) -> None:
        pending: dict[int, list[tuple[str, tuple[str, int], OffsetAndMetadata | None]]] = {}
        for batch in partition.log.iter_batches():
            if batch.is_control:
                for record in batch:
                    _, control_type = parse_control_key(record.key)
                    staged = pending.pop(batch.producer_id, [])
                    if control_type == 1:  # COMMIT
                        for group_id, tp, om in staged:
                            group = self._loaded_group(group_id, now_ms)
                            if om is not None:
                                group.offsets[tp] = om
                continue
            for record in batch:
                if record.key is None:
                    continue
                self._replay(
                    bytes(record.key),
                    None if record.value is None else bytes(record.value),
                    batch.producer_id if batch.is_transactional else None,
                    pending,
                    now_ms,
                )
        for pid, staged in pending.items():
            for group_id, tp, om in staged:
                if om is not None:
                    self._loaded_group(group_id, now_ms).pending_txn.setdefault(pid, {})[tp] = om

    def _loaded_group(self, group_id: str, now_ms: int) -> Group:
        group = self.groups.get(group_id)
        if group is None:
            group = self.groups[group_id] = Group(group_id, state_timestamp=now_ms)
        return group

    def _replay(
        self,
        key: bytes,
        value: bytes | None,
        txn_pid: int | None,
        pending: dict[int, list[tuple[str, tuple[str, int], OffsetAndMetadata | None]]],
        now_ms: int,
    ) -> None:
        (key_version,) = _VERSION.unpack_from(key, 0)
        if key_version in (0, 1):
            k = OFFSET_COMMIT_KEY.decode(memoryview(key)[2:], key_version)
            tp = (k.topic, k.partition)
            om = None
            if value is not None:
                (vv,) = _VERSION.unpack_from(value, 0)
                v = OFFSET_COMMIT_VALUE.decode(memoryview(value)[2:], min(vv, 4))
                om = OffsetAndMetadata(
                    v.offset,
                    v.leader_epoch if vv >= 3 else -1,
                    v.metadata,
                    v.commit_timestamp,
                    v.expire_timestamp if vv == 1 else -1,
                )
            if txn_pid is not None:
                pending.setdefault(txn_pid, []).append((k.group, tp, om))
                return
            group = self._loaded_group(k.group, now_ms)
            if om is None:
                group.offsets.pop(tp, None)
            else:
                group.offsets[tp] = om
        elif key_version == 2:
            k = GROUP_METADATA_KEY.decode(memoryview(key)[2:], 2)
            if value is None:
                dropped = self.groups.pop(k.group, None)
                if dropped is not None and (dropped.offsets or dropped.pending_txn):
                    self.groups[k.group] = Group(
                        k.group, offsets=dropped.offsets, pending_txn=dropped.pending_txn
                    )
                return
            (vv,) = _VERSION.unpack_from(value, 0)
            v = GROUP_METADATA_VALUE.decode(memoryview(value)[2:], min(vv, 4))
            group = self._loaded_group(k.group, now_ms)
            group.generation_id = v.generation
            group.protocol_type = v.protocol_type or None
            group.protocol_name = v.protocol
            group.leader_id = v.leader
            # when it entered its state (Empty: the base of offset retention); -1: unknown
            group.state_timestamp = v.current_state_timestamp if vv >= 2 else -1
            group.members.clear()
            group.static_members.clear()
            for mm in v.members:
                member = Member(
                    mm.member_id,
                    mm.group_instance_id,
                    mm.client_id,
                    mm.client_host,
                    mm.rebalance_timeout if vv >= 1 else mm.session_timeout,
                    mm.session_timeout,
                    v.protocol_type,
                    [(v.protocol or "", bytes(mm.subscription))],
                    assignment=bytes(mm.assignment),
                    heartbeat_deadline=now_ms + mm.session_timeout,
                )
                group.members[member.member_id] = member
                if member.group_instance_id is not None:
                    group.static_members[member.group_instance_id] = member.member_id
            group.state = STABLE if group.members else EMPTY
        elif 3 <= key_version <= 8:
            self.consumer.replay(key_version, key, value, now_ms)
        elif key_version in STREAMS_KEY_VERSIONS:
            self.streams.replay(key_version, key, value, now_ms)

    # --- describe -----------------------------------------------------------------------------

    def list_groups(self, now_ms: int | None = None) -> list[Group]:
        if now_ms is not None:
            for group_id in list(self.groups):
                self.expire_due(group_id, now_ms)
        return [g for g in self.groups.values() if g.state != DEAD]


def _versioned(message: Any, version: int) -> bytes:
    return _VERSION.pack(version) + bytes(message.encode(version))


def _offset_key(group_id: str, tp: tuple[str, int]) -> bytes:
    return _versioned(OFFSET_COMMIT_KEY(group=group_id, topic=tp[0], partition=tp[1]), 1)


def _group_key(group_id: str) -> bytes:
    return _versioned(GROUP_METADATA_KEY(group=group_id), 2)


def _offset_record(
    group_id: str, tp: tuple[str, int], om: OffsetAndMetadata
) -> tuple[bytes, bytes]:
    """``newOffsetCommitRecord``: value v1 with an expire timestamp, else v3."""
    version = 1 if om.expire_timestamp >= 0 else 3
    value = OFFSET_COMMIT_VALUE(
        offset=om.offset,
        leader_epoch=om.leader_epoch,
        metadata=om.metadata,
        commit_timestamp=om.commit_timestamp,
        expire_timestamp=om.expire_timestamp,
    )
    return _offset_key(group_id, tp), _versioned(value, version)


def group_coordinator(state: BrokerState) -> GroupCoordinator:
    """The state's group coordinator (``state.services["group"]``), made and loaded on first use."""
    found = state.services.get("group")
    if isinstance(found, GroupCoordinator):
        return found
    coordinator = GroupCoordinator(state)
    coordinator.load()
    state.services["group"] = coordinator
    state.add_ticker(coordinator.tick)
    return coordinator
