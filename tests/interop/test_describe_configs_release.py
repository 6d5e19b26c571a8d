"""DescribeConfigs lists what the personality's release lists: Kafka 4.0 removed the message
formats v0/v1 (KIP-724: ``message.format.version``), down-conversion
(``message.downconversion.enable``) and the timestamp difference bound (KIP-937:
``message.timestamp.difference.max.ms``), with their broker synonyms; the broker resource lists
``listeners`` and ``advertised.listeners`` as the node runs with them. Seen by confluent-kafka."""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType

REMOVED_IN_4 = {
    "topic": {
        "message.format.version",
        "message.downconversion.enable",
        "message.timestamp.difference.max.ms",
    },
    "broker": {
        "log.message.format.version",
        "log.message.downconversion.enable",
        "log.message.timestamp.difference.max.ms",
    },
}


def describe(bootstrap: str, kind: Any, name: str) -> dict[str, Any]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    resource = ConfigResource(kind, name)
    return dict(admin.describe_configs([resource], request_timeout=20)[resource].result(timeout=20))


@pytest.mark.parametrize(("release", "removed"), [("4.3", True), ("4.0", True), ("3.9", False)])
def test_removed_configs_follow_the_release(start_broker: Any, release: str, removed: bool) -> None:
    broker = start_broker(kafka_version=release)
    broker.create_topic("t")
    topic = set(describe(broker.bootstrap, ResourceType.TOPIC, "t"))
    node = set(describe(broker.bootstrap, ResourceType.BROKER, "1"))
    if removed:
        assert not topic & REMOVED_IN_4["topic"]
        assert not node & REMOVED_IN_4["broker"]
    else:
        assert REMOVED_IN_4["topic"] <= topic
        assert REMOVED_IN_4["broker"] <= node
    assert "retention.ms" in topic and "log.retention.ms" in node


def test_the_broker_lists_its_listeners(start_broker: Any) -> None:
    broker = start_broker()
    entries = describe(broker.bootstrap, ResourceType.BROKER, "1")
    assert entries["listeners"].value == f"PLAINTEXT://127.0.0.1:{broker.port}"
    assert entries["advertised.listeners"].value == f"PLAINTEXT://127.0.0.1:{broker.port}"
    assert entries["listeners"].is_read_only
