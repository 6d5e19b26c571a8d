"""The admin APIs a new user reaches first, with kafka-python's ``KafkaAdminClient`` and
confluent-kafka's ``AdminClient`` against ``kwire broker`` (one node, and ``--nodes N`` where
Kafka's answer depends on several brokers): broker configs, CreatePartitions with assignments,
DescribeTopicPartitions, ElectLeaders, partition reassignments, DescribeQuorum and log dirs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType
from interop_helpers import ck_conf
from kafka.admin import ConfigResource as KpConfigResource
from kafka.admin import ConfigResourceType, KafkaAdminClient

from kwire.broker import Cluster

pytestmark = [
    pytest.mark.interop,
    pytest.mark.filterwarnings("ignore::DeprecationWarning:kafka"),
]

TIMEOUT = 30.0


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    """Three nodes (ids 1..3) in one process, on free loopback ports."""
    nodes = Cluster(tmp_path / "cluster", nodes=3, host="127.0.0.1", port=0)
    nodes.start()
    try:
        yield nodes
    finally:
        nodes.stop()


def kp_admin(bootstrap: str) -> KafkaAdminClient:
    return KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10000)


def done(future: Any) -> Any:
    return future.result(timeout=TIMEOUT)


# --- DescribeConfigs of the broker resource ----------------------------------------------------


def test_broker_configs_name_the_listeners(broker: Any) -> None:
    port = int(broker.bootstrap.rsplit(":", 1)[1])
    admin = kp_admin(broker.bootstrap)
    try:
        found = admin.describe_configs(
            [KpConfigResource(ConfigResourceType.BROKER, "1")], config_filter="static"
        )
        configs = found["broker"]["1"]  # what the node was started with, as server.properties
        assert configs["advertised.listeners"]["value"] == f"PLAINTEXT://127.0.0.1:{port}"
        assert configs["listeners"]["value"] == f"PLAINTEXT://127.0.0.1:{port}"
        assert configs["advertised.listeners"]["config_source"] == "STATIC_BROKER_CONFIG"
        every = admin.describe_configs(
            [KpConfigResource(ConfigResourceType.BROKER, "1")], config_filter="all"
        )["broker"]["1"]
        assert every["listener.security.protocol.map"]["value"] == (
            "SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT"
        )
        assert every["inter.broker.listener.name"]["value"] is None
        assert every["process.roles"]["value"] == "broker,controller"
    finally:
        admin.close()
    ck = AdminClient(ck_conf(broker.bootstrap))
    (entries,) = done_all(ck.describe_configs([ConfigResource(ResourceType.BROKER, "1")]))
    assert entries["advertised.listeners"].value == f"PLAINTEXT://127.0.0.1:{port}"
    assert entries["listeners"].is_read_only


def done_all(futures: dict[Any, Any]) -> list[Any]:
    return [f.result(timeout=TIMEOUT) for f in futures.values()]


def test_broker_configs_of_each_node(cluster: Cluster) -> None:
    admin = kp_admin(cluster.bootstrap)
    try:
        for node in cluster.node_ids:
            found = admin.describe_configs(
                [KpConfigResource(ConfigResourceType.BROKER, str(node))], config_filter="all"
            )["broker"][str(node)]
            assert found["advertised.listeners"]["value"] == (
                f"PLAINTEXT://{cluster.node_bootstrap(node)}"
            )
            assert found["node.id"]["value"] == str(node)
    finally:
        admin.close()
