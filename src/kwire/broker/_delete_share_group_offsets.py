"""DeleteShareGroupOffsets (API 92): forget a share group's state of whole topics.

Versions: v0 only (Kafka 4.1, KIP-932's ``kafka-share-groups.sh --delete-offsets``).

After ``KafkaApis.handleDeleteShareGroupOffsetsRequest`` and ``GroupCoordinatorShard.
initiateDeleteShareGroupOffsets``/``GroupMetadataManager.sharePartitionsEligibleForOffset
Deletion``: DELETE on the group (else a top-level GROUP_AUTHORIZATION_FAILED), READ on each topic
(TOPIC_AUTHORIZATION_FAILED); an empty group id is INVALID_GROUP_ID; a group that is not a share
group kwire knows is GROUP_ID_NOT_FOUND; one with members is NON_EMPTY_GROUP. An unknown topic is
UNKNOWN_TOPIC_OR_PARTITION; a topic the group has no state for is UNKNOWN_TOPIC_OR_PARTITION
"There is no offset information to delete."; otherwise the share coordinator deletes the state of
each of its partitions (``deleteState``: tombstones), and the group's next fetch starts again from
``share.auto.offset.reset``.
"""

from __future__ import annotations

from typing import Any, Final

from kwire.broker._acl import GROUP, TOPIC, authorize
from kwire.broker._apis import register
from kwire.broker._context import RequestContext
from kwire.broker._share_coordinator import Changes, apply, delete_state
from kwire.broker._share_service import share_coordinator
from kwire.broker._state import BrokerState
from kwire.protocol import ZERO_UUID, ErrorCode
from kwire.protocol.messages import DeleteShareGroupOffsetsRequest, DeleteShareGroupOffsetsResponse

__all__ = ["handle_delete_share_group_offsets"]

RESPONSE: Final = DeleteShareGroupOffsetsResponse
TOPIC_RESULT: Final = DeleteShareGroupOffsetsResponse.DeleteShareGroupOffsetsResponseTopic
NOTHING_TO_DELETE: Final = "There is no offset information to delete."


def _error(error: ErrorCode, message: str | None = None) -> Any:
    return RESPONSE(
        throttle_time_ms=0,
        error_code=int(error),
        error_message=message or error.message,
        responses=[],
    )


@register(92, 0, 0)
def handle_delete_share_group_offsets(
    state: BrokerState, ctx: RequestContext, request: DeleteShareGroupOffsetsRequest
) -> Any:
    group_id = request.group_id
    if not authorize(state, ctx, "DELETE", GROUP, group_id):
        return _error(ErrorCode.GROUP_AUTHORIZATION_FAILED)
    if not group_id:
        return _error(ErrorCode.INVALID_GROUP_ID)
    coordinator = share_coordinator(state)
    group = coordinator.groups.get(group_id)
    has_state = {(tid, i) for gid, tid, i in coordinator.stored if gid == group_id}
    has_state |= {
        (tid, i)
        for (gid, tid, i), p in coordinator.partitions.items()
        if gid == group_id and p.initialized
    }
    if group is None and not has_state:
        return _error(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.")
    if group is not None and group.members:
        return _error(ErrorCode.NON_EMPTY_GROUP)
    results = []
    for wanted in request.topics:
        name = wanted.topic_name
        topic = state.topics.get(name)
        error: ErrorCode | None = None
        message: str | None = None
        if not authorize(state, ctx, "READ", TOPIC, name):
            error = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        elif topic is None:
            error = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        else:
            indexes = sorted(i for tid, i in has_state if tid == topic.topic_id)
            if not indexes:
                error, message = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, NOTHING_TO_DELETE
            else:
                changes = Changes()
                for i in indexes:
                    problem = delete_state(
                        state, coordinator, changes, (group_id, topic.topic_id, i)
                    )
                    if problem is not None and error is None:
                        error, message = problem.error, problem.message
                apply(state, coordinator, changes)
        results.append(
            TOPIC_RESULT(
                topic_name=name,
                topic_id=ZERO_UUID if topic is None else topic.topic_id,
                error_code=0 if error is None else int(error),
                error_message=None if error is None else message or error.message,
            )
        )
    return RESPONSE(throttle_time_ms=0, error_code=0, error_message=None, responses=results)
