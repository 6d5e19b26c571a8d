"""The broker's metadata in ``__cluster_metadata-0`` as a Kafka 3.9 KRaft node keeps it.

The record bytes are read back from the segment files and decoded with kwire's generated classes
of Kafka 3.9's metadata record specs, at the versions Kafka 3.9 writes for the node's
``metadata.version``; the state survives a clean restart, a kill (no close) and a torn tail.
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any

import pytest

from kwire._wire import read_uvarint
from kwire.broker import BrokerState, ManualClock, personality
from kwire.broker import _metadata_image as mimage
from kwire.broker import _metadata_log as mlog
from kwire.broker._apis import implemented_versions
from kwire.protocol import message_class
from kwire.records import ControlRecordType, decode_control_record, read_batches

NOW = 1_700_000_000_000
META = "__cluster_metadata-0"


def make_state(path: Path, release: str = "3.9") -> BrokerState:
    return BrokerState(
        path, personality=personality(release, implemented_versions()), clock=ManualClock(NOW)
    )


def log_bytes(root: Path) -> bytes:
    return (root / META / "00000000000000000000.log").read_bytes()


def raw_records(data: bytes) -> list[tuple[str, int, Any]]:
    """(record name, version, message) of every data record, decoded by the generated classes
    directly from the MetadataRecordSerde framing."""
    out = []
    for batch in read_batches(data):
        if batch.is_control:
            continue
        for record in batch:
            assert record.value is not None
            value = bytes(record.value)
            frame, pos = read_uvarint(value, 0)
            api_key, pos = read_uvarint(value, pos)
            version, pos = read_uvarint(value, pos)
            assert frame == 1 and record.key is None
            name = mimage.RECORD_NAMES[api_key]
            out.append((name, version, message_class(name).decode(value[pos:], version)))
    return out


def image_of(root: Path) -> mimage.MetadataImage:
    image = mimage.MetadataImage()
    for _name, _version, message in raw_records(log_bytes(root)):
        image.replay(message)
    return image


def test_a_fresh_directory_is_formatted_as_kafka_39(tmp_path: Path) -> None:
    root = tmp_path / "d"
    state = make_state(root)
    try:
        assert mlog.METADATA_TOPIC not in state.topics
        directory_id = state.data_dir.directory_id
    finally:
        state.close()
    assert (root / "meta.properties").is_file()
    assert not (root / "kwire-metadata.json").exists()
    assert not (root / META / "partition.metadata").exists()  # Kafka's metadata log has none
    quorum = json.loads((root / META / "quorum-state").read_text())
    assert quorum == {
        "clusterId": "",
        "leaderId": 1,
        "leaderEpoch": 1,
        "votedId": -1,
        "appliedOffset": 0,
        "currentVoters": [{"voterId": 1}],
        "data_version": 0,
    }
    bootstrap = mlog.read_snapshot((root / "bootstrap.checkpoint").read_bytes())
    assert [(type(m).__name__, m.name, m.feature_level) for m, _ in bootstrap] == [
        ("FeatureLevelRecord", "metadata.version", 21)
    ]
    batches = list(read_batches(log_bytes(root)))
    first = decode_control_record(next(iter(batches[0])))
    assert batches[0].is_control and first.type is ControlRecordType.LEADER_CHANGE
    leader_change: Any = first.value
    assert leader_change.leader_id == 1 and batches[0].partition_leader_epoch == 1
    records = raw_records(log_bytes(root))
    assert [(n, v) for n, v, _ in records] == [
        ("BeginTransactionRecord", 0),
        ("FeatureLevelRecord", 0),
        ("ZkMigrationStateRecord", 0),
        ("EndTransactionRecord", 0),
        ("RegisterBrokerRecord", 3),
        ("UnfenceBrokerRecord", 0),
    ]
    register = records[4][2]
    assert register.broker_id == 1 and register.log_dirs == [mlog._kafka_uuid(directory_id)]
    assert register.broker_epoch == 5  # the record's offset, as Kafka's controller sets it
    assert [(e.name, e.host, e.port) for e in register.end_points] == [
        ("PLAINTEXT", "127.0.0.1", 9092)
    ]


def test_changes_are_records_at_kafka_39_versions_and_replay_to_the_state(
    tmp_path: Path,
) -> None:
    root = tmp_path / "d"
    state = make_state(root)
    try:
        state.create_topic("t", 2, {"retention.ms": "1000", "cleanup.policy": "compact"})
        state.create_partitions("t", 3)
        state.set_topic_configs("t", {"retention.ms": "2000"})
        state.create_topic("gone", 1)
        state.delete_topic("gone")
        pid = state.allocate_producer_id()
        topic_id = state.topics["t"].topic_id
        directory = mlog._kafka_uuid(state.data_dir.directory_id)
    finally:
        state.close()
    records = raw_records(log_bytes(root))
    kinds = [(n, v) for n, v, _ in records[6:]]
    assert kinds == [
        ("TopicRecord", 0),
        ("ConfigRecord", 0),
        ("ConfigRecord", 0),
        ("PartitionRecord", 1),
        ("PartitionRecord", 1),
        ("PartitionRecord", 1),  # the third partition
        ("ConfigRecord", 0),  # cleanup.policy removed (null value)
        ("ConfigRecord", 0),  # retention.ms 2000
        ("TopicRecord", 0),
        ("PartitionRecord", 1),
        ("RemoveTopicRecord", 0),
        ("ProducerIdsRecord", 0),
    ]
    partition = records[9][2]
    assert partition.topic_id == topic_id and partition.directories == [directory]
    assert (partition.leader, partition.replicas, partition.isr) == (1, [1], [1])
    removed = records[12][2]
    assert (removed.name, removed.value) == ("cleanup.policy", None)
    block = records[-1][2]
    assert block.broker_id == 1 and block.next_producer_id == pid + mlog.PRODUCER_ID_BLOCK_SIZE
    image = image_of(root)
    assert list(image.topics) == ["t"] and image.topics["t"].topic_id == topic_id
    assert image.topics["t"].partition_count() == 3
    assert image.topic_configs("t") == {"retention.ms": "2000"}
    assert image.features == {"metadata.version": 21}
    assert image.next_producer_id == pid + 1000


def test_older_metadata_versions_write_older_record_versions(tmp_path: Path) -> None:
    root = tmp_path / "d"
    state = make_state(root, "3.6")
    try:
        state.create_topic("t", 1)
    finally:
        state.close()
    versions = {n: v for n, v, _ in raw_records(log_bytes(root))}
    assert versions["RegisterBrokerRecord"] == 2 and versions["PartitionRecord"] == 0
    assert image_of(root).features == {"metadata.version": 14}


def test_topics_configs_and_producer_ids_survive_a_restart(tmp_path: Path) -> None:
    root = tmp_path / "d"
    state = make_state(root)
    state.create_topic("a", 2, {"retention.ms": "5"})
    state.create_topic("b", 1)
    state.create_partitions("b", 4)
    state.delete_topic("a")
    state.create_topic("a", 1)  # the same name again: a new topic id
    new_a = state.topics["a"].topic_id
    state.set_topic_configs("b", {"max.message.bytes": "1000"})
    ids = [state.allocate_producer_id() for _ in range(3)]
    state.close()
    again = make_state(root)
    try:
        assert sorted(again.topics) == ["a", "b"]
        assert again.topics["a"].topic_id == new_a and again.topics["a"].configs == {}
        assert len(again.topics["b"].partitions) == 4
        assert again.topics["b"].configs == {"max.message.bytes": "1000"}
        assert again.topics_by_id[new_a] is again.topics["a"]
        assert again.allocate_producer_id() > max(ids)
        assert mlog.METADATA_TOPIC not in again.topics
        epoch = json.loads((root / META / "quorum-state").read_text())["leaderEpoch"]
        assert epoch == 2  # every start is a new election
    finally:
        again.close()


def test_producer_ids_never_repeat_after_a_kill(tmp_path: Path) -> None:
    root = tmp_path / "d"
    seen: set[int] = set()
    for _ in range(3):
        state = make_state(root)  # the previous one is never closed: a SIGKILL
        for _ in range(5):
            pid = state.allocate_producer_id()
            assert pid not in seen
            seen.add(pid)
        state.data_dir.abandon()  # the kill also lets the directory's .lock go
    assert len(seen) == 15
    blocks = [m for n, _, m in raw_records(log_bytes(root)) if n == "ProducerIdsRecord"]
    assert len(blocks) == 3  # one block of 1000 per run, not one record per id


def test_a_torn_tail_of_the_metadata_log_is_recovered(tmp_path: Path) -> None:
    root = tmp_path / "d"
    state = make_state(root)
    state.create_topic("kept", 2)
    topic_id = state.topics["kept"].topic_id
    size_before = os.path.getsize(root / META / "00000000000000000000.log")
    state.create_topic("torn", 1)
    # killed while the last batch was being written: half of it reached the disk
    path = root / META / "00000000000000000000.log"
    size_after = os.path.getsize(path)
    with open(path, "r+b") as f:
        f.truncate(size_before + (size_after - size_before) // 2)
    state.data_dir.abandon()  # the kill also lets the directory's .lock go
    again = make_state(root)
    try:
        assert sorted(again.topics) == ["kept"] and again.topics["kept"].topic_id == topic_id
        again.create_topic("after", 1)
    finally:
        again.close()
    third = make_state(root)
    try:
        assert sorted(third.topics) == ["after", "kept"]
    finally:
        third.close()


def test_kwire_metadata_json_is_migrated_once(tmp_path: Path) -> None:
    root = tmp_path / "d"
    first = make_state(root)
    cluster_id = first.cluster_id
    first.close()
    topic_id = uuid.uuid4()
    legacy = {
        "version": 1,
        "cluster_id": cluster_id,
        "node_id": 1,
        "next_producer_id": 4321,
        "topics": {"old": {"topic_id": str(topic_id), "partitions": 2, "configs": {"a": "b"}}},
    }
    (root / "kwire-metadata.json").write_text(json.dumps(legacy))
    state = make_state(root)
    try:
        assert state.topics["old"].topic_id == topic_id
        assert len(state.topics["old"].partitions) == 2
        assert state.allocate_producer_id() >= 4321
    finally:
        state.close()
    assert not (root / "kwire-metadata.json").exists()
    assert (root / "kwire-metadata.json.migrated").exists()
    state = make_state(root)
    try:
        state.delete_topic("old")
    finally:
        state.close()
    state = make_state(root)  # the JSON is not read again: the deleted topic stays deleted
    try:
        assert "old" not in state.topics
    finally:
        state.close()


def test_record_framing_round_trips() -> None:
    message = mimage.new_record("TopicRecord", name="x", topic_id=uuid.UUID(int=7))
    value = mimage.encode_record(message, 0)
    assert value[:3] == bytes([1, 2, 0])  # frame version 1, apiKey 2, version 0
    decoded, version = mimage.decode_record(value)
    assert version == 0 and decoded == message
    with pytest.raises(Exception, match="frame version"):
        mimage.decode_record(bytes([2]) + value[1:])


def test_metadata_versions_by_release() -> None:
    assert mimage.metadata_version_for("3.9") == 21
    assert mimage.metadata_version_for("3.7") == 19
    assert mimage.metadata_version_for("4.3") == 21
    assert mimage.metadata_version_for("2.0") == 7


def test_dump_json_is_kafkas_cluster_metadata_decoder_payload() -> None:
    topic_id = uuid.UUID(int=1)
    value = mimage.encode_record(mimage.new_record("TopicRecord", name="x", topic_id=topic_id), 0)
    doc = json.loads(mimage.dump_json(value))
    assert doc == {
        "type": "TOPIC_RECORD",
        "version": 0,
        "data": {"name": "x", "topicId": "AAAAAAAAAAAAAAAAAAAAAQ"},
    }
    assert mimage.record_type_name(21) == "ZK_MIGRATION_STATE_RECORD"
