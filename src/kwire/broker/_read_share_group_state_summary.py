"""ReadShareGroupStateSummary (API 87): a share partition's start offset without its batches.

Versions: v0 (Kafka 4.1) gives the state epoch, leader epoch and start offset (what
DescribeShareGroupOffsets reports); v1 (4.2, KIP-1226) adds ``DeliveryCompleteCount``, the
offsets past the start already acknowledged or archived, from which the group coordinator
computes the lag (-1 when not known). A partition never written reads as start offset -1
(``ShareCoordinatorShard.readStateSummary``); the summary does not record the leader epoch.
"""

from __future__ import annotations

from typing import Any, Final

from kwire.broker._apis import register
from kwire.broker._context import RequestContext
from kwire.broker._share_coordinator import Changes, StateError, read_state_summary
from kwire.broker._share_service import share_coordinator
from kwire.broker._share_state_requests import answer_partitions
from kwire.broker._state import BrokerState
from kwire.protocol.messages import (
    ReadShareGroupStateSummaryRequest,
    ReadShareGroupStateSummaryResponse,
)

__all__ = ["handle_read_share_group_state_summary"]

RESPONSE: Final = ReadShareGroupStateSummaryResponse
TOPIC_RESULT: Final = ReadShareGroupStateSummaryResponse.ReadStateSummaryResult
PARTITION_RESULT: Final = ReadShareGroupStateSummaryResponse.PartitionResult


def _failed(partition: int, problem: StateError) -> Any:
    return PARTITION_RESULT(
        partition=partition,
        error_code=int(problem.error),
        error_message=problem.message,
        state_epoch=0,
        leader_epoch=0,
        start_offset=0,
        delivery_complete_count=-1,
    )


@register(87, 0, 1)
def handle_read_share_group_state_summary(
    state: BrokerState, ctx: RequestContext, request: ReadShareGroupStateSummaryRequest
) -> Any:
    coordinator = share_coordinator(state)

    def operation(changes: Changes, key: Any, p: Any) -> Any:
        found = read_state_summary(state, coordinator, key)
        if isinstance(found, StateError):
            return _failed(p.partition, found)
        stored, complete = found
        return PARTITION_RESULT(
            partition=p.partition,
            error_code=0,
            error_message=None,
            state_epoch=stored.state_epoch,
            leader_epoch=stored.leader_epoch,
            start_offset=stored.start_offset,
            delivery_complete_count=complete if stored.start_offset >= 0 else -1,
        )

    results = answer_partitions(
        state,
        ctx,
        request,
        operation,
        _failed,
        lambda tid, parts: TOPIC_RESULT(topic_id=tid, partitions=parts),
    )
    return RESPONSE(results=results)
