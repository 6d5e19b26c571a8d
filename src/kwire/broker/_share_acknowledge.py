"""ShareAcknowledge (API 79): acknowledge records a share consumer acquired, without fetching.

Versions: v0 was 4.0's early access; v1 (4.1) is the GA form; v2 (4.2) adds ``IsRenewAck`` (the
RENEW type, which extends the acquisition lock) and the response's ``AcquisitionLockTimeoutMs``.

After ``KafkaApis.handleShareAcknowledgeRequest``: a request needs an existing share session
(epoch 0 cannot open one: INVALID_SHARE_SESSION_EPOCH), the acknowledgements apply per partition
(ACCEPT 1, RELEASE 2, REJECT 3, GAP 0; ``_share_partition``), and epoch -1 closes the session
afterwards, releasing whatever the member still holds. Each topic needs READ, like a fetch
(``KafkaApis.handleAcknowledgements``: TOPIC_AUTHORIZATION_FAILED per partition, before
UNKNOWN_TOPIC_OR_PARTITION; an unknown topic id is UNKNOWN_TOPIC_ID first).
"""

from __future__ import annotations

from typing import Any, Final

from kwire.broker._acl import GROUP, authorize
from kwire.broker._apis import register
from kwire.broker._context import RequestContext
from kwire.broker._routing import serving_node
from kwire.broker._share_group import FINAL_EPOCH, INITIAL_EPOCH
from kwire.broker._share_service import acknowledge, flush_share_state, share_coordinator
from kwire.broker._state import BrokerState
from kwire.protocol import ErrorCode
from kwire.protocol.messages import ShareAcknowledgeRequest, ShareAcknowledgeResponse

__all__ = ["handle_share_acknowledge"]

RESPONSE: Final = ShareAcknowledgeResponse
TOPIC_RESPONSE: Final = ShareAcknowledgeResponse.ShareAcknowledgeTopicResponse
PARTITION: Final = ShareAcknowledgeResponse.PartitionData
LEADER: Final = ShareAcknowledgeResponse.LeaderIdAndEpoch


def _error_response(error: ErrorCode, message: str | None = None) -> Any:
    return RESPONSE(
        throttle_time_ms=0,
        error_code=int(error),
        error_message=message,
        acquisition_lock_timeout_ms=0,
        responses=[],
        node_endpoints=[],
    )


@register(79, 1, 2)
def handle_share_acknowledge(
    state: BrokerState, ctx: RequestContext, request: ShareAcknowledgeRequest
) -> Any:
    group_id = request.group_id
    if not group_id or not request.member_id:
        return _error_response(ErrorCode.INVALID_REQUEST, "GroupId and MemberId are required.")
    if not authorize(state, ctx, "READ", GROUP, group_id):
        return _error_response(ErrorCode.GROUP_AUTHORIZATION_FAILED)
    coordinator = share_coordinator(state)
    epoch = request.share_session_epoch
    if epoch == INITIAL_EPOCH:
        return _error_response(ErrorCode.INVALID_SHARE_SESSION_EPOCH)
    node = serving_node(state, ctx)
    error, session = coordinator.session(group_id, request.member_id, epoch, node)
    if session is None:
        return _error_response(error)
    renew = ctx.api_version >= 2 and request.is_renew_ack
    responses = []
    for topic in request.topics:
        parts = []
        for p in topic.partitions:
            result = acknowledge(
                state,
                ctx,
                coordinator,
                group_id,
                request.member_id,
                topic.topic_id,
                p.partition_index,
                p.acknowledgement_batches,
                renew,
            )
            found = state.topics_by_id.get(topic.topic_id)
            partition = (
                found.partitions[p.partition_index]
                if found is not None and 0 <= p.partition_index < len(found.partitions)
                else None
            )
            parts.append(
                PARTITION(
                    partition_index=p.partition_index,
                    error_code=int(result),
                    error_message=None if result is ErrorCode.NONE else result.message,
                    current_leader=LEADER(
                        leader_id=partition.leader_id if partition else -1,
                        leader_epoch=partition.leader_epoch if partition else -1,
                    ),
                )
            )
        responses.append(TOPIC_RESPONSE(topic_id=topic.topic_id, partitions=parts))
    if epoch == FINAL_EPOCH:
        coordinator.close_session(group_id, request.member_id, node)
    flush_share_state(state)
    return RESPONSE(
        throttle_time_ms=0,
        error_code=0,
        error_message=None,
        acquisition_lock_timeout_ms=(
            coordinator.lock_duration(group_id) if ctx.api_version >= 2 else 0
        ),
        responses=responses,
        node_endpoints=[],
    )
