"""KIP-932 share groups: membership, assignment, share sessions and the share partitions.

Approach, after Kafka's ``GroupMetadataManager.shareGroupHeartbeat``, ``ShareGroup``,
``ShareGroupMember``, ``SimpleAssignor`` (group coordinator) and ``SharePartitionManager`` /
``ShareSessionCache`` (share module), as one sans-IO state machine driven by requests and
``now_ms`` (style rule 27):

- a member joins with member epoch 0 and the member id it made itself (ShareGroupHeartbeat v1);
  a change of the members, their subscriptions or the subscribed topics' partition counts bumps
  the *group epoch* and recomputes the target assignment; a share-group member takes its target
  at once (a partition may be shared, so nothing waits for a revocation): its member epoch is the
  group epoch. It leaves with epoch -1 (then closes its share sessions itself), or is removed
  when it has not heartbeated for ``group.share.session.timeout.ms`` (then its sessions close
  and the records it holds are released);
- the assignment spreads every subscribed partition over the members: with at least as many
  partitions as members each partition goes to one member (partitions in topic-name order dealt
  round robin over the members in member-id order), otherwise each member gets one partition and
  the partitions are shared. Kafka 4.3's ``SimpleAssignor`` is also sticky; kwire recomputes;
- a share session (``ShareSessionCache``) is the set of partitions a member fetches from one
  broker, keyed by (group, member, node): epoch 0 opens it, each request carries the next epoch,
  -1 closes it (and releases the member's records of its partitions);
- one ``SharePartition`` per (group, topic id, partition), initialized at the first fetch from
  ``share.auto.offset.reset`` (a group config; ``latest`` by default).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import field
from typing import Final

from kwire._lazy import lazy_dataclass
from kwire.broker._share_partition import SharePartition
from kwire.broker._share_state import StoredState
from kwire.protocol import ErrorCode

__all__ = [
    "DEFAULTS",
    "EMPTY",
    "FINAL_EPOCH",
    "GROUP_CONFIG_DEFAULTS",
    "INITIAL_EPOCH",
    "LEAVE_GROUP_MEMBER_EPOCH",
    "STABLE",
    "Assignment",
    "HeartbeatResult",
    "ShareCoordinator",
    "ShareGroup",
    "ShareMember",
    "ShareSession",
    "spread_assign",
]

EMPTY: Final = "Empty"
STABLE: Final = "Stable"
DEAD: Final = "Dead"
LEAVE_GROUP_MEMBER_EPOCH: Final = -1

INITIAL_EPOCH: Final = 0
FINAL_EPOCH: Final = -1

#: Broker configs of share groups and Kafka's defaults (``GroupCoordinatorConfig``,
#: ``ShareGroupConfig``); a broker started with one of these names overrides it.
DEFAULTS: Final[Mapping[str, str]] = {
    "group.share.heartbeat.interval.ms": "5000",
    "group.share.session.timeout.ms": "45000",
    "group.share.record.lock.duration.ms": "30000",
    "group.share.delivery.count.limit": "5",
    "group.share.partition.max.record.locks": "2000",
    "group.share.max.size": "200",
}

#: Group configs (``GroupConfig``) of a share group and their defaults.
GROUP_CONFIG_DEFAULTS: Final[Mapping[str, str]] = {
    "share.auto.offset.reset": "latest",
    "share.isolation.level": "read_uncommitted",
}

Assignment = dict[uuid.UUID, set[int]]


@lazy_dataclass(eq=False)
class ShareMember:
    """A member of a share group (KIP-932, Kafka's ``ShareGroupMember``): its epoch, what it
    subscribes to, its assignment, and when its session expires."""

    member_id: str
    member_epoch: int = 0
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed: list[str] = field(default_factory=list)
    assignment: Assignment = field(default_factory=dict)
    deadline_ms: int = 0


@lazy_dataclass(eq=False)
class ShareGroup:
    """A share group (KIP-932, Kafka's ``ShareGroup``): its epochs, members and the topic
    metadata its assignment was computed from."""

    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ShareMember] = field(default_factory=dict)
    #: what the assignment was computed from: topic name -> (topic id, partition count)
    metadata: dict[str, tuple[uuid.UUID, int]] = field(default_factory=dict)

    @property
    def state(self) -> str:
        return STABLE if self.members else EMPTY

    def subscribed_topics(self) -> set[str]:
        return {t for m in self.members.values() for t in m.subscribed}


@lazy_dataclass(frozen=True)
class HeartbeatResult:
    """What a ``ShareGroupHeartbeat`` answers: an error, or the member's id, epoch and assignment."""

    error: ErrorCode
    message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: Assignment | None = None


@lazy_dataclass(eq=False)
class ShareSession:
    """A share session (KIP-932's ``ShareSession``): the member's epoch for its next
    ShareFetch and the partitions it fetches from."""

    group_id: str
    member_id: str
    epoch: int  # the epoch the next request carries
    node: int = 1  # the broker the session is with
    partitions: dict[tuple[uuid.UUID, int], None] = field(default_factory=dict)


def spread_assign(
    members: Iterable[str], partitions: Iterable[tuple[uuid.UUID, int]]
) -> dict[str, Assignment]:
    """Every partition to a member; see the module doc."""
    ids = sorted(members)
    parts = list(partitions)
    out: dict[str, Assignment] = {m: {} for m in ids}
    if not ids or not parts:
        return out
    if len(parts) >= len(ids):
        for i, (topic_id, index) in enumerate(parts):
            out[ids[i % len(ids)]].setdefault(topic_id, set()).add(index)
    else:
        for i, member in enumerate(ids):
            topic_id, index = parts[i % len(parts)]
            out[member].setdefault(topic_id, set()).add(index)
    return out


class ShareCoordinator:
    """Share groups, share sessions and share partitions of one broker (see the module doc).

    ``conf`` holds the broker's settings (``DEFAULTS`` names); ``released`` is called with the
    group id whenever records become available again, so parked fetches can retry.
    """

    def __init__(
        self, conf: Mapping[str, str], released: Callable[[str], None] | None = None
    ) -> None:
        self._conf = dict(conf)
        self._released = released or (lambda group_id: None)
        self.groups: dict[str, ShareGroup] = {}
        self.sessions: dict[tuple[str, str, int], ShareSession] = {}
        self.partitions: dict[tuple[str, uuid.UUID, int], SharePartition] = {}
        #: what ``__share_group_state`` holds (replayed), and the change count last written
        self.stored: dict[tuple[str, uuid.UUID, int], StoredState] = {}
        self.written: dict[tuple[str, uuid.UUID, int], int] = {}
        #: group id -> its ``share.record.lock.duration.ms`` group config, when set
        self.lock_durations: dict[str, int] = {}

    def conf(self, name: str) -> int:
        return int(self._conf.get(name, DEFAULTS[name]))

    # --- membership -------------------------------------------------------------------------

    @staticmethod
    def request_error(
        group_id: str, member_id: str, member_epoch: int, subscribed: list[str] | None
    ) -> HeartbeatResult | None:
        """The heartbeat's answer when the request itself is invalid (``None``: it is not):
        ``GroupCoordinatorService.shareGroupHeartbeat`` checks it before it looks for the
        group's coordinator, so the handler asks before routing."""
        if not group_id:
            return HeartbeatResult(ErrorCode.INVALID_REQUEST, "GroupId can't be empty.")
        if not member_id:
            return HeartbeatResult(ErrorCode.INVALID_REQUEST, "MemberId can't be empty.")
        if member_epoch < LEAVE_GROUP_MEMBER_EPOCH:
            return HeartbeatResult(
                ErrorCode.INVALID_REQUEST, f"MemberEpoch is invalid: {member_epoch}."
            )
        if member_epoch == 0 and not subscribed:
            return HeartbeatResult(
                ErrorCode.INVALID_REQUEST,
                "SubscribedTopicNames must be set in first request.",
            )
        return None

    def heartbeat(
        self,
        group_id: str,
        member_id: str,
        member_epoch: int,
        rack_id: str | None,
        subscribed: list[str] | None,
        topics: Mapping[str, tuple[uuid.UUID, int]],
        client_id: str,
        client_host: str,
        now_ms: int,
    ) -> HeartbeatResult:
        """``GroupMetadataManager.shareGroupHeartbeat``; ``topics``: the cluster's topics."""
        invalid = self.request_error(group_id, member_id, member_epoch, subscribed)
        if invalid is not None:
            return invalid
        group = self.groups.get(group_id)
        if member_epoch == LEAVE_GROUP_MEMBER_EPOCH:
            if group is None or member_id not in group.members:
                return HeartbeatResult(
                    ErrorCode.UNKNOWN_MEMBER_ID,
                    f"Member {member_id} is not a member of group {group_id}.",
                )
            self.remove_member(group, member_id, topics)
            return HeartbeatResult(
                ErrorCode.NONE, member_id=member_id, member_epoch=LEAVE_GROUP_MEMBER_EPOCH
            )
        if group is None:
            if member_epoch != 0:
                return HeartbeatResult(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.")
            group = self.groups[group_id] = ShareGroup(group_id)
        member = group.members.get(member_id)
        if member is None:
            if member_epoch != 0:
                return HeartbeatResult(
                    ErrorCode.UNKNOWN_MEMBER_ID,
                    f"Member {member_id} is not a member of group {group_id}.",
                )
            if len(group.members) >= self.conf("group.share.max.size"):
                return HeartbeatResult(
                    ErrorCode.GROUP_MAX_SIZE_REACHED,
                    f"The share group has reached its maximum capacity of "
                    f"{self.conf('group.share.max.size')} members.",
                )
            member = group.members[member_id] = ShareMember(member_id)
        elif member_epoch not in (0, member.member_epoch):
            return HeartbeatResult(
                ErrorCode.FENCED_MEMBER_EPOCH,
                f"The share group member has a smaller member epoch ({member_epoch}) than the "
                f"one known by the group coordinator ({member.member_epoch}). The member must "
                "abandon all its partitions and rejoin.",
            )
        member.client_id = client_id
        member.client_host = client_host
        if rack_id is not None:
            member.rack_id = rack_id
        changed = member_epoch == 0
        if subscribed is not None and sorted(subscribed) != sorted(member.subscribed):
            member.subscribed = list(subscribed)
            changed = True
        member.deadline_ms = now_ms + self.conf("group.share.session.timeout.ms")
        self._maybe_reassign(group, topics, force=changed)
        member.member_epoch = group.assignment_epoch
        # The assignment goes out on joining and whenever the member's epoch moves (a new
        # target assignment it has not seen yet).
        send = member.member_epoch != member_epoch
        return HeartbeatResult(
            ErrorCode.NONE,
            member_id=member_id,
            member_epoch=member.member_epoch,
            heartbeat_interval_ms=self.conf("group.share.heartbeat.interval.ms"),
            assignment=member.assignment if send else None,
        )

    def _maybe_reassign(
        self, group: ShareGroup, topics: Mapping[str, tuple[uuid.UUID, int]], *, force: bool
    ) -> None:
        """A new group epoch and target assignment when members or metadata changed."""
        metadata = {t: topics[t] for t in sorted(group.subscribed_topics()) if t in topics}
        if not force and metadata == group.metadata:
            return
        group.metadata = metadata
        group.group_epoch += 1
        partitions = [
            (tid, i) for _, (tid, count) in sorted(metadata.items()) for i in range(count)
        ]
        # Heterogeneous subscriptions: each member only gets partitions of its own topics.
        by_topics: dict[tuple[str, ...], list[str]] = {}
        for m in group.members.values():
            by_topics.setdefault(tuple(sorted(m.subscribed)), []).append(m.member_id)
        target: dict[str, Assignment] = {}
        for subscription, ids in by_topics.items():
            wanted = [
                (tid, i)
                for tid, i in partitions
                if any(metadata.get(t, (None, 0))[0] == tid for t in subscription)
            ]
            target.update(spread_assign(ids, wanted))
        for member_id, member in group.members.items():
            member.assignment = target.get(member_id, {})
        group.assignment_epoch = group.group_epoch

    def remove_member(
        self, group: ShareGroup, member_id: str, topics: Mapping[str, tuple[uuid.UUID, int]]
    ) -> None:
        """The member left or expired: the others get a new assignment. Its share session stays
        (a leaving consumer still sends its last acknowledgements, with session epoch -1: the
        group coordinator and the share-partition leaders are apart in Kafka)."""
        group.members.pop(member_id, None)
        self._maybe_reassign(group, topics, force=True)

    def expire(self, now_ms: int, topics: Mapping[str, tuple[uuid.UUID, int]]) -> list[str]:
        """Remove the members whose session timed out; the ids removed."""
        gone = []
        for group in list(self.groups.values()):
            for member in list(group.members.values()):
                if member.deadline_ms <= now_ms:
                    self.remove_member(group, member.member_id, topics)
                    # A member gone silent holds nothing any more (Kafka releases a dead
                    # consumer's records when its connection closes or its locks run out).
                    self.close_session(group.group_id, member.member_id)
                    gone.append(member.member_id)
        return gone

    def delete_group(self, group_id: str) -> ErrorCode:
        """DeleteGroups of a share group: only an empty one goes, with its share partitions'
        state (``GroupMetadataManager.shareGroupDelete``; NON_EMPTY_GROUP otherwise)."""
        group = self.groups.get(group_id)
        if group is None:
            return ErrorCode.GROUP_ID_NOT_FOUND
        if group.members:
            return ErrorCode.NON_EMPTY_GROUP
        del self.groups[group_id]
        for key in [k for k in self.partitions if k[0] == group_id]:
            del self.partitions[key]
            self.written.pop(key, None)
        for session in [k for k in self.sessions if k[0] == group_id]:
            del self.sessions[session]
        return ErrorCode.NONE

    def is_member(self, group_id: str, member_id: str) -> bool:
        group = self.groups.get(group_id)
        return group is not None and member_id in group.members

    # --- share sessions ---------------------------------------------------------------------

    def session(
        self, group_id: str, member_id: str, epoch: int, node: int = 1
    ) -> tuple[ErrorCode, ShareSession | None]:
        """The session a request at ``epoch`` uses (0 opens a new one), and move its epoch on. A
        member has one session per broker it fetches from (``node``: the one answering)."""
        key = (group_id, member_id, node)
        if epoch == INITIAL_EPOCH:
            old = self.sessions.pop(key, None)
            if old is not None:
                self._release_session(old)
            session = self.sessions[key] = ShareSession(group_id, member_id, 1, node)
            return ErrorCode.NONE, session
        found = self.sessions.get(key)
        if found is None:
            return ErrorCode.SHARE_SESSION_NOT_FOUND, None
        if epoch == FINAL_EPOCH:
            return ErrorCode.NONE, found
        if epoch != found.epoch:
            return ErrorCode.INVALID_SHARE_SESSION_EPOCH, None
        found.epoch = 1 if epoch == 2**31 - 1 else epoch + 1
        return ErrorCode.NONE, found

    def close_session(self, group_id: str, member_id: str, node: int | None = None) -> None:
        """Close the member's session with ``node`` and release what it holds there; ``None``:
        every session of the member, and everything it holds."""
        if node is not None:
            found = self.sessions.pop((group_id, member_id, node), None)
            if found is not None:
                self._release_session(found)
            return
        for key in [k for k in self.sessions if k[:2] == (group_id, member_id)]:
            del self.sessions[key]
        released = False
        for (gid, _, _), partition in self.partitions.items():
            if gid == group_id and partition.release_member(member_id):
                released = True
        if released:
            self._released(group_id)

    def _release_session(self, session: ShareSession) -> None:
        released = False
        for topic_id, index in session.partitions:
            partition = self.partitions.get((session.group_id, topic_id, index))
            if partition is not None and partition.release_member(session.member_id):
                released = True
        if released:
            self._released(session.group_id)

    # --- share partitions -------------------------------------------------------------------

    def share_partition(self, group_id: str, topic_id: uuid.UUID, index: int) -> SharePartition:
        key = (group_id, topic_id, index)
        found = self.partitions.get(key)
        if found is None:
            found = self.partitions[key] = SharePartition(
                lock_duration_ms=self.lock_duration(group_id),
                delivery_limit=self.conf("group.share.delivery.count.limit"),
                max_in_flight=self.conf("group.share.partition.max.record.locks"),
            )
            stored = self.stored.get(key)
            if stored is not None:  # state from before a restart
                found.restore(stored.start_offset, stored.in_flight())
                self.written[key] = found.changes
        return found

    def set_lock_duration(self, group_id: str, duration_ms: int) -> None:
        """The group's lock duration (a group config) for the locks taken from now on."""
        self.lock_durations[group_id] = duration_ms
        for (gid, _, _), partition in self.partitions.items():
            if gid == group_id:
                partition.lock_duration_ms = duration_ms

    def lock_duration(self, group_id: str) -> int:
        return self.lock_durations.get(group_id, self.conf("group.share.record.lock.duration.ms"))

    def expire_locks(self, now_ms: int) -> None:
        """Release the records whose acquisition lock ran out, in every share partition."""
        groups = {gid for (gid, _, _), p in self.partitions.items() if p.expire_locks(now_ms)}
        for gid in sorted(groups):
            self._released(gid)
