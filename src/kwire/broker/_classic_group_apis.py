"""The classic group protocol: JoinGroup (API 11), SyncGroup (14), Heartbeat (12), LeaveGroup
(13) and DescribeGroups (15).

Versions: JoinGroup v1 a rebalance timeout, v4 MEMBER_ID_REQUIRED (KIP-394), v5 static members
(KIP-345), v6 flexible, v7 the protocol type and name answered (KIP-559), v8 a reason (KIP-800),
v9 ``skip_assignment``; SyncGroup v3 group instance ids, v4 flexible, v5 protocol type and name
checked (KIP-559); Heartbeat v3 group instance ids, v4 flexible; LeaveGroup v3 many members
leave at once (KIP-345), v4 flexible, v5 a reason; DescribeGroups v3 authorized operations, v4
group instance ids, v5 flexible, v6 a per-group error message.

Follows ``KafkaApis.handle*`` of Kafka 3.9 and the ``ClassicGroup`` rules of the group
coordinator. JoinGroup and SyncGroup answer at once when they can, else park a ``Deferred`` keyed
by ``("group", group_id)`` that the coordinator wakes when the group moves. In a cluster, a group
coordinated by another node gets NOT_COORDINATOR after the ACL check, where Kafka's handlers call
the coordinator (``_routing``); DescribeGroups answers so group by group.
"""

from __future__ import annotations

from typing import Any, Final

from kwire.broker._acl import (
    GROUP,
    authorize,
    authorized_operations,
)
from kwire.broker._apis import Deferred, register
from kwire.broker._context import RequestContext
from kwire.broker._group_apis import (
    GROUP_OPERATIONS,
    NO_OPERATIONS,
    _client_host,
    described_order,
)
from kwire.broker._routing import GROUP_KEY, coordinated_elsewhere, not_coordinator
from kwire.broker._share_service import share_group_exists
from kwire.broker._state import BrokerState
from kwire.broker.group import (
    DEAD,
    STABLE,
    ConsumerGroup,
    JoinResult,
    SyncResult,
    Waiter,
    group_coordinator,
)
from kwire.protocol import ErrorCode
from kwire.protocol.messages import (
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)

__all__ = [
    "handle_describe_groups",
    "handle_heartbeat",
    "handle_join_group",
    "handle_leave_group",
    "handle_sync_group",
]


WAIT_MARGIN_MS: Final = 5000


JOIN_GROUP_RESPONSE: Final = JoinGroupResponse
JOIN_MEMBER: Final = JoinGroupResponse.JoinGroupResponseMember
SYNC_GROUP_RESPONSE: Final = SyncGroupResponse
HEARTBEAT_RESPONSE: Final = HeartbeatResponse
LEAVE_GROUP_RESPONSE: Final = LeaveGroupResponse
LEAVE_MEMBER: Final = LeaveGroupResponse.MemberResponse
DESCRIBE_GROUPS_RESPONSE: Final = DescribeGroupsResponse
DESCRIBED_GROUP: Final = DescribeGroupsResponse.DescribedGroup
DESCRIBED_MEMBER: Final = DescribeGroupsResponse.DescribedGroupMember


def _park(state: BrokerState, group_id: str, waiter: Waiter, wait_ms: int, answer: Any) -> Any:
    """The response now if the waiter is done, else a ``Deferred`` on the group's key."""
    if waiter.done:
        return answer(waiter.result)
    coordinator = group_coordinator(state)

    def complete(final: bool) -> Any:
        if not waiter.done and final:
            coordinator.tick(state.now_ms())
        if waiter.done:
            return answer(waiter.result)
        if final:
            return answer(None)
        return None

    return Deferred(state.now_ms() + wait_ms, {("group", group_id)}, complete)


def _not_coordinator(state: BrokerState, ctx: RequestContext, request: Any) -> Any:
    """NOT_COORDINATOR for a group coordinated elsewhere, unless ``GroupCoordinatorService``
    rejects the group id first (INVALID_GROUP_ID, from the coordinator, on every node)."""
    if group_coordinator(state).classic.request_error(request.group_id) is not ErrorCode.NONE:
        return None
    return not_coordinator(state, ctx, request, GROUP_KEY, request.group_id)


@register(11, 0, 9)
def handle_join_group(state: BrokerState, ctx: RequestContext, request: JoinGroupRequest) -> Any:
    version = ctx.api_version
    coordinator = group_coordinator(state)
    rebalance_timeout = request.rebalance_timeout_ms if version >= 1 else request.session_timeout_ms
    if not authorize(state, ctx, "READ", GROUP, request.group_id):
        return JOIN_GROUP_RESPONSE(
            throttle_time_ms=0,
            error_code=int(ErrorCode.GROUP_AUTHORIZATION_FAILED),
            generation_id=-1,
            protocol_name=None if version >= 7 else "",
            leader="",
            member_id=request.member_id,
            members=[],
        )
    # GroupCoordinatorService.joinGroup: the request's checks, then the group's coordinator
    invalid = coordinator.classic.request_error(request.group_id, request.session_timeout_ms)
    if invalid is ErrorCode.NONE and (
        elsewhere := not_coordinator(state, ctx, request, GROUP_KEY, request.group_id)
    ):
        return elsewhere
    protocols = [(p.name, bytes(p.metadata)) for p in request.protocols]
    instance_id = request.group_instance_id if version >= 5 else None
    waiter = coordinator.join(
        request.group_id,
        request.member_id,
        instance_id,
        request.protocol_type,
        protocols,
        request.session_timeout_ms,
        rebalance_timeout,
        ctx.client_id or "",
        _client_host(ctx),
        version >= 4,
        state.now_ms(),
        supports_skip_assignment=version >= 9,
    )

    def answer(result: JoinResult | None) -> Any:
        if result is None:
            result = JoinResult(ErrorCode.REBALANCE_IN_PROGRESS, member_id=request.member_id)
        ok = result.error is ErrorCode.NONE
        return JOIN_GROUP_RESPONSE(
            throttle_time_ms=0,
            error_code=int(result.error),
            generation_id=result.generation_id if ok else -1,
            protocol_type=result.protocol_type if ok else None,
            protocol_name=result.protocol_name if ok else (None if version >= 7 else ""),
            leader=result.leader if ok else "",
            skip_assignment=ok and result.skip_assignment,
            member_id=result.member_id,
            members=[
                JOIN_MEMBER(member_id=m, group_instance_id=i, metadata=meta)
                for m, i, meta in result.members
            ],
        )

    wait = rebalance_timeout + coordinator.conf("group.initial.rebalance.delay.ms")
    return _park(state, request.group_id, waiter, wait + WAIT_MARGIN_MS, answer)


@register(14, 0, 5)
def handle_sync_group(state: BrokerState, ctx: RequestContext, request: SyncGroupRequest) -> Any:
    version = ctx.api_version
    coordinator = group_coordinator(state)
    if version >= 5 and (request.protocol_type is None or request.protocol_name is None):
        # KafkaApis.handleSyncGroupRequest: mandatory from v5, checked before the ACL
        error = int(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        return SYNC_GROUP_RESPONSE(throttle_time_ms=0, error_code=error, assignment=b"")
    if not authorize(state, ctx, "READ", GROUP, request.group_id):
        error = int(ErrorCode.GROUP_AUTHORIZATION_FAILED)
        return SYNC_GROUP_RESPONSE(throttle_time_ms=0, error_code=error, assignment=b"")
    if (elsewhere := _not_coordinator(state, ctx, request)) is not None:
        return elsewhere
    waiter = coordinator.sync(
        request.group_id,
        request.generation_id,
        request.member_id,
        request.group_instance_id if version >= 3 else None,
        request.protocol_type if version >= 5 else None,
        request.protocol_name if version >= 5 else None,
        [(a.member_id, bytes(a.assignment)) for a in request.assignments],
        state.now_ms(),
    )

    def answer(result: SyncResult | None) -> Any:
        if result is None:
            result = SyncResult(ErrorCode.REBALANCE_IN_PROGRESS)
        return SYNC_GROUP_RESPONSE(
            throttle_time_ms=0,
            error_code=int(result.error),
            protocol_type=result.protocol_type,
            protocol_name=result.protocol_name,
            assignment=result.assignment,
        )

    group = coordinator.classic_group(request.group_id)
    wait = max((m.rebalance_timeout_ms for m in group.members.values()), default=0) if group else 0
    return _park(state, request.group_id, waiter, wait + WAIT_MARGIN_MS, answer)


@register(12, 0, 4)
def handle_heartbeat(state: BrokerState, ctx: RequestContext, request: HeartbeatRequest) -> Any:
    if not authorize(state, ctx, "READ", GROUP, request.group_id):
        error = int(ErrorCode.GROUP_AUTHORIZATION_FAILED)
        return HEARTBEAT_RESPONSE(throttle_time_ms=0, error_code=error)
    if (elsewhere := _not_coordinator(state, ctx, request)) is not None:
        return elsewhere
    error = group_coordinator(state).heartbeat(
        request.group_id,
        request.generation_id,
        request.member_id,
        request.group_instance_id if ctx.api_version >= 3 else None,
        state.now_ms(),
    )
    return HEARTBEAT_RESPONSE(throttle_time_ms=0, error_code=int(error))


@register(13, 0, 5)
def handle_leave_group(state: BrokerState, ctx: RequestContext, request: LeaveGroupRequest) -> Any:
    version = ctx.api_version
    if version >= 3:
        leaving = [(m.member_id, m.group_instance_id) for m in request.members]
    else:
        leaving = [(request.member_id, None)]
    if not authorize(state, ctx, "READ", GROUP, request.group_id):
        error = int(ErrorCode.GROUP_AUTHORIZATION_FAILED)
        return LEAVE_GROUP_RESPONSE(throttle_time_ms=0, error_code=error, members=[])
    if (elsewhere := _not_coordinator(state, ctx, request)) is not None:
        return elsewhere
    error, results = group_coordinator(state).leave(request.group_id, leaving, state.now_ms())
    if version < 3 and error is ErrorCode.NONE and results:
        error = results[0][2]
    return LEAVE_GROUP_RESPONSE(
        throttle_time_ms=0,
        error_code=int(error),
        members=[
            LEAVE_MEMBER(member_id=m, group_instance_id=i, error_code=int(e)) for m, i, e in results
        ]
        if version >= 3
        else [],
    )


def _group_error(group_id: str, error: ErrorCode, message: str | None = None) -> Any:
    """A group DescribeGroups could not describe (``DescribeGroupsResponse.groupError``)."""
    return DESCRIBED_GROUP(
        error_code=int(error),
        error_message=message,
        group_id=group_id,
        group_state="",
        protocol_type="",
        protocol_data="",
        members=[],
        authorized_operations=NO_OPERATIONS,
    )


@register(15, 0, 6)
def handle_describe_groups(
    state: BrokerState, ctx: RequestContext, request: DescribeGroupsRequest
) -> Any:
    version = ctx.api_version
    coordinator = group_coordinator(state)
    ops = GROUP_OPERATIONS if version >= 3 and request.include_authorized_operations else None
    for group_id in request.groups:  # members whose session ended are gone (their timer fired)
        coordinator.expire_due(group_id, state.now_ms())
    # KafkaApis.handleDescribeGroupsRequest: the ACL first, then the group's coordinator; the
    # groups the principal may not describe are listed first (added while KafkaApis scans the
    # request, before the coordinator's results)
    denied = []
    out = []
    for group_id in described_order(state, ctx, list(request.groups), classic=True):
        group = coordinator.groups.get(group_id)
        if not authorize(state, ctx, "DESCRIBE", GROUP, group_id):
            denied.append(_group_error(group_id, ErrorCode.GROUP_AUTHORIZATION_FAILED))
            continue
        if coordinated_elsewhere(state, ctx, GROUP_KEY, group_id):
            out.append(_group_error(group_id, ErrorCode.NOT_COORDINATOR))
            continue
        if ops is not None:  # KIP-430
            ops = authorized_operations(state, ctx, GROUP, group_id)
        streams = group_id in coordinator.streams.groups
        if group is None or group.state == DEAD or isinstance(group, ConsumerGroup) or streams:
            # GroupMetadataManager.describeGroups: a consumer, streams or share group is "not
            # a classic group"
            if version >= 6:
                not_classic = (
                    isinstance(group, ConsumerGroup)
                    or streams
                    or share_group_exists(state, group_id)
                )
                message = (
                    f"Group {group_id} is not a classic group."
                    if not_classic
                    else f"Group {group_id} not found."
                )
                out.append(_group_error(group_id, ErrorCode.GROUP_ID_NOT_FOUND, message))
                continue
            out.append(
                DESCRIBED_GROUP(
                    error_code=0,
                    group_id=group_id,
                    group_state=DEAD,
                    protocol_type="",
                    protocol_data="",
                    members=[],
                    authorized_operations=ops if ops is not None else NO_OPERATIONS,
                )
            )
            continue
        stable = group.state == STABLE
        members = [
            DESCRIBED_MEMBER(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                client_id=m.client_id,
                client_host=m.client_host,
                member_metadata=m.metadata(group.protocol_name) if stable else b"",
                member_assignment=m.assignment if stable else b"",
            )
            for m in group.members.values()
        ]
        out.append(
            DESCRIBED_GROUP(
                error_code=0,
                group_id=group_id,
                group_state=group.state,
                protocol_type=group.protocol_type or "",
                protocol_data=(group.protocol_name or "") if stable else "",
                members=members,
                authorized_operations=ops if ops is not None else NO_OPERATIONS,
            )
        )
    return DESCRIBE_GROUPS_RESPONSE(throttle_time_ms=0, groups=denied + out)
