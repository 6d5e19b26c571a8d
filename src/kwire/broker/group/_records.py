"""The records of ``__consumer_offsets``: keys and values as Kafka 3.9+ writes them.

Approach: one place for every record the group coordinator writes and replays
(``GroupCoordinatorRecordHelpers``): a record is a ``(key, value)`` pair of bytes, each a
big-endian int16 version followed by the generated message; a ``None`` value is a tombstone.
Key versions: 0/1 OffsetCommit, 2 GroupMetadata (classic groups), 3..8 the KIP-848 consumer
group's records. The codecs are the generated ``kwire.protocol`` messages.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from kwire._lazy import lazy_dataclass
from kwire.broker.group._assignors import Assignment, freeze
from kwire.log.internal_topics import CONSUMER_OFFSETS, read_version, versioned
from kwire.protocol.messages import (
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupMemberMetadataValue,
    ConsumerGroupMetadataKey,
    ConsumerGroupMetadataValue,
    ConsumerGroupPartitionMetadataKey,
    ConsumerGroupPartitionMetadataValue,
    ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupTargetAssignmentMemberValue,
    ConsumerGroupTargetAssignmentMetadataKey,
    ConsumerGroupTargetAssignmentMetadataValue,
    ConsumerProtocolSubscription,
    GroupMetadataKey,
    GroupMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
)

if TYPE_CHECKING:
    from kwire.broker.group._consumer import ConsumerGroup, ConsumerMember

__all__ = [
    "GROUP_TOPIC",
    "OffsetAndMetadata",
    "Record",
    "Write",
    "consumer_group_tombstones",
    "current_assignment_record",
    "epoch_record",
    "group_key",
    "member_record",
    "offset_key",
    "offset_record",
    "partition_metadata_record",
    "target_epoch_record",
    "target_member_record",
    "versioned",
]

GROUP_TOPIC: Final = CONSUMER_OFFSETS

#: a record of the topic: key, value (None: a tombstone)
Record = tuple[bytes, bytes | None]

# classic groups and offsets
OFFSET_COMMIT_KEY: Final = OffsetCommitKey
OFFSET_COMMIT_VALUE: Final = OffsetCommitValue
GROUP_METADATA_KEY: Final = GroupMetadataKey
GROUP_METADATA_VALUE: Final = GroupMetadataValue
MEMBER_METADATA: Final = GroupMetadataValue.MemberMetadata
SUBSCRIPTION: Final = ConsumerProtocolSubscription

# KIP-848 consumer groups: key versions
KEY_METADATA: Final = 3
KEY_PARTITION_METADATA: Final = 4
KEY_MEMBER: Final = 5
KEY_TARGET_METADATA: Final = 6
KEY_TARGET_MEMBER: Final = 7
KEY_CURRENT_ASSIGNMENT: Final = 8

METADATA_KEY: Final = ConsumerGroupMetadataKey
METADATA_VALUE: Final = ConsumerGroupMetadataValue
PARTITION_METADATA_KEY: Final = ConsumerGroupPartitionMetadataKey
PARTITION_METADATA_VALUE: Final = ConsumerGroupPartitionMetadataValue
TOPIC_METADATA: Final = ConsumerGroupPartitionMetadataValue.TopicMetadata
MEMBER_KEY: Final = ConsumerGroupMemberMetadataKey
MEMBER_VALUE: Final = ConsumerGroupMemberMetadataValue
TARGET_METADATA_KEY: Final = ConsumerGroupTargetAssignmentMetadataKey
TARGET_METADATA_VALUE: Final = ConsumerGroupTargetAssignmentMetadataValue
TARGET_MEMBER_KEY: Final = ConsumerGroupTargetAssignmentMemberKey
TARGET_MEMBER_VALUE: Final = ConsumerGroupTargetAssignmentMemberValue
TARGET_PARTITIONS: Final = ConsumerGroupTargetAssignmentMemberValue.TopicPartition
CURRENT_KEY: Final = ConsumerGroupCurrentMemberAssignmentKey
CURRENT_VALUE: Final = ConsumerGroupCurrentMemberAssignmentValue
CURRENT_PARTITIONS: Final = ConsumerGroupCurrentMemberAssignmentValue.TopicPartitions


@lazy_dataclass(frozen=True)
class Write:
    """Records for one group's partition, appended as one batch (transactional with a producer);
    ``replay``: applied to the shard once appended (Kafka's ``CoordinatorResult.replayRecords``;
    classic-group operations change the group themselves and do not replay)."""

    group_id: str
    records: Sequence[Record]
    now_ms: int
    producer: tuple[int, int] | None = None
    replay: bool = False


@lazy_dataclass
class OffsetAndMetadata:
    """A committed offset (``OffsetCommitValue``)."""

    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp: int
    expire_timestamp: int = -1


def offset_key(group_id: str, tp: tuple[str, int]) -> bytes:
    return versioned(OFFSET_COMMIT_KEY(group=group_id, topic=tp[0], partition=tp[1]), 1)


def group_key(group_id: str) -> bytes:
    return versioned(GROUP_METADATA_KEY(group=group_id), 2)


def offset_record(group_id: str, tp: tuple[str, int], om: OffsetAndMetadata) -> Record:
    """``newOffsetCommitRecord``: value v1 with an expire timestamp, else v3."""
    version = 1 if om.expire_timestamp >= 0 else 3
    value = OFFSET_COMMIT_VALUE(
        offset=om.offset,
        leader_epoch=om.leader_epoch,
        metadata=om.metadata,
        commit_timestamp=om.commit_timestamp,
        expire_timestamp=om.expire_timestamp,
    )
    return offset_key(group_id, tp), versioned(value, version)


def decode_offset(value: bytes) -> OffsetAndMetadata:
    """An ``OffsetCommitValue`` (any version) read back."""
    vv = read_version(value)[0]
    v = OFFSET_COMMIT_VALUE.decode(memoryview(value)[2:], min(vv, 4))
    return OffsetAndMetadata(
        v.offset,
        v.leader_epoch if vv >= 3 else -1,
        v.metadata,
        v.commit_timestamp,
        v.expire_timestamp if vv == 1 else -1,
    )


# --- KIP-848 consumer group records -------------------------------------------------------------


def partitions_of(cls: Any, assignment: Assignment) -> list[Any]:
    return [cls(topic_id=t, partitions=sorted(ps)) for t, ps in sorted(assignment.items()) if ps]


def assignment_of(rows: Iterable[Any]) -> Assignment:
    out: dict[uuid.UUID, set[int]] = {}
    for row in rows:
        out.setdefault(row.topic_id, set()).update(row.partitions)
    return freeze(out)


def epoch_record(group_id: str, epoch: int | None) -> Record:
    key = versioned(METADATA_KEY(group_id=group_id), KEY_METADATA)
    return key, None if epoch is None else versioned(METADATA_VALUE(epoch=epoch), 0)


def partition_metadata_record(
    group_id: str, metadata: Mapping[str, tuple[uuid.UUID, int]] | None
) -> Record:
    key = versioned(PARTITION_METADATA_KEY(group_id=group_id), KEY_PARTITION_METADATA)
    if metadata is None:
        return key, None
    topics = [
        TOPIC_METADATA(
            topic_id=topic_id, topic_name=name, num_partitions=count, partition_metadata=[]
        )
        for name, (topic_id, count) in sorted(metadata.items())
    ]
    return key, versioned(PARTITION_METADATA_VALUE(topics=topics), 0)


def member_record(group_id: str, member_id: str, member: ConsumerMember | None) -> Record:
    key = versioned(MEMBER_KEY(group_id=group_id, member_id=member_id), KEY_MEMBER)
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
    return key, versioned(value, 0)


def target_epoch_record(group_id: str, epoch: int | None) -> Record:
    key = versioned(TARGET_METADATA_KEY(group_id=group_id), KEY_TARGET_METADATA)
    return key, None if epoch is None else versioned(
        TARGET_METADATA_VALUE(assignment_epoch=epoch), 0
    )


def target_member_record(group_id: str, member_id: str, assignment: Assignment | None) -> Record:
    key = versioned(TARGET_MEMBER_KEY(group_id=group_id, member_id=member_id), KEY_TARGET_MEMBER)
    if assignment is None:
        return key, None
    value = TARGET_MEMBER_VALUE(topic_partitions=partitions_of(TARGET_PARTITIONS, assignment))
    return key, versioned(value, 0)


def current_assignment_record(
    group_id: str, member_id: str, member: ConsumerMember | None
) -> Record:
    key = versioned(CURRENT_KEY(group_id=group_id, member_id=member_id), KEY_CURRENT_ASSIGNMENT)
    if member is None:
        return key, None
    value = CURRENT_VALUE(
        member_epoch=member.member_epoch,
        previous_member_epoch=member.previous_member_epoch,
        state=member.state,
        assigned_partitions=partitions_of(CURRENT_PARTITIONS, member.assigned),
        partitions_pending_revocation=partitions_of(CURRENT_PARTITIONS, member.pending_revocation),
    )
    return key, versioned(value, 0)


def consumer_group_tombstones(group: ConsumerGroup) -> list[Record]:
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
