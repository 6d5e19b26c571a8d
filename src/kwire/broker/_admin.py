"""Rules the admin handlers share: config resource and operation ids, Kafka's ``ApiError`` and
the Java parsing rules its messages depend on, topic config and manual assignment checks.

The handlers live one per API, or per small family, named after it: ``_create_topics``,
``_delete_topics``, ``_create_partitions``, ``_describe_configs``, ``_alter_configs`` (AlterConfigs
and IncrementalAlterConfigs), ``_describe_cluster``, ``_describe_log_dirs``, ``_delete_records``.
Each follows what a Kafka 3.9 KRaft broker answers: the broker's own ``KafkaApis`` and
``ConfigAdminManager.preprocess`` checks first, then what the active controller
(``ControllerApis``, ``ReplicationControlManager``, ``ConfigurationControlManager``) decides,
with Kafka's error codes and messages. Every partition has one replica, its leader (in an
in-process cluster, ``_cluster``, the nodes share the storage and the controller), so a
replication factor above 1 or a manual assignment naming another node is refused as a one-broker
KRaft cluster refuses it.
"""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Final

from kwire.broker._config import (
    TOPIC_CONFIGS,
    ConfigError,
    ConfigType,
    ResolvedConfig,
    validate_topic_configs,
)
from kwire.broker._state import BrokerError, BrokerState
from kwire.protocol import ErrorCode

log = logging.getLogger("kwire.broker")

__all__ = [
    "DYNAMIC_BROKER_CONFIGS",
    "OP_APPEND",
    "OP_DELETE",
    "OP_SET",
    "OP_SUBTRACT",
    "RESOURCE_BROKER",
    "RESOURCE_BROKER_LOGGER",
    "RESOURCE_CLIENT_METRICS",
    "RESOURCE_GROUP",
    "RESOURCE_TOPIC",
    "ROOT_LOGGER",
    "ZERO_UUID",
]


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


#: Broker configs a Kafka broker may change at runtime (``DynamicBrokerConfig.AllDynamicConfigs``
#: restricted to the ones kwire knows): the broker synonyms of topic configs, except the message
#: format (``DynamicLogConfig.ReconfigurableConfigs``).
DYNAMIC_BROKER_CONFIGS: Final = frozenset(
    d.synonym
    for d in TOPIC_CONFIGS.values()
    if d.synonym is not None and d.synonym != "log.message.format.version"
)


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


def _sensitive(resolved: ResolvedConfig) -> bool:
    return resolved.definition.sensitive or resolved.definition.type is ConfigType.PASSWORD


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
