"""KRaft metadata records in the log layer: the ``MetadataRecordSerde`` framing and the replica
sets a metadata log's files give (``ReplicaSets``, ``ReplicaSetReader``, ``read_replica_sets``).

Records are built with the framing functions and written as v2 batches to segment files (and a
snapshot file), as a KRaft node lays out ``__cluster_metadata-0``.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from kwire.errors import DecodeError
from kwire.log.metadata import (
    CLUSTER_METADATA_DIR,
    ReplicaSetReader,
    ReplicaSets,
    decode_metadata_record,
    encode_metadata_record,
    metadata_record_api_key,
    metadata_record_json,
    new_metadata_record,
    read_replica_sets,
)
from kwire.records import BatchBuilder, ControlRecordType, build_control_batch

NOW = 1_700_000_000_000
ORDERS = uuid.UUID(int=1)
GONE = uuid.UUID(int=2)


def topic(name: str, topic_id: uuid.UUID) -> tuple[Any, int]:
    return new_metadata_record("TopicRecord", name=name, topic_id=topic_id), 0


def partition(topic_id: uuid.UUID, index: int, replicas: list[int]) -> tuple[Any, int]:
    record = new_metadata_record(
        "PartitionRecord",
        partition_id=index,
        topic_id=topic_id,
        replicas=replicas,
        isr=replicas,
        removing_replicas=[],
        adding_replicas=[],
        leader=replicas[0],
        leader_recovery_state=0,
        leader_epoch=0,
        partition_epoch=0,
        directories=[],
    )
    return record, 0


def change(topic_id: uuid.UUID, index: int, replicas: list[int] | None) -> tuple[Any, int]:
    record = new_metadata_record(
        "PartitionChangeRecord",
        partition_id=index,
        topic_id=topic_id,
        leader=-2,
        isr=replicas,
        replicas=replicas,
    )
    return record, 0


def remove(topic_id: uuid.UUID) -> tuple[Any, int]:
    return new_metadata_record("RemoveTopicRecord", topic_id=topic_id), 0


def noop() -> tuple[Any, int]:
    return new_metadata_record("NoOpRecord"), 0


def batch(offset: int, records: list[tuple[Any, int]]) -> bytes:
    builder = BatchBuilder(2, base_offset=offset, partition_leader_epoch=1)
    for message, version in records:
        builder.append(None, NOW, None, encode_metadata_record(message, version))
    return builder.build()


def segment(offset: int, *groups: list[tuple[Any, int]]) -> bytes:
    """Batches of ``groups`` from ``offset`` on, after a LeaderChange control batch."""
    leader = new_metadata_record("LeaderChangeMessage", version=0, leader_id=1)
    out = build_control_batch(
        ControlRecordType.LEADER_CHANGE,
        leader,
        offset=offset,
        timestamp=NOW,
        partition_leader_epoch=1,
    )
    offset += 1
    for records in groups:
        out += batch(offset, records)
        offset += len(records)
    return out


def write(root: Path, name: str, data: bytes) -> Path:
    folder = root / CLUSTER_METADATA_DIR
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_bytes(data)
    return path


def log_name(offset: int) -> str:
    return f"{offset:020d}.log"


def test_the_framing_round_trips_and_reads_the_api_key_alone() -> None:
    message, version = topic("orders", ORDERS)
    value = encode_metadata_record(message, version)
    assert value[:3] == bytes([1, 2, 0])  # frame 1, apiKey 2 (TopicRecord), version 0
    assert metadata_record_api_key(value) == 2
    decoded, again = decode_metadata_record(value)
    assert (type(decoded).__name__, decoded.name, again) == ("TopicRecord", "orders", 0)
    assert metadata_record_json(value).startswith('{"type":"TOPIC_RECORD","version":0,')
    with pytest.raises(DecodeError, match="unknown frame version 2"):
        decode_metadata_record(bytes([2, 2, 0]))
    with pytest.raises(DecodeError, match="unknown metadata record type 99"):
        decode_metadata_record(bytes([1, 99, 0]))


def test_replica_sets_follow_reassignments_removals_and_transactions() -> None:
    sets = ReplicaSets()
    for message, _ in [
        topic("orders", ORDERS),
        partition(ORDERS, 0, [1]),
        partition(ORDERS, 1, [1]),
        topic("gone", GONE),
        partition(GONE, 0, [1]),
        change(ORDERS, 1, [1, 2, 3]),  # reassigned to three replicas
        change(ORDERS, 0, None),  # an ISR or leader change only: replicas as before
        remove(GONE),
    ]:
        sets.replay(message)
    assert sets.replicas() == {("orders", 0): (1,), ("orders", 1): (1, 2, 3)}
    # an aborted metadata transaction changes nothing; a committed one applies at its end
    sets.replay(new_metadata_record("BeginTransactionRecord", name="t"))
    sets.replay(change(ORDERS, 0, [4])[0])
    assert sets.replicas()[("orders", 0)] == (1,)
    sets.replay(new_metadata_record("AbortTransactionRecord", reason="t"))
    sets.replay(new_metadata_record("BeginTransactionRecord", name="t"))
    sets.replay(change(ORDERS, 0, [5])[0])
    sets.replay(new_metadata_record("EndTransactionRecord"))
    assert sets.replicas()[("orders", 0)] == (5,)


def test_read_replica_sets_from_segments_and_a_torn_tail(tmp_path: Path) -> None:
    assert read_replica_sets(tmp_path) == {}  # no metadata log: unknown
    first = [topic("orders", ORDERS), partition(ORDERS, 0, [1]), partition(ORDERS, 1, [1])]
    second = [topic("gone", GONE), partition(GONE, 0, [1]), noop()]
    data = segment(0, first, second)
    path = write(tmp_path, log_name(0), data)
    expected = {("orders", 0): (1,), ("orders", 1): (1,), ("gone", 0): (1,)}
    assert read_replica_sets(tmp_path) == expected
    assert read_replica_sets(tmp_path / CLUSTER_METADATA_DIR) == expected
    # a batch still being written (or cut by a crash) is not read yet
    third = batch(7, [change(ORDERS, 1, [1, 2, 3]), remove(GONE)])
    path.write_bytes(data + third[: len(third) // 2])
    assert read_replica_sets(tmp_path) == expected
    path.write_bytes(data + third)
    assert read_replica_sets(tmp_path) == {("orders", 0): (1,), ("orders", 1): (1, 2, 3)}


def test_the_reader_is_incremental_and_starts_over_when_the_log_changes(tmp_path: Path) -> None:
    reads: list[tuple[str, int]] = []

    def read(path: str, start: int) -> bytes:
        reads.append((path.rsplit("/", 1)[-1], start))
        with open(path, "rb") as f:
            f.seek(start)
            return f.read()

    def files() -> dict[str, int]:
        folder = tmp_path / CLUSTER_METADATA_DIR
        return {str(p): p.stat().st_size for p in folder.iterdir()}

    reader = ReplicaSetReader()
    head = segment(0, [topic("orders", ORDERS), partition(ORDERS, 0, [1])])
    path = write(tmp_path, log_name(0), head)
    assert reader.update(files(), read) == {("orders", 0): (1,)}
    reads.clear()
    assert reader.update(files(), read) == {("orders", 0): (1,)}
    assert reads == []  # nothing new: nothing read
    tail = batch(3, [partition(ORDERS, 1, [2])])
    path.write_bytes(head + tail)
    assert reader.update(files(), read) == {("orders", 0): (1,), ("orders", 1): (2,)}
    last = len(head) - len(batch(1, [topic("orders", ORDERS), partition(ORDERS, 0, [1])]))
    assert reads == [(log_name(0), last)]  # from the last batch read (checked), not from 0
    # truncated and written again past the old size: read again from the start
    other = segment(0, [topic("orders", ORDERS), partition(ORDERS, 0, [1, 2, 3])])
    path.write_bytes(other + batch(3, [noop(), noop(), noop(), noop(), noop()]))
    assert path.stat().st_size > len(head + tail)
    assert reader.update(files(), read) == {("orders", 0): (1, 2, 3)}
    # a roll: a new segment is read from its start
    write(tmp_path, log_name(8), batch(8, [change(ORDERS, 0, [2])]))
    assert reader.update(files(), read) == {("orders", 0): (2,)}


def test_a_snapshot_then_the_records_after_it(tmp_path: Path) -> None:
    # the snapshot holds offsets 0..4; the log's first segment was deleted
    snap = build_control_batch(
        ControlRecordType.SNAPSHOT_HEADER,
        new_metadata_record("SnapshotHeaderRecord", version=0, last_contained_log_timestamp=NOW),
        offset=0,
        timestamp=NOW,
        partition_leader_epoch=0,
    )
    snap += batch(0, [topic("orders", ORDERS), partition(ORDERS, 0, [1]), topic("gone", GONE)])
    snap += build_control_batch(
        ControlRecordType.SNAPSHOT_FOOTER,
        new_metadata_record("SnapshotFooterRecord", version=0),
        offset=3,
        timestamp=NOW,
        partition_leader_epoch=0,
    )
    write(tmp_path, f"{5:020d}-{1:010d}.checkpoint", snap)
    # the segment from offset 4 on: offset 4 (in the snapshot) is not replayed again
    write(
        tmp_path,
        log_name(4),
        batch(4, [partition(GONE, 0, [1])]) + batch(5, [partition(ORDERS, 1, [1, 2])]),
    )
    assert read_replica_sets(tmp_path) == {("orders", 0): (1,), ("orders", 1): (1, 2)}
    write(tmp_path, f"{5:020d}-{1:010d}.checkpoint.part", b"partial")  # ignored
    assert read_replica_sets(tmp_path) == {("orders", 0): (1,), ("orders", 1): (1, 2)}


def test_the_broker_metadata_log_is_read(tmp_path: Path) -> None:
    """A ``kwire broker`` data dir: every partition has this node as its one replica."""
    from kwire.broker import BrokerState, ManualClock, personality
    from kwire.broker._apis import implemented_versions

    state = BrokerState(
        tmp_path, personality=personality("3.9", implemented_versions()), clock=ManualClock(NOW)
    )
    try:
        state.create_topic("orders", 2)
        state.create_topic("gone", 1)
        state.delete_topic("gone")
        assert read_replica_sets(tmp_path) == {("orders", 0): (1,), ("orders", 1): (1,)}
    finally:
        state.close()
