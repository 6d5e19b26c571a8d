"""A segment damaged on disk under a running broker: the Fetch of that partition answers
CORRUPT_MESSAGE and the request's other partitions are served, as Kafka's
``ReplicaManager.readFromLocalLog`` does (every exception of one partition's read becomes that
partition's error, ``Errors.forException``: ``CorruptRecordException`` -> CORRUPT_MESSAGE)."""

from __future__ import annotations

import os
import struct
from pathlib import Path

from kwire.broker import BrokerState, testing
from kwire.protocol import ErrorCode
from kwire.protocol.messages import FetchRequest, ProduceRequest
from kwire.records import build_batch, read_batches


def _produce(state: BrokerState, topic: str, value: bytes) -> None:
    request = ProduceRequest.TopicProduceData
    part = ProduceRequest.PartitionProduceData
    batch = build_batch([(None, testing.NOW, None, value)], 2, 0)
    response = testing.call(
        state,
        "Produce",
        9,
        acks=-1,
        timeout_ms=1000,
        topic_data=[request(name=topic, partition_data=[part(index=0, records=batch)])],
    )
    assert response.responses[0].partition_responses[0].error_code == 0


def test_a_damaged_batch_length_is_corrupt_message_for_its_partition_only(tmp_path: Path) -> None:
    state = testing.make_state(tmp_path / "data")
    try:
        for topic in ("bad", "good"):
            state.create_topic(topic, 1)
            for i in range(5):
                _produce(state, topic, b"v%d" % i)
        segment = tmp_path / "data" / "bad-0" / f"{0:020d}.log"
        data = segment.read_bytes()
        position = 0
        for _ in range(2):  # the third batch's length field: below the minimum record size
            position += 12 + struct.unpack_from(">i", data, position + 8)[0]
        fd = os.open(segment, os.O_WRONLY)
        try:
            os.pwrite(fd, struct.pack(">i", -20), position + 8)
        finally:
            os.close(fd)

        topic_cls, part_cls = FetchRequest.FetchTopic, FetchRequest.FetchPartition
        response = testing.call(
            state,
            "Fetch",
            12,
            replica_id=-1,
            max_wait_ms=0,
            min_bytes=1,
            max_bytes=1 << 20,
            session_id=0,
            session_epoch=-1,
            topics=[
                topic_cls(
                    topic=topic,
                    partitions=[part_cls(partition=0, fetch_offset=3, partition_max_bytes=1 << 16)],
                )
                for topic in ("bad", "good")
            ],
        )
        by_topic = {t.topic: t.partitions[0] for t in response.responses}
        assert by_topic["bad"].error_code == ErrorCode.CORRUPT_MESSAGE
        assert by_topic["good"].error_code == 0
        values = [
            bytes(r.value) for b in read_batches(by_topic["good"].records) for r in b.records()
        ]
        assert values == [b"v3", b"v4"]
    finally:
        state.close()
