"""The admin APIs a new user reaches first, with kafka-python's ``KafkaAdminClient`` and
confluent-kafka's ``AdminClient`` against ``kwire broker`` (one node, and ``--nodes N`` where
Kafka's answer depends on several brokers): broker configs, CreatePartitions with assignments,
DescribeTopicPartitions, ElectLeaders, partition reassignments, DescribeQuorum and log dirs."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import ElectionType, KafkaError, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewPartitions, ResourceType
from interop_helpers import Rec, ck_conf, ck_produce, java_admin
from kafka import TopicPartition as KpTopicPartition
from kafka import errors as kafka_errors
from kafka.admin import ConfigResource as KpConfigResource
from kafka.admin import ConfigResourceType, KafkaAdminClient
from kafka.structs import TopicPartitionReplica as KpTopicPartitionReplica

from kwire.broker import Cluster
from kwire.protocol import ClientConnection, message_class, struct_class

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


# --- CreatePartitions with replica assignments -------------------------------------------------


def kp_leaders(admin: KafkaAdminClient, topic: str) -> list[int]:
    (described,) = admin.describe_topics([topic])
    parts = sorted(described["partitions"], key=lambda p: p["partition_index"])
    return [p["leader_id"] for p in parts]


def test_create_partitions_with_assignments(cluster: Cluster) -> None:
    cluster.create_topic("cp-assigned", partitions=1)
    admin = kp_admin(cluster.bootstrap)
    try:
        admin.create_partitions({"cp-assigned": {"count": 3, "assignments": [[3], [2]]}})
        # the first replica of an assignment leads the new partition, in the client's metadata
        assert kp_leaders(admin, "cp-assigned")[1:] == [3, 2]
        invalid = {
            "count": (5, [[1]]),  # two new partitions, one assignment
            "node": (4, [[4]]),  # no such node
            "twice": (4, [[2, 2]]),
            "factor": (4, [[1, 2]]),  # previous partitions have one replica
        }
        for case, (count, assignments) in invalid.items():
            response = admin.create_partitions(
                {"cp-assigned": {"count": count, "assignments": assignments}},
                raise_errors=False,
            )
            (result,) = response.results
            assert result.error_code == 39, case  # INVALID_REPLICA_ASSIGNMENT
        cluster.stop_broker(3)
        response = admin.create_partitions(
            {"cp-assigned": {"count": 4, "assignments": [[3]]}}, raise_errors=False
        )
        assert response.results[0].error_code == 39  # every replica fenced
        assert "fenced" in response.results[0].error_message
        assert len(kp_leaders(admin, "cp-assigned")) == 3
        # CreateTopics places a manual assignment's partitions the same way
        admin.create_topics({"ct-assigned": {"assignments": {0: [2], 1: [1]}}})
        assert kp_leaders(admin, "ct-assigned") == [2, 1]
    finally:
        admin.close()
    ck = AdminClient(ck_conf(cluster.bootstrap))
    done_all(ck.create_partitions([NewPartitions("cp-assigned", 5, [[1], [2]])]))
    assert cluster.leaders("cp-assigned")[3:] == [1, 2]


# --- DescribeTopicPartitions (KIP-966) ---------------------------------------------------------


def test_describe_topic_partitions_pages(cluster: Cluster) -> None:
    cluster.create_topic("dtp-a", partitions=3)
    cluster.create_topic("dtp-b", partitions=2)
    leaders = {"dtp-a": cluster.leaders("dtp-a"), "dtp-b": cluster.leaders("dtp-b")}
    admin = kp_admin(cluster.bootstrap)
    try:
        whole = admin.describe_topic_partitions(["dtp-b", "dtp-a", "dtp-none"])
        assert whole["next_cursor"] is None
        by_name = {t["name"]: t for t in whole["topics"]}
        assert by_name["dtp-none"]["error_code"] == 3  # UNKNOWN_TOPIC_OR_PARTITION
        for name in ("dtp-a", "dtp-b"):
            parts = by_name[name]["partitions"]
            assert [p["leader_id"] for p in parts] == leaders[name]
            assert [p["replica_nodes"] for p in parts] == [[n] for n in leaders[name]]
            assert by_name[name]["topic_authorized_operations"] > 0
        # two partitions a page: the cursor walks dtp-a 0-1, dtp-a 2 + dtp-b 0, dtp-b 1
        seen: list[tuple[str, int]] = []
        cursor = None
        for _ in range(10):
            page = admin.describe_topic_partitions(
                ["dtp-a", "dtp-b"], response_partition_limit=2, cursor=cursor
            )
            seen += [
                (t["name"], p["partition_index"]) for t in page["topics"] for p in t["partitions"]
            ]
            cursor = page["next_cursor"]
            if cursor is None:
                break
        assert seen == [("dtp-a", 0), ("dtp-a", 1), ("dtp-a", 2), ("dtp-b", 0), ("dtp-b", 1)]
        page = admin.describe_topic_partitions(["dtp-a", "dtp-b"], response_partition_limit=3)
        assert page["next_cursor"] == {"topic_name": "dtp-b", "partition_index": 0}
        # the cursor's topic must be one of those asked for
        refused = admin.describe_topic_partitions(
            ["dtp-a"], cursor={"topic_name": "dtp-b", "partition_index": 0}
        )
        assert [t["error_code"] for t in refused["topics"]] == [42]  # INVALID_REQUEST
    finally:
        admin.close()


# --- ElectLeaders, List/AlterPartitionReassignments --------------------------------------------


def test_elect_leaders_not_needed(broker: Any) -> None:
    broker.create_topic("el-topic", partitions=2)
    admin = kp_admin(broker.bootstrap)
    try:
        for election in (0, 1):  # preferred, unclean
            response = admin.elect_leaders(election, {"el-topic": [0, 1]}, raise_errors=False)
            assert response.error_code == 0
            (result,) = response.replica_election_results
            assert [(p.partition_id, p.error_code) for p in result.partition_result] == [
                (0, 84),  # ELECTION_NOT_NEEDED: the leader is the preferred replica
                (1, 84),
            ]
        unknown = admin.elect_leaders(0, {"el-none": [0]}, raise_errors=False)
        assert unknown.replica_election_results[0].partition_result[0].error_code == 3
    finally:
        admin.close()
    ck = AdminClient(ck_conf(broker.bootstrap))
    partition = TopicPartition("el-topic", 0)
    found = ck.elect_leaders(ElectionType.PREFERRED, [partition]).result(timeout=TIMEOUT)
    assert found[partition].code() == KafkaError.ELECTION_NOT_NEEDED
    # every partition (a null list): only those an election changed are reported
    assert ck.elect_leaders(ElectionType.PREFERRED, None).result(timeout=TIMEOUT) == {}


def test_partition_reassignments(cluster: Cluster) -> None:
    cluster.create_topic("pr-topic", partitions=2)
    first = cluster.leaders("pr-topic")
    epochs = cluster.leader_epochs("pr-topic")
    target = next(n for n in cluster.node_ids if n != first[0])
    admin = kp_admin(cluster.bootstrap)
    try:
        assert admin.list_partition_reassignments() == {}
        results = admin.alter_partition_reassignments(
            {
                KpTopicPartition("pr-topic", 0): [target],
                KpTopicPartition("pr-topic", 1): [first[1]],  # where it is: nothing to do
            }
        )
        assert results == {
            KpTopicPartition("pr-topic", 0): None,
            KpTopicPartition("pr-topic", 1): None,
        }
        # the move is complete at once: the target leads, from a new epoch, nothing in progress
        assert cluster.leaders("pr-topic") == [target, first[1]]
        assert cluster.leader_epochs("pr-topic") == [epochs[0] + 1, epochs[1]]
        assert kp_leaders(admin, "pr-topic") == [target, first[1]]
        assert admin.list_partition_reassignments({"pr-topic": [0, 1]}) == {}
        refused = admin.alter_partition_reassignments(
            {
                KpTopicPartition("pr-topic", 0): [9],  # no such node
                KpTopicPartition("pr-topic", 1): None,  # nothing in progress to cancel
                KpTopicPartition("pr-none", 0): [1],
            }
        )
        assert refused == {
            KpTopicPartition("pr-topic", 0): kafka_errors.InvalidReplicationAssignmentError,
            KpTopicPartition("pr-topic", 1): kafka_errors.NoReassignmentInProgressError,
            KpTopicPartition("pr-none", 0): kafka_errors.UnknownTopicOrPartitionError,
        }
    finally:
        admin.close()


# --- DescribeQuorum ----------------------------------------------------------------------------


def quorum_state(data_dir: str | Path) -> dict[str, Any]:
    with open(Path(data_dir) / "__cluster_metadata-0" / "quorum-state", encoding="utf-8") as f:
        found: dict[str, Any] = json.load(f)
    return found


def test_describe_quorum(start_broker: Any, tmp_path: Path) -> None:
    data = tmp_path / "quorum"
    broker = start_broker(data_dir=data)
    admin = kp_admin(broker.bootstrap)
    try:
        (partition,) = admin.describe_metadata_quorum()["topics"][0]["partitions"]
        stored = quorum_state(data)
        assert (partition["leader_id"], partition["leader_epoch"]) == (
            stored["leaderId"],
            stored["leaderEpoch"],
        )
        (voter,) = partition["current_voters"]
        assert voter["replica_id"] == 1
        assert voter["log_end_offset"] == partition["high_watermark"] > 0
        assert partition["observers"] == []
        broker.create_topic("dq-topic", partitions=1)  # a TopicRecord and a PartitionRecord
        (after,) = admin.describe_metadata_quorum()["topics"][0]["partitions"]
        assert after["high_watermark"] > partition["high_watermark"]
    finally:
        admin.close()
    broker.stop()
    broker = start_broker(data_dir=data)  # every start is a new election: the epoch goes up
    admin = kp_admin(broker.bootstrap)
    try:
        (again,) = admin.describe_metadata_quorum()["topics"][0]["partitions"]
        assert again["leader_epoch"] == partition["leader_epoch"] + 1
        assert again["high_watermark"] > after["high_watermark"]
    finally:
        admin.close()


def test_describe_quorum_on_nodes(cluster: Cluster) -> None:
    admin = kp_admin(cluster.bootstrap)
    try:
        found = admin.describe_metadata_quorum()
        (partition,) = found["topics"][0]["partitions"]
        assert partition["leader_id"] == 1
        assert [v["replica_id"] for v in partition["current_voters"]] == [1]
        # the other nodes read the same log: observers at the leader's log end
        assert [(o["replica_id"], o["log_end_offset"]) for o in partition["observers"]] == [
            (2, partition["high_watermark"]),
            (3, partition["high_watermark"]),
        ]
        (node,) = found["nodes"]
        host, port = cluster.node_bootstrap(1).split(":")
        assert node["listeners"] == [{"name": "PLAINTEXT", "host": host, "port": int(port)}]
    finally:
        admin.close()


# --- AlterReplicaLogDirs and DescribeLogDirs ---------------------------------------------------


def test_alter_replica_log_dirs(broker: Any, tmp_path: Path) -> None:
    broker.create_topic("ld-topic", partitions=2)
    admin = kp_admin(broker.bootstrap)
    try:
        (described,) = admin.describe_log_dirs()
        (log_dir,) = described["log_dirs"]
        path = log_dir["log_dir"]
        assert Path(path) == Path(broker.data_dir).absolute()
        # the directory DescribeLogDirs names is the one a replica can be moved to (it is there)
        moved = admin.alter_replica_log_dirs(
            {
                ("ld-topic", 0, 1): path,
                ("ld-topic", 1, 1): str(tmp_path / "elsewhere"),
                ("ld-none", 0, 1): path,
            }
        )
        assert moved == {
            KpTopicPartitionReplica("ld-topic", 0, 1): kafka_errors.NoError,
            KpTopicPartitionReplica("ld-topic", 1, 1): kafka_errors.LogDirNotFoundError,
            KpTopicPartitionReplica("ld-none", 0, 1): kafka_errors.UnknownTopicOrPartitionError,
        }
    finally:
        admin.close()


def test_log_dirs_per_node(cluster: Cluster) -> None:
    cluster.create_topic("ld-nodes", partitions=3)
    leaders = cluster.leaders("ld-nodes")
    admin = kp_admin(cluster.bootstrap)
    try:
        for node in cluster.node_ids:
            (described,) = admin.describe_log_dirs(brokers=[node])
            (log_dir,) = described["log_dirs"]
            held = [
                p["partition_index"]
                for t in log_dir["topics"]
                if t["name"] == "ld-nodes"
                for p in t["partitions"]
            ]
            # each node reports the replicas it holds: the partitions it leads
            assert held == [i for i, leader in enumerate(leaders) if leader == node]
            other = next(i for i, leader in enumerate(leaders) if leader != node)
            moved = admin.alter_replica_log_dirs({("ld-nodes", other, node): log_dir["log_dir"]})
            assert list(moved.values()) == [kafka_errors.ReplicaNotAvailableError]
    finally:
        admin.close()


def raw_call(port: int, message: Any, version: int, software: str = "") -> Any:
    """One request (after ApiVersions v3 naming the client ``software``) over a fresh socket."""
    conn = ClientConnection("raw")
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        hello = message_class("ApiVersionsRequest")(
            client_software_name=software or "raw", client_software_version="1.0"
        )
        answers = []
        for request, v in ((hello, 3), (message, version)):
            sock.sendall(conn.send(request, v))
            for _ in range(100):
                response = conn.next_response()
                if response is not None:
                    answers.append(response.message)
                    break
                chunk = sock.recv(1 << 16)
                assert chunk, "closed by the broker"
                conn.receive_data(chunk)
    return answers[-1]


def test_alter_replica_log_dirs_v0_is_in_the_kip_896_report(start_broker: Any) -> None:
    broker = start_broker(kafka_version="3.9")
    broker.create_topic("ld-v0", partitions=1)
    request_class = message_class("AlterReplicaLogDirsRequest")
    dirs = struct_class(request_class, "dirs")
    topics = struct_class(request_class, "dirs", "topics")
    path = str(Path(broker.data_dir).absolute())
    request = request_class(dirs=[dirs(path=path, topics=[topics(name="ld-v0", partitions=[0])])])
    port = int(broker.bootstrap.rsplit(":", 1)[1])
    response = raw_call(port, request, 0, software="old-tool")
    assert [(r.topic_name, [p.error_code for p in r.partitions]) for r in response.results] == [
        ("ld-v0", [0])
    ]
    (use,) = [u for u in broker.removed_version_report("4.0") if u["api_key"] == 34]
    assert (use["client_software_name"], use["version"], use["requests"]) == ("old-tool", 0, 1)


# --- Kafka's Java Admin (3.9.1) ----------------------------------------------------------------


def test_java_admin(cluster: Cluster) -> None:
    cluster.create_topic("ja-topic", partitions=2)
    leaders = cluster.leaders("ja-topic")
    target = next(n for n in cluster.node_ids if n != leaders[0])
    path = str(Path(cluster.data_dir).absolute())
    ops: list[dict[str, Any]] = [
        {"op": "describeConfigs", "broker": "2"},
        {"op": "createPartitions", "topic": "ja-topic", "count": 4, "assignments": [[3], [2]]},
        {"op": "describeTopics", "names": ["ja-topic"]},
        {"op": "electLeaders", "partitions": [["ja-topic", 0]]},
        {
            "op": "alterPartitionReassignments",
            "partitions": [["ja-topic", 0, [target]], ["ja-topic", 1, None]],
        },
        {"op": "listPartitionReassignments"},
        {"op": "describeMetadataQuorum"},
        {
            "op": "alterReplicaLogDirs",
            "replicas": [["ja-topic", 1, leaders[1], path], ["ja-topic", 2, 3, "/nowhere"]],
        },
    ]
    results = java_admin(cluster.bootstrap, *ops)
    assert [r["error"] for r in results] == [None] * len(ops), results
    configs, _, topics, elected, altered, listed, quorum, dirs = (r["result"] for r in results)
    assert configs["advertised.listeners"]["value"] == f"PLAINTEXT://{cluster.node_bootstrap(2)}"
    assert configs["advertised.listeners"]["source"] == "STATIC_BROKER_CONFIG"
    described = topics["ja-topic"]["partitions"]
    assert [(p["leader"]["id"], p["replicas"]) for p in described] == [
        (leaders[0], [leaders[0]]),
        (leaders[1], [leaders[1]]),
        (3, [3]),
        (2, [2]),
    ]
    assert "ElectionNotNeededException" in elected["ja-topic-0"]
    assert altered["ja-topic-0"] is None
    assert "NoReassignmentInProgressException" in altered["ja-topic-1"]
    assert cluster.leaders("ja-topic")[0] == target
    assert listed == {}
    assert (quorum["leaderId"], [v["id"] for v in quorum["voters"]]) == (1, [1])
    assert [o["id"] for o in quorum["observers"]] == [2, 3]
    assert quorum["highWatermark"] == quorum["voters"][0]["logEndOffset"] > 0
    assert dirs[f"ja-topic-1-{leaders[1]}"] is None  # the replica is in that dir already
    assert "LogDirNotFoundException" in dirs["ja-topic-2-3"]
    # Kafka's Admin reads DescribeTopicPartitions (KIP-966) where a broker serves it
    assert 'request="DescribeTopicPartitions"' in cluster.metrics_text()


def test_java_admin_describe_producers_on_the_leader_only(cluster: Cluster) -> None:
    """Kafka answers DescribeProducers from a replica only (``ReplicaManager.activeProducerState``:
    NOT_LEADER_OR_FOLLOWER where the partition is not hosted) and a kwire partition's one replica
    is its leader: Java Admin asked to use another node (``DescribeProducersOptions.brokerId``)
    fails with NotLeaderOrFollowerException, as Kafka's DescribeProducersWithBrokerIdTest."""
    cluster.create_topic("dp-topic", partitions=1)
    ck_produce(cluster.bootstrap, "dp-topic", [Rec(b"k", b"v")], **{"enable.idempotence": True})
    (leader,) = cluster.leaders("dp-topic")
    other = next(n for n in cluster.node_ids if n != leader)
    op = {"op": "describeProducers", "topic": "dp-topic", "partition": 0}
    routed, on_leader, elsewhere = java_admin(
        cluster.bootstrap, op, {**op, "broker": leader}, {**op, "broker": other}
    )
    assert routed["error"] is None and on_leader["error"] is None, (routed, on_leader)
    assert [p["lastSequence"] for p in routed["result"]] == [0]
    assert on_leader["result"] == routed["result"]
    assert "NotLeaderOrFollowerException" in (elsewhere["error"] or ""), elsewhere
