"""Classic groups, the model: Kafka's ``ClassicGroup`` and ``ClassicGroupMember``.

Approach: the states (Empty, PreparingRebalance, CompletingRebalance, Stable, Dead), the members
and the protocol vote as plain data; ``_classic_groups`` drives them through JoinGroup, SyncGroup,
Heartbeat, LeaveGroup and the timers. A ``Group`` also holds its committed offsets (and the
transactional ones not yet committed), which ``_offsets`` manages, as a KIP-848 ``ConsumerGroup``
does: the two kinds share the shard's one map of group ids, as in Kafka. A group that only has
offsets (a simple group, or what a deleted group's offsets keep alive) is an empty ``Group``.
"""

from __future__ import annotations

from dataclasses import field
from typing import Any, Final

from kwire._lazy import lazy_dataclass
from kwire.broker.group._records import SUBSCRIPTION, OffsetAndMetadata
from kwire.log.internal_topics import read_version
from kwire.protocol import ErrorCode

__all__ = [
    "COMPLETING_REBALANCE",
    "DEAD",
    "EMPTY",
    "NEW_MEMBER_JOIN_TIMEOUT_MS",
    "PREPARING_REBALANCE",
    "STABLE",
    "STATES",
    "Group",
    "GroupError",
    "JoinResult",
    "Member",
    "SyncResult",
    "Waiter",
]

EMPTY: Final = "Empty"
PREPARING_REBALANCE: Final = "PreparingRebalance"
COMPLETING_REBALANCE: Final = "CompletingRebalance"
STABLE: Final = "Stable"
DEAD: Final = "Dead"
STATES: Final = (EMPTY, PREPARING_REBALANCE, COMPLETING_REBALANCE, STABLE, DEAD)

NEW_MEMBER_JOIN_TIMEOUT_MS: Final = 5 * 60 * 1000  # ClassicGroupMember.NEW_MEMBER_JOIN_TIMEOUT_MS


class GroupError(Exception):
    """A request-level failure with the Kafka error to answer."""

    def __init__(self, error: ErrorCode) -> None:
        self.error = error
        super().__init__(error.name)


# --- the model ----------------------------------------------------------------------------------


@lazy_dataclass
class Waiter:
    """A parked response: ``result`` is set (with ``error``) when the group decides."""

    result: Any = None
    done: bool = False

    def resolve(self, result: Any) -> None:
        if not self.done:
            self.result = result
            self.done = True


@lazy_dataclass
class JoinResult:
    """What a classic group's ``JoinGroup`` answers (Kafka's ``JoinGroupResponseData``'s
    fields): the generation, protocol, leader and, for the leader, the members."""

    error: ErrorCode
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    member_id: str = ""
    members: list[tuple[str, str | None, bytes]] = field(default_factory=list)
    skip_assignment: bool = False  # KIP-814: a rejoining static leader keeps the assignment


@lazy_dataclass
class SyncResult:
    """What a classic group's ``SyncGroup`` answers: the protocol and the member's assignment."""

    error: ErrorCode
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


@lazy_dataclass
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


@lazy_dataclass
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
                version = read_version(meta)[0]
                sub = SUBSCRIPTION.decode(memoryview(meta)[2:], min(version, 3))
            except Exception:
                return None
            topics.update(sub.topics)
        return topics
