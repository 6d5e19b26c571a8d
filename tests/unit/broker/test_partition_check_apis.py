"""Where the partition APIs once kept their own answer instead of Kafka's, through the wire with a
StandardAuthorizer: ShareAcknowledge authorises READ on each topic, AddPartitionsToTxn checks
client versions (v0-3) as ``KafkaApis`` does and broker versions (v4+) on the cluster, and Fetch
below v13 authorises an empty topic name like any other.

``User:alice`` may READ group ``sg``, READ and WRITE topic ``public`` and WRITE transactional id
``tx``;
``User:broker`` has CLUSTER_ACTION on the cluster; ``User:admin`` is a super user.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kwire.broker import BrokerState, testing
from kwire.broker._acl import (
    ALLOW,
    CLUSTER,
    CLUSTER_NAME,
    GROUP,
    LITERAL,
    OPERATIONS,
    TOPIC,
    TRANSACTIONAL_ID,
)
from kwire.protocol import ErrorCode, message_class, struct_class
from kwire.records import BatchBuilder

ADMIN, ALICE, BROKER = "User:admin", "User:alice", "User:broker"
SECURED = {
    "authorizer.class.name": "StandardAuthorizer",
    "super.users": ADMIN,
    "auto.create.topics.enable": "false",
}


def call(state: BrokerState, api: str, version: int, principal: str, **fields: Any) -> Any:
    context = {"client_address": "127.0.0.1:5555", "principal": principal}
    return testing.call(state, api, version, settle=True, context=context, **fields)


def part(api: str, *path: str, **fields: Any) -> Any:
    return struct_class(message_class(f"{api}Request"), *path)(**fields)


def acl(principal: str, resource: int, name: str, op: str) -> Any:
    return part(
        "CreateAcls",
        "creations",
        resource_type=resource,
        resource_name=name,
        resource_pattern_type=LITERAL,
        principal=principal,
        host="*",
        operation=OPERATIONS[op],
        permission_type=ALLOW,
    )


@pytest.fixture
def state(tmp_path: Path) -> Iterator[BrokerState]:
    s = testing.make_state(tmp_path / "data", config=SECURED)
    for name in ("public", "secret"):
        s.create_topic(name, 1)
    created = call(
        s,
        "CreateAcls",
        3,
        ADMIN,
        creations=[
            acl(ALICE, GROUP, "sg", "READ"),
            acl(ALICE, TOPIC, "public", "READ"),
            acl(ALICE, TOPIC, "public", "WRITE"),
            acl(ALICE, TRANSACTIONAL_ID, "tx", "WRITE"),
            acl(BROKER, CLUSTER, CLUSTER_NAME, "CLUSTER_ACTION"),
        ],
    )
    assert [r.error_code for r in created.results] == [0] * 5
    yield s
    s.close()


# --- ShareAcknowledge: READ on each topic -----------------------------------------------------


def _share_fetch(state: BrokerState, topic_id: Any, epoch: int) -> Any:
    return call(
        state,
        "ShareFetch",
        2,
        ADMIN,
        group_id="sg",
        member_id="m1",
        share_session_epoch=epoch,
        max_wait_ms=0,
        min_bytes=1,
        max_records=100,
        batch_size=100,
        topics=[
            part(
                "ShareFetch",
                "topics",
                topic_id=topic_id,
                partitions=[part("ShareFetch", "topics", "partitions", partition_index=0)],
            )
        ],
        forgotten_topics_data=[],
    )


def test_share_acknowledge_needs_read_on_the_topic(state: BrokerState) -> None:
    """``KafkaApis.handleShareAcknowledgeRequest``: topics the principal may not READ answer
    TOPIC_AUTHORIZATION_FAILED per partition, and their records stay acquired."""
    topic = state.topic("secret")
    assert topic is not None
    joined = call(
        state,
        "ShareGroupHeartbeat",
        1,
        ADMIN,
        group_id="sg",
        member_id="m1",
        member_epoch=0,
        subscribed_topic_names=["secret"],
    )
    assert joined.error_code == 0
    assert _share_fetch(state, topic.topic_id, 0).error_code == 0
    partition = state.partition("secret", 0)
    assert partition is not None
    builder = BatchBuilder(magic=2, base_offset=0)
    builder.append(value=b"v", timestamp=testing.NOW)
    state.append(partition, builder.build(), testing.NOW)
    fetched = _share_fetch(state, topic.topic_id, 1)
    acquired = [
        (a.first_offset, a.last_offset) for a in fetched.responses[0].partitions[0].acquired_records
    ]
    assert acquired == [(0, 0)]

    def acknowledge(principal: str, epoch: int) -> int:
        batch = part(
            "ShareAcknowledge",
            "topics",
            "partitions",
            "acknowledgement_batches",
            first_offset=0,
            last_offset=0,
            acknowledge_types=[1],
        )
        response = call(
            state,
            "ShareAcknowledge",
            2,
            principal,
            group_id="sg",
            member_id="m1",
            share_session_epoch=epoch,
            topics=[
                part(
                    "ShareAcknowledge",
                    "topics",
                    topic_id=topic.topic_id,
                    partitions=[
                        part(
                            "ShareAcknowledge",
                            "topics",
                            "partitions",
                            partition_index=0,
                            acknowledgement_batches=[batch],
                        )
                    ],
                )
            ],
        )
        assert response.error_code == 0
        (answer,) = response.responses[0].partitions
        return int(answer.error_code)

    assert acknowledge(ALICE, 2) == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    assert acknowledge(ADMIN, 3) == ErrorCode.NONE  # still acquired by m1: accepted now


# --- Fetch below v13: an empty topic name is authorised like any other -------------------------


def _fetch(state: BrokerState, version: int, principal: str, topic: str) -> int:
    response = call(
        state,
        "Fetch",
        version,
        principal,
        max_wait_ms=0,
        min_bytes=1,
        max_bytes=1 << 20,
        topics=[
            part(
                "Fetch",
                "topics",
                topic=topic,
                partitions=[
                    part(
                        "Fetch",
                        "topics",
                        "partitions",
                        partition=0,
                        partition_max_bytes=1 << 20,
                    )
                ],
            )
        ],
    )
    (answer,) = response.responses[0].partitions
    return int(answer.error_code)


@pytest.mark.parametrize("version", [4, 12])
def test_fetch_by_name_authorises_an_empty_name(state: BrokerState, version: int) -> None:
    """``KafkaApis.handleFetchRequest`` below v13: only a null name (an unknown topic id, v13+)
    skips authorisation; ``""`` is filtered by READ like any name, then is unknown."""
    assert _fetch(state, version, ALICE, "") == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    assert _fetch(state, version, ADMIN, "") == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert _fetch(state, version, ALICE, "absent") == ErrorCode.TOPIC_AUTHORIZATION_FAILED


# --- AddPartitionsToTxn: clients' versions per topic, brokers' on the cluster ------------------


def test_add_partitions_to_txn_v3_in_kafkas_order(state: BrokerState) -> None:
    """``KafkaApis.handleAddPartitionsToTxnRequest`` for a client (v0-3): internal topics and
    topics without WRITE are TOPIC_AUTHORIZATION_FAILED, before existence (an unknown partition
    of an authorised topic: UNKNOWN_TOPIC_OR_PARTITION); the rest OPERATION_NOT_ATTEMPTED."""
    topic = struct_class(message_class("AddPartitionsToTxnRequest"), "v3_and_below_topics")
    response = call(
        state,
        "AddPartitionsToTxn",
        3,
        ALICE,
        v3_and_below_transactional_id="tx",
        v3_and_below_producer_id=7,
        v3_and_below_producer_epoch=0,
        v3_and_below_topics=[
            topic(name="public", partitions=[0, 5]),
            topic(name="secret", partitions=[0]),
            topic(name="absent", partitions=[0]),
            topic(name="__consumer_offsets", partitions=[0]),
        ],
    )
    errors = {
        (t.name, p.partition_index): p.partition_error_code
        for t in response.results_by_topic_v3_and_below
        for p in t.results_by_partition
    }
    assert errors == {
        ("public", 0): ErrorCode.OPERATION_NOT_ATTEMPTED,
        ("public", 5): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ("secret", 0): ErrorCode.TOPIC_AUTHORIZATION_FAILED,
        ("absent", 0): ErrorCode.TOPIC_AUTHORIZATION_FAILED,
        ("__consumer_offsets", 0): ErrorCode.TOPIC_AUTHORIZATION_FAILED,
    }


def _verify(state: BrokerState, principal: str) -> Any:
    cls = message_class("AddPartitionsToTxnRequest")
    txn = struct_class(cls, "transactions")
    topic = struct_class(cls, "transactions", "topics")
    return call(
        state,
        "AddPartitionsToTxn",
        5,
        principal,
        transactions=[
            txn(
                transactional_id="tx-other",
                producer_id=7,
                producer_epoch=0,
                verify_only=True,
                topics=[topic(name="secret", partitions=[0]), topic(name="absent", partitions=[0])],
            )
        ],
    )


def test_add_partitions_to_txn_v4_is_authorised_on_the_cluster(state: BrokerState) -> None:
    """v4+ come from brokers: CLUSTER_ACTION on the cluster, else the request's error
    (``AddPartitionsToTxnRequest.getErrorResponse``), and no transactional-id or topic ACL."""
    denied = _verify(state, ALICE)
    assert denied.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    assert list(denied.results_by_transaction) == []
    (result,) = _verify(state, BROKER).results_by_transaction
    errors = {
        (t.name, p.partition_index): p.partition_error_code
        for t in result.topic_results
        for p in t.results_by_partition
    }
    assert errors == {
        ("secret", 0): ErrorCode.OPERATION_NOT_ATTEMPTED,
        ("absent", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    }


# --- DescribeProducers: from the partition's replica, its leader -------------------------------


def test_describe_producers_answers_on_the_leader_only(tmp_path: Path) -> None:
    """``ReplicaManager.activeProducerState``: a node not hosting the partition answers
    NOT_LEADER_OR_FOLLOWER; a kwire partition's one replica is its leader (Metadata's replicas)."""
    s = testing.make_state(tmp_path / "cluster", nodes=[1, 2])
    try:
        for node in s.nodes:
            s.broker_started(node, {"PLAINTEXT": ("127.0.0.1", 9100 + node)})
        s.create_topic("t", 1, leaders=[2])
        topic = struct_class(message_class("DescribeProducersRequest"), "topics")

        def error(node: int) -> int:
            response = testing.call(
                s,
                "DescribeProducers",
                0,
                context={"node_id": node},
                topics=[topic(name="t", partition_indexes=[0])],
            )
            (answer,) = response.topics[0].partitions
            return int(answer.error_code)

        assert error(1) == ErrorCode.NOT_LEADER_OR_FOLLOWER
        assert error(2) == ErrorCode.NONE
    finally:
        s.close()
