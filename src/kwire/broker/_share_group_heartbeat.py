"""ShareGroupHeartbeat (API 76): join, stay in and leave a share group (KIP-932).

Versions: v0 was Kafka 4.0's early-access form (never advertised by a release); v1 (4.1, share
groups GA) is the same schema with the member id made by the client. Kafka 4.1-4.3 serve v1 only.
``KafkaApis.handleShareGroupHeartbeat`` checks READ on the group, then the group coordinator's
``shareGroupHeartbeat`` decides (``_share_group``): in a cluster, NOT_COORDINATOR on a node not
coordinating the group (``_routing``, after the ACL). A group id that names a classic or
consumer group is GROUP_ID_NOT_FOUND, as ``GroupMetadataManager.shareGroup`` answers.
"""

from __future__ import annotations

from typing import Any, Final

from kwire.broker._acl import GROUP, authorize, topics_describable
from kwire.broker._apis import register
from kwire.broker._context import RequestContext
from kwire.broker._routing import GROUP_KEY, coordinated_elsewhere
from kwire.broker._share_group import ShareCoordinator
from kwire.broker._share_service import client_host, share_coordinator, topic_metadata
from kwire.broker._state import BrokerState
from kwire.broker.group import DEAD
from kwire.protocol import ErrorCode
from kwire.protocol.messages import ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse

__all__ = ["handle_share_group_heartbeat", "other_kind"]

RESPONSE: Final = ShareGroupHeartbeatResponse
ASSIGNMENT: Final = ShareGroupHeartbeatResponse.Assignment
TOPIC_PARTITIONS: Final = ShareGroupHeartbeatResponse.TopicPartitions


def _error(error: ErrorCode, message: str | None = None) -> Any:
    return RESPONSE(
        throttle_time_ms=0,
        error_code=int(error),
        error_message=message,
        member_id=None,
        member_epoch=0,
        heartbeat_interval_ms=0,
        assignment=None,
    )


def other_kind(state: BrokerState, group_id: str) -> bool:
    """Whether ``group_id`` is a classic, consumer or streams group (the kinds share one id
    space)."""
    coordinator = state.services.group
    if coordinator is None:
        return False
    if group_id in coordinator.streams.groups:
        return True
    found = coordinator.groups.get(group_id)
    return found is not None and found.state != DEAD


@register(76, 1, 1)
def handle_share_group_heartbeat(
    state: BrokerState, ctx: RequestContext, request: ShareGroupHeartbeatRequest
) -> Any:
    if not authorize(state, ctx, "READ", GROUP, request.group_id):
        return _error(ErrorCode.GROUP_AUTHORIZATION_FAILED)
    subscribed = (
        None if request.subscribed_topic_names is None else list(request.subscribed_topic_names)
    )
    # KafkaApis (KAFKA-18817): a member may not subscribe to a topic it may not DESCRIBE
    if subscribed and not topics_describable(state, ctx, subscribed):
        return _error(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    # GroupCoordinatorService.shareGroupHeartbeat: the request's checks, then the coordinator
    invalid = ShareCoordinator.request_error(
        request.group_id, request.member_id, request.member_epoch, subscribed
    )
    if invalid is not None:
        return _error(invalid.error, invalid.message)
    if coordinated_elsewhere(state, ctx, GROUP_KEY, request.group_id):
        return _error(ErrorCode.NOT_COORDINATOR)
    if other_kind(state, request.group_id):
        return _error(
            ErrorCode.GROUP_ID_NOT_FOUND, f"Group {request.group_id} is not a share group."
        )
    result = share_coordinator(state).heartbeat(
        request.group_id,
        request.member_id,
        request.member_epoch,
        request.rack_id,
        None if request.subscribed_topic_names is None else list(request.subscribed_topic_names),
        topic_metadata(state),
        ctx.client_id or "",
        client_host(ctx),
        state.now_ms(),
    )
    if result.error is not ErrorCode.NONE:
        return _error(result.error, result.message)
    assignment = None
    if result.assignment is not None:
        assignment = ASSIGNMENT(
            topic_partitions=[
                TOPIC_PARTITIONS(topic_id=tid, partitions=sorted(parts))
                for tid, parts in sorted(result.assignment.items())
                if parts
            ]
        )
    return RESPONSE(
        throttle_time_ms=0,
        error_code=0,
        error_message=None,
        member_id=result.member_id,
        member_epoch=result.member_epoch,
        heartbeat_interval_ms=result.heartbeat_interval_ms,
        assignment=assignment,
    )
