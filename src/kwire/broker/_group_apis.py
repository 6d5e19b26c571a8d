"""Handlers of the group APIs: FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
DescribeGroups, ListGroups, DeleteGroups, OffsetCommit, OffsetFetch, OffsetDelete, TxnOffsetCommit,
and KIP-848's ConsumerGroupHeartbeat and ConsumerGroupDescribe (``_consumer_group``).

Each follows ``KafkaApis.handle*`` of Kafka 3.9 for the wire (versions, batching, which errors are
per partition and which per request) and hands the decision to the group coordinator
(``_group.GroupCoordinator``). JoinGroup and SyncGroup answer at once when they can, else park a
``Deferred`` keyed by ``("group", group_id)`` that the coordinator wakes when the group moves.
"""

from __future__ import annotations

from typing import Any, Final

from kwire.broker._acl import (
    CLUSTER,
    GROUP,
    TOPIC,
    TRANSACTIONAL_ID,
    authorize,
    authorized_operations,
)
from kwire.broker._apis import Deferred, on_startup, register
from kwire.broker._context import RequestContext
from kwire.broker._routing import coordinator_node, endpoint, serving_node
from kwire.broker._share_service import delete_share_group, list_share_groups, share_group_exists
from kwire.broker._state import BrokerState
from kwire.broker._txn_apis import add_group_partition_for_commit, uses_transaction_v2
from kwire.broker.group import (
    DEAD,
    GROUP_TOPIC,
    STABLE,
    Assignment,
    ConsumerGroup,
    GroupCoordinator,
    GroupError,
    JoinResult,
    OffsetAndMetadata,
    SyncResult,
    Waiter,
    group_coordinator,
)
from kwire.protocol import ZERO_UUID, ErrorCode, message_class, struct_class

__all__ = [
    "handle_consumer_group_describe",
    "handle_consumer_group_heartbeat",
    "handle_delete_groups",
    "handle_describe_groups",
    "handle_find_coordinator",
    "handle_heartbeat",
    "handle_join_group",
    "handle_leave_group",
    "handle_list_groups",
    "handle_offset_commit",
    "handle_offset_delete",
    "handle_offset_fetch",
    "handle_sync_group",
    "handle_txn_offset_commit",
]

NO_OPERATIONS: Final = -(2**31)
# AclOperation READ 3, DELETE 6, DESCRIBE 8: what a group supports (AuthHelper)
GROUP_OPERATIONS: Final = (1 << 3) | (1 << 6) | (1 << 8)
WAIT_MARGIN_MS: Final = 5000

FIND_COORDINATOR_RESPONSE: Final = message_class("FindCoordinatorResponse")
COORDINATOR: Final = struct_class(FIND_COORDINATOR_RESPONSE, "coordinators")
JOIN_GROUP_RESPONSE: Final = message_class("JoinGroupResponse")
JOIN_MEMBER: Final = struct_class(JOIN_GROUP_RESPONSE, "members")
SYNC_GROUP_RESPONSE: Final = message_class("SyncGroupResponse")
HEARTBEAT_RESPONSE: Final = message_class("HeartbeatResponse")
LEAVE_GROUP_RESPONSE: Final = message_class("LeaveGroupResponse")
LEAVE_MEMBER: Final = struct_class(LEAVE_GROUP_RESPONSE, "members")
DESCRIBE_GROUPS_RESPONSE: Final = message_class("DescribeGroupsResponse")
DESCRIBED_GROUP: Final = struct_class(DESCRIBE_GROUPS_RESPONSE, "groups")
DESCRIBED_MEMBER: Final = struct_class(DESCRIBE_GROUPS_RESPONSE, "groups", "members")
LIST_GROUPS_RESPONSE: Final = message_class("ListGroupsResponse")
LISTED_GROUP: Final = struct_class(LIST_GROUPS_RESPONSE, "groups")
DELETE_GROUPS_RESPONSE: Final = message_class("DeleteGroupsResponse")
DELETED_GROUP: Final = struct_class(DELETE_GROUPS_RESPONSE, "results")
COMMIT_RESPONSE: Final = message_class("OffsetCommitResponse")
COMMIT_TOPIC: Final = struct_class(COMMIT_RESPONSE, "topics")
COMMIT_PARTITION: Final = struct_class(COMMIT_RESPONSE, "topics", "partitions")
FETCH_RESPONSE: Final = message_class("OffsetFetchResponse")
FETCH_TOPIC: Final = struct_class(FETCH_RESPONSE, "topics")
FETCH_PARTITION: Final = struct_class(FETCH_RESPONSE, "topics", "partitions")
FETCH_GROUP: Final = struct_class(FETCH_RESPONSE, "groups")
FETCH_GROUP_TOPIC: Final = struct_class(FETCH_RESPONSE, "groups", "topics")
FETCH_GROUP_PARTITION: Final = struct_class(FETCH_RESPONSE, "groups", "topics", "partitions")
DELETE_OFFSETS_RESPONSE: Final = message_class("OffsetDeleteResponse")
DELETE_OFFSETS_TOPIC: Final = struct_class(DELETE_OFFSETS_RESPONSE, "topics")
DELETE_OFFSETS_PARTITION: Final = struct_class(DELETE_OFFSETS_RESPONSE, "topics", "partitions")
TXN_COMMIT_RESPONSE: Final = message_class("TxnOffsetCommitResponse")
TXN_COMMIT_TOPIC: Final = struct_class(TXN_COMMIT_RESPONSE, "topics")
TXN_COMMIT_PARTITION: Final = struct_class(TXN_COMMIT_RESPONSE, "topics", "partitions")
CG_HEARTBEAT_RESPONSE: Final = message_class("ConsumerGroupHeartbeatResponse")
CG_ASSIGNMENT: Final = struct_class(CG_HEARTBEAT_RESPONSE, "assignment")
CG_TOPIC_PARTITIONS: Final = struct_class(CG_HEARTBEAT_RESPONSE, "assignment", "topic_partitions")
CG_DESCRIBE_RESPONSE: Final = message_class("ConsumerGroupDescribeResponse")
CG_DESCRIBED_GROUP: Final = struct_class(CG_DESCRIBE_RESPONSE, "groups")
CG_DESCRIBED_MEMBER: Final = struct_class(CG_DESCRIBE_RESPONSE, "groups", "members")
CG_DESCRIBED_ASSIGNMENT: Final = struct_class(
    CG_DESCRIBE_RESPONSE, "groups", "members", "assignment"
)
CG_DESCRIBED_PARTITIONS: Final = struct_class(
    CG_DESCRIBE_RESPONSE, "groups", "members", "assignment", "topic_partitions"
)
CONSUMER_MEMBER_TYPE: Final = 1  # ConsumerGroupDescribe v1 MemberType: 1 = consumer protocol

GROUP_KEY: Final = 0
TRANSACTION_KEY: Final = 1


def _client_host(ctx: RequestContext) -> str:
    """Kafka's ``"/" + clientAddress.getHostAddress``."""
    host = ctx.client_address.rsplit(":", 1)[0] if ctx.client_address else "127.0.0.1"
    return "/" + host


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


# --- FindCoordinator ----------------------------------------------------------------------------


@on_startup
def _load_groups(state: BrokerState) -> None:
    """Load the groups and offsets of an existing ``__consumer_offsets`` when the broker starts."""
    if GROUP_TOPIC in state.topics:
        group_coordinator(state)


@register(10, 0, 6)
def handle_find_coordinator(state: BrokerState, ctx: RequestContext, request: Any) -> Any:
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


# --- JoinGroup, SyncGroup, Heartbeat, LeaveGroup ------------------------------------------------


@register(11, 0, 9)
def handle_join_group(state: BrokerState, ctx: RequestContext, request: Any) -> Any:
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
def handle_sync_group(state: BrokerState, ctx: RequestContext, request: Any) -> Any:
    version = ctx.api_version
    coordinator = group_coordinator(state)
    if not authorize(state, ctx, "READ", GROUP, request.group_id):
        error = int(ErrorCode.GROUP_AUTHORIZATION_FAILED)
        return SYNC_GROUP_RESPONSE(throttle_time_ms=0, error_code=error, assignment=b"")
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
def handle_heartbeat(state: BrokerState, ctx: RequestContext, request: Any) -> Any:
    if not authorize(state, ctx, "READ", GROUP, request.group_id):
        error = int(ErrorCode.GROUP_AUTHORIZATION_FAILED)
        return HEARTBEAT_RESPONSE(throttle_time_ms=0, error_code=error)
    error = group_coordinator(state).heartbeat(
        request.group_id,
        request.generation_id,
        request.member_id,
        request.group_instance_id if ctx.api_version >= 3 else None,
        state.now_ms(),
    )
    return HEARTBEAT_RESPONSE(throttle_time_ms=0, error_code=int(error))


@register(13, 0, 5)
def handle_leave_group(state: BrokerState, ctx: RequestContext, request: Any) -> Any:
    version = ctx.api_version
    if version >= 3:
        leaving = [(m.member_id, m.group_instance_id) for m in request.members]
    else:
        leaving = [(request.member_id, None)]
    if not authorize(state, ctx, "READ", GROUP, request.group_id):
        error = int(ErrorCode.GROUP_AUTHORIZATION_FAILED)
        return LEAVE_GROUP_RESPONSE(throttle_time_ms=0, error_code=error, members=[])
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


# --- DescribeGroups, ListGroups, DeleteGroups ---------------------------------------------------


@register(15, 0, 6)
def handle_describe_groups(state: BrokerState, ctx: RequestContext, request: Any) -> Any:
    version = ctx.api_version
    coordinator = group_coordinator(state)
    ops = GROUP_OPERATIONS if version >= 3 and request.include_authorized_operations else None
    for group_id in request.groups:  # members whose session ended are gone (their timer fired)
        coordinator.expire_due(group_id, state.now_ms())
    out = []
    for group_id in request.groups:
        group = coordinator.groups.get(group_id)
        if not authorize(state, ctx, "DESCRIBE", GROUP, group_id):
            out.append(
                DESCRIBED_GROUP(
                    error_code=int(ErrorCode.GROUP_AUTHORIZATION_FAILED),
                    group_id=group_id,
                    group_state="",
                    protocol_type="",
                    protocol_data="",
                    members=[],
                    authorized_operations=NO_OPERATIONS,
                )
            )
            continue
        if ops is not None:  # KIP-430
            ops = authorized_operations(state, ctx, GROUP, group_id)
        if group is None or group.state == DEAD or isinstance(group, ConsumerGroup):
            # GroupMetadataManager.describeGroups: a consumer or share group is "not a classic
            # group"
            if version >= 6:
                not_classic = isinstance(group, ConsumerGroup) or share_group_exists(
                    state, group_id
                )
                out.append(
                    DESCRIBED_GROUP(
                        error_code=int(ErrorCode.GROUP_ID_NOT_FOUND),
                        error_message=(
                            f"Group {group_id} is not a classic group."
                            if not_classic
                            else f"Group {group_id} not found."
                        ),
                        group_id=group_id,
                        group_state="",
                        protocol_type="",
                        protocol_data="",
                        members=[],
                        authorized_operations=NO_OPERATIONS,
                    )
                )
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
    return DESCRIBE_GROUPS_RESPONSE(throttle_time_ms=0, groups=out)


@register(16, 0, 5)
def handle_list_groups(state: BrokerState, ctx: RequestContext, request: Any) -> Any:
    version = ctx.api_version
    states = {s.lower() for s in request.states_filter} if version >= 4 else set()
    types = {t.lower() for t in request.types_filter} if version >= 5 else set()
    out = []
    everything = authorize(state, ctx, "DESCRIBE", CLUSTER, "kafka-cluster")
    node = serving_node(state, ctx)
    for group in group_coordinator(state).list_groups(state.now_ms()):
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
def handle_delete_groups(state: BrokerState, ctx: RequestContext, request: Any) -> Any:
    coordinator = group_coordinator(state)
    now = state.now_ms()
    results = [
        DELETED_GROUP(
            group_id=g,
            error_code=int(
                ErrorCode.GROUP_AUTHORIZATION_FAILED
                if not authorize(state, ctx, "DELETE", GROUP, g)
                else delete_share_group(state, g)
                if share_group_exists(state, g)
                else coordinator.delete_group(g, now)
            ),
        )
        for g in dict.fromkeys(request.groups_names)  # KafkaApis: each group once
    ]
    return DELETE_GROUPS_RESPONSE(throttle_time_ms=0, results=results)


# --- offsets ------------------------------------------------------------------------------------


def _topic_error(
    state: BrokerState, name: str, index: int, ctx: RequestContext | None = None
) -> ErrorCode:
    if ctx is not None and not authorize(state, ctx, "READ", TOPIC, name):
        return ErrorCode.TOPIC_AUTHORIZATION_FAILED
    topic = state.topics.get(name)
    if topic is None or not 0 <= index < len(topic.partitions):
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    return ErrorCode.NONE


def _collect_offsets(
    state: BrokerState,
    coordinator: GroupCoordinator,
    topics: list[Any],
    names: list[str | None],
    leader_epochs: bool,
    commit_ts: Any,
    expire: Any,
    now: int,
    ctx: RequestContext | None = None,
) -> tuple[
    dict[tuple[str, int], OffsetAndMetadata],
    dict[tuple[int, int], ErrorCode],
    set[tuple[int, int]],
]:
    """Valid offsets by partition, errors by (topic index, partition position), and the
    positions whose metadata is too large (an error only when the group accepts the commit:
    ``OffsetMetadataManager`` checks the size after validating the group)."""
    max_metadata = coordinator.conf("offset.metadata.max.bytes")
    good: dict[tuple[str, int], OffsetAndMetadata] = {}
    errors: dict[tuple[int, int], ErrorCode] = {}
    oversized: set[tuple[int, int]] = set()
    for ti, (topic, name) in enumerate(zip(topics, names, strict=True)):
        for pi, p in enumerate(topic.partitions):
            if name is None:
                errors[ti, pi] = ErrorCode.UNKNOWN_TOPIC_ID
                continue
            error = _topic_error(state, name, p.partition_index, ctx)
            metadata = p.committed_metadata
            if error is not ErrorCode.NONE:
                errors[ti, pi] = error
                continue
            # Java's String.length(): UTF-16 code units
            if metadata is not None and len(metadata.encode("utf-16-le")) // 2 > max_metadata:
                oversized.add((ti, pi))
                continue
            ts = commit_ts(p)
            good[name, p.partition_index] = OffsetAndMetadata(
                p.committed_offset,
                p.committed_leader_epoch if leader_epochs else -1,
                metadata or "",
                ts,
                expire(ts),
            )
    return good, errors, oversized


def _partition_error(
    errors: dict[tuple[int, int], ErrorCode],
    oversized: set[tuple[int, int]],
    failed: ErrorCode,
    at: tuple[int, int],
) -> int:
    """A partition's answer: its topic's error, else the group's, else too large metadata."""
    error = errors.get(at, failed)
    if error is ErrorCode.NONE and at in oversized:
        error = ErrorCode.OFFSET_METADATA_TOO_LARGE
    return int(error)


@register(8, 0, 10)
def handle_offset_commit(state: BrokerState, ctx: RequestContext, request: Any) -> Any:
    """``KafkaApis.handleOffsetCommitRequest`` + ``OffsetMetadataManager.commitOffset``."""
    version = ctx.api_version
    coordinator = group_coordinator(state)
    now = state.now_ms()
    by_id = version >= 10
    names: list[str | None] = []
    for t in request.topics:
        if by_id:
            found = state.topics_by_id.get(t.topic_id)
            names.append(found.name if found is not None else None)
        else:
            names.append(t.name)
    retention = request.retention_time_ms if 2 <= version <= 4 else -1

    def commit_ts(p: Any) -> int:
        if version == 1 and p.commit_timestamp != -1:
            return int(p.commit_timestamp)
        return now

    def expire(ts: int) -> int:
        # OffsetAndMetadata.fromRequest: only a v2-4 retention time sets an expire timestamp
        return ts + retention if retention != -1 else -1

    good, errors, oversized = _collect_offsets(
        state, coordinator, request.topics, names, version >= 6, commit_ts, expire, now, ctx
    )
    try:
        if not authorize(state, ctx, "READ", GROUP, request.group_id):
            errors.clear()  # every partition: GROUP_AUTHORIZATION_FAILED
            raise GroupError(ErrorCode.GROUP_AUTHORIZATION_FAILED)
        group = coordinator.validate_offset_commit(
            request.group_id,
            request.generation_id_or_member_epoch if version >= 1 else -1,
            request.member_id if version >= 1 else "",
            request.group_instance_id if version >= 7 else None,
            version,
            False,
            now,
        )
    except GroupError as exc:
        failed = exc.error
    else:
        failed = ErrorCode.NONE
        coordinator.commit_offsets(group, good, now)
    topics = []
    for ti, t in enumerate(request.topics):
        partitions = [
            COMMIT_PARTITION(
                partition_index=p.partition_index,
                error_code=_partition_error(errors, oversized, failed, (ti, pi)),
            )
            for pi, p in enumerate(t.partitions)
        ]
        topics.append(
            COMMIT_TOPIC(
                name=t.name if not by_id else "",
                topic_id=t.topic_id if by_id else ZERO_UUID,
                partitions=partitions,
            )
        )
    return COMMIT_RESPONSE(throttle_time_ms=0, topics=topics)


@register(28, 0, 5)
def handle_txn_offset_commit(state: BrokerState, ctx: RequestContext, request: Any) -> Any:
    """``OffsetMetadataManager.commitTransactionalOffset``: staged until the marker."""
    version = ctx.api_version
    coordinator = group_coordinator(state)
    now = state.now_ms()
    good, errors, oversized = _collect_offsets(
        state,
        coordinator,
        request.topics,
        [t.name for t in request.topics],
        version >= 2,
        lambda p: now,
        lambda ts: -1,
        now,
        ctx,
    )
    failed = ErrorCode.NONE
    try:
        for allowed, denied in (
            (
                authorize(state, ctx, "WRITE", TRANSACTIONAL_ID, request.transactional_id),
                ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
            ),
            (
                authorize(state, ctx, "READ", GROUP, request.group_id),
                ErrorCode.GROUP_AUTHORIZATION_FAILED,
            ),
        ):
            if not allowed:
                errors.clear()
                raise GroupError(denied)
        if not request.group_id:  # GroupCoordinatorService.commitTransactionalOffsets
            raise GroupError(ErrorCode.INVALID_GROUP_ID)
        coordinator.validate_offset_commit(
            request.group_id,
            request.generation_id if version >= 3 else -1,
            request.member_id if version >= 3 else "",
            request.group_instance_id if version >= 3 else None,
            version,
            True,
            now,
        )
        if uses_transaction_v2(state, version, 5):  # KIP-890 part 2: no AddOffsetsToTxn
            added = add_group_partition_for_commit(
                state,
                request.transactional_id,
                request.group_id,
                request.producer_id,
                request.producer_epoch,
            )
            if added is not ErrorCode.NONE:
                errors.clear()
                raise GroupError(added)
    except GroupError as exc:
        failed = exc.error
    else:
        coordinator.stage_txn_offsets(
            request.group_id, request.producer_id, request.producer_epoch, good, now
        )
    topics = [
        TXN_COMMIT_TOPIC(
            name=t.name,
            partitions=[
                TXN_COMMIT_PARTITION(
                    partition_index=p.partition_index,
                    error_code=_partition_error(errors, oversized, failed, (ti, pi)),
                )
                for pi, p in enumerate(t.partitions)
            ],
        )
        for ti, t in enumerate(request.topics)
    ]
    return TXN_COMMIT_RESPONSE(throttle_time_ms=0, topics=topics)


def _fetch_group(
    state: BrokerState,
    coordinator: GroupCoordinator,
    group_id: str,
    topics: list[Any] | None,
    by_id: bool,
    require_stable: bool,
    ctx: RequestContext | None = None,
) -> list[tuple[str | None, Any, list[tuple[int, OffsetAndMetadata | None, ErrorCode]]]]:
    """(topic name, topic id, rows) for one group of an OffsetFetch."""
    wanted: list[tuple[str, list[int] | None]] | None = None
    unknown_ids: list[tuple[Any, list[int]]] = []
    if topics is not None:
        wanted = []
        for t in topics:
            if by_id:
                found = state.topics_by_id.get(t.topic_id)
                if found is None:
                    unknown_ids.append((t.topic_id, list(t.partition_indexes)))
                    continue
                wanted.append((found.name, list(t.partition_indexes)))
            else:
                wanted.append((t.name, list(t.partition_indexes)))
    out: list[tuple[str | None, Any, list[tuple[int, OffsetAndMetadata | None, ErrorCode]]]] = []
    for name, rows in coordinator.fetch_offsets(group_id, wanted, require_stable):
        if ctx is not None and not authorize(state, ctx, "DESCRIBE", TOPIC, name):
            if wanted is None:
                continue  # all topics: the undescribable ones are left out
            rows = [(i, None, ErrorCode.TOPIC_AUTHORIZATION_FAILED) for i, _, _ in rows]
        topic = state.topics.get(name)
        if by_id and topic is None:
            continue  # a deleted topic has no id to answer with
        out.append((name, topic.topic_id if topic is not None else None, rows))
    for topic_id, indexes in unknown_ids:
        out.append((None, topic_id, [(i, None, ErrorCode.UNKNOWN_TOPIC_ID) for i in indexes]))
    return out


@register(9, 0, 10)
def handle_offset_fetch(state: BrokerState, ctx: RequestContext, request: Any) -> Any:
    """``KafkaApis.handleOffsetFetchRequest``: one group up to v7, a batch of groups from v8."""
    version = ctx.api_version
    coordinator = group_coordinator(state)
    stable = version >= 7 and bool(request.require_stable)
    if version < 8:
        topics = request.topics
        if version < 2 and topics is None:
            topics = []
        if not authorize(state, ctx, "DESCRIBE", GROUP, request.group_id):
            error = int(ErrorCode.GROUP_AUTHORIZATION_FAILED)
            return FETCH_RESPONSE(throttle_time_ms=0, topics=[], error_code=error)
        found = _fetch_group(state, coordinator, request.group_id, topics, False, stable, ctx)
        out_topics = [
            FETCH_TOPIC(
                name=name,
                partitions=_committed_partitions(FETCH_PARTITION, rows),
            )
            for name, _, rows in found
        ]
        return FETCH_RESPONSE(throttle_time_ms=0, topics=out_topics, error_code=0)
    groups = []
    for g in request.groups:
        error = ErrorCode.NONE
        coordinator.expire_due(g.group_id, state.now_ms())
        holder = coordinator.groups.get(g.group_id)
        if not authorize(state, ctx, "DESCRIBE", GROUP, g.group_id):
            error = ErrorCode.GROUP_AUTHORIZATION_FAILED
        elif version >= 9 and isinstance(holder, ConsumerGroup):
            error = coordinator.consumer.validate_offset_fetch(holder, g.member_id, g.member_epoch)
        if error is not ErrorCode.NONE:
            groups.append(FETCH_GROUP(group_id=g.group_id, error_code=int(error), topics=[]))
            continue
        found = _fetch_group(state, coordinator, g.group_id, g.topics, version >= 10, stable, ctx)
        groups.append(
            FETCH_GROUP(
                group_id=g.group_id,
                error_code=0,
                topics=[
                    FETCH_GROUP_TOPIC(
                        name=name if version < 10 else "",
                        topic_id=topic_id if version >= 10 else ZERO_UUID,
                        partitions=_committed_partitions(FETCH_GROUP_PARTITION, rows),
                    )
                    for name, topic_id, rows in found
                ],
            )
        )
    return FETCH_RESPONSE(throttle_time_ms=0, groups=groups)


@register(47, 0, 0)
def handle_offset_delete(state: BrokerState, ctx: RequestContext, request: Any) -> Any:
    coordinator = group_coordinator(state)
    wanted: list[tuple[str, int]] = []
    unknown: set[tuple[str, int]] = set()
    for t in request.topics:
        for p in t.partitions:
            tp = (t.name, p.partition_index)
            if _topic_error(state, *tp, ctx) is not ErrorCode.NONE:
                unknown.add(tp)
            else:
                wanted.append(tp)
    if not authorize(state, ctx, "DELETE", GROUP, request.group_id):
        error = int(ErrorCode.GROUP_AUTHORIZATION_FAILED)
        return DELETE_OFFSETS_RESPONSE(error_code=error, throttle_time_ms=0, topics=[])
    error, errors = coordinator.delete_offsets(request.group_id, wanted, state.now_ms())
    if error is not ErrorCode.NONE:
        return DELETE_OFFSETS_RESPONSE(error_code=int(error), throttle_time_ms=0, topics=[])
    topics = [
        DELETE_OFFSETS_TOPIC(
            name=t.name,
            partitions=[
                DELETE_OFFSETS_PARTITION(
                    partition_index=p.partition_index,
                    error_code=int(
                        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                        if (t.name, p.partition_index) in unknown
                        else errors.get((t.name, p.partition_index), ErrorCode.NONE)
                    ),
                )
                for p in t.partitions
            ],
        )
        for t in request.topics
    ]
    return DELETE_OFFSETS_RESPONSE(error_code=0, throttle_time_ms=0, topics=topics)


# --- KIP-848: ConsumerGroupHeartbeat, ConsumerGroupDescribe -------------------------------------


def _heartbeat_assignment(assignment: Assignment) -> list[Any]:
    return [
        CG_TOPIC_PARTITIONS(topic_id=topic_id, partitions=sorted(partitions))
        for topic_id, partitions in sorted(assignment.items())
        if partitions
    ]


@register(68, 0, 1)
def handle_consumer_group_heartbeat(state: BrokerState, ctx: RequestContext, request: Any) -> Any:
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
    owned = (
        None
        if request.topic_partitions is None
        else [(t.topic_id, list(t.partitions)) for t in request.topic_partitions]
    )
    result = coordinator.consumer.heartbeat(
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
        ctx.client_id or "",
        _client_host(ctx),
        state.now_ms(),
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


@register(69, 0, 1)
def handle_consumer_group_describe(state: BrokerState, ctx: RequestContext, request: Any) -> Any:
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
    for group_id in request.group_ids:
        if not authorize(state, ctx, "DESCRIBE", GROUP, group_id):
            denied.append(
                CG_DESCRIBED_GROUP(
                    error_code=int(ErrorCode.GROUP_AUTHORIZATION_FAILED),
                    error_message=None,
                    group_id=group_id,
                    group_state="",
                    group_epoch=0,
                    assignment_epoch=0,
                    assignor_name="",
                    members=[],
                    authorized_operations=NO_OPERATIONS,
                )
            )
            continue
        group = consumer.group(group_id)
        if request.include_authorized_operations:  # KIP-430
            ops = authorized_operations(state, ctx, GROUP, group_id)
        if group is None:
            holder = coordinator.groups.get(group_id)
            out.append(
                CG_DESCRIBED_GROUP(
                    error_code=int(ErrorCode.GROUP_ID_NOT_FOUND),
                    error_message=(
                        f"Group {group_id} is not a consumer group."
                        if holder is not None and holder.state != DEAD
                        else f"Group {group_id} not found."
                    ),
                    group_id=group_id,
                    group_state="",
                    group_epoch=0,
                    assignment_epoch=0,
                    assignor_name="",
                    members=[],
                    authorized_operations=NO_OPERATIONS,
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


def _committed_partitions(cls: Any, rows: Any) -> list[Any]:
    """OffsetFetch's partition entries (the single-group shape before v8, per group from v8):
    the committed offset, leader epoch and metadata, or -1 and "" where nothing is committed."""
    return [
        cls(
            partition_index=index,
            committed_offset=om.offset if om else -1,
            committed_leader_epoch=om.leader_epoch if om else -1,
            metadata=om.metadata if om else "",
            error_code=int(error),
        )
        for index, om, error in rows
    ]
