"""StreamsGroupHeartbeat (API 88) and StreamsGroupDescribe (API 89): KIP-1071 streams groups.

Versions: v0 only (Kafka 4.1 early access, GA in 4.2; 4.3 serves v0). ``KafkaApis``
``handleStreamsGroupHeartbeat`` checks READ on the group, then DESCRIBE on every topic the
request's topology names (TOPIC_AUTHORIZATION_FAILED, KAFKA-18819; StreamsGroupDescribe hides a
group whose topology names one the same way) (and, for a member that joins with
internal topics to create, CREATE on the cluster or the topics, ``AutoTopicCreationManager``),
then the group coordinator decides (``_streams_group``; in a cluster NOT_COORDINATOR on a node not
coordinating the group, after the ACL, ``_routing``). Internal topics (changelog and
repartition) a topology needs and the cluster lacks are created by the broker, as 4.3's
``KafkaApis`` does with the heartbeat's ``creatableTopics``, and the member sees
MISSING_INTERNAL_TOPICS until its next heartbeat finds them.

``streams.version``: after ``KafkaApis.isStreamsGroupProtocolEnabled``, both APIs answer
UNSUPPORTED_VERSION (every error code of the response) unless the finalized ``streams.version``
is at least 1 (``StreamsVersion.SV_1``; a new 4.2+ cluster finalizes it, ``_releases``) and
``group.coordinator.rebalance.protocols`` (when set) names ``streams``. UpdateFeatures moves the
level. As for share groups, the APIs stay advertised whatever the level.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, Final

from kwire.broker._acl import (
    CLUSTER,
    CLUSTER_NAME,
    GROUP,
    TOPIC,
    authorize,
    authorized_operations,
    topics_describable,
)
from kwire.broker._apis import register
from kwire.broker._context import RequestContext
from kwire.broker._group_apis import described_order
from kwire.broker._routing import GROUP_KEY, coordinated_elsewhere, error_response
from kwire.broker._share_service import share_group_exists
from kwire.broker._state import BrokerError, BrokerState
from kwire.broker.group import group_coordinator
from kwire.broker.group._streams import GROUP_ID_NOT_FOUND, StreamsGroups
from kwire.broker.group._streams_group import StreamsMember, TaskSet
from kwire.broker.group._streams_topology import STATUS_MISSING_INTERNAL_TOPICS, TopicInfo
from kwire.protocol import ErrorCode
from kwire.protocol.messages import (
    StreamsGroupDescribeRequest,
    StreamsGroupDescribeResponse,
    StreamsGroupHeartbeatRequest,
    StreamsGroupHeartbeatResponse,
)

__all__ = [
    "STREAMS_VERSION",
    "handle_streams_group_describe",
    "handle_streams_group_heartbeat",
    "streams_gate",
    "streams_groups_enabled",
]

STREAMS_VERSION: Final = "streams.version"

HB_RESPONSE: Final = StreamsGroupHeartbeatResponse
HB_TASKS: Final = StreamsGroupHeartbeatResponse.TaskIds
HB_STATUS: Final = StreamsGroupHeartbeatResponse.Status
DESCRIBE_RESPONSE: Final = StreamsGroupDescribeResponse
D_GROUP: Final = StreamsGroupDescribeResponse.DescribedGroup
D_TOPOLOGY: Final = StreamsGroupDescribeResponse.Topology
D_SUB: Final = StreamsGroupDescribeResponse.Subtopology
D_INFO: Final = StreamsGroupDescribeResponse.TopicInfo
D_CONFIG: Final = StreamsGroupDescribeResponse.KeyValue
D_MEMBER: Final = StreamsGroupDescribeResponse.Member
D_ENDPOINT: Final = StreamsGroupDescribeResponse.Endpoint
D_TAG: Final = StreamsGroupDescribeResponse.KeyValue
D_ASSIGNMENT: Final = StreamsGroupDescribeResponse.Assignment
D_TASKS: Final = StreamsGroupDescribeResponse.TaskIds
NO_OPERATIONS: Final = -(2**31)


def streams_groups_enabled(state: BrokerState) -> bool:
    protocols = state.static_config.get("group.coordinator.rebalance.protocols")
    if protocols is not None and "streams" not in [p.strip() for p in protocols.split(",")]:
        return False
    return state.feature_level(STREAMS_VERSION) >= 1


def streams_gate(state: BrokerState, ctx: RequestContext, request: Any) -> Any:
    """The guard of both APIs (``_apis.GUARD_TABLE``, as the share APIs' ``share_gate``):
    UNSUPPORTED_VERSION while streams groups are off (``KafkaApis.isStreamsGroupProtocolEnabled``),
    before anything else the handlers check."""
    if streams_groups_enabled(state):
        return None
    return error_response(ctx.api_key, ctx.api_version, request, ErrorCode.UNSUPPORTED_VERSION)


def streams_groups(state: BrokerState) -> StreamsGroups:
    return group_coordinator(state).streams


def _client_host(ctx: RequestContext) -> str:
    host = ctx.client_address.rsplit(":", 1)[0] if ctx.client_address else "127.0.0.1"
    return "/" + host


def _tasks(cls: Any, tasks: TaskSet) -> list[Any]:
    return [cls(subtopology_id=s, partitions=sorted(ps)) for s, ps in sorted(tasks.items()) if ps]


def _hb_error(error: int, message: str | None = None) -> Any:
    return HB_RESPONSE(throttle_time_ms=0, error_code=error, error_message=message)


#: KafkaApis.handleStreamsGroupDescribe's message for a group hidden by ``topics_describable``.
HIDDEN_TOPOLOGY_TOPICS: Final = (
    "The described group uses topics that the client is not authorized to describe."
)


def _topology_topics(subtopologies: Iterable[Any]) -> Iterator[str]:
    """The topics KafkaApis checks for DESCRIBE in a heartbeat's or a described topology
    (KAFKA-18819): every source, repartition sink, repartition source and changelog topic."""
    for s in subtopologies:
        yield from s.source_topics
        yield from s.repartition_sink_topics
        yield from (t.name for t in s.repartition_source_topics)
        yield from (t.name for t in s.state_changelog_topics)


def _unauthorized_to_create(
    status: list[tuple[int, str]], denied: list[str]
) -> list[tuple[int, str]]:
    """The heartbeat's status with KafkaApis' note on the internal topics it may not CREATE."""
    note = f"Unauthorized to CREATE on topics {','.join(denied)}."
    for i, (code, detail) in enumerate(status):
        if code == STATUS_MISSING_INTERNAL_TOPICS:
            status[i] = (code, f"{detail}; {note}")
            return status
    return [*status, (STATUS_MISSING_INTERNAL_TOPICS, note)]


def _create_internal(state: BrokerState, topics: tuple[TopicInfo, ...]) -> None:
    """``AutoTopicCreationManager.createStreamsInternalTopics``: best effort, as Kafka's."""
    for t in topics:
        if t.name in state.topics:
            continue
        try:
            state.create_topic(t.name, t.partitions, dict(t.configs))
        except BrokerError:
            continue


@register(88, 0, 0)
def handle_streams_group_heartbeat(
    state: BrokerState, ctx: RequestContext, request: StreamsGroupHeartbeatRequest
) -> Any:
    if not authorize(state, ctx, "READ", GROUP, request.group_id):
        return _hb_error(int(ErrorCode.GROUP_AUTHORIZATION_FAILED))
    # KafkaApis (KAFKA-18819): a member may not name a topic it may not DESCRIBE in its topology
    if request.topology is not None and not topics_describable(
        state, ctx, _topology_topics(request.topology.subtopologies)
    ):
        return _hb_error(int(ErrorCode.TOPIC_AUTHORIZATION_FAILED))
    # GroupCoordinatorService.streamsGroupHeartbeat: the request's checks, then the coordinator
    invalid = streams_groups(state).request_error(request)
    if invalid is not None:
        return _hb_error(invalid.error, invalid.message)
    if coordinated_elsewhere(state, ctx, GROUP_KEY, request.group_id):
        return _hb_error(int(ErrorCode.NOT_COORDINATOR))
    if share_group_exists(state, request.group_id):  # one id space with share groups
        return _hb_error(GROUP_ID_NOT_FOUND, f"Group {request.group_id} is not a streams group.")
    result = streams_groups(state).heartbeat(
        request, ctx.client_id or "", _client_host(ctx), state.now_ms()
    )
    if result.error:
        return _hb_error(result.error, result.message)
    status = list(result.status)
    if result.create_topics:
        # KafkaApis: CREATE on the cluster, else on each internal topic; one missing and none is
        # created, the MISSING_INTERNAL_TOPICS status says why, and the heartbeat goes on
        names = [t.name for t in result.create_topics]
        denied = (
            []
            if authorize(state, ctx, "CREATE", CLUSTER, CLUSTER_NAME)
            else [n for n in names if not authorize(state, ctx, "CREATE", TOPIC, n)]
        )
        if denied:
            status = _unauthorized_to_create(status, denied)
        else:
            _create_internal(state, result.create_topics)
    member = result.member
    assert member is not None
    response: Any = HB_RESPONSE(
        throttle_time_ms=0,
        error_code=0,
        error_message=None,
        member_id=member.member_id,
        member_epoch=member.member_epoch,
        heartbeat_interval_ms=result.heartbeat_interval_ms,
        acceptable_recovery_lag=10000,
        task_offset_interval_ms=60000,
        status=[HB_STATUS(status_code=c, status_detail=d) for c, d in status] or None,
        endpoint_information_epoch=0,
        active_tasks=None,  # null: unchanged since the last heartbeat
        standby_tasks=None,
        warmup_tasks=None,
        partitions_by_user_endpoint=None,
    )
    if result.send_assignment:
        response.active_tasks = _tasks(HB_TASKS, member.assigned.active)
        response.standby_tasks = _tasks(HB_TASKS, member.assigned.standby)
        response.warmup_tasks = _tasks(HB_TASKS, member.assigned.warmup)
    return response


def _described_member(groups: StreamsGroups, group_id: str, m: StreamsMember) -> Any:
    target = groups.groups[group_id].target.get(m.member_id)

    def assignment(active: TaskSet, standby: TaskSet, warmup: TaskSet) -> Any:
        return D_ASSIGNMENT(
            active_tasks=_tasks(D_TASKS, active),
            standby_tasks=_tasks(D_TASKS, standby),
            warmup_tasks=_tasks(D_TASKS, warmup),
        )

    endpoint = m.user_endpoint
    return D_MEMBER(
        member_id=m.member_id,
        member_epoch=m.member_epoch,
        instance_id=m.instance_id,
        rack_id=m.rack_id,
        client_id=m.client_id,
        client_host=m.client_host,
        topology_epoch=m.topology_epoch,
        process_id=m.process_id,
        user_endpoint=None if endpoint is None else D_ENDPOINT(host=endpoint[0], port=endpoint[1]),
        client_tags=[D_TAG(key=k, value=v) for k, v in m.client_tags],
        task_offsets=[],
        task_end_offsets=[],
        assignment=assignment(m.assigned.active, m.assigned.standby, m.assigned.warmup),
        target_assignment=(
            assignment({}, {}, {})
            if target is None
            else assignment(target.active, target.standby, target.warmup)
        ),
        is_classic=False,
    )


def _info(rows: tuple[TopicInfo, ...], sizes: dict[str, int]) -> list[Any]:
    return [
        D_INFO(
            name=t.name,
            partitions=t.partitions or sizes.get(t.name, 0),
            replication_factor=t.replication_factor,
            topic_configs=[D_CONFIG(key=k, value=v) for k, v in t.configs],
        )
        for t in rows
    ]


def _undescribed(group_id: str, error: int, message: str | None = None) -> Any:
    """A group StreamsGroupDescribe answers with an error only."""
    return D_GROUP(
        error_code=int(error),
        error_message=message,
        group_id=group_id,
        group_state="",
        authorized_operations=NO_OPERATIONS,
    )


@register(89, 0, 0)
def handle_streams_group_describe(
    state: BrokerState, ctx: RequestContext, request: StreamsGroupDescribeRequest
) -> Any:
    """``GroupMetadataManager.streamsGroupDescribe`` / ``StreamsGroup.asDescribedGroup``."""
    groups = streams_groups(state)
    now = state.now_ms()
    denied = []  # KafkaApis.handleStreamsGroupDescribe lists them before the coordinator's results
    out = []
    for group_id in described_order(state, ctx, list(request.group_ids)):
        groups.expire(group_id, now)
        if not authorize(state, ctx, "DESCRIBE", GROUP, group_id):
            denied.append(_undescribed(group_id, ErrorCode.GROUP_AUTHORIZATION_FAILED))
            continue
        if coordinated_elsewhere(state, ctx, GROUP_KEY, group_id):
            out.append(_undescribed(group_id, ErrorCode.NOT_COORDINATOR))
            continue
        group = groups.groups.get(group_id)
        if group is None:
            out.append(_undescribed(group_id, GROUP_ID_NOT_FOUND, f"Group {group_id} not found."))
            continue
        configured = groups.configured(group)
        topology = None
        if group.topology is not None:
            sizes = {name: len(t.partitions) for name, t in state.topics.items()}
            ready = configured is not None and configured.ready
            topology = D_TOPOLOGY(
                epoch=group.topology.epoch,
                subtopologies=(
                    [
                        D_SUB(
                            subtopology_id=s.subtopology_id,
                            source_topics=list(s.source_topics),
                            repartition_sink_topics=list(s.repartition_sink_topics),
                            state_changelog_topics=_info(s.state_changelog_topics, sizes),
                            repartition_source_topics=_info(s.repartition_source_topics, sizes),
                        )
                        for s in group.topology.subtopologies
                    ]
                    if ready
                    else None
                ),
            )
        if (
            topology is not None
            and topology.subtopologies
            and not topics_describable(state, ctx, _topology_topics(topology.subtopologies))
        ):  # KafkaApis (KAFKA-18819): the group in its place, but nothing of it
            out.append(
                _undescribed(group_id, ErrorCode.TOPIC_AUTHORIZATION_FAILED, HIDDEN_TOPOLOGY_TOPICS)
            )
            continue
        ops = NO_OPERATIONS
        if request.include_authorized_operations:
            ops = authorized_operations(state, ctx, GROUP, group_id)
        out.append(
            D_GROUP(
                error_code=0,
                error_message=None,
                group_id=group_id,
                group_state=group.state(configured),
                group_epoch=group.group_epoch,
                assignment_epoch=group.assignment_epoch,
                topology=topology,
                members=[
                    _described_member(groups, group_id, m) for _, m in sorted(group.members.items())
                ],
                authorized_operations=ops,
            )
        )
    return DESCRIBE_RESPONSE(throttle_time_ms=0, groups=denied + out)
