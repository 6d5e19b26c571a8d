"""Group APIs shared by every kind of group: FindCoordinator, ListGroups and DeleteGroups, the
helpers the other group handlers share, and the start-up load of ``__consumer_offsets``.

The rest live by family: ``_classic_group_apis`` (JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
DescribeGroups), ``_consumer_group_apis`` (KIP-848's ConsumerGroupHeartbeat and
ConsumerGroupDescribe) and ``_offset_apis`` (OffsetCommit, TxnOffsetCommit, OffsetFetch,
OffsetDelete). Each follows ``KafkaApis.handle*`` of Kafka 3.9 for the wire (versions, batching,
which errors are per partition and which per request) and hands the decision to the group
coordinator (``group.group_coordinator``).

Versions: FindCoordinator v1 adds the key type (transactions), v3 flexible, v4 many keys at once
(KIP-699), v5 TRANSACTION_ABORTABLE (KIP-890), v6 share groups (KIP-932); ListGroups v3 flexible,
v4 a states filter (KIP-518), v5 a types filter (KIP-848); DeleteGroups v1 the same as v0, v2
flexible.
"""

from __future__ import annotations

from typing import Any, Final

from kwire.broker._acl import (
    CLUSTER,
    GROUP,
    TRANSACTIONAL_ID,
    authorize,
)
from kwire.broker._apis import on_startup, register
from kwire.broker._context import RequestContext
from kwire.broker._routing import (
    GROUP_KEY,
    TRANSACTION_KEY,
    coordinated_elsewhere,
    coordinator_node,
    endpoint,
    serving_node,
)
from kwire.broker._share_service import delete_share_group, list_share_groups, share_group_exists
from kwire.broker._state import BrokerState
from kwire.broker.group import (
    GROUP_TOPIC,
    ConsumerGroup,
    group_coordinator,
)
from kwire.protocol import ErrorCode
from kwire.protocol.messages import (
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    ListGroupsRequest,
    ListGroupsResponse,
)

__all__ = [
    "GROUP_OPERATIONS",
    "NO_OPERATIONS",
    "described_order",
    "handle_delete_groups",
    "handle_find_coordinator",
    "handle_list_groups",
]


NO_OPERATIONS: Final = -(2**31)


# AclOperation READ 3, DELETE 6, DESCRIBE 8: what a group supports (AuthHelper)
GROUP_OPERATIONS: Final = (1 << 3) | (1 << 6) | (1 << 8)


FIND_COORDINATOR_RESPONSE: Final = FindCoordinatorResponse
COORDINATOR: Final = FindCoordinatorResponse.Coordinator
LIST_GROUPS_RESPONSE: Final = ListGroupsResponse
LISTED_GROUP: Final = ListGroupsResponse.ListedGroup
DELETE_GROUPS_RESPONSE: Final = DeleteGroupsResponse
DELETED_GROUP: Final = DeleteGroupsResponse.DeletableGroupResult


def described_order(
    state: BrokerState, ctx: RequestContext, group_ids: list[str], *, classic: bool = False
) -> list[str]:
    """The order a batched describe answers ``group_ids`` in: the groups the principal may not
    DESCRIBE first, in the request's order (KafkaApis adds them while scanning the request),
    then the others as the group coordinator batches them (``GroupCoordinator.batched``)."""
    refused = {g for g in group_ids if not authorize(state, ctx, "DESCRIBE", GROUP, g)}
    denied = [g for g in group_ids if g in refused]
    allowed = [g for g in group_ids if g not in refused]
    return denied + group_coordinator(state).batched(allowed, classic=classic)


def _client_host(ctx: RequestContext) -> str:
    """Kafka's ``"/" + clientAddress.getHostAddress``."""
    host = ctx.client_address.rsplit(":", 1)[0] if ctx.client_address else "127.0.0.1"
    return "/" + host


@on_startup
def _load_groups(state: BrokerState) -> None:
    """Load the groups and offsets of an existing ``__consumer_offsets`` when the broker starts."""
    if GROUP_TOPIC in state.topics:
        group_coordinator(state)


@register(10, 0, 6)
def handle_find_coordinator(
    state: BrokerState, ctx: RequestContext, request: FindCoordinatorRequest
) -> Any:
    """``KafkaApis.handleFindCoordinatorRequest``: this node coordinates every group and every
    transactional id; the internal topic of a group is created on the first lookup."""
    version = ctx.api_version
    key_type = request.key_type if version >= 1 else GROUP_KEY
    keys = list(request.coordinator_keys) if version >= 4 else [request.key]

    def one(key: str) -> tuple[ErrorCode, str | None]:
        error, message = check(key)
        if error is ErrorCode.NONE:
            # The node leading the key's internal partition (in an in-process cluster, _routing)
            found = endpoint(state, ctx, coordinator_node(state, key_type, key))
            if found is None:
                return ErrorCode.COORDINATOR_NOT_AVAILABLE, None
            where[key] = found
        return error, message

    where: dict[str, tuple[str, int]] = {}

    def check(key: str) -> tuple[ErrorCode, str | None]:
        if key_type == GROUP_KEY and not authorize(state, ctx, "DESCRIBE", GROUP, key):
            return ErrorCode.GROUP_AUTHORIZATION_FAILED, None
        if key_type == TRANSACTION_KEY and not authorize(
            state, ctx, "DESCRIBE", TRANSACTIONAL_ID, key
        ):
            return ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, None
        if key_type == GROUP_KEY:
            group_coordinator(state).offsets_partition(key)
            return ErrorCode.NONE, None
        if key_type == TRANSACTION_KEY:
            if not key:
                return ErrorCode.INVALID_REQUEST, "Transactional id cannot be empty"
            return ErrorCode.NONE, None
        return ErrorCode.INVALID_REQUEST, f"Unknown coordinator type {key_type}"

    if version >= 4:
        coordinators = []
        for key in keys:
            error, message = one(key)
            ok = error is ErrorCode.NONE
            coordinators.append(
                COORDINATOR(
                    key=key,
                    node_id=coordinator_node(state, key_type, key) if ok else -1,
                    host=where[key][0] if ok else "",
                    port=where[key][1] if ok else -1,
                    error_code=int(error),
                    error_message=message,
                )
            )
        return FIND_COORDINATOR_RESPONSE(throttle_time_ms=0, coordinators=coordinators)
    error, message = one(keys[0])
    ok = error is ErrorCode.NONE
    return FIND_COORDINATOR_RESPONSE(
        throttle_time_ms=0,
        error_code=int(error),
        error_message=message if not ok else ("NONE" if version >= 1 else None),
        node_id=coordinator_node(state, key_type, keys[0]) if ok else -1,
        host=where[keys[0]][0] if ok else "",
        port=where[keys[0]][1] if ok else -1,
    )


@register(16, 0, 5)
def handle_list_groups(state: BrokerState, ctx: RequestContext, request: ListGroupsRequest) -> Any:
    version = ctx.api_version
    states = {s.lower() for s in request.states_filter} if version >= 4 else set()
    types = {t.lower() for t in request.types_filter} if version >= 5 else set()
    out = []
    everything = authorize(state, ctx, "DESCRIBE", CLUSTER, "kafka-cluster")
    node = serving_node(state, ctx)
    coordinator = group_coordinator(state)
    for group in coordinator.list_groups(state.now_ms()):
        if not everything and not authorize(state, ctx, "DESCRIBE", GROUP, group.group_id):
            continue
        if coordinator_node(state, GROUP_KEY, group.group_id) != node:
            continue  # listed by the node coordinating it (an in-process cluster's other node)
        # ModernGroup.asListedGroup: a consumer group lists as type "consumer"
        if isinstance(group, ConsumerGroup):
            group_type = protocol_type = "consumer"
        else:
            group_type, protocol_type = "classic", group.protocol_type or ""
        group_state = group.state
        if states and group_state.lower() not in states:
            continue
        if types and group_type not in types:
            continue
        out.append(
            LISTED_GROUP(
                group_id=group.group_id,
                protocol_type=protocol_type,
                group_state=group_state,
                group_type=group_type,
            )
        )
    # StreamsGroup.asListedGroup: type and protocol type "streams"
    for group_id, group_state in coordinator.list_streams_groups(state.now_ms()):
        if not everything and not authorize(state, ctx, "DESCRIBE", GROUP, group_id):
            continue
        if coordinator_node(state, GROUP_KEY, group_id) != node:
            continue
        if (states and group_state.lower() not in states) or (types and "streams" not in types):
            continue
        out.append(
            LISTED_GROUP(
                group_id=group_id,
                protocol_type="streams",
                group_state=group_state,
                group_type="streams",
            )
        )
    for group_id, group_state in list_share_groups(state):  # type "share", protocol "share"
        if not everything and not authorize(state, ctx, "DESCRIBE", GROUP, group_id):
            continue
        if coordinator_node(state, GROUP_KEY, group_id) != node:
            continue
        if (states and group_state.lower() not in states) or (types and "share" not in types):
            continue
        out.append(
            LISTED_GROUP(
                group_id=group_id,
                protocol_type="share",
                group_state=group_state,
                group_type="share",
            )
        )
    return LIST_GROUPS_RESPONSE(throttle_time_ms=0, error_code=0, groups=out)


@register(42, 0, 2)
def handle_delete_groups(
    state: BrokerState, ctx: RequestContext, request: DeleteGroupsRequest
) -> Any:
    coordinator = group_coordinator(state)
    now = state.now_ms()

    def delete(group_id: str) -> ErrorCode:
        if coordinated_elsewhere(state, ctx, GROUP_KEY, group_id):
            return ErrorCode.NOT_COORDINATOR
        if share_group_exists(state, group_id):
            return delete_share_group(state, group_id)
        return coordinator.delete_group(group_id, now)

    # KafkaApis.handleDeleteGroupsRequest: each group once; the ACL, then the group's
    # coordinator, whose results come first, the groups the principal may not delete after them
    groups = list(dict.fromkeys(request.groups_names))
    allowed = {g for g in groups if authorize(state, ctx, "DELETE", GROUP, g)}
    batched = coordinator.batched([g for g in groups if g in allowed], classic=True)
    results = [DELETED_GROUP(group_id=g, error_code=int(delete(g))) for g in batched]
    results += [
        DELETED_GROUP(group_id=g, error_code=int(ErrorCode.GROUP_AUTHORIZATION_FAILED))
        for g in groups
        if g not in allowed
    ]
    return DELETE_GROUPS_RESPONSE(throttle_time_ms=0, results=results)
