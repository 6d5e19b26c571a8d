"""The group coordinator: classic and KIP-848 consumer groups and their offsets, kept in
``__consumer_offsets`` (Kafka's group-coordinator module).

``_shard`` (``GroupCoordinatorShard``) holds the groups and replays records; ``_classic_groups``
and ``_consumer_groups`` (``GroupMetadataManager``) and ``_offsets`` (``OffsetMetadataManager``)
decide; ``_runtime`` (``CoordinatorRuntime``) appends the records they return and replays them;
``_classic`` and ``_consumer`` are the two kinds of group; ``_assignors`` the server-side
assignors; ``_records`` the records' keys and values.
"""

from kwire.broker.group._assignors import ASSIGNORS, Assignment, range_assign, uniform_assign
from kwire.broker.group._classic import (
    COMPLETING_REBALANCE,
    DEAD,
    EMPTY,
    PREPARING_REBALANCE,
    STABLE,
    Group,
    GroupError,
    JoinResult,
    Member,
    SyncResult,
    Waiter,
)
from kwire.broker.group._consumer import (
    ASSIGNING,
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    RECONCILING,
    ConsumerGroup,
    ConsumerGroupError,
    ConsumerMember,
    HeartbeatResult,
)
from kwire.broker.group._consumer_groups import ConsumerGroups
from kwire.broker.group._records import GROUP_TOPIC, OffsetAndMetadata
from kwire.broker.group._runtime import (
    BrokerOffsetsLog,
    CoordinatorRuntime,
    MemoryOffsetsLog,
    OffsetsLog,
)
from kwire.broker.group._shard import GroupCoordinator, group_coordinator

__all__ = [
    "ASSIGNING",
    "ASSIGNORS",
    "COMPLETING_REBALANCE",
    "DEAD",
    "EMPTY",
    "GROUP_TOPIC",
    "LEAVE_GROUP_MEMBER_EPOCH",
    "LEAVE_GROUP_STATIC_MEMBER_EPOCH",
    "PREPARING_REBALANCE",
    "RECONCILING",
    "STABLE",
    "Assignment",
    "BrokerOffsetsLog",
    "ConsumerGroup",
    "ConsumerGroupError",
    "ConsumerGroups",
    "ConsumerMember",
    "CoordinatorRuntime",
    "Group",
    "GroupCoordinator",
    "GroupError",
    "HeartbeatResult",
    "JoinResult",
    "Member",
    "MemoryOffsetsLog",
    "OffsetAndMetadata",
    "OffsetsLog",
    "SyncResult",
    "Waiter",
    "group_coordinator",
    "range_assign",
    "uniform_assign",
]
