"""KIP-848 consumer groups: ConsumerGroupHeartbeat, ConsumerGroupDescribe, and their records.

Approach: a sans-IO state machine beside the classic coordinator (``_group.GroupCoordinator``),
driven by heartbeats and ``now_ms`` (style rule 27), following Kafka's group-coordinator module
(``GroupMetadataManager.consumerGroupHeartbeat``, ``ConsumerGroup``, ``ConsumerGroupMember``,
``CurrentAssignmentBuilder``, ``TargetAssignmentBuilder``, ``UniformAssignor``, ``RangeAssignor``).

Every decision is a list of records, written to the group's partition of ``__consumer_offsets``
(key versions 3..8, values v0, as ``GroupCoordinatorRecordHelpers`` makes them) and then replayed
into memory by the same ``replay`` that loads the topic at start, so what survives a restart is
exactly what a heartbeat decided. A consumer group lives in the classic coordinator's ``Group``
(``group.consumer``): both kinds share group ids and committed offsets, as in Kafka.

Three epochs: the *group epoch* moves when subscriptions or the subscribed topics' metadata change;
the *target assignment epoch* catches up with it when the assignor computes a new target; each
*member epoch* catches up with the target by reconciliation. A member is given a partition only
once no other member still owns it (assigned or pending revocation): until then it is
"unreleased" (``CurrentAssignmentBuilder.computeNextAssignment``).
"""

from __future__ import annotations

import logging
import re
import struct
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Final

from kwire.protocol import ErrorCode, message_class, struct_class

if TYPE_CHECKING:
    from kwire.broker._group import Group, GroupCoordinator

__all__ = [
    "ASSIGNING",
    "ASSIGNORS",
    "DEAD",
    "EMPTY",
    "LEAVE_GROUP_MEMBER_EPOCH",
    "LEAVE_GROUP_STATIC_MEMBER_EPOCH",
    "RECONCILING",
    "STABLE",
    "ConsumerGroup",
    "ConsumerGroups",
    "ConsumerMember",
    "HeartbeatResult",
    "range_assign",
    "uniform_assign",
]

log = logging.getLogger("kwire.broker.group")

EMPTY: Final = "Empty"
ASSIGNING: Final = "Assigning"
RECONCILING: Final = "Reconciling"
STABLE: Final = "Stable"
DEAD: Final = "Dead"

# ConsumerGroupMember.MemberState (the int8 of ConsumerGroupCurrentMemberAssignmentValue)
MEMBER_STABLE: Final = 0
UNREVOKED_PARTITIONS: Final = 1
UNRELEASED_PARTITIONS: Final = 2

LEAVE_GROUP_MEMBER_EPOCH: Final = -1
LEAVE_GROUP_STATIC_MEMBER_EPOCH: Final = -2

_DEFAULTS: Final = {
    "group.consumer.heartbeat.interval.ms": 5000,
    "group.consumer.session.timeout.ms": 45000,
    "group.consumer.max.size": 2**31 - 1,
}

KEY_METADATA: Final = 3
KEY_PARTITION_METADATA: Final = 4
KEY_MEMBER: Final = 5
KEY_TARGET_METADATA: Final = 6
KEY_TARGET_MEMBER: Final = 7
KEY_CURRENT_ASSIGNMENT: Final = 8

METADATA_KEY: Final = message_class("ConsumerGroupMetadataKey")
METADATA_VALUE: Final = message_class("ConsumerGroupMetadataValue")
PARTITION_METADATA_KEY: Final = message_class("ConsumerGroupPartitionMetadataKey")
PARTITION_METADATA_VALUE: Final = message_class("ConsumerGroupPartitionMetadataValue")
TOPIC_METADATA: Final = struct_class(PARTITION_METADATA_VALUE, "topics")
MEMBER_KEY: Final = message_class("ConsumerGroupMemberMetadataKey")
MEMBER_VALUE: Final = message_class("ConsumerGroupMemberMetadataValue")
TARGET_METADATA_KEY: Final = message_class("ConsumerGroupTargetAssignmentMetadataKey")
TARGET_METADATA_VALUE: Final = message_class("ConsumerGroupTargetAssignmentMetadataValue")
TARGET_MEMBER_KEY: Final = message_class("ConsumerGroupTargetAssignmentMemberKey")
TARGET_MEMBER_VALUE: Final = message_class("ConsumerGroupTargetAssignmentMemberValue")
TARGET_PARTITIONS: Final = struct_class(TARGET_MEMBER_VALUE, "topic_partitions")
CURRENT_KEY: Final = message_class("ConsumerGroupCurrentMemberAssignmentKey")
CURRENT_VALUE: Final = message_class("ConsumerGroupCurrentMemberAssignmentValue")
CURRENT_PARTITIONS: Final = struct_class(CURRENT_VALUE, "assigned_partitions")
_VERSION: Final = struct.Struct(">h")

#: topic id -> partitions
Assignment = dict[uuid.UUID, frozenset[int]]
Record = tuple[bytes, bytes | None]


class ConsumerGroupError(Exception):
    """A heartbeat's failure: the Kafka error and message to answer with."""

    def __init__(self, error: ErrorCode, message: str | None = None) -> None:
        self.error = error
        self.message = message
        super().__init__(f"{error.name}: {message}" if message else error.name)


# --- the model ----------------------------------------------------------------------------------


def _freeze(assignment: Mapping[uuid.UUID, Iterable[int]]) -> Assignment:
    return {t: frozenset(ps) for t, ps in assignment.items() if ps}


@dataclass
class ConsumerMember:
    """``ConsumerGroupMember``: what a member subscribes to and what it owns now."""

    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    rebalance_timeout_ms: int = -1
    server_assignor: str | None = None
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: int = MEMBER_STABLE
    assigned: Assignment = field(default_factory=dict)
    pending_revocation: Assignment = field(default_factory=dict)

    def subscription(self) -> tuple[Any, ...]:
        return (
            self.instance_id,
            self.rack_id,
            self.client_id,
            self.client_host,
            self.subscribed_topic_names,
            self.subscribed_topic_regex,
            self.rebalance_timeout_ms,
            self.server_assignor,
        )

    def assignment_state(self) -> tuple[Any, ...]:
        return (
            self.member_epoch,
            self.previous_member_epoch,
            self.state,
            self.assigned,
            self.pending_revocation,
        )

    def is_reconciled_to(self, epoch: int) -> bool:
        return self.state == MEMBER_STABLE and self.member_epoch == epoch


@dataclass
class ConsumerGroup:
    """``ConsumerGroup``: members, the three epochs, the target assignment, partition owners."""

    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ConsumerMember] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)  # instance id -> member id
    #: topic name -> (topic id, partition count) of the subscribed topics that exist
    subscription_metadata: dict[str, tuple[uuid.UUID, int]] = field(default_factory=dict)
    target: dict[str, Assignment] = field(default_factory=dict)
    #: (topic id, partition) -> (member id, epoch): who owns it now (assigned or revoking)
    owners: dict[tuple[uuid.UUID, int], tuple[str, int]] = field(default_factory=dict)
    session_deadlines: dict[str, int] = field(default_factory=dict)
    rebalance_deadlines: dict[str, tuple[int, int]] = field(default_factory=dict)

    @property
    def state(self) -> str:
        """``ConsumerGroup.maybeUpdateGroupState``."""
        if not self.members:
            return EMPTY
        if self.group_epoch > self.assignment_epoch:
            return ASSIGNING
        if any(not m.is_reconciled_to(self.assignment_epoch) for m in self.members.values()):
            return RECONCILING
        return STABLE

    def subscribed_topic_names(self) -> set[str]:
        names: set[str] = set()
        for member in self.members.values():
            names.update(member.subscribed_topic_names)
        return names

    def preferred_assignor(self, default: str) -> str:
        """``computePreferredServerAssignor``: the one most members ask for."""
        counts: dict[str, int] = {}
        for member in self.members.values():
            if member.server_assignor is not None:
                counts[member.server_assignor] = counts.get(member.server_assignor, 0) + 1
        if not counts:
            return default
        return max(sorted(counts), key=lambda name: counts[name])

    def partition_epoch(self, topic_id: uuid.UUID, partition: int) -> int:
        owner = self.owners.get((topic_id, partition))
        return -1 if owner is None else owner[1]

    # replay helpers: ``ConsumerGroup.updateMember`` / ``removeMember``

    def _remove_owned(self, member: ConsumerMember) -> None:
        for assignment in (member.assigned, member.pending_revocation):
            for topic_id, partitions in assignment.items():
                for p in partitions:
                    owner = self.owners.get((topic_id, p))
                    if owner is not None and owner[0] == member.member_id:
                        del self.owners[topic_id, p]

    def _add_owned(self, member: ConsumerMember) -> None:
        for assignment in (member.assigned, member.pending_revocation):
            for topic_id, partitions in assignment.items():
                for p in partitions:
                    owner = self.owners.get((topic_id, p))
                    if owner is not None and owner[0] != member.member_id:
                        raise RuntimeError(
                            f"partition {topic_id}-{p} of group {self.group_id} is owned by "
                            f"{owner[0]}; {member.member_id} cannot own it too"
                        )
                    self.owners[topic_id, p] = (member.member_id, member.member_epoch)


@dataclass
class HeartbeatResult:
    error: ErrorCode = ErrorCode.NONE
    message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: Assignment | None = None


# --- assignors ----------------------------------------------------------------------------------

#: member id -> (subscribed topic ids, current target assignment, instance id)
AssignorMembers = Mapping[str, tuple[frozenset[uuid.UUID], Assignment, str | None]]


def uniform_assign(
    members: AssignorMembers, topics: Mapping[uuid.UUID, int]
) -> dict[str, Assignment]:
    """``UniformAssignor``: balanced (sizes differ by at most one among members that could take a
    partition) and sticky (a member keeps what it had while that stays balanced)."""
    if not members:
        return {}
    out: dict[str, dict[uuid.UUID, set[int]]] = {m: {} for m in members}
    load = dict.fromkeys(members, 0)
    owner: dict[tuple[uuid.UUID, int], str] = {}
    all_partitions = [(t, p) for t in sorted(topics) for p in range(topics[t])]
    eligible = {t: sorted(m for m, (subs, _, _) in members.items() if t in subs) for t in topics}
    # quota of a homogeneous group: keep at most ceil(P/M) of the previous assignment
    homogeneous = len({subs for subs, _, _ in members.values()}) == 1
    extra = 0
    quota = 0
    if homogeneous:
        count = sum(1 for t, _ in all_partitions if eligible[t])
        quota, extra = divmod(count, len(members))
    for member_id in sorted(members):
        subs, previous, _ = members[member_id]
        kept = [
            (t, p)
            for t in sorted(previous)
            if t in subs and t in topics
            for p in sorted(previous[t])
            if p < topics[t]
        ]
        if homogeneous:
            limit = quota
            if len(kept) > quota and extra > 0:
                limit += 1
                extra -= 1
            kept = kept[:limit]
        for t, p in kept:
            out[member_id].setdefault(t, set()).add(p)
            owner[t, p] = member_id
            load[member_id] += 1
    for t, p in all_partitions:
        if (t, p) in owner or not eligible[t]:
            continue
        target = min(eligible[t], key=lambda m: (load[m], m))
        out[target].setdefault(t, set()).add(p)
        owner[t, p] = target
        load[target] += 1
    # balance: move a partition from a member to a subscribed one that has two fewer
    for _ in range(len(all_partitions) * max(len(members), 1)):
        moved = False
        for (t, p), member_id in sorted(owner.items(), key=lambda kv: (-load[kv[1]], kv[0])):
            lightest = min(eligible[t], key=lambda m: (load[m], m))
            if load[member_id] - load[lightest] > 1:
                out[member_id][t].discard(p)
                out[lightest].setdefault(t, set()).add(p)
                owner[t, p] = lightest
                load[member_id] -= 1
                load[lightest] += 1
                moved = True
                break
        if not moved:
            break
    return {m: _freeze(a) for m, a in out.items()}


def range_assign(
    members: AssignorMembers, topics: Mapping[uuid.UUID, int]
) -> dict[str, Assignment]:
    """``RangeAssignor``: per topic, contiguous ranges to the subscribed members in a stable order
    (instance id, else member id), the first ``n % m`` one partition more; members subscribed to
    the same co-partitioned topics get the same partition numbers."""
    out: dict[str, dict[uuid.UUID, set[int]]] = {m: {} for m in members}
    for topic_id in sorted(topics):
        subscribed = sorted(
            (m for m, (subs, _, _) in members.items() if topic_id in subs),
            key=lambda m: (members[m][2] or m, m),
        )
        if not subscribed:
            continue
        count = topics[topic_id]
        each, extra = divmod(count, len(subscribed))
        start = 0
        for index, member_id in enumerate(subscribed):
            size = each + (1 if index < extra else 0)
            if size:
                out[member_id][topic_id] = set(range(start, start + size))
            start += size
    return {m: _freeze(a) for m, a in out.items()}


ASSIGNORS: Final = {"uniform": uniform_assign, "range": range_assign}


# --- records ------------------------------------------------------------------------------------


def _versioned(message: Any, version: int) -> bytes:
    return _VERSION.pack(version) + bytes(message.encode(version))


def _partitions(cls: Any, assignment: Assignment) -> list[Any]:
    return [cls(topic_id=t, partitions=sorted(ps)) for t, ps in sorted(assignment.items()) if ps]


def _from_partitions(rows: Iterable[Any]) -> Assignment:
    out: dict[uuid.UUID, set[int]] = {}
    for row in rows:
        out.setdefault(row.topic_id, set()).update(row.partitions)
    return _freeze(out)


def epoch_record(group_id: str, epoch: int | None) -> Record:
    key = _versioned(METADATA_KEY(group_id=group_id), KEY_METADATA)
    return key, None if epoch is None else _versioned(METADATA_VALUE(epoch=epoch), 0)


def partition_metadata_record(
    group_id: str, metadata: Mapping[str, tuple[uuid.UUID, int]] | None
) -> Record:
    key = _versioned(PARTITION_METADATA_KEY(group_id=group_id), KEY_PARTITION_METADATA)
    if metadata is None:
        return key, None
    topics = [
        TOPIC_METADATA(
            topic_id=topic_id, topic_name=name, num_partitions=count, partition_metadata=[]
        )
        for name, (topic_id, count) in sorted(metadata.items())
    ]
    return key, _versioned(PARTITION_METADATA_VALUE(topics=topics), 0)


def member_record(group_id: str, member_id: str, member: ConsumerMember | None) -> Record:
    key = _versioned(MEMBER_KEY(group_id=group_id, member_id=member_id), KEY_MEMBER)
    if member is None:
        return key, None
    value = MEMBER_VALUE(
        instance_id=member.instance_id,
        rack_id=member.rack_id,
        client_id=member.client_id,
        client_host=member.client_host,
        subscribed_topic_names=list(member.subscribed_topic_names),
        subscribed_topic_regex=member.subscribed_topic_regex,
        rebalance_timeout_ms=member.rebalance_timeout_ms,
        server_assignor=member.server_assignor,
        classic_member_metadata=None,
    )
    return key, _versioned(value, 0)


def target_epoch_record(group_id: str, epoch: int | None) -> Record:
    key = _versioned(TARGET_METADATA_KEY(group_id=group_id), KEY_TARGET_METADATA)
    return key, None if epoch is None else _versioned(
        TARGET_METADATA_VALUE(assignment_epoch=epoch), 0
    )


def target_member_record(group_id: str, member_id: str, assignment: Assignment | None) -> Record:
    key = _versioned(TARGET_MEMBER_KEY(group_id=group_id, member_id=member_id), KEY_TARGET_MEMBER)
    if assignment is None:
        return key, None
    value = TARGET_MEMBER_VALUE(topic_partitions=_partitions(TARGET_PARTITIONS, assignment))
    return key, _versioned(value, 0)


def current_assignment_record(
    group_id: str, member_id: str, member: ConsumerMember | None
) -> Record:
    key = _versioned(CURRENT_KEY(group_id=group_id, member_id=member_id), KEY_CURRENT_ASSIGNMENT)
    if member is None:
        return key, None
    value = CURRENT_VALUE(
        member_epoch=member.member_epoch,
        previous_member_epoch=member.previous_member_epoch,
        state=member.state,
        assigned_partitions=_partitions(CURRENT_PARTITIONS, member.assigned),
        partitions_pending_revocation=_partitions(CURRENT_PARTITIONS, member.pending_revocation),
    )
    return key, _versioned(value, 0)


# --- reconciliation -----------------------------------------------------------------------------


def _owns_any(owned: list[tuple[uuid.UUID, list[int]]] | None, revoking: Assignment) -> bool:
    """``CurrentAssignmentBuilder.ownsRevokedPartitions``: unknown (None) counts as owning."""
    if owned is None:
        return True
    return any(p in revoking.get(t, frozenset()) for t, ps in owned for p in ps)


def reconcile(
    member: ConsumerMember,
    target_epoch: int,
    target: Assignment,
    partition_epoch: Any,
    owned: list[tuple[uuid.UUID, list[int]]] | None,
) -> ConsumerMember:
    """``CurrentAssignmentBuilder.build``: the member's next step toward the target."""
    if member.state == MEMBER_STABLE:
        if member.member_epoch == target_epoch:
            return member
        return _next_assignment(
            member, member.member_epoch, target_epoch, target, partition_epoch, owned
        )
    if member.state == UNREVOKED_PARTITIONS:
        if _owns_any(owned, member.pending_revocation):
            return member
        return _next_assignment(
            member, member.member_epoch + 1, target_epoch, target, partition_epoch, owned
        )
    return _next_assignment(
        member, member.member_epoch, target_epoch, target, partition_epoch, owned
    )


def _bump(member: ConsumerMember, epoch: int, **changes: Any) -> ConsumerMember:
    """``Builder.updateMemberEpoch``: the previous epoch is the one it had."""
    return replace(member, member_epoch=epoch, previous_member_epoch=member.member_epoch, **changes)


def _next_assignment(
    member: ConsumerMember,
    member_epoch: int,
    target_epoch: int,
    target: Assignment,
    partition_epoch: Any,
    owned: list[tuple[uuid.UUID, list[int]]] | None,
) -> ConsumerMember:
    """``CurrentAssignmentBuilder.computeNextAssignment``."""
    unreleased = False
    assigned: dict[uuid.UUID, set[int]] = {}
    revoking: dict[uuid.UUID, set[int]] = {}
    pending: dict[uuid.UUID, set[int]] = {}
    for topic_id in set(target) | set(member.assigned):
        wanted = target.get(topic_id, frozenset())
        current = member.assigned.get(topic_id, frozenset())
        keep = current & wanted
        revoke = current - keep
        add = set(wanted - keep)
        released = {p for p in add if partition_epoch(topic_id, p) == -1}
        unreleased = unreleased or len(released) != len(add)
        if keep:
            assigned[topic_id] = set(keep)
        if revoke:
            revoking[topic_id] = set(revoke)
        if released:
            pending[topic_id] = released
    frozen_revoking = _freeze(revoking)
    if frozen_revoking and _owns_any(owned, frozen_revoking):
        return _bump(
            member,
            member_epoch,
            state=UNREVOKED_PARTITIONS,
            assigned=_freeze(assigned),
            pending_revocation=frozen_revoking,
        )
    for topic_id, partitions in pending.items():
        assigned.setdefault(topic_id, set()).update(partitions)
    state = UNRELEASED_PARTITIONS if unreleased else MEMBER_STABLE
    return _bump(
        member, target_epoch, state=state, assigned=_freeze(assigned), pending_revocation={}
    )


# --- the manager --------------------------------------------------------------------------------


class ConsumerGroups:
    """The consumer groups of one group coordinator (module doc)."""

    def __init__(self, coordinator: GroupCoordinator) -> None:
        self.coordinator = coordinator

    # --- configuration and lookup -------------------------------------------------------------

    def conf(self, name: str) -> int:
        value = self.coordinator._conf.get(name)
        return int(value) if value is not None else int(_DEFAULTS[name])

    @property
    def assignors(self) -> list[str]:
        """``group.consumer.assignors`` (class names or short names); the first is the default."""
        raw = self.coordinator._conf.get("group.consumer.assignors") or "uniform,range"
        names = []
        for item in raw.split(","):
            item = item.strip()
            short = item.rsplit(".", 1)[-1].removesuffix("Assignor").lower()
            if short in ASSIGNORS:
                names.append(short)
        return names or ["uniform", "range"]

    def group(self, group_id: str) -> ConsumerGroup | None:
        holder = self.coordinator.groups.get(group_id)
        return holder.consumer if holder is not None else None

    def all(self) -> list[ConsumerGroup]:
        return [g.consumer for g in self.coordinator.groups.values() if g.consumer is not None]

    def _topics(self) -> Mapping[str, Any]:
        state = self.coordinator.state
        return state.topics if state is not None else {}

    def _topic_name(self, topic_id: uuid.UUID) -> str | None:
        state = self.coordinator.state
        topic = state.topics_by_id.get(topic_id) if state is not None else None
        return topic.name if topic is not None else None

    def _matching(self, regex: str) -> set[str]:
        try:
            pattern = re.compile(regex)
        except re.error:
            return set()
        return {
            name
            for name, topic in self._topics().items()
            if not getattr(topic, "internal", False) and pattern.fullmatch(name)
        }

    def _member_topics(self, member: ConsumerMember) -> set[str]:
        names = set(member.subscribed_topic_names)
        if member.subscribed_topic_regex:
            names |= self._matching(member.subscribed_topic_regex)
        return names

    def _subscription_metadata(
        self, members: Iterable[ConsumerMember]
    ) -> dict[str, tuple[uuid.UUID, int]]:
        """``computeSubscriptionMetadata``: the subscribed topics that exist, with their sizes."""
        names: set[str] = set()
        for member in members:
            names |= self._member_topics(member)
        topics = self._topics()
        return {
            name: (topics[name].topic_id, len(topics[name].partitions))
            for name in sorted(names)
            if name in topics
        }

    # --- writing (records are appended, then replayed into memory) ----------------------------

    def _write(self, group_id: str, records: list[Record], now_ms: int) -> None:
        if not records:
            return
        coordinator = self.coordinator
        coordinator._append(group_id, records, now_ms)
        for key, value in records:
            coordinator._replay(key, value, None, {}, now_ms)

    # --- ConsumerGroupHeartbeat ---------------------------------------------------------------

    def heartbeat(
        self,
        version: int,
        group_id: str,
        member_id: str,
        member_epoch: int,
        instance_id: str | None,
        rack_id: str | None,
        rebalance_timeout_ms: int,
        subscribed_topic_names: list[str] | None,
        subscribed_topic_regex: str | None,
        server_assignor: str | None,
        owned: list[tuple[uuid.UUID, list[int]]] | None,
        client_id: str,
        client_host: str,
        now_ms: int,
    ) -> HeartbeatResult:
        """``GroupMetadataManager.consumerGroupHeartbeat``: a result, never an exception."""
        self.coordinator.expire_due(group_id, now_ms)  # the session timers due by now
        try:
            self._validate(
                version, group_id, member_id, member_epoch, instance_id, rack_id,
                rebalance_timeout_ms, subscribed_topic_names, subscribed_topic_regex,
                server_assignor, owned,
            )  # fmt: skip
            if member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
                return self._leave(group_id, instance_id, member_id, member_epoch, now_ms)
            return self._heartbeat(
                group_id, member_id, member_epoch, instance_id, rack_id, rebalance_timeout_ms,
                subscribed_topic_names, subscribed_topic_regex, server_assignor, owned,
                client_id, client_host, now_ms,
            )  # fmt: skip
        except ConsumerGroupError as exc:
            return HeartbeatResult(exc.error, exc.message)

    def _validate(
        self,
        version: int,
        group_id: str,
        member_id: str,
        member_epoch: int,
        instance_id: str | None,
        rack_id: str | None,
        rebalance_timeout_ms: int,
        names: list[str] | None,
        regex: str | None,
        assignor: str | None,
        owned: list[tuple[uuid.UUID, list[int]]] | None,
    ) -> None:
        """``throwIfConsumerGroupHeartbeatRequestIsInvalid``."""

        def invalid(message: str) -> ConsumerGroupError:
            return ConsumerGroupError(ErrorCode.INVALID_REQUEST, message)

        if group_id == "":
            raise invalid("GroupId can't be empty.")
        if instance_id == "":
            raise invalid("InstanceId can't be empty.")
        if rack_id == "":
            raise invalid("RackId can't be empty.")
        if regex is not None:
            try:
                re.compile(regex)
            except re.error as exc:
                raise invalid(
                    f"SubscribedTopicRegex `{regex}` is not a valid regular expression: {exc}."
                ) from None
        # KIP-1082: from v1 the client makes its member id, also when joining
        if (
            version >= 1 or member_epoch > 0 or member_epoch == LEAVE_GROUP_MEMBER_EPOCH
        ) and not member_id:
            raise invalid("MemberId can't be empty.")
        if member_epoch == 0:
            if rebalance_timeout_ms == -1:
                raise invalid("RebalanceTimeoutMs must be provided in first request.")
            if owned is None or owned:
                raise invalid("TopicPartitions must be empty when (re-)joining.")
            if not names and not regex:
                raise invalid(
                    "SubscribedTopicNames or SubscribedTopicRegex must be set in first request."
                )
        elif member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            if not member_id:
                raise invalid("MemberId can't be empty.")
            if instance_id is None:
                raise invalid("InstanceId can't be null.")
        elif member_epoch < 0 and member_epoch != LEAVE_GROUP_MEMBER_EPOCH:
            raise invalid("MemberEpoch is invalid.")
        if assignor is not None and assignor not in self.assignors:
            raise ConsumerGroupError(
                ErrorCode.UNSUPPORTED_ASSIGNOR,
                f"ServerAssignor {assignor} is not supported. Supported assignors: "
                f"{', '.join(self.assignors)}.",
            )

    def _group_for(self, group_id: str, create: bool, records: list[Record]) -> ConsumerGroup:
        """``getOrMaybeCreateConsumerGroup``: an empty classic group is replaced (tombstoned)."""
        if group_id in self.coordinator.streams.groups:  # one id space with streams groups
            raise ConsumerGroupError(
                ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group."
            )
        holder = self.coordinator.groups.get(group_id)
        if holder is None:
            if not create:
                raise ConsumerGroupError(
                    ErrorCode.GROUP_ID_NOT_FOUND, f"Consumer group {group_id} not found."
                )
            return ConsumerGroup(group_id)
        if holder.consumer is not None:
            return holder.consumer
        if create and not holder.members and not holder.pending_members:
            if holder.generation_id > 0 or holder.protocol_type is not None:
                from kwire.broker._group import _group_key

                records.append((_group_key(group_id), None))
            return ConsumerGroup(group_id)
        raise ConsumerGroupError(
            ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group."
        )

    def _check_epoch(
        self,
        member: ConsumerMember,
        received: int,
        owned: list[tuple[uuid.UUID, list[int]]] | None,
    ) -> None:
        """``throwIfConsumerGroupMemberEpochIsInvalid``: the previous epoch is accepted when the
        member owns a subset of its assignment (the response with the bump was lost)."""
        if received > member.member_epoch:
            raise ConsumerGroupError(
                ErrorCode.FENCED_MEMBER_EPOCH,
                f"The consumer group member has a greater member epoch ({received}) than the one "
                f"known by the group coordinator ({member.member_epoch}). The member must abandon "
                "all its partitions and rejoin.",
            )
        if received < member.member_epoch:
            subset = owned is not None and all(
                p in member.assigned.get(t, frozenset()) for t, ps in owned for p in ps
            )
            if received != member.previous_member_epoch or not subset:
                raise ConsumerGroupError(
                    ErrorCode.FENCED_MEMBER_EPOCH,
                    f"The consumer group member has a smaller member epoch ({received}) than the "
                    f"one known by the group coordinator ({member.member_epoch}). The member must "
                    "abandon all its partitions and rejoin.",
                )

    def _heartbeat(
        self,
        group_id: str,
        member_id: str,
        member_epoch: int,
        instance_id: str | None,
        rack_id: str | None,
        rebalance_timeout_ms: int,
        names: list[str] | None,
        regex: str | None,
        assignor: str | None,
        owned: list[tuple[uuid.UUID, list[int]]] | None,
        client_id: str,
        client_host: str,
        now_ms: int,
    ) -> HeartbeatResult:
        records: list[Record] = []
        create = member_epoch == 0
        group = self._group_for(group_id, create, records)
        if len(group.members) >= self.conf("group.consumer.max.size") and (
            not member_id or member_id not in group.members
        ):
            raise ConsumerGroupError(
                ErrorCode.GROUP_MAX_SIZE_REACHED,
                "The consumer group has reached its maximum capacity of "
                f"{self.conf('group.consumer.max.size')} members.",
            )
        if not member_id:
            member_id = str(uuid.uuid4()).replace("-", "")[:22]
        replaced: str | None = None
        if instance_id is None:
            member = group.members.get(member_id)
            if member is None:
                if not create:
                    raise ConsumerGroupError(
                        ErrorCode.UNKNOWN_MEMBER_ID,
                        f"Member {member_id} is not a member of group {group_id}.",
                    )
                member = ConsumerMember(member_id)
            self._check_epoch(member, member_epoch, owned)
        else:
            existing_id = group.static_members.get(instance_id)
            existing = group.members.get(existing_id) if existing_id is not None else None
            if create:
                if existing is None:
                    member = group.members.get(member_id) or ConsumerMember(member_id)
                else:
                    if existing.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH:
                        raise ConsumerGroupError(
                            ErrorCode.UNRELEASED_INSTANCE_ID,
                            f"Static member {member_id} with instance id {instance_id} cannot "
                            f"join the group because the instance id is owned by "
                            f"{existing.member_id} member.",
                        )
                    # the rejoining instance takes over the old member's assignment
                    member = replace(
                        existing, member_id=member_id, member_epoch=0, previous_member_epoch=0
                    )
                    if existing.member_id != member_id:
                        replaced = existing.member_id
                        self._remove_records(group, existing.member_id, records)
                        records.append(member_record(group_id, member_id, member))
                        records.append(current_assignment_record(group_id, member_id, member))
                        records.append(
                            target_member_record(
                                group_id, member_id, group.target.get(existing.member_id, {})
                            )
                        )
                    else:
                        records.append(current_assignment_record(group_id, member_id, member))
            else:
                if existing is None:
                    raise ConsumerGroupError(
                        ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown."
                    )
                if existing.member_id != member_id:
                    raise ConsumerGroupError(
                        ErrorCode.FENCED_INSTANCE_ID,
                        f"Static member {member_id} with instance id {instance_id} was fenced by "
                        f"member {existing.member_id}.",
                    )
                member = existing
                self._check_epoch(member, member_epoch, owned)

        # 1. the member's subscription; the group epoch moves when subscriptions or metadata do
        updated = replace(
            member,
            instance_id=instance_id if instance_id is not None else member.instance_id,
            rack_id=rack_id if rack_id is not None else member.rack_id,
            rebalance_timeout_ms=(
                rebalance_timeout_ms if rebalance_timeout_ms != -1 else member.rebalance_timeout_ms
            ),
            server_assignor=assignor if assignor is not None else member.server_assignor,
            subscribed_topic_names=(
                tuple(names) if names is not None else member.subscribed_topic_names
            ),
            subscribed_topic_regex=(
                (regex or None) if regex is not None else member.subscribed_topic_regex
            ),
            client_id=client_id,
            client_host=client_host,
        )
        bump = False
        is_new = member_id not in group.members
        if (is_new and replaced is None) or updated.subscription() != member.subscription():
            records.append(member_record(group_id, member_id, updated))
            bump = (is_new and replaced is None) or (
                updated.subscribed_topic_names != member.subscribed_topic_names
                or updated.subscribed_topic_regex != member.subscribed_topic_regex
            )
        others = [m for mid, m in group.members.items() if mid not in (member_id, replaced)]
        metadata = self._subscription_metadata([*others, updated])
        group_epoch = group.group_epoch
        if metadata != group.subscription_metadata:
            records.append(partition_metadata_record(group_id, metadata))
            bump = True
        if bump:
            group_epoch += 1
            records.append(epoch_record(group_id, group_epoch))
            log.info("[GroupId %s] bumped group epoch to %d", group_id, group_epoch)

        # 2. a new target assignment when the group epoch is ahead of it
        if group_epoch > group.assignment_epoch:
            target = self._new_target(
                group, group_epoch, updated, replaced, others, metadata, records
            )
            target_epoch = group_epoch
        else:
            target_epoch = group.assignment_epoch
            target = group.target.get(member_id) or group.target.get(replaced or "", {})

        # 3. reconcile the member toward the target
        def partition_epoch(topic_id: uuid.UUID, partition: int) -> int:
            owner = group.owners.get((topic_id, partition))
            if owner is None or owner[0] in (member_id, replaced):
                return -1
            return owner[1]

        before = updated
        if not updated.is_reconciled_to(target_epoch):
            updated = reconcile(updated, target_epoch, target, partition_epoch, owned)
            if updated.assignment_state() != before.assignment_state() or is_new:
                records.append(current_assignment_record(group_id, member_id, updated))
        elif is_new:
            records.append(current_assignment_record(group_id, member_id, updated))

        self._write(group_id, records, now_ms)
        live = self.group(group_id)
        assert live is not None
        live.session_deadlines[member_id] = now_ms + self.conf("group.consumer.session.timeout.ms")
        if updated.state == UNREVOKED_PARTITIONS:
            if live.rebalance_deadlines.get(member_id, (0, -1))[1] != updated.member_epoch:
                live.rebalance_deadlines[member_id] = (
                    now_ms + max(updated.rebalance_timeout_ms, 0),
                    updated.member_epoch,
                )
        else:
            live.rebalance_deadlines.pop(member_id, None)

        full = member_epoch == 0 or (
            rebalance_timeout_ms != -1 and names is not None and owned is not None
        )
        changed = updated.assigned != member.assigned or is_new
        return HeartbeatResult(
            member_id=member_id,
            member_epoch=updated.member_epoch,
            heartbeat_interval_ms=self.conf("group.consumer.heartbeat.interval.ms"),
            assignment=updated.assigned if full or changed else None,
        )

    def _new_target(
        self,
        group: ConsumerGroup,
        group_epoch: int,
        updated: ConsumerMember,
        replaced: str | None,
        others: list[ConsumerMember],
        metadata: Mapping[str, tuple[uuid.UUID, int]],
        records: list[Record],
    ) -> Assignment:
        """``TargetAssignmentBuilder.build``: records for the members whose target changed."""
        everyone = {m.member_id: m for m in others}
        everyone[updated.member_id] = updated
        assignor = ConsumerGroup(group.group_id, members=everyone).preferred_assignor(
            self.assignors[0]
        )
        topics = {topic_id: count for topic_id, count in metadata.values()}
        ids = {name: topic_id for name, (topic_id, _) in metadata.items()}
        spec = {}
        for member_id, member in everyone.items():
            subscribed = frozenset(ids[n] for n in self._member_topics(member) if n in ids)
            previous = group.target.get(member_id)
            if previous is None and replaced is not None and member_id == updated.member_id:
                previous = group.target.get(replaced, {})
            spec[member_id] = (subscribed, previous or {}, member.instance_id)
        result = ASSIGNORS[assignor](spec, topics)
        for member_id in sorted(result):
            old = group.target.get(member_id)
            if old is None and member_id == updated.member_id and replaced is not None:
                old = group.target.get(replaced)
            if old != result[member_id]:
                records.append(target_member_record(group.group_id, member_id, result[member_id]))
        records.append(target_epoch_record(group.group_id, group_epoch))
        log.info(
            "[GroupId %s] computed a new target assignment for epoch %d with '%s' assignor",
            group.group_id,
            group_epoch,
            assignor,
        )
        return result.get(updated.member_id, {})

    @staticmethod
    def _remove_records(group: ConsumerGroup, member_id: str, records: list[Record]) -> None:
        """``removeMember``: the member's current, target and subscription tombstones."""
        records.append(current_assignment_record(group.group_id, member_id, None))
        records.append(target_member_record(group.group_id, member_id, None))
        records.append(member_record(group.group_id, member_id, None))

    # --- leaving and fencing ------------------------------------------------------------------

    def _leave(
        self,
        group_id: str,
        instance_id: str | None,
        member_id: str,
        member_epoch: int,
        now_ms: int,
    ) -> HeartbeatResult:
        """``consumerGroupLeave``: -1 leaves; -2 is a static member's temporary leave."""
        group = self._group_for(group_id, False, [])
        if instance_id is None:
            member = group.members.get(member_id)
            if member is None:
                raise ConsumerGroupError(
                    ErrorCode.UNKNOWN_MEMBER_ID,
                    f"Member {member_id} is not a member of group {group_id}.",
                )
            log.info("[GroupId %s] member %s left the consumer group", group_id, member_id)
            self.fence(group, member_id, now_ms)
            return HeartbeatResult(member_id=member_id, member_epoch=member_epoch)
        existing_id = group.static_members.get(instance_id)
        if existing_id is None or existing_id not in group.members:
            raise ConsumerGroupError(
                ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown."
            )
        if existing_id != member_id:
            raise ConsumerGroupError(
                ErrorCode.FENCED_INSTANCE_ID,
                f"Static member {member_id} with instance id {instance_id} was fenced by member "
                f"{existing_id}.",
            )
        if member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            member = group.members[member_id]
            leaving = replace(
                member, member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH, pending_revocation={}
            )
            self._write(group_id, [current_assignment_record(group_id, member_id, leaving)], now_ms)
            return HeartbeatResult(
                member_id=member_id, member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH
            )
        self.fence(group, member_id, now_ms)
        return HeartbeatResult(member_id=member_id, member_epoch=member_epoch)

    def fence(self, group: ConsumerGroup, member_id: str, now_ms: int) -> None:
        """``consumerGroupFenceMember``: remove the member and bump the group epoch."""
        records: list[Record] = []
        self._remove_records(group, member_id, records)
        others = [m for mid, m in group.members.items() if mid != member_id]
        metadata = self._subscription_metadata(others)
        if metadata != group.subscription_metadata:
            records.append(partition_metadata_record(group.group_id, metadata))
        records.append(epoch_record(group.group_id, group.group_epoch + 1))
        group_id = group.group_id
        self._write(group_id, records, now_ms)
        live = self.group(group_id)
        if live is not None:
            live.session_deadlines.pop(member_id, None)
            live.rebalance_deadlines.pop(member_id, None)
        self.coordinator._notify(("group", group_id))

    def tick(self, now_ms: int) -> None:
        """Session timeouts and rebalance timeouts (a member that does not revoke in time)."""
        for group in self.all():
            self.run_timers(group, now_ms)

    def run_timers(self, group: ConsumerGroup, now_ms: int) -> None:
        """The group's due timers (``tick``, or a request that looks at the group)."""
        for member_id in list(group.members):
            member = group.members.get(member_id)
            if member is None:
                continue
            deadline = group.session_deadlines.get(member_id)
            if deadline is not None and now_ms >= deadline:
                log.info(
                    "[GroupId %s] member %s fenced: session timeout", group.group_id, member_id
                )
                self.fence(group, member_id, now_ms)
                group = self.group(group.group_id) or group
                continue
            rebalance = group.rebalance_deadlines.get(member_id)
            if (
                rebalance is not None
                and now_ms >= rebalance[0]
                and member.state == UNREVOKED_PARTITIONS
                and member.member_epoch == rebalance[1]
            ):
                log.info(
                    "[GroupId %s] member %s fenced: rebalance timeout",
                    group.group_id,
                    member_id,
                )
                self.fence(group, member_id, now_ms)
                group = self.group(group.group_id) or group

    # --- offsets, deletion --------------------------------------------------------------------

    def validate_offset_commit(
        self,
        group: ConsumerGroup,
        member_id: str,
        member_epoch: int,
        version: int,
        transactional: bool,
    ) -> None:
        """``ConsumerGroup.validateOffsetCommit`` (``OffsetMetadataManager`` turns a stale epoch
        of a transactional commit into ILLEGAL_GENERATION)."""
        if member_epoch < 0 and not group.members:
            return
        member = group.members.get(member_id)
        if member is None:
            raise ConsumerGroupError(ErrorCode.UNKNOWN_MEMBER_ID)
        if not transactional and version < 9:
            raise ConsumerGroupError(
                ErrorCode.UNSUPPORTED_VERSION,
                "OffsetCommit version 9 or above must be used by members using the modern "
                "group protocol",
            )
        if member_epoch != member.member_epoch:
            raise ConsumerGroupError(
                ErrorCode.ILLEGAL_GENERATION if transactional else ErrorCode.STALE_MEMBER_EPOCH
            )

    def validate_offset_fetch(
        self, group: ConsumerGroup, member_id: str | None, member_epoch: int
    ) -> ErrorCode:
        """``ConsumerGroup.validateOffsetFetch``."""
        if member_id is None and member_epoch < 0:
            return ErrorCode.NONE
        member = group.members.get(member_id or "")
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if member_epoch != member.member_epoch:
            return ErrorCode.STALE_MEMBER_EPOCH
        return ErrorCode.NONE

    @staticmethod
    def tombstones(group: ConsumerGroup) -> list[Record]:
        """``ConsumerGroup.createGroupTombstoneRecords``."""
        gid = group.group_id
        records: list[Record] = []
        records += [current_assignment_record(gid, m, None) for m in group.members]
        records += [target_member_record(gid, m, None) for m in group.members]
        records.append(target_epoch_record(gid, None))
        records += [member_record(gid, m, None) for m in group.members]
        records.append(partition_metadata_record(gid, None))
        records.append(epoch_record(gid, None))
        return records

    # --- replay (``GroupMetadataManager.replay``) ---------------------------------------------

    def _holder(self, group_id: str, now_ms: int) -> Group:
        holder = self.coordinator._loaded_group(group_id, now_ms)
        if holder.consumer is None:
            holder.consumer = ConsumerGroup(group_id)
        return holder

    def replay(self, key_version: int, key: bytes, value: bytes | None, now_ms: int) -> None:
        body = memoryview(key)[2:]
        data = None if value is None else memoryview(value)[2:]
        if key_version == KEY_METADATA:
            k = METADATA_KEY.decode(body, KEY_METADATA)
            if data is None:
                holder = self.coordinator.groups.get(k.group_id)
                if holder is not None and holder.consumer is not None:
                    holder.consumer = None
                    if not holder.offsets and not holder.pending_txn:
                        del self.coordinator.groups[k.group_id]
                return
            group = self._holder(k.group_id, now_ms).consumer
            assert group is not None
            group.group_epoch = METADATA_VALUE.decode(data, 0).epoch
            return
        k = {
            KEY_PARTITION_METADATA: PARTITION_METADATA_KEY,
            KEY_MEMBER: MEMBER_KEY,
            KEY_TARGET_METADATA: TARGET_METADATA_KEY,
            KEY_TARGET_MEMBER: TARGET_MEMBER_KEY,
            KEY_CURRENT_ASSIGNMENT: CURRENT_KEY,
        }[key_version].decode(body, key_version)
        holder = self.coordinator.groups.get(k.group_id)
        if data is None and (holder is None or holder.consumer is None):
            return
        group = self._holder(k.group_id, now_ms).consumer
        assert group is not None
        if key_version == KEY_PARTITION_METADATA:
            if data is None:
                group.subscription_metadata = {}
                return
            v = PARTITION_METADATA_VALUE.decode(data, 0)
            group.subscription_metadata = {
                t.topic_name: (t.topic_id, t.num_partitions) for t in v.topics
            }
        elif key_version == KEY_TARGET_METADATA:
            group.assignment_epoch = (
                0 if data is None else TARGET_METADATA_VALUE.decode(data, 0).assignment_epoch
            )
        elif key_version == KEY_TARGET_MEMBER:
            if data is None:
                group.target.pop(k.member_id, None)
            else:
                v = TARGET_MEMBER_VALUE.decode(data, 0)
                group.target[k.member_id] = _from_partitions(v.topic_partitions)
        elif key_version == KEY_MEMBER:
            self._replay_member(group, k.member_id, data)
        elif key_version == KEY_CURRENT_ASSIGNMENT:
            self._replay_current(group, k.member_id, data, now_ms)

    def _replay_member(self, group: ConsumerGroup, member_id: str, data: Any) -> None:
        old = group.members.get(member_id)
        if data is None:
            if old is not None:
                group._remove_owned(old)
                del group.members[member_id]
                if (
                    old.instance_id is not None
                    and group.static_members.get(old.instance_id) == member_id
                ):
                    del group.static_members[old.instance_id]
            group.session_deadlines.pop(member_id, None)
            group.rebalance_deadlines.pop(member_id, None)
            return
        v = MEMBER_VALUE.decode(data, 0)
        base = old or ConsumerMember(member_id)
        member = replace(
            base,
            instance_id=v.instance_id,
            rack_id=v.rack_id,
            client_id=v.client_id,
            client_host=v.client_host,
            subscribed_topic_names=tuple(v.subscribed_topic_names),
            subscribed_topic_regex=v.subscribed_topic_regex or None,
            rebalance_timeout_ms=v.rebalance_timeout_ms,
            server_assignor=v.server_assignor,
        )
        group.members[member_id] = member
        if member.instance_id is not None:
            group.static_members[member.instance_id] = member_id

    def _replay_current(self, group: ConsumerGroup, member_id: str, data: Any, now_ms: int) -> None:
        old = group.members.get(member_id)
        if old is None:
            if data is None:
                return
            old = group.members[member_id] = ConsumerMember(member_id)
        group._remove_owned(old)
        if data is None:
            new = replace(
                old,
                member_epoch=LEAVE_GROUP_MEMBER_EPOCH,
                previous_member_epoch=-1,
                state=MEMBER_STABLE,
                assigned={},
                pending_revocation={},
            )
        else:
            v = CURRENT_VALUE.decode(data, 0)
            new = replace(
                old,
                member_epoch=v.member_epoch,
                previous_member_epoch=v.previous_member_epoch,
                state=v.state,
                assigned=_from_partitions(v.assigned_partitions),
                pending_revocation=_from_partitions(v.partitions_pending_revocation),
            )
        group._add_owned(new)
        group.members[member_id] = new
        group.session_deadlines.setdefault(
            member_id, now_ms + self.conf("group.consumer.session.timeout.ms")
        )

    # --- describe -----------------------------------------------------------------------------

    def describe_assignment(self, assignment: Assignment) -> list[tuple[uuid.UUID, str, list[int]]]:
        return [
            (t, self._topic_name(t) or "", sorted(ps)) for t, ps in sorted(assignment.items()) if ps
        ]
