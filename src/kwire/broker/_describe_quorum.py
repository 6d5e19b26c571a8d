"""DescribeQuorum (API 55, KIP-595/KIP-642): the KRaft quorum of ``__cluster_metadata``.

Versions: v0 (Kafka 2.7) answers the leader, its epoch, the high watermark and each voter's and
observer's log end offset; v1 (3.3, KIP-836) adds each replica's last fetch and last caught-up
timestamps; v2 (3.9, KIP-853) adds replica directory ids, the voters' endpoints (``Nodes``) and
error messages.

Follows ``KafkaRaftClient.handleDescribeQuorumRequest`` and ``LeaderState.describeQuorum``: only
``__cluster_metadata``-0 is described (anything else: UNKNOWN_TOPIC_OR_PARTITION for the
partition); the leader describes itself as fetched and caught up now. The quorum is the one the
data directory holds (``_metadata_log``): this node is its only voter (static, so no directory
id: ``kraft.version`` 0) and its leader, the epoch one more at every start. The other nodes of
an in-process cluster read the same log and are its observers, at the leader's log end. kwire
has no separate controller listener: a voter's endpoints are the node's own listeners.
"""

from __future__ import annotations

from typing import Any, Final

from kwire.broker._acl import CLUSTER, CLUSTER_NAME, authorize
from kwire.broker._apis import register
from kwire.broker._context import RequestContext
from kwire.broker._metadata_log import METADATA_TOPIC
from kwire.broker._state import BrokerState
from kwire.protocol import ZERO_UUID, ErrorCode
from kwire.protocol.messages import DescribeQuorumRequest, DescribeQuorumResponse

__all__ = ["handle_describe_quorum"]

RESPONSE: Final = DescribeQuorumResponse
TOPIC: Final = DescribeQuorumResponse.TopicData
PARTITION: Final = DescribeQuorumResponse.PartitionData
REPLICA: Final = DescribeQuorumResponse.ReplicaState
NODE: Final = DescribeQuorumResponse.Node
LISTENER: Final = DescribeQuorumResponse.Listener


def _is_metadata_partition(request: DescribeQuorumRequest) -> bool:
    """``KafkaRaftClient.hasValidTopicPartition``: exactly ``__cluster_metadata``-0."""
    topics = request.topics
    return (
        len(topics) == 1
        and topics[0].topic_name == METADATA_TOPIC
        and len(topics[0].partitions) == 1
        and topics[0].partitions[0].partition_index == 0
    )


def _partition_error(request: DescribeQuorumRequest, error: ErrorCode) -> Any:
    """``DescribeQuorumRequest.getPartitionLevelErrorResponse``."""
    return RESPONSE(
        error_code=0,
        error_message=None,
        topics=[
            TOPIC(
                topic_name=t.topic_name,
                partitions=[
                    PARTITION(
                        partition_index=p.partition_index,
                        error_code=int(error),
                        error_message=error.message,
                        leader_id=-1,
                        leader_epoch=-1,
                        high_watermark=-1,
                        current_voters=[],
                        observers=[],
                    )
                    for p in t.partitions
                ],
            )
            for t in request.topics
        ],
        nodes=[],
    )


def _replica(node: int, log_end_offset: int, now: int) -> Any:
    return REPLICA(
        replica_id=node,
        replica_directory_id=ZERO_UUID,
        log_end_offset=log_end_offset,
        last_fetch_timestamp=now,
        last_caught_up_timestamp=now,
    )


@register(55, 0, 2)
def handle_describe_quorum(
    state: BrokerState, ctx: RequestContext, request: DescribeQuorumRequest
) -> Any:
    if not authorize(state, ctx, "DESCRIBE", CLUSTER, CLUSTER_NAME):
        error = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        return RESPONSE(error_code=int(error), error_message=error.message, topics=[], nodes=[])
    if not _is_metadata_partition(request):
        return _partition_error(request, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    metadata = state.metadata_log
    leader = metadata.node.node_id
    end = metadata.log.log_end_offset
    now = state.now_ms()
    observers = [_replica(n, end, now) for n in sorted(state.live_brokers) if n != leader]
    partition = PARTITION(
        partition_index=0,
        error_code=0,
        error_message=None,
        leader_id=leader,
        leader_epoch=metadata.epoch,
        high_watermark=metadata.log.high_watermark,
        current_voters=[_replica(leader, end, now)],
        observers=observers,
    )
    endpoints = state.live_brokers.get(leader) or {}
    nodes = [
        NODE(
            node_id=leader,
            listeners=[
                LISTENER(name=name, host=host, port=port)
                for name, (host, port) in endpoints.items()
            ],
        )
    ]
    if ctx.api_version < 2:
        nodes = []  # KIP-853's field, v2+
    return RESPONSE(
        error_code=0,
        error_message=None,
        topics=[TOPIC(topic_name=METADATA_TOPIC, partitions=[partition])],
        nodes=nodes,
    )
