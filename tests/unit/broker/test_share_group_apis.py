"""Share groups (KIP-932) through the wire, with a clock the test moves: ShareGroupHeartbeat,
ShareFetch, ShareAcknowledge, ShareGroupDescribe, and what ListGroups, DescribeGroups and
DeleteGroups answer for a share group."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from kwire.broker import BrokerState, ManualClock, personality, testing
from kwire.broker._apis import implemented_versions
from kwire.protocol import (
    ErrorCode,
    struct_class,
)
from kwire.records import BatchBuilder, read_batches

NOW = 1_700_000_000_000
FETCH_TOPIC = struct_class("ShareFetchRequest", "topics")
FETCH_PARTITION = struct_class("ShareFetchRequest", "topics", "partitions")
FETCH_ACK = struct_class("ShareFetchRequest", "topics", "partitions", "acknowledgement_batches")
ACK_TOPIC = struct_class("ShareAcknowledgeRequest", "topics")
ACK_PARTITION = struct_class("ShareAcknowledgeRequest", "topics", "partitions")
OFFSETS_GROUP = struct_class("DescribeShareGroupOffsetsRequest", "groups")
ACK_BATCH = struct_class(
    "ShareAcknowledgeRequest", "topics", "partitions", "acknowledgement_batches"
)


@pytest.fixture
def state(tmp_path: Path) -> Any:
    s = BrokerState(
        tmp_path / "data",
        personality=personality("4.3", implemented_versions()),
        clock=ManualClock(NOW),
        static_config={"group.share.record.lock.duration.ms": "1000"},
    )
    s.create_topic("t", 1)
    yield s
    s.close()


def call(state: BrokerState, name: str, version: int, **fields: Any) -> Any:
    """One request encoded, decoded as the server does, handled; the response round-tripped."""
    return testing.call(
        state,
        name,
        version,
        settle=True,
        client_id="test-client",
        context={"client_address": "127.0.0.1:5555"},
        **fields,
    )


def produce(state: BrokerState, count: int) -> None:
    partition = state.partition("t", 0)
    assert partition is not None
    builder = BatchBuilder(magic=2, base_offset=0)
    for i in range(count):
        builder.append(value=f"v{i}".encode(), timestamp=NOW)
    partition.log.append_as_leader(builder.build(), now_ms=NOW, leader_epoch=0)
    partition.log.high_watermark = partition.log.log_end_offset


def join(state: BrokerState, member: str, group: str = "sg") -> Any:
    return call(
        state,
        "ShareGroupHeartbeat",
        1,
        group_id=group,
        member_id=member,
        member_epoch=0,
        subscribed_topic_names=["t"],
    )


def topic_id(state: BrokerState) -> uuid.UUID:
    topic = state.topic("t")
    assert topic is not None
    return topic.topic_id


def fetch(state: BrokerState, member: str, epoch: int, acks: list[Any] | None = None) -> Any:
    return call(
        state,
        "ShareFetch",
        2,
        group_id="sg",
        member_id=member,
        share_session_epoch=epoch,
        max_wait_ms=0,
        min_bytes=1,
        max_records=100,
        batch_size=100,
        topics=[
            FETCH_TOPIC(
                topic_id=topic_id(state),
                partitions=[FETCH_PARTITION(partition_index=0, acknowledgement_batches=acks or [])],
            )
        ],
        forgotten_topics_data=[],
    )


def acquired(response: Any) -> list[tuple[int, int, int]]:
    return [
        (a.first_offset, a.last_offset, a.delivery_count)
        for t in response.responses
        for p in t.partitions
        for a in p.acquired_records
    ]


def test_first_fetch_starts_at_latest_and_acquires_what_comes_after(state: BrokerState) -> None:
    produce(state, 3)  # before the share partition exists: skipped (share.auto.offset.reset)
    assert join(state, "m1").error_code == 0
    assert acquired(fetch(state, "m1", 0)) == []
    produce(state, 4)
    response = fetch(state, "m1", 1)
    assert response.acquisition_lock_timeout_ms == 1000
    assert acquired(response) == [(3, 6, 1)]
    records = response.responses[0].partitions[0].records
    assert [r.offset for b in read_batches(records) for r in b.records()] == [3, 4, 5, 6]


def test_acknowledge_release_and_lock_timeout(state: BrokerState) -> None:
    join(state, "m1")
    join(state, "m2")
    fetch(state, "m1", 0)
    fetch(state, "m2", 0)
    produce(state, 4)
    assert acquired(fetch(state, "m1", 1)) == [(0, 3, 1)]
    assert acquired(fetch(state, "m2", 1)) == []  # all held by m1
    ack = call(
        state,
        "ShareAcknowledge",
        2,
        group_id="sg",
        member_id="m1",
        share_session_epoch=2,
        topics=[
            ACK_TOPIC(
                topic_id=topic_id(state),
                partitions=[
                    ACK_PARTITION(
                        partition_index=0,
                        acknowledgement_batches=[
                            ACK_BATCH(first_offset=0, last_offset=1, acknowledge_types=[1, 2])
                        ],
                    )
                ],
            )
        ],
    )
    assert ack.responses[0].partitions[0].error_code == 0
    assert acquired(fetch(state, "m2", 2)) == [(1, 1, 2)]  # released by m1
    # m2 may not acknowledge what m1 holds
    wrong = fetch(state, "m2", 3, [FETCH_ACK(first_offset=2, last_offset=2, acknowledge_types=[1])])
    assert wrong.responses[0].partitions[0].acknowledge_error_code == int(
        ErrorCode.INVALID_RECORD_STATE
    )
    clock = state.clock
    assert isinstance(clock, ManualClock)
    clock.advance(1000)
    state.run_tickers()  # m1's locks on 2-3 and m2's on 1 run out
    assert acquired(fetch(state, "m2", 4)) == [(1, 1, 3), (2, 3, 2)]
    assert fetch(state, "m2", 9).error_code == int(ErrorCode.INVALID_SHARE_SESSION_EPOCH)


def test_describe_list_and_delete_a_share_group(state: BrokerState) -> None:
    join(state, "m1")
    described = call(state, "ShareGroupDescribe", 1, group_ids=["sg", "nope"])
    # in the group coordinator's order (batched by __consumer_offsets partition)
    group, missing = sorted(described.groups, key=lambda g: g.group_id != "sg")
    assert (group.error_code, group.group_state, group.group_epoch, group.assignor_name) == (
        0,
        "Stable",
        1,
        "simple",
    )
    (member,) = group.members
    assert (member.member_id, member.member_epoch, member.client_host) == ("m1", 1, "/127.0.0.1")
    assert [(tp.topic_name, tp.partitions) for tp in member.assignment.topic_partitions] == [
        ("t", [0])
    ]
    assert missing.error_code == int(ErrorCode.GROUP_ID_NOT_FOUND)
    listed = call(state, "ListGroups", 5, states_filter=[], types_filter=["share"]).groups
    assert [(g.group_id, g.group_type, g.protocol_type, g.group_state) for g in listed] == [
        ("sg", "share", "share", "Stable")
    ]
    assert call(state, "ListGroups", 5, states_filter=[], types_filter=["classic"]).groups == []
    classic = call(state, "DescribeGroups", 6, groups=["sg"]).groups[0]
    assert classic.error_code == int(ErrorCode.GROUP_ID_NOT_FOUND)
    assert classic.error_message == "Group sg is not a classic group."

    def delete() -> int:
        return int(call(state, "DeleteGroups", 2, groups_names=["sg"]).results[0].error_code)

    assert delete() == int(ErrorCode.NON_EMPTY_GROUP)
    call(state, "ShareGroupHeartbeat", 1, group_id="sg", member_id="m1", member_epoch=-1)
    assert delete() == 0
    assert call(state, "ShareGroupDescribe", 1, group_ids=["sg"]).groups[0].error_code == int(
        ErrorCode.GROUP_ID_NOT_FOUND
    )


def test_a_consumer_group_id_is_not_a_share_group(state: BrokerState) -> None:
    consumer = call(
        state,
        "ConsumerGroupHeartbeat",
        1,
        group_id="cg",
        member_id=str(uuid.uuid4()),
        member_epoch=0,
        rebalance_timeout_ms=30000,
        subscribed_topic_names=["t"],
        topic_partitions=[],
    )
    assert consumer.error_code == 0
    hb = join(state, "m1", group="cg")
    assert (hb.error_code, hb.error_message) == (
        int(ErrorCode.GROUP_ID_NOT_FOUND),
        "Group cg is not a share group.",
    )


def test_describe_share_group_offsets_start_offset_and_lag(state: BrokerState) -> None:
    join(state, "m1")
    fetch(state, "m1", 0)  # initialized at the high watermark, 0
    produce(state, 5)
    assert acquired(fetch(state, "m1", 1)) == [(0, 4, 1)]
    fetch(state, "m1", 2, [FETCH_ACK(first_offset=0, last_offset=2, acknowledge_types=[2, 1, 3])])
    # 0 released (the start stays), 1 accepted and 2 rejected (complete), 3-4 held: lag 5 - 0 - 2
    for version, lag in ((0, -1), (1, 3)):
        described = call(
            state,
            "DescribeShareGroupOffsets",
            version,
            groups=[OFFSETS_GROUP(group_id="sg", topics=None)],
        ).groups[0]
        assert described.error_code == 0
        (topic,) = described.topics
        (part,) = topic.partitions
        assert (topic.topic_name, part.partition_index, part.start_offset, part.lag) == (
            "t",
            0,
            0,
            lag,
        )
    missing = call(
        state, "DescribeShareGroupOffsets", 1, groups=[OFFSETS_GROUP(group_id="none", topics=None)]
    ).groups[0]
    assert missing.error_code == int(ErrorCode.GROUP_ID_NOT_FOUND)


def test_share_state_records_read_by_kwire_dump(
    state: BrokerState, capsys: pytest.CaptureFixture[str]
) -> None:
    import json
    import re

    from kwire.cli import main

    join(state, "m1")
    fetch(state, "m1", 0)
    produce(state, 3)
    fetch(state, "m1", 1)
    fetch(state, "m1", 2, [FETCH_ACK(first_offset=0, last_offset=1, acknowledge_types=[1])])
    topic = state.topic("__share_group_state")
    assert topic is not None and topic.internal
    segments = [
        str(seg)
        for p in topic.partitions
        if p.log.log_end_offset > 0
        for seg in Path(state.path, f"__share_group_state-{p.index}").glob("*.log")
    ]
    assert (
        main(["dump", "--files", *segments, "--print-data-log", "--share-group-state-decoder"]) == 0
    )
    out = capsys.readouterr().out
    keys = [json.loads(k) for k in re.findall(r" key: (\{.*?\}) payload:", out)]
    payloads = [json.loads(m) for m in re.findall(r"payload: (\{.*\})$", out, re.M)]
    assert {k["type"] for k in keys} == {"0"}  # ShareSnapshot
    assert keys[-1]["data"] == {
        "groupId": "sg",
        "topicId": str(topic_id_b64(state)),
        "partition": 0,
    }
    last = payloads[-1]["data"]
    assert (last["startOffset"], last["stateBatches"]) == (
        2,
        [{"firstOffset": 2, "lastOffset": 2, "deliveryState": 0, "deliveryCount": 1}],
    )


def topic_id_b64(state: BrokerState) -> str:
    import base64

    return base64.urlsafe_b64encode(topic_id(state).bytes).decode().rstrip("=")
