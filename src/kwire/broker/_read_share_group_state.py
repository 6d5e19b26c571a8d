"""ReadShareGroupState (API 84): a share-partition leader reads the state it starts from.

Versions: v0 only (Kafka 4.1). The answer is the stored state epoch, start offset and state
batches; a partition never written reads as start offset -1 and state epoch 0. ``LeaderEpoch``
older than the one recorded is FENCED_LEADER_EPOCH; a newer one is recorded, fencing older leaders
(``ShareCoordinatorShard.readStateAndMaybeUpdateLeaderEpoch``).
"""

from __future__ import annotations

from typing import Any, Final

from kwire.broker._apis import register
from kwire.broker._context import RequestContext
from kwire.broker._share_coordinator import Changes, StateError, read_state
from kwire.broker._share_service import share_coordinator
from kwire.broker._share_state_requests import answer_partitions
from kwire.broker._state import BrokerState
from kwire.protocol.messages import ReadShareGroupStateRequest, ReadShareGroupStateResponse

__all__ = ["handle_read_share_group_state"]

RESPONSE: Final = ReadShareGroupStateResponse
TOPIC_RESULT: Final = ReadShareGroupStateResponse.ReadStateResult
PARTITION_RESULT: Final = ReadShareGroupStateResponse.PartitionResult
STATE_BATCH: Final = ReadShareGroupStateResponse.StateBatch


def _failed(partition: int, problem: StateError) -> Any:
    return PARTITION_RESULT(
        partition=partition,
        error_code=int(problem.error),
        error_message=problem.message,
        state_epoch=0,
        start_offset=0,
        state_batches=[],
    )


@register(84, 0, 0)
def handle_read_share_group_state(
    state: BrokerState, ctx: RequestContext, request: ReadShareGroupStateRequest
) -> Any:
    coordinator = share_coordinator(state)

    def operation(changes: Changes, key: Any, p: Any) -> Any:
        found = read_state(state, coordinator, changes, key, p.leader_epoch)
        if isinstance(found, StateError):
            return _failed(p.partition, found)
        return PARTITION_RESULT(
            partition=p.partition,
            error_code=0,
            error_message=None,
            state_epoch=found.state_epoch,
            start_offset=found.start_offset,
            state_batches=[
                STATE_BATCH(
                    first_offset=first,
                    last_offset=last,
                    delivery_state=kind,
                    delivery_count=count,
                )
                for first, last, kind, count in found.batches
            ],
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
