"""ShareGroupDescribe (API 77): the members, epochs and assignments of share groups (KIP-932).

Versions: v0 was 4.0's early access; v1 (4.1) is the GA form, the only one 4.1-4.3 serve.
After ``KafkaApis.handleShareGroupDescribe`` and ``ShareGroup.asDescribedGroup``: DESCRIBE on the
group or GROUP_AUTHORIZATION_FAILED, then in a cluster NOT_COORDINATOR for a group another node
coordinates (``_routing``); a group that does not exist, or is not a share group, is
GROUP_ID_NOT_FOUND; the assignor is ``simple``; topic names are resolved from the topic ids. A
group whose members' assignments name a topic the principal may not DESCRIBE is
TOPIC_AUTHORIZATION_FAILED with Kafka's message and nothing else (KAFKA-18817, in 4.1's v1).
"""

from __future__ import annotations

from typing import Any, Final

from kwire.broker._acl import (
    GROUP,
    HIDDEN_GROUP_TOPICS,
    authorize,
    authorized_operations,
    topics_describable,
)
from kwire.broker._apis import register
from kwire.broker._context import RequestContext
from kwire.broker._group_apis import described_order
from kwire.broker._routing import GROUP_KEY, coordinated_elsewhere
from kwire.broker._share_group import Assignment
from kwire.broker._share_service import share_coordinator
from kwire.broker._state import BrokerState
from kwire.protocol import ErrorCode
from kwire.protocol.messages import ShareGroupDescribeRequest, ShareGroupDescribeResponse

__all__ = ["handle_share_group_describe"]

RESPONSE: Final = ShareGroupDescribeResponse
DESCRIBED: Final = ShareGroupDescribeResponse.DescribedGroup
MEMBER: Final = ShareGroupDescribeResponse.Member
ASSIGNMENT: Final = ShareGroupDescribeResponse.Assignment
TOPIC_PARTITIONS: Final = ShareGroupDescribeResponse.TopicPartitions
NO_OPERATIONS: Final = -(2**31)
ASSIGNOR: Final = "simple"


def _assignment(state: BrokerState, assignment: Assignment) -> Any:
    parts = []
    for topic_id, partitions in sorted(assignment.items()):
        topic = state.topics_by_id.get(topic_id)
        if topic is not None and partitions:
            parts.append(
                TOPIC_PARTITIONS(
                    topic_id=topic_id, topic_name=topic.name, partitions=sorted(partitions)
                )
            )
    return ASSIGNMENT(topic_partitions=parts)


def _missing(group_id: str, error: ErrorCode, message: str | None) -> Any:
    return DESCRIBED(
        error_code=int(error),
        error_message=message,
        group_id=group_id,
        group_state="",
        group_epoch=0,
        assignment_epoch=0,
        assignor_name="",
        members=[],
    )


@register(77, 1, 1)
def handle_share_group_describe(
    state: BrokerState, ctx: RequestContext, request: ShareGroupDescribeRequest
) -> Any:
    coordinator = share_coordinator(state)
    denied = []  # KafkaApis.handleShareGroupDescribe lists them before the coordinator's results
    groups = []
    for group_id in described_order(state, ctx, list(request.group_ids)):
        if not authorize(state, ctx, "DESCRIBE", GROUP, group_id):
            denied.append(_missing(group_id, ErrorCode.GROUP_AUTHORIZATION_FAILED, None))
            continue
        if coordinated_elsewhere(state, ctx, GROUP_KEY, group_id):
            groups.append(_missing(group_id, ErrorCode.NOT_COORDINATOR, None))
            continue
        group = coordinator.groups.get(group_id)
        if group is None:
            groups.append(
                _missing(group_id, ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.")
            )
            continue
        members = [
            MEMBER(
                member_id=m.member_id,
                rack_id=m.rack_id,
                member_epoch=m.member_epoch,
                client_id=m.client_id,
                client_host=m.client_host,
                subscribed_topic_names=sorted(m.subscribed),
                assignment=_assignment(state, m.assignment),
            )
            for m in group.members.values()
        ]
        assigned = (p.topic_name for m in members for p in m.assignment.topic_partitions)
        if not topics_describable(state, ctx, assigned):
            # KafkaApis (KAFKA-18817): the group in its place, but nothing of it
            groups.append(
                _missing(group_id, ErrorCode.TOPIC_AUTHORIZATION_FAILED, HIDDEN_GROUP_TOPICS)
            )
            continue
        groups.append(
            DESCRIBED(
                error_code=0,
                error_message=None,
                group_id=group_id,
                group_state=group.state,
                group_epoch=group.group_epoch,
                assignment_epoch=group.assignment_epoch,
                assignor_name=ASSIGNOR,
                members=members,
                authorized_operations=(
                    authorized_operations(state, ctx, GROUP, group_id)
                    if request.include_authorized_operations
                    else NO_OPERATIONS
                ),
            )
        )
    return RESPONSE(throttle_time_ms=0, groups=denied + groups)
