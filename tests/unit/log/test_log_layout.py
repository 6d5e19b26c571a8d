"""Kafka's folder and file names (``LogFileUtils``/``UnifiedLog``) and grouping listings into segments."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kwire.log import (
    PartitionDir,
    TopicPartition,
    list_log_dir,
    parse_partition_dir,
    parse_segment_file_name,
    partitions_from_paths,
    segment_file_name,
)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("orders-0", TopicPartition("orders", 0)),
        # Topic names may contain dashes: the partition follows the LAST one.
        ("my-dashed-topic-12", TopicPartition("my-dashed-topic", 12)),
        ("__consumer_offsets-49", TopicPartition("__consumer_offsets", 49)),
        ("a.b_c-7", TopicPartition("a.b_c", 7)),
        # Kafka's parse (lastIndexOf('-')) reads "t--3" as topic "t-", partition 3.
        ("t--3", TopicPartition("t-", 3)),
    ],
)
def test_partition_dir_names(name: str, expected: TopicPartition) -> None:
    assert parse_partition_dir(name) == expected
    assert str(expected) == name


@pytest.mark.parametrize(
    "name",
    [
        "orders",  # no dash
        "-3",  # no topic
        "orders-",  # no partition
        "orders-x",  # not a number
        # Kafka renames partitions it deletes / moves / strays with a suffix after a dot:
        "orders-0.5b3c0f1a8e3d4c7f9a1b2c3d4e5f6a7b-delete",
        "orders-0.5b3c0f1a8e3d4c7f9a1b2c3d4e5f6a7b-future",
        "orders-0.5b3c0f1a8e3d4c7f9a1b2c3d4e5f6a7b-stray",
        "orders-99999999999",  # beyond int32
        "orders-٣",  # a non-ASCII digit
    ],
)
def test_not_partition_dirs(name: str) -> None:
    assert parse_partition_dir(name) is None


def test_segment_file_names_are_20_digits() -> None:
    assert segment_file_name(0, ".log") == "00000000000000000000.log"
    assert segment_file_name(123456789, ".timeindex") == "00000000000123456789.timeindex"
    assert segment_file_name(2**63 - 1, ".index") == "09223372036854775807.index"
    with pytest.raises(ValueError):
        segment_file_name(-1, ".log")
    with pytest.raises(ValueError):
        segment_file_name(2**63, ".log")


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("00000000000000000042.log", (42, ".log")),
        ("00000000000000000042.index", (42, ".index")),
        ("00000000000000000042.timeindex", (42, ".timeindex")),
        ("00000000000000000042.txnindex", (42, ".txnindex")),
        ("00000000000000000042.snapshot", (42, ".snapshot")),
        ("42.log", (42, ".log")),
        ("00000000000000000042.log.deleted", None),
        ("00000000000000000042.log.cleaned", None),
        ("00000000000000000042.log.swap", None),
        ("00000000000000000042.log.kwire-tmp", None),
        ("leader-epoch-checkpoint", None),
        ("partition.metadata", None),
        ("abc.log", None),
        ("00000000000000000042", None),
        ("99999999999999999999.log", None),  # beyond int64
    ],
)
def test_segment_file_name_parsing(name: str, expected: tuple[int, str] | None) -> None:
    assert parse_segment_file_name(name) == expected


def test_grouping_an_object_store_listing() -> None:
    root = "s3://bucket/backup"
    paths = [
        f"{root}/my-topic-1/00000000000000000100.log",
        f"{root}/my-topic-1/00000000000000000100.index",
        f"{root}/my-topic-1/00000000000000000000.log",
        f"{root}/my-topic-1/00000000000000000000.index",
        f"{root}/my-topic-1/00000000000000000000.timeindex",
        f"{root}/my-topic-1/00000000000000000000.txnindex",
        f"{root}/my-topic-1/00000000000000000200.snapshot",
        f"{root}/my-topic-1/00000000000000000100.snapshot",
        f"{root}/my-topic-1/leader-epoch-checkpoint",
        f"{root}/my-topic-1/partition.metadata",
        f"{root}/my-topic-1/00000000000000000300.index",  # an index without its .log
        f"{root}/my-topic-1/00000000000000000300.log.kwire-tmp",
        f"{root}/my-topic-0/00000000000000000000.log",
        f"{root}/a-0/00000000000000000007.log",
        f"{root}/not-a-partition-dir/00000000000000000000.log",
        f"{root}/00000000000000000000.log",  # directly under the root: no partition folder
        f"{root}/cleaner-offset-checkpoint",
    ]
    sizes = {paths[0]: 10, paths[1]: 8, paths[2]: 20}
    result = partitions_from_paths(paths, sizes)
    assert [(p.topic, p.partition) for p in result] == [
        ("a", 0),
        ("my-topic", 0),
        ("my-topic", 1),
    ]
    p = result[2]
    assert p.path == f"{root}/my-topic-1"
    assert [s.base_offset for s in p.segments] == [0, 100]
    first, second = p.segments
    assert first.log.endswith("/00000000000000000000.log") and first.size == 20
    assert first.timeindex is not None and first.txnindex is not None and first.index is not None
    assert second.size == 10 and second.index_size == 8
    assert second.timeindex is None and second.txnindex is None
    assert p.snapshots == (
        f"{root}/my-topic-1/00000000000000000100.snapshot",
        f"{root}/my-topic-1/00000000000000000200.snapshot",
    )
    assert p.leader_epoch_checkpoint == f"{root}/my-topic-1/leader-epoch-checkpoint"
    assert p.partition_metadata == f"{root}/my-topic-1/partition.metadata"
    assert f"{root}/my-topic-1/00000000000000000300.index" in p.other_files
    assert f"{root}/my-topic-1/00000000000000000300.log.kwire-tmp" in p.other_files
    assert p.topic_partition == TopicPartition("my-topic", 1)


def test_two_copies_of_a_partition_stay_apart() -> None:
    paths = ["/d1/t-0/00000000000000000000.log", "/d2/t-0/00000000000000000005.log"]
    result = partitions_from_paths(paths)
    assert [(p.path, p.segments[0].base_offset) for p in result] == [("/d1/t-0", 0), ("/d2/t-0", 5)]
    assert all(isinstance(p, PartitionDir) for p in result)


def test_list_log_dir_from_data_dir_and_from_partition_dir(tmp_path: Path) -> None:
    for folder, files in {
        "events-0": ["00000000000000000000.log", "00000000000000000000.index"],
        "events-1": ["00000000000000000000.log", "00000000000000000050.log"],
        "events-1.abc-delete": ["00000000000000000000.log"],
    }.items():
        (tmp_path / folder).mkdir()
        for name in files:
            (tmp_path / folder / name).write_bytes(b"x" * 3)
    (tmp_path / "recovery-point-offset-checkpoint").write_text("0\n0\n")
    result = list_log_dir(tmp_path)
    assert [(p.topic, p.partition, len(p.segments)) for p in result] == [
        ("events", 0, 1),
        ("events", 1, 2),
    ]
    assert result[1].segments[1].base_offset == 50
    assert result[1].segments[1].size == 3
    single = list_log_dir(tmp_path / "events-1")
    assert len(single) == 1 and os.path.samefile(single[0].path, tmp_path / "events-1")
    with pytest.raises(NotADirectoryError):
        list_log_dir(tmp_path / "recovery-point-offset-checkpoint")
