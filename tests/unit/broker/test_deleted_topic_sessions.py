"""State a deleted topic leaves in incremental fetch sessions (KIP-227 with KIP-516 ids).

From Fetch v13 a session caches partitions by topic id (Kafka's ``CachedPartition`` holds the
``TopicIdPartition``). Once the id is gone the cached partition answers UNKNOWN_TOPIC_ID, which
tells the client to drop it, and a topic recreated under the same name (a new id) is never
served in its place: the client's offsets belong to the old topic.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from kwire.broker import BrokerState, testing
from kwire.protocol import ErrorCode, message_class, struct_class
from kwire.records import build_batch

NOW = 1_700_000_000_000


@pytest.fixture
def state(tmp_path: Path) -> Any:
    s = testing.make_state(tmp_path / "data", release="4.3", config={})
    yield s
    s.close()


def produce(state: BrokerState, topic: str, values: list[bytes]) -> None:
    cls = message_class("ProduceRequest")
    tcls = struct_class(cls, "topic_data")
    pcls = struct_class(cls, "topic_data", "partition_data")
    records = build_batch([(None, NOW, None, v) for v in values], 2, 0)
    response = testing.call(
        state,
        "Produce",
        9,
        acks=-1,
        timeout_ms=1000,
        topic_data=[tcls(name=topic, partition_data=[pcls(index=0, records=records)])],
    )
    assert response.responses[0].partition_responses[0].error_code == 0


def fetch_by_id(
    state: BrokerState, topic_id: uuid.UUID | None, offset: int, session_id: int, epoch: int
) -> Any:
    cls = message_class("FetchRequest")
    tcls = struct_class(cls, "topics")
    pcls = struct_class(cls, "topics", "partitions")
    topics = (
        []
        if topic_id is None
        else [
            tcls(
                topic_id=topic_id,
                partitions=[pcls(partition=0, fetch_offset=offset, partition_max_bytes=1 << 20)],
            )
        ]
    )
    return testing.call(
        state,
        "Fetch",
        13,
        replica_id=-1,
        max_wait_ms=0,
        min_bytes=1,
        max_bytes=1 << 24,
        session_id=session_id,
        session_epoch=epoch,
        topics=topics,
    )


def test_a_session_s_partition_of_a_deleted_topic_answers_unknown_topic_id(
    state: BrokerState,
) -> None:
    state.create_topic("t", 1)
    old_id = state.topics["t"].topic_id
    produce(state, "t", [b"a", b"b"])
    full = fetch_by_id(state, old_id, 2, 0, 0)
    sid = full.session_id
    assert sid != 0
    state.delete_topic("t")
    gone = fetch_by_id(state, None, 0, sid, 1)
    [topic] = gone.responses
    assert topic.topic_id == old_id
    assert [p.error_code for p in topic.partitions] == [ErrorCode.UNKNOWN_TOPIC_ID]


def test_a_session_never_serves_a_recreated_topic_under_the_old_id(state: BrokerState) -> None:
    state.create_topic("t", 1)
    old_id = state.topics["t"].topic_id
    produce(state, "t", [b"a", b"b"])
    full = fetch_by_id(state, old_id, 0, 0, 0)
    sid = full.session_id
    state.delete_topic("t")
    state.create_topic("t", 1)
    new_id = state.topics["t"].topic_id
    assert new_id != old_id
    produce(state, "t", [b"new-1", b"new-2", b"new-3"])
    answer = fetch_by_id(state, None, 0, sid, 1)
    [topic] = answer.responses
    assert topic.topic_id == old_id
    [partition] = topic.partitions
    assert partition.error_code == ErrorCode.UNKNOWN_TOPIC_ID
    assert partition.records in (b"", None) or len(partition.records) == 0
    # the new topic, added by its own id, is its own partition in the same session
    both = fetch_by_id(state, new_id, 0, sid, 2)
    errors = {t.topic_id: [p.error_code for p in t.partitions] for t in both.responses}
    assert errors[new_id] == [0]
    assert errors.get(old_id, [ErrorCode.UNKNOWN_TOPIC_ID]) == [ErrorCode.UNKNOWN_TOPIC_ID]
