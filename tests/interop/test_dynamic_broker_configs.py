"""Dynamic broker configs (Kafka's ``kafka-configs --entity-type brokers --alter``) through
confluent-kafka's IncrementalAlterConfigs: per node and cluster-wide default, applied live to the
topics' logs, shown by DescribeConfigs with their source, kept across a restart (ConfigRecords in
``__cluster_metadata``), refused for configs Kafka cannot change without a restart. The cluster
default (``--entity-default``, resource name "") goes through kwire.protocol: confluent-kafka and
kafka-python both refuse an empty resource name."""

from __future__ import annotations

from typing import Any

import pytest
import raw_requests
from confluent_kafka import KafkaException
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    ResourceType,
)

from kwire.protocol import message_class, struct_class


def alter(bootstrap: str, node: str, *ops: tuple[str, str | None, Any]) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    entries = [ConfigEntry(n, v, incremental_operation=op) for n, v, op in ops]
    resource = ConfigResource(ResourceType.BROKER, node, incremental_configs=entries)
    admin.incremental_alter_configs([resource])[resource].result(timeout=20)


def raw_call(port: int, message: Any, version: int) -> Any:
    """One request on its own connection with kwire.protocol (bounded in time)."""
    return raw_requests.exchange(port, message, version)


def alter_default(port: int, name: str, value: str) -> None:
    """``kafka-configs --entity-type brokers --entity-default --alter``: the BROKER resource
    named "" (which confluent-kafka and kafka-python both refuse to send)."""
    request = message_class("IncrementalAlterConfigsRequest")
    resource = struct_class(request, "resources")
    config = struct_class(request, "resources", "configs")
    op = config(name=name, config_operation=0, value=value)  # SET
    response = raw_call(
        port, request(resources=[resource(resource_type=4, resource_name="", configs=[op])]), 1
    )
    assert [r.error_code for r in response.responses] == [0]


def describe_default(port: int) -> dict[str, tuple[str, int]]:
    request = message_class("DescribeConfigsRequest")
    resource = struct_class(request, "resources")
    response = raw_call(port, request(resources=[resource(resource_type=4, resource_name="")]), 4)
    (result,) = response.results
    return {c.name: (c.value, c.config_source) for c in result.configs}


def describe(bootstrap: str, kind: Any, name: str) -> dict[str, Any]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    resource = ConfigResource(kind, name)
    done = admin.describe_configs([resource], request_timeout=20)
    return dict(done[resource].result(timeout=20))


def retention_ms(broker: Any, topic: str) -> int:
    return int(broker.call(lambda s: s.topics[topic].partitions[0].log.config.retention_ms))


def test_set_per_node_and_default_applied_live_and_kept(start_broker: Any, tmp_path: Any) -> None:
    broker = start_broker(data_dir=tmp_path / "data")
    broker.create_topic("t")
    broker.create_topic("own", config={"retention.ms": "5000"})
    alter_default(broker.port, "log.retention.ms", "7000")
    alter(broker.bootstrap, "1", ("log.retention.ms", "9000", AlterConfigOpType.SET))

    node = describe(broker.bootstrap, ResourceType.BROKER, "1")["log.retention.ms"]
    assert (node.value, node.source) == ("9000", ConfigSource.DYNAMIC_BROKER_CONFIG.value)
    assert describe_default(broker.port) == {
        "log.retention.ms": ("7000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value)
    }
    assert describe(broker.bootstrap, ResourceType.TOPIC, "t")["retention.ms"].value == "9000"
    assert retention_ms(broker, "t") == 9000  # applied to the live log
    assert retention_ms(broker, "own") == 5000  # a topic's own override still wins

    broker.stop()
    again = start_broker(data_dir=tmp_path / "data")
    assert retention_ms(again, "t") == 9000
    alter(again.bootstrap, "1", ("log.retention.ms", None, AlterConfigOpType.DELETE))
    node = describe(again.bootstrap, ResourceType.BROKER, "1")["log.retention.ms"]
    assert (node.value, node.source) == ("7000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value)
    assert retention_ms(again, "t") == 7000


def test_static_only_and_bad_values_are_refused(start_broker: Any) -> None:
    broker = start_broker()
    with pytest.raises(KafkaException, match="Cannot update these configs dynamically"):
        alter(broker.bootstrap, "1", ("num.partitions", "3", AlterConfigOpType.SET))
    with pytest.raises(KafkaException, match=r"log\.retention\.ms"):
        alter(broker.bootstrap, "1", ("log.retention.ms", "soon", AlterConfigOpType.SET))
    node = describe(broker.bootstrap, ResourceType.BROKER, "1")["log.retention.ms"]
    assert node.source != ConfigSource.DYNAMIC_BROKER_CONFIG.value
