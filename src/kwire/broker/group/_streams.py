"""KIP-1071 streams groups: the coordinator state, its records in ``__consumer_offsets``, replay.

Approach: a sans-IO state machine beside the consumer groups (``_consumer_group``), driven by
StreamsGroupHeartbeat and ``now_ms`` (style rules 27 and 31), following Kafka 4.3's
group-coordinator module: ``GroupMetadataManager.streamsGroupHeartbeat``, ``StreamsGroup``,
``StreamsGroupMember``, ``streams.CurrentAssignmentBuilder``, ``streams.TargetAssignmentBuilder``,
``streams.topics.InternalTopicManager`` (configuring the topology) and ``StreamsCoordinatorRecordHelpers``.

Every decision is a list of records (key versions 17-23, values v0, ``StreamsGroup*Key/Value``),
appended to the group's partition of ``__consumer_offsets`` and replayed into memory by the same
``replay`` that loads the topic at start, so a restart keeps exactly what the heartbeats decided.
The record schemas are bundled from ``tools/specs/streams-coordinator`` (its SOURCE says which
stored Kafka schema each follows; the metadata value's ``MetadataHash`` is kwire's own hash of the
subscribed topics' ids and partition counts, not Kafka's murmur3 one: only its changes matter).
StreamsGroupPartitionMetadata (key 18) is what 4.0 wrote; 4.1+ write the hash instead, and replay
only removes it, as Kafka's does.

Epochs as for consumer groups: the *group epoch* moves when a member joins, leaves or changes what
the assignor sees, or the topology or the source topics' partition counts change; the *target
assignment epoch* catches up when the assignor computes a new target; each *member epoch* catches
up by reconciliation. An active task is given to a member only once no other member still owns it
(assigned or pending revocation): until then it is "unreleased"; standby and warm-up tasks are
given at once (``CurrentAssignmentBuilder.computeNextAssignment``).

The assignor is a simplified ``StickyTaskAssignor`` (docs/broker.md): each active task stays with
its previous owner while that owner stays under the balanced quota, the rest go to the least
loaded members (ties by member id); ``num.standby.replicas`` standbys of each stateful task go to
the least loaded members of other processes; no warm-up tasks (Kafka's sticky assignor makes
them only with ``acceptable.recovery.lag``-driven task movement, which kwire does not model).
Not modelled: regex source topics (a topology using them is configured with none matched),
static members' ``-2`` rejoin, the rebalance timeout of a member that does not revoke, the
``group.streams.*`` dynamic group configs. Committed offsets live in the classic coordinator's
``Group`` holder of the same id, checked by ``validate_offset_commit`` (the member epoch).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Final

from kwire.broker.group._consumer import ConsumerGroup
from kwire.broker.group._records import Write
from kwire.log.internal_topics import read_version, versioned
from kwire.protocol import message_class, struct_class

if TYPE_CHECKING:
    from kwire.broker.group._shard import GroupCoordinator

__all__ = [
    "KEY_VERSIONS",
    "StreamsGroup",
    "StreamsGroups",
    "StreamsMember",
    "StreamsResult",
    "Topology",
    "sticky_assign",
]

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

LEAVE_GROUP_MEMBER_EPOCH: Final = -1
LEAVE_GROUP_STATIC_MEMBER_EPOCH: Final = -2

# StreamsGroupHeartbeatResponse.Status
STATUS_STALE_TOPOLOGY: Final = 0
STATUS_MISSING_SOURCE_TOPICS: Final = 1
STATUS_INCORRECTLY_PARTITIONED_TOPICS: Final = 2
STATUS_MISSING_INTERNAL_TOPICS: Final = 3
STATUS_SHUTDOWN_APPLICATION: Final = 4

# Errors 4.x added (Errors.java); kwire's ErrorCode enum stops at 127.
NONE: Final = 0
UNKNOWN_MEMBER_ID: Final = 25
INVALID_REQUEST: Final = 42
GROUP_ID_NOT_FOUND: Final = 69
GROUP_MAX_SIZE_REACHED: Final = 81
FENCED_MEMBER_EPOCH: Final = 110
ILLEGAL_GENERATION: Final = 22
STALE_MEMBER_EPOCH: Final = 113
STREAMS_INVALID_TOPOLOGY: Final = 130
STREAMS_INVALID_TOPOLOGY_EPOCH: Final = 131
STREAMS_TOPOLOGY_FENCED: Final = 132

# GroupCoordinatorConfig.STREAMS_GROUP_*_DEFAULT
_DEFAULTS: Final = {
    "group.streams.heartbeat.interval.ms": 5000,
    "group.streams.session.timeout.ms": 45000,
    "group.streams.max.size": 2**31 - 1,
    "group.streams.num.standby.replicas": 0,
}
ACCEPTABLE_RECOVERY_LAG: Final = 10000  # GroupConfig.STREAMS_ACCEPTABLE_RECOVERY_LAG default
TASK_OFFSET_INTERVAL_MS: Final = 60000

KEY_METADATA: Final = 17
KEY_PARTITION_METADATA: Final = 18
KEY_MEMBER: Final = 19
KEY_TARGET_METADATA: Final = 20
KEY_TARGET_MEMBER: Final = 21
KEY_CURRENT_ASSIGNMENT: Final = 22
KEY_TOPOLOGY: Final = 23
KEY_VERSIONS: Final = range(KEY_METADATA, KEY_TOPOLOGY + 1)


METADATA_KEY: Final = message_class("StreamsGroupMetadataKey")
METADATA_VALUE: Final = message_class("StreamsGroupMetadataValue")
LAST_CONFIG: Final = struct_class(METADATA_VALUE, "last_assignment_configs")
PARTITION_METADATA_KEY: Final = message_class("StreamsGroupPartitionMetadataKey")
MEMBER_KEY: Final = message_class("StreamsGroupMemberMetadataKey")
MEMBER_VALUE: Final = message_class("StreamsGroupMemberMetadataValue")
MEMBER_ENDPOINT: Final = struct_class(MEMBER_VALUE, "user_endpoint")
MEMBER_TAG: Final = struct_class(MEMBER_VALUE, "client_tags")
TARGET_METADATA_KEY: Final = message_class("StreamsGroupTargetAssignmentMetadataKey")
TARGET_METADATA_VALUE: Final = message_class("StreamsGroupTargetAssignmentMetadataValue")
TARGET_MEMBER_KEY: Final = message_class("StreamsGroupTargetAssignmentMemberKey")
TARGET_MEMBER_VALUE: Final = message_class("StreamsGroupTargetAssignmentMemberValue")
TARGET_TASKS: Final = struct_class(TARGET_MEMBER_VALUE, "active_tasks")
CURRENT_KEY: Final = message_class("StreamsGroupCurrentMemberAssignmentKey")
CURRENT_VALUE: Final = message_class("StreamsGroupCurrentMemberAssignmentValue")
CURRENT_TASKS: Final = struct_class(CURRENT_VALUE, "active_tasks")
TOPOLOGY_KEY: Final = message_class("StreamsGroupTopologyKey")
TOPOLOGY_VALUE: Final = message_class("StreamsGroupTopologyValue")
TOPOLOGY_SUB: Final = struct_class(TOPOLOGY_VALUE, "subtopologies")
TOPOLOGY_INFO: Final = struct_class(TOPOLOGY_VALUE, "subtopologies", "state_changelog_topics")
TOPOLOGY_CONFIG: Final = struct_class(
    TOPOLOGY_VALUE, "subtopologies", "state_changelog_topics", "topic_configs"
)
TOPOLOGY_COPART: Final = struct_class(TOPOLOGY_VALUE, "subtopologies", "copartition_groups")

Record = tuple[bytes, bytes | None]
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


@dataclass(frozen=True)
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


@dataclass(frozen=True)
class TopicInfo:
    name: str
    partitions: int
    replication_factor: int
    configs: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Subtopology:
    subtopology_id: str
    source_topics: tuple[str, ...]
    source_topic_regex: tuple[str, ...]
    state_changelog_topics: tuple[TopicInfo, ...]
    repartition_sink_topics: tuple[str, ...]
    repartition_source_topics: tuple[TopicInfo, ...]
    copartition_groups: tuple[tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]], ...]


@dataclass(frozen=True)
class Topology:
    """``StreamsTopology``: the epoch and the subtopologies a member sent when it joined."""

    epoch: int
    subtopologies: tuple[Subtopology, ...]

    @staticmethod
    def from_message(message: Any) -> Topology:
        """From the heartbeat's ``Topology`` or a ``StreamsGroupTopologyValue`` (same fields)."""

        def info(rows: Iterable[Any]) -> tuple[TopicInfo, ...]:
            return tuple(
                TopicInfo(
                    t.name,
                    t.partitions,
                    t.replication_factor,
                    tuple((c.key, c.value) for c in t.topic_configs),
                )
                for t in rows
            )

        return Topology(
            message.epoch,
            tuple(
                Subtopology(
                    s.subtopology_id,
                    tuple(s.source_topics),
                    tuple(s.source_topic_regex),
                    info(s.state_changelog_topics),
                    tuple(s.repartition_sink_topics),
                    info(s.repartition_source_topics),
                    tuple(
                        (
                            tuple(g.source_topics),
                            tuple(g.source_topic_regex),
                            tuple(g.repartition_source_topics),
                        )
                        for g in s.copartition_groups
                    ),
                )
                for s in message.subtopologies
            ),
        )

    def validate(self) -> str | None:
        """Why the topology is invalid (``StreamsGroupHeartbeatRequest``'s topology checks and
        ``TopologyValidator``), or ``None``."""
        ids = [s.subtopology_id for s in self.subtopologies]
        if len(set(ids)) != len(ids):
            return "Subtopology IDs must be unique."
        for s in self.subtopologies:
            if not s.source_topics and not s.source_topic_regex:
                return f"Subtopology {s.subtopology_id} has no source topics."
            sources = len(s.source_topics)
            regexes = len(s.source_topic_regex)
            repartitions = len(s.repartition_source_topics)
            for group in s.copartition_groups:
                for indexes, limit in zip(group, (sources, regexes, repartitions), strict=True):
                    if any(i < 0 or i >= limit for i in indexes):
                        return (
                            f"Copartition group of subtopology {s.subtopology_id} refers to an "
                            "unknown topic index."
                        )
        internal = [t.name for s in self.subtopologies for t in s.state_changelog_topics]
        internal += [t.name for s in self.subtopologies for t in s.repartition_source_topics]
        if len(set(internal)) != len(internal):
            return "Internal topics must be declared once."
        return None

    def to_value(self) -> Any:
        def info(rows: Iterable[TopicInfo]) -> list[Any]:
            return [
                TOPOLOGY_INFO(
                    name=t.name,
                    partitions=t.partitions,
                    replication_factor=t.replication_factor,
                    topic_configs=[TOPOLOGY_CONFIG(key=k, value=v) for k, v in t.configs],
                )
                for t in rows
            ]

        return TOPOLOGY_VALUE(
            epoch=self.epoch,
            subtopologies=[
                TOPOLOGY_SUB(
                    subtopology_id=s.subtopology_id,
                    source_topics=list(s.source_topics),
                    source_topic_regex=list(s.source_topic_regex),
                    state_changelog_topics=info(s.state_changelog_topics),
                    repartition_sink_topics=list(s.repartition_sink_topics),
                    repartition_source_topics=info(s.repartition_source_topics),
                    copartition_groups=[
                        TOPOLOGY_COPART(
                            source_topics=list(a),
                            source_topic_regex=list(b),
                            repartition_source_topics=list(c),
                        )
                        for a, b, c in s.copartition_groups
                    ],
                )
                for s in self.subtopologies
            ],
        )


@dataclass(frozen=True)
class ConfiguredTopology:
    """``ConfiguredTopology``: the task count of each subtopology, or why there is none."""

    tasks: Mapping[str, int]  # subtopology id -> number of tasks (input partitions)
    stateful: frozenset[str]  # subtopologies with changelog topics (they get standbys)
    status: tuple[tuple[int, str], ...]  # (StatusCode, StatusDetail), empty when ready
    missing_internal: tuple[TopicInfo, ...]  # internal topics to create, with their sizes

    @property
    def ready(self) -> bool:
        return not self.status


def configure(topology: Topology, topics: Mapping[str, int]) -> ConfiguredTopology:
    """``InternalTopicManager.configureTopics``: a subtopology has as many tasks as the largest of
    its source topics (declared repartition topics count with their declared size, else the size
    of the source topics they are fed from is not known here: the largest source topic's);
    changelog topics get the task count of their subtopology."""
    missing_sources = sorted(
        {t for s in topology.subtopologies for t in s.source_topics if t not in topics}
    )
    if missing_sources:
        detail = f"Source topics {', '.join(missing_sources)} are missing."
        return ConfiguredTopology({}, frozenset(), ((STATUS_MISSING_SOURCE_TOPICS, detail),), ())
    counts: dict[str, int] = {}
    for s in topology.subtopologies:
        sizes = [topics[t] for t in s.source_topics]
        for r in s.repartition_source_topics:
            sizes.append(r.partitions if r.partitions > 0 else topics.get(r.name, 0))
        counts[s.subtopology_id] = max(sizes, default=0)
    # A repartition topic of unknown size takes the task count of the subtopology writing it.
    for s in topology.subtopologies:
        for sink in s.repartition_sink_topics:
            for other in topology.subtopologies:
                if any(
                    r.name == sink and r.partitions <= 0 for r in other.repartition_source_topics
                ):
                    counts[other.subtopology_id] = max(
                        counts[other.subtopology_id], counts[s.subtopology_id]
                    )
    for s in topology.subtopologies:  # copartitioned source topics must agree
        for group in s.copartition_groups:
            names = [s.source_topics[i] for i in group[0]]
            if len({topics[n] for n in names}) > 1:
                detail = f"Copartitioned topics {', '.join(names)} differ in partition count."
                return ConfiguredTopology(
                    {}, frozenset(), ((STATUS_INCORRECTLY_PARTITIONED_TOPICS, detail),), ()
                )
    missing: list[TopicInfo] = []
    for s in topology.subtopologies:
        for r in s.repartition_source_topics:
            if r.name not in topics:
                missing.append(replace(r, partitions=counts[s.subtopology_id]))
        for c in s.state_changelog_topics:
            if c.name not in topics:
                missing.append(replace(c, partitions=counts[s.subtopology_id]))
    stateful = frozenset(
        s.subtopology_id for s in topology.subtopologies if s.state_changelog_topics
    )
    if missing:
        detail = f"Internal topics {', '.join(t.name for t in missing)} are missing."
        return ConfiguredTopology(
            counts, stateful, ((STATUS_MISSING_INTERNAL_TOPICS, detail),), tuple(missing)
        )
    return ConfiguredTopology(counts, stateful, (), ())


@dataclass(frozen=True)
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


@dataclass
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


@dataclass
class StreamsResult:
    """What a heartbeat decided (or its error)."""

    error: int = NONE
    message: str | None = None
    member: StreamsMember | None = None
    send_assignment: bool = False
    status: tuple[tuple[int, str], ...] = ()
    create_topics: tuple[TopicInfo, ...] = ()
    heartbeat_interval_ms: int = 0


class StreamsGroupError(Exception):
    def __init__(self, error: int, message: str | None = None) -> None:
        super().__init__(message)
        self.error = error
        self.message = message


# --- the assignor -------------------------------------------------------------------------------


def sticky_assign(
    members: Mapping[str, StreamsMember],
    previous: Mapping[str, Tasks],
    tasks: Mapping[str, int],
    stateful: Iterable[str],
    num_standby: int,
) -> dict[str, Tasks]:
    """A simplified ``StickyTaskAssignor`` (module doc): members by id, tasks by (subtopology,
    partition)."""
    ids = sorted(members)
    if not ids:
        return {}
    all_tasks = [(s, p) for s in sorted(tasks) for p in range(tasks[s])]
    quota = -(-len(all_tasks) // len(ids))  # ceil: the most any member may keep
    active: dict[str, dict[str, set[int]]] = {m: {} for m in ids}
    load = dict.fromkeys(ids, 0)
    owner: dict[tuple[str, int], str] = {}
    for m in ids:  # stickiness: previous owners keep what fits their quota
        for s, ps in sorted(previous.get(m, EMPTY_TASKS).active.items()):
            for p in sorted(ps):
                if (s, p) in owner or p >= tasks.get(s, 0) or load[m] >= quota:
                    continue
                owner[(s, p)] = m
                active[m].setdefault(s, set()).add(p)
                load[m] += 1
    for task in all_tasks:
        if task in owner:
            continue
        m = min(ids, key=lambda x: (load[x], x))
        owner[task] = m
        active[m].setdefault(task[0], set()).add(task[1])
        load[m] += 1
    standby: dict[str, dict[str, set[int]]] = {m: {} for m in ids}
    stateful_set = set(stateful)
    for s, p in all_tasks:
        if s not in stateful_set:
            continue
        used = {members[owner[(s, p)]].process_id}
        for _ in range(num_standby):
            candidates = [m for m in ids if members[m].process_id not in used]
            if not candidates:
                break
            m = min(candidates, key=lambda x: (load[x], x))
            standby[m].setdefault(s, set()).add(p)
            load[m] += 1
            used.add(members[m].process_id)
    return {m: Tasks(_freeze(active[m]), _freeze(standby[m])) for m in ids}


# --- records (StreamsCoordinatorRecordHelpers) ---------------------------------------------------


def _task_rows(cls: Any, tasks: TaskSet) -> list[Any]:
    return [cls(subtopology_id=s, partitions=sorted(ps)) for s, ps in sorted(tasks.items()) if ps]


def _from_rows(rows: Iterable[Any]) -> dict[str, frozenset[int]]:
    out: dict[str, set[int]] = {}
    for row in rows:
        out.setdefault(row.subtopology_id, set()).update(row.partitions)
    return _freeze(out)


def metadata_record(group: StreamsGroup | None, group_id: str, num_standby: int = 0) -> Record:
    key = versioned(METADATA_KEY(group_id=group_id), KEY_METADATA)
    if group is None:
        return key, None
    value = METADATA_VALUE(
        epoch=group.group_epoch,
        metadata_hash=group.metadata_hash,
        validated_topology_epoch=group.validated_topology_epoch,
        last_assignment_configs=[LAST_CONFIG(key="num.standby.replicas", value=str(num_standby))],
    )
    return key, versioned(value, 0)


def topology_record(group_id: str, topology: Topology | None) -> Record:
    key = versioned(TOPOLOGY_KEY(group_id=group_id), KEY_TOPOLOGY)
    return key, None if topology is None else versioned(topology.to_value(), 0)


def member_record(group_id: str, member_id: str, member: StreamsMember | None) -> Record:
    key = versioned(MEMBER_KEY(group_id=group_id, member_id=member_id), KEY_MEMBER)
    if member is None:
        return key, None
    endpoint = member.user_endpoint
    value = MEMBER_VALUE(
        instance_id=member.instance_id,
        rack_id=member.rack_id,
        client_id=member.client_id,
        client_host=member.client_host,
        rebalance_timeout_ms=member.rebalance_timeout_ms,
        topology_epoch=member.topology_epoch,
        process_id=member.process_id,
        user_endpoint=None
        if endpoint is None
        else MEMBER_ENDPOINT(host=endpoint[0], port=endpoint[1]),
        client_tags=[MEMBER_TAG(key=k, value=v) for k, v in member.client_tags],
    )
    return key, versioned(value, 0)


def target_epoch_record(group_id: str, epoch: int | None) -> Record:
    key = versioned(TARGET_METADATA_KEY(group_id=group_id), KEY_TARGET_METADATA)
    if epoch is None:
        return key, None
    return key, versioned(TARGET_METADATA_VALUE(assignment_epoch=epoch), 0)


def target_member_record(group_id: str, member_id: str, tasks: Tasks | None) -> Record:
    key = versioned(TARGET_MEMBER_KEY(group_id=group_id, member_id=member_id), KEY_TARGET_MEMBER)
    if tasks is None:
        return key, None
    value = TARGET_MEMBER_VALUE(
        active_tasks=_task_rows(TARGET_TASKS, tasks.active),
        standby_tasks=_task_rows(TARGET_TASKS, tasks.standby),
        warmup_tasks=_task_rows(TARGET_TASKS, tasks.warmup),
    )
    return key, versioned(value, 0)


def current_record(group_id: str, member_id: str, member: StreamsMember | None) -> Record:
    key = versioned(CURRENT_KEY(group_id=group_id, member_id=member_id), KEY_CURRENT_ASSIGNMENT)
    if member is None:
        return key, None
    a, r = member.assigned, member.pending_revocation
    value = CURRENT_VALUE(
        member_epoch=member.member_epoch,
        previous_member_epoch=member.previous_member_epoch,
        state=member.state,
        active_tasks=_task_rows(CURRENT_TASKS, a.active),
        standby_tasks=_task_rows(CURRENT_TASKS, a.standby),
        warmup_tasks=_task_rows(CURRENT_TASKS, a.warmup),
        active_tasks_pending_revocation=_task_rows(CURRENT_TASKS, r.active),
        standby_tasks_pending_revocation=_task_rows(CURRENT_TASKS, r.standby),
        warmup_tasks_pending_revocation=_task_rows(CURRENT_TASKS, r.warmup),
    )
    return key, versioned(value, 0)


def tombstones(group: StreamsGroup) -> list[Record]:
    """``StreamsGroup.createGroupTombstoneRecords``."""
    gid = group.group_id
    records: list[Record] = []
    records += [current_record(gid, m, None) for m in group.members]
    records += [target_member_record(gid, m, None) for m in group.members]
    records.append(target_epoch_record(gid, None))
    records += [member_record(gid, m, None) for m in group.members]
    records.append(metadata_record(None, gid))
    records.append(topology_record(gid, None))
    return records


# --- reconciliation (streams.CurrentAssignmentBuilder) -------------------------------------------


def reconcile(
    group: StreamsGroup, member: StreamsMember, target: Tasks, owned: Tasks | None
) -> StreamsMember:
    """The member's next step toward its target (``CurrentAssignmentBuilder.build``)."""
    epoch = group.assignment_epoch
    if member.state == MEMBER_STABLE and member.member_epoch == epoch:
        return member
    if member.state == UNREVOKED_TASKS:
        # ``ownsRevokedTasks``: unknown (null owned tasks) counts as still owning
        pending = member.pending_revocation
        if owned is None or not owned.intersect(pending).is_empty():
            return member
    revoked = member.assigned.minus(target)
    if not revoked.is_empty():
        return replace(
            member,
            state=UNREVOKED_TASKS,
            assigned=member.assigned.intersect(target),
            pending_revocation=revoked,
        )
    unreleased = {
        s: frozenset(p for p in ps if group.active_owner(s, p, member.member_id))
        for s, ps in target.active.items()
    }
    given = Tasks(_minus(target.active, unreleased), target.standby, target.warmup)
    return replace(
        member,
        member_epoch=epoch,
        previous_member_epoch=(
            member.member_epoch if epoch != member.member_epoch else member.previous_member_epoch
        ),
        state=UNRELEASED_TASKS if _freeze(unreleased) else MEMBER_STABLE,
        assigned=given,
        pending_revocation=EMPTY_TASKS,
    )


# --- the coordinator ---------------------------------------------------------------------------


class StreamsGroups:
    """The streams groups of one group coordinator (module doc)."""

    def __init__(self, coordinator: GroupCoordinator) -> None:
        self.coordinator = coordinator
        self.groups: dict[str, StreamsGroup] = {}

    def conf(self, name: str) -> int:
        value = self.coordinator.config.get(name)
        return int(value) if value is not None else int(_DEFAULTS[name])

    def _write(self, group_id: str, records: list[Record], now_ms: int) -> None:
        """Append, then replay: what is in memory is what was written (style rule 31)."""
        if not records:
            return
        self.coordinator.runtime.write(Write(group_id, records, now_ms))
        for key, value in records:
            key_version = read_version(key)[0]
            self.replay(key_version, key, value, now_ms)

    def _topic_sizes(self) -> dict[str, int]:
        state = self.coordinator.state
        if state is None:
            return {}
        return {name: len(t.partitions) for name, t in state.topics.items()}

    def _hash(self, topology: Topology | None, sizes: Mapping[str, int]) -> int:
        """The group's ``MetadataHash``: the ids and sizes of the topology's topics
        (internal ones included: their creation configures the topology)."""
        if topology is None:
            return 0
        state = self.coordinator.state
        names = sorted(
            {t for s in topology.subtopologies for t in s.source_topics}
            | {t.name for s in topology.subtopologies for t in s.repartition_source_topics}
            | {t.name for s in topology.subtopologies for t in s.state_changelog_topics}
        )
        h = hashlib.sha256()
        for name in names:
            topic = state.topics.get(name) if state is not None else None
            h.update(f"{name}:{topic.topic_id if topic else ''}:{sizes.get(name, -1)};".encode())
        return int.from_bytes(h.digest()[:8], "big", signed=True)

    def configured(self, group: StreamsGroup) -> ConfiguredTopology | None:
        if group.topology is None:
            return None
        return configure(group.topology, self._topic_sizes())

    def expire(self, group_id: str, now_ms: int) -> None:
        """Members whose session ended are fenced (``streamsGroupSessionTimeout``)."""
        group = self.groups.get(group_id)
        if group is None:
            return
        for member_id, deadline in sorted(group.session_deadlines.items()):
            if deadline <= now_ms and member_id in group.members:
                self._remove_member(group, member_id, now_ms)

    def validate_offset_commit(
        self, group_id: str, member_id: str, member_epoch: int, transactional: bool, now_ms: int
    ) -> int:
        """``StreamsGroup.validateOffsetCommit``: an error code, 0 when the commit may go on."""
        self.expire(group_id, now_ms)
        group = self.groups[group_id]
        if member_epoch < 0 and not group.members:
            return NONE  # an admin commit into an empty group
        member = group.members.get(member_id)
        if member is None:
            return UNKNOWN_MEMBER_ID
        if member_epoch != member.member_epoch:
            return ILLEGAL_GENERATION if transactional else STALE_MEMBER_EPOCH
        return NONE

    # --- StreamsGroupHeartbeat ---------------------------------------------------------------

    def heartbeat(
        self, request: Any, client_id: str, client_host: str, now_ms: int
    ) -> StreamsResult:
        """``GroupMetadataManager.streamsGroupHeartbeat``: a result, never an exception."""
        try:
            self._validate(request)
            self.expire(request.group_id, now_ms)
            if request.member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
                return self._leave(request, now_ms)
            return self._heartbeat(request, client_id, client_host, now_ms)
        except StreamsGroupError as exc:
            return StreamsResult(exc.error, exc.message)

    @staticmethod
    def _validate(request: Any) -> None:
        """``throwIfStreamsGroupHeartbeatRequestIsInvalid``."""
        if not request.group_id or not request.group_id.strip():
            raise StreamsGroupError(INVALID_REQUEST, "GroupId can't be empty.")
        if not request.member_id or not request.member_id.strip():
            raise StreamsGroupError(INVALID_REQUEST, "MemberId can't be empty.")
        if request.instance_id is not None and not request.instance_id.strip():
            raise StreamsGroupError(INVALID_REQUEST, "InstanceId can't be empty.")
        if request.rack_id is not None and not request.rack_id.strip():
            raise StreamsGroupError(INVALID_REQUEST, "RackId can't be empty.")
        epoch = request.member_epoch
        if epoch == 0:
            if request.rebalance_timeout_ms == -1:
                raise StreamsGroupError(
                    INVALID_REQUEST, "RebalanceTimeoutMs must be provided in first request."
                )
            if (
                request.active_tasks is None
                or request.standby_tasks is None
                or request.warmup_tasks is None
            ):
                raise StreamsGroupError(
                    INVALID_REQUEST,
                    "ActiveTasks, StandbyTasks and WarmupTasks must be empty when (re-)joining.",
                )
            if request.topology is None:
                raise StreamsGroupError(
                    INVALID_REQUEST, "Topology must be non-null when (re-)joining."
                )
            if not request.process_id:
                raise StreamsGroupError(INVALID_REQUEST, "ProcessId can't be empty.")
        elif epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            raise StreamsGroupError(
                INVALID_REQUEST, f"MemberEpoch is {epoch}, but must be greater than or equal to -2."
            )
        if epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH and request.instance_id is None:
            raise StreamsGroupError(
                INVALID_REQUEST, "InstanceId can't be null when MemberEpoch is -2."
            )
        if request.topology is not None:
            why = Topology.from_message(request.topology).validate()
            if why is not None:
                raise StreamsGroupError(STREAMS_INVALID_TOPOLOGY, why)  # fmt: skip

    def _group_for(self, group_id: str, create: bool) -> StreamsGroup:
        group = self.groups.get(group_id)
        other = self.coordinator.groups.get(group_id)
        if other is not None and (isinstance(other, ConsumerGroup) or other.members):
            raise StreamsGroupError(GROUP_ID_NOT_FOUND, f"Group {group_id} is not a streams group.")
        if group is None:
            if not create:
                raise StreamsGroupError(GROUP_ID_NOT_FOUND, f"Streams group {group_id} not found.")
            group = StreamsGroup(group_id)
        return group

    @staticmethod
    def _owned(request: Any) -> Tasks | None:
        if (
            request.active_tasks is None
            or request.standby_tasks is None
            or request.warmup_tasks is None
        ):
            return None
        return Tasks(
            _from_rows(request.active_tasks),
            _from_rows(request.standby_tasks),
            _from_rows(request.warmup_tasks),
        )

    def _heartbeat(
        self, request: Any, client_id: str, client_host: str, now_ms: int
    ) -> StreamsResult:
        group_id, member_id, epoch = request.group_id, request.member_id, request.member_epoch
        group = self._group_for(group_id, create=epoch == 0)
        owned = self._owned(request)
        old = group.members.get(member_id)
        if epoch != 0:
            if old is None:
                raise StreamsGroupError(
                    UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group_id}."
                )
            # throwIfStreamsGroupMemberEpochIsInvalid
            if epoch > old.member_epoch:
                raise StreamsGroupError(
                    FENCED_MEMBER_EPOCH,
                    f"The streams group member has a greater member epoch ({epoch}) than the one known by the group coordinator ({old.member_epoch}). The member must abandon all its partitions and rejoin.",
                )
            if epoch < old.member_epoch:
                stale_ok = (
                    epoch == old.previous_member_epoch
                    and owned is not None
                    and owned.minus(old.assigned).is_empty()
                )
                if not stale_ok:
                    raise StreamsGroupError(
                        FENCED_MEMBER_EPOCH,
                        f"The streams group member has a smaller member epoch ({epoch}) than the one known by the group coordinator ({old.member_epoch}). The member must abandon all its partitions and rejoin.",
                    )
        elif old is None and len(group.members) >= self.conf("group.streams.max.size"):
            raise StreamsGroupError(
                GROUP_MAX_SIZE_REACHED,
                f"The streams group has reached its maximum capacity of {self.conf('group.streams.max.size')} members.",
            )

        records: list[Record] = []
        bump = False
        topology = group.topology
        member_topology_epoch: int | None = None
        if request.topology is not None:
            # ``streamsGroupHeartbeat``'s topology rules: a newer epoch replaces the group's
            # topology, an older one is served as STALE_TOPOLOGY, the same epoch must be the
            # same topology.
            sent = Topology.from_message(request.topology)
            member_topology_epoch = sent.epoch
            if topology is None or sent.epoch > topology.epoch:
                topology = sent
                records.append(topology_record(group_id, topology))
                bump = True
            elif sent.epoch == topology.epoch and sent != topology:
                raise StreamsGroupError(
                    STREAMS_INVALID_TOPOLOGY_EPOCH,
                    f"Topology updated but topology epoch not incremented: epoch {sent.epoch}.",
                )

        base = old if old is not None and epoch != 0 else (old or StreamsMember(member_id))
        endpoint = request.user_endpoint
        member = replace(
            base,
            instance_id=request.instance_id if request.instance_id is not None else base.instance_id,
            rack_id=request.rack_id if request.rack_id is not None else base.rack_id,
            client_id=client_id,
            client_host=client_host,
            rebalance_timeout_ms=(
                request.rebalance_timeout_ms if request.rebalance_timeout_ms != -1 else base.rebalance_timeout_ms
            ),
            topology_epoch=(
                member_topology_epoch if member_topology_epoch is not None else base.topology_epoch
            ),
            process_id=request.process_id if request.process_id is not None else base.process_id,
            user_endpoint=(
                (endpoint.host, endpoint.port) if endpoint is not None else base.user_endpoint
            ),
            client_tags=(
                tuple((t.key, t.value) for t in request.client_tags)
                if request.client_tags is not None else base.client_tags
            ),
        )  # fmt: skip
        if old is None or member.metadata() != old.metadata():
            records.append(member_record(group_id, member_id, member))
            bump = True
        sizes = self._topic_sizes()
        new_hash = self._hash(topology, sizes)
        if new_hash != group.metadata_hash:
            bump = True
        configured = configure(topology, sizes) if topology is not None else None
        new_group = replace(group, topology=topology, metadata_hash=new_hash)
        if bump:
            new_group.group_epoch = group.group_epoch + 1
            if configured is not None and configured.ready and topology is not None:
                new_group.validated_topology_epoch = topology.epoch
            records.append(metadata_record(new_group, group_id, self._standbys()))
        self._write(group_id, records, now_ms)
        records = []
        group = self.groups.get(group_id) or new_group
        if configured is not None and group.assignment_epoch < group.group_epoch:
            # A topology that is not ready gets an empty target (``TargetAssignmentBuilder``
            # with no tasks): members still move to the group epoch.
            target = sticky_assign(
                {**group.members, member_id: member}, group.target,
                configured.tasks if configured.ready else {}, configured.stateful,
                self._standbys(),
            )  # fmt: skip
            for mid, tasks in sorted(target.items()):
                if group.target.get(mid) != tasks:
                    records.append(target_member_record(group_id, mid, tasks))
            records.append(target_epoch_record(group_id, group.group_epoch))
            self._write(group_id, records, now_ms)
            records = []
        current = group.members.get(member_id, member)
        next_member = reconcile(group, current, group.target.get(member_id, EMPTY_TASKS), owned)
        if (
            old is None
            or next_member.member_epoch != old.member_epoch
            or next_member.state != old.state
            or next_member.assigned != old.assigned
            or next_member.pending_revocation != old.pending_revocation
            or next_member.previous_member_epoch != old.previous_member_epoch
        ):
            self._write(group_id, [current_record(group_id, member_id, next_member)], now_ms)
        group.session_deadlines[member_id] = now_ms + self.conf("group.streams.session.timeout.ms")
        if request.shutdown_application:
            group.shutdown_requested = True
        status = list(configured.status) if configured is not None else []
        final = group.members[member_id]
        if group.topology is not None and final.topology_epoch < group.topology.epoch:
            status.insert(
                0,
                (
                    STATUS_STALE_TOPOLOGY,
                    f"The member's topology epoch {final.topology_epoch} is behind the group's "
                    f"topology epoch {group.topology.epoch}.",
                ),
            )
        if group.shutdown_requested:
            status.append(
                (
                    STATUS_SHUTDOWN_APPLICATION,
                    "A KafkaStreams instance encountered a fatal error and requested a shutdown for the entire application.",
                )
            )
        send = (
            epoch == 0
            or owned is None
            or old is None
            or final.assigned != old.assigned
            or final.member_epoch != old.member_epoch
        )
        return StreamsResult(
            member=final,
            send_assignment=send,
            status=tuple(status),
            create_topics=configured.missing_internal if configured is not None else (),
            heartbeat_interval_ms=self.conf("group.streams.heartbeat.interval.ms"),
        )

    def _standbys(self) -> int:
        return self.conf("group.streams.num.standby.replicas")

    def _leave(self, request: Any, now_ms: int) -> StreamsResult:
        group = self._group_for(request.group_id, create=False)
        member = group.members.get(request.member_id)
        if member is None:
            raise StreamsGroupError(
                UNKNOWN_MEMBER_ID,
                f"Member {request.member_id} is not a member of group {request.group_id}.",
            )
        self._remove_member(group, request.member_id, now_ms)
        return StreamsResult(
            member=replace(member, member_epoch=request.member_epoch, assigned=EMPTY_TASKS)
        )

    def _remove_member(self, group: StreamsGroup, member_id: str, now_ms: int) -> None:
        """``removeStreamsMember`` + a new group epoch (``streamsGroupFenceMember``)."""
        gid = group.group_id
        records = [
            current_record(gid, member_id, None),
            target_member_record(gid, member_id, None),
            member_record(gid, member_id, None),
        ]
        bumped = replace(group, group_epoch=group.group_epoch + 1)
        records.append(metadata_record(bumped, gid, self._standbys()))
        self._write(gid, records, now_ms)
        group.session_deadlines.pop(member_id, None)

    # --- replay (GroupMetadataManager.replay) -------------------------------------------------

    def _holder(self, group_id: str) -> StreamsGroup:
        group = self.groups.get(group_id)
        if group is None:
            group = self.groups[group_id] = StreamsGroup(group_id)
        return group

    def replay(self, key_version: int, key: bytes, value: bytes | None, now_ms: int) -> None:
        body = memoryview(key)[2:]
        data = None if value is None else memoryview(value)[2:]
        cls = {
            KEY_METADATA: METADATA_KEY,
            KEY_PARTITION_METADATA: PARTITION_METADATA_KEY,
            KEY_MEMBER: MEMBER_KEY,
            KEY_TARGET_METADATA: TARGET_METADATA_KEY,
            KEY_TARGET_MEMBER: TARGET_MEMBER_KEY,
            KEY_CURRENT_ASSIGNMENT: CURRENT_KEY,
            KEY_TOPOLOGY: TOPOLOGY_KEY,
        }[key_version]
        k = cls.decode(body, key_version)
        gid = k.group_id
        if key_version == KEY_PARTITION_METADATA:
            return  # 4.0's record: 4.1+ read it only to drop it (the hash replaced it)
        if data is None and gid not in self.groups:
            return
        group = self._holder(gid)
        if key_version == KEY_METADATA:
            if data is None:  # the group's last record: it is deleted
                del self.groups[gid]
                return
            v = METADATA_VALUE.decode(data, 0)
            group.group_epoch = v.epoch
            group.metadata_hash = v.metadata_hash
            group.validated_topology_epoch = v.validated_topology_epoch
        elif key_version == KEY_TOPOLOGY:
            group.topology = (
                None if data is None else Topology.from_message(TOPOLOGY_VALUE.decode(data, 0))
            )
        elif key_version == KEY_TARGET_METADATA:
            group.assignment_epoch = (
                0 if data is None else TARGET_METADATA_VALUE.decode(data, 0).assignment_epoch
            )
        elif key_version == KEY_TARGET_MEMBER:
            if data is None:
                group.target.pop(k.member_id, None)
            else:
                t = TARGET_MEMBER_VALUE.decode(data, 0)
                group.target[k.member_id] = Tasks(
                    _from_rows(t.active_tasks),
                    _from_rows(t.standby_tasks),
                    _from_rows(t.warmup_tasks),
                )
        elif key_version == KEY_MEMBER:
            if data is None:
                group.members.pop(k.member_id, None)
                group.session_deadlines.pop(k.member_id, None)
                return
            m = MEMBER_VALUE.decode(data, 0)
            base = group.members.get(k.member_id) or StreamsMember(k.member_id)
            ep = m.user_endpoint
            group.members[k.member_id] = replace(
                base,
                instance_id=m.instance_id,
                rack_id=m.rack_id,
                client_id=m.client_id,
                client_host=m.client_host,
                rebalance_timeout_ms=m.rebalance_timeout_ms,
                topology_epoch=m.topology_epoch,
                process_id=m.process_id,
                user_endpoint=None if ep is None else (ep.host, ep.port),
                client_tags=tuple((t.key, t.value) for t in m.client_tags),
            )
            group.session_deadlines.setdefault(
                k.member_id, now_ms + self.conf("group.streams.session.timeout.ms")
            )
        elif key_version == KEY_CURRENT_ASSIGNMENT:
            member = group.members.get(k.member_id)
            if member is None:
                if data is None:
                    return
                member = StreamsMember(k.member_id)
            if data is None:
                group.members[k.member_id] = replace(
                    member, member_epoch=LEAVE_GROUP_MEMBER_EPOCH, previous_member_epoch=-1,
                    state=MEMBER_STABLE, assigned=EMPTY_TASKS, pending_revocation=EMPTY_TASKS,
                )  # fmt: skip
                return
            c = CURRENT_VALUE.decode(data, 0)
            group.members[k.member_id] = replace(
                member,
                member_epoch=c.member_epoch,
                previous_member_epoch=c.previous_member_epoch,
                state=c.state,
                assigned=Tasks(
                    _from_rows(c.active_tasks),
                    _from_rows(c.standby_tasks),
                    _from_rows(c.warmup_tasks),
                ),
                pending_revocation=Tasks(
                    _from_rows(c.active_tasks_pending_revocation),
                    _from_rows(c.standby_tasks_pending_revocation),
                    _from_rows(c.warmup_tasks_pending_revocation),
                ),
            )
