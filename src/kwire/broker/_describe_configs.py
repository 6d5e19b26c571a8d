"""DescribeConfigs (API 32): the configs of topics, brokers, broker loggers, client metrics
subscriptions and groups.

Versions: v1 (Kafka 1.1) adds synonyms and each config's source; v2 the same as v1; v3 (KIP-569)
each config's documentation and type; v4 flexible.

Follows ``ConfigHelper.describeConfigs``: a resource's error stays in its own result, a broker
resource names this node (or the cluster default, an empty name), and sensitive values are
answered as null.
"""

from __future__ import annotations

from typing import Any, Final

from kwire.broker._acl import (
    config_resource_error,
)
from kwire.broker._admin import (
    _RESOURCE_NAMES,
    DYNAMIC_BROKER_CONFIGS,
    RESOURCE_BROKER,
    RESOURCE_BROKER_LOGGER,
    RESOURCE_CLIENT_METRICS,
    RESOURCE_GROUP,
    RESOURCE_TOPIC,
    _ApiError,
    _from_broker_error,
    _java_int,
    _log4j_level,
    _loggers,
    _sensitive,
)
from kwire.broker._apis import register
from kwire.broker._client_metrics import client_metrics_configs
from kwire.broker._config import (
    BROKER_CONFIGS,
    ConfigSource,
    ConfigType,
    ResolvedConfig,
    listed_in,
    resolve_broker_configs,
    resolve_topic_configs,
)
from kwire.broker._context import RequestContext
from kwire.broker._routing import serving_node
from kwire.broker._share_service import describe_group_configs
from kwire.broker._state import BrokerError, BrokerState, validate_topic_name
from kwire.protocol import ErrorCode
from kwire.protocol.messages import (
    DescribeConfigsRequest,
    DescribeConfigsResponse,
)

__all__ = ["handle_describe_configs"]


DESCRIBE_CONFIGS_RESPONSE: Final = DescribeConfigsResponse


DESCRIBE_CONFIGS_RESULT: Final = DescribeConfigsResponse.DescribeConfigsResult


DESCRIBE_CONFIGS_ENTRY: Final = DescribeConfigsResponse.DescribeConfigsResourceResult


DESCRIBE_CONFIGS_SYNONYM: Final = DescribeConfigsResponse.DescribeConfigsSynonym


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
