"""DescribeShareGroupOffsets (API 90): each share partition's start offset (and lag, v1).

Versions: v0 (Kafka 4.1) gives the share-partition start offset and leader epoch; v1 (4.2,
KIP-1226) adds ``Lag``: the high watermark minus the start offset minus the offsets past it whose
delivery is complete (acknowledged or archived). A partition with no share state yet answers start
offset -1 (and lag -1).

After ``GroupCoordinatorService.describeShareGroupOffsets``/``describeShareGroupAllOffsets``:
DESCRIBE on the group or GROUP_AUTHORIZATION_FAILED; a group kwire knows neither as a share group
nor by stored share state is GROUP_ID_NOT_FOUND; null topics means every share partition of the
group; an unknown topic's partitions carry UNKNOWN_TOPIC_OR_PARTITION.
"""

from __future__ import annotations

from typing import Any, Final

from kwire.broker._acl import GROUP, authorize
from kwire.broker._apis import register
from kwire.broker._context import RequestContext
from kwire.broker._share_partition import RecordState
from kwire.broker._share_service import share_coordinator
from kwire.broker._state import BrokerState
from kwire.protocol import ZERO_UUID, ErrorCode
from kwire.protocol.messages import (
    DescribeShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsResponse,
)

__all__ = ["handle_describe_share_group_offsets"]

RESPONSE: Final = DescribeShareGroupOffsetsResponse
GROUP_RESULT: Final = DescribeShareGroupOffsetsResponse.DescribeShareGroupOffsetsResponseGroup
TOPIC_RESULT: Final = DescribeShareGroupOffsetsResponse.DescribeShareGroupOffsetsResponseTopic
PARTITION_RESULT: Final = (
    DescribeShareGroupOffsetsResponse.DescribeShareGroupOffsetsResponsePartition
)


def _partition(state: BrokerState, version: int, group_id: str, topic: str, index: int) -> Any:
    found = state.topics.get(topic)
    if found is None or not 0 <= index < len(found.partitions):
        return PARTITION_RESULT(
            partition_index=index,
            start_offset=-1,
            leader_epoch=-1,
            lag=-1,
            error_code=int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
            error_message=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION.message,
        )
    partition = found.partitions[index]
    coordinator = share_coordinator(state)
    key = (group_id, found.topic_id, index)
    start, complete = -1, 0
    share = coordinator.partitions.get(key)
    if share is not None and share.initialized:
        start = share.start_offset
        complete = sum(
            r.state in (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED)
            for r in share.records.values()
        )
    elif key in coordinator.stored:
        stored = coordinator.stored[key]
        start = stored.start_offset
        complete = sum(
            last - first + 1
            for first, last, kind, _ in stored.batches
            if kind in (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED)
        )
    return PARTITION_RESULT(
        partition_index=index,
        start_offset=start,
        leader_epoch=partition.leader_epoch if start >= 0 else -1,
        lag=-1 if start < 0 or version < 1 else max(partition.high_watermark - start - complete, 0),
        error_code=0,
        error_message=None,
    )


def _known(state: BrokerState, group_id: str) -> list[tuple[str, int]]:
    """(topic, partition) of every share partition the group has state for."""
    coordinator = share_coordinator(state)
    keys = {k for k, p in coordinator.partitions.items() if p.initialized} | set(coordinator.stored)
    out = []
    for gid, topic_id, index in keys:
        topic = state.topics_by_id.get(topic_id)
        if gid == group_id and topic is not None:
            out.append((topic.name, index))
    return sorted(out)


@register(90, 0, 1)
def handle_describe_share_group_offsets(
    state: BrokerState, ctx: RequestContext, request: DescribeShareGroupOffsetsRequest
) -> Any:
    coordinator = share_coordinator(state)
    groups = []
    for wanted in request.groups:
        group_id = wanted.group_id
        error: ErrorCode | None = None
        if not authorize(state, ctx, "DESCRIBE", GROUP, group_id):
            error = ErrorCode.GROUP_AUTHORIZATION_FAILED
        elif group_id not in coordinator.groups and not _known(state, group_id):
            error = ErrorCode.GROUP_ID_NOT_FOUND
        if error is not None:
            groups.append(
                GROUP_RESULT(
                    group_id=group_id,
                    topics=[],
                    error_code=int(error),
                    error_message=error.message,
                )
            )
            continue
        if wanted.topics is None:
            by_topic: dict[str, list[int]] = {}
            for topic, index in _known(state, group_id):
                by_topic.setdefault(topic, []).append(index)
            asked = list(by_topic.items())
        else:
            asked = [(t.topic_name, list(t.partitions)) for t in wanted.topics]
        topics = []
        for name, indexes in asked:
            found = state.topics.get(name)
            topics.append(
                TOPIC_RESULT(
                    topic_name=name,
                    topic_id=found.topic_id if found is not None else ZERO_UUID,
                    partitions=[
                        _partition(state, ctx.api_version, group_id, name, i) for i in indexes
                    ],
                )
            )
        groups.append(
            GROUP_RESULT(group_id=group_id, topics=topics, error_code=0, error_message=None)
        )
    return RESPONSE(throttle_time_ms=0, groups=groups)
