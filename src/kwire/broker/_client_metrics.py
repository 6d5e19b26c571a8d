"""Client metrics subscriptions (KIP-714): the CLIENT_METRICS config resources (type 16) that
DescribeConfigs and IncrementalAlterConfigs read and write, and ListConfigResources (API 74).

ListConfigResources versions: v0 (3.7, KIP-714's ListClientMetricsResources) lists the client
metrics subscriptions; v1 (4.1, KIP-1142 renamed it) takes ``ResourceTypes`` (empty: every type
it supports, TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS and GROUP; any other type is
UNSUPPORTED_VERSION) and names each resource's type. Both need DESCRIBE_CONFIGS on the cluster
(``KafkaApis.handleListConfigResources``).

A subscription is a named set of configs, kept as ``ConfigRecord``s of resource type 16 in
``__cluster_metadata`` (``ConfigurationControlManager``), so it survives a restart. The keys and
rules are ``ClientMetricsConfigs``: ``metrics`` (a LIST of metric name prefixes), ``interval.ms``
(an INT, 100 to 3600000; default 300000) and ``match`` (a LIST of ``<selector>=<regex>`` with the
selectors client_instance_id, client_id, client_software_name, client_software_version,
client_source_address and client_source_port). The merged result of an IncrementalAlterConfigs
is validated as a whole: an empty name or an unknown key is INVALID_REQUEST, as is an interval
out of range; a value that does not parse or a bad match pattern is INVALID_CONFIG. APPEND and
SUBTRACT work on the LIST keys only. DescribeConfigs lists the keys a subscription sets, source
CLIENT_METRICS_CONFIG (``ConfigHelper``). Not served: GetTelemetrySubscriptions and
PushTelemetry (APIs 71/72), which Kafka advertises only when a telemetry receiver plugin is
configured.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any, Final

from kwire.broker import _metadata_image as mimage
from kwire.broker._acl import CLUSTER, CLUSTER_NAME, authorize
from kwire.broker._apis import register
from kwire.broker._context import RequestContext
from kwire.broker._state import BrokerState
from kwire.protocol import ErrorCode
from kwire.protocol.messages import ListConfigResourcesRequest, ListConfigResourcesResponse

__all__ = [
    "CLIENT_METRICS",
    "alter_client_metrics",
    "client_metrics_configs",
    "handle_list_config_resources",
]

CLIENT_METRICS: Final = 16
TOPIC, BROKER, BROKER_LOGGER, GROUP = 2, 4, 8, 32
#: ``ListConfigResourcesRequest.supportedResourceTypes`` of v1.
SUPPORTED_V1: Final = frozenset({TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP})
LIST_KEYS: Final = frozenset({"metrics", "match"})
KEYS: Final = frozenset({"metrics", "interval.ms", "match"})
MATCH_SELECTORS: Final = frozenset(
    {
        "client_instance_id",
        "client_id",
        "client_software_name",
        "client_software_version",
        "client_source_address",
        "client_source_port",
    }
)
INTERVAL_DEFAULT: Final = "300000"
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3

RESPONSE: Final = ListConfigResourcesResponse
RESOURCE: Final = ListConfigResourcesResponse.ConfigResource

Failure = tuple[ErrorCode, str]


def client_metrics_configs(state: BrokerState, name: str) -> dict[str, str]:
    """The configs subscription ``name`` sets (none: an unknown subscription)."""
    return dict(state.metadata_image.configs.get((CLIENT_METRICS, name), {}))


def _parts(value: str) -> list[str]:
    """Kafka's ``ConfigDef`` LIST parsing: comma-separated, trimmed, "" is the empty list."""
    text = value.strip()
    return [] if not text else [p.strip() for p in text.split(",")]


def _check_match(patterns: Sequence[str]) -> Failure | None:
    """``ClientMetricsConfigs.parseMatchingPatterns``."""
    for pattern in patterns:
        pieces = pattern.split("=")
        while pieces and pieces[-1] == "":  # Java's String.split drops trailing empties
            pieces.pop()
        bad = (ErrorCode.INVALID_CONFIG, f"Illegal client matching pattern: {pattern}")
        if len(pieces) != 2 or pieces[0].strip() not in MATCH_SELECTORS:
            return bad
        try:
            re.compile(pieces[1].strip())
        except re.error:
            return bad
    return None


def validate(name: str, configs: dict[str, str]) -> Failure | None:
    """``ClientMetricsConfigs.validate``: the subscription's configs after a change."""
    if not name:
        return ErrorCode.INVALID_REQUEST, "Subscription name can't be empty"
    for key in configs:
        if key not in KEYS:
            return ErrorCode.INVALID_REQUEST, f"Unknown client metrics configuration: {key}"
    if "interval.ms" in configs:
        raw = configs["interval.ms"]
        try:
            interval = int(raw.strip())
            if not -(1 << 31) <= interval < 1 << 31:
                raise ValueError(raw)
        except ValueError:
            return (
                ErrorCode.INVALID_CONFIG,
                f"Invalid value {raw} for configuration interval.ms: Not a number of type INT",
            )
        if not 100 <= interval <= 3600000:
            return (
                ErrorCode.INVALID_REQUEST,
                f"Invalid value {interval} for interval.ms, interval must be between 100 and "
                "3600000 (1 hour)",
            )
    if "match" in configs:
        return _check_match(_parts(configs["match"]))
    return None


def alter_client_metrics(
    state: BrokerState,
    name: str,
    ops: Iterable[tuple[int, str, str | None]],
    validate_only: bool,
) -> Failure | None:
    """IncrementalAlterConfigs of a CLIENT_METRICS resource (``ConfigurationControlManager.
    incrementalAlterConfigResource`` then the validator): ``ops`` as (operation, key, value).
    The failure, or None once written (or checked, with ``validate_only``)."""
    current = client_metrics_configs(state, name)
    new = dict(current)
    for operation, key, value in ops:
        if operation == SET:
            if value is None:
                new.pop(key, None)
            else:
                new[key] = value
        elif operation == DELETE:
            new.pop(key, None)
        else:
            verb = "APPEND" if operation == APPEND else "SUBTRACT"
            if key not in LIST_KEYS:
                return (
                    ErrorCode.INVALID_CONFIG,
                    f"Can't {verb} to key {key} because its type is not LIST.",
                )
            parts = _parts(new.get(key, ""))
            given = _parts(value or "")
            if operation == APPEND:
                parts += [p for p in given if p not in parts]
            else:
                parts = [p for p in parts if p not in given]
            new[key] = ",".join(parts)
    failure = validate(name, new)
    if failure is not None:
        return failure
    if not validate_only and new != current:
        state.append_metadata(mimage.config_records(CLIENT_METRICS, name, current, new))
    return None


def _listed(state: BrokerState, kind: int) -> list[str]:
    image = state.metadata_image
    if kind in (CLIENT_METRICS, GROUP):
        return sorted(name for k, name in image.configs if k == kind)
    if kind in (BROKER, BROKER_LOGGER):
        return [str(b) for b in sorted(image.brokers)]
    return sorted(state.topics)


@register(74, 0, 1)
def handle_list_config_resources(
    state: BrokerState, ctx: RequestContext, request: ListConfigResourcesRequest
) -> Any:
    version = ctx.api_version
    if not authorize(state, ctx, "DESCRIBE_CONFIGS", CLUSTER, CLUSTER_NAME):
        error = int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
        return RESPONSE(throttle_time_ms=0, error_code=error, config_resources=[])
    if version == 0:
        kinds = [CLIENT_METRICS]
    else:
        kinds = list(request.resource_types) or sorted(SUPPORTED_V1)
        if any(k not in SUPPORTED_V1 for k in kinds):
            error = int(ErrorCode.UNSUPPORTED_VERSION)
            return RESPONSE(throttle_time_ms=0, error_code=error, config_resources=[])
    resources = [
        RESOURCE(resource_name=name, resource_type=kind)
        for kind in (GROUP, CLIENT_METRICS, BROKER_LOGGER, BROKER, TOPIC)
        if kind in kinds
        for name in _listed(state, kind)
    ]
    return RESPONSE(throttle_time_ms=0, error_code=0, config_resources=resources)
