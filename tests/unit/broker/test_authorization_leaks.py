"""No answer tells a principal whether a group, transactional id or topic it may not describe
exists: Kafka checks the ACL before it looks the resource up (``KafkaApis``: "do not disclose the
existence of topics unauthorized for Describe"), so a name that exists and one that does not get
the same answer.

Each API is asked, as a principal without ACLs on them, about an existing resource and a missing
one of the same length; the two responses must be equal once the name is masked. Lists leave the
undescribable out (ListGroups, ListTransactions, DescribeTransactions' topics)."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from kwire.broker import implemented_versions, personality, testing
from kwire.broker._acl import ALLOW, GROUP, LITERAL, OPERATIONS, TOPIC, TRANSACTIONAL_ID
from kwire.broker._state import BrokerState
from kwire.protocol import (
    ErrorCode,
    message_class,
    struct_class,
)

ADMIN = "User:admin"
ALICE = "User:alice"
SECURED = {
    "authorizer.class.name": "StandardAuthorizer",
    "super.users": ADMIN,
    "auto.create.topics.enable": "false",
}
# existing / missing, same length so the masked answers compare
TOPICS = ("secret", "absent")
CLASSIC = ("gclass", "gmiss1")
CONSUMER = ("gcons1", "gmiss2")
TXNS = ("txsecr", "txmiss")


def call(state: BrokerState, api: str, version: int, principal: str, **fields: Any) -> Any:
    """Through the wire both ways, as ``principal``."""
    context = {"client_address": "127.0.0.1:5555", "principal": principal}
    return testing.call(state, api, version, client_id="t", context=context, **fields)


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
    s = BrokerState(
        tmp_path / "data",
        personality=personality("4.3", implemented_versions()),
        static_config=SECURED,
    )
    for name in ("public", "secret"):
        s.create_topic(name, 1)
    created = call(
        s,
        "CreateAcls",
        3,
        ADMIN,
        creations=[
            acl(ALICE, TOPIC, "public", "READ"),
            acl(ALICE, GROUP, "galice", "READ"),
            acl(ALICE, TRANSACTIONAL_ID, "txseen", "DESCRIBE"),
        ],
    )
    assert [r.error_code for r in created.results] == [0, 0, 0]
    # a classic group with a committed offset, a KIP-848 consumer group with a member
    committed = call(
        s,
        "OffsetCommit",
        8,
        ADMIN,
        group_id=CLASSIC[0],
        generation_id_or_member_epoch=-1,
        member_id="",
        topics=[
            part(
                "OffsetCommit",
                "topics",
                name="secret",
                partitions=[
                    part(
                        "OffsetCommit",
                        "topics",
                        "partitions",
                        partition_index=0,
                        committed_offset=0,
                    )
                ],
            )
        ],
    )
    assert committed.topics[0].partitions[0].error_code == 0
    joined = call(
        s,
        "ConsumerGroupHeartbeat",
        1,
        ADMIN,
        group_id=CONSUMER[0],
        member_id=uuid.uuid4().hex[:22],
        member_epoch=0,
        rebalance_timeout_ms=30000,
        subscribed_topic_names=["secret"],
        topic_partitions=[],
    )
    assert joined.error_code == 0, joined
    # two ongoing transactions over both topics: one alice may describe, one she may not
    for txn in ("txseen", TXNS[0]):
        init = call(
            s, "InitProducerId", 4, ADMIN, transactional_id=txn, transaction_timeout_ms=60000
        )
        assert init.error_code == 0
        added = call(
            s,
            "AddPartitionsToTxn",
            3,
            ADMIN,
            v3_and_below_transactional_id=txn,
            v3_and_below_producer_id=init.producer_id,
            v3_and_below_producer_epoch=init.producer_epoch,
            v3_and_below_topics=[
                part("AddPartitionsToTxn", "v3_and_below_topics", name=t, partitions=[0])
                for t in ("public", "secret")
            ],
        )
        assert {
            p.partition_error_code
            for t in added.results_by_topic_v3_and_below
            for p in t.results_by_partition
        } == {0}
    yield s
    s.close()


def masked(response: Any, names: tuple[str, str]) -> str:
    return repr(response).replace(names[0], "<name>").replace(names[1], "<name>")


def same_answer(state: BrokerState, names: tuple[str, str], ask: Callable[[str], Any]) -> Any:
    existing, missing = ask(names[0]), ask(names[1])
    assert masked(existing, names) == masked(missing, names)
    return existing


def offset_commit_topics(api: str, name: str) -> list[Any]:
    p = part(api, "topics", "partitions", partition_index=0, committed_offset=0)
    return [part(api, "topics", name=name, partitions=[p])]


GROUP_ASKS: dict[str, Callable[[BrokerState, str], Any]] = {
    "ConsumerGroupDescribe": lambda s, g: call(s, "ConsumerGroupDescribe", 1, ALICE, group_ids=[g]),
    "DescribeGroups": lambda s, g: call(s, "DescribeGroups", 5, ALICE, groups=[g]),
    "OffsetFetch v7": lambda s, g: call(s, "OffsetFetch", 7, ALICE, group_id=g, topics=None),
    "OffsetFetch v9": lambda s, g: call(
        s,
        "OffsetFetch",
        9,
        ALICE,
        groups=[part("OffsetFetch", "groups", group_id=g, member_epoch=-1, topics=None)],
    ),
    "DeleteGroups": lambda s, g: call(s, "DeleteGroups", 2, ALICE, groups_names=[g]),
    "OffsetDelete": lambda s, g: call(
        s,
        "OffsetDelete",
        0,
        ALICE,
        group_id=g,
        topics=[
            part(
                "OffsetDelete",
                "topics",
                name="public",
                partitions=[part("OffsetDelete", "topics", "partitions", partition_index=0)],
            )
        ],
    ),
    "OffsetCommit": lambda s, g: call(
        s,
        "OffsetCommit",
        8,
        ALICE,
        group_id=g,
        generation_id_or_member_epoch=-1,
        topics=offset_commit_topics("OffsetCommit", "public"),
    ),
    "Heartbeat": lambda s, g: call(
        s, "Heartbeat", 4, ALICE, group_id=g, generation_id=1, member_id="m"
    ),
    "LeaveGroup": lambda s, g: call(
        s,
        "LeaveGroup",
        5,
        ALICE,
        group_id=g,
        members=[part("LeaveGroup", "members", member_id="m")],
    ),
    "ConsumerGroupHeartbeat": lambda s, g: call(
        s,
        "ConsumerGroupHeartbeat",
        1,
        ALICE,
        group_id=g,
        member_id=uuid.UUID(int=7).hex[:22],
        member_epoch=0,
        rebalance_timeout_ms=30000,
        subscribed_topic_names=["public"],
        topic_partitions=[],
    ),
}


@pytest.mark.parametrize("names", [CLASSIC, CONSUMER], ids=["classic", "consumer"])
@pytest.mark.parametrize("api", sorted(GROUP_ASKS))
def test_group_apis_do_not_tell_whether_a_group_exists(
    state: BrokerState, api: str, names: tuple[str, str]
) -> None:
    answer = same_answer(state, names, lambda g: GROUP_ASKS[api](state, g))
    assert f"error_code={int(ErrorCode.GROUP_AUTHORIZATION_FAILED)}" in repr(answer)


def test_consumer_group_describe_answers_group_authorization_failed(state: BrokerState) -> None:
    """KafkaApis.handleConsumerGroupDescribe: the undescribable groups first, no message."""
    asked = [CONSUMER[0], CLASSIC[0], CONSUMER[1]]
    got = call(state, "ConsumerGroupDescribe", 1, ALICE, group_ids=asked)
    assert [(g.group_id, g.error_code, g.error_message) for g in got.groups] == [
        (g, ErrorCode.GROUP_AUTHORIZATION_FAILED, None) for g in asked
    ]


def test_list_groups_leaves_the_undescribable_out(state: BrokerState) -> None:
    assert call(state, "ListGroups", 5, ALICE).groups == []
    listed = {g.group_id for g in call(state, "ListGroups", 5, ADMIN).groups}
    assert {CLASSIC[0], CONSUMER[0]} <= listed


TXN_ASKS: dict[str, Callable[[BrokerState, str], Any]] = {
    "DescribeTransactions": lambda s, t: call(
        s, "DescribeTransactions", 0, ALICE, transactional_ids=[t]
    ),
    "InitProducerId": lambda s, t: call(
        s, "InitProducerId", 4, ALICE, transactional_id=t, transaction_timeout_ms=60000
    ),
    "EndTxn": lambda s, t: call(
        s, "EndTxn", 3, ALICE, transactional_id=t, producer_id=1000, producer_epoch=0
    ),
    "AddOffsetsToTxn": lambda s, t: call(
        s,
        "AddOffsetsToTxn",
        3,
        ALICE,
        transactional_id=t,
        producer_id=1000,
        producer_epoch=0,
        group_id="galice",
    ),
}


@pytest.mark.parametrize("api", sorted(TXN_ASKS))
def test_transaction_apis_do_not_tell_whether_a_transactional_id_exists(
    state: BrokerState, api: str
) -> None:
    answer = same_answer(state, TXNS, lambda t: TXN_ASKS[api](state, t))
    code = int(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    assert f"error_code={code}" in repr(answer)


def test_transactions_show_only_describable_topics_and_ids(state: BrokerState) -> None:
    """KafkaApis.handleDescribeTransactionsRequest keeps only the topics the principal may
    describe; handleListTransactionsRequest only the transactional ids."""
    (seen,) = call(
        state, "DescribeTransactions", 0, ALICE, transactional_ids=["txseen"]
    ).transaction_states
    assert seen.error_code == 0
    assert [t.topic for t in seen.topics] == ["public"]
    (full,) = call(
        state, "DescribeTransactions", 0, ADMIN, transactional_ids=["txseen"]
    ).transaction_states
    assert sorted(t.topic for t in full.topics) == ["public", "secret"]
    listed = call(state, "ListTransactions", 1, ALICE, state_filters=[], producer_id_filters=[])
    assert [t.transactional_id for t in listed.transaction_states] == ["txseen"]


def _topic_asks() -> dict[str, Callable[[BrokerState, str], Any]]:
    def partitions(api: str, *path: str, **fields: Any) -> list[Any]:
        return [part(api, *path, **fields)]

    return {
        "Metadata": lambda s, t: call(
            s, "Metadata", 12, ALICE, topics=partitions("Metadata", "topics", name=t)
        ),
        "Fetch": lambda s, t: call(
            s,
            "Fetch",
            12,
            ALICE,
            max_wait_ms=0,
            min_bytes=1,
            max_bytes=1 << 20,
            topics=partitions(
                "Fetch",
                "topics",
                topic=t,
                partitions=partitions(
                    "Fetch", "topics", "partitions", partition=0, partition_max_bytes=1 << 20
                ),
            ),
        ),
        "ListOffsets": lambda s, t: call(
            s,
            "ListOffsets",
            7,
            ALICE,
            replica_id=-1,
            topics=partitions(
                "ListOffsets",
                "topics",
                name=t,
                partitions=partitions(
                    "ListOffsets", "topics", "partitions", partition_index=0, timestamp=-2
                ),
            ),
        ),
        "OffsetForLeaderEpoch": lambda s, t: call(
            s,
            "OffsetForLeaderEpoch",
            4,
            ALICE,
            replica_id=-1,
            topics=partitions(
                "OffsetForLeaderEpoch",
                "topics",
                topic=t,
                partitions=partitions(
                    "OffsetForLeaderEpoch", "topics", "partitions", partition=0, leader_epoch=0
                ),
            ),
        ),
        "DeleteRecords": lambda s, t: call(
            s,
            "DeleteRecords",
            2,
            ALICE,
            timeout_ms=1000,
            topics=partitions(
                "DeleteRecords",
                "topics",
                name=t,
                partitions=partitions(
                    "DeleteRecords", "topics", "partitions", partition_index=0, offset=0
                ),
            ),
        ),
        "DescribeProducers": lambda s, t: call(
            s,
            "DescribeProducers",
            0,
            ALICE,
            topics=partitions("DescribeProducers", "topics", name=t, partition_indexes=[0]),
        ),
        "CreatePartitions": lambda s, t: call(
            s,
            "CreatePartitions",
            3,
            ALICE,
            timeout_ms=1000,
            topics=partitions("CreatePartitions", "topics", name=t, count=2, assignments=None),
        ),
        "DeleteTopics": lambda s, t: call(s, "DeleteTopics", 5, ALICE, topic_names=[t]),
        "DescribeConfigs": lambda s, t: call(
            s,
            "DescribeConfigs",
            4,
            ALICE,
            resources=partitions("DescribeConfigs", "resources", resource_type=2, resource_name=t),
        ),
        "Produce": lambda s, t: call(
            s,
            "Produce",
            9,
            ALICE,
            acks=-1,
            timeout_ms=1000,
            topic_data=partitions(
                "Produce",
                "topic_data",
                name=t,
                partition_data=partitions(
                    "Produce", "topic_data", "partition_data", index=0, records=b""
                ),
            ),
        ),
        "OffsetCommit": lambda s, t: call(
            s,
            "OffsetCommit",
            8,
            ALICE,
            group_id="galice",
            generation_id_or_member_epoch=-1,
            topics=offset_commit_topics("OffsetCommit", t),
        ),
        "OffsetFetch": lambda s, t: call(
            s,
            "OffsetFetch",
            7,
            ALICE,
            group_id="galice",
            topics=partitions("OffsetFetch", "topics", name=t, partition_indexes=[0]),
        ),
    }


TOPIC_ASKS = _topic_asks()


@pytest.mark.parametrize("api", sorted(TOPIC_ASKS))
def test_topic_apis_do_not_tell_whether_a_topic_exists(state: BrokerState, api: str) -> None:
    answer = same_answer(state, TOPICS, lambda t: TOPIC_ASKS[api](state, t))
    assert f"error_code={int(ErrorCode.TOPIC_AUTHORIZATION_FAILED)}" in repr(answer)
