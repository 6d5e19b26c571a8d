"""AlterShareGroupOffsets (91) and DeleteShareGroupOffsets (92) through the wire, with a clock the
test moves: Kafka's rules (only an empty share group's offsets move), the share coordinator's
state they leave in ``__share_group_state`` (read back after a restart), and what the group's
next ShareFetch acquires."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from kwire.broker import BrokerState, Deferred, ManualClock, RequestContext, personality
from kwire.broker._apis import HANDLERS, implemented_versions
from kwire.protocol import (
    ErrorCode,
    decode_request_frame,
    decode_response_frame,
    encode_request_frame,
    encode_response_frame,
    message_class,
    struct_class,
)
from kwire.records import BatchBuilder

NOW = 1_700_000_000_000
FETCH_TOPIC = struct_class("ShareFetchRequest", "topics")
FETCH_PARTITION = struct_class("ShareFetchRequest", "topics", "partitions")
OFFSETS_GROUP = struct_class("DescribeShareGroupOffsetsRequest", "groups")
ALTER_TOPIC = struct_class("AlterShareGroupOffsetsRequest", "topics")
ALTER_PARTITION = struct_class("AlterShareGroupOffsetsRequest", "topics", "partitions")
DELETE_TOPIC = struct_class("DeleteShareGroupOffsetsRequest", "topics")


def open_state(path: Path) -> BrokerState:
    from kwire.broker._apis import STARTUP

    s = BrokerState(
        path,
        personality=personality("4.3", implemented_versions()),
        clock=ManualClock(NOW),
    )
    for hook in STARTUP:
        hook(s)
    return s


@pytest.fixture
def state(tmp_path: Path) -> Any:
    s = open_state(tmp_path / "data")
    s.create_topic("t", 2)
    yield s
    s.close()


def call(state: BrokerState, name: str, version: int, **fields: Any) -> Any:
    """One request encoded, decoded as the server does, handled; the response round-tripped."""
    request = message_class(f"{name}Request")(**fields)
    frame = encode_request_frame(request, version, correlation_id=3, client_id="test-client")
    decoded = decode_request_frame(frame)
    api_key = request.API_KEY
    assert api_key is not None
    ctx = RequestContext(api_key, version, 3, "test-client", client_address="127.0.0.1:5555")
    outcome = HANDLERS[api_key][0](state, ctx, decoded.message)
    if isinstance(outcome, Deferred):
        outcome = outcome.complete(True)
    frame = encode_response_frame(outcome, version, correlation_id=3)
    return decode_response_frame(frame, api_key, version).message


def produce(state: BrokerState, index: int, count: int) -> None:
    partition = state.partition("t", index)
    assert partition is not None
    builder = BatchBuilder(magic=2, base_offset=0)
    for i in range(count):
        builder.append(value=f"v{i}".encode(), timestamp=NOW)
    partition.log.append_as_leader(builder.build(), now_ms=NOW, leader_epoch=0)
    partition.log.high_watermark = partition.log.log_end_offset


def topic_id(state: BrokerState) -> uuid.UUID:
    topic = state.topic("t")
    assert topic is not None
    return topic.topic_id


def join(state: BrokerState, member: str) -> Any:
    return call(
        state,
        "ShareGroupHeartbeat",
        1,
        group_id="sg",
        member_id=member,
        member_epoch=0,
        subscribed_topic_names=["t"],
    )


def leave(state: BrokerState, member: str) -> None:
    call(state, "ShareGroupHeartbeat", 1, group_id="sg", member_id=member, member_epoch=-1)


def fetch(state: BrokerState, member: str, epoch: int) -> list[tuple[int, int, int]]:
    """(partition, first offset, last offset) of what one ShareFetch of both partitions acquired."""
    response = call(
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
                partitions=[
                    FETCH_PARTITION(partition_index=i, acknowledgement_batches=[]) for i in (0, 1)
                ],
            )
        ],
        forgotten_topics_data=[],
    )
    return [
        (p.partition_index, a.first_offset, a.last_offset)
        for t in response.responses
        for p in t.partitions
        for a in p.acquired_records
    ]


def start_offsets(state: BrokerState, group: str = "sg") -> Any:
    described = call(
        state, "DescribeShareGroupOffsets", 1, groups=[OFFSETS_GROUP(group_id=group, topics=None)]
    ).groups[0]
    if described.error_code:
        return ErrorCode(described.error_code)
    return {
        (t.topic_name, p.partition_index): p.start_offset
        for t in described.topics
        for p in t.partitions
    }


def alter(state: BrokerState, group: str, offsets: dict[tuple[str, int], int]) -> Any:
    topics: dict[str, list[Any]] = {}
    for (name, index), offset in offsets.items():
        topics.setdefault(name, []).append(
            ALTER_PARTITION(partition_index=index, start_offset=offset)
        )
    return call(
        state,
        "AlterShareGroupOffsets",
        0,
        group_id=group,
        topics=[ALTER_TOPIC(topic_name=n, partitions=ps) for n, ps in topics.items()],
    )


def delete(state: BrokerState, group: str, *topics: str) -> Any:
    return call(
        state,
        "DeleteShareGroupOffsets",
        0,
        group_id=group,
        topics=[DELETE_TOPIC(topic_name=n) for n in topics],
    )


def test_alter_moves_an_empty_groups_start_offset_and_the_next_fetch_starts_there(
    state: BrokerState, tmp_path: Path
) -> None:
    join(state, "m1")
    fetch(state, "m1", 0)  # both share partitions initialized at the high watermark, 0
    produce(state, 0, 10)
    produce(state, 1, 4)
    refused = alter(state, "sg", {("t", 0): 3})
    assert (refused.error_code, refused.responses) == (int(ErrorCode.NON_EMPTY_GROUP), [])
    assert refused.error_message == ErrorCode.NON_EMPTY_GROUP.message
    leave(state, "m1")
    done = alter(state, "sg", {("t", 0): 7, ("t", 1): 2})
    assert done.error_code == 0
    ((name, tid, parts),) = [(t.topic_name, t.topic_id, t.partitions) for t in done.responses]
    assert (name, tid) == ("t", topic_id(state))
    assert [(p.partition_index, p.error_code, p.error_message) for p in parts] == [
        (0, 0, None),
        (1, 0, None),
    ]
    assert start_offsets(state) == {("t", 0): 7, ("t", 1): 2}
    join(state, "m2")
    assert fetch(state, "m2", 0) == [(0, 7, 9), (1, 2, 3)]
    leave(state, "m2")
    state.close()
    again = open_state(tmp_path / "data")  # the state topic is read back
    try:
        assert start_offsets(again) == {("t", 0): 7, ("t", 1): 2}
        # the group's epoch is not kept across a restart; the stored state epoch is, and a new
        # alter is not fenced by it
        assert [
            p.error_code for p in alter(again, "sg", {("t", 0): 1}).responses[0].partitions
        ] == [0]
        assert start_offsets(again) == {("t", 0): 1, ("t", 1): 2}
    finally:
        again.close()


def test_alter_errors(state: BrokerState) -> None:
    unknown = alter(state, "fresh", {("nope", 0): 1, ("t", 5): 1, ("t", 0): 0})
    assert unknown.error_code == 0
    by_topic = {
        t.topic_name: [(p.partition_index, ErrorCode(p.error_code)) for p in t.partitions]
        for t in unknown.responses
    }
    assert by_topic == {
        "nope": [(0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)],
        "t": [(5, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION), (0, ErrorCode.NONE)],
    }
    # an unknown group became an empty share group with state for t-0
    assert start_offsets(state, "fresh") == {("t", 0): 0}
    listed = call(state, "ListGroups", 5, states_filter=[], types_filter=["share"]).groups
    assert [(g.group_id, g.group_state) for g in listed] == [("fresh", "Empty")]
    assert alter(state, "", {("t", 0): 1}).error_code == int(ErrorCode.INVALID_GROUP_ID)
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
    other = alter(state, "cg", {("t", 0): 1})
    assert (other.error_code, other.error_message) == (
        int(ErrorCode.GROUP_ID_NOT_FOUND),
        "Group cg is not a share group.",
    )


def test_delete_forgets_the_state_and_the_next_fetch_starts_from_the_reset_policy(
    state: BrokerState, tmp_path: Path
) -> None:
    join(state, "m1")
    fetch(state, "m1", 0)
    produce(state, 0, 5)
    assert fetch(state, "m1", 1) == [(0, 0, 4)]
    refused = delete(state, "sg", "t")
    assert (refused.error_code, refused.responses) == (int(ErrorCode.NON_EMPTY_GROUP), [])
    leave(state, "m1")
    state.run_tickers()  # the fetch path persists what it holds
    missing = delete(state, "nobody", "t")
    assert missing.error_code == int(ErrorCode.GROUP_ID_NOT_FOUND)
    done = delete(state, "sg", "t", "nope")
    assert done.error_code == 0
    assert [
        (t.topic_name, t.topic_id, ErrorCode(t.error_code), t.error_message) for t in done.responses
    ] == [
        ("t", topic_id(state), ErrorCode.NONE, None),
        (
            "nope",
            uuid.UUID(int=0),
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION.message,
        ),
    ]
    assert start_offsets(state) == {}
    again = delete(state, "sg", "t").responses[0]
    assert (ErrorCode(again.error_code), again.error_message) == (
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        "There is no offset information to delete.",
    )
    produce(state, 0, 3)
    join(state, "m2")
    assert fetch(state, "m2", 0) == []  # initialized again at the high watermark (latest), 8
    assert start_offsets(state) == {("t", 0): 8, ("t", 1): 0}
    leave(state, "m2")
    state.close()
    reopened = open_state(tmp_path / "data")
    try:
        found = start_offsets(reopened)
        assert found == {("t", 0): 8, ("t", 1): 0}
    finally:
        reopened.close()


def test_alter_and_delete_frames_against_kio(state: BrokerState) -> None:
    """kio 0.6.5 (Kafka 4.3.1's schemas) encodes the requests and decodes kwire's responses."""
    import kio_oracle

    kio = pytest.importorskip("kio")
    del kio
    from kio.schema.alter_share_group_offsets.v0 import request as alter_req
    from kio.schema.alter_share_group_offsets.v0 import response as alter_resp
    from kio.schema.delete_share_group_offsets.v0 import request as delete_req
    from kio.schema.delete_share_group_offsets.v0 import response as delete_resp
    from kio.static.primitive import i32, i64

    def via_kio(request: Any, response_cls: Any) -> Any:
        body = kio_oracle.kio_encode(request)
        cls = message_class(type(request).__name__)
        decoded = cls.decode(memoryview(body), 0)
        assert bytes(decoded.encode(0)) == body
        ctx = RequestContext(cls.API_KEY, 0, 1, "c", client_address="127.0.0.1:5555")
        data = bytes(HANDLERS[cls.API_KEY][0](state, ctx, decoded).encode(0))
        answer = kio_oracle.kio_decode(response_cls, data)
        assert kio_oracle.kio_encode(answer) == data
        return answer

    altered = via_kio(
        alter_req.AlterShareGroupOffsetsRequest(
            group_id="kg",
            topics=(
                alter_req.AlterShareGroupOffsetsRequestTopic(
                    topic_name="t",
                    partitions=(
                        alter_req.AlterShareGroupOffsetsRequestPartition(
                            partition_index=i32(1), start_offset=i64(0)
                        ),
                    ),
                ),
            ),
        ),
        alter_resp.AlterShareGroupOffsetsResponse,
    )
    assert altered.error_code == 0
    ((topic,),) = [altered.responses]
    assert (topic.topic_name, topic.topic_id, [p.error_code for p in topic.partitions]) == (
        "t",
        topic_id(state),
        [0],
    )
    deleted = via_kio(
        delete_req.DeleteShareGroupOffsetsRequest(
            group_id="kg",
            topics=(delete_req.DeleteShareGroupOffsetsRequestTopic(topic_name="t"),),
        ),
        delete_resp.DeleteShareGroupOffsetsResponse,
    )
    assert [(t.topic_name, t.error_code) for t in deleted.responses] == [("t", 0)]


def test_deleting_a_topic_deletes_its_share_partitions_state(
    state: BrokerState, tmp_path: Path
) -> None:
    """KAFKA-19201 (``ShareCoordinatorShard.onTopicsDeleted``): a deleted topic's share-partition
    state goes with it, tombstoned in ``__share_group_state`` so a restart agrees, and its live
    share partitions are dropped; another topic's state stays."""
    from kwire.broker._share_service import share_coordinator

    state.create_topic("u", 1)
    join(state, "m1")
    fetch(state, "m1", 0)
    produce(state, 0, 5)
    assert fetch(state, "m1", 1) == [(0, 0, 4)]
    state.run_tickers()  # persisted
    coordinator = share_coordinator(state)
    old = topic_id(state)
    u_id = state.topics["u"].topic_id
    u_key = ("sg", u_id, 0)
    coordinator.share_partition(*u_key).initialize(3)
    state.run_tickers()
    assert {k[1] for k in coordinator.stored} == {old, u_id}
    state.delete_topic("t")

    def ids(keys: Any) -> set[uuid.UUID]:
        return {k[1] for k in keys}

    assert ids(coordinator.stored) == {u_id}
    assert ids(coordinator.partitions) == {u_id}
    state.close()
    reopened = open_state(tmp_path / "data")
    try:
        assert ids(share_coordinator(reopened).stored) == {u_id}
    finally:
        reopened.close()
