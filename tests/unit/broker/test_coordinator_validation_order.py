"""Coordinator requests are validated before they are routed: in an in-process cluster a request
Kafka's coordinator service rejects before it looks for the group's or transactional id's
coordinator gets that error on every node, not NOT_COORDINATOR.

``GroupCoordinatorService`` checks an empty group id (INVALID_GROUP_ID: JoinGroup, SyncGroup,
Heartbeat, LeaveGroup, OffsetDelete), JoinGroup's session timeout against
``group.{min,max}.session.timeout.ms`` (INVALID_SESSION_TIMEOUT) and ConsumerGroupHeartbeat's
request (``throwIfConsumerGroupHeartbeatRequestIsInvalid``: INVALID_REQUEST,
UNSUPPORTED_ASSIGNOR; Kafka 4.1+) and StreamsGroupHeartbeat's before ``CoordinatorRuntime``
answers NOT_COORDINATOR;
``TransactionCoordinator.handleInitProducerId`` checks an empty transactional id
(INVALID_REQUEST) and the transaction timeout (INVALID_TRANSACTION_TIMEOUT) before
``TransactionStateManager.getTransactionState``, as its EndTxn, AddOffsetsToTxn and
DescribeTransactions handling checks an empty id.

Raw requests over sockets to a 3-node Cluster without an authorizer, each sent to a node that
does not coordinate its key.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import raw_requests

from kwire.broker import Cluster
from kwire.broker._routing import GROUP_KEY, TRANSACTION_KEY, coordinator_node
from kwire.protocol import ErrorCode, message_class, struct_class

NC = ErrorCode.NOT_COORDINATOR


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with Cluster(tmp_path_factory.mktemp("coordvalid") / "data", nodes=3) as c:
        yield c


def exchange(cluster: Cluster, node: int, message: Any, version: int) -> Any:
    """One request to ``node`` over a socket, its decoded response (bounded in time)."""
    return raw_requests.exchange(cluster.node_bootstrap(node), message, version)


def elsewhere(cluster: Cluster, key_type: int, key: str) -> int:
    """A node that does not coordinate ``key``."""
    owner = cluster.call(lambda state: coordinator_node(state, key_type, key))
    return next(n for n in cluster.node_ids if n != owner)


def _struct(api: str, *path: str) -> Any:
    return struct_class(message_class(f"{api}Request"), *path)


def _join(group: str, session_timeout_ms: int) -> dict[str, Any]:
    return {
        "group_id": group,
        "session_timeout_ms": session_timeout_ms,
        "rebalance_timeout_ms": 10000,
        "member_id": "",
        "protocol_type": "consumer",
        "protocols": [_struct("JoinGroup", "protocols")(name="range", metadata=b"")],
    }


def _cgh(group: str, **changes: Any) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "group_id": group,
        "member_id": "00000000-0000-0000-0000-00000000000a",
        "member_epoch": 0,
        "rebalance_timeout_ms": 30000,
        "subscribed_topic_names": ["t"],
        "topic_partitions": [],
    }
    fields.update(changes)
    return fields


# (api, versions, routed key type, key, fields, expected error)
CASES = [
    ("JoinGroup", (1, 5, 9), GROUP_KEY, "", _join("", 10000), ErrorCode.INVALID_GROUP_ID),
    ("JoinGroup", (1, 9), GROUP_KEY, "join-short", _join("join-short", 1), "session"),
    ("JoinGroup", (1, 9), GROUP_KEY, "join-long", _join("join-long", 10**8), "session"),
    (
        "SyncGroup",
        (0, 4),
        GROUP_KEY,
        "",
        {"group_id": "", "generation_id": 1, "member_id": "m", "assignments": []},
        ErrorCode.INVALID_GROUP_ID,
    ),
    (
        "SyncGroup",
        (5,),
        GROUP_KEY,
        "",
        {
            "group_id": "",
            "generation_id": 1,
            "member_id": "m",
            "assignments": [],
            "protocol_type": "consumer",
            "protocol_name": "range",
        },
        ErrorCode.INVALID_GROUP_ID,
    ),
    (
        "Heartbeat",
        (0, 4),
        GROUP_KEY,
        "",
        {"group_id": "", "generation_id": 1, "member_id": "m"},
        ErrorCode.INVALID_GROUP_ID,
    ),
    (
        "LeaveGroup",
        (0, 2),
        GROUP_KEY,
        "",
        {"group_id": "", "member_id": "m"},
        ErrorCode.INVALID_GROUP_ID,
    ),
    (
        "LeaveGroup",
        (3, 5),
        GROUP_KEY,
        "",
        {"group_id": "", "members": [_struct("LeaveGroup", "members")(member_id="m")]},
        ErrorCode.INVALID_GROUP_ID,
    ),
    (
        "OffsetDelete",
        (0,),
        GROUP_KEY,
        "",
        {"group_id": "", "topics": []},
        ErrorCode.INVALID_GROUP_ID,
    ),
    ("ConsumerGroupHeartbeat", (0, 1), GROUP_KEY, "", _cgh(""), ErrorCode.INVALID_REQUEST),
    (
        "ConsumerGroupHeartbeat",
        (0, 1),
        GROUP_KEY,
        "cgh-timeout",
        _cgh("cgh-timeout", rebalance_timeout_ms=-1),
        ErrorCode.INVALID_REQUEST,
    ),
    (
        "ConsumerGroupHeartbeat",
        (0, 1),
        GROUP_KEY,
        "cgh-epoch",
        _cgh("cgh-epoch", member_epoch=-3),
        ErrorCode.INVALID_REQUEST,
    ),
    (
        "ConsumerGroupHeartbeat",
        (0, 1),
        GROUP_KEY,
        "cgh-assignor",
        _cgh("cgh-assignor", server_assignor="nope"),
        ErrorCode.UNSUPPORTED_ASSIGNOR,
    ),
    (
        "StreamsGroupHeartbeat",
        (0,),
        GROUP_KEY,
        "sgh-member",
        {
            "group_id": "sgh-member",
            "member_id": "",
            "member_epoch": 0,
            "rebalance_timeout_ms": 30000,
            "process_id": "p",
            "active_tasks": [],
            "standby_tasks": [],
            "warmup_tasks": [],
        },
        ErrorCode.INVALID_REQUEST,
    ),
    (
        "ShareGroupHeartbeat",
        (1,),
        GROUP_KEY,
        "shgh-member",
        {
            "group_id": "shgh-member",
            "member_id": "",
            "member_epoch": 0,
            "subscribed_topic_names": ["t"],
        },
        ErrorCode.INVALID_REQUEST,
    ),
    (
        "InitProducerId",
        (0, 4),
        TRANSACTION_KEY,
        "",
        {"transactional_id": "", "transaction_timeout_ms": 10000},
        ErrorCode.INVALID_REQUEST,
    ),
    (
        "EndTxn",
        (0, 4),
        TRANSACTION_KEY,
        "",
        {"transactional_id": "", "producer_id": 1000, "producer_epoch": 0, "committed": True},
        ErrorCode.INVALID_REQUEST,
    ),
    (
        "AddOffsetsToTxn",
        (0, 3),
        TRANSACTION_KEY,
        "",
        {"transactional_id": "", "producer_id": 1000, "producer_epoch": 0, "group_id": "g"},
        ErrorCode.INVALID_REQUEST,
    ),
    (
        "InitProducerId",
        (0, 4),
        TRANSACTION_KEY,
        "init-timeout",
        {"transactional_id": "init-timeout", "transaction_timeout_ms": 10**9},
        ErrorCode.INVALID_TRANSACTION_TIMEOUT,
    ),
]


@pytest.mark.parametrize(
    "case", CASES, ids=lambda c: f"{c[0]}-{c[3] or 'empty'}" if isinstance(c, tuple) else ""
)
def test_a_request_is_validated_before_it_meets_its_coordinator(
    cluster: Cluster, case: tuple[Any, ...]
) -> None:
    api, versions, key_type, key, fields, expected = case
    if expected == "session":
        expected = ErrorCode.INVALID_SESSION_TIMEOUT
    node = elsewhere(cluster, key_type, key)
    request = message_class(f"{api}Request")
    for version in versions:
        response = exchange(cluster, node, request(**fields), version)
        assert (version, response.error_code) == (version, expected)
    # the same request for a valid key coordinated elsewhere is NOT_COORDINATOR (the check above
    # is the validation's, not a node that happens to coordinate the key)
    if key_type == GROUP_KEY and api in ("Heartbeat", "SyncGroup"):
        valid = dict(fields, group_id=f"{api.lower()}-valid")
        node = elsewhere(cluster, GROUP_KEY, valid["group_id"])
        assert exchange(cluster, node, request(**valid), versions[0]).error_code == NC


def test_kafka_4_0_validates_a_consumer_group_heartbeat_in_its_coordinator(
    tmp_path: Any,
) -> None:
    """Kafka 4.0 checked ConsumerGroupHeartbeat's request in the group's shard
    (``GroupMetadataManager.consumerGroupHeartbeat``), so another node answered NOT_COORDINATOR
    first; 4.1 moved the checks to ``GroupCoordinatorService`` (apache/kafka#19556)."""
    with Cluster(tmp_path / "data", nodes=3, kafka_version="4.0") as old:
        request = message_class("ConsumerGroupHeartbeatRequest")
        for key, fields, error in (
            ("cgh-old", _cgh("cgh-old", rebalance_timeout_ms=-1), ErrorCode.INVALID_REQUEST),
            (
                "cgh-old-assignor",
                _cgh("cgh-old-assignor", server_assignor="nope"),
                ErrorCode.UNSUPPORTED_ASSIGNOR,
            ),
        ):
            node = elsewhere(old, GROUP_KEY, key)
            assert exchange(old, node, request(**fields), 1).error_code == NC
            owner = old.call(lambda state, key=key: coordinator_node(state, GROUP_KEY, key))
            assert exchange(old, owner, request(**fields), 1).error_code == error


# --- the order of a batch's answers (Kafka 4.x's GroupCoordinatorService) -----------------------

#: Partitions put into a Java HashMap<TopicPartition, _> with computeIfAbsent in this order, and
#: the order Java iterates them in (run on OpenJDK: newest first within a bin, 16 bins up to 13
#: keys, 32 from 14).
JAVA_ORDERS = [
    ([30, 39, 46, 7, 35], [46, 30, 7, 39, 35]),
    ([16, 3, 11, 12, 19], [16, 11, 12, 19, 3]),
    (
        [33, 31, 21, 46, 28, 18, 38, 4, 7, 32, 26, 10, 48],
        [31, 48, 32, 46, 28, 10, 26, 7, 21, 38, 4, 33, 18],
    ),
    (
        [25, 9, 34, 32, 36, 31, 44, 20, 5, 17, 3, 44, 11],
        [31, 32, 11, 44, 9, 25, 5, 3, 20, 36, 17, 34],
    ),
]


@pytest.mark.parametrize("inserted,iterated", JAVA_ORDERS)
def test_java_hash_map_order_is_javas(inserted: list[int], iterated: list[int]) -> None:
    from kwire.log.internal_topics import java_hash_map_order

    found = java_hash_map_order([("__consumer_offsets", p) for p in inserted])
    assert [p for _, p in found] == iterated


def _named(partition: int, prefix: str, count: int = 1) -> list[str]:
    """``count`` group ids of ``__consumer_offsets`` partition ``partition`` (50 partitions)."""
    from kwire.log.internal_topics import partition_for

    found = [
        f"{prefix}-{i}" for i in range(5000) if partition_for(f"{prefix}-{i}", 50) == partition
    ]
    return found[:count]


@pytest.mark.parametrize("release", ["4.3", "3.9"])
def test_batched_group_apis_answer_in_the_coordinators_order(tmp_path: Any, release: str) -> None:
    """Kafka 4.x's ``GroupCoordinatorService`` batches DescribeGroups, DeleteGroups and
    ConsumerGroupDescribe by ``__consumer_offsets`` partition in a HashMap and answers batch by
    batch (the request's order within one); 3.9's old coordinator answered DescribeGroups and
    DeleteGroups in the request's order."""
    from kwire.broker.testing import call, make_state

    state = make_state(tmp_path, release=release)
    first, second = _named(30, "batch", 2)
    groups = [first, *_named(39, "batch"), *_named(46, "batch"), second, *_named(7, "batch")]
    java = [46, 30, 30, 7, 39]  # JAVA_ORDERS[0] without 35
    from kwire.log.internal_topics import partition_for

    by_partition = sorted(groups, key=lambda g: java.index(partition_for(g, 50)))
    batched = by_partition if release == "4.3" else groups
    described = call(state, "DescribeGroups", 5, groups=groups)
    assert [g.group_id for g in described.groups] == batched
    deleted = call(state, "DeleteGroups", 2, groups_names=groups)
    assert [g.group_id for g in deleted.results] == batched
    consumer = call(state, "ConsumerGroupDescribe", 0, group_ids=groups)
    assert [g.group_id for g in consumer.groups] == by_partition  # the new coordinator's API


def test_describe_transactions_of_an_empty_id_is_invalid_on_every_node(cluster: Cluster) -> None:
    """``TransactionCoordinator.handleDescribeTransactions``: an empty transactional id is
    INVALID_REQUEST before the transaction is looked up."""
    node = elsewhere(cluster, TRANSACTION_KEY, "")
    request = message_class("DescribeTransactionsRequest")(transactional_ids=[""])
    response = exchange(cluster, node, request, 0)
    assert [(t.transactional_id, t.error_code) for t in response.transaction_states] == [
        ("", ErrorCode.INVALID_REQUEST)
    ]
