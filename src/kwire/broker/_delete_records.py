"""DeleteRecords (API 21): log start offsets moved up; the low watermark is the new log start.

Versions: v1 (Kafka 2.0) the same as v0 (the throttle applied after the answer); v2 flexible.

Follows ``ReplicaManager.deleteRecords``: ``-1`` (``DeleteRecordsRequest.HIGH_WATERMARK``) deletes
up to the high watermark; an offset past it is OFFSET_OUT_OF_RANGE.
"""

from __future__ import annotations

import logging
from typing import Any, Final

from kwire.broker._apis import register
from kwire.broker._config import (
    resolve_topic_configs,
)
from kwire.broker._context import RequestContext
from kwire.broker._partition_check import partition_or_error
from kwire.broker._state import BrokerState
from kwire.log import OffsetOutOfRangeError
from kwire.protocol import ErrorCode
from kwire.protocol.messages import (
    DeleteRecordsRequest,
    DeleteRecordsResponse,
)

log = logging.getLogger("kwire.broker")

__all__ = ["handle_delete_records"]


DELETE_RECORDS_RESPONSE: Final = DeleteRecordsResponse


DELETE_RECORDS_TOPIC: Final = DeleteRecordsResponse.DeleteRecordsTopicResult


DELETE_RECORDS_PARTITION: Final = DeleteRecordsResponse.DeleteRecordsPartitionResult


HIGH_WATERMARK: Final = -1  # DeleteRecordsRequest.HIGH_WATERMARK


def _delete_records(
    state: BrokerState, ctx: RequestContext, topic: str, index: int, offset: int
) -> tuple[int, ErrorCode]:
    """(low watermark, error) for one partition (``ReplicaManager.deleteRecordsOnLocalLog``)."""
    error, partition = partition_or_error(state, ctx, topic, index, operation="DELETE")
    if partition is None or error is not ErrorCode.NONE:
        return -1, error
    if partition.topic.internal:
        return -1, ErrorCode.INVALID_TOPIC_EXCEPTION
    policy = resolve_topic_configs(partition.topic.configs, state.static_config)["cleanup.policy"]
    if "delete" not in [p.strip() for p in (policy.value or "").split(",")]:
        return -1, ErrorCode.POLICY_VIOLATION
    live = partition.log
    target = live.high_watermark if offset == HIGH_WATERMARK else offset
    if target < 0 or target > live.high_watermark:
        return -1, ErrorCode.OFFSET_OUT_OF_RANGE
    try:
        low = live.delete_records_before(target)
    except OffsetOutOfRangeError:
        return -1, ErrorCode.OFFSET_OUT_OF_RANGE
    return low, ErrorCode.NONE


@register(21, 0, 2)
def handle_delete_records(
    state: BrokerState, ctx: RequestContext, request: DeleteRecordsRequest
) -> Any:
    """DeleteRecords: move log start offsets up; the low watermark is the new log start."""
    topics = []
    deleted = False
    for wanted in request.topics:
        parts = []
        for req in wanted.partitions:
            low, error = _delete_records(state, ctx, wanted.name, req.partition_index, req.offset)
            deleted = deleted or error is ErrorCode.NONE
            parts.append(
                DELETE_RECORDS_PARTITION(
                    partition_index=req.partition_index, low_watermark=low, error_code=int(error)
                )
            )
        topics.append(DELETE_RECORDS_TOPIC(name=wanted.name, partitions=parts))
    if deleted:
        state.write_checkpoints()  # log-start-offset-checkpoint
    return DELETE_RECORDS_RESPONSE(throttle_time_ms=0, topics=topics)
