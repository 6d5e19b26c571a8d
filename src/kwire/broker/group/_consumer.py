"""KIP-848 consumer groups, the model: Kafka's ``ConsumerGroup``, ``ConsumerGroupMember`` and
``CurrentAssignmentBuilder`` (reconciliation).

Approach: plain data changed only by the replay of the group's records (``_consumer_groups``
decides, ``_shard`` replays), and a pure ``reconcile`` that moves a member toward its target.
Three epochs: the *group epoch* moves when subscriptions or the subscribed topics' metadata
change; the *target assignment epoch* catches up with it when the assignor computes a new target;
each *member epoch* catches up with the target by reconciliation. A member is given a partition
only once no other member still owns it (assigned or pending revocation): until then it is
"unreleased" (``CurrentAssignmentBuilder.computeNextAssignment``).
"""

from __future__ import annotations

import uuid
from dataclasses import field, replace
from typing import Any, Final

from kwire._lazy import lazy_dataclass
from kwire.broker.group._assignors import Assignment, freeze
from kwire.broker.group._records import OffsetAndMetadata
from kwire.protocol import ErrorCode

__all__ = [
    "ASSIGNING",
    "DEAD",
    "EMPTY",
    "LEAVE_GROUP_MEMBER_EPOCH",
    "LEAVE_GROUP_STATIC_MEMBER_EPOCH",
    "MEMBER_STABLE",
    "RECONCILING",
    "STABLE",
    "UNRELEASED_PARTITIONS",
    "UNREVOKED_PARTITIONS",
    "ConsumerGroup",
    "ConsumerGroupError",
    "ConsumerMember",
    "HeartbeatResult",
    "reconcile",
]

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


class ConsumerGroupError(Exception):
    """A heartbeat's failure: the Kafka error and message to answer with."""

    def __init__(self, error: ErrorCode, message: str | None = None) -> None:
        self.error = error
        self.message = message
        super().__init__(f"{error.name}: {message}" if message else error.name)


# --- the model ----------------------------------------------------------------------------------


@lazy_dataclass
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


@lazy_dataclass
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
    #: when the group was made (what an empty classic group made from it counts as its state
    #: timestamp)
    created_ms: int = -1
    offsets: dict[tuple[str, int], OffsetAndMetadata] = field(default_factory=dict)
    #: producer id -> staged transactional offsets
    pending_txn: dict[int, dict[tuple[str, int], OffsetAndMetadata]] = field(default_factory=dict)

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

    def remove_owned(self, member: ConsumerMember) -> None:
        for assignment in (member.assigned, member.pending_revocation):
            for topic_id, partitions in assignment.items():
                for p in partitions:
                    owner = self.owners.get((topic_id, p))
                    if owner is not None and owner[0] == member.member_id:
                        del self.owners[topic_id, p]

    def add_owned(self, member: ConsumerMember) -> None:
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


@lazy_dataclass
class HeartbeatResult:
    """What a ``ConsumerGroupHeartbeat`` (KIP-848) answers: an error, or the member's id, epoch,
    heartbeat interval and assignment."""

    error: ErrorCode = ErrorCode.NONE
    message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: Assignment | None = None


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
    frozen_revoking = freeze(revoking)
    if frozen_revoking and _owns_any(owned, frozen_revoking):
        return _bump(
            member,
            member_epoch,
            state=UNREVOKED_PARTITIONS,
            assigned=freeze(assigned),
            pending_revocation=frozen_revoking,
        )
    for topic_id, partitions in pending.items():
        assigned.setdefault(topic_id, set()).update(partitions)
    state = UNRELEASED_PARTITIONS if unreleased else MEMBER_STABLE
    return _bump(
        member, target_epoch, state=state, assigned=freeze(assigned), pending_revocation={}
    )
