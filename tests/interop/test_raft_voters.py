"""AddRaftVoter / RemoveRaftVoter (APIs 80/81, KIP-853) against kwire's static single-voter quorum:
every reconfiguration is refused as Kafka refuses it when ``kraft.version`` is 0, after Kafka's
own checks in Kafka's order (``KafkaApis`` authorization, then ``KafkaRaftClient``: cluster id,
voter key, default-listener endpoint, then the feature). Kafka's Java Admin 3.9.1
(``Admin.addRaftVoter`` / ``removeRaftVoter``) sees Kafka's exception and message; the quorum,
described before and after, is unchanged."""

from __future__ import annotations

import base64
import uuid
from typing import Any

import pytest
from interop_helpers import java_admin
from test_admin_apis import raw_call

from kwire.protocol import ErrorCode, message_class, struct_class

pytestmark = pytest.mark.interop

ADD = message_class("AddRaftVoterRequest")
REMOVE = message_class("RemoveRaftVoterRequest")
LISTENER = struct_class(ADD, "listeners")
DESCRIBE_QUORUM = message_class("DescribeQuorumRequest")


def _add(**fields: Any) -> Any:
    values: dict[str, Any] = {
        "cluster_id": None,
        "timeout_ms": 30000,
        "voter_id": 7,
        "voter_directory_id": uuid.uuid4(),
        "listeners": [LISTENER(name="PLAINTEXT", host="127.0.0.1", port=9999)],
        "ack_when_committed": True,
    }
    values.update(fields)
    return ADD(**values)


def test_java_admin_is_refused_as_by_a_static_kafka_quorum(start_broker: Any) -> None:
    broker = start_broker()
    bootstrap = f"127.0.0.1:{broker.port}"
    # Kafka's Uuid text form: URL-safe base64 of the 16 bytes, unpadded
    directory = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
    endpoint = {"name": "PLAINTEXT", "host": "127.0.0.1", "port": broker.port}
    added, removed = java_admin(
        bootstrap,
        {"op": "addRaftVoter", "voter": 7, "directory": directory, "endpoints": [endpoint]},
        {"op": "removeRaftVoter", "voter": 1, "directory": directory},
    )
    assert added["error"] == (
        "UnsupportedVersionException: Cluster doesn't support adding voter because the "
        "kraft.version feature is 0"
    )
    assert removed["error"] == (
        "UnsupportedVersionException: Cluster doesn't support removing voter because the "
        "kraft.version feature is 0"
    )


@pytest.mark.parametrize(
    ("request_fields", "error", "message"),
    [
        (
            {"cluster_id": "not-this-cluster"},
            ErrorCode.INCONSISTENT_CLUSTER_ID,
            "doesn't match the cluster id",
        ),
        ({"voter_id": -1}, ErrorCode.INVALID_REQUEST, "didn't include a valid voter"),
        (
            {"voter_directory_id": uuid.UUID(int=0)},
            ErrorCode.INVALID_REQUEST,
            "didn't include a valid voter",
        ),
        ({"listeners": []}, ErrorCode.INVALID_REQUEST, "endpoint for the default listener"),
        ({}, ErrorCode.UNSUPPORTED_VERSION, "kraft.version feature is 0"),
    ],
)
def test_add_voter_checks_in_kafkas_order(
    start_broker: Any, request_fields: dict[str, Any], error: ErrorCode, message: str
) -> None:
    broker = start_broker()
    for version in (0, 1):
        response = raw_call(broker.port, _add(**request_fields), version)
        assert response.error_code == error
        assert message in (response.error_message or "")


def test_remove_voter_and_the_quorum_is_unchanged(start_broker: Any) -> None:
    broker = start_broker()
    topics = struct_class(DESCRIBE_QUORUM, "topics")
    partitions = struct_class(DESCRIBE_QUORUM, "topics", "partitions")
    describe = DESCRIBE_QUORUM(
        topics=[topics(topic_name="__cluster_metadata", partitions=[partitions(partition_index=0)])]
    )
    before = raw_call(broker.port, describe, 2)
    invalid = raw_call(
        broker.port, REMOVE(cluster_id=None, voter_id=1, voter_directory_id=uuid.UUID(int=0)), 0
    )
    assert invalid.error_code == ErrorCode.INVALID_REQUEST
    assert invalid.error_message == "Remove voter request didn't include a valid voter"
    refused = raw_call(
        broker.port, REMOVE(cluster_id=None, voter_id=1, voter_directory_id=uuid.uuid4()), 0
    )
    assert refused.error_code == ErrorCode.UNSUPPORTED_VERSION
    after = raw_call(broker.port, describe, 2)
    voters = [
        [v.replica_id for v in q.topics[0].partitions[0].current_voters] for q in (before, after)
    ]
    assert voters == [[1], [1]]  # node 1 (start_broker's node id), alone, before and after
