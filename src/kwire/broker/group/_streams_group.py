"""A KIP-1071 streams group's state: its members, their tasks, and the group and member states.

Follows Kafka 4.3's ``StreamsGroup`` and ``StreamsGroupMember`` (state names from
``StreamsGroupState`` and ``MemberState``). Tasks are subtopology id -> partitions, frozen, so a
member's assigned, pending and target tasks compare and subtract as values. An active task is
given to a member only once no other member still owns it (assigned or pending revocation):
until then it is "unreleased" (``StreamsGroup.active_owner``). The coordinator that drives these
is ``_streams.StreamsGroups``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import field
from typing import Any, Final

from kwire._lazy import lazy_dataclass
from kwire.broker.group._streams_topology import ConfiguredTopology, Topology

__all__ = ["EMPTY_TASKS", "StreamsGroup", "StreamsMember", "TaskSet", "Tasks"]


# StreamsGroup.StreamsGroupState.toString
EMPTY: Final = "Empty"


NOT_READY: Final = "NotReady"


ASSIGNING: Final = "Assigning"


RECONCILING: Final = "Reconciling"


STABLE: Final = "Stable"


# StreamsGroupMember's MemberState (the int8 of StreamsGroupCurrentMemberAssignmentValue)
MEMBER_STABLE: Final = 0


UNREVOKED_TASKS: Final = 1


UNRELEASED_TASKS: Final = 2


#: subtopology id -> partitions
TaskSet = Mapping[str, frozenset[int]]


def _freeze(tasks: Mapping[str, Iterable[int]]) -> dict[str, frozenset[int]]:
    return {s: frozenset(ps) for s, ps in tasks.items() if ps}


def _minus(a: TaskSet, b: TaskSet) -> dict[str, frozenset[int]]:
    return _freeze({s: ps - b.get(s, frozenset()) for s, ps in a.items()})


def _and(a: TaskSet, b: TaskSet) -> dict[str, frozenset[int]]:
    return _freeze({s: ps & b.get(s, frozenset()) for s, ps in a.items()})


def _count(tasks: TaskSet) -> int:
    return sum(len(ps) for ps in tasks.values())


@lazy_dataclass(frozen=True)
class Tasks:
    """Active, standby and warm-up tasks (``streams.TasksTuple``)."""

    active: TaskSet = field(default_factory=dict)
    standby: TaskSet = field(default_factory=dict)
    warmup: TaskSet = field(default_factory=dict)

    def minus(self, other: Tasks) -> Tasks:
        return Tasks(
            _minus(self.active, other.active),
            _minus(self.standby, other.standby),
            _minus(self.warmup, other.warmup),
        )

    def intersect(self, other: Tasks) -> Tasks:
        return Tasks(
            _and(self.active, other.active),
            _and(self.standby, other.standby),
            _and(self.warmup, other.warmup),
        )

    def is_empty(self) -> bool:
        return not (self.active or self.standby or self.warmup)


EMPTY_TASKS: Final = Tasks()


@lazy_dataclass(frozen=True)
class StreamsMember:
    """``StreamsGroupMember``."""

    member_id: str
    member_epoch: int = 0
    previous_member_epoch: int = -1
    state: int = MEMBER_STABLE
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    rebalance_timeout_ms: int = -1
    topology_epoch: int = 0
    process_id: str = ""
    user_endpoint: tuple[str, int] | None = None
    client_tags: tuple[tuple[str, str], ...] = ()
    assigned: Tasks = EMPTY_TASKS
    pending_revocation: Tasks = EMPTY_TASKS

    def metadata(self) -> tuple[Any, ...]:
        """What a member record stores (a change bumps the group epoch)."""
        return (
            self.instance_id, self.rack_id, self.client_id, self.client_host,
            self.rebalance_timeout_ms, self.topology_epoch, self.process_id,
            self.user_endpoint, self.client_tags,
        )  # fmt: skip


@lazy_dataclass
class StreamsGroup:
    """``StreamsGroup``: one group's replayed state."""

    group_id: str
    group_epoch: int = 0
    metadata_hash: int = 0
    validated_topology_epoch: int = -1
    topology: Topology | None = None
    assignment_epoch: int = 0
    members: dict[str, StreamsMember] = field(default_factory=dict)
    target: dict[str, Tasks] = field(default_factory=dict)
    session_deadlines: dict[str, int] = field(default_factory=dict)
    shutdown_requested: bool = False  # in memory only, as in Kafka

    def state(self, configured: ConfiguredTopology | None) -> str:
        """``StreamsGroup.state`` (maybeUpdateGroupState)."""
        if not self.members:
            return EMPTY
        if self.topology is None or configured is None or not configured.ready:
            return NOT_READY
        if self.assignment_epoch != self.group_epoch:
            return ASSIGNING
        if any(m.member_epoch != self.assignment_epoch or m.state != MEMBER_STABLE
               for m in self.members.values()):  # fmt: skip
            return RECONCILING
        return STABLE

    def active_owner(self, subtopology: str, partition: int, but: str) -> bool:
        """Whether a member other than ``but`` still owns the active task."""
        for m in self.members.values():
            if m.member_id == but:
                continue
            if partition in m.assigned.active.get(subtopology, frozenset()):
                return True
            if partition in m.pending_revocation.active.get(subtopology, frozenset()):
                return True
        return False
