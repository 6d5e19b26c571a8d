"""InitializeShareGroupState (API 83): the share coordinator starts a share partition's state.

Versions: v0 only (Kafka 4.1). The group coordinator sends it when a share group first needs a
share partition (and for AlterShareGroupOffsets): a fresh snapshot at ``StartOffset`` with nothing
in flight, refused with FENCED_STATE_EPOCH when the stored state has a newer ``StateEpoch``
(``ShareCoordinatorShard.initializeState``); unknown topic or partition: UNKNOWN_TOPIC_OR_PARTITION.
"""

from __future__ import annotations

from typing import Any, Final

from kwire.broker._apis import register
from kwire.broker._context import RequestContext
from kwire.broker._share_coordinator import Changes, initialize_state
from kwire.broker._share_service import share_coordinator
from kwire.broker._share_state_requests import answer_partitions, error_result
from kwire.broker._state import BrokerState
from kwire.protocol.messages import (
    InitializeShareGroupStateRequest,
    InitializeShareGroupStateResponse,
)

__all__ = ["handle_initialize_share_group_state"]

RESPONSE: Final = InitializeShareGroupStateResponse
TOPIC_RESULT: Final = InitializeShareGroupStateResponse.InitializeStateResult
PARTITION_RESULT: Final = InitializeShareGroupStateResponse.PartitionResult


_result: Final = error_result(PARTITION_RESULT)


@register(83, 0, 0)
def handle_initialize_share_group_state(
    state: BrokerState, ctx: RequestContext, request: InitializeShareGroupStateRequest
) -> Any:
    coordinator = share_coordinator(state)

    def operation(changes: Changes, key: Any, p: Any) -> Any:
        problem = initialize_state(state, coordinator, changes, key, p.state_epoch, p.start_offset)
        return _result(p.partition, problem)

    results = answer_partitions(
        state,
        ctx,
        request,
        operation,
        _result,
        lambda tid, parts: TOPIC_RESULT(topic_id=tid, partitions=parts),
    )
    return RESPONSE(results=results)
