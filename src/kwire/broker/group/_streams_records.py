"""The streams groups' records in ``__consumer_offsets``: key versions 17-23, values v0
(``StreamsGroup*Key/Value``), built as Kafka 4.3's ``StreamsCoordinatorRecordHelpers`` builds them.

The record schemas are bundled from ``tools/specs/streams-coordinator`` (its SOURCE says which
stored Kafka schema each follows; the metadata value's ``MetadataHash`` is kwire's own hash of the
subscribed topics' ids and partition counts, not Kafka's murmur3 one: only its changes matter).
StreamsGroupPartitionMetadata (key 18) is what 4.0 wrote; 4.1+ write the hash instead, and replay
only removes it, as Kafka's does. Replay itself is ``_streams.StreamsGroups.replay``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from kwire.broker.group._streams_group import StreamsGroup, StreamsMember, Tasks, TaskSet, _freeze
from kwire.broker.group._streams_topology import Topology
from kwire.log.internal_topics import versioned
from kwire.protocol.messages import (
    StreamsGroupCurrentMemberAssignmentKey,
    StreamsGroupCurrentMemberAssignmentValue,
    StreamsGroupMemberMetadataKey,
    StreamsGroupMemberMetadataValue,
    StreamsGroupMetadataKey,
    StreamsGroupMetadataValue,
    StreamsGroupPartitionMetadataKey,
    StreamsGroupTargetAssignmentMemberKey,
    StreamsGroupTargetAssignmentMemberValue,
    StreamsGroupTargetAssignmentMetadataKey,
    StreamsGroupTargetAssignmentMetadataValue,
    StreamsGroupTopologyKey,
)

__all__ = [
    "KEY_VERSIONS",
    "Record",
    "current_record",
    "member_record",
    "metadata_record",
    "target_epoch_record",
    "target_member_record",
    "tombstones",
    "topology_record",
]


KEY_METADATA: Final = 17


KEY_PARTITION_METADATA: Final = 18


KEY_MEMBER: Final = 19


KEY_TARGET_METADATA: Final = 20


KEY_TARGET_MEMBER: Final = 21


KEY_CURRENT_ASSIGNMENT: Final = 22


KEY_TOPOLOGY: Final = 23


KEY_VERSIONS: Final = range(KEY_METADATA, KEY_TOPOLOGY + 1)


METADATA_KEY: Final = StreamsGroupMetadataKey
METADATA_VALUE: Final = StreamsGroupMetadataValue
LAST_CONFIG: Final = StreamsGroupMetadataValue.LastAssignmentConfig
PARTITION_METADATA_KEY: Final = StreamsGroupPartitionMetadataKey
MEMBER_KEY: Final = StreamsGroupMemberMetadataKey
MEMBER_VALUE: Final = StreamsGroupMemberMetadataValue
MEMBER_ENDPOINT: Final = StreamsGroupMemberMetadataValue.Endpoint
MEMBER_TAG: Final = StreamsGroupMemberMetadataValue.KeyValue
TARGET_METADATA_KEY: Final = StreamsGroupTargetAssignmentMetadataKey
TARGET_METADATA_VALUE: Final = StreamsGroupTargetAssignmentMetadataValue
TARGET_MEMBER_KEY: Final = StreamsGroupTargetAssignmentMemberKey
TARGET_MEMBER_VALUE: Final = StreamsGroupTargetAssignmentMemberValue
TARGET_TASKS: Final = StreamsGroupTargetAssignmentMemberValue.TaskIds
CURRENT_KEY: Final = StreamsGroupCurrentMemberAssignmentKey
CURRENT_VALUE: Final = StreamsGroupCurrentMemberAssignmentValue
CURRENT_TASKS: Final = StreamsGroupCurrentMemberAssignmentValue.TaskIds
TOPOLOGY_KEY: Final = StreamsGroupTopologyKey


Record = tuple[bytes, bytes | None]


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
