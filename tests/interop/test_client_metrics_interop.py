"""Client metrics subscriptions (KIP-714) with real admin clients: Kafka's Java Admin (3.9.1)
creates one with IncrementalAlterConfigs on a CLIENT_METRICS resource, describes it and lists it
(``listClientMetricsResources``: ListConfigResources v0); kafka-python lists config resources
(v1, by type), describes the subscription and is refused an invalid one with Kafka's error.

confluent-kafka/librdkafka has no CLIENT_METRICS resource type in its Admin API; its telemetry
APIs (GetTelemetrySubscriptions/PushTelemetry) are advertised by Kafka only with a telemetry
receiver plugin, and kwire does not advertise them.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from typing import Any

import pytest
from interop_helpers import java_admin

pytestmark = [
    pytest.mark.interop,
    pytest.mark.filterwarnings("ignore::DeprecationWarning:kafka"),
]


@pytest.fixture
def kp_admin(broker: Any) -> Iterator[Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from kafka import KafkaAdminClient

        admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=10000)
    try:
        yield admin
    finally:
        admin.close()


def test_java_admin_and_kafka_python(broker: Any, kp_admin: Any) -> None:
    from kafka.admin import ConfigResource, ConfigResourceType

    broker.create_topic("cm-topic", 1)
    match = "client_software_name=apache-kafka-java,client_id=app-.*"
    altered, appended, described, listed, bad = java_admin(
        broker.bootstrap,
        {
            "op": "incrementalAlterConfigs",
            "clientMetrics": "java-subscription",
            "set": {"metrics": "org.apache.kafka.producer.", "interval.ms": "5000", "match": match},
        },
        {
            "op": "incrementalAlterConfigs",
            "clientMetrics": "java-subscription",
            "append": {"metrics": "org.apache.kafka.consumer."},
        },
        {"op": "describeConfigs", "clientMetrics": "java-subscription"},
        {"op": "listClientMetricsResources"},
        {
            "op": "incrementalAlterConfigs",
            "clientMetrics": "bad",
            "set": {"interval.ms": "10"},
        },
    )
    assert altered["error"] is None and appended["error"] is None, (altered, appended)
    configs = described["result"]
    assert {k: (v["value"], v["source"]) for k, v in configs.items()} == {
        "metrics": (
            "org.apache.kafka.producer.,org.apache.kafka.consumer.",
            "DYNAMIC_CLIENT_METRICS_CONFIG",
        ),
        "interval.ms": ("5000", "DYNAMIC_CLIENT_METRICS_CONFIG"),
        "match": (match, "DYNAMIC_CLIENT_METRICS_CONFIG"),
    }
    assert listed["result"] == ["java-subscription"]
    assert bad["error"] == (
        "InvalidRequestException: Invalid value 10 for interval.ms, interval must be between 100 "
        "and 3600000 (1 hour)"
    )

    # kafka-python: ListConfigResources v1 by type, DescribeConfigs, and Kafka's refusal.
    found = kp_admin.list_config_resources(["CLIENT_METRICS", "TOPIC"])
    assert sorted(found["client_metrics"]) == ["java-subscription"]
    assert "cm-topic" in found["topic"]
    every = kp_admin.list_config_resources()
    assert set(every) >= {"client_metrics", "topic", "broker", "broker_logger"}
    resource = ConfigResource(ConfigResourceType.CLIENT_METRICS, "java-subscription")
    seen = kp_admin.describe_configs([resource], config_filter="all")
    assert seen["client_metrics"]["java-subscription"]["interval.ms"]["value"] == "5000"
    refused = kp_admin.alter_configs(
        [ConfigResource(ConfigResourceType.CLIENT_METRICS, "kp", configs={"colour": "red"})],
        raise_on_unknown=False,
        incremental=True,
    )
    error = refused["client_metrics"]["kp"]
    assert "InvalidRequest" in type(error).__name__ or "InvalidRequest" in str(error), error
