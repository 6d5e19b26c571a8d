"""WriteShareGroupState (API 85): a share-partition leader records what changed.

Versions: v0 (Kafka 4.1); v1 (4.2, KIP-1226) adds ``DeliveryCompleteCount`` to the request (the
coordinator counts the complete offsets of the state it keeps itself, so kwire reads it but does
not need it). The state batches (and the start offset unless -1) are merged over the stored state
(``ShareCoordinatorShard.writeState``); a state epoch or leader epoch older than the stored one is
FENCED_STATE_EPOCH / FENCED_LEADER_EPOCH; unknown topic or partition: UNKNOWN_TOPIC_OR_PARTITION.
"""

from __future__ import annotations

from typing import Any, Final

from kwire.broker._apis import register
from kwire.broker._context import RequestContext
from kwire.broker._share_coordinator import Changes, write_state
from kwire.broker._share_service import share_coordinator
from kwire.broker._share_state_requests import answer_partitions, error_result
from kwire.broker._state import BrokerState
from kwire.protocol.messages import WriteShareGroupStateRequest, WriteShareGroupStateResponse

__all__ = ["handle_write_share_group_state"]

RESPONSE: Final = WriteShareGroupStateResponse
TOPIC_RESULT: Final = WriteShareGroupStateResponse.WriteStateResult
PARTITION_RESULT: Final = WriteShareGroupStateResponse.PartitionResult


_result: Final = error_result(PARTITION_RESULT)


@register(85, 0, 1)
def handle_write_share_group_state(
    state: BrokerState, ctx: RequestContext, request: WriteShareGroupStateRequest
) -> Any:
    coordinator = share_coordinator(state)

    def operation(changes: Changes, key: Any, p: Any) -> Any:
        problem = write_state(
            state,
            coordinator,
            changes,
            key,
            state_epoch=p.state_epoch,
            leader_epoch=p.leader_epoch,
            start_offset=p.start_offset,
            batches=[
                (b.first_offset, b.last_offset, b.delivery_state, b.delivery_count)
                for b in p.state_batches
            ],
        )
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
