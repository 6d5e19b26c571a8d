"""The broker's admin handlers, through the wire at every version kwire's corpus defines.

Each request is built with kwire's protocol classes, encoded at a version and decoded as the
server decodes it; the handler's response is encoded at the same version and decoded again, as
a client reads it. Error codes and messages are Kafka 3.9's (KRaft broker and controller).
"""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kwire.broker import BrokerState, testing
from kwire.broker._apis import implemented_versions
from kwire.broker._config import TOPIC_CONFIGS, ConfigSource, ConfigType, listed_in
from kwire.broker._data import append_to_partition
from kwire.broker._metadata import CLUSTER_OPERATIONS
from kwire.protocol import ErrorCode, message_class, struct_class
from kwire.records import build_batch

NOW = 1_700_000_000_000
ZERO = uuid.UUID(int=0)
NONE = int(ErrorCode.NONE)

#: what a 4.3 broker lists for a topic (4.0 removed the message format, down-conversion and
#: the timestamp difference bound)
TOPIC_CONFIGS_4_3 = {name for name in TOPIC_CONFIGS if listed_in(name, "4.3")}


def make_state(path: Path, **config: str) -> BrokerState:
    return testing.make_state(path, config=config)


@pytest.fixture
def state(tmp_path: Path) -> Iterator[BrokerState]:
    s = make_state(tmp_path / "data")
    yield s
    s.close()


def versions(name: str) -> range:
    cls = message_class(f"{name}Request")
    return range(cls.MIN_VERSION, cls.MAX_VERSION + 1)


def call(state: BrokerState, name: str, version: int, /, **fields: Any) -> Any:
    """Request bytes -> handler -> response bytes -> the response a client decodes."""
    assert version in testing.served(name)
    listener = {"listener_host": "h.example", "listener_port": 19092}
    response = testing.call(state, name, version, context=listener, **fields)
    assert response.throttle_time_ms == 0
    return response


def sub(name: str, *path: str) -> Any:
    return struct_class(message_class(name), *path)


def produce(state: BrokerState, topic: str, count: int, partition: int = 0) -> None:
    part = state.partition(topic, partition)
    assert part is not None
    records = build_batch([(None, NOW, b"k", b"v%d" % i) for i in range(count)])
    result = append_to_partition(state, part, records, 9, NOW)
    assert result.error_code == 0


def test_handlers_cover_the_corpus_versions() -> None:
    for name, key in [
        ("CreateTopics", 19),
        ("DeleteTopics", 20),
        ("DeleteRecords", 21),
        ("DescribeConfigs", 32),
        ("AlterConfigs", 33),
        ("DescribeLogDirs", 35),
        ("CreatePartitions", 37),
        ("IncrementalAlterConfigs", 44),
        ("DescribeCluster", 60),
    ]:
        cls = message_class(f"{name}Request")
        assert implemented_versions()[key] == (cls.MIN_VERSION, cls.MAX_VERSION), name


# --- CreateTopics -------------------------------------------------------------------------------

CT = "CreateTopicsRequest"


def creatable(
    name: str,
    partitions: int = -1,
    factor: int = -1,
    configs: dict[str, str | None] | None = None,
    assignments: dict[int, list[int]] | None = None,
) -> Any:
    return sub(CT, "topics")(
        name=name,
        num_partitions=partitions,
        replication_factor=factor,
        assignments=[
            sub(CT, "topics", "assignments")(partition_index=i, broker_ids=ids)
            for i, ids in (assignments or {}).items()
        ],
        configs=[sub(CT, "topics", "configs")(name=k, value=v) for k, v in (configs or {}).items()],
    )


def create(state: BrokerState, version: int, *topics: Any, validate_only: bool = False) -> Any:
    response = call(
        state,
        "CreateTopics",
        version,
        topics=list(topics),
        timeout_ms=1000,
        validate_only=validate_only,
    )
    return {t.name: t for t in response.topics}


@pytest.mark.parametrize("version", versions("CreateTopics"))
def test_create_topics(state: BrokerState, version: int) -> None:
    got = create(state, version, creatable("a", 3, 1, {"retention.ms": "1000"}), creatable("b"))
    assert got["a"].error_code == NONE and got["b"].error_code == NONE
    assert len(state.topics["a"].partitions) == 3
    assert state.topics["a"].configs == {"retention.ms": "1000"}
    assert len(state.topics["b"].partitions) == 1  # num.partitions
    if version >= 1:
        assert got["a"].error_message is None
    if version >= 5:
        assert (got["a"].num_partitions, got["a"].replication_factor) == (3, 1)
        configs = {c.name: c for c in got["a"].configs}
        assert set(configs) == TOPIC_CONFIGS_4_3
        assert [c.name for c in got["a"].configs] == sorted(configs)
        assert configs["retention.ms"].value == "1000"
        assert configs["retention.ms"].config_source == ConfigSource.DYNAMIC_TOPIC_CONFIG
        assert configs["segment.bytes"].value == "1073741824"
        assert configs["segment.bytes"].config_source == ConfigSource.DEFAULT_CONFIG
        assert not configs["segment.bytes"].read_only
        assert not configs["segment.bytes"].is_sensitive
    if version >= 7:
        assert got["a"].topic_id == state.topics["a"].topic_id
        assert got["b"].topic_id == state.topics["b"].topic_id


@pytest.mark.parametrize("version", range(1, 8))
def test_create_topics_validate_only(state: BrokerState, version: int) -> None:
    got = create(state, version, creatable("v", 2), validate_only=True)
    assert got["v"].error_code == NONE
    assert "v" not in state.topics
    assert not any(p.startswith("v-") for p in os.listdir(state.path))
    if version >= 5:
        assert got["v"].num_partitions == 2
    got = create(state, version, creatable("v", 2, 3), validate_only=True)
    assert got["v"].error_code == ErrorCode.INVALID_REPLICATION_FACTOR


def expect(result: Any, version: int, error: ErrorCode, message: str | None) -> None:
    assert result.error_code == error, (result, version)
    if version >= 1:
        assert result.error_message == message


@pytest.mark.parametrize("version", versions("CreateTopics"))
def test_create_topics_errors(state: BrokerState, version: int) -> None:
    state.create_topic("exists")
    state.create_topic("my.topic")
    got = create(
        state,
        version,
        creatable("exists"),
        creatable("bad/name"),
        creatable("my_topic"),
        creatable("rf", 1, 3),
        creatable("rf0", 1, 0),
        creatable("p0", 0),
        creatable("dup"),
        creatable("dup", 2),
        creatable("unknown-config", configs={"no.such.config": "1"}),
        creatable("bad-value", configs={"retention.ms": "soon"}),
        creatable("null-value", configs={"retention.ms": None, "segment.ms": None}),
        creatable("__cluster_metadata"),
    )
    expect(got["exists"], version, ErrorCode.TOPIC_ALREADY_EXISTS, "Topic 'exists' already exists.")
    expect(
        got["bad/name"],
        version,
        ErrorCode.INVALID_TOPIC_EXCEPTION,
        'Topic name "bad/name" is illegal, it contains a character other than ASCII '
        "alphanumerics, '.', '_' and '-'",
    )
    expect(
        got["my_topic"],
        version,
        ErrorCode.INVALID_TOPIC_EXCEPTION,
        "Topic 'my_topic' collides with existing topic: my.topic",
    )
    expect(
        got["rf"],
        version,
        ErrorCode.INVALID_REPLICATION_FACTOR,
        "Unable to replicate the partition 3 time(s): The target replication factor of 3 "
        "cannot be reached because only 1 broker(s) are registered.",
    )
    expect(
        got["rf0"],
        version,
        ErrorCode.INVALID_REPLICATION_FACTOR,
        "Replication factor must be larger than 0, or -1 to use the default value.",
    )
    expect(
        got["p0"],
        version,
        ErrorCode.INVALID_PARTITIONS,
        "Number of partitions was set to an invalid non-positive value.",
    )
    expect(got["dup"], version, ErrorCode.INVALID_REQUEST, "Duplicate topic name.")
    expect(
        got["unknown-config"],
        version,
        ErrorCode.INVALID_CONFIG,
        "Unknown topic config name: no.such.config",
    )
    assert got["bad-value"].error_code == ErrorCode.INVALID_CONFIG
    if version >= 1:
        assert got["bad-value"].error_message.startswith(
            "Invalid value soon for configuration retention.ms"
        )
    expect(
        got["null-value"],
        version,
        ErrorCode.INVALID_CONFIG,
        "Null value not supported for topic configs: retention.ms,segment.ms",
    )
    expect(
        got["__cluster_metadata"],
        version,
        ErrorCode.INVALID_REQUEST,
        "Creation of internal topic __cluster_metadata is prohibited.",
    )
    assert set(state.topics) == {"exists", "my.topic"}
    if version >= 5:
        assert got["rf"].num_partitions == -1 and got["rf"].configs == []
    if version >= 7:
        assert got["rf"].topic_id == ZERO


@pytest.mark.parametrize("version", versions("CreateTopics"))
def test_create_topics_manual_assignments(state: BrokerState, version: int) -> None:
    got = create(
        state,
        version,
        creatable("ok", assignments={0: [1], 1: [1]}),
        creatable("other", assignments={0: [2]}),
        creatable("twice", assignments={0: [1, 1]}),
        creatable("empty", assignments={0: []}),
        creatable("gap", assignments={0: [1], 2: [1]}),
        creatable("count", partitions=2, assignments={0: [1]}),
        creatable("factor", factor=1, assignments={0: [1]}),
    )
    assert got["ok"].error_code == NONE
    assert len(state.topics["ok"].partitions) == 2
    if version >= 5:
        assert (got["ok"].num_partitions, got["ok"].replication_factor) == (2, 1)
    expect(
        got["other"],
        version,
        ErrorCode.INVALID_REPLICA_ASSIGNMENT,
        "The manual partition assignment includes broker 2, but no such broker is registered.",
    )
    expect(
        got["twice"],
        version,
        ErrorCode.INVALID_REPLICA_ASSIGNMENT,
        "The manual partition assignment includes the broker 1 more than once.",
    )
    expect(
        got["empty"],
        version,
        ErrorCode.INVALID_REPLICA_ASSIGNMENT,
        "The manual partition assignment includes an empty replica list.",
    )
    expect(
        got["gap"],
        version,
        ErrorCode.INVALID_REPLICA_ASSIGNMENT,
        "partitions should be a consecutive 0-based integer sequence",
    )
    expect(
        got["count"],
        version,
        ErrorCode.INVALID_REQUEST,
        "A manual partition assignment was specified, but numPartitions was not set to -1.",
    )
    expect(
        got["factor"],
        version,
        ErrorCode.INVALID_REQUEST,
        "A manual partition assignment was specified, but replication factor was not set to -1.",
    )
    assert set(state.topics) == {"ok"}


def test_create_topics_uses_broker_defaults(tmp_path: Path) -> None:
    s = make_state(tmp_path / "d", **{"num.partitions": "4", "log.retention.hours": "1"})
    try:
        got = create(s, 7, creatable("t"))
        assert got["t"].num_partitions == 4
        configs = {c.name: c for c in got["t"].configs}
        assert configs["retention.ms"].value == "3600000"
        assert configs["retention.ms"].config_source == ConfigSource.STATIC_BROKER_CONFIG
    finally:
        s.close()
    s = make_state(tmp_path / "e", **{"default.replication.factor": "2"})
    try:
        got = create(s, 7, creatable("t"))
        assert got["t"].error_code == ErrorCode.INVALID_REPLICATION_FACTOR
        assert got["t"].error_message.startswith("Unable to replicate the partition 2 time(s)")
    finally:
        s.close()


# --- DeleteTopics -------------------------------------------------------------------------------


def delete_topics(state: BrokerState, version: int, *targets: str | uuid.UUID) -> list[Any]:
    if version >= 6:
        cls = sub("DeleteTopicsRequest", "topics")
        topics = [
            cls(name=t, topic_id=ZERO) if isinstance(t, str) else cls(name=None, topic_id=t)
            for t in targets
        ]
        response = call(state, "DeleteTopics", version, topics=topics, timeout_ms=1000)
    else:
        response = call(state, "DeleteTopics", version, topic_names=list(targets), timeout_ms=1000)
    return list(response.responses)


@pytest.mark.parametrize("version", versions("DeleteTopics"))
def test_delete_topics(state: BrokerState, version: int) -> None:
    a = state.create_topic("a", 2)
    state.create_topic("b")
    state.create_topic("__consumer_offsets", 1)
    a_dir = Path(state.path) / "a-0"
    assert a_dir.exists()
    out = {r.name: r for r in delete_topics(state, version, "a", "missing", "__consumer_offsets")}
    assert out["a"].error_code == NONE
    assert out["missing"].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert out["__consumer_offsets"].error_code == NONE  # a KRaft controller deletes it
    if version >= 5:
        assert out["a"].error_message is None
    if version >= 6:
        assert out["a"].topic_id == a.topic_id
    assert set(state.topics) == {"b"}
    assert not a_dir.exists()
    dup = delete_topics(state, version, "b", "b")
    assert [(r.name, r.error_code) for r in dup] == [("b", ErrorCode.INVALID_REQUEST)]
    if version >= 5:
        assert dup[0].error_message == "Duplicate topic name."
    assert "b" in state.topics


def test_delete_topics_by_id(state: BrokerState) -> None:
    b = state.create_topic("b")
    c = state.create_topic("c")
    b_id, c_id, unknown = b.topic_id, c.topic_id, uuid.uuid4()
    out = delete_topics(state, 6, b_id, unknown, c_id, "c")
    by = {(r.name, r.topic_id): r for r in out}
    assert by[("b", b_id)].error_code == NONE
    assert by[(None, unknown)].error_code == ErrorCode.UNKNOWN_TOPIC_ID
    assert by[(None, unknown)].error_message is None
    assert by[("c", c_id)].error_code == ErrorCode.INVALID_REQUEST
    assert by[("c", c_id)].error_message == (
        "The provided topic name maps to an ID that was already supplied."
    )
    assert set(state.topics) == {"c"}
    cls = sub("DeleteTopicsRequest", "topics")
    response = call(
        state,
        "DeleteTopics",
        6,
        timeout_ms=0,
        topics=[cls(name="c", topic_id=c_id), cls(name=None, topic_id=ZERO)],
    )
    assert [(r.error_code, r.error_message) for r in response.responses] == [
        (ErrorCode.INVALID_REQUEST, "You may not specify both topic name and topic id."),
        (ErrorCode.INVALID_REQUEST, "Neither topic name nor id were specified."),
    ]


@pytest.mark.parametrize("version", versions("DeleteTopics"))
def test_delete_topics_disabled(tmp_path: Path, version: int) -> None:
    s = make_state(tmp_path / "d", **{"delete.topic.enable": "false"})
    try:
        s.create_topic("a")
        out = delete_topics(s, version, "a")
        expected = ErrorCode.INVALID_REQUEST if version < 3 else ErrorCode.TOPIC_DELETION_DISABLED
        assert [(r.name, r.error_code) for r in out] == [("a", expected)]
        assert "a" in s.topics
    finally:
        s.close()


# --- CreatePartitions ---------------------------------------------------------------------------


def create_partitions(
    state: BrokerState,
    version: int,
    *wanted: tuple[str, int, list[list[int]] | None],
    validate_only: bool = False,
) -> dict[str, Any]:
    tcls = sub("CreatePartitionsRequest", "topics")
    acls = sub("CreatePartitionsRequest", "topics", "assignments")
    topics = [
        tcls(
            name=name,
            count=count,
            assignments=None if assign is None else [acls(broker_ids=ids) for ids in assign],
        )
        for name, count, assign in wanted
    ]
    response = call(
        state,
        "CreatePartitions",
        version,
        topics=topics,
        timeout_ms=1000,
        validate_only=validate_only,
    )
    return {r.name: r for r in response.results}


@pytest.mark.parametrize("version", versions("CreatePartitions"))
def test_create_partitions(state: BrokerState, version: int) -> None:
    for name in ("grow", "same", "less", "assigned", "foreign", "short", "dry"):
        state.create_topic(name, 2)
    got = create_partitions(
        state,
        version,
        ("grow", 4, None),
        ("same", 2, None),
        ("less", 1, None),
        ("assigned", 3, [[1]]),
        ("foreign", 3, [[5]]),
        ("short", 4, [[1]]),
        ("missing", 3, None),
        ("dup", 3, None),
        ("dup", 4, None),
    )
    assert (got["grow"].error_code, got["grow"].error_message) == (NONE, None)
    assert len(state.topics["grow"].partitions) == 4
    assert (Path(state.path) / "grow-3").is_dir()
    assert got["assigned"].error_code == NONE
    assert len(state.topics["assigned"].partitions) == 3
    assert (got["same"].error_code, got["same"].error_message) == (
        ErrorCode.INVALID_PARTITIONS,
        "Topic already has 2 partition(s).",
    )
    assert (got["less"].error_code, got["less"].error_message) == (
        ErrorCode.INVALID_PARTITIONS,
        "The topic less currently has 2 partition(s); 1 would not be an increase.",
    )
    assert (got["foreign"].error_code, got["foreign"].error_message) == (
        ErrorCode.INVALID_REPLICA_ASSIGNMENT,
        "The manual partition assignment includes broker 5, but no such broker is registered.",
    )
    assert (got["short"].error_code, got["short"].error_message) == (
        ErrorCode.INVALID_REPLICA_ASSIGNMENT,
        "Attempted to add 2 additional partition(s), but only 1 assignment(s) were specified.",
    )
    assert (got["missing"].error_code, got["missing"].error_message) == (
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        None,
    )
    assert (got["dup"].error_code, got["dup"].error_message) == (
        ErrorCode.INVALID_REQUEST,
        "Duplicate topic name.",
    )
    for name in ("same", "less", "foreign", "short"):
        assert len(state.topics[name].partitions) == 2
    got = create_partitions(state, version, ("dry", 5, None), validate_only=True)
    assert got["dry"].error_code == NONE
    assert len(state.topics["dry"].partitions) == 2


# --- DescribeConfigs ----------------------------------------------------------------------------

DC = "DescribeConfigsRequest"


def describe_configs(
    state: BrokerState,
    version: int,
    *resources: tuple[int, str, list[str] | None],
    synonyms: bool = False,
) -> list[Any]:
    cls = sub(DC, "resources")
    response = call(
        state,
        "DescribeConfigs",
        version,
        resources=[
            cls(resource_type=t, resource_name=n, configuration_keys=k) for t, n, k in resources
        ],
        include_synonyms=synonyms and version >= 1,
        include_documentation=version >= 3,
    )
    return list(response.results)


@pytest.mark.parametrize("version", versions("DescribeConfigs"))
def test_describe_topic_configs(tmp_path: Path, version: int) -> None:
    s = make_state(tmp_path / "d", **{"log.retention.hours": "2"})
    try:
        s.create_topic("t", 1, {"cleanup.policy": "compact"})
        (result,) = describe_configs(s, version, (2, "t", None), synonyms=True)
        assert (result.error_code, result.error_message) == (NONE, None)
        assert (result.resource_type, result.resource_name) == (2, "t")
        configs = {c.name: c for c in result.configs}
        assert set(configs) == TOPIC_CONFIGS_4_3
        policy, retention, segment = (
            configs["cleanup.policy"],
            configs["retention.ms"],
            configs["segment.bytes"],
        )
        assert policy.value == "compact" and not policy.read_only and not policy.is_sensitive
        assert retention.value == "7200000"
        assert segment.value == "1073741824"
        if version == 0:
            assert (policy.is_default, retention.is_default, segment.is_default) == (
                False,
                False,
                True,
            )
        else:
            assert policy.config_source == ConfigSource.DYNAMIC_TOPIC_CONFIG
            assert retention.config_source == ConfigSource.STATIC_BROKER_CONFIG
            assert segment.config_source == ConfigSource.DEFAULT_CONFIG
            assert [(y.name, y.value, y.source) for y in policy.synonyms] == [
                ("cleanup.policy", "compact", ConfigSource.DYNAMIC_TOPIC_CONFIG),
                ("log.cleanup.policy", "delete", ConfigSource.DEFAULT_CONFIG),
            ]
            assert (retention.synonyms[0].name, retention.synonyms[0].source) == (
                "log.retention.ms",
                ConfigSource.STATIC_BROKER_CONFIG,
            )
        if version >= 3:
            assert policy.config_type == ConfigType.LIST
            assert segment.config_type == ConfigType.INT
            assert policy.documentation is None
        (plain,) = describe_configs(s, version, (2, "t", ["retention.ms", "nope"]))
        assert [c.name for c in plain.configs] == ["retention.ms"]
        if version >= 1:
            assert plain.configs[0].synonyms == []
        (everything,) = describe_configs(s, version, (2, "t", []))
        assert len(everything.configs) == len(TOPIC_CONFIGS_4_3)
        missing, bad = describe_configs(s, version, (2, "missing", None), (2, "a/b", None))
        assert (missing.error_code, missing.error_message, missing.configs) == (
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            None,
            [],
        )
        assert bad.error_code == ErrorCode.INVALID_TOPIC_EXCEPTION
    finally:
        s.close()


@pytest.mark.parametrize("version", versions("DescribeConfigs"))
def test_describe_broker_configs(state: BrokerState, version: int) -> None:
    node, default, other, word, logger, empty_logger, unknown = describe_configs(
        state,
        version,
        (4, "1", None),
        (4, "", None),
        (4, "2", None),
        (4, "one", None),
        (8, "1", None),
        (8, "", None),
        (99, "x", None),
    )
    assert node.error_code == NONE
    configs = {c.name: c for c in node.configs}
    assert configs["node.id"].value == "1" and configs["node.id"].read_only
    assert configs["log.dirs"].value == state.path
    assert configs["num.partitions"].value == "1" and configs["num.partitions"].read_only
    assert not configs["log.retention.bytes"].read_only  # dynamic in Kafka
    if version >= 1:
        assert configs["num.partitions"].config_source == ConfigSource.DEFAULT_CONFIG
    assert (default.error_code, default.configs) == (NONE, [])
    assert (other.error_code, other.error_message) == (
        ErrorCode.INVALID_REQUEST,
        "Unexpected broker id, expected 1 or empty string, but received 2",
    )
    assert (word.error_code, word.error_message) == (
        ErrorCode.INVALID_REQUEST,
        "Broker id must be an integer, but it is: one",
    )
    assert logger.error_code == NONE
    levels = {c.name: c for c in logger.configs}
    assert levels["root"].value in ("TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL")
    if version >= 1:
        assert levels["root"].config_source == ConfigSource.DYNAMIC_BROKER_LOGGER_CONFIG
    assert (empty_logger.error_code, empty_logger.error_message) == (
        ErrorCode.INVALID_REQUEST,
        "Broker id must not be empty",
    )
    assert unknown.error_code == ErrorCode.INVALID_REQUEST


# --- AlterConfigs -------------------------------------------------------------------------------

AC = "AlterConfigsRequest"


def alter_configs(
    state: BrokerState,
    version: int,
    *resources: tuple[int, str, dict[str, str | None]],
    validate_only: bool = False,
) -> list[Any]:
    rcls, ccls = sub(AC, "resources"), sub(AC, "resources", "configs")
    response = call(
        state,
        "AlterConfigs",
        version,
        resources=[
            rcls(
                resource_type=t,
                resource_name=n,
                configs=[ccls(name=k, value=v) for k, v in c.items()],
            )
            for t, n, c in resources
        ],
        validate_only=validate_only,
    )
    return [(r.resource_name, r.error_code, r.error_message) for r in response.responses]


@pytest.mark.parametrize("version", versions("AlterConfigs"))
def test_alter_configs(state: BrokerState, version: int) -> None:
    state.create_topic("t", 1, {"retention.ms": "1000", "cleanup.policy": "compact"})
    assert alter_configs(state, version, (2, "t", {"segment.ms": "60000"})) == [("t", NONE, None)]
    assert state.topics["t"].configs == {"segment.ms": "60000"}  # the whole set replaced
    assert alter_configs(state, version, (2, "t", {"segment.ms": "1"}), validate_only=True) == [
        ("t", NONE, None)
    ]
    assert state.topics["t"].configs == {"segment.ms": "60000"}
    out = alter_configs(
        state,
        version,
        (2, "t", {"retention.ms": "later"}),
        (2, "missing", {"retention.ms": "1"}),
        (2, "", {}),
        (2, "dup", {}),
        (2, "dup", {}),
        (4, "1", {"num.partitions": "3"}),
        (4, "2", {}),
        (8, "1", {}),
    )
    assert out[0][:2] == ("t", ErrorCode.INVALID_CONFIG)
    assert out[0][2].startswith("Invalid value later for configuration retention.ms")
    assert out[1:] == [
        ("missing", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The topic 'missing' does not exist."),
        ("", ErrorCode.INVALID_REQUEST, "Default topic resources are not allowed."),
        ("dup", ErrorCode.INVALID_REQUEST, "Each resource must appear at most once."),
        ("dup", ErrorCode.INVALID_REQUEST, "Each resource must appear at most once."),
        (
            "1",
            ErrorCode.INVALID_REQUEST,
            "Cannot update these configs dynamically: Set(num.partitions)",
        ),
        ("2", ErrorCode.INVALID_REQUEST, "Unexpected broker id, expected 1, but received 2"),
        ("1", ErrorCode.INVALID_REQUEST, "Unknown resource type 8"),
    ]
    assert alter_configs(state, version, (4, "1", {}), (4, "", {})) == [
        ("1", NONE, None),
        ("", NONE, None),
    ]
    assert state.topics["t"].configs == {"segment.ms": "60000"}
    rcls, ccls = sub(AC, "resources"), sub(AC, "resources", "configs")
    response = call(
        state,
        "AlterConfigs",
        version,
        validate_only=False,
        resources=[
            rcls(
                resource_type=2,
                resource_name="t",
                configs=[ccls(name="a", value="1"), ccls(name="a", value="2")],
            ),
            rcls(
                resource_type=2,
                resource_name="t2",
                configs=[ccls(name="a", value=None), ccls(name="b", value=None)],
            ),
        ],
    )
    assert [(r.error_code, r.error_message) for r in response.responses] == [
        (ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys"),
        (ErrorCode.INVALID_REQUEST, "Null value not supported for : a, b"),
    ]


# --- IncrementalAlterConfigs --------------------------------------------------------------------

IAC = "IncrementalAlterConfigsRequest"
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


def incremental(
    state: BrokerState,
    version: int,
    *resources: tuple[int, str, list[tuple[str, int, str | None]]],
    validate_only: bool = False,
) -> list[Any]:
    rcls, ccls = sub(IAC, "resources"), sub(IAC, "resources", "configs")
    response = call(
        state,
        "IncrementalAlterConfigs",
        version,
        resources=[
            rcls(
                resource_type=t,
                resource_name=n,
                configs=[ccls(name=k, config_operation=op, value=v) for k, op, v in ops],
            )
            for t, n, ops in resources
        ],
        validate_only=validate_only,
    )
    return [(r.resource_name, r.error_code, r.error_message) for r in response.responses]


@pytest.mark.parametrize("version", versions("IncrementalAlterConfigs"))
def test_incremental_alter_configs(state: BrokerState, version: int) -> None:
    state.create_topic("t", 1, {"retention.ms": "1000"})
    ok = [("t", NONE, None)]
    assert incremental(state, version, (2, "t", [("segment.ms", SET, "60000")])) == ok
    assert state.topics["t"].configs == {"retention.ms": "1000", "segment.ms": "60000"}
    assert incremental(state, version, (2, "t", [("retention.ms", DELETE, None)])) == ok
    assert state.topics["t"].configs == {"segment.ms": "60000"}
    assert incremental(state, version, (2, "t", [("cleanup.policy", APPEND, "compact")])) == ok
    assert state.topics["t"].configs["cleanup.policy"] == "delete,compact"
    assert incremental(state, version, (2, "t", [("cleanup.policy", SUBTRACT, "delete")])) == ok
    assert state.topics["t"].configs["cleanup.policy"] == "compact"
    assert (
        incremental(state, version, (2, "t", [("segment.ms", SET, "1")]), validate_only=True) == ok
    )
    assert state.topics["t"].configs["segment.ms"] == "60000"
    out = incremental(
        state,
        version,
        (2, "t", [("retention.ms", APPEND, "1")]),
        (2, "missing", [("retention.ms", SET, "1")]),
        (2, "t2", [("a", SET, "1"), ("a", DELETE, None)]),
        (2, "t3", [("a", SET, None)]),
        (2, "t4", [("a", 7, "x")]),
        (4, "1", [("log.segment.bytes", SET, "100000")]),
        (4, "x", []),
    )
    assert out == [
        (
            "t",
            ErrorCode.INVALID_CONFIG,
            "Can't APPEND to key retention.ms because its type is not LIST.",
        ),
        ("missing", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The topic 'missing' does not exist."),
        ("t2", ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys"),
        ("t3", ErrorCode.INVALID_REQUEST, "Null value not supported for : a"),
        ("t4", ErrorCode.INVALID_REQUEST, "Unknown operations type 7"),
        ("1", NONE, None),  # a dynamic broker config (kept as a ConfigRecord)
        ("x", ErrorCode.INVALID_REQUEST, "Node id must be an integer, but it is: x"),
    ]
    assert state.dynamic_broker_configs("1") == {"log.segment.bytes": "100000"}
    bad = incremental(state, version, (2, "t", [("segment.ms", SET, "0")]))
    assert bad[0][1] == ErrorCode.INVALID_CONFIG
    assert bad[0][2].startswith("Invalid value 0 for configuration segment.ms")
    assert state.topics["t"].configs == {"segment.ms": "60000", "cleanup.policy": "compact"}


@pytest.mark.parametrize("version", versions("IncrementalAlterConfigs"))
def test_incremental_alter_broker_logger(state: BrokerState, version: int) -> None:
    logger = logging.getLogger("kwire.broker")
    before = logger.level
    try:
        out = incremental(state, version, (8, "1", [("kwire.broker", SET, "DEBUG")]))
        assert out == [("1", NONE, None)]
        assert logger.level == logging.DEBUG
        (entry,) = [c for c in describe_configs(state, 1, (8, "1", ["kwire.broker"]))[0].configs]
        assert entry.value == "DEBUG"
        out = incremental(
            state,
            version,
            (8, "1", [("kwire.broker", SET, "LOUD")]),
            (8, "1", [("root", DELETE, None)]),
            (8, "1", [("no.such.logger", SET, "INFO")]),
            (8, "1", [("kwire.broker", APPEND, "INFO")]),
        )
        assert (
            out
            == [
                ("1", ErrorCode.INVALID_REQUEST, "Each resource must appear at most once."),
            ]
            * 4
        )
        assert incremental(state, version, (8, "1", [("kwire.broker", SET, "LOUD")])) == [
            (
                "1",
                ErrorCode.INVALID_CONFIG,
                "Cannot set the log level of kwire.broker to LOUD as it is not a supported log "
                "level. Valid log levels are DEBUG, ERROR, FATAL, INFO, TRACE, WARN",
            ),
        ]
        assert incremental(state, version, (8, "1", [("root", DELETE, None)])) == [
            (
                "1",
                ErrorCode.INVALID_REQUEST,
                "Removing the log level of the root logger is not allowed",
            ),
        ]
        assert incremental(state, version, (8, "1", [("no.such.logger", SET, "INFO")])) == [
            ("1", ErrorCode.INVALID_CONFIG, "Logger no.such.logger does not exist!"),
        ]
        assert incremental(state, version, (8, "1", [("kwire.broker", DELETE, None)])) == [
            ("1", NONE, None),
        ]
        assert logger.level == logging.NOTSET
    finally:
        logger.setLevel(before)


# --- DescribeCluster ----------------------------------------------------------------------------


@pytest.mark.parametrize("version", versions("DescribeCluster"))
def test_describe_cluster(state: BrokerState, version: int) -> None:
    for include in (False, True):
        r = call(
            state,
            "DescribeCluster",
            version,
            include_cluster_authorized_operations=include,
            endpoint_type=1,
            include_fenced_brokers=version >= 2,
        )
        assert (r.error_code, r.error_message) == (NONE, None)
        assert r.cluster_id == state.cluster_id and r.controller_id == 1
        assert [(b.broker_id, b.host, b.port, b.rack) for b in r.brokers] == [
            (1, "h.example", 19092, None)
        ]
        if version >= 2:
            assert r.brokers[0].is_fenced is False
        assert r.cluster_authorized_operations == (CLUSTER_OPERATIONS if include else -(2**31))
    if version >= 1:
        r = call(state, "DescribeCluster", version, endpoint_type=2)
        assert (r.error_code, r.error_message) == (
            ErrorCode.MISMATCHED_ENDPOINT_TYPE,
            "The request was sent to an endpoint of type BROKER, but we wanted an endpoint of "
            "type CONTROLLER",
        )
        r = call(state, "DescribeCluster", version, endpoint_type=9)
        assert (r.error_code, r.error_message) == (
            ErrorCode.UNSUPPORTED_ENDPOINT_TYPE,
            "Unsupported endpoint type 9",
        )


# --- DescribeLogDirs ----------------------------------------------------------------------------


@pytest.mark.parametrize("version", versions("DescribeLogDirs"))
def test_describe_log_dirs(state: BrokerState, version: int) -> None:
    state.create_topic("a", 2)
    state.create_topic("b")
    produce(state, "a", 3, partition=1)
    r = call(state, "DescribeLogDirs", version, topics=None)
    if version >= 3:
        assert r.error_code == NONE
    (result,) = r.results
    assert result.error_code == NONE
    assert result.log_dir == os.path.abspath(state.path)
    sizes = {(t.name, p.partition_index): p for t in result.topics for p in t.partitions}
    assert set(sizes) == {("a", 0), ("a", 1), ("b", 0)}
    assert sizes[("a", 1)].partition_size == state.topics["a"].partitions[1].log.size_in_bytes() > 0
    assert sizes[("a", 0)].partition_size == 0
    assert all(p.offset_lag == 0 and not p.is_future_key for p in sizes.values())
    if version >= 4:
        assert result.total_bytes > 0 and 0 <= result.usable_bytes <= result.total_bytes
    tcls = sub("DescribeLogDirsRequest", "topics")
    r = call(
        state,
        "DescribeLogDirs",
        version,
        topics=[tcls(topic="a", partitions=[1, 7]), tcls(topic="missing", partitions=[0])],
    )
    assert [(t.name, [p.partition_index for p in t.partitions]) for t in r.results[0].topics] == [
        ("a", [1])
    ]


# --- DeleteRecords ------------------------------------------------------------------------------


def delete_records(state: BrokerState, version: int, topic: str, *offsets: tuple[int, int]) -> Any:
    tcls = sub("DeleteRecordsRequest", "topics")
    pcls = sub("DeleteRecordsRequest", "topics", "partitions")
    response = call(
        state,
        "DeleteRecords",
        version,
        timeout_ms=1000,
        topics=[
            tcls(name=topic, partitions=[pcls(partition_index=p, offset=o) for p, o in offsets])
        ],
    )
    (result,) = response.topics
    assert result.name == topic
    return [(p.partition_index, p.error_code, p.low_watermark) for p in result.partitions]


@pytest.mark.parametrize("version", versions("DeleteRecords"))
def test_delete_records(state: BrokerState, version: int) -> None:
    state.create_topic("t", 2)
    produce(state, "t", 5, partition=0)
    produce(state, "t", 4, partition=1)
    assert delete_records(state, version, "t", (0, 3), (1, -1), (2, 0)) == [
        (0, NONE, 3),
        (1, NONE, 4),
        (2, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1),
    ]
    assert state.topics["t"].partitions[0].log.log_start_offset == 3
    assert delete_records(state, version, "t", (0, 6), (0, -5)) == [
        (0, ErrorCode.OFFSET_OUT_OF_RANGE, -1),
        (0, ErrorCode.OFFSET_OUT_OF_RANGE, -1),
    ]
    assert delete_records(state, version, "t", (0, 1)) == [(0, NONE, 3)]  # never moves back
    assert delete_records(state, version, "missing", (0, 0)) == [
        (0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1)
    ]
    state.create_topic("compacted", 1, {"cleanup.policy": "compact"})
    assert delete_records(state, version, "compacted", (0, 0)) == [
        (0, ErrorCode.POLICY_VIOLATION, -1)
    ]
    state.create_topic("__consumer_offsets", 1)
    assert delete_records(state, version, "__consumer_offsets", (0, 0)) == [
        (0, ErrorCode.INVALID_TOPIC_EXCEPTION, -1)
    ]
