"""AlterShareGroupOffsets (API 91): set the start offset of a share group's share partitions.

Versions: v0 only (Kafka 4.1, KIP-932's ``kafka-share-groups.sh --reset-offsets``).

After ``KafkaApis.handleAlterShareGroupOffsetsRequest`` and ``GroupCoordinatorService``/
``GroupMetadataManager.alterShareGroupOffsets``: READ on the group (else a top-level
GROUP_AUTHORIZATION_FAILED) and READ on each topic (TOPIC_AUTHORIZATION_FAILED on its partitions);
an empty group id is INVALID_GROUP_ID; an id naming a classic or consumer group is
GROUP_ID_NOT_FOUND; a share group with members is NON_EMPTY_GROUP (offsets move only while nobody
consumes); an unknown group becomes an empty share group. Each partition of a known topic is
initialized by the share coordinator at its new start offset with nothing in flight
(``initializeState``, state epoch = the group epoch, never below the stored one); an unknown
topic or partition index is UNKNOWN_TOPIC_OR_PARTITION.
"""

from __future__ import annotations

from typing import Any, Final

from kwire.broker._acl import GROUP, TOPIC, authorize
from kwire.broker._apis import register
from kwire.broker._context import RequestContext
from kwire.broker._share_coordinator import Changes, apply, initialize_state
from kwire.broker._share_group import ShareGroup
from kwire.broker._share_group_heartbeat import other_kind
from kwire.broker._share_service import share_coordinator
from kwire.broker._state import BrokerState
from kwire.protocol import ZERO_UUID, ErrorCode
from kwire.protocol.messages import AlterShareGroupOffsetsRequest, AlterShareGroupOffsetsResponse

__all__ = ["handle_alter_share_group_offsets"]

RESPONSE: Final = AlterShareGroupOffsetsResponse
TOPIC_RESULT: Final = AlterShareGroupOffsetsResponse.AlterShareGroupOffsetsResponseTopic
PARTITION_RESULT: Final = AlterShareGroupOffsetsResponse.AlterShareGroupOffsetsResponsePartition


def _error(error: ErrorCode, message: str | None = None) -> Any:
    return RESPONSE(
        throttle_time_ms=0,
        error_code=int(error),
        error_message=message or error.message,
        responses=[],
    )


def _partition(index: int, error: ErrorCode = ErrorCode.NONE, message: str | None = None) -> Any:
    return PARTITION_RESULT(
        partition_index=index,
        error_code=int(error),
        error_message=None if error is ErrorCode.NONE else message or error.message,
    )


@register(91, 0, 0)
def handle_alter_share_group_offsets(
    state: BrokerState, ctx: RequestContext, request: AlterShareGroupOffsetsRequest
) -> Any:
    group_id = request.group_id
    if not authorize(state, ctx, "READ", GROUP, group_id):
        return _error(ErrorCode.GROUP_AUTHORIZATION_FAILED)
    if not group_id:
        return _error(ErrorCode.INVALID_GROUP_ID)
    if other_kind(state, group_id):
        return _error(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a share group.")
    coordinator = share_coordinator(state)
    group = coordinator.groups.get(group_id)
    if group is not None and group.members:
        return _error(ErrorCode.NON_EMPTY_GROUP)
    if group is None:
        group = coordinator.groups[group_id] = ShareGroup(group_id)
    results = []
    changes = Changes()
    for wanted in request.topics:
        name = wanted.topic_name
        topic = state.topics.get(name)
        if not authorize(state, ctx, "READ", TOPIC, name):
            error: ErrorCode | None = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        elif topic is None or topic.internal:
            error = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        else:
            error = None
        if error is not None or topic is None:
            failed = error or ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            results.append(
                TOPIC_RESULT(
                    topic_name=name,
                    topic_id=ZERO_UUID,
                    partitions=[_partition(p.partition_index, failed) for p in wanted.partitions],
                )
            )
            continue
        partitions = []
        for p in wanted.partitions:
            key = (group_id, topic.topic_id, p.partition_index)
            stored = coordinator.stored.get(key)
            # Kafka keeps the group epoch in __consumer_offsets; kwire's share groups live in
            # memory, so after a restart the stored state epoch may be ahead: never below it.
            epoch = max(group.group_epoch, 0 if stored is None else stored.state_epoch)
            problem = initialize_state(state, coordinator, changes, key, epoch, p.start_offset)
            if problem is None:
                partitions.append(_partition(p.partition_index))
            else:
                partitions.append(_partition(p.partition_index, problem.error, problem.message))
        results.append(
            TOPIC_RESULT(topic_name=name, topic_id=topic.topic_id, partitions=partitions)
        )
    apply(state, coordinator, changes)
    return RESPONSE(throttle_time_ms=0, error_code=0, error_message=None, responses=results)
