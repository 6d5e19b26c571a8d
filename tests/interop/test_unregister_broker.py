"""UnregisterBroker (API 64) on a three-node in-process cluster, with Kafka's Java Admin (3.9.1,
``Admin.unregisterBroker``) and DescribeCluster v2's ``IncludeFencedBrokers`` (KIP-1073) at the
protocol level and through kafka-python's ``describe_cluster`` (which asks for fenced brokers;
the 3.9.1 Admin predates KIP-1073). confluent-kafka and kafka-python have no UnregisterBroker
call; librdkafka's Metadata lists the live brokers only, before and after.

Kafka's rules (``ReplicationControlManager.unregisterBroker``): a stopped node stays registered,
fenced, until it is unregistered; an unknown id is BROKER_ID_NOT_REGISTERED; the registration
goes from ``__cluster_metadata`` (an UnregisterBrokerRecord) and a node that starts again
registers anew.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient
from interop_helpers import java_admin
from test_admin_apis import raw_call

from kwire.broker import Cluster
from kwire.protocol import ErrorCode, message_class

pytestmark = pytest.mark.interop

DESCRIBE_CLUSTER = message_class("DescribeClusterRequest")
UNREGISTER = message_class("UnregisterBrokerRequest")


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    nodes = Cluster(tmp_path / "cluster", nodes=3, host="127.0.0.1", port=0)
    nodes.start()
    try:
        yield nodes
    finally:
        nodes.stop()


def described(cluster: Cluster) -> list[tuple[int, bool]]:
    port = int(cluster.node_bootstrap(1).rsplit(":", 1)[1])
    request = DESCRIBE_CLUSTER(
        include_cluster_authorized_operations=False, endpoint_type=1, include_fenced_brokers=True
    )
    response = raw_call(port, request, 2)
    assert response.error_code == 0
    return [(b.broker_id, b.is_fenced) for b in response.brokers]


def python_clients_brokers(bootstrap: str) -> tuple[list[int], list[tuple[int, bool]]]:
    """confluent-kafka's brokers (Metadata: the live ones) and kafka-python's
    ``describe_cluster`` (DescribeCluster v2 asking for fenced brokers too)."""
    ck = sorted(AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10).brokers)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from kafka import KafkaAdminClient

        kp_admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10000)
        try:
            brokers = kp_admin.describe_cluster()["brokers"]
            kp = sorted((b["broker_id"], b["is_fenced"]) for b in brokers)
        finally:
            kp_admin.close()
    return ck, kp


def test_unregister_a_stopped_node(cluster: Cluster) -> None:
    cluster.create_topic("un", partitions=3)
    cluster.stop_broker(3)
    assert described(cluster) == [(1, False), (2, False), (3, True)]
    assert 3 not in cluster.leaders("un")
    bootstrap = cluster.node_bootstrap(1)
    assert python_clients_brokers(bootstrap) == ([1, 2], [(1, False), (2, False), (3, True)])
    done, unknown = java_admin(
        bootstrap, {"op": "unregisterBroker", "broker": 3}, {"op": "unregisterBroker", "broker": 9}
    )
    assert done["error"] is None, done
    assert "BrokerIdNotRegisteredException" in unknown["error"]
    assert described(cluster) == [(1, False), (2, False)]
    assert cluster.call(lambda s: sorted(s.metadata_image.brokers)) == [1, 2]
    port = int(bootstrap.rsplit(":", 1)[1])
    again = raw_call(port, UNREGISTER(broker_id=3), 0)
    assert again.error_code == ErrorCode.BROKER_ID_NOT_REGISTERED
    assert python_clients_brokers(bootstrap) == ([1, 2], [(1, False), (2, False)])
    # A node that starts again registers anew.
    cluster.start_broker(3)
    assert described(cluster) == [(1, False), (2, False), (3, False)]
    assert cluster.call(lambda s: sorted(s.metadata_image.brokers)) == [1, 2, 3]


def test_unregister_a_running_node_takes_its_leadership(cluster: Cluster) -> None:
    cluster.create_topic("live", partitions=3)
    assert sorted(cluster.leaders("live")) == [1, 2, 3]
    epoch = cluster.call(lambda s: s.metadata_image.brokers[2].broker_epoch)
    (done,) = java_admin(cluster.node_bootstrap(1), {"op": "unregisterBroker", "broker": 2})
    assert done["error"] is None, done
    # handleBrokerUnregistered: it leads nothing now; still running, it registered again.
    assert 2 not in cluster.leaders("live")
    assert cluster.call(lambda s: s.metadata_image.brokers[2].broker_epoch) > epoch
    assert described(cluster) == [(1, False), (2, False), (3, False)]
