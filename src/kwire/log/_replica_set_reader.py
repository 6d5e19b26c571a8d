"""The replica sets of a metadata log's files, read incrementally (``ReplicaSetReader``).

Approach: ``ReplicaSetReader`` feeds it the files of ``<data dir>/__cluster_metadata-0/`` through a
``read(path, start)`` callable (local files or any filesystem): the newest snapshot
(``<offset>-<epoch>.checkpoint``, Kafka's ``Snapshots`` file name, whose offset is the first one
it does not hold) and then the log segments' records from that offset on. It is incremental: a
later ``update`` reads only what was appended, re-reading the last batch it consumed to check
that it is still there (a log truncated and appended again starts over, as does a new snapshot,
a shrunk or deleted segment). A torn tail (a batch still being written, or cut by a crash) is
not read yet; a directory without a metadata log gives nothing, which callers take as unknown.
The metadata log's own high watermark is not consulted: a single-node quorum commits what it has
fsynced, and the records this reader uses are appended before the partitions they describe.

A module of its own: the readers of data directories (Spark's streams, the tools) need it, a
broker's start does not.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import field
from typing import Final

from kwire._lazy import lazy_dataclass
from kwire.errors import DecodeError
from kwire.log._metadata_records import CLUSTER_METADATA_DIR, ReplicaSets
from kwire.records import read_batches

__all__ = ["ReplicaSetReader", "read_replica_sets"]


def _snapshot_end(name: str) -> int | None:
    """The end offset of a snapshot file name (``<20 digits>-<10 digits>.checkpoint``)."""
    stem, dot, suffix = name.partition(".")
    offset, dash, epoch = stem.partition("-")
    if (
        dot
        and dash
        and suffix == "checkpoint"
        and len(offset) == 20
        and len(epoch) == 10
        and offset.isdigit()
        and epoch.isdigit()
    ):
        return int(offset)
    return None


def _segment_base(name: str) -> int | None:
    stem, dot, suffix = name.partition(".")
    return int(stem) if dot and suffix == "log" and stem.isascii() and stem.isdigit() else None


_BATCH_HEADER: Final = 61  # a v2 batch header: its offset, length, epoch and CRC among them

Read = Callable[[str, int], bytes | bytearray | memoryview]


@lazy_dataclass
class _Consumed:
    """What the reader has read of one segment."""

    end: int  # the position after the last whole batch read
    last_start: int = -1  # where that batch starts (-1: none read)
    last_header: bytes = b""


@lazy_dataclass
class ReplicaSetReader:
    """Replica sets from a metadata log's files, read incrementally; see the module doc.

    ``update(files, read)``: ``files`` maps the paths of the files in ``__cluster_metadata-0``
    (others are ignored) to their sizes; ``read(path, start)`` returns a file's bytes from
    ``start`` to its end. A snapshot that cannot be decoded gives nothing (unknown)."""

    _sets: ReplicaSets = field(default_factory=ReplicaSets)
    _snapshot: tuple[str, int] | None = None
    _snapshot_end: int = 0
    _consumed: dict[str, _Consumed] = field(default_factory=dict)
    _broken: bool = False  # a record this reader cannot decode: everything is unknown

    def update(
        self, files: Mapping[str, int], read: Read
    ) -> dict[tuple[str, int], tuple[int, ...]]:
        snapshots: list[tuple[int, str]] = []
        segments: list[tuple[int, str]] = []
        for path in files:
            name = path.replace("\\", "/").rsplit("/", 1)[-1]
            end = _snapshot_end(name)
            if end is not None:
                snapshots.append((end, path))
            base = _segment_base(name)
            if base is not None:
                segments.append((base, path))
        snapshot = max(snapshots)[1] if snapshots else None
        key = None if snapshot is None else (snapshot, files[snapshot])
        if key != self._snapshot or any(
            path not in files or files[path] < c.end for path, c in self._consumed.items()
        ):
            self._reset(key, read)
        if self._snapshot is None and snapshot is not None:
            return {}  # the snapshot could not be read
        # segments wholly below the snapshot's end are not read (Kafka deletes them soon)
        segments.sort()
        wanted = [
            path
            for i, (_base, path) in enumerate(segments)
            if i + 1 == len(segments) or segments[i + 1][0] > self._snapshot_end
        ]
        for path in wanted:
            if not self._read_segment(path, files[path], read):
                self._reset(key, read)
                for again in wanted:
                    self._read_segment(again, files[again], read)
                break
        return {} if self._broken else self._sets.replicas()

    def _reset(self, key: tuple[str, int] | None, read: Read) -> None:
        self._sets = ReplicaSets()
        self._consumed = {}
        self._broken = False
        self._snapshot = key
        self._snapshot_end = 0
        if key is None:
            return
        try:
            data = read(key[0], 0)
            for batch in read_batches(data, verify_crc=True):
                if batch.is_control:
                    continue
                for record in batch:
                    if record.value is not None:
                        self._sets.replay_value(record.value)
        except (DecodeError, FileNotFoundError):
            self._sets = ReplicaSets()
            self._snapshot = None
            return
        self._snapshot_end = _snapshot_end(key[0].replace("\\", "/").rsplit("/", 1)[-1]) or 0

    def _read_segment(self, path: str, size: int, read: Read) -> bool:
        """Read what is new in one segment; False when what was read before is not there."""
        seen = self._consumed.get(path)
        if seen is not None and size == seen.end:
            return True
        check = seen is not None and seen.last_start >= 0
        start = 0 if seen is None else seen.last_start if check else seen.end
        try:
            data = memoryview(read(path, start))
        except FileNotFoundError:
            return False
        pos = 0
        if seen is not None and check:
            if bytes(data[: len(seen.last_header)]) != seen.last_header:
                return False  # truncated and written again
            pos = seen.end - seen.last_start
        state = seen if seen is not None else _Consumed(0)
        reader = read_batches(data[pos:], verify_crc=True, allow_truncated_tail=True)
        while True:
            batch_start = reader.position
            try:
                batch = next(reader)
            except (StopIteration, DecodeError):
                break  # the end, or a batch still being written
            state.last_start = start + pos + batch_start
            state.last_header = bytes(data[pos + batch_start : pos + batch_start + _BATCH_HEADER])
            state.end = start + pos + reader.position
            if batch.is_control or self._broken:
                continue
            for record in batch:
                if record.offset >= self._snapshot_end and record.value is not None:
                    try:
                        self._sets.replay_value(record.value)
                    except DecodeError:
                        self._broken = True  # a newer record version: replicas are unknown
                        break
        self._consumed[path] = state
        return True


def _local_read(path: str, start: int) -> bytes:
    with open(path, "rb") as f:
        f.seek(start)
        return f.read()


def read_replica_sets(
    path: str | os.PathLike[str], reader: ReplicaSetReader | None = None
) -> dict[tuple[str, int], tuple[int, ...]]:
    """``{(topic, partition): replica ids}`` from the local metadata log at ``path`` (a data
    directory or its ``__cluster_metadata-0``); empty when there is none (unknown)."""
    root = os.fspath(path)
    if os.path.basename(os.path.normpath(root)) != CLUSTER_METADATA_DIR:
        root = os.path.join(root, CLUSTER_METADATA_DIR)
    try:
        names: Iterable[str] = os.listdir(root)
    except (FileNotFoundError, NotADirectoryError):
        return {}
    files: dict[str, int] = {}
    for name in names:
        full = os.path.join(root, name)
        try:
            files[full] = os.path.getsize(full)
        except FileNotFoundError:
            continue  # deleted while listed
    return (reader or ReplicaSetReader()).update(files, _local_read)
