"""The one check a request for a data partition goes through before the handler reads or writes
it: authorised, topic known, partition known, leader epoch current, led by the serving node.

Approach: Kafka spreads this rule over three places, applied in this order, and every
partition API (Fetch, ListOffsets, OffsetForLeaderEpoch, DeleteRecords, ShareFetch,
WriteTxnMarkers, DescribeProducers, ...) answers with the first error found:

1. ``KafkaApis`` (``handleFetchRequest``, ``handleListOffsetRequest``, ...): a topic id no topic
   has is UNKNOWN_TOPIC_ID before anything else (there is no name to authorise); then
   ``authHelper.filterByAuthorized`` gives TOPIC_AUTHORIZATION_FAILED, before existence, so an
   unauthorised client cannot learn which topics exist; then ``metadataCache.contains`` gives
   UNKNOWN_TOPIC_OR_PARTITION for an unknown topic or partition;
2. ``ReplicaManager.getPartitionOrError``: the partition is hosted here;
3. ``Partition.getLocalLog`` (``localLogWithEpochOrThrow``): ``checkCurrentLeaderEpoch`` first
   (FENCED_LEADER_EPOCH for an older epoch than the leader's, UNKNOWN_LEADER_EPOCH for a newer
   one, -1 skipping it), then NOT_LEADER_OR_FOLLOWER when this node does not lead.

The partitions of an in-process cluster live in one shared state, so step 2 never fails and the
epoch is checked before leadership, as on a Kafka follower. Metadata names a partition's leader
as its one replica, so an API Kafka answers on any replica (DescribeProducers) answers only on
the leader here, NOT_LEADER_OR_FOLLOWER elsewhere, as Kafka does on a node not hosting it.
"""

from __future__ import annotations

from kwire.broker._acl import TOPIC, authorize
from kwire.broker._context import RequestContext
from kwire.broker._routing import leader_error
from kwire.broker._state import BrokerState, Partition, check_leader_epoch
from kwire.protocol import ErrorCode

__all__ = ["partition_or_error"]


def partition_or_error(
    state: BrokerState,
    ctx: RequestContext,
    topic: str | None,
    index: int,
    *,
    operation: str | None,
    by_id: bool = False,
    current_leader_epoch: int = -1,
    require_leader: bool = True,
) -> tuple[ErrorCode, Partition | None]:
    """(error, partition) of one partition of a request, in Kafka's order (see the module doc).

    ``topic`` is the topic's name, or ``None`` when the request named it by an id that no topic
    has (``by_id``: UNKNOWN_TOPIC_ID) or named none. ``operation`` is the ACL operation on the
    topic (``"READ"``, ``"DESCRIBE"``, ...), ``None`` when the API is authorised otherwise (on
    the cluster, as WriteTxnMarkers). ``require_leader=False`` skips the epoch and leader steps.

    The partition comes back whenever it exists, with or without an error, for the answers that
    carry where it is led now (KIP-951's ``current_leader``) or its offsets.
    """
    if topic is None:
        return (ErrorCode.UNKNOWN_TOPIC_ID if by_id else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION), None
    if operation is not None and not authorize(state, ctx, operation, TOPIC, topic):
        return ErrorCode.TOPIC_AUTHORIZATION_FAILED, None
    partition = state.partition(topic, index)
    if partition is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None
    if not require_leader:
        return ErrorCode.NONE, partition
    error = check_leader_epoch(partition, current_leader_epoch)
    if error is ErrorCode.NONE:
        error = leader_error(state, ctx, partition)
    return error, partition
