"""DeleteShareGroupState (API 86): the share coordinator forgets share partitions' state.

Versions: v0 only (Kafka 4.1). The group coordinator sends it when a share group, or its offsets
of a topic, are deleted: a tombstone for each stored state (``ShareCoordinatorShard.deleteState``;
a partition never written deletes as done); unknown topic or partition:
UNKNOWN_TOPIC_OR_PARTITION.
"""

from __future__ import annotations

from typing import Any, Final

from kwire.broker._apis import register
from kwire.broker._context import RequestContext
from kwire.broker._share_coordinator import Changes, delete_state
from kwire.broker._share_service import share_coordinator
from kwire.broker._share_state_requests import answer_partitions, error_result
from kwire.broker._state import BrokerState
from kwire.protocol.messages import DeleteShareGroupStateRequest, DeleteShareGroupStateResponse

__all__ = ["handle_delete_share_group_state"]

RESPONSE: Final = DeleteShareGroupStateResponse
TOPIC_RESULT: Final = DeleteShareGroupStateResponse.DeleteStateResult
PARTITION_RESULT: Final = DeleteShareGroupStateResponse.PartitionResult


_result: Final = error_result(PARTITION_RESULT)


@register(86, 0, 0)
def handle_delete_share_group_state(
    state: BrokerState, ctx: RequestContext, request: DeleteShareGroupStateRequest
) -> Any:
    coordinator = share_coordinator(state)

    def operation(changes: Changes, key: Any, p: Any) -> Any:
        return _result(p.partition, delete_state(state, coordinator, changes, key))

    results = answer_partitions(
        state,
        ctx,
        request,
        operation,
        _result,
        lambda tid, parts: TOPIC_RESULT(topic_id=tid, partitions=parts),
    )
    return RESPONSE(results=results)
