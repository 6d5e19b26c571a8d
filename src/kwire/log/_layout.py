"""Names of Kafka's log files and folders, and grouping a listing into partitions and segments.

Approach: everything here works on path *strings* (sans-IO), so the same code plans a local broker
data dir and an object-store listing (``s3://bucket/backup/orders-3/000...0.log``). Kafka's rules:

- a partition folder is ``<topic>-<partition>``; topic names may contain dashes, so the partition is
  the decimal number after the LAST dash. Folders Kafka renames for deletion or moves
  (``<topic>-<partition>.<uuid>-delete``, ``-future``, ``-stray``) do not match and are skipped;
- a segment is named by its base offset, zero-padded to 20 digits: ``.log`` (the batches),
  ``.index`` (offset index), ``.timeindex`` (time index) and ``.txnindex`` (aborted transactions);
  ``.snapshot`` files (producer state) are named by an offset too but are not part of a segment;
- ``leader-epoch-checkpoint`` and ``partition.metadata`` sit next to them.

A segment exists iff its ``.log`` exists; index files without a ``.log`` are ignored. Anything else
(``.deleted``, ``.cleaned``, ``.swap``, temporary files of kwire's writer) is ignored as well.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import field
from typing import Final, NamedTuple

from kwire._lazy import lazy_dataclass

__all__ = [
    "INDEX_SUFFIX",
    "LEADER_EPOCH_CHECKPOINT",
    "LOG_SUFFIX",
    "PARTITION_METADATA",
    "SNAPSHOT_SUFFIX",
    "TIME_INDEX_SUFFIX",
    "TXN_INDEX_SUFFIX",
    "PartitionDir",
    "SegmentFiles",
    "TopicPartition",
    "parse_partition_dir",
    "parse_segment_file_name",
    "partitions_from_paths",
    "segment_base_offset",
    "segment_file_beside",
    "segment_file_name",
]

LOG_SUFFIX: Final = ".log"
INDEX_SUFFIX: Final = ".index"
TIME_INDEX_SUFFIX: Final = ".timeindex"
TXN_INDEX_SUFFIX: Final = ".txnindex"
SNAPSHOT_SUFFIX: Final = ".snapshot"
LEADER_EPOCH_CHECKPOINT: Final = "leader-epoch-checkpoint"
PARTITION_METADATA: Final = "partition.metadata"

_SEGMENT_SUFFIXES: Final = frozenset(
    {LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX, SNAPSHOT_SUFFIX}
)
_MAX_OFFSET: Final = (1 << 63) - 1
_MAX_PARTITION: Final = (1 << 31) - 1


class TopicPartition(NamedTuple):
    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


def parse_partition_dir(name: str) -> TopicPartition | None:
    """``"my-topic-3"`` -> ``TopicPartition("my-topic", 3)``; None if ``name`` is not ``<topic>-<int>``."""
    topic, dash, number = name.rpartition("-")
    if not dash or not topic or not number.isascii() or not number.isdigit():
        return None
    partition = int(number)
    if partition > _MAX_PARTITION:
        return None
    return TopicPartition(topic, partition)


def segment_file_name(base_offset: int, suffix: str) -> str:
    """``segment_file_name(5, ".log")`` -> ``"00000000000000000005.log"`` (Kafka's 20-digit names)."""
    if not 0 <= base_offset <= _MAX_OFFSET:
        raise ValueError(f"base offset {base_offset} is not a valid Kafka offset")
    return f"{base_offset:020d}{suffix}"


def segment_base_offset(name: str) -> int | None:
    """The base offset a segment file's name starts with (``"00000000000000000005.log"`` -> 5).

    Kafka's rule (``LogFileUtils.offsetFromFileName``): the part before the first dot, in decimal
    digits (Kafka writes 20; shorter stems, as hand-made files have, are accepted too); None
    otherwise, or for a number no Kafka offset can be.
    """
    stem = name.partition(".")[0]
    if not stem.isascii() or not stem.isdigit():
        return None
    offset = int(stem)
    return offset if offset <= _MAX_OFFSET else None


def segment_file_beside(path: str, suffix: str) -> str:
    """The path of the file with ``suffix`` of the same segment (``.../5.index`` -> ``.../5.log``)."""
    name = os.path.basename(path)
    return os.path.join(os.path.dirname(os.path.abspath(path)), name.split(".")[0] + suffix)


def parse_segment_file_name(name: str) -> tuple[int, str] | None:
    """``"00000000000000000005.log"`` -> ``(5, ".log")``; None for names that are not segment files.

    Accepted suffixes: ``.log .index .timeindex .txnindex .snapshot``. The stem must be decimal
    digits (Kafka writes 20; shorter stems, as hand-made files have, are accepted too).
    """
    _, dot, rest = name.partition(".")
    suffix = "." + rest
    if not dot or suffix not in _SEGMENT_SUFFIXES:
        return None
    offset = segment_base_offset(name)
    return None if offset is None else (offset, suffix)


@lazy_dataclass(frozen=True)
class SegmentFiles:
    """The files of one segment. Paths are the strings that were listed; ``None`` when absent."""

    base_offset: int
    log: str
    index: str | None = None
    timeindex: str | None = None
    txnindex: str | None = None
    #: Size of the ``.log`` in bytes when the listing knew it.
    size: int | None = None
    index_size: int | None = None


@lazy_dataclass(frozen=True)
class PartitionDir:
    """One ``<topic>-<partition>`` folder: its segments sorted by base offset and the other files."""

    topic: str
    partition: int
    path: str
    segments: tuple[SegmentFiles, ...] = ()
    #: ``.snapshot`` files (producer state), sorted by their offset.
    snapshots: tuple[str, ...] = ()
    leader_epoch_checkpoint: str | None = None
    partition_metadata: str | None = None
    #: Files in the folder that kwire does not read (``.deleted``, ``.swap``, temporary files...).
    other_files: tuple[str, ...] = field(default=())

    @property
    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)


def _split(path: str) -> tuple[str, str]:
    """Parent and name of a ``/`` (or, on Windows paths, ``\\``) separated path."""
    cut = max(path.rfind("/"), path.rfind("\\"))
    if cut < 0:
        return "", path
    return path[:cut], path[cut + 1 :]


class _Group:
    __slots__ = ("checkpoint", "files", "metadata", "other", "snapshots")

    def __init__(self) -> None:
        self.files: dict[int, dict[str, str]] = {}
        self.snapshots: list[tuple[int, str]] = []
        self.checkpoint: str | None = None
        self.metadata: str | None = None
        self.other: list[str] = []


def partitions_from_paths(
    paths: Iterable[str], sizes: Mapping[str, int] | None = None
) -> list[PartitionDir]:
    """Group file paths (a recursive listing, local or object store) into partitions and segments.

    Only files whose parent folder is named ``<topic>-<partition>`` are considered. Each distinct
    folder is one ``PartitionDir`` (two backups of the same partition stay apart), sorted by
    (topic, partition, path). ``sizes`` maps paths to file sizes, filling ``SegmentFiles.size``.
    """
    groups: dict[str, _Group] = {}
    for path in paths:
        parent, name = _split(path)
        dir_name = _split(parent)[1]
        if parse_partition_dir(dir_name) is None:
            continue
        group = groups.get(parent)
        if group is None:
            group = groups[parent] = _Group()
        parsed = parse_segment_file_name(name)
        if parsed is not None:
            offset, suffix = parsed
            if suffix == SNAPSHOT_SUFFIX:
                group.snapshots.append((offset, path))
            else:
                group.files.setdefault(offset, {})[suffix] = path
        elif name == LEADER_EPOCH_CHECKPOINT:
            group.checkpoint = path
        elif name == PARTITION_METADATA:
            group.metadata = path
        else:
            group.other.append(path)

    result = []
    for parent, group in groups.items():
        tp = parse_partition_dir(_split(parent)[1])
        assert tp is not None
        segments = []
        for offset in sorted(group.files):
            files = group.files[offset]
            log = files.get(LOG_SUFFIX)
            if log is None:
                group.other.extend(files.values())
                continue
            index = files.get(INDEX_SUFFIX)
            segments.append(
                SegmentFiles(
                    base_offset=offset,
                    log=log,
                    index=index,
                    timeindex=files.get(TIME_INDEX_SUFFIX),
                    txnindex=files.get(TXN_INDEX_SUFFIX),
                    size=None if sizes is None else sizes.get(log),
                    index_size=None if sizes is None or index is None else sizes.get(index),
                )
            )
        result.append(
            PartitionDir(
                topic=tp.topic,
                partition=tp.partition,
                path=parent,
                segments=tuple(segments),
                snapshots=tuple(p for _, p in sorted(group.snapshots)),
                leader_epoch_checkpoint=group.checkpoint,
                partition_metadata=group.metadata,
                other_files=tuple(sorted(group.other)),
            )
        )
    result.sort(key=lambda p: (p.topic, p.partition, p.path))
    return result
