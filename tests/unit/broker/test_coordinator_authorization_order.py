"""Coordinator requests are authorised before they are routed: in an in-process cluster a
request for a group or transactional id coordinated by another node gets NOT_COORDINATOR only
after the API's own authorization, as Kafka's ``KafkaApis`` checks the ACLs and then hands the
request to its coordinator, which answers NOT_COORDINATOR for what its node does not lead
(``CoordinatorRuntime`` / ``TransactionStateManager.getTransactionState``).

A principal without the ACL gets the authorization error on every node; with it, NOT_COORDINATOR
on the others. Where Kafka answers key by key (DescribeGroups, DeleteGroups, OffsetFetch v8+,
ConsumerGroupDescribe, Share/StreamsGroupDescribe, DescribeTransactions) each key gets its own
answer, and where it checks topics first (OffsetCommit, TxnOffsetCommit: READ on each topic, then
the coordinator) a partition of an unauthorised topic keeps TOPIC_AUTHORIZATION_FAILED. Share and
streams groups live in the group coordinator too, so their APIs are routed as well.

Raw requests over sockets to a 3-node Cluster with the StandardAuthorizer: PLAINTEXT connections
are ``User:ANONYMOUS``, with no ACL until a test grants one (each test on names of its own).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import raw_requests
from acl_grants import SECURED, grant, grant_state

from kwire.broker import Cluster
from kwire.broker._acl import GROUP, TOPIC, TRANSACTIONAL_ID
from kwire.broker._routing import GROUP_KEY, TRANSACTION_KEY, coordinator_node
from kwire.broker.testing import call
from kwire.protocol import ErrorCode, message_class, struct_class

GAF = ErrorCode.GROUP_AUTHORIZATION_FAILED
TIAF = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
TAF = ErrorCode.TOPIC_AUTHORIZATION_FAILED
NC = ErrorCode.NOT_COORDINATOR


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with Cluster(tmp_path_factory.mktemp("coordauth") / "data", nodes=3, config=SECURED) as c:
        yield c


def exchange(cluster: Cluster, node: int, message: Any, version: int) -> Any:
    """One request to ``node`` over a socket, its decoded response (bounded in time)."""
    return raw_requests.exchange(cluster.node_bootstrap(node), message, version)


def placed(cluster: Cluster, key_type: int, prefix: str, node: int, *, here: bool) -> str:
    """A name ``prefix-N`` coordinated by ``node`` (``here``) or by another node."""
    names = [f"{prefix}-{i}" for i in range(500)]
    nodes = cluster.call(lambda state: [coordinator_node(state, key_type, n) for n in names])
    for name, found in zip(names, nodes, strict=True):
        if (found == node) == here:
            return name
    raise AssertionError(f"no {prefix} name {'on' if here else 'off'} node {node}")


# --- one key: the request's answer -------------------------------------------------------------

Names = dict[str, str]


@dataclass
class Single:
    """A request for one routed key (``names[key]``); ``steps``: the ACLs granted before each
    attempt (resource type, name's role, operation) and the error then expected."""

    api: str
    versions: tuple[int, ...]
    key: str  # "group" or "txn": the routed key
    fields: Callable[[Names, int], dict[str, Any]]
    errors: Callable[[Any], set[int]]
    steps: list[tuple[list[tuple[int, str, str]], ErrorCode]] = field(default_factory=list)


def top(response: Any) -> set[int]:
    return {response.error_code}


def by_partition(response: Any) -> set[int]:
    return {p.error_code for t in response.topics for p in t.partitions}


def _struct(api: str, *path: str) -> Any:
    return struct_class(message_class(f"{api}Request"), *path)


def _commit_topics(names: Names, version: int) -> list[Any]:
    partition = _struct("OffsetCommit", "topics", "partitions")(
        partition_index=0, committed_offset=5
    )
    return [_struct("OffsetCommit", "topics")(name=names["topic"], partitions=[partition])]


SINGLE = [
    Single(
        "JoinGroup",
        (1, 5, 9),
        "group",
        lambda n, v: {
            "group_id": n["group"],
            "session_timeout_ms": 10000,
            "rebalance_timeout_ms": 10000,
            "member_id": "",
            "protocol_type": "consumer",
            "protocols": [_struct("JoinGroup", "protocols")(name="range", metadata=b"")],
        },
        top,
        [([], GAF), ([(GROUP, "group", "READ")], NC)],
    ),
    Single(
        "SyncGroup",
        (0, 5),
        "group",
        lambda n, v: {
            "group_id": n["group"],
            "generation_id": 1,
            "member_id": "m",
            "assignments": [],
            **({"protocol_type": "consumer", "protocol_name": "range"} if v >= 5 else {}),
        },
        top,
        [([], GAF), ([(GROUP, "group", "READ")], NC)],
    ),
    Single(
        "Heartbeat",
        (0, 4),
        "group",
        lambda n, v: {"group_id": n["group"], "generation_id": 1, "member_id": "m"},
        top,
        [([], GAF), ([(GROUP, "group", "READ")], NC)],
    ),
    Single(
        "LeaveGroup",
        (0, 5),
        "group",
        lambda n, v: (
            {"group_id": n["group"], "member_id": "m"}
            if v < 3
            else {
                "group_id": n["group"],
                "members": [_struct("LeaveGroup", "members")(member_id="m")],
            }
        ),
        top,
        [([], GAF), ([(GROUP, "group", "READ")], NC)],
    ),
    Single(
        "OffsetFetch",
        (2, 7),
        "group",
        lambda n, v: {"group_id": n["group"], "topics": None},
        top,
        [([], GAF), ([(GROUP, "group", "DESCRIBE")], NC)],
    ),
    Single(
        "OffsetDelete",
        (0,),
        "group",
        lambda n, v: {
            "group_id": n["group"],
            "topics": [
                _struct("OffsetDelete", "topics")(
                    name=n["topic"],
                    partitions=[_struct("OffsetDelete", "topics", "partitions")(partition_index=0)],
                )
            ],
        },
        top,
        [([], GAF), ([(GROUP, "group", "DELETE")], NC)],
    ),
    Single(
        "ConsumerGroupHeartbeat",
        (0, 1),
        "group",
        lambda n, v: {
            "group_id": n["group"],
            "member_id": "00000000-0000-0000-0000-00000000000a",
            "member_epoch": 0,
            "rebalance_timeout_ms": 30000,
            "subscribed_topic_names": [n["topic"]],
            "topic_partitions": [],
        },
        top,
        [
            ([], GAF),
            ([(GROUP, "group", "READ")], TAF),  # Kafka 4.0+: DESCRIBE on its topics
            ([(TOPIC, "topic", "DESCRIBE")], NC),
        ],
    ),
    # KafkaApis.handleOffsetCommitRequest: READ on the group, then READ on each topic, and only
    # the partitions that pass meet the coordinator
    Single(
        "OffsetCommit",
        (2, 8),
        "group",
        lambda n, v: {
            "group_id": n["group"],
            "generation_id_or_member_epoch": -1,
            "member_id": "",
            "topics": _commit_topics(n, v),
        },
        by_partition,
        [([], GAF), ([(GROUP, "group", "READ")], TAF), ([(TOPIC, "topic", "READ")], NC)],
    ),
    # handleTxnOffsetCommitRequest: WRITE on the transactional id, READ on the group, READ on
    # each topic, then the group's coordinator
    Single(
        "TxnOffsetCommit",
        (0, 3),
        "group",
        lambda n, v: {
            "transactional_id": n["txn"],
            "group_id": n["group"],
            "producer_id": 1000,
            "producer_epoch": 0,
            "topics": [
                _struct("TxnOffsetCommit", "topics")(
                    name=n["topic"],
                    partitions=[
                        _struct("TxnOffsetCommit", "topics", "partitions")(
                            partition_index=0, committed_offset=5
                        )
                    ],
                )
            ],
        },
        by_partition,
        [
            ([], TIAF),
            ([(TRANSACTIONAL_ID, "txn", "WRITE")], GAF),
            ([(GROUP, "group", "READ")], TAF),
            ([(TOPIC, "topic", "READ")], NC),
        ],
    ),
    # share and streams groups (KIP-932, KIP-1071) live in the group coordinator too
    Single(
        "ShareGroupHeartbeat",
        (1,),
        "group",
        lambda n, v: {
            "group_id": n["group"],
            "member_id": "00000000-0000-0000-0000-00000000000b",
            "member_epoch": 0,
            "subscribed_topic_names": [n["topic"]],
        },
        top,
        [
            ([], GAF),
            ([(GROUP, "group", "READ")], TAF),  # DESCRIBE on its topics (KAFKA-18817)
            ([(TOPIC, "topic", "DESCRIBE")], NC),
        ],
    ),
    Single(
        "StreamsGroupHeartbeat",
        (0,),
        "group",
        lambda n, v: {
            "group_id": n["group"],
            "member_id": "00000000-0000-0000-0000-00000000000c",
            "member_epoch": 1,  # a valid request: a join (epoch 0) needs a topology
            "rebalance_timeout_ms": 30000,
            "process_id": "p",
            "active_tasks": [],
            "standby_tasks": [],
            "warmup_tasks": [],
        },
        top,
        [([], GAF), ([(GROUP, "group", "READ")], NC)],
    ),
    Single(
        "InitProducerId",
        (0, 4),
        "txn",
        lambda n, v: {"transactional_id": n["txn"], "transaction_timeout_ms": 10000},
        top,
        [([], TIAF), ([(TRANSACTIONAL_ID, "txn", "WRITE")], NC)],
    ),
    Single(
        "EndTxn",
        (0, 4),
        "txn",
        lambda n, v: {
            "transactional_id": n["txn"],
            "producer_id": 1000,
            "producer_epoch": 0,
            "committed": True,
        },
        top,
        [([], TIAF), ([(TRANSACTIONAL_ID, "txn", "WRITE")], NC)],
    ),
    # handleAddOffsetsToTxnRequest: WRITE on the transactional id, READ on the group, then the
    # transaction's coordinator
    Single(
        "AddOffsetsToTxn",
        (0, 3),
        "txn",
        lambda n, v: {
            "transactional_id": n["txn"],
            "producer_id": 1000,
            "producer_epoch": 0,
            "group_id": n["group"],
        },
        top,
        [([], TIAF), ([(TRANSACTIONAL_ID, "txn", "WRITE")], GAF), ([(GROUP, "group", "READ")], NC)],
    ),
]


@pytest.mark.parametrize("case", SINGLE, ids=lambda c: c.api)
def test_a_request_is_authorised_before_it_meets_its_coordinator(
    cluster: Cluster, case: Single
) -> None:
    node = cluster.node_ids[0]
    prefix = case.api.lower()
    key_type = GROUP_KEY if case.key == "group" else TRANSACTION_KEY
    names = {
        "group": f"{prefix}-group",
        "txn": f"{prefix}-txn",
        "topic": f"{prefix}-topic",
    }
    names[case.key] = placed(cluster, key_type, f"{prefix}-{case.key}", node, here=False)
    cluster.create_topic(names["topic"], 1)
    request = message_class(f"{case.api}Request")
    for granted, expected in case.steps:
        for resource_type, role, operation in granted:
            grant(cluster, resource_type, names[role], operation)
        for version in case.versions:
            response = exchange(cluster, node, request(**case.fields(names, version)), version)
            assert (version, case.errors(response)) == (version, {expected})


def test_offset_commit_answers_each_partition_as_kafka(cluster: Cluster) -> None:
    """Partitions of a topic the principal may not read keep TOPIC_AUTHORIZATION_FAILED (and
    an unknown partition UNKNOWN_TOPIC_OR_PARTITION); the others get the coordinator's
    NOT_COORDINATOR; a request with no partition left never meets the coordinator."""
    node = cluster.node_ids[0]
    group = placed(cluster, GROUP_KEY, "commit-mixed", node, here=False)
    for topic in ("mixed-read", "mixed-denied"):
        cluster.create_topic(topic, 1)
    grant(cluster, GROUP, group, "READ")
    grant(cluster, TOPIC, "mixed-read", "READ")
    topic_cls = _struct("OffsetCommit", "topics")
    partition_cls = _struct("OffsetCommit", "topics", "partitions")

    def commit(*wanted: tuple[str, int]) -> Any:
        return message_class("OffsetCommitRequest")(
            group_id=group,
            generation_id_or_member_epoch=-1,
            member_id="",
            topics=[
                topic_cls(name=t, partitions=[partition_cls(partition_index=i, committed_offset=1)])
                for t, i in wanted
            ],
        )

    def answer(response: Any) -> list[tuple[str, int, int]]:
        return [
            (t.name, p.partition_index, p.error_code) for t in response.topics for p in t.partitions
        ]

    for version in (2, 8):
        mixed = exchange(
            cluster,
            node,
            commit(("mixed-read", 0), ("mixed-read", 7), ("mixed-denied", 0)),
            version,
        )
        assert sorted(answer(mixed)) == [
            ("mixed-denied", 0, TAF),
            ("mixed-read", 0, NC),
            ("mixed-read", 7, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
        ]
        denied = exchange(cluster, node, commit(("mixed-denied", 0)), version)
        assert answer(denied) == [("mixed-denied", 0, TAF)]


# --- many keys: each key's answer --------------------------------------------------------------


@dataclass
class Batched:
    """A request for many keys, answered key by key: a key the principal may not use gets the
    authorization error, one coordinated elsewhere NOT_COORDINATOR, one coordinated here its
    coordinator's answer."""

    api: str
    version: int
    key_type: int
    operation: str
    denied: ErrorCode
    fields: Callable[[list[str]], dict[str, Any]]
    errors: Callable[[Any], dict[str, int]]


BATCHED = [
    Batched(
        "DescribeGroups",
        5,
        GROUP_KEY,
        "DESCRIBE",
        GAF,
        lambda keys: {"groups": keys},
        lambda r: {g.group_id: g.error_code for g in r.groups},
    ),
    Batched(
        "DeleteGroups",
        2,
        GROUP_KEY,
        "DELETE",
        GAF,
        lambda keys: {"groups_names": keys},
        lambda r: {g.group_id: g.error_code for g in r.results},
    ),
    Batched(
        "OffsetFetch",
        8,
        GROUP_KEY,
        "DESCRIBE",
        GAF,
        lambda keys: {
            "groups": [_struct("OffsetFetch", "groups")(group_id=k, topics=None) for k in keys]
        },
        lambda r: {g.group_id: g.error_code for g in r.groups},
    ),
    Batched(
        "ConsumerGroupDescribe",
        0,
        GROUP_KEY,
        "DESCRIBE",
        GAF,
        lambda keys: {"group_ids": keys},
        lambda r: {g.group_id: g.error_code for g in r.groups},
    ),
    Batched(
        "ShareGroupDescribe",
        1,
        GROUP_KEY,
        "DESCRIBE",
        GAF,
        lambda keys: {"group_ids": keys},
        lambda r: {g.group_id: g.error_code for g in r.groups},
    ),
    Batched(
        "StreamsGroupDescribe",
        0,
        GROUP_KEY,
        "DESCRIBE",
        GAF,
        lambda keys: {"group_ids": keys},
        lambda r: {g.group_id: g.error_code for g in r.groups},
    ),
    Batched(
        "DescribeTransactions",
        0,
        TRANSACTION_KEY,
        "DESCRIBE",
        TIAF,
        lambda keys: {"transactional_ids": keys},
        lambda r: {t.transactional_id: t.error_code for t in r.transaction_states},
    ),
]


@pytest.mark.parametrize("case", BATCHED, ids=lambda c: c.api)
def test_each_key_is_authorised_before_it_meets_its_coordinator(
    cluster: Cluster, case: Batched
) -> None:
    node = cluster.node_ids[0]
    prefix = f"{case.api.lower()}-batch"
    denied = placed(cluster, case.key_type, f"{prefix}-denied", node, here=False)
    far = placed(cluster, case.key_type, f"{prefix}-far", node, here=False)
    near = placed(cluster, case.key_type, f"{prefix}-near", node, here=True)
    resource = GROUP if case.key_type == GROUP_KEY else TRANSACTIONAL_ID
    request = message_class(f"{case.api}Request")
    keys = [denied, far, near]
    before = case.errors(exchange(cluster, node, request(**case.fields(keys)), case.version))
    assert before == dict.fromkeys(keys, int(case.denied))
    grant(cluster, resource, far, case.operation)
    grant(cluster, resource, near, case.operation)
    after = case.errors(exchange(cluster, node, request(**case.fields(keys)), case.version))
    assert (after[denied], after[far]) == (case.denied, NC)
    assert after[near] not in (case.denied, NC)
    assert sorted(after) == sorted(keys)


# KafkaApis builds these answers in two parts: the describes add each unauthorised group's
# GROUP_AUTHORIZATION_FAILED while they scan the request and then append the coordinator's
# results (batched by partition: test_coordinator_validation_order.py); handleDeleteGroupsRequest
# sets the coordinator's results and then appends the unauthorised groups. OffsetFetch v8+ and
# DescribeTransactions keep the request's order.
ORDERED = (
    [
        (case, "denied-first")
        for case in BATCHED
        if case.api.endswith("Describe") or case.api == "DescribeGroups"
    ]
    + [(case, "denied-last") for case in BATCHED if case.api == "DeleteGroups"]
    + [
        (case, "as-asked")
        for case in BATCHED
        if case.api in ("OffsetFetch", "DescribeTransactions")
    ]
)


@pytest.mark.parametrize("case,order", ORDERED, ids=lambda c: getattr(c, "api", c))
def test_unauthorised_keys_are_listed_where_kafka_lists_them(
    cluster: Cluster, case: Batched, order: str
) -> None:
    node = cluster.node_ids[0]
    prefix = f"{case.api.lower()}-order"
    near = placed(cluster, case.key_type, f"{prefix}-near", node, here=True)
    denied = placed(cluster, case.key_type, f"{prefix}-denied", node, here=False)
    far = placed(cluster, case.key_type, f"{prefix}-far", node, here=False)
    resource = GROUP if case.key_type == GROUP_KEY else TRANSACTIONAL_ID
    grant(cluster, resource, near, case.operation)
    grant(cluster, resource, far, case.operation)
    request = message_class(f"{case.api}Request")
    keys = [near, denied, far]
    answered = list(
        case.errors(exchange(cluster, node, request(**case.fields(keys)), case.version))
    )
    # the allowed ones as Kafka 4.x's GroupCoordinatorService batches them (by partition)
    from kwire.broker.group import group_coordinator

    allowed = cluster.call(lambda state: group_coordinator(state).batched([near, far]))
    expected = {
        "denied-first": [denied, *allowed],
        "denied-last": [*allowed, denied],
        "as-asked": keys,
    }[order]
    assert answered == expected


def test_offset_fetch_before_v8_not_coordinator_is_the_groups_error_only(cluster: Cluster) -> None:
    """KafkaApis.handleOffsetFetchRequestFromCoordinator answers v1-7 through
    ``OffsetFetchResponse(groups, version)``: the coordinator's NOT_COORDINATOR is a group with
    no topics, so the response is the top-level error (v2+) and an empty topics array, whatever
    the request asked for (byte for byte)."""
    node = cluster.node_ids[0]
    group = placed(cluster, GROUP_KEY, "fetch-shape", node, here=False)
    cluster.create_topic("fetch-shape-topic", 2)
    grant(cluster, GROUP, group, "DESCRIBE")
    grant(cluster, TOPIC, "fetch-shape-topic", "DESCRIBE")
    wanted = [_struct("OffsetFetch", "topics")(name="fetch-shape-topic", partition_indexes=[0, 1])]
    response_cls = message_class("OffsetFetchResponse")
    for version in range(1, 8):
        for topics in [wanted] if version < 2 else [wanted, None]:
            request = message_class("OffsetFetchRequest")(group_id=group, topics=topics)
            response = exchange(cluster, node, request, version)
            expected = response_cls(throttle_time_ms=0, error_code=int(NC), topics=[])
            assert (version, response.encode(version)) == (version, expected.encode(version))


def test_offset_delete_answers_each_partition_as_kafka(cluster: Cluster) -> None:
    """KafkaApis.handleOffsetDeleteRequest: DELETE on the group, then READ on each topic: an
    unreadable topic's partitions are TOPIC_AUTHORIZATION_FAILED, an unknown topic's or
    partition's UNKNOWN_TOPIC_OR_PARTITION, listed first (``OffsetDeleteResponse.Builder``),
    then the coordinator's answers for the rest merged in."""
    node = cluster.node_ids[0]
    group = placed(cluster, GROUP_KEY, "delete-mixed", node, here=True)
    cluster.create_topic("delete-read", 1)
    cluster.create_topic("delete-denied", 1)
    for operation in ("READ", "DELETE"):
        grant(cluster, GROUP, group, operation)
    grant(cluster, TOPIC, "delete-read", "READ")
    commit = message_class("OffsetCommitRequest")(
        group_id=group,
        generation_id_or_member_epoch=-1,
        member_id="",
        topics=_commit_topics({"topic": "delete-read"}, 8),
    )
    assert by_partition(exchange(cluster, node, commit, 8)) == {0}
    topic_cls = _struct("OffsetDelete", "topics")
    partition_cls = _struct("OffsetDelete", "topics", "partitions")
    request = message_class("OffsetDeleteRequest")(
        group_id=group,
        topics=[
            topic_cls(name=name, partitions=[partition_cls(partition_index=i) for i in indexes])
            for name, indexes in (
                ("delete-read", [0, 7]),
                ("delete-denied", [0]),
                ("delete-unknown", [0]),
            )
        ],
    )
    response = exchange(cluster, node, request, 0)
    assert response.error_code == 0
    assert [
        (t.name, p.partition_index, p.error_code) for t in response.topics for p in t.partitions
    ] == [
        ("delete-read", 7, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
        ("delete-read", 0, 0),
        ("delete-denied", 0, TAF),
        ("delete-unknown", 0, TAF),
    ]


def test_sync_group_v5_needs_protocol_type_and_name_before_its_acl(cluster: Cluster) -> None:
    """KafkaApis.handleSyncGroupRequest: from v5 a request without its protocol type or name is
    INCONSISTENT_GROUP_PROTOCOL (``areMandatoryProtocolTypeAndNamePresent``) before the group's
    ACL and its coordinator; v0-4 have no such fields."""
    node = cluster.node_ids[0]
    far = placed(cluster, GROUP_KEY, "sync-protocol-far", node, here=False)
    denied = placed(cluster, GROUP_KEY, "sync-protocol-denied", node, here=False)
    grant(cluster, GROUP, far, "READ")
    request = message_class("SyncGroupRequest")
    missing = [
        {"protocol_type": None, "protocol_name": "range"},
        {"protocol_type": "consumer", "protocol_name": None},
    ]
    for group in (far, denied):
        for fields in missing:
            sync = request(group_id=group, generation_id=1, member_id="m", assignments=[], **fields)
            response = exchange(cluster, node, sync, 5)
            assert (group, response.error_code) == (group, ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
            assert (response.protocol_type, response.protocol_name) == (None, None)
            assert bytes(response.assignment) == b""
    sync = request(group_id=far, generation_id=1, member_id="m", assignments=[])
    assert exchange(cluster, node, sync, 4).error_code == NC  # v4: nothing to check


def _cgh_request(group: str, topics: list[str]) -> Any:
    return message_class("ConsumerGroupHeartbeatRequest")(
        group_id=group,
        member_id="00000000-0000-0000-0000-00000000000d",
        member_epoch=0,
        rebalance_timeout_ms=30000,
        subscribed_topic_names=topics,
        topic_partitions=[],
    )


def test_consumer_group_heartbeat_needs_describe_on_its_subscribed_topics(
    cluster: Cluster,
) -> None:
    """Kafka 4.0+ (KAFKA-18813, ``KafkaApis.handleConsumerGroupHeartbeatRequest``): after READ
    on the group, a heartbeat naming a topic the principal may not DESCRIBE is
    TOPIC_AUTHORIZATION_FAILED (no message), on every node: before the coordinator."""
    node = cluster.node_ids[0]
    near = placed(cluster, GROUP_KEY, "cgh-topics-near", node, here=True)
    far = placed(cluster, GROUP_KEY, "cgh-topics-far", node, here=False)
    for name in ("cgh-seen", "cgh-hidden"):
        cluster.create_topic(name, 1)
    grant(cluster, TOPIC, "cgh-seen", "DESCRIBE")
    for group in (near, far):
        grant(cluster, GROUP, group, "READ")
        for version in (0, 1):
            hidden = exchange(
                cluster, node, _cgh_request(group, ["cgh-seen", "cgh-hidden"]), version
            )
            assert (hidden.error_code, hidden.error_message) == (TAF, None)
            assert (hidden.member_id, hidden.member_epoch, hidden.assignment) == (None, 0, None)
            missing = exchange(cluster, node, _cgh_request(group, ["cgh-unknown"]), version)
            assert missing.error_code == TAF  # no ACL on a topic that does not exist either
    seen = exchange(cluster, node, _cgh_request(far, ["cgh-seen"]), 1)
    assert seen.error_code == NC
    joined = exchange(cluster, node, _cgh_request(near, ["cgh-seen"]), 1)
    assert (joined.error_code, joined.member_epoch) == (0, 1)


def test_consumer_group_heartbeat_of_kafka_3_does_not_check_topics(tmp_path: Any) -> None:
    """Kafka 3.7-3.9 (KIP-848's early access) check only READ on the group."""
    from kwire.broker.testing import make_state

    for release, expected in (("3.9", ErrorCode.NONE), ("4.0", TAF)):
        state = make_state(tmp_path / release, release=release, config=SECURED)
        state.create_topic("hidden", 1)
        grant_state(state, "User:ANONYMOUS", GROUP, "g", "READ")
        fields = _cgh_request("g", ["hidden"])
        response = call(
            state,
            "ConsumerGroupHeartbeat",
            0,
            context={"principal": "User:ANONYMOUS"},
            **{f: getattr(fields, f) for f in (
                "group_id", "member_id", "member_epoch", "rebalance_timeout_ms",
                "subscribed_topic_names", "topic_partitions",
            )},
        )  # fmt: skip
        assert (release, response.error_code) == (release, expected)


def test_consumer_group_describe_hides_a_group_with_undescribable_topics(tmp_path: Any) -> None:
    """Kafka 4.0+ (KAFKA-18813, ``KafkaApis.handleConsumerGroupDescribe``): a group whose
    members' assignments or target assignments name a topic the principal may not DESCRIBE is
    answered TOPIC_AUTHORIZATION_FAILED with a message and nothing else, in its place."""
    from kwire.broker.testing import make_state

    for release in ("4.0", "3.9"):
        state = make_state(tmp_path / release, release=release, config=SECURED)
        state.create_topic("assigned", 2)
        member, viewer = "User:member", "User:viewer"
        grant_state(state, member, GROUP, "g", "READ")
        grant_state(state, member, TOPIC, "assigned", "DESCRIBE")
        for group in ("g", "empty"):
            grant_state(state, viewer, GROUP, group, "DESCRIBE")
        joined = call(
            state,
            "ConsumerGroupHeartbeat",
            1,
            context={"principal": member},
            group_id="g",
            member_id="00000000-0000-0000-0000-00000000000e",
            member_epoch=0,
            rebalance_timeout_ms=30000,
            subscribed_topic_names=["assigned"],
            topic_partitions=[],
        )
        assert joined.error_code == 0

        def describe(state: Any = state, viewer: str = viewer) -> list[Any]:
            response = call(
                state,
                "ConsumerGroupDescribe",
                1,
                context={"principal": viewer},
                group_ids=["g", "empty"],
                include_authorized_operations=False,
            )
            return sorted(  # the order is the coordinator's batching (tested elsewhere)
                (g.group_id, g.error_code, g.error_message, len(g.members)) for g in response.groups
            )

        empty = ("empty", ErrorCode.GROUP_ID_NOT_FOUND, "Group empty not found.", 0)
        if release == "4.0":
            message = (
                "The group has described topic(s) that the client is not authorized to describe."
            )
            assert describe() == [empty, ("g", TAF, message, 0)]
        else:
            assert describe() == [empty, ("g", 0, None, 1)]
        grant_state(state, viewer, TOPIC, "assigned", "DESCRIBE")
        assert describe() == [empty, ("g", 0, None, 1)]


def test_streams_group_heartbeat_needs_describe_on_its_topology_before_its_coordinator(
    cluster: Cluster,
) -> None:
    """KAFKA-18819 (``KafkaApis.handleStreamsGroupHeartbeat``): after READ on the group, a topology
    naming a topic the principal may not DESCRIBE is TOPIC_AUTHORIZATION_FAILED on every node,
    before NOT_COORDINATOR; with DESCRIBE the far node answers NOT_COORDINATOR."""
    request_class = message_class("StreamsGroupHeartbeatRequest")
    topology = _struct("StreamsGroupHeartbeat", "topology")
    subtopology = _struct("StreamsGroupHeartbeat", "topology", "subtopologies")

    def join(group: str) -> Any:
        return request_class(
            group_id=group,
            member_id="00000000-0000-0000-0000-00000000000f",
            member_epoch=0,
            rebalance_timeout_ms=30000,
            process_id="p",
            topology=topology(
                epoch=1, subtopologies=[subtopology(subtopology_id="0", source_topics=["sgh-in"])]
            ),
            active_tasks=[],
            standby_tasks=[],
            warmup_tasks=[],
        )

    node = cluster.node_ids[0]
    near = placed(cluster, GROUP_KEY, "sgh-topics-near", node, here=True)
    far = placed(cluster, GROUP_KEY, "sgh-topics-far", node, here=False)
    cluster.create_topic("sgh-in", 1)
    for group in (near, far):
        grant(cluster, GROUP, group, "READ")
        hidden = exchange(cluster, node, join(group), 0)
        assert (group, hidden.error_code, hidden.error_message) == (group, TAF, None)
    grant(cluster, TOPIC, "sgh-in", "DESCRIBE")
    assert exchange(cluster, node, join(far), 0).error_code == NC
    joined = exchange(cluster, node, join(near), 0)
    assert (joined.error_code, joined.member_epoch) == (0, 1)
