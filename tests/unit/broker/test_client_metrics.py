"""Client metrics subscriptions (KIP-714): CLIENT_METRICS config resources through
IncrementalAlterConfigs and DescribeConfigs, and ListConfigResources (API 74) v0 and v1.

Kafka's rules (``ClientMetricsConfigs.validate``, ``ConfigurationControlManager``,
``KafkaApis.handleListConfigResources``): the keys metrics, interval.ms (100..3600000) and match
(``selector=regex``); INVALID_REQUEST for an empty name, an unknown key or an interval out of
range; INVALID_CONFIG for a value that does not parse, a bad pattern, or APPEND on a non-LIST
key; the subscription is ConfigRecords in ``__cluster_metadata`` and survives a restart.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kwire.broker import BrokerState
from kwire.protocol import ErrorCode, message_class, struct_class
from tests.unit.broker.test_txn import call, make_state

INCREMENTAL = message_class("IncrementalAlterConfigsRequest")
ALTER_RESOURCE = struct_class(INCREMENTAL, "resources")
ALTER_OP = struct_class(INCREMENTAL, "resources", "configs")
DESCRIBE = message_class("DescribeConfigsRequest")
DESCRIBE_RESOURCE = struct_class(DESCRIBE, "resources")
CLIENT_METRICS = 16


def alter(state: BrokerState, name: str, *ops: tuple[int, str, str | None]) -> tuple[int, Any]:
    resource = ALTER_RESOURCE(
        resource_type=CLIENT_METRICS,
        resource_name=name,
        configs=[ALTER_OP(name=k, config_operation=o, value=v) for o, k, v in ops],
    )
    response = call(state, "IncrementalAlterConfigs", 1, resources=[resource], validate_only=False)
    (result,) = response.responses
    return result.error_code, result.error_message


def describe(state: BrokerState, name: str) -> tuple[int, dict[str, tuple[str, int]]]:
    resource = DESCRIBE_RESOURCE(
        resource_type=CLIENT_METRICS, resource_name=name, configuration_keys=None
    )
    response = call(
        state,
        "DescribeConfigs",
        4,
        resources=[resource],
        include_synonyms=False,
        include_documentation=False,
    )
    (result,) = response.results
    return result.error_code, {c.name: (c.value, c.config_source) for c in result.configs}


def listed(state: BrokerState, version: int, *types: int) -> tuple[int, list[tuple[int, str]]]:
    fields: dict[str, Any] = {"resource_types": list(types)} if version >= 1 else {}
    response = call(state, "ListConfigResources", version, **fields)
    return response.error_code, [
        (r.resource_type, r.resource_name) for r in response.config_resources
    ]


@pytest.fixture
def state(tmp_path: Path) -> Any:
    s = make_state(tmp_path / "d")
    yield s
    s.close()


def test_subscription_set_described_listed_and_kept(tmp_path: Path) -> None:
    state = make_state(tmp_path / "d")
    try:
        assert alter(
            state,
            "sub-1",
            (0, "metrics", "org.apache.kafka.producer."),
            (0, "interval.ms", "1000"),
            (0, "match", "client_software_name=confluent-kafka-python, client_id=app-.*"),
        ) == (0, None)
        assert alter(state, "sub-1", (2, "metrics", "org.apache.kafka.consumer.")) == (0, None)
        error, configs = describe(state, "sub-1")
        assert error == 0
        assert configs == {
            "interval.ms": ("1000", 7),  # CLIENT_METRICS_CONFIG
            "match": ("client_software_name=confluent-kafka-python, client_id=app-.*", 7),
            "metrics": ("org.apache.kafka.producer.,org.apache.kafka.consumer.", 7),
        }
        assert describe(state, "nothing-here") == (0, {})
        assert alter(state, "sub-2", (0, "interval.ms", "100")) == (0, None)
        assert listed(state, 0) == (0, [(16, "sub-1"), (16, "sub-2")])
    finally:
        state.close()
    again = make_state(tmp_path / "d")
    try:
        assert describe(again, "sub-1")[1]["interval.ms"] == ("1000", 7)
        # Deleting every key removes the subscription.
        assert alter(again, "sub-2", (1, "interval.ms", None)) == (0, None)
        assert listed(again, 1, 16) == (0, [(16, "sub-1")])
    finally:
        again.close()


@pytest.mark.parametrize(
    ("ops", "error", "message"),
    [
        (
            [(0, "color", "red")],
            ErrorCode.INVALID_REQUEST,
            "Unknown client metrics configuration: color",
        ),
        (
            [(0, "interval.ms", "99")],
            ErrorCode.INVALID_REQUEST,
            "Invalid value 99 for interval.ms, interval must be between 100 and 3600000 (1 hour)",
        ),
        (
            [(0, "interval.ms", "soon")],
            ErrorCode.INVALID_CONFIG,
            "Invalid value soon for configuration interval.ms: Not a number of type INT",
        ),
        (
            [(0, "match", "client_colour=blue")],
            ErrorCode.INVALID_CONFIG,
            "Illegal client matching pattern: client_colour=blue",
        ),
        (
            [(0, "match", "client_id=a=b")],
            ErrorCode.INVALID_CONFIG,
            "Illegal client matching pattern: client_id=a=b",
        ),
        (
            [(0, "match", "client_id=(")],
            ErrorCode.INVALID_CONFIG,
            "Illegal client matching pattern: client_id=(",
        ),
        (
            [(2, "interval.ms", "5")],
            ErrorCode.INVALID_CONFIG,
            "Can't APPEND to key interval.ms because its type is not LIST.",
        ),
    ],
)
def test_refused_as_kafka_refuses(
    state: BrokerState, ops: list[tuple[int, str, str | None]], error: ErrorCode, message: str
) -> None:
    assert alter(state, "sub", *ops) == (error, message)
    assert describe(state, "sub") == (0, {})  # nothing written


def test_empty_names(state: BrokerState) -> None:
    assert alter(state, "", (0, "interval.ms", "1000")) == (
        ErrorCode.INVALID_REQUEST,
        "Subscription name can't be empty",
    )
    assert describe(state, "")[0] == ErrorCode.INVALID_REQUEST


def test_list_config_resources_v1(state: BrokerState) -> None:
    state.create_topic("t1", 1)
    assert alter(state, "sub", (0, "metrics", "")) == (0, None)
    error, everything = listed(state, 1)
    assert error == 0
    assert (16, "sub") in everything and (2, "t1") in everything
    assert (4, str(state.node_id)) in everything and (8, str(state.node_id)) in everything
    assert listed(state, 1, 2) == (0, [(2, "t1")])
    assert listed(state, 1, 5) == (ErrorCode.UNSUPPORTED_VERSION, [])
