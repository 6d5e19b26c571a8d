"""``DataDir`` against Kafka's ``LogManager`` files (meta.properties, offset checkpoints)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kwire.errors import DecodeError
from kwire.log import TopicPartition, encode_offset_checkpoint, read_offset_checkpoint
from kwire.log.storage import DataDir, LogConfig
from kwire.records import BatchBuilder

NOW = 1_700_000_000_000


def batch(n: int) -> bytes:
    b = BatchBuilder()
    for i in range(n):
        b.append(timestamp=NOW + i, key=None, value=b"x" * 20)
    return b.build()


def test_meta_properties(tmp_path: Path) -> None:
    d = DataDir.open(tmp_path / "data", cluster_id="abcdefghijklmnopqrstuv", node_id=3)
    lines = (tmp_path / "data" / "meta.properties").read_text().splitlines()
    assert lines[0] == "#" and lines[1].startswith("#")
    props = dict(line.split("=", 1) for line in lines[2:])
    assert props == {
        "cluster.id": "abcdefghijklmnopqrstuv",
        "directory.id": d.directory_id,
        "node.id": "3",
        "version": "1",
    }
    d.close([])
    again = DataDir.open(tmp_path / "data", cluster_id=None, node_id=3)
    assert again.cluster_id == "abcdefghijklmnopqrstuv"
    assert again.directory_id == d.directory_id
    again.close([])
    with pytest.raises(ValueError, match="node id"):
        DataDir.open(tmp_path / "data", cluster_id=None, node_id=4)
    with pytest.raises(ValueError, match=r"cluster\.id"):
        DataDir.open(tmp_path / "data", cluster_id="other", node_id=3)


def test_checkpoint_text_format() -> None:
    offsets = {TopicPartition("orders", 0): 42, TopicPartition("my-topic", 12): 7}
    text = encode_offset_checkpoint(offsets)
    assert text == "0\n2\norders 0 42\nmy-topic 12 7\n"
    assert read_offset_checkpoint(text) == offsets
    assert read_offset_checkpoint("0\n0\n") == {}
    with pytest.raises(DecodeError):
        read_offset_checkpoint("1\n0\n")
    with pytest.raises(DecodeError):
        read_offset_checkpoint("0\n2\norders 0 42\n")
    with pytest.raises(DecodeError):
        read_offset_checkpoint("0\n1\norders x 42\n")


def test_checkpoint_round_trip_and_clean_shutdown(tmp_path: Path) -> None:
    d = DataDir.open(tmp_path, cluster_id="c", node_id=1)
    cfg = LogConfig(segment_bytes=300)
    a = d.open_log("orders", 0, cfg, NOW)
    b = d.open_log("my-topic", 3, cfg, NOW, topic_id=bytes(range(16)))
    for _ in range(10):
        a.append_as_leader(batch(2), now_ms=NOW)
        a.high_watermark = a.log_end_offset
    b.append_as_leader(batch(1), now_ms=NOW)
    a.delete_records_before(7)
    d.write_checkpoints([a, b])
    assert (tmp_path / "recovery-point-offset-checkpoint").read_text().startswith("0\n2\n")
    assert (tmp_path / "log-start-offset-checkpoint").read_text() == "0\n1\norders 0 7\n"
    assert (tmp_path / "replication-offset-checkpoint").read_text() == (
        "0\n2\nmy-topic 3 0\norders 0 20\n"
    )
    assert not [n for n in os.listdir(tmp_path) if n.endswith(".tmp")]
    d.close([a, b])
    assert (tmp_path / ".kafka_cleanshutdown").exists()
    os.makedirs(tmp_path / "orders-1.0123456789abcdef-delete")
    os.makedirs(tmp_path / "orders-2-future")
    d2 = DataDir.open(tmp_path, cluster_id="c", node_id=1)
    assert d2.had_clean_shutdown
    assert not (tmp_path / ".kafka_cleanshutdown").exists()
    assert d2.partition_dirs() == [TopicPartition("my-topic", 3), TopicPartition("orders", 0)]
    a2 = d2.open_log("orders", 0, cfg, NOW)
    assert (a2.log_start_offset, a2.log_end_offset, a2.high_watermark) == (7, 20, 20)
    assert a2.recovery_point == 20
    b2 = d2.open_log("my-topic", 3, cfg, NOW)
    assert b2.topic_id == bytes(range(16))
    assert b2.high_watermark == 0
    d2.close([a2, b2])
