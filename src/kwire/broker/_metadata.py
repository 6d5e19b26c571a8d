"""Metadata (API key 3, v0-13): brokers, controller, cluster id and topics, with auto-creation.

After Kafka 3.9's ``KafkaApis.handleTopicMetadataRequest``. v0 asks for every topic with an empty
list (later versions with null); v1 adds the controller and ``is_internal``; v2 the cluster id;
v4 ``allow_auto_topic_creation``; v8 KIP-430's authorized operations (cluster ones until v10);
v10 topic ids; v12 topics asked by id. Each partition has one replica, its leader. A module of
its own so that a broker's first Metadata loads only its own handler.
"""

from __future__ import annotations

import uuid
from typing import Any, Final

from kwire.broker._acl import CLUSTER, TOPIC, authorize, authorized_operations
from kwire.broker._apis import register
from kwire.broker._context import RequestContext
from kwire.broker._routing import live_nodes
from kwire.broker._state import BrokerError, BrokerState, Topic, validate_topic_name
from kwire.protocol import ZERO_UUID, ErrorCode
from kwire.protocol.messages import MetadataRequest, MetadataResponse

__all__ = ["CLUSTER_OPERATIONS", "NO_OPERATIONS", "TOPIC_OPERATIONS", "handle_metadata"]

NO_OPERATIONS: Final = -(2**31)  # Kafka's "authorized operations not requested" sentinel


def _bits(*operations: int) -> int:
    return sum(1 << op for op in operations)


# AclOperation codes: READ 3, WRITE 4, CREATE 5, DELETE 6, ALTER 7, DESCRIBE 8, CLUSTER_ACTION 9,
# DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11, IDEMPOTENT_WRITE 12. With no authorizer every operation
# a resource type supports is authorized (Kafka's AuthHelper.authorizedOperations).
TOPIC_OPERATIONS: Final = _bits(3, 4, 5, 6, 7, 8, 10, 11)
CLUSTER_OPERATIONS: Final = _bits(5, 7, 8, 9, 10, 11, 12)

METADATA_RESPONSE: Final = MetadataResponse
METADATA_BROKER: Final = MetadataResponse.MetadataResponseBroker
METADATA_TOPIC: Final = MetadataResponse.MetadataResponseTopic
METADATA_PARTITION: Final = MetadataResponse.MetadataResponsePartition


def _metadata_topic(state: BrokerState, topic: Topic, version: int, with_ops: bool) -> Any:
    partitions = []
    for p in topic.partitions:
        # One replica, its leader (in an in-process cluster it moves with the leadership: the
        # storage is shared); a leader that is not live is LEADER_NOT_AVAILABLE, as Kafka's
        # MetadataCache answers for a partition whose leader is offline.
        live = p.leader_id in state.live_brokers
        leader = p.leader_id if live else -1
        partitions.append(
            METADATA_PARTITION(
                error_code=0 if live else int(ErrorCode.LEADER_NOT_AVAILABLE),
                partition_index=p.index,
                leader_id=leader,
                leader_epoch=p.leader_epoch,
                replica_nodes=[p.leader_id],
                isr_nodes=[leader] if live else [],
                offline_replicas=[] if live else [p.leader_id],
            )
        )
    return METADATA_TOPIC(
        error_code=0,
        name=topic.name,
        topic_id=topic.topic_id,
        is_internal=topic.internal,
        partitions=partitions,
        topic_authorized_operations=TOPIC_OPERATIONS if with_ops else NO_OPERATIONS,
    )


def _metadata_error(name: str | None, topic_id: uuid.UUID | None, error: ErrorCode) -> Any:
    return METADATA_TOPIC(
        error_code=int(error), name=name, topic_id=topic_id or ZERO_UUID, partitions=[]
    )


@register(3, 0, 13)
def handle_metadata(state: BrokerState, ctx: RequestContext, request: MetadataRequest) -> Any:
    """Metadata (``KafkaApis.handleTopicMetadataRequest``), with auto-creation."""
    version = ctx.api_version
    with_ops = version >= 8 and bool(request.include_topic_authorized_operations)
    topics_out: list[Any] = []
    if request.topics is None or (version == 0 and not request.topics):
        topics_out = [
            _metadata_topic(state, t, version, with_ops)
            for t in state.topics.values()
            if authorize(state, ctx, "DESCRIBE", TOPIC, t.name)  # the others stay hidden
        ]
    else:
        allow_auto = state.auto_create_topics and (version < 4 or request.allow_auto_topic_creation)
        for wanted in request.topics:
            name = wanted.name
            if name is None:
                topic_id = wanted.topic_id
                found = state.topics_by_id.get(topic_id) if topic_id else None
                if found is None:
                    topics_out.append(_metadata_error(None, topic_id, ErrorCode.UNKNOWN_TOPIC_ID))
                elif not authorize(state, ctx, "DESCRIBE", TOPIC, found.name):
                    error = ErrorCode.TOPIC_AUTHORIZATION_FAILED
                    topics_out.append(_metadata_error(None, topic_id, error))
                else:
                    topics_out.append(_metadata_topic(state, found, version, with_ops))
                continue
            if not authorize(state, ctx, "DESCRIBE", TOPIC, name):  # existing or not
                topics_out.append(_metadata_error(name, None, ErrorCode.TOPIC_AUTHORIZATION_FAILED))
                continue
            topic = state.topics.get(name)
            if topic is None:
                try:
                    validate_topic_name(name)
                except BrokerError:
                    topics_out.append(
                        _metadata_error(name, None, ErrorCode.INVALID_TOPIC_EXCEPTION)
                    )
                    continue
                if not allow_auto:
                    topics_out.append(
                        _metadata_error(name, None, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
                    )
                    continue
                if not authorize(state, ctx, "CREATE", CLUSTER, "kafka-cluster") and not authorize(
                    state, ctx, "CREATE", TOPIC, name
                ):
                    error = ErrorCode.TOPIC_AUTHORIZATION_FAILED
                    topics_out.append(_metadata_error(name, None, error))
                    continue
                try:
                    topic = state.create_topic(name)
                except BrokerError as exc:
                    topics_out.append(_metadata_error(name, None, exc.error))
                    continue
            topics_out.append(_metadata_topic(state, topic, version, with_ops))
    for out in topics_out if with_ops else ():
        if out.error_code == 0:  # KIP-430
            out.topic_authorized_operations = authorized_operations(state, ctx, TOPIC, out.name)
    brokers = [
        METADATA_BROKER(node_id=node, host=host, port=port, rack=None)
        for node, host, port in live_nodes(state, ctx)
    ]
    return METADATA_RESPONSE(
        throttle_time_ms=0,
        brokers=brokers,
        cluster_id=state.cluster_id,
        controller_id=min(state.live_brokers, default=state.node_id),
        topics=topics_out,
        cluster_authorized_operations=(
            authorized_operations(state, ctx, CLUSTER, "kafka-cluster")
            if 8 <= version <= 10 and request.include_cluster_authorized_operations
            else NO_OPERATIONS
        ),
    )
