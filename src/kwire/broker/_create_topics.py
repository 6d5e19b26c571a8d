"""CreateTopics (API 19): new topics, their partitions placed and their configs checked.

Versions: v1 (Kafka 0.10.2) adds ``validate_only``; v2 a throttle time; v4 (KIP-464) lets the
partition count and replication factor default to the broker's; v5 (flexible) answers the created
topic's configs, partition count and replication factor (KIP-525); v6 may answer
THROTTLING_QUOTA_EXCEEDED (KIP-599); v7 the created topic's id (KIP-516).

Follows ``ControllerApis.createTopics`` and ``ReplicationControlManager.createTopic``: names
checked and collisions (``.`` and ``_`` unified) refused, then the placement of a one-broker KRaft
cluster (the rules in ``_admin``).
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Mapping
from typing import Any, Final

from kwire.broker._acl import (
    CLUSTER,
    TOPIC,
    authorize,
)
from kwire.broker._admin import (
    ZERO_UUID,
    _ApiError,
    _check_manual_assignment,
    _from_broker_error,
    _sensitive,
    _topic_config_error,
)
from kwire.broker._apis import register
from kwire.broker._config import (
    listed_in,
    resolve_topic_configs,
)
from kwire.broker._context import RequestContext
from kwire.broker._state import BrokerError, BrokerState, validate_topic_name
from kwire.log.metadata import CLUSTER_METADATA_TOPIC
from kwire.protocol import ErrorCode
from kwire.protocol.messages import (
    CreateTopicsRequest,
    CreateTopicsResponse,
)

__all__ = ["handle_create_topics"]


CREATE_TOPICS_RESPONSE: Final = CreateTopicsResponse


CREATE_TOPICS_RESULT: Final = CreateTopicsResponse.CreatableTopicResult


CREATE_TOPICS_CONFIG: Final = CreateTopicsResponse.CreatableTopicConfigs


def _collision(state: BrokerState, name: str) -> str | None:
    """The existing topic ``name`` collides with (``.`` and ``_`` unified), if any."""
    if "." not in name and "_" not in name:
        return None
    key = name.replace(".", "_")
    for existing in state.topics:
        if existing != name and existing.replace(".", "_") == key:
            return existing
    return None


def _placement_error(replication_factor: int, brokers: int = 1) -> _ApiError:
    """What ``StripedReplicaPlacer`` says when the registered brokers cannot hold N replicas."""
    return _ApiError(
        ErrorCode.INVALID_REPLICATION_FACTOR,
        f"Unable to replicate the partition {replication_factor} time(s): The target "
        f"replication factor of {replication_factor} cannot be reached because only "
        f"{brokers} broker(s) are registered.",
    )


def _plan_topic(
    state: BrokerState, topic: Any, configs: Mapping[str, str]
) -> tuple[int, int, list[int] | None]:
    """(partitions, replication factor, the leaders of a manual assignment) for one new topic;
    raises ``_ApiError`` (``ReplicationControlManager.createTopic``)."""
    if topic.assignments:
        if topic.replication_factor != -1:
            raise _ApiError(
                ErrorCode.INVALID_REQUEST,
                "A manual partition assignment was specified, but replication factor was not "
                "set to -1.",
            )
        if topic.num_partitions != -1:
            raise _ApiError(
                ErrorCode.INVALID_REQUEST,
                "A manual partition assignment was specified, but numPartitions was not set to -1.",
            )
        seen: set[int] = set()
        factor: int | None = None
        leaders: dict[int, int] = {}
        for assignment in topic.assignments:
            index = assignment.partition_index
            if index in seen:
                raise _ApiError(
                    ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                    f"Found multiple manual partition assignments for partition {index}",
                )
            leaders[index] = _check_manual_assignment(state, assignment.broker_ids, factor, index)
            factor = len(assignment.broker_ids)
            seen.add(index)
        if any(i not in seen for i in range(len(seen))):
            raise _ApiError(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                "partitions should be a consecutive 0-based integer sequence",
            )
        if factor is not None and factor > 1:
            # One replica per partition, in an in-process cluster too (its storage is shared).
            raise _placement_error(factor, len(state.live_brokers))
        return len(seen), factor or 1, [leaders[i] for i in range(len(seen))]
    if topic.replication_factor < -1 or topic.replication_factor == 0:
        raise _ApiError(
            ErrorCode.INVALID_REPLICATION_FACTOR,
            "Replication factor must be larger than 0, or -1 to use the default value.",
        )
    if topic.num_partitions < -1 or topic.num_partitions == 0:
        raise _ApiError(
            ErrorCode.INVALID_PARTITIONS,
            "Number of partitions was set to an invalid non-positive value.",
        )
    partitions = (
        state.broker_int("num.partitions") if topic.num_partitions == -1 else topic.num_partitions
    )
    factor = (
        state.broker_int("default.replication.factor")
        if topic.replication_factor == -1
        else topic.replication_factor
    )
    if factor > 1:
        # One replica per partition, in an in-process cluster too (its storage is shared).
        raise _placement_error(factor, len(state.live_brokers))
    return partitions, factor, None


def _created_result(
    state: BrokerState,
    name: str,
    topic_id: uuid.UUID,
    partitions: int,
    factor: int,
    configs: Mapping[str, str],
) -> Any:
    entries = []
    for config_name, resolved in sorted(
        resolve_topic_configs(configs, state.static_config).items()
    ):
        if not listed_in(config_name, state.personality.release):
            continue
        sensitive = _sensitive(resolved)
        entries.append(
            CREATE_TOPICS_CONFIG(
                name=config_name,
                value=None if sensitive else resolved.value,
                read_only=resolved.definition.read_only,
                config_source=int(resolved.source),
                is_sensitive=sensitive,
            )
        )
    return CREATE_TOPICS_RESULT(
        name=name,
        topic_id=topic_id,
        error_code=0,
        error_message=None,
        topic_config_error_code=0,
        num_partitions=partitions,
        replication_factor=factor,
        configs=entries,
    )


def _create_topic(state: BrokerState, topic: Any, validate_only: bool) -> Any:
    name = topic.name
    try:
        try:
            validate_topic_name(name)
        except BrokerError as exc:
            raise _from_broker_error(exc) from None
        colliding = _collision(state, name)
        if colliding is not None:
            raise _ApiError(
                ErrorCode.INVALID_TOPIC_EXCEPTION,
                f"Topic '{name}' collides with existing topic: {colliding}",
            )
        if name in state.topics:
            raise _ApiError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
        requested: dict[str, str | None] = {c.name: c.value for c in topic.configs}
        error = _topic_config_error(requested)
        if error is not None:
            raise error
        configs = {k: v for k, v in requested.items() if v is not None}
        partitions, factor, leaders = _plan_topic(state, topic, configs)
        if validate_only:
            topic_id = state.uuid4()
        else:
            try:
                created = state.create_topic(name, partitions, configs, leaders=leaders)
            except BrokerError as exc:
                raise _from_broker_error(exc) from None
            topic_id = created.topic_id
    except _ApiError as exc:
        return CREATE_TOPICS_RESULT(
            name=name,
            topic_id=ZERO_UUID,
            error_code=int(exc.error),
            error_message=exc.message,
            num_partitions=-1,
            replication_factor=-1,
            configs=[],  # Kafka's default: an empty array, not null (FieldSpec.fieldDefault)
        )
    return _created_result(state, name, topic_id, partitions, factor, configs)


@register(19, 0, 7)
def handle_create_topics(
    state: BrokerState, ctx: RequestContext, request: CreateTopicsRequest
) -> Any:
    """CreateTopics (``ControllerApis.createTopics`` and ``ReplicationControlManager``)."""
    validate_only = ctx.api_version >= 1 and bool(request.validate_only)
    counts = Counter(t.name for t in request.topics)
    results = [
        _create_topic(state, topic, validate_only)
        if authorize(state, ctx, "CREATE", CLUSTER, "kafka-cluster")
        or authorize(state, ctx, "CREATE", TOPIC, topic.name)
        else _topic_error_result(topic.name, ErrorCode.TOPIC_AUTHORIZATION_FAILED, None)
        for topic in request.topics
        if counts[topic.name] == 1 and topic.name != CLUSTER_METADATA_TOPIC
    ]
    for name, count in counts.items():
        if count > 1:
            results.append(
                _topic_error_result(name, ErrorCode.INVALID_REQUEST, "Duplicate topic name.")
            )
        elif name == CLUSTER_METADATA_TOPIC:
            results.append(
                _topic_error_result(
                    name,
                    ErrorCode.INVALID_REQUEST,
                    f"Creation of internal topic {CLUSTER_METADATA_TOPIC} is prohibited.",
                )
            )
    return CREATE_TOPICS_RESPONSE(throttle_time_ms=0, topics=results)


def _topic_error_result(name: str, error: ErrorCode, message: str | None) -> Any:
    return CREATE_TOPICS_RESULT(
        name=name,
        topic_id=ZERO_UUID,
        error_code=int(error),
        error_message=message,
        num_partitions=-1,
        replication_factor=-1,
        configs=[],
    )
