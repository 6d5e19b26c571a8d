"""The cluster admin handlers (DescribeTopicPartitions, ElectLeaders, partition reassignments,
DescribeQuorum, AlterReplicaLogDirs) through the wire at every version they serve: the cases a
client library does not let a user send (a negative cursor, an unknown election type, an empty
replica list), with Kafka's error codes. The clients' view is in tests/interop/test_admin_apis.py.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kwire.broker import BrokerState, ManualClock, personality, testing
from kwire.broker._apis import implemented_versions
from kwire.protocol import ErrorCode, message_class, struct_class

NOW = 1_700_000_000_000


@pytest.fixture
def state(tmp_path: Path) -> Iterator[BrokerState]:
    s = BrokerState(
        tmp_path / "data",
        personality=personality("4.3", implemented_versions()),
        clock=ManualClock(NOW),
        static_config={"max.request.partition.size.limit": "3"},
    )
    s.create_topic("a", 2)
    s.create_topic("b", 3)
    yield s
    s.close()


def served(name: str) -> range:
    return testing.served(name)


def call(state: BrokerState, name: str, version: int, /, **fields: Any) -> Any:
    """Request bytes -> handler -> response bytes -> the response a client decodes."""
    return testing.call(state, name, version, **fields)


def sub(name: str, *path: str) -> Any:
    return struct_class(message_class(name), *path)


# --- DescribeTopicPartitions -------------------------------------------------------------------

TOPIC_REQUEST = sub("DescribeTopicPartitionsRequest", "topics")
CURSOR = sub("DescribeTopicPartitionsRequest", "cursor")


def pages(state: BrokerState, names: list[str], limit: int) -> list[list[tuple[str, int]]]:
    out = []
    cursor = None
    for _ in range(10):
        response = call(
            state,
            "DescribeTopicPartitions",
            0,
            topics=[TOPIC_REQUEST(name=n) for n in names],
            response_partition_limit=limit,
            cursor=cursor,
        )
        out.append([(t.name, p.partition_index) for t in response.topics for p in t.partitions])
        if response.next_cursor is None:
            return out
        cursor = CURSOR(
            topic_name=response.next_cursor.topic_name,
            partition_index=response.next_cursor.partition_index,
        )
    raise AssertionError("no last page")


def test_describe_topic_partitions_every_topic_capped_by_the_broker_limit(
    state: BrokerState,
) -> None:
    # no topics named: every topic; the broker's limit (3 here) caps the client's 100
    assert pages(state, [], 100) == [
        [("a", 0), ("a", 1), ("b", 0)],
        [("b", 1), ("b", 2)],
    ]
    assert pages(state, ["b"], 1) == [[("b", 0)], [("b", 1)], [("b", 2)]]
    # a limit below one is one
    assert pages(state, ["a"], 0) == [[("a", 0)], [("a", 1)]]


def test_describe_topic_partitions_refusals(state: BrokerState) -> None:
    negative = call(
        state,
        "DescribeTopicPartitions",
        0,
        topics=[TOPIC_REQUEST(name="a")],
        response_partition_limit=10,
        cursor=CURSOR(topic_name="a", partition_index=-1),
    )
    assert [(t.name, t.error_code) for t in negative.topics] == [("a", ErrorCode.INVALID_REQUEST)]
    found = call(
        state,
        "DescribeTopicPartitions",
        0,
        topics=[TOPIC_REQUEST(name="bad/name"), TOPIC_REQUEST(name="missing")],
        response_partition_limit=10,
    )
    assert [(t.name, t.error_code) for t in found.topics] == [
        ("bad/name", ErrorCode.INVALID_TOPIC_EXCEPTION),
        ("missing", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
    ]


# --- ElectLeaders ------------------------------------------------------------------------------

ELECT_TOPIC = sub("ElectLeadersRequest", "topic_partitions")


@pytest.mark.parametrize("version", served("ElectLeaders"))
def test_elect_leaders_every_version(state: BrokerState, version: int) -> None:
    response = call(
        state,
        "ElectLeaders",
        version,
        election_type=1 if version >= 1 else 0,
        topic_partitions=[ELECT_TOPIC(topic="a", partitions=[0, 5])],
    )
    (result,) = response.replica_election_results
    assert [(p.partition_id, p.error_code, p.error_message) for p in result.partition_result] == [
        (0, ErrorCode.ELECTION_NOT_NEEDED, "Leader election not needed for topic partition."),
        (5, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "No such partition as a-5"),
    ]


def test_elect_leaders_unknown_election_type(state: BrokerState) -> None:
    response = call(
        state,
        "ElectLeaders",
        2,
        election_type=7,
        topic_partitions=[ELECT_TOPIC(topic="a", partitions=[0])],
    )
    assert response.error_code == ErrorCode.INVALID_REQUEST


# --- AlterPartitionReassignments ---------------------------------------------------------------

REASSIGN_TOPIC = sub("AlterPartitionReassignmentsRequest", "topics")
REASSIGN_PARTITION = sub("AlterPartitionReassignmentsRequest", "topics", "partitions")


def reassign(state: BrokerState, version: int, replicas: list[int] | None, **extra: Any) -> Any:
    response = call(
        state,
        "AlterPartitionReassignments",
        version,
        topics=[
            REASSIGN_TOPIC(
                name="a",
                partitions=[REASSIGN_PARTITION(partition_index=0, replicas=replicas)],
            )
        ],
        **extra,
    )
    assert response.error_code == 0
    (topic,) = response.responses
    (partition,) = topic.partitions
    return ErrorCode(partition.error_code), partition.error_message


@pytest.mark.parametrize("version", served("AlterPartitionReassignments"))
def test_reassignment_checks(state: BrokerState, version: int) -> None:
    assert reassign(state, version, [1]) == (ErrorCode.NONE, None)  # where it is
    assert reassign(state, version, [])[0] is ErrorCode.INVALID_REPLICA_ASSIGNMENT
    assert reassign(state, version, [1, 1])[0] is ErrorCode.INVALID_REPLICA_ASSIGNMENT
    assert reassign(state, version, [2]) == (
        ErrorCode.INVALID_REPLICA_ASSIGNMENT,
        "The manual partition assignment includes broker 2, but no such broker is registered.",
    )
    assert reassign(state, version, None)[0] is ErrorCode.NO_REASSIGNMENT_IN_PROGRESS


def test_reassignment_to_several_replicas(tmp_path: Path) -> None:
    nodes = BrokerState(
        tmp_path / "nodes",
        personality=personality("4.3", implemented_versions()),
        clock=ManualClock(NOW),
        nodes=[1, 2],
    )
    try:
        nodes.broker_started(1, {"PLAINTEXT": ("127.0.0.1", 9092)})
        nodes.broker_started(2, {"PLAINTEXT": ("127.0.0.1", 9093)})
        nodes.create_topic("a", 1)
        # KIP-1102: with replication factor changes not allowed, Kafka's own refusal
        assert reassign(nodes, 1, [1, 2], allow_replication_factor_change=False) == (
            ErrorCode.INVALID_REPLICATION_FACTOR,
            "The replication factor is changed from 1 to 2",
        )
        error, message = reassign(nodes, 1, [1, 2])
        assert error is ErrorCode.INVALID_REPLICATION_FACTOR
        assert "one replica per partition" in (message or "")
        nodes.broker_stopped(2)
        error, message = reassign(nodes, 0, [2])
        assert error is ErrorCode.INVALID_REPLICA_ASSIGNMENT
        assert "fenced" in (message or "")
    finally:
        nodes.close()


# --- DescribeQuorum ----------------------------------------------------------------------------

QUORUM_TOPIC = sub("DescribeQuorumRequest", "topics")
QUORUM_PARTITION = sub("DescribeQuorumRequest", "topics", "partitions")


@pytest.mark.parametrize("version", served("DescribeQuorum"))
def test_describe_quorum_every_version(state: BrokerState, version: int) -> None:
    def ask(topic: str, index: int) -> Any:
        return call(
            state,
            "DescribeQuorum",
            version,
            topics=[
                QUORUM_TOPIC(topic_name=topic, partitions=[QUORUM_PARTITION(partition_index=index)])
            ],
        )

    (topic,) = ask("__cluster_metadata", 0).topics
    (partition,) = topic.partitions
    metadata = state.metadata_log
    assert (partition.leader_id, partition.leader_epoch) == (1, metadata.epoch)
    assert partition.high_watermark == metadata.log.high_watermark
    assert [(v.replica_id, v.log_end_offset) for v in partition.current_voters] == [
        (1, metadata.log.log_end_offset)
    ]
    if version >= 1:
        assert partition.current_voters[0].last_caught_up_timestamp == NOW
    for wrong in (("__cluster_metadata", 1), ("a", 0)):
        (other,) = ask(*wrong).topics
        assert [p.error_code for p in other.partitions] == [ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]


# --- AlterReplicaLogDirs -----------------------------------------------------------------------

LOG_DIR = sub("AlterReplicaLogDirsRequest", "dirs")
LOG_DIR_TOPIC = sub("AlterReplicaLogDirsRequest", "dirs", "topics")


@pytest.mark.parametrize("version", served("AlterReplicaLogDirs"))
def test_alter_replica_log_dirs_every_version(state: BrokerState, version: int) -> None:
    here = os.path.abspath(state.path)
    response = call(
        state,
        "AlterReplicaLogDirs",
        version,
        dirs=[
            LOG_DIR(path=here, topics=[LOG_DIR_TOPIC(name="a", partitions=[0, 9])]),
            LOG_DIR(path=here + "-other", topics=[LOG_DIR_TOPIC(name="b", partitions=[0])]),
        ],
    )
    assert [
        (r.topic_name, [(p.partition_index, p.error_code) for p in r.partitions])
        for r in response.results
    ] == [
        ("a", [(0, ErrorCode.NONE), (9, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]),
        ("b", [(0, ErrorCode.LOG_DIR_NOT_FOUND)]),
    ]


# --- authorization -----------------------------------------------------------------------------


def test_cluster_admin_apis_need_the_cluster_acls(tmp_path: Path) -> None:
    secured = BrokerState(
        tmp_path / "secured",
        personality=personality("4.3", implemented_versions()),
        clock=ManualClock(NOW),
        static_config={"authorizer.class.name": "StandardAuthorizer"},
    )
    denied = int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    try:
        secured.create_topic("a", 1)
        for version in served("ElectLeaders"):
            response = call(
                secured,
                "ElectLeaders",
                version,
                topic_partitions=[ELECT_TOPIC(topic="a", partitions=[0])],
            )
            assert response.error_code == (denied if version >= 1 else 0)
            assert response.replica_election_results[0].partition_result[0].error_code == denied
        for version in served("AlterPartitionReassignments"):
            response = call(
                secured,
                "AlterPartitionReassignments",
                version,
                topics=[
                    REASSIGN_TOPIC(
                        name="a", partitions=[REASSIGN_PARTITION(partition_index=0, replicas=[1])]
                    )
                ],
            )
            assert response.error_code == denied
            assert response.responses[0].partitions[0].error_code == denied
        assert call(secured, "ListPartitionReassignments", 0).error_code == denied
        for version in served("DescribeQuorum"):
            assert call(secured, "DescribeQuorum", version, topics=[]).error_code == denied
        for version in served("AlterReplicaLogDirs"):
            response = call(
                secured,
                "AlterReplicaLogDirs",
                version,
                dirs=[
                    LOG_DIR(
                        path=os.path.abspath(secured.path),
                        topics=[LOG_DIR_TOPIC(name="a", partitions=[0])],
                    )
                ],
            )
            assert response.results[0].partitions[0].error_code == denied
        # an unauthorized topic named in DescribeTopicPartitions is refused, not disclosed
        response = call(
            secured,
            "DescribeTopicPartitions",
            0,
            topics=[TOPIC_REQUEST(name="a")],
            response_partition_limit=10,
        )
        assert [(t.name, t.error_code, t.partitions) for t in response.topics] == [
            ("a", ErrorCode.TOPIC_AUTHORIZATION_FAILED, [])
        ]
        every = call(secured, "DescribeTopicPartitions", 0, topics=[], response_partition_limit=10)
        assert every.topics == []
    finally:
        secured.close()
