"""Admin handlers: topics, partitions, configs, cluster and log dirs, records deletion.

Each follows what a Kafka 3.9 KRaft broker answers: the broker's own ``KafkaApis`` and
``ConfigAdminManager.preprocess`` checks first, then what the active controller
(``ControllerApis``, ``ReplicationControlManager``, ``ConfigurationControlManager``) decides,
with Kafka's error codes and messages. Every partition has one replica, its leader (in an
in-process cluster, ``_cluster``, the nodes share the storage and the controller), so a
replication factor above 1 or a manual assignment naming another node is refused as a one-broker
KRaft cluster refuses it.

Dynamic broker configs (``kafka-configs --entity-type brokers --alter``) are not kept by kwire:
altering a broker resource is refused with ``INVALID_REQUEST`` (Kafka's own message for the
configs Kafka cannot change at runtime either).
"""

from __future__ import annotations

import logging
import os
import re
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final

from kwire.broker._acl import (
    CLUSTER,
    TOPIC,
    authorize,
    authorized_operations,
    config_resource_error,
)
from kwire.broker._alter_replica_log_dirs import log_dirs
from kwire.broker._apis import register
from kwire.broker._client_metrics import alter_client_metrics, client_metrics_configs
from kwire.broker._config import (
    BROKER_CONFIGS,
    TOPIC_CONFIGS,
    ConfigDef,
    ConfigError,
    ConfigSource,
    ConfigType,
    ResolvedConfig,
    listed_in,
    resolve_broker_configs,
    resolve_topic_configs,
    validate_topic_configs,
)
from kwire.broker._context import RequestContext
from kwire.broker._data import NO_OPERATIONS
from kwire.broker._routing import leader_error, live_nodes, serving_node
from kwire.broker._share_service import alter_group_configs, describe_group_configs
from kwire.broker._state import BrokerError, BrokerState, Topic, validate_topic_name
from kwire.log import OffsetOutOfRangeError
from kwire.log.metadata import CLUSTER_METADATA_TOPIC
from kwire.protocol import ErrorCode
from kwire.protocol.messages import (
    AlterConfigsRequest,
    AlterConfigsResponse,
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeleteRecordsRequest,
    DeleteRecordsResponse,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    DescribeClusterRequest,
    DescribeClusterResponse,
    DescribeConfigsRequest,
    DescribeConfigsResponse,
    DescribeLogDirsRequest,
    DescribeLogDirsResponse,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
)

__all__ = [
    "handle_alter_configs",
    "handle_create_partitions",
    "handle_create_topics",
    "handle_delete_records",
    "handle_delete_topics",
    "handle_describe_cluster",
    "handle_describe_configs",
    "handle_describe_log_dirs",
    "handle_incremental_alter_configs",
]

log = logging.getLogger("kwire.broker")

ZERO_UUID: Final = uuid.UUID(int=0)

# ConfigResource.Type ids
RESOURCE_TOPIC: Final = 2
RESOURCE_BROKER: Final = 4
RESOURCE_BROKER_LOGGER: Final = 8
RESOURCE_CLIENT_METRICS: Final = 16
RESOURCE_GROUP: Final = 32
_RESOURCE_NAMES: Final = {
    RESOURCE_TOPIC: "TOPIC",
    RESOURCE_BROKER: "BROKER",
    RESOURCE_BROKER_LOGGER: "BROKER_LOGGER",
    RESOURCE_CLIENT_METRICS: "CLIENT_METRICS",
    RESOURCE_GROUP: "GROUP",
}

# AlterConfigOp.OpType ids
OP_SET: Final = 0
OP_DELETE: Final = 1
OP_APPEND: Final = 2
OP_SUBTRACT: Final = 3
_OP_NAMES: Final = {
    OP_SET: "SET",
    OP_DELETE: "DELETE",
    OP_APPEND: "APPEND",
    OP_SUBTRACT: "SUBTRACT",
}

# DescribeCluster endpoint types (KIP-919)
ENDPOINT_BROKER: Final = 1
ENDPOINT_CONTROLLER: Final = 2
_ENDPOINT_NAMES: Final = {ENDPOINT_BROKER: "BROKER", ENDPOINT_CONTROLLER: "CONTROLLER"}

#: Broker configs a Kafka broker may change at runtime (``DynamicBrokerConfig.AllDynamicConfigs``
#: restricted to the ones kwire knows): the broker synonyms of topic configs, except the message
#: format (``DynamicLogConfig.ReconfigurableConfigs``).
DYNAMIC_BROKER_CONFIGS: Final = frozenset(
    d.synonym
    for d in TOPIC_CONFIGS.values()
    if d.synonym is not None and d.synonym != "log.message.format.version"
)

CREATE_TOPICS_RESPONSE: Final = CreateTopicsResponse
CREATE_TOPICS_RESULT: Final = CreateTopicsResponse.CreatableTopicResult
CREATE_TOPICS_CONFIG: Final = CreateTopicsResponse.CreatableTopicConfigs
DELETE_TOPICS_RESPONSE: Final = DeleteTopicsResponse
DELETE_TOPICS_RESULT: Final = DeleteTopicsResponse.DeletableTopicResult
CREATE_PARTITIONS_RESPONSE: Final = CreatePartitionsResponse
CREATE_PARTITIONS_RESULT: Final = CreatePartitionsResponse.CreatePartitionsTopicResult
DESCRIBE_CONFIGS_RESPONSE: Final = DescribeConfigsResponse
DESCRIBE_CONFIGS_RESULT: Final = DescribeConfigsResponse.DescribeConfigsResult
DESCRIBE_CONFIGS_ENTRY: Final = DescribeConfigsResponse.DescribeConfigsResourceResult
DESCRIBE_CONFIGS_SYNONYM: Final = DescribeConfigsResponse.DescribeConfigsSynonym
ALTER_CONFIGS_RESPONSE: Final = AlterConfigsResponse
ALTER_CONFIGS_RESULT: Final = AlterConfigsResponse.AlterConfigsResourceResponse
INCREMENTAL_ALTER_CONFIGS_RESPONSE: Final = IncrementalAlterConfigsResponse
INCREMENTAL_ALTER_CONFIGS_RESULT: Final = (
    IncrementalAlterConfigsResponse.AlterConfigsResourceResponse
)
DESCRIBE_CLUSTER_RESPONSE: Final = DescribeClusterResponse
DESCRIBE_CLUSTER_BROKER: Final = DescribeClusterResponse.DescribeClusterBroker
DESCRIBE_LOG_DIRS_RESPONSE: Final = DescribeLogDirsResponse
DESCRIBE_LOG_DIRS_RESULT: Final = DescribeLogDirsResponse.DescribeLogDirsResult
DESCRIBE_LOG_DIRS_TOPIC: Final = DescribeLogDirsResponse.DescribeLogDirsTopic
DESCRIBE_LOG_DIRS_PARTITION: Final = DescribeLogDirsResponse.DescribeLogDirsPartition
DELETE_RECORDS_RESPONSE: Final = DeleteRecordsResponse
DELETE_RECORDS_TOPIC: Final = DeleteRecordsResponse.DeleteRecordsTopicResult
DELETE_RECORDS_PARTITION: Final = DeleteRecordsResponse.DeleteRecordsPartitionResult

_JAVA_INT: Final = re.compile(r"^[+-]?[0-9]+$")
_INT_MIN, _INT_MAX = -(2**31), 2**31 - 1


class _ApiError(Exception):
    """An ``ApiError`` (code and message, the message ``None`` when Kafka sends none)."""

    def __init__(self, error: ErrorCode, message: str | None = None) -> None:
        super().__init__(message or error.name)
        self.error = error
        self.message = message


def _from_broker_error(exc: BrokerError) -> _ApiError:
    return _ApiError(exc.error, exc.message)


def _java_int(text: str) -> int | None:
    """``Integer.parseInt``: ``None`` where Java throws ``NumberFormatException``."""
    if not _JAVA_INT.match(text):
        return None
    value = int(text)
    return value if _INT_MIN <= value <= _INT_MAX else None


def _java_split(text: str, sep: str = ",") -> list[str]:
    """``String.split``: trailing empty strings dropped."""
    parts = text.split(sep)
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def _scala_set(names: Iterable[str]) -> str:
    return "Set(" + ", ".join(names) + ")"


def _collision(state: BrokerState, name: str) -> str | None:
    """The existing topic ``name`` collides with (``.`` and ``_`` unified), if any."""
    if "." not in name and "_" not in name:
        return None
    key = name.replace(".", "_")
    for existing in state.topics:
        if existing != name and existing.replace(".", "_") == key:
            return existing
    return None


def _topic_config_error(configs: Mapping[str, str | None]) -> _ApiError | None:
    nulls = [name for name, value in configs.items() if value is None]
    if nulls:
        return _ApiError(
            ErrorCode.INVALID_CONFIG,
            "Null value not supported for topic configs: " + ",".join(nulls),
        )
    try:
        validate_topic_configs(configs)
    except ConfigError as exc:
        return _ApiError(ErrorCode.INVALID_CONFIG, str(exc))
    return None


def _check_manual_assignment(
    state: BrokerState, replicas: Sequence[int], replication_factor: int | None, index: int
) -> int:
    """``ReplicationControlManager.validateManualPartitionAssignment``, then the leader the
    controller picks for partition ``index``: the first replica that is not fenced (every
    node of an in-process cluster is registered, a stopped one fenced)."""
    if not replicas:
        raise _ApiError(
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            "The manual partition assignment includes an empty replica list.",
        )
    previous: int | None = None
    for broker_id in sorted(replicas):
        if broker_id not in state.nodes:
            raise _ApiError(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                f"The manual partition assignment includes broker {broker_id}, but no such "
                "broker is registered.",
            )
        if broker_id == previous:
            raise _ApiError(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                f"The manual partition assignment includes the broker {previous} more than once.",
            )
        previous = broker_id
    if replication_factor is not None and len(replicas) != replication_factor:
        raise _ApiError(
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            f"The manual partition assignment includes a partition with {len(replicas)} "
            "replica(s), but this is not consistent with previous partitions, which have "
            f"{replication_factor} replica(s).",
        )
    for broker_id in replicas:
        if broker_id in state.live_brokers:
            return broker_id
    raise _ApiError(
        ErrorCode.INVALID_REPLICA_ASSIGNMENT,
        f"All brokers specified in the manual partition assignment for partition {index} are "
        "fenced or in controlled shutdown.",
    )


def _placement_error(replication_factor: int, brokers: int = 1) -> _ApiError:
    """What ``StripedReplicaPlacer`` says when the registered brokers cannot hold N replicas."""
    return _ApiError(
        ErrorCode.INVALID_REPLICATION_FACTOR,
        f"Unable to replicate the partition {replication_factor} time(s): The target "
        f"replication factor of {replication_factor} cannot be reached because only "
        f"{brokers} broker(s) are registered.",
    )


# --- CreateTopics -----------------------------------------------------------------------------


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


# --- DeleteTopics -----------------------------------------------------------------------------


def _deleted(name: str | None, topic_id: uuid.UUID, error: ErrorCode, message: str | None) -> Any:
    return DELETE_TOPICS_RESULT(
        name=name, topic_id=topic_id, error_code=int(error), error_message=message
    )


@register(20, 0, 6)
def handle_delete_topics(
    state: BrokerState, ctx: RequestContext, request: DeleteTopicsRequest
) -> Any:
    """DeleteTopics (``ControllerApis.deleteTopics``): by name, or by id from v6.

    Internal topics are not refused: a KRaft controller deletes ``__consumer_offsets`` when
    asked (only the ZooKeeper-era paths refused it).
    """
    version = ctx.api_version
    wanted: list[tuple[str | None, uuid.UUID]] = (
        [(t.name, t.topic_id) for t in request.topics]
        if version >= 6
        else [(name, ZERO_UUID) for name in request.topic_names]
    )
    if (state.broker_config("delete.topic.enable") or "true").lower() != "true":
        # DeleteTopicsRequest.getErrorResponse: every topic, no message
        error = ErrorCode.INVALID_REQUEST if version < 3 else ErrorCode.TOPIC_DELETION_DISABLED
        return DELETE_TOPICS_RESPONSE(
            throttle_time_ms=0,
            responses=[_deleted(name, tid, error, None) for name, tid in wanted],
        )
    responses: list[Any] = []
    names: dict[str, None] = {}
    duplicate_names: dict[str, None] = {}
    ids: dict[uuid.UUID, None] = {}
    duplicate_ids: dict[uuid.UUID, None] = {}

    def add_name(name: str) -> None:
        if name in duplicate_names or name in names:
            duplicate_names[name] = None
            names.pop(name, None)
        else:
            names[name] = None

    for name, topic_id in wanted:
        if name is None:
            if topic_id == ZERO_UUID:
                responses.append(
                    _deleted(
                        None,
                        ZERO_UUID,
                        ErrorCode.INVALID_REQUEST,
                        "Neither topic name nor id were specified.",
                    )
                )
            elif topic_id in duplicate_ids or topic_id in ids:
                duplicate_ids[topic_id] = None
                ids.pop(topic_id, None)
            else:
                ids[topic_id] = None
        elif topic_id == ZERO_UUID:
            add_name(name)
        else:
            responses.append(
                _deleted(
                    name,
                    topic_id,
                    ErrorCode.INVALID_REQUEST,
                    "You may not specify both topic name and topic id.",
                )
            )
    for name in duplicate_names:
        responses.append(
            _deleted(name, ZERO_UUID, ErrorCode.INVALID_REQUEST, "Duplicate topic name.")
        )
    for topic_id in duplicate_ids:
        responses.append(_deleted(None, topic_id, ErrorCode.INVALID_REQUEST, "Duplicate topic id."))
    to_delete: dict[uuid.UUID, Topic] = {}
    for topic_id in ids:
        found = state.topics_by_id.get(topic_id)
        if found is None or not authorize(state, ctx, "DESCRIBE", TOPIC, found.name):
            responses.append(_deleted(None, topic_id, ErrorCode.UNKNOWN_TOPIC_ID, None))
        elif not authorize(state, ctx, "DELETE", TOPIC, found.name):
            error = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            responses.append(_deleted(None, topic_id, error, None))
        else:
            to_delete[topic_id] = found
    for name in names:
        found = state.topics.get(name)
        if not authorize(state, ctx, "DELETE", TOPIC, name):
            error = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            responses.append(_deleted(name, ZERO_UUID, error, None))
            continue
        if found is None:
            responses.append(_deleted(name, ZERO_UUID, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None))
            continue
        topic_id = found.topic_id
        if topic_id in duplicate_ids or topic_id in to_delete:
            duplicate_ids[topic_id] = None
            to_delete.pop(topic_id, None)
            responses.append(
                _deleted(
                    name,
                    topic_id,
                    ErrorCode.INVALID_REQUEST,
                    "The provided topic name maps to an ID that was already supplied.",
                )
            )
        else:
            to_delete[topic_id] = found
    for topic_id, topic in to_delete.items():
        state.delete_topic(topic.name)
        responses.append(_deleted(topic.name, topic_id, ErrorCode.NONE, None))
    return DELETE_TOPICS_RESPONSE(throttle_time_ms=0, responses=responses)


# --- CreatePartitions -------------------------------------------------------------------------


def _check_new_partitions(state: BrokerState, wanted: Any) -> tuple[Topic, list[int] | None]:
    """The topic and the leaders of the new partitions when ``wanted`` assigns them
    (``ReplicationControlManager.createPartitions``)."""
    topic = state.topics.get(wanted.name)
    if topic is None:
        raise _ApiError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    current = len(topic.partitions)
    if wanted.count == current:
        raise _ApiError(ErrorCode.INVALID_PARTITIONS, f"Topic already has {current} partition(s).")
    if wanted.count < current:
        raise _ApiError(
            ErrorCode.INVALID_PARTITIONS,
            f"The topic {wanted.name} currently has {current} partition(s); {wanted.count} "
            "would not be an increase.",
        )
    additional = wanted.count - current
    if wanted.assignments is not None:
        if len(wanted.assignments) != additional:
            raise _ApiError(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                f"Attempted to add {additional} additional partition(s), but only "
                f"{len(wanted.assignments)} assignment(s) were specified.",
            )
        # Every partition of a kwire topic has one replica: the factor new ones must match.
        return topic, [
            _check_manual_assignment(state, assignment.broker_ids, 1, current + i)
            for i, assignment in enumerate(wanted.assignments)
        ]
    return topic, None


@register(37, 0, 3)
def handle_create_partitions(
    state: BrokerState, ctx: RequestContext, request: CreatePartitionsRequest
) -> Any:
    """CreatePartitions (``ControllerApis.createPartitions``, ``ReplicationControlManager``)."""
    counts = Counter(t.name for t in request.topics)
    results = [
        CREATE_PARTITIONS_RESULT(
            name=name,
            error_code=int(ErrorCode.INVALID_REQUEST),
            error_message="Duplicate topic name.",
        )
        for name, count in counts.items()
        if count > 1
    ]
    for wanted in request.topics:
        if counts[wanted.name] > 1:
            continue
        if not authorize(state, ctx, "ALTER", TOPIC, wanted.name):
            error = int(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
            results.append(
                CREATE_PARTITIONS_RESULT(name=wanted.name, error_code=error, error_message=None)
            )
            continue
        try:
            topic, leaders = _check_new_partitions(state, wanted)
            if not request.validate_only:
                state.create_partitions(topic.name, wanted.count, leaders)
        except _ApiError as exc:
            results.append(
                CREATE_PARTITIONS_RESULT(
                    name=wanted.name, error_code=int(exc.error), error_message=exc.message
                )
            )
            continue
        results.append(CREATE_PARTITIONS_RESULT(name=wanted.name, error_code=0, error_message=None))
    return CREATE_PARTITIONS_RESPONSE(throttle_time_ms=0, results=results)


# --- DescribeConfigs --------------------------------------------------------------------------


def _sensitive(resolved: ResolvedConfig) -> bool:
    return resolved.definition.sensitive or resolved.definition.type is ConfigType.PASSWORD


def _config_entry(resolved: ResolvedConfig, read_only: bool, include_synonyms: bool) -> Any:
    sensitive = _sensitive(resolved)
    synonyms = (
        [
            DESCRIBE_CONFIGS_SYNONYM(
                name=name, value=None if sensitive else value, source=int(source)
            )
            for name, value, source in resolved.synonyms
        ]
        if include_synonyms
        else []
    )
    return DESCRIBE_CONFIGS_ENTRY(
        name=resolved.name,
        value=None if sensitive else resolved.value,
        read_only=read_only,
        is_default=resolved.source is ConfigSource.DEFAULT_CONFIG,
        config_source=int(resolved.source),
        is_sensitive=sensitive,
        synonyms=synonyms,
        config_type=int(resolved.definition.type),
        documentation=None,
    )


def _broker_configs(state: BrokerState, node: int) -> dict[str, ResolvedConfig]:
    """The node's configs, as its release lists them, each from the most specific layer (this
    node's dynamic configs, the cluster-wide dynamic defaults, the static ones, Kafka's
    defaults) with the others as synonyms; its id, data dir and listeners as this node runs with
    them (Kafka shows them as the server.properties it was started with: ``STATIC_BROKER_CONFIG``)."""
    release = state.personality.release
    resolved = {
        name: r
        for name, r in resolve_broker_configs(state.static_config).items()
        if listed_in(name, release)
    }
    layers = (
        (state.dynamic_broker_configs(str(node)), ConfigSource.DYNAMIC_BROKER_CONFIG),
        (state.dynamic_broker_configs(""), ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
    )
    for name, r in list(resolved.items()):
        above = [(name, layer[name], source) for layer, source in layers if name in layer]
        if above:
            value, source = above[0][1], above[0][2]
            resolved[name] = ResolvedConfig(
                name, value, source, r.definition, (*above, *r.synonyms)
            )
    endpoints = state.live_brokers.get(node) or {}
    actual = {
        "broker.id": str(node),
        "node.id": str(node),
        "log.dirs": ",".join(d.path for d in state.data_dirs)
        if len(state.data_dirs) > 1
        else state.path,
        "process.roles": "broker,controller",  # a combined-mode KRaft node (_metadata_log)
        "advertised.listeners": ",".join(
            f"{name}://{host}:{port}" for name, (host, port) in endpoints.items()
        ),
    }
    if "PLAINTEXT" in endpoints:
        # used when no ``listeners`` is given: the PLAINTEXT listener, bound where advertised
        actual["listeners"] = f"PLAINTEXT://{state.host}:{endpoints['PLAINTEXT'][1]}"
    for name, value in actual.items():
        if name in resolved and name not in state.static_config:
            source = ConfigSource.STATIC_BROKER_CONFIG
            resolved[name] = ResolvedConfig(
                name, value, source, BROKER_CONFIGS[name], ((name, value, source),)
            )
    return resolved


def _default_broker_configs(state: BrokerState) -> list[ResolvedConfig]:
    """The cluster-wide dynamic defaults (the BROKER resource named ``""``)."""
    source = ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
    return [
        ResolvedConfig(name, value, source, BROKER_CONFIGS[name], ((name, value, source),))
        for name, value in sorted(state.dynamic_broker_configs("").items())
        if name in BROKER_CONFIGS
    ]


def _broker_id(text: str, message: str) -> int:
    value = _java_int(text)
    if value is None:
        raise _ApiError(ErrorCode.INVALID_REQUEST, message + text)
    return value


_LOG4J_LEVELS: Final = {"TRACE": 5, "DEBUG": 10, "INFO": 20, "WARN": 30, "ERROR": 40, "FATAL": 50}
ROOT_LOGGER: Final = "root"


def _log4j_level(level: int) -> str:
    name = "TRACE"
    for candidate, number in _LOG4J_LEVELS.items():
        if level >= number:
            name = candidate
    return name


def _loggers() -> dict[str, logging.Logger]:
    found: dict[str, logging.Logger] = {ROOT_LOGGER: logging.getLogger()}
    for name, item in sorted(logging.Logger.manager.loggerDict.items()):
        if isinstance(item, logging.Logger):
            found[name] = item
    return found


def _describe_resource(
    state: BrokerState, node: int, resource: Any, include_synonyms: bool
) -> list[Any]:
    kind, name = resource.resource_type, resource.resource_name
    if kind == RESOURCE_TOPIC:
        try:
            validate_topic_name(name)
        except BrokerError as exc:
            raise _from_broker_error(exc) from None
        topic = state.topics.get(name)
        if topic is None:
            raise _ApiError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        resolved = resolve_topic_configs(topic.configs, state.broker_settings)
        release = state.personality.release
        return [
            _config_entry(r, False, include_synonyms)
            for r in resolved.values()
            if listed_in(r.name, release)
        ]
    if kind == RESOURCE_BROKER:
        if not name:
            return [
                _config_entry(r, False, include_synonyms) for r in _default_broker_configs(state)
            ]
        broker = _broker_id(name, "Broker id must be an integer, but it is: ")
        if broker != node:
            raise _ApiError(
                ErrorCode.INVALID_REQUEST,
                f"Unexpected broker id, expected {node} or empty string, but received {name}",
            )
        return [
            _config_entry(
                r,
                r.name not in DYNAMIC_BROKER_CONFIGS or r.definition.read_only,
                include_synonyms,
            )
            for r in _broker_configs(state, node).values()
        ]
    if kind == RESOURCE_BROKER_LOGGER:
        if not name:
            raise _ApiError(ErrorCode.INVALID_REQUEST, "Broker id must not be empty")
        broker = _broker_id(name, "Broker id must be an integer, but it is: ")
        if broker != state.node_id:
            raise _ApiError(
                ErrorCode.INVALID_REQUEST,
                f"Unexpected broker id, expected {state.node_id} but received {name}",
            )
        return [
            DESCRIBE_CONFIGS_ENTRY(
                name=logger_name,
                value=_log4j_level(logger.getEffectiveLevel()),
                read_only=False,
                is_default=False,
                config_source=int(ConfigSource.DYNAMIC_BROKER_LOGGER_CONFIG),
                is_sensitive=False,
                synonyms=[],
                config_type=int(ConfigType.UNKNOWN),
                documentation=None,
            )
            for logger_name, logger in _loggers().items()
        ]
    if kind == RESOURCE_GROUP:  # share-group configs (_share_service)
        return [
            DESCRIBE_CONFIGS_ENTRY(
                name=config,
                value=value,
                read_only=False,
                is_default=default,
                config_source=int(
                    ConfigSource.DEFAULT_CONFIG if default else ConfigSource.GROUP_CONFIG
                ),
                is_sensitive=False,
                synonyms=[],
                config_type=int(ConfigType.INT if config.endswith(".ms") else ConfigType.STRING),
                documentation=None,
            )
            for config, value, default in describe_group_configs(state, name)
        ]
    if kind == RESOURCE_CLIENT_METRICS:
        if not name:
            raise _ApiError(
                ErrorCode.INVALID_REQUEST, "Client metrics subscription name must not be empty"
            )
        return [
            DESCRIBE_CONFIGS_ENTRY(
                name=config,
                value=value,
                read_only=False,
                is_default=False,
                config_source=int(ConfigSource.CLIENT_METRICS_CONFIG),
                is_sensitive=False,
                synonyms=[],
                config_type=int(ConfigType.UNKNOWN),
                documentation=None,
            )
            for config, value in sorted(client_metrics_configs(state, name).items())
        ]
    raise _ApiError(
        ErrorCode.INVALID_REQUEST,
        f"Unexpected resource type {_RESOURCE_NAMES.get(kind, 'UNKNOWN')} for resource {name}",
    )


@register(32, 0, 4)
def handle_describe_configs(
    state: BrokerState, ctx: RequestContext, request: DescribeConfigsRequest
) -> Any:
    """DescribeConfigs (``ConfigHelper.describeConfigs``)."""
    include_synonyms = ctx.api_version >= 1 and bool(request.include_synonyms)
    results = []
    for resource in request.resources:
        try:
            denied = config_resource_error(state, ctx, resource, "DESCRIBE_CONFIGS")
            if denied is not None:
                raise _ApiError(denied)
            entries = _describe_resource(
                state, serving_node(state, ctx), resource, include_synonyms
            )
        except _ApiError as exc:
            results.append(
                DESCRIBE_CONFIGS_RESULT(
                    error_code=int(exc.error),
                    error_message=exc.message,
                    resource_type=resource.resource_type,
                    resource_name=resource.resource_name,
                    configs=[],
                )
            )
            continue
        keys = resource.configuration_keys
        if keys:
            wanted = set(keys)
            entries = [e for e in entries if e.name in wanted]
        if ctx.api_version != 0:
            for entry in entries:
                entry.is_default = False  # a v0-only field (v1+ has config_source)
        results.append(
            DESCRIBE_CONFIGS_RESULT(
                error_code=0,
                error_message=None,
                resource_type=resource.resource_type,
                resource_name=resource.resource_name,
                configs=entries,
            )
        )
    return DESCRIBE_CONFIGS_RESPONSE(throttle_time_ms=0, results=results)


# --- AlterConfigs and IncrementalAlterConfigs -------------------------------------------------


def _duplicate_resources(resources: Sequence[Any]) -> set[int]:
    """Indexes of resources named more than once (``ConfigAdminManager.preprocess``)."""
    counts = Counter((r.resource_type, r.resource_name) for r in resources)
    return {i for i, r in enumerate(resources) if counts[(r.resource_type, r.resource_name)] > 1}


def _check_common(resource: Any, nullable_op: bool) -> None:
    """Duplicate keys and null values (``ConfigAdminManager.preprocess``)."""
    names = [c.name for c in resource.configs]
    if len(set(names)) != len(names):
        raise _ApiError(ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys")
    nulls = [
        c.name
        for c in resource.configs
        if c.value is None and not (nullable_op and c.config_operation == OP_DELETE)
    ]
    if nulls:
        raise _ApiError(
            ErrorCode.INVALID_REQUEST, "Null value not supported for : " + ", ".join(nulls)
        )


def _check_broker_change(
    state: BrokerState, name: str, configs: Mapping[str, str], deleted: Sequence[str] = ()
) -> None:
    """A broker resource: this node or the cluster default (``""``); only configs Kafka lets
    change without a restart, with values its definitions accept
    (``ControllerConfigurationValidator``, ``DynamicBrokerConfig.validate``)."""
    if name:
        node = _java_int(name)
        if node is None:
            raise _ApiError(
                ErrorCode.INVALID_REQUEST, f"Node id must be an integer, but it is: {name}"
            )
        if node != state.node_id:
            raise _ApiError(
                ErrorCode.INVALID_REQUEST,
                f"Unexpected broker id, expected {state.node_id}, but received {name}",
            )
    static = [n for n in [*configs, *deleted] if n not in DYNAMIC_BROKER_CONFIGS]
    if static:
        raise _ApiError(
            ErrorCode.INVALID_REQUEST,
            f"Cannot update these configs dynamically: {_scala_set(static)}",
        )
    for key, value in configs.items():
        try:
            BROKER_CONFIGS[key].validate(value)
        except ConfigError as exc:
            raise _ApiError(ErrorCode.INVALID_CONFIG, str(exc)) from None


def _apply_incremental_ops(
    current: Mapping[str, str],
    ops: Sequence[Any],
    definitions: Mapping[str, ConfigDef],
    effective: Callable[[str, ConfigDef], str | None],
) -> dict[str, str | None]:
    """``ConfigurationControlManager.incrementalAlterConfigResource``'s merge: SET, DELETE, and
    APPEND/SUBTRACT on LIST configs (over ``effective``, the value in force when the resource has
    none of its own); anything else is INVALID_CONFIG."""
    merged: dict[str, str | None] = dict(current)
    for op in ops:
        key, value = op.name, op.value
        if op.config_operation == OP_SET:
            merged[key] = value
        elif op.config_operation == OP_DELETE:
            merged.pop(key, None)
        else:  # APPEND, SUBTRACT
            definition = definitions.get(key)
            if definition is None or definition.type is not ConfigType.LIST:
                raise _ApiError(
                    ErrorCode.INVALID_CONFIG,
                    f"Can't {_OP_NAMES[op.config_operation]} to key {key} because its type is "
                    "not LIST.",
                )
            old = current.get(key)
            if old is None:
                old = effective(key, definition)
            parts = [p for p in _java_split(old or "") if p]
            for item in _java_split(value or ""):
                if op.config_operation == OP_APPEND:
                    if item not in parts:
                        parts.append(item)
                elif item in parts:
                    parts.remove(item)
            merged[key] = ",".join(parts)
    return merged


def _incremental_broker(state: BrokerState, name: str, ops: Sequence[Any]) -> dict[str, str]:
    """``ConfigurationControlManager.incrementalAlterConfigResource`` for a BROKER resource."""
    merged = {
        k: v
        for k, v in _apply_incremental_ops(
            state.dynamic_broker_configs(name),
            ops,
            BROKER_CONFIGS,
            lambda key, _definition: state.broker_config(key),
        ).items()
        if v is not None
    }
    _check_broker_change(
        state,
        name,
        {op.name: merged[op.name] for op in ops if op.name in merged},
        [op.name for op in ops if op.name not in merged],
    )
    return merged


def _check_topic_resource(state: BrokerState, name: str, configs: Mapping[str, str]) -> Topic:
    """``ControllerConfigurationValidator.validate`` then the existence check."""
    if not name:
        raise _ApiError(ErrorCode.INVALID_REQUEST, "Default topic resources are not allowed.")
    try:
        validate_topic_name(name)
    except BrokerError as exc:
        raise _from_broker_error(exc) from None
    error = _topic_config_error(configs)
    if error is not None:
        raise error
    topic = state.topics.get(name)
    if topic is None:
        raise _ApiError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{name}' does not exist.")
    return topic


def _alter_result(cls: Any, resource: Any, error: _ApiError | None) -> Any:
    return cls(
        error_code=0 if error is None else int(error.error),
        error_message=None if error is None else error.message,
        resource_type=resource.resource_type,
        resource_name=resource.resource_name,
    )


def _legacy_alter(state: BrokerState, resource: Any, validate_only: bool) -> None:
    _check_common(resource, nullable_op=False)
    kind, name = resource.resource_type, resource.resource_name
    if kind == RESOURCE_BROKER:
        configs = {c.name: c.value for c in resource.configs}
        _check_broker_change(state, name, configs)
        if not validate_only:
            state.set_dynamic_broker_configs(name, configs)
        return
    if kind != RESOURCE_TOPIC:
        raise _ApiError(ErrorCode.INVALID_REQUEST, f"Unknown resource type {kind}")
    configs = {c.name: c.value for c in resource.configs}
    topic = _check_topic_resource(state, name, configs)
    if not validate_only:
        state.set_topic_configs(topic.name, configs)


@register(33, 0, 2)
def handle_alter_configs(
    state: BrokerState, ctx: RequestContext, request: AlterConfigsRequest
) -> Any:
    """AlterConfigs: a resource's whole override set replaced (``legacyAlterConfigs``)."""
    responses = _alter_each(state, ctx, request, _legacy_alter, ALTER_CONFIGS_RESULT)
    return ALTER_CONFIGS_RESPONSE(throttle_time_ms=0, responses=responses)


def _alter_each(
    state: BrokerState,
    ctx: RequestContext,
    request: Any,
    alter: Callable[[BrokerState, Any, bool], None],
    result_cls: Any,
) -> list[Any]:
    """Both AlterConfigs APIs: a resource named twice is INVALID_REQUEST, each other one is
    authorized then altered (or only checked with ``validate_only``), one result each."""
    duplicates = _duplicate_resources(request.resources)
    responses = []
    for i, resource in enumerate(request.resources):
        error: _ApiError | None = None
        if i in duplicates:
            error = _ApiError(ErrorCode.INVALID_REQUEST, "Each resource must appear at most once.")
        else:
            try:
                denied = config_resource_error(state, ctx, resource, "ALTER_CONFIGS")
                if denied is not None:
                    raise _ApiError(denied)
                alter(state, resource, bool(request.validate_only))
            except _ApiError as exc:
                error = exc
        responses.append(_alter_result(result_cls, resource, error))
    return responses


def _incremental_topic(
    state: BrokerState, name: str, ops: Sequence[Any]
) -> tuple[Topic, dict[str, str]]:
    """``ConfigurationControlManager.incrementalAlterConfigResource`` for a topic."""
    found = state.topics.get(name)
    merged = _apply_incremental_ops(
        dict(found.configs) if found is not None else {},
        ops,
        TOPIC_CONFIGS,
        lambda _key, definition: definition.default,
    )
    configs = {k: v for k, v in merged.items() if v is not None}
    topic = _check_topic_resource(state, name, configs)
    return topic, configs


def _incremental_alter_logger(state: BrokerState, resource: Any, validate_only: bool) -> None:
    """``RuntimeLoggerManager.applyChangesForResource``, over Python's ``logging``."""
    name = resource.resource_name
    node = _java_int(name)
    if node is None:
        raise _ApiError(ErrorCode.INVALID_REQUEST, f"Node id must be an integer, but it is: {name}")
    if node != state.node_id:
        # (sic) Kafka 3.9 prints its own node id twice
        raise _ApiError(
            ErrorCode.INVALID_REQUEST,
            f"Unexpected node id. Expected {state.node_id}, but received {state.node_id}",
        )
    loggers = _loggers()
    for op in resource.configs:
        kind = op.config_operation
        if kind in (OP_SET, OP_DELETE) and op.name not in loggers:
            raise _ApiError(ErrorCode.INVALID_CONFIG, f"Logger {op.name} does not exist!")
        if kind == OP_SET:
            if op.value not in _LOG4J_LEVELS:
                raise _ApiError(
                    ErrorCode.INVALID_CONFIG,
                    f"Cannot set the log level of {op.name} to {op.value} as it is not a "
                    "supported log level. Valid log levels are " + ", ".join(sorted(_LOG4J_LEVELS)),
                )
        elif kind == OP_DELETE:
            if op.name == ROOT_LOGGER:
                raise _ApiError(
                    ErrorCode.INVALID_REQUEST,
                    f"Removing the log level of the {ROOT_LOGGER} logger is not allowed",
                )
        elif kind in (OP_APPEND, OP_SUBTRACT):
            raise _ApiError(
                ErrorCode.INVALID_REQUEST,
                f"{_OP_NAMES[kind]} operation is not allowed for the BROKER_LOGGER resource",
            )
        else:
            raise _ApiError(
                ErrorCode.INVALID_REQUEST,
                f"Unknown operation type {kind} is not allowed for the BROKER_LOGGER resource",
            )
    if validate_only:
        return
    for op in resource.configs:
        logger = loggers[op.name]
        if op.config_operation == OP_SET:
            logger.setLevel(_LOG4J_LEVELS[op.value])
        else:
            logger.setLevel(logging.NOTSET)


def _incremental_alter(state: BrokerState, resource: Any, validate_only: bool) -> None:
    _check_common(resource, nullable_op=True)
    kind, name = resource.resource_type, resource.resource_name
    for op in resource.configs:
        if op.config_operation not in _OP_NAMES and kind != RESOURCE_BROKER_LOGGER:
            raise _ApiError(
                ErrorCode.INVALID_REQUEST, f"Unknown operations type {op.config_operation}"
            )
    if kind == RESOURCE_BROKER_LOGGER:
        _incremental_alter_logger(state, resource, validate_only)
        return
    if kind == RESOURCE_BROKER:
        merged = _incremental_broker(state, name, resource.configs)
        if not validate_only:
            state.set_dynamic_broker_configs(name, merged)
        return
    if kind == RESOURCE_GROUP:  # share-group configs (_share_service)
        ops = [(op.config_operation, op.name, op.value) for op in resource.configs]
        problem = alter_group_configs(state, name, ops, validate_only)
        if problem is not None:
            raise _ApiError(ErrorCode.INVALID_CONFIG, problem)
        return
    if kind == RESOURCE_CLIENT_METRICS:
        ops = [(op.config_operation, op.name, op.value) for op in resource.configs]
        failure = alter_client_metrics(state, name, ops, validate_only)
        if failure is not None:
            raise _ApiError(*failure)
        return
    if kind != RESOURCE_TOPIC:
        raise _ApiError(ErrorCode.INVALID_REQUEST, f"Unknown resource type {kind}")
    topic, configs = _incremental_topic(state, name, resource.configs)
    if not validate_only and configs != topic.configs:
        state.set_topic_configs(topic.name, configs)


@register(44, 0, 1)
def handle_incremental_alter_configs(
    state: BrokerState, ctx: RequestContext, request: IncrementalAlterConfigsRequest
) -> Any:
    """IncrementalAlterConfigs: SET, DELETE, APPEND and SUBTRACT (KIP-339)."""
    responses = _alter_each(
        state, ctx, request, _incremental_alter, INCREMENTAL_ALTER_CONFIGS_RESULT
    )
    return INCREMENTAL_ALTER_CONFIGS_RESPONSE(throttle_time_ms=0, responses=responses)


# --- DescribeCluster --------------------------------------------------------------------------


@register(60, 0, 2)
def handle_describe_cluster(
    state: BrokerState, ctx: RequestContext, request: DescribeClusterRequest
) -> Any:
    """DescribeCluster (``AuthHelper.computeDescribeClusterResponse`` on a broker endpoint)."""
    version = ctx.api_version
    endpoint = request.endpoint_type if version >= 1 else ENDPOINT_BROKER
    if endpoint not in _ENDPOINT_NAMES:
        return DESCRIBE_CLUSTER_RESPONSE(
            throttle_time_ms=0,
            error_code=int(
                ErrorCode.INVALID_REQUEST if version == 0 else ErrorCode.UNSUPPORTED_ENDPOINT_TYPE
            ),
            error_message=f"Unsupported endpoint type {endpoint}",
            cluster_id="",
            controller_id=-1,
            brokers=[],
        )
    if endpoint != ENDPOINT_BROKER:
        return DESCRIBE_CLUSTER_RESPONSE(
            throttle_time_ms=0,
            error_code=int(
                ErrorCode.INVALID_REQUEST if version == 0 else ErrorCode.MISMATCHED_ENDPOINT_TYPE
            ),
            error_message="The request was sent to an endpoint of type BROKER, but we wanted an "
            f"endpoint of type {_ENDPOINT_NAMES[endpoint]}",
            cluster_id="",
            controller_id=-1,
            brokers=[],
        )
    brokers = [
        DESCRIBE_CLUSTER_BROKER(
            broker_id=node,
            host=host,
            port=port,
            rack=state.static_config.get("broker.rack"),
            is_fenced=False,
        )
        for node, host, port in live_nodes(state, ctx)
    ]
    if version >= 2 and request.include_fenced_brokers:
        brokers.extend(_fenced_brokers(state, ctx, {b.broker_id for b in brokers}))
        brokers.sort(key=lambda b: b.broker_id)
    return DESCRIBE_CLUSTER_RESPONSE(
        throttle_time_ms=0,
        error_code=0,
        error_message=None,
        endpoint_type=ENDPOINT_BROKER,
        cluster_id=state.cluster_id,
        controller_id=min(state.live_brokers, default=state.node_id),
        brokers=brokers,
        cluster_authorized_operations=(
            authorized_operations(state, ctx, CLUSTER, "kafka-cluster")
            if request.include_cluster_authorized_operations
            else NO_OPERATIONS
        ),
    )


def _fenced_brokers(state: BrokerState, ctx: RequestContext, listed: set[int]) -> list[Any]:
    """KIP-1073 (DescribeCluster v2 ``IncludeFencedBrokers``): the registered brokers that are
    fenced (a stopped node of an in-process cluster), at their registered endpoint of the
    request's listener (``KRaftMetadataCache.getBrokerNodes``)."""
    out = []
    for broker in state.metadata_image.brokers.values():
        if broker.broker_id in listed or not broker.fenced:
            continue
        for name, host, port, _protocol in broker.endpoints:
            if name == ctx.listener_name:
                out.append(
                    DESCRIBE_CLUSTER_BROKER(
                        broker_id=broker.broker_id,
                        host=host,
                        port=port,
                        rack=state.static_config.get("broker.rack"),
                        is_fenced=True,
                    )
                )
    return out


# --- DescribeLogDirs --------------------------------------------------------------------------


@register(35, 0, 5)
def handle_describe_log_dirs(
    state: BrokerState, ctx: RequestContext, request: DescribeLogDirsRequest
) -> Any:
    """DescribeLogDirs (``ReplicaManager.describeLogDirs``): every log directory of the node (the
    data directory, then the other ``log.dirs``) with its sizes and the replicas this node holds
    in it (in an in-process cluster, the partitions it leads)."""
    if not authorize(state, ctx, "DESCRIBE", CLUSTER, "kafka-cluster"):
        error = int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
        return DESCRIBE_LOG_DIRS_RESPONSE(throttle_time_ms=0, error_code=error, results=[])
    node = serving_node(state, ctx)
    wanted: set[tuple[str, int]] | None = None
    if request.topics is not None:
        wanted = {(t.topic, p) for t in request.topics for p in t.partitions}
    results = []
    for data_dir, path in zip(state.data_dirs, log_dirs(state), strict=True):
        topics = []
        for topic in state.topics.values():
            parts = [
                DESCRIBE_LOG_DIRS_PARTITION(
                    partition_index=p.index,
                    partition_size=p.log.size_in_bytes(),
                    offset_lag=0,
                    is_future_key=False,
                )
                for p in topic.partitions
                if p.leader_id == node
                and state.log_dir_of(p) is data_dir
                and (wanted is None or (topic.name, p.index) in wanted)
            ]
            if parts:
                topics.append(DESCRIBE_LOG_DIRS_TOPIC(name=topic.name, partitions=parts))
        try:
            if data_dir.offline:
                raise OSError(path)
            stat = os.statvfs(path)
        except OSError:
            results.append(
                DESCRIBE_LOG_DIRS_RESULT(
                    error_code=int(ErrorCode.KAFKA_STORAGE_ERROR), log_dir=path, topics=[]
                )
            )
            continue
        results.append(
            DESCRIBE_LOG_DIRS_RESULT(
                error_code=0,
                log_dir=path,
                topics=topics,
                total_bytes=stat.f_blocks * stat.f_frsize,
                usable_bytes=stat.f_bavail * stat.f_frsize,
                is_cordoned=False,
            )
        )
    return DESCRIBE_LOG_DIRS_RESPONSE(throttle_time_ms=0, error_code=0, results=results)


# --- DeleteRecords ----------------------------------------------------------------------------

HIGH_WATERMARK: Final = -1  # DeleteRecordsRequest.HIGH_WATERMARK


def _delete_records(
    state: BrokerState, ctx: RequestContext, topic: str, index: int, offset: int
) -> tuple[int, ErrorCode]:
    """(low watermark, error) for one partition (``ReplicaManager.deleteRecordsOnLocalLog``)."""
    partition = state.partition(topic, index)
    if partition is None:
        return -1, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    if leader_error(state, ctx, partition) is not ErrorCode.NONE:
        return -1, ErrorCode.NOT_LEADER_OR_FOLLOWER
    if partition.topic.internal:
        return -1, ErrorCode.INVALID_TOPIC_EXCEPTION
    policy = resolve_topic_configs(partition.topic.configs, state.static_config)["cleanup.policy"]
    if "delete" not in [p.strip() for p in (policy.value or "").split(",")]:
        return -1, ErrorCode.POLICY_VIOLATION
    live = partition.log
    target = live.high_watermark if offset == HIGH_WATERMARK else offset
    if target < 0 or target > live.high_watermark:
        return -1, ErrorCode.OFFSET_OUT_OF_RANGE
    try:
        low = live.delete_records_before(target)
    except OffsetOutOfRangeError:
        return -1, ErrorCode.OFFSET_OUT_OF_RANGE
    return low, ErrorCode.NONE


@register(21, 0, 2)
def handle_delete_records(
    state: BrokerState, ctx: RequestContext, request: DeleteRecordsRequest
) -> Any:
    """DeleteRecords: move log start offsets up; the low watermark is the new log start."""
    topics = []
    deleted = False
    for wanted in request.topics:
        parts = []
        for req in wanted.partitions:
            low, error = (
                _delete_records(state, ctx, wanted.name, req.partition_index, req.offset)
                if authorize(state, ctx, "DELETE", TOPIC, wanted.name)
                else (-1, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
            )
            deleted = deleted or error is ErrorCode.NONE
            parts.append(
                DELETE_RECORDS_PARTITION(
                    partition_index=req.partition_index, low_watermark=low, error_code=int(error)
                )
            )
        topics.append(DELETE_RECORDS_TOPIC(name=wanted.name, partitions=parts))
    if deleted:
        state.write_checkpoints()  # log-start-offset-checkpoint
    return DELETE_RECORDS_RESPONSE(throttle_time_ms=0, topics=topics)
