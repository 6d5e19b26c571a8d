"""DescribeTopicPartitions (API 75, KIP-966): topics and their partitions, a page at a time.

Versions: v0 (Kafka 3.8) is the only one: topics by name (none: every topic the principal may
describe), ``ResponsePartitionLimit`` partitions at most (capped by the broker's
``max.request.partition.size.limit``, 2000), a ``Cursor`` (topic, partition) to start from and the
``NextCursor`` to continue from; each partition with its leader, epoch, replicas, ISR and the
eligible leader replicas of KIP-966 (none here: every partition has one replica, its leader).

Follows ``DescribeTopicPartitionsRequestHandler`` (the request's checks and authorization) and
``KRaftMetadataCache.describeTopicResponse`` (the paging).
"""

from __future__ import annotations

from typing import Any, Final

from kwire.broker._acl import TOPIC, authorize, authorized_operations
from kwire.broker._apis import register
from kwire.broker._context import RequestContext
from kwire.broker._state import BrokerError, BrokerState, Topic, validate_topic_name
from kwire.protocol import ZERO_UUID, ErrorCode
from kwire.protocol.messages import DescribeTopicPartitionsRequest, DescribeTopicPartitionsResponse

__all__ = ["handle_describe_topic_partitions"]

RESPONSE: Final = DescribeTopicPartitionsResponse
RESPONSE_TOPIC: Final = DescribeTopicPartitionsResponse.DescribeTopicPartitionsResponseTopic
RESPONSE_PARTITION: Final = DescribeTopicPartitionsResponse.DescribeTopicPartitionsResponsePartition
CURSOR: Final = DescribeTopicPartitionsResponse.Cursor

#: ``max.request.partition.size.limit`` (ServerConfigs) default
PARTITION_SIZE_LIMIT: Final = 2000


def _topic(name: str, error: ErrorCode, topic: Topic | None, partitions: list[Any]) -> Any:
    return RESPONSE_TOPIC(
        error_code=int(error),
        name=name,
        topic_id=topic.topic_id if topic is not None else ZERO_UUID,
        is_internal=topic.internal if topic is not None else False,
        partitions=partitions,
    )


def _partitions(topic: Topic, start: int, limit: int) -> list[Any]:
    return [
        RESPONSE_PARTITION(
            error_code=0,
            partition_index=p.index,
            leader_id=p.leader_id,
            leader_epoch=p.leader_epoch,
            replica_nodes=[p.leader_id],
            isr_nodes=[p.leader_id],
            eligible_leader_replicas=[],
            last_known_elr=[],
            offline_replicas=[],
        )
        for p in topic.partitions[start : start + limit]
    ]


def _invalid(request: DescribeTopicPartitionsRequest) -> Any:
    """The whole request refused: Kafka's ``InvalidRequestException`` (its message is only
    logged; ``DescribeTopicPartitionsRequest.getErrorResponse`` has no field for it)."""
    return RESPONSE(
        throttle_time_ms=0,
        topics=[_topic(t.name, ErrorCode.INVALID_REQUEST, None, []) for t in request.topics],
        next_cursor=None,
    )


@register(75, 0, 0)
def handle_describe_topic_partitions(
    state: BrokerState, ctx: RequestContext, request: DescribeTopicPartitionsRequest
) -> Any:
    cursor = request.cursor
    after = cursor.topic_name if cursor is not None else ""
    every = not request.topics
    if every:
        names = {name for name in state.topics if name >= after}
    else:
        names = {t.name for t in request.topics if t.name >= after}
        if cursor is not None and cursor.topic_name not in names:
            return _invalid(request)  # the topic list should contain the cursor topic
    if cursor is not None and cursor.partition_index < 0:
        return _invalid(request)  # the cursor partition must be valid
    limit = state.static_config.get("max.request.partition.size.limit")
    remaining = max(
        min(int(limit) if limit else PARTITION_SIZE_LIMIT, request.response_partition_limit), 1
    )
    topics: list[Any] = []
    refused: list[Any] = []
    next_cursor = None
    for name in sorted(names):
        if not authorize(state, ctx, "DESCRIBE", TOPIC, name):
            if not every:  # an unauthorized topic is not disclosed, existing or not
                refused.append(_topic(name, ErrorCode.TOPIC_AUTHORIZATION_FAILED, None, []))
            continue
        if remaining <= 0:
            if next_cursor is None:  # the page ends before this topic
                next_cursor = CURSOR(topic_name=name, partition_index=0)
            continue
        topic = state.topics.get(name)
        if topic is None:
            try:
                validate_topic_name(name)
                error = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            except BrokerError:
                error = ErrorCode.INVALID_TOPIC_EXCEPTION
            topics.append(_topic(name, error, None, []))
            continue
        start = cursor.partition_index if cursor is not None and name == after else 0
        parts = _partitions(topic, start, remaining)
        topics.append(_topic(name, ErrorCode.NONE, topic, parts))
        end = start + len(parts)
        if end < len(topic.partitions):
            next_cursor = CURSOR(topic_name=name, partition_index=end)
            remaining = 0
        else:
            remaining -= len(parts)
    for out in topics:
        out.topic_authorized_operations = authorized_operations(state, ctx, TOPIC, out.name)
    return RESPONSE(throttle_time_ms=0, topics=topics + refused, next_cursor=next_cursor)
