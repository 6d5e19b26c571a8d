"""KIP-848's consumer group protocol: ConsumerGroupHeartbeat (API 68) and ConsumerGroupDescribe
(API 69).

Versions: ConsumerGroupHeartbeat v0 (Kafka 3.7 preview, 4.0 GA) joins, heartbeats and leaves in
one request, the coordinator assigning; v1 a subscribed topic regex. ConsumerGroupDescribe v0 the
group, its members and their current and target assignments; v1 each member's type (consumer or
classic protocol).

Follows ``KafkaApis.handleConsumerGroupHeartbeat`` / ``handleConsumerGroupDescribe``; the group's
state machine is ``group.ConsumerGroup``. In a cluster, a group coordinated by another node gets
NOT_COORDINATOR after the ACL check (``_routing``), group by group for ConsumerGroupDescribe.
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
from kwire.broker._group_apis import (
    GROUP_OPERATIONS,
    NO_OPERATIONS,
    _client_host,
    described_order,
)
from kwire.broker._routing import GROUP_KEY, coordinated_elsewhere, not_coordinator
from kwire.broker._state import BrokerState
from kwire.broker.group import (
    DEAD,
    Assignment,
    group_coordinator,
)
from kwire.protocol import ErrorCode
from kwire.protocol.messages import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)

__all__ = ["handle_consumer_group_describe", "handle_consumer_group_heartbeat"]


CG_HEARTBEAT_RESPONSE: Final = ConsumerGroupHeartbeatResponse
CG_ASSIGNMENT: Final = ConsumerGroupHeartbeatResponse.Assignment
CG_TOPIC_PARTITIONS: Final = ConsumerGroupHeartbeatResponse.TopicPartitions
CG_DESCRIBE_RESPONSE: Final = ConsumerGroupDescribeResponse
CG_DESCRIBED_GROUP: Final = ConsumerGroupDescribeResponse.DescribedGroup
CG_DESCRIBED_MEMBER: Final = ConsumerGroupDescribeResponse.Member
CG_DESCRIBED_ASSIGNMENT: Final = ConsumerGroupDescribeResponse.Assignment
CG_DESCRIBED_PARTITIONS: Final = ConsumerGroupDescribeResponse.TopicPartitions


CONSUMER_MEMBER_TYPE: Final = 1  # ConsumerGroupDescribe v1 MemberType: 1 = consumer protocol


def _heartbeat_assignment(assignment: Assignment) -> list[Any]:
    return [
        CG_TOPIC_PARTITIONS(topic_id=topic_id, partitions=sorted(partitions))
        for topic_id, partitions in sorted(assignment.items())
        if partitions
    ]


def _topics_checked(state: BrokerState) -> bool:
    """Kafka 4.0 made KIP-848 GA with DESCRIBE checks on the topics a heartbeat names and a
    described group holds (KAFKA-18813, also in 4.0.0); 3.7-3.9's early access checked only the
    group."""
    return int(state.personality.release.split(".")[0]) >= 4


def _checked_first(state: BrokerState) -> bool:
    """Kafka 4.1 moved ConsumerGroupHeartbeat's request checks from the group's shard to
    ``GroupCoordinatorService``, before the coordinator is found (NOT_COORDINATOR)."""
    major, minor = (int(p) for p in state.personality.release.split(".")[:2])
    return (major, minor) >= (4, 1)


@register(68, 0, 1)
def handle_consumer_group_heartbeat(
    state: BrokerState, ctx: RequestContext, request: ConsumerGroupHeartbeatRequest
) -> Any:
    """``KafkaApis.handleConsumerGroupHeartbeatRequest`` -> ``consumerGroupHeartbeat``."""
    version = ctx.api_version
    coordinator = group_coordinator(state)
    if not authorize(state, ctx, "READ", GROUP, request.group_id):
        return CG_HEARTBEAT_RESPONSE(
            throttle_time_ms=0,
            error_code=int(ErrorCode.GROUP_AUTHORIZATION_FAILED),
            member_epoch=0,
            heartbeat_interval_ms=0,
        )
    # KafkaApis 4.0+ (KAFKA-18813): a client may not subscribe to a topic it may not DESCRIBE
    if (
        _topics_checked(state)
        and request.subscribed_topic_names
        and not topics_describable(state, ctx, request.subscribed_topic_names)
    ):
        return CG_HEARTBEAT_RESPONSE(
            throttle_time_ms=0,
            error_code=int(ErrorCode.TOPIC_AUTHORIZATION_FAILED),
            member_epoch=0,
            heartbeat_interval_ms=0,
        )
    owned = (
        None
        if request.topic_partitions is None
        else [(t.topic_id, list(t.partitions)) for t in request.topic_partitions]
    )
    fields = (
        version,
        request.group_id,
        request.member_id,
        request.member_epoch,
        request.instance_id,
        request.rack_id,
        request.rebalance_timeout_ms,
        None if request.subscribed_topic_names is None else list(request.subscribed_topic_names),
        request.subscribed_topic_regex if version >= 1 else None,
        request.server_assignor,
        owned,
    )
    # GroupCoordinatorService.consumerGroupHeartbeat (4.1+): the request's checks, then the
    # coordinator; Kafka 4.0 checked the request in the coordinator (apache/kafka#19556)
    result = coordinator.consumer.request_error(*fields) if _checked_first(state) else None
    if result is None:
        elsewhere = not_coordinator(state, ctx, request, GROUP_KEY, request.group_id)
        if elsewhere is not None:
            return elsewhere
        result = coordinator.consumer.heartbeat(
            *fields, ctx.client_id or "", _client_host(ctx), state.now_ms()
        )
    if result.error is not ErrorCode.NONE:
        return CG_HEARTBEAT_RESPONSE(
            throttle_time_ms=0,
            error_code=int(result.error),
            error_message=result.message,
            member_id=None,
            member_epoch=0,
            heartbeat_interval_ms=0,
            assignment=None,
        )
    return CG_HEARTBEAT_RESPONSE(
        throttle_time_ms=0,
        error_code=0,
        error_message=None,
        member_id=result.member_id,
        member_epoch=result.member_epoch,
        heartbeat_interval_ms=result.heartbeat_interval_ms,
        assignment=(
            None
            if result.assignment is None
            else CG_ASSIGNMENT(topic_partitions=_heartbeat_assignment(result.assignment))
        ),
    )


def _undescribed(group_id: str, error: ErrorCode, message: str | None = None) -> Any:
    """A group ConsumerGroupDescribe answers with an error only."""
    return CG_DESCRIBED_GROUP(
        error_code=int(error),
        error_message=message,
        group_id=group_id,
        group_state="",
        group_epoch=0,
        assignment_epoch=0,
        assignor_name="",
        members=[],
        authorized_operations=NO_OPERATIONS,
    )


@register(69, 0, 1)
def handle_consumer_group_describe(
    state: BrokerState, ctx: RequestContext, request: ConsumerGroupDescribeRequest
) -> Any:
    """``GroupMetadataManager.consumerGroupDescribe`` / ``ConsumerGroup.asDescribedGroup``."""
    coordinator = group_coordinator(state)
    consumer = coordinator.consumer
    ops = GROUP_OPERATIONS if request.include_authorized_operations else NO_OPERATIONS

    def assignment(parts: Assignment) -> Any:
        return CG_DESCRIBED_ASSIGNMENT(
            topic_partitions=[
                CG_DESCRIBED_PARTITIONS(topic_id=t, topic_name=name, partitions=ps)
                for t, name, ps in consumer.describe_assignment(parts)
            ]
        )

    for group_id in request.group_ids:  # members whose session ended are gone
        coordinator.expire_due(group_id, state.now_ms())
    # KafkaApis.handleConsumerGroupDescribe: a group the principal may not describe is
    # GROUP_AUTHORIZATION_FAILED whether it exists or not, listed before the described ones.
    denied = []
    out = []
    for group_id in described_order(state, ctx, list(request.group_ids)):
        if not authorize(state, ctx, "DESCRIBE", GROUP, group_id):
            denied.append(_undescribed(group_id, ErrorCode.GROUP_AUTHORIZATION_FAILED))
            continue
        if coordinated_elsewhere(state, ctx, GROUP_KEY, group_id):
            out.append(_undescribed(group_id, ErrorCode.NOT_COORDINATOR))
            continue
        group = consumer.group(group_id)
        if request.include_authorized_operations:  # KIP-430
            ops = authorized_operations(state, ctx, GROUP, group_id)
        if group is None:
            holder = coordinator.groups.get(group_id)
            out.append(
                _undescribed(
                    group_id,
                    ErrorCode.GROUP_ID_NOT_FOUND,
                    f"Group {group_id} is not a consumer group."
                    if holder is not None and holder.state != DEAD
                    else f"Group {group_id} not found.",
                )
            )
            continue
        members = [
            CG_DESCRIBED_MEMBER(
                member_id=m.member_id,
                instance_id=m.instance_id,
                rack_id=m.rack_id,
                member_epoch=m.member_epoch,
                client_id=m.client_id,
                client_host=m.client_host,
                subscribed_topic_names=list(m.subscribed_topic_names),
                subscribed_topic_regex=m.subscribed_topic_regex,
                assignment=assignment(m.assigned),
                target_assignment=assignment(group.target.get(m.member_id, {})),
                member_type=CONSUMER_MEMBER_TYPE if ctx.api_version >= 1 else -1,
            )
            for m in group.members.values()
        ]
        topics = {
            p.topic_name
            for m in members
            for a in (m.assignment, m.target_assignment)
            for p in a.topic_partitions
        }
        if _topics_checked(state) and not topics_describable(state, ctx, topics):
            # KafkaApis 4.0+ (KAFKA-18813): the group in its place, but nothing of it
            out.append(
                _undescribed(group_id, ErrorCode.TOPIC_AUTHORIZATION_FAILED, HIDDEN_GROUP_TOPICS)
            )
            continue
        out.append(
            CG_DESCRIBED_GROUP(
                error_code=0,
                error_message=None,
                group_id=group_id,
                group_state=group.state,
                group_epoch=group.group_epoch,
                assignment_epoch=group.assignment_epoch,
                assignor_name=group.preferred_assignor(consumer.assignors[0]),
                members=members,
                authorized_operations=ops,
            )
        )
    return CG_DESCRIBE_RESPONSE(throttle_time_ms=0, groups=denied + out)
