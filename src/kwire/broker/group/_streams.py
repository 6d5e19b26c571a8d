"""KIP-1071 streams groups: the coordinator of the streams groups (``StreamsGroups``), what a
StreamsGroupHeartbeat decides, and the replay of its records.

Approach: a sans-IO state machine beside the consumer groups (``_consumer_group``), driven by
StreamsGroupHeartbeat and ``now_ms`` (style rules 27 and 31), following Kafka 4.3's
group-coordinator module: ``GroupMetadataManager.streamsGroupHeartbeat``, ``StreamsGroup``,
``StreamsGroupMember``, ``streams.CurrentAssignmentBuilder``, ``streams.TargetAssignmentBuilder``,
``streams.topics.InternalTopicManager`` (configuring the topology) and ``StreamsCoordinatorRecordHelpers``.
The pieces live apart: the group and member state in ``_streams_group``, the topology and its
configuration in ``_streams_topology``, the assignor and reconciliation in ``_streams_assignor``,
the records in ``_streams_records``.

Every decision is a list of records (key versions 17-23, values v0, ``StreamsGroup*Key/Value``),
appended to the group's partition of ``__consumer_offsets`` and replayed into memory by the same
``replay`` that loads the topic at start, so a restart keeps exactly what the heartbeats decided.

Epochs as for consumer groups: the *group epoch* moves when a member joins, leaves or changes what
the assignor sees, or the topology or the source topics' partition counts change; the *target
assignment epoch* catches up when the assignor computes a new target; each *member epoch* catches
up by reconciliation.

Not modelled: regex source topics (a topology using them is configured with none matched),
static members' ``-2`` rejoin, the rebalance timeout of a member that does not revoke, the
``group.streams.*`` dynamic group configs. Committed offsets live in the classic coordinator's
``Group`` holder of the same id, checked by ``validate_offset_commit`` (the member epoch).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Final

from kwire._lazy import lazy_dataclass
from kwire.broker.group._consumer import ConsumerGroup
from kwire.broker.group._records import Write
from kwire.broker.group._streams_assignor import reconcile, sticky_assign
from kwire.broker.group._streams_group import (
    EMPTY_TASKS,
    MEMBER_STABLE,
    StreamsGroup,
    StreamsMember,
    Tasks,
)
from kwire.broker.group._streams_records import (
    CURRENT_KEY,
    CURRENT_VALUE,
    KEY_CURRENT_ASSIGNMENT,
    KEY_MEMBER,
    KEY_METADATA,
    KEY_PARTITION_METADATA,
    KEY_TARGET_MEMBER,
    KEY_TARGET_METADATA,
    KEY_TOPOLOGY,
    MEMBER_KEY,
    MEMBER_VALUE,
    METADATA_KEY,
    METADATA_VALUE,
    PARTITION_METADATA_KEY,
    TARGET_MEMBER_KEY,
    TARGET_MEMBER_VALUE,
    TARGET_METADATA_KEY,
    TARGET_METADATA_VALUE,
    TOPOLOGY_KEY,
    Record,
    _from_rows,
    current_record,
    member_record,
    metadata_record,
    target_epoch_record,
    target_member_record,
    topology_record,
)
from kwire.broker.group._streams_topology import (
    STATUS_SHUTDOWN_APPLICATION,
    STATUS_STALE_TOPOLOGY,
    TOPOLOGY_VALUE,
    ConfiguredTopology,
    TopicInfo,
    Topology,
    configure,
)
from kwire.log.internal_topics import read_version

if TYPE_CHECKING:
    from kwire.broker.group._shard import GroupCoordinator
    from kwire.protocol.messages import StreamsGroupHeartbeatRequest

__all__ = ["StreamsGroups", "StreamsResult"]


LEAVE_GROUP_MEMBER_EPOCH: Final = -1


LEAVE_GROUP_STATIC_MEMBER_EPOCH: Final = -2


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


def _group_and_member(key_version: int, body: memoryview) -> tuple[str, str]:
    """The group and member ids of a streams-group record key (``""`` for the keys that name no
    member); each key type decoded as itself."""
    if key_version == KEY_METADATA:
        return METADATA_KEY.decode(body, key_version).group_id, ""
    if key_version == KEY_PARTITION_METADATA:
        return PARTITION_METADATA_KEY.decode(body, key_version).group_id, ""
    if key_version == KEY_TARGET_METADATA:
        return TARGET_METADATA_KEY.decode(body, key_version).group_id, ""
    if key_version == KEY_TOPOLOGY:
        return TOPOLOGY_KEY.decode(body, key_version).group_id, ""
    if key_version == KEY_MEMBER:
        member = MEMBER_KEY.decode(body, key_version)
        return member.group_id, member.member_id
    if key_version == KEY_TARGET_MEMBER:
        target = TARGET_MEMBER_KEY.decode(body, key_version)
        return target.group_id, target.member_id
    if key_version == KEY_CURRENT_ASSIGNMENT:
        current = CURRENT_KEY.decode(body, key_version)
        return current.group_id, current.member_id
    raise KeyError(key_version)


@lazy_dataclass
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
        self, request: StreamsGroupHeartbeatRequest, client_id: str, client_host: str, now_ms: int
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

    def request_error(self, request: StreamsGroupHeartbeatRequest) -> StreamsResult | None:
        """The heartbeat's answer when the request itself is invalid (``None``: it is not):
        ``GroupCoordinatorService.streamsGroupHeartbeat`` checks it before it looks for the
        group's coordinator, so the handler asks before routing."""
        try:
            self._validate(request)
        except StreamsGroupError as exc:
            return StreamsResult(exc.error, exc.message)
        return None

    @staticmethod
    def _validate(request: StreamsGroupHeartbeatRequest) -> None:
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
    def _owned(request: StreamsGroupHeartbeatRequest) -> Tasks | None:
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
        self, request: StreamsGroupHeartbeatRequest, client_id: str, client_host: str, now_ms: int
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

    def _leave(self, request: StreamsGroupHeartbeatRequest, now_ms: int) -> StreamsResult:
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
        gid, member_id = _group_and_member(key_version, body)
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
                group.target.pop(member_id, None)
            else:
                t = TARGET_MEMBER_VALUE.decode(data, 0)
                group.target[member_id] = Tasks(
                    _from_rows(t.active_tasks),
                    _from_rows(t.standby_tasks),
                    _from_rows(t.warmup_tasks),
                )
        elif key_version == KEY_MEMBER:
            if data is None:
                group.members.pop(member_id, None)
                group.session_deadlines.pop(member_id, None)
                return
            m = MEMBER_VALUE.decode(data, 0)
            base = group.members.get(member_id) or StreamsMember(member_id)
            ep = m.user_endpoint
            group.members[member_id] = replace(
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
                member_id, now_ms + self.conf("group.streams.session.timeout.ms")
            )
        elif key_version == KEY_CURRENT_ASSIGNMENT:
            member = group.members.get(member_id)
            if member is None:
                if data is None:
                    return
                member = StreamsMember(member_id)
            if data is None:
                group.members[member_id] = replace(
                    member, member_epoch=LEAVE_GROUP_MEMBER_EPOCH, previous_member_epoch=-1,
                    state=MEMBER_STABLE, assigned=EMPTY_TASKS, pending_revocation=EMPTY_TASKS,
                )  # fmt: skip
                return
            c = CURRENT_VALUE.decode(data, 0)
            group.members[member_id] = replace(
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
