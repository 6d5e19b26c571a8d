"""AlterConfigs (API 33) and IncrementalAlterConfigs (API 44): the configs family's writes.

Versions: AlterConfigs v1 (Kafka 2.0) the same as v0 (the throttle applied after the answer), v2
flexible; IncrementalAlterConfigs v0 (Kafka 2.3, KIP-339) SET, DELETE, APPEND and SUBTRACT per
config, v1 flexible.

Follows ``ConfigAdminManager.preprocess`` then ``ConfigurationControlManager``: AlterConfigs
replaces a resource's whole override set (``legacyAlterConfigs``); IncrementalAlterConfigs applies
each operation. Dynamic broker configs are not kept by kwire: altering a broker resource is
refused with ``INVALID_REQUEST`` (Kafka's own message for the configs Kafka cannot change at
runtime either); broker loggers change this process's log levels.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from kwire.broker._acl import (
    config_resource_error,
)
from kwire.broker._admin import (
    _LOG4J_LEVELS,
    _OP_NAMES,
    DYNAMIC_BROKER_CONFIGS,
    OP_APPEND,
    OP_DELETE,
    OP_SET,
    OP_SUBTRACT,
    RESOURCE_BROKER,
    RESOURCE_BROKER_LOGGER,
    RESOURCE_CLIENT_METRICS,
    RESOURCE_GROUP,
    RESOURCE_TOPIC,
    ROOT_LOGGER,
    _ApiError,
    _from_broker_error,
    _java_int,
    _java_split,
    _loggers,
    _scala_set,
    _topic_config_error,
)
from kwire.broker._apis import register
from kwire.broker._client_metrics import alter_client_metrics
from kwire.broker._config import (
    BROKER_CONFIGS,
    TOPIC_CONFIGS,
    ConfigDef,
    ConfigError,
    ConfigType,
)
from kwire.broker._context import RequestContext
from kwire.broker._share_service import alter_group_configs
from kwire.broker._state import BrokerError, BrokerState, Topic, validate_topic_name
from kwire.protocol import ErrorCode
from kwire.protocol.messages import (
    AlterConfigsRequest,
    AlterConfigsResponse,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
)

__all__ = ["handle_alter_configs", "handle_incremental_alter_configs"]


ALTER_CONFIGS_RESPONSE: Final = AlterConfigsResponse


ALTER_CONFIGS_RESULT: Final = AlterConfigsResponse.AlterConfigsResourceResponse


INCREMENTAL_ALTER_CONFIGS_RESPONSE: Final = IncrementalAlterConfigsResponse


INCREMENTAL_ALTER_CONFIGS_RESULT: Final = (
    IncrementalAlterConfigsResponse.AlterConfigsResourceResponse
)


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
