"""Broker and topic configuration: Kafka's names, types, defaults, synonyms and validation.

Approach: one table per resource type (``TOPIC_CONFIGS``, ``BROKER_CONFIGS``) of ``ConfigDef``
rows, as Kafka's ``LogConfig`` and ``KafkaConfig`` define them in 3.9. A topic value resolves as
Kafka's does: the topic's own override (``DYNAMIC_TOPIC_CONFIG``), else the broker setting it is a
synonym of (``log.retention.ms`` for ``retention.ms``: ``STATIC_BROKER_CONFIG`` when given on the
command line), else the default (``DEFAULT_CONFIG``). DescribeConfigs, CreateTopics and the
AlterConfigs APIs all read these tables; the log and records layers get their settings from
``log_config`` (``kwire.log.LogConfig.from_properties``).
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable, Mapping
from typing import Final

from kwire._lazy import lazy_dataclass
from kwire.log.storage import LogConfig
from kwire.records import magic_for_message_format_version

__all__ = [
    "BROKER_CONFIGS",
    "KWIRE_CONFIGS",
    "TOPIC_CONFIGS",
    "ConfigDef",
    "ConfigError",
    "ConfigSource",
    "ConfigType",
    "ResolvedConfig",
    "check_broker_config",
    "is_known_broker_config",
    "listed_in",
    "log_config",
    "resolve_broker_configs",
    "resolve_topic_configs",
    "validate_topic_configs",
]

LONG_MAX: Final = (1 << 63) - 1


class ConfigType(enum.IntEnum):
    """DescribeConfigsResponse's ``config_type`` (Kafka's ``ConfigDef.Type`` as numbered on the wire)."""

    UNKNOWN = 0
    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7
    CLASS = 8
    PASSWORD = 9


class ConfigSource(enum.IntEnum):
    """DescribeConfigsResponse's ``config_source``."""

    UNKNOWN = 0
    DYNAMIC_TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6
    CLIENT_METRICS_CONFIG = 7
    GROUP_CONFIG = 8


class ConfigError(ValueError):
    """A config name or value Kafka would reject (``INVALID_CONFIG``, 40), with Kafka's wording."""


def _int_range(lo: int, hi: int = (1 << 31) - 1) -> Callable[[str], None]:
    def check(value: str) -> None:
        number = int(value)
        if not lo <= number <= hi:
            raise ValueError(
                f"Value must be at least {lo}"
                if number < lo
                else f"Value must be no more than {hi}"
            )

    return check


def _long_range(lo: int) -> Callable[[str], None]:
    return _int_range(lo, LONG_MAX)


def _one_of(*choices: str) -> Callable[[str], None]:
    def check(value: str) -> None:
        if value not in choices:
            raise ValueError(f"String must be one of: {', '.join(choices)}")

    return check


def _cleanup_policy(value: str) -> None:
    parts = [p.strip() for p in value.split(",") if p.strip()]
    if not parts or any(p not in ("delete", "compact") for p in parts):
        raise ValueError("String must be one of: compact, delete")


def _ratio(value: str) -> None:
    if not 0.0 <= float(value) <= 1.0:
        raise ValueError("Value must be between 0 and 1")


def _message_format(value: str) -> None:
    magic_for_message_format_version(value)


def _boolean(value: str) -> None:
    if value.lower() not in ("true", "false"):
        raise ValueError("Expected value to be either true or false")


#: the bits of ConfigDef's integer types; DOUBLE parses as a float
_NUMBER_BITS: Final = {
    ConfigType.SHORT: 16,
    ConfigType.INT: 32,
    ConfigType.LONG: 64,
    ConfigType.DOUBLE: 0,
}
_JAVA_INTEGER: Final = re.compile(r"[+-]?[0-9]+")


def _is_java_number(value: str, type_: ConfigType) -> bool:
    """What ``ConfigDef.parseType`` parses (Short/Integer/Long.parseLong or Double.parseDouble of
    the trimmed text): Python's int() and float() also take ``1_000`` and any size."""
    text = value.strip()
    if type_ is ConfigType.DOUBLE:
        try:
            float(text)
        except ValueError:
            return False
        return "_" not in text
    bits = _NUMBER_BITS[type_]
    return bool(_JAVA_INTEGER.fullmatch(text)) and -(1 << bits - 1) <= int(text) < 1 << bits - 1


@lazy_dataclass(frozen=True, slots=True)
class ConfigDef:
    """One config: Kafka's name, type, default (as Kafka prints it), broker synonym, check."""

    name: str
    type: ConfigType
    default: str | None
    synonym: str | None = None  # the broker config a topic config falls back to
    check: Callable[[str], None] | None = None
    sensitive: bool = False
    read_only: bool = False

    def validate(self, value: str | None) -> None:
        if value is None:
            return
        try:
            if self.type in _NUMBER_BITS and not _is_java_number(value, self.type):
                raise ValueError(f"Not a number of type {self.type.name}")
            if self.type is ConfigType.BOOLEAN:
                _boolean(value)
            if self.check is not None:
                self.check(value)
        except ValueError as exc:
            raise ConfigError(
                f"Invalid value {value} for configuration {self.name}: {exc}"
            ) from None


_T = ConfigType
#: Kafka 3.9's topic configs (``LogConfig``), with their broker synonyms.
TOPIC_CONFIGS: Final[Mapping[str, ConfigDef]] = {
    d.name: d
    for d in (
        ConfigDef("cleanup.policy", _T.LIST, "delete", "log.cleanup.policy", _cleanup_policy),
        ConfigDef(
            "compression.type",
            _T.STRING,
            "producer",
            "compression.type",
            _one_of("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"),
        ),
        ConfigDef("compression.gzip.level", _T.INT, "-1", "compression.gzip.level"),
        ConfigDef("compression.lz4.level", _T.INT, "9", "compression.lz4.level"),
        ConfigDef("compression.zstd.level", _T.INT, "3", "compression.zstd.level"),
        ConfigDef("delete.retention.ms", _T.LONG, "86400000", "log.cleaner.delete.retention.ms"),
        ConfigDef("file.delete.delay.ms", _T.LONG, "60000", "log.segment.delete.delay.ms"),
        ConfigDef("flush.messages", _T.LONG, str(LONG_MAX), "log.flush.interval.messages"),
        ConfigDef("flush.ms", _T.LONG, str(LONG_MAX), "log.flush.interval.ms"),
        ConfigDef("follower.replication.throttled.replicas", _T.LIST, ""),
        ConfigDef("index.interval.bytes", _T.INT, "4096", "log.index.interval.bytes"),
        ConfigDef("leader.replication.throttled.replicas", _T.LIST, ""),
        ConfigDef("local.retention.bytes", _T.LONG, "-2", "log.local.retention.bytes"),
        ConfigDef("local.retention.ms", _T.LONG, "-2", "log.local.retention.ms"),
        ConfigDef(
            "max.compaction.lag.ms", _T.LONG, str(LONG_MAX), "log.cleaner.max.compaction.lag.ms"
        ),
        ConfigDef("max.message.bytes", _T.INT, "1048588", "message.max.bytes", _int_range(0)),
        ConfigDef(
            "message.downconversion.enable", _T.BOOLEAN, "true", "log.message.downconversion.enable"
        ),
        ConfigDef(
            "message.format.version",
            _T.STRING,
            "3.0-IV1",
            "log.message.format.version",
            _message_format,
        ),
        ConfigDef(
            "message.timestamp.after.max.ms",
            _T.LONG,
            str(LONG_MAX),
            "log.message.timestamp.after.max.ms",
            _long_range(0),
        ),
        ConfigDef(
            "message.timestamp.before.max.ms",
            _T.LONG,
            str(LONG_MAX),
            "log.message.timestamp.before.max.ms",
            _long_range(0),
        ),
        ConfigDef(
            "message.timestamp.difference.max.ms",
            _T.LONG,
            str(LONG_MAX),
            "log.message.timestamp.difference.max.ms",
            _long_range(0),
        ),
        ConfigDef(
            "message.timestamp.type",
            _T.STRING,
            "CreateTime",
            "log.message.timestamp.type",
            _one_of("CreateTime", "LogAppendTime"),
        ),
        ConfigDef(
            "min.cleanable.dirty.ratio", _T.DOUBLE, "0.5", "log.cleaner.min.cleanable.ratio", _ratio
        ),
        ConfigDef(
            "min.compaction.lag.ms",
            _T.LONG,
            "0",
            "log.cleaner.min.compaction.lag.ms",
            _long_range(0),
        ),
        ConfigDef("min.insync.replicas", _T.INT, "1", "min.insync.replicas", _int_range(1)),
        ConfigDef("preallocate", _T.BOOLEAN, "false", "log.preallocate"),
        ConfigDef("remote.storage.enable", _T.BOOLEAN, "false"),
        ConfigDef("retention.bytes", _T.LONG, "-1", "log.retention.bytes"),
        ConfigDef("retention.ms", _T.LONG, "604800000", "log.retention.ms", _long_range(-1)),
        ConfigDef("segment.bytes", _T.INT, "1073741824", "log.segment.bytes", _int_range(14)),
        ConfigDef(
            "segment.index.bytes", _T.INT, "10485760", "log.index.size.max.bytes", _int_range(4)
        ),
        ConfigDef("segment.jitter.ms", _T.LONG, "0", "log.roll.jitter.ms", _long_range(0)),
        ConfigDef("segment.ms", _T.LONG, "604800000", "log.roll.ms", _long_range(1)),
        ConfigDef(
            "unclean.leader.election.enable", _T.BOOLEAN, "false", "unclean.leader.election.enable"
        ),
    )
}

#: The broker configs kwire knows (a subset of Kafka's ``KafkaConfig``): the topic defaults'
#: synonyms plus what the broker itself reads.
BROKER_CONFIGS: Final[Mapping[str, ConfigDef]] = {
    d.name: d
    for d in (
        ConfigDef("auto.create.topics.enable", _T.BOOLEAN, "true"),
        ConfigDef("num.partitions", _T.INT, "1", check=_int_range(1)),
        ConfigDef("default.replication.factor", _T.INT, "1"),
        ConfigDef("message.max.bytes", _T.INT, "1048588", check=_int_range(0)),
        ConfigDef("socket.request.max.bytes", _T.INT, "104857600", check=_int_range(1)),
        ConfigDef("connections.max.idle.ms", _T.LONG, "600000", read_only=True),
        ConfigDef("num.io.threads", _T.INT, "8", check=_int_range(1), read_only=True),
        ConfigDef("log.dirs", _T.STRING, None, read_only=True),
        ConfigDef("log.cleanup.policy", _T.LIST, "delete", check=_cleanup_policy),
        ConfigDef("compression.type", _T.STRING, "producer"),
        ConfigDef("compression.gzip.level", _T.INT, "-1"),
        ConfigDef("compression.lz4.level", _T.INT, "9"),
        ConfigDef("compression.zstd.level", _T.INT, "3"),
        ConfigDef("log.cleaner.delete.retention.ms", _T.LONG, "86400000"),
        ConfigDef("log.segment.delete.delay.ms", _T.LONG, "60000"),
        ConfigDef("log.flush.interval.messages", _T.LONG, str(LONG_MAX)),
        ConfigDef("log.flush.interval.ms", _T.LONG, None),
        ConfigDef("log.index.interval.bytes", _T.INT, "4096"),
        ConfigDef("log.local.retention.bytes", _T.LONG, "-2"),
        ConfigDef("log.local.retention.ms", _T.LONG, "-2"),
        ConfigDef("log.cleaner.max.compaction.lag.ms", _T.LONG, str(LONG_MAX)),
        ConfigDef("log.message.downconversion.enable", _T.BOOLEAN, "true"),
        ConfigDef("log.message.format.version", _T.STRING, "3.0-IV1", check=_message_format),
        ConfigDef("log.message.timestamp.after.max.ms", _T.LONG, str(LONG_MAX)),
        ConfigDef("log.message.timestamp.before.max.ms", _T.LONG, str(LONG_MAX)),
        ConfigDef("log.message.timestamp.difference.max.ms", _T.LONG, str(LONG_MAX)),
        ConfigDef("log.message.timestamp.type", _T.STRING, "CreateTime"),
        ConfigDef("log.cleaner.min.cleanable.ratio", _T.DOUBLE, "0.5"),
        ConfigDef("log.cleaner.min.compaction.lag.ms", _T.LONG, "0"),
        ConfigDef("min.insync.replicas", _T.INT, "1"),
        ConfigDef("log.preallocate", _T.BOOLEAN, "false"),
        ConfigDef("log.retention.bytes", _T.LONG, "-1"),
        ConfigDef("log.retention.ms", _T.LONG, None),
        ConfigDef("log.retention.minutes", _T.INT, None),
        ConfigDef("log.retention.hours", _T.INT, "168"),
        ConfigDef("log.retention.check.interval.ms", _T.LONG, "300000", check=_long_range(1)),
        ConfigDef("log.segment.bytes", _T.INT, "1073741824", check=_int_range(14)),
        ConfigDef("log.index.size.max.bytes", _T.INT, "10485760"),
        ConfigDef("log.roll.jitter.ms", _T.LONG, None),
        ConfigDef("log.roll.ms", _T.LONG, None),
        ConfigDef("log.roll.hours", _T.INT, "168"),
        ConfigDef(
            "replica.high.watermark.checkpoint.interval.ms", _T.LONG, "5000", check=_long_range(1)
        ),
        ConfigDef("unclean.leader.election.enable", _T.BOOLEAN, "false"),
        ConfigDef("offsets.topic.num.partitions", _T.INT, "50", check=_int_range(1)),
        ConfigDef("transaction.state.log.num.partitions", _T.INT, "50", check=_int_range(1)),
        ConfigDef("offsets.retention.minutes", _T.INT, "10080", check=_int_range(1)),
        ConfigDef("offsets.retention.check.interval.ms", _T.LONG, "600000", check=_long_range(1)),
        ConfigDef("producer.id.expiration.ms", _T.INT, "86400000", check=_int_range(1)),
        ConfigDef(
            "producer.id.expiration.check.interval.ms", _T.INT, "600000", check=_int_range(1)
        ),
        ConfigDef("group.initial.rebalance.delay.ms", _T.INT, "3000"),
        ConfigDef("delete.topic.enable", _T.BOOLEAN, "true"),
        ConfigDef("broker.id", _T.INT, "-1", read_only=True),
        ConfigDef("node.id", _T.INT, "-1", read_only=True),
        ConfigDef("broker.rack", _T.STRING, None, read_only=True),
        # SocketServerConfigs and KRaftConfigs: what a tool reads to reach or describe the node
        ConfigDef("listeners", _T.STRING, "PLAINTEXT://:9092", read_only=True),
        ConfigDef("advertised.listeners", _T.STRING, None, read_only=True),
        ConfigDef(  # SocketServerConfigs' default: a HashMap of SecurityProtocol.values(), in its order
            "listener.security.protocol.map",
            _T.STRING,
            "SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT",
            read_only=True,
        ),
        ConfigDef("inter.broker.listener.name", _T.STRING, None, read_only=True),
        ConfigDef("security.inter.broker.protocol", _T.STRING, "PLAINTEXT", read_only=True),
        ConfigDef("process.roles", _T.LIST, "", read_only=True),
    )
}

#: Broker configs in Kafka's precedence order for a topic default given in other units.
_DERIVED: Final[Mapping[str, tuple[tuple[str, int], ...]]] = {
    "log.retention.ms": (
        ("log.retention.ms", 1),
        ("log.retention.minutes", 60_000),
        ("log.retention.hours", 3_600_000),
    ),
    "log.roll.ms": (("log.roll.ms", 1), ("log.roll.hours", 3_600_000)),
    "log.flush.interval.ms": (("log.flush.interval.ms", 1),),
}


@lazy_dataclass(frozen=True, slots=True)
class ResolvedConfig:
    """A config's effective value, where it came from, and its synonyms (most specific first)."""

    name: str
    value: str | None
    source: ConfigSource
    definition: ConfigDef
    synonyms: tuple[tuple[str, str | None, ConfigSource], ...]


def _broker_value(name: str, static: Mapping[str, str]) -> tuple[str | None, ConfigSource] | None:
    if name not in _DERIVED:
        return (static[name], ConfigSource.STATIC_BROKER_CONFIG) if name in static else None
    for key, factor in _DERIVED[name]:
        if key in static:
            return str(int(static[key]) * factor), ConfigSource.STATIC_BROKER_CONFIG
    return None


def resolve_broker_configs(static: Mapping[str, str]) -> dict[str, ResolvedConfig]:
    """Every broker config with its value: given at start (static) or Kafka's default."""
    out: dict[str, ResolvedConfig] = {}
    for name, definition in BROKER_CONFIGS.items():
        found = _broker_value(name, static)
        if found is not None:
            value, source = found
        else:
            value, source = definition.default, ConfigSource.DEFAULT_CONFIG
            if name in ("log.retention.ms", "log.roll.ms"):
                value = None
        synonyms = ((name, value, source),) if value is not None else ()
        out[name] = ResolvedConfig(name, value, source, definition, synonyms)
    return out


def resolve_topic_configs(
    overrides: Mapping[str, str], static: Mapping[str, str]
) -> dict[str, ResolvedConfig]:
    """Every topic config: the topic's override, else its broker synonym, else the default."""
    out: dict[str, ResolvedConfig] = {}
    for name, definition in TOPIC_CONFIGS.items():
        synonyms: list[tuple[str, str | None, ConfigSource]] = []
        if name in overrides:
            synonyms.append((name, overrides[name], ConfigSource.DYNAMIC_TOPIC_CONFIG))
        if definition.synonym is not None:
            found = _broker_value(definition.synonym, static)
            if found is not None:
                synonyms.append((definition.synonym, found[0], found[1]))
            elif definition.synonym in BROKER_CONFIGS:
                default = BROKER_CONFIGS[definition.synonym].default
                if default is not None:
                    synonyms.append((definition.synonym, default, ConfigSource.DEFAULT_CONFIG))
        if synonyms:
            value, source = synonyms[0][1], synonyms[0][2]
        else:
            value, source = definition.default, ConfigSource.DEFAULT_CONFIG
        out[name] = ResolvedConfig(name, value, source, definition, tuple(synonyms))
    return out


def validate_topic_configs(configs: Mapping[str, str | None]) -> None:
    """Raise ``ConfigError`` for an unknown topic config or a value Kafka would refuse."""
    for name, value in configs.items():
        definition = TOPIC_CONFIGS.get(name)
        if definition is None:
            raise ConfigError(f"Unknown topic config name: {name}")
        definition.validate(value)


def log_config(overrides: Mapping[str, str], static: Mapping[str, str]) -> LogConfig:
    """The ``kwire.log.LogConfig`` a topic's partitions run with."""
    resolved = resolve_topic_configs(overrides, static)
    props = {name: r.value for name, r in resolved.items() if r.value is not None}
    if "message.timestamp.difference.max.ms" not in overrides:
        props.pop("message.timestamp.difference.max.ms", None)
    return LogConfig.from_properties(props)


#: Broker settings kwire reads beyond ``BROKER_CONFIGS`` (coordinators, listeners, security,
#: quotas), and those of Kafka's ``config/server.properties`` it accepts and has no use for (one
#: process, one log directory, no threads to size): none of these is warned about.
_OTHER_KNOWN: Final = frozenset(
    {
        "advertised.listeners",
        "allow.everyone.if.no.acl.found",
        "authorizer.class.name",
        "auto.create.topics.enable",
        "connection.failed.authentication.delay.ms",
        "connections.max.reauth.ms",
        "controller.listener.names",
        "controller.quorum.bootstrap.servers",
        "controller.quorum.voters",
        "default.replication.factor",
        "delegation.token.expiry.check.interval.ms",
        "delegation.token.expiry.time.ms",
        "delegation.token.master.key",
        "delegation.token.max.lifetime.ms",
        "delegation.token.secret.key",
        "group.consumer.assignors",
        "group.consumer.heartbeat.interval.ms",
        "group.consumer.max.size",
        "group.consumer.session.timeout.ms",
        "group.coordinator.rebalance.protocols",
        "group.max.session.timeout.ms",
        "group.max.size",
        "group.min.session.timeout.ms",
        "inter.broker.listener.name",
        "listener.security.protocol.map",
        "listeners",
        "log.dir",
        "log.dirs",
        "log.retention.check.interval.ms",
        "max.request.partition.size.limit",
        "metadata.log.dir",
        "min.insync.replicas",
        "num.io.threads",
        "num.network.threads",
        "num.partitions",
        "num.recovery.threads.per.data.dir",
        "offset.metadata.max.bytes",
        "offsets.topic.replication.factor",
        "process.roles",
        "quota.window.num",
        "quota.window.size.seconds",
        "sasl.enabled.mechanisms",
        "sasl.server.max.receive.size",
        "share.coordinator.state.topic.min.isr",
        "share.coordinator.state.topic.replication.factor",
        "socket.receive.buffer.bytes",
        "socket.request.max.bytes",
        "socket.send.buffer.bytes",
        "super.users",
        "transaction.abort.timed.out.transaction.cleanup.interval.ms",
        "transaction.max.timeout.ms",
        "transaction.remove.expired.transaction.cleanup.interval.ms",
        "transaction.state.log.min.isr",
        "transaction.state.log.replication.factor",
        "transaction.state.log.segment.bytes",
        "transactional.id.expiration.ms",
    }
)
#: Configs a Kafka release removed (its DescribeConfigs no longer lists them) -> that release:
#: 4.0 dropped the message formats v0 and v1 (KIP-724), down-conversion with the Fetch versions
#: that needed it (KIP-896), and the timestamp difference bound (KIP-937: before/after instead).
REMOVED_IN: Final[Mapping[str, tuple[int, int]]] = {
    "message.format.version": (4, 0),
    "log.message.format.version": (4, 0),
    "message.downconversion.enable": (4, 0),
    "log.message.downconversion.enable": (4, 0),
    "message.timestamp.difference.max.ms": (4, 0),
    "log.message.timestamp.difference.max.ms": (4, 0),
}


def listed_in(name: str, release: str) -> bool:
    """Whether Kafka ``release`` (a personality name, ``"3.9"``) still has config ``name``."""
    removed = REMOVED_IN.get(name)
    if removed is None:
        return True
    return tuple(int(p) for p in release.split(".")[:2]) < removed


#: kwire's own broker settings (not Kafka's: DescribeConfigs does not list them).
KWIRE_CONFIGS: Final[Mapping[str, ConfigDef]] = {
    d.name: d
    for d in (
        # the numba-compiled walk of compressed batches on append (kwire.records._append_scan):
        # "false" (default) never loads numba, "auto" loads it in the background at the first
        # batch of 8+ records, "true" at the first append. docs/broker.md has the trade-off:
        # 2-6x cheaper validation of large batches for about 110 MB more resident memory.
        ConfigDef(
            "kwire.append.compiled.walk", _T.STRING, "false", check=_one_of("false", "auto", "true")
        ),
    )
}
#: Families Kafka defines by prefix (``listener.name.<listener>.<config>``) or by the dozen.
_KNOWN_PREFIXES: Final = (
    "listener.name.",
    "ssl.",
    "sasl.",
    "log.cleaner.",
    "group.share.",
    "share.coordinator.",
)


def is_known_broker_config(name: str) -> bool:
    """Whether Kafka would know ``name`` as a broker setting (else it warns, and so does kwire)."""
    if name in BROKER_CONFIGS or name in KWIRE_CONFIGS or name in _OTHER_KNOWN:
        return True
    if name.startswith(_KNOWN_PREFIXES):
        return True
    return any(d.synonym == name for d in TOPIC_CONFIGS.values())


def _check_listeners(static: Mapping[str, str]) -> None:
    """KafkaConfig's checks of ``listeners`` at start, before anything is written."""
    from kwire.broker._security import listener_config, parse_listeners

    try:
        listeners = parse_listeners(static, "127.0.0.1", 0)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    for listener in listeners:
        if listener.protocol.endswith("SSL") and not listener_config(
            static, listener.name, "ssl.certfile"
        ):
            # the words of server_ssl_context, which loads the files when the listener opens
            raise ConfigError(f"listener {listener.name} uses TLS but ssl.certfile is not set")


def check_broker_config(static: Mapping[str, str]) -> list[str]:
    """Validate the values of known broker settings (``ConfigError``, Kafka's wording) and return
    Kafka's warning for each unknown one (``AbstractConfig.logUnused``: Kafka starts anyway)."""
    for name, value in static.items():
        definition = BROKER_CONFIGS.get(name) or KWIRE_CONFIGS.get(name)
        if definition is not None:
            definition.validate(value)
    if static.get("listeners"):
        _check_listeners(static)
    return [
        f"The configuration '{name}' was supplied but isn't a known config."
        for name in static
        if not is_known_broker_config(name)
    ]
