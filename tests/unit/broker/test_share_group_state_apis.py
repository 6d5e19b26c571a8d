"""The share coordinator over the wire: InitializeShareGroupState (83), ReadShareGroupState (84),
WriteShareGroupState (85), DeleteShareGroupState (86) and ReadShareGroupStateSummary (87).

Every request is built and encoded by kio 0.6.5 (Kafka 4.3.1's schemas, an independent codec),
decoded by kwire as the server does, answered, and the response kwire encodes is decoded by kio
(and re-encoded by kio to the same bytes). The state these APIs read and write is the one the
broker's own share fetch path keeps in ``__share_group_state``: each side sees the other's writes,
and a restart reads them back.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import kio_oracle
import pytest

from kwire.broker import BrokerState, ManualClock, RequestContext, personality
from kwire.broker._apis import HANDLERS, STARTUP, implemented_versions
from kwire.protocol import ErrorCode, message_class, struct_class
from kwire.records import BatchBuilder

pytest.importorskip("kio")

from kio.schema.delete_share_group_state.v0 import request as delete_req
from kio.schema.delete_share_group_state.v0 import response as delete_resp
from kio.schema.initialize_share_group_state.v0 import request as init_req
from kio.schema.initialize_share_group_state.v0 import response as init_resp
from kio.schema.read_share_group_state.v0 import request as read_req
from kio.schema.read_share_group_state.v0 import response as read_resp
from kio.schema.read_share_group_state_summary.v1 import request as summary_req
from kio.schema.read_share_group_state_summary.v1 import response as summary_resp
from kio.schema.write_share_group_state.v1 import request as write_req
from kio.schema.write_share_group_state.v1 import response as write_resp
from kio.static.primitive import i8, i16, i32, i64

NOW = 1_700_000_000_000
FETCH_TOPIC = struct_class("ShareFetchRequest", "topics")
FETCH_PARTITION = struct_class("ShareFetchRequest", "topics", "partitions")
FETCH_ACK = struct_class("ShareFetchRequest", "topics", "partitions", "acknowledgement_batches")
AVAILABLE, ACKNOWLEDGED = 0, 2


def open_state(path: Path) -> BrokerState:
    s = BrokerState(
        path, personality=personality("4.3", implemented_versions()), clock=ManualClock(NOW)
    )
    for hook in STARTUP:
        hook(s)
    return s


@pytest.fixture
def state(tmp_path: Path) -> Any:
    s = open_state(tmp_path / "data")
    s.create_topic("t", 1)
    partition = s.partition("t", 0)
    assert partition is not None
    builder = BatchBuilder(magic=2, base_offset=0)
    for i in range(10):
        builder.append(value=f"v{i}".encode(), timestamp=NOW)
    partition.log.append_as_leader(builder.build(), now_ms=NOW, leader_epoch=0)
    partition.log.high_watermark = partition.log.log_end_offset
    yield s
    s.close()


def via_kio(state: BrokerState, request: Any, version: int, response_cls: Any) -> Any:
    """kio's request bytes through kwire's decoder and handler; kwire's response bytes decoded
    by kio (and kio's re-encoding compared byte for byte)."""
    body = kio_oracle.kio_encode(request)
    name = type(request).__name__
    cls = message_class(name)
    decoded = cls.decode(memoryview(body), version)
    assert bytes(decoded.encode(version)) == body  # kwire reads and writes kio's bytes
    api_key = cls.API_KEY
    assert api_key is not None
    ctx = RequestContext(api_key, version, 1, "broker-1", client_address="127.0.0.1:5555")
    response = HANDLERS[api_key][0](state, ctx, decoded)
    data = bytes(response.encode(version))
    answer = kio_oracle.kio_decode(response_cls, data)
    assert kio_oracle.kio_encode(answer) == data
    return answer


def topic_id(state: BrokerState) -> uuid.UUID:
    topic = state.topic("t")
    assert topic is not None
    return topic.topic_id


def initialize(state: BrokerState, tid: uuid.UUID, partition: int, epoch: int, start: int) -> Any:
    request = init_req.InitializeShareGroupStateRequest(
        group_id="sg",
        topics=(
            init_req.InitializeStateData(
                topic_id=tid,
                partitions=(
                    init_req.PartitionData(
                        partition=i32(partition), state_epoch=i32(epoch), start_offset=i64(start)
                    ),
                ),
            ),
        ),
    )
    result = via_kio(state, request, 0, init_resp.InitializeShareGroupStateResponse)
    return result.results[0].partitions[0]


def read(state: BrokerState, leader_epoch: int, group: str = "sg") -> Any:
    request = read_req.ReadShareGroupStateRequest(
        group_id=group,
        topics=(
            read_req.ReadStateData(
                topic_id=topic_id(state),
                partitions=(
                    read_req.PartitionData(partition=i32(0), leader_epoch=i32(leader_epoch)),
                ),
            ),
        ),
    )
    result = via_kio(state, request, 0, read_resp.ReadShareGroupStateResponse)
    (topic,) = result.results
    assert topic.topic_id == topic_id(state)
    return topic.partitions[0]


def batches(found: Any) -> list[tuple[int, int, int, int]]:
    return [
        (b.first_offset, b.last_offset, b.delivery_state, b.delivery_count)
        for b in found.state_batches
    ]


def write(
    state: BrokerState,
    state_epoch: int,
    leader_epoch: int,
    start: int,
    states: list[tuple[int, int, int, int]],
) -> Any:
    request = write_req.WriteShareGroupStateRequest(
        group_id="sg",
        topics=(
            write_req.WriteStateData(
                topic_id=topic_id(state),
                partitions=(
                    write_req.PartitionData(
                        partition=i32(0),
                        state_epoch=i32(state_epoch),
                        leader_epoch=i32(leader_epoch),
                        start_offset=i64(start),
                        delivery_complete_count=i32(-1),
                        state_batches=tuple(
                            write_req.StateBatch(
                                first_offset=i64(a),
                                last_offset=i64(b),
                                delivery_state=i8(k),
                                delivery_count=i16(c),
                            )
                            for a, b, k, c in states
                        ),
                    ),
                ),
            ),
        ),
    )
    result = via_kio(state, request, 1, write_resp.WriteShareGroupStateResponse)
    return result.results[0].partitions[0]


def summary(state: BrokerState) -> Any:
    request = summary_req.ReadShareGroupStateSummaryRequest(
        group_id="sg",
        topics=(
            summary_req.ReadStateSummaryData(
                topic_id=topic_id(state),
                partitions=(summary_req.PartitionData(partition=i32(0), leader_epoch=i32(0)),),
            ),
        ),
    )
    result = via_kio(state, request, 1, summary_resp.ReadShareGroupStateSummaryResponse)
    return result.results[0].partitions[0]


def delete(state: BrokerState) -> Any:
    request = delete_req.DeleteShareGroupStateRequest(
        group_id="sg",
        topics=(
            delete_req.DeleteStateData(
                topic_id=topic_id(state), partitions=(delete_req.PartitionData(partition=i32(0)),)
            ),
        ),
    )
    result = via_kio(state, request, 0, delete_resp.DeleteShareGroupStateResponse)
    return result.results[0].partitions[0]


def share_fetch(state: BrokerState, member: str, epoch: int, acks: list[Any] | None = None) -> Any:
    request = message_class("ShareFetchRequest")(
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
    ctx = RequestContext(78, 2, 1, "c", client_address="127.0.0.1:5555")
    response = HANDLERS[78][0](state, ctx, request)
    if hasattr(response, "complete"):
        response = response.complete(True)
    return [
        (a.first_offset, a.last_offset, a.delivery_count)
        for t in response.responses
        for p in t.partitions
        for a in p.acquired_records
    ]


def join(state: BrokerState, member: str) -> None:
    request = message_class("ShareGroupHeartbeatRequest")(
        group_id="sg", member_id=member, member_epoch=0, subscribed_topic_names=["t"]
    )
    ctx = RequestContext(76, 1, 1, "c", client_address="127.0.0.1:5555")
    assert HANDLERS[76][0](state, ctx, request).error_code == 0


def test_state_written_over_the_wire_is_what_the_share_fetch_path_resumes_from(
    state: BrokerState, tmp_path: Path
) -> None:
    never = read(state, 0)
    assert (never.error_code, never.start_offset, never.state_epoch, batches(never)) == (
        0,
        -1,
        0,
        [],
    )
    assert summary(state).start_offset == -1
    assert initialize(state, topic_id(state), 0, 1, 5).error_code == 0
    found = read(state, 3)
    assert (found.error_code, found.state_epoch, found.start_offset, batches(found)) == (
        0,
        1,
        5,
        [],
    )
    assert write(state, 1, 3, -1, [(5, 7, ACKNOWLEDGED, 1), (8, 9, AVAILABLE, 2)]).error_code == 0
    assert batches(read(state, 3)) == [(5, 7, ACKNOWLEDGED, 1), (8, 9, AVAILABLE, 2)]
    summed = summary(state)
    assert (
        summed.state_epoch,
        summed.leader_epoch,
        summed.start_offset,
        summed.delivery_complete_count,
    ) == (
        1,
        3,
        5,
        3,
    )
    # the broker's own share-partition leader starts from that state: 8-9 again (third delivery)
    join(state, "m1")
    assert share_fetch(state, "m1", 0) == [(8, 9, 3)]
    share_fetch(state, "m1", 1, [FETCH_ACK(first_offset=8, last_offset=9, acknowledge_types=[1])])
    state.run_tickers()  # the leader writes its snapshot through the same coordinator
    after = read(state, 3)
    assert (after.start_offset, batches(after)) == (10, [])
    state.close()
    reopened = open_state(tmp_path / "data")
    try:
        again = read(reopened, 3)
        assert (again.state_epoch, again.start_offset) == (1, 10)
        assert delete(reopened).error_code == 0
        gone = read(reopened, 3)
        assert (gone.start_offset, gone.state_epoch) == (-1, 0)
    finally:
        reopened.close()


def test_fencing_and_unknown_partitions(state: BrokerState) -> None:
    assert initialize(state, topic_id(state), 0, 2, 0).error_code == 0
    assert read(state, 4).error_code == 0  # records leader epoch 4
    stale_leader = read(state, 3)
    assert (stale_leader.error_code, stale_leader.error_message) == (
        int(ErrorCode.FENCED_LEADER_EPOCH),
        ErrorCode.FENCED_LEADER_EPOCH.message,
    )
    assert write(state, 2, 3, 1, []).error_code == int(ErrorCode.FENCED_LEADER_EPOCH)
    assert write(state, 1, 4, 1, []).error_code == int(ErrorCode.FENCED_STATE_EPOCH)
    assert initialize(state, topic_id(state), 0, 1, 0).error_code == int(
        ErrorCode.FENCED_STATE_EPOCH
    )
    assert initialize(state, topic_id(state), 3, 1, 0).error_code == int(
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    )
    assert initialize(state, uuid.uuid4(), 0, 1, 0).error_code == int(
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    )
    assert read(state, 4, group="").error_code == int(ErrorCode.INVALID_GROUP_ID)
