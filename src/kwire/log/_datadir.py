"""A broker data directory (``log.dirs`` entry): Kafka's ``LogManager`` files around the logs.

Approach: ``DataDir`` owns the files a Kafka 3.9 broker keeps at the top of a log dir and opens
the partition logs (``LiveLog``) with what they say:

- ``meta.properties`` in KRaft form (``MetaProperties`` v1, ``_meta_properties``): the files of
  all the node's directories read once and checked together at ``open_all``; a different node
  id or cluster id, or one directory id twice, refuses to start, as Kafka does;
- the text checkpoints of ``OffsetCheckpointFile`` (``CheckpointFile``): line 1 the version
  ``0``, line 2 the entry count, then ``<topic> <partition> <offset>`` lines. Written to
  ``<name>.tmp``, fsynced, renamed over the old file, directory fsynced.
  ``recovery-point-offset-checkpoint`` holds each log's recovery point,
  ``log-start-offset-checkpoint`` the log start offsets that are above the first segment's base
  (``LogManager.checkpointLogStartOffsetsInDir``), ``replication-offset-checkpoint`` the high
  watermarks (``ReplicaManager``), ``cleaner-offset-checkpoint`` the log cleaner's first dirty
  offset of each compacted log (``LogCleanerManager``; read and written for the cleaner by
  ``read_cleaner_checkpoint`` / ``write_cleaner_checkpoint``);
- ``.kafka_cleanshutdown``: written by ``close`` after every log is closed and checkpointed, and
  removed at open; while it exists, logs skip the recovery of segments past their recovery point;
- ``failures`` (``LogDirFailureChannel``): an I/O error in any file of the directory (a log, a
  checkpoint, ``__cluster_metadata``) takes it offline (``KafkaStorageError``). An offline
  directory writes no checkpoint and no clean-shutdown marker (Kafka checkpoints live
  directories only), so the next start recovers every log past its recovery point.
- ``.lock``: held (``DirLock``) from the start of ``open`` to the end of ``close``, before any
  other file is read or written; a second broker on the directory gets ``DataDirLockedError``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Final

from kwire._wire import random_uuid_text
from kwire.errors import DecodeError, KafkaStorageError
from kwire.log._failure import LogDirFailureChannel
from kwire.log._layout import TopicPartition, parse_partition_dir
from kwire.log._live import LiveLog
from kwire.log._lock import DirLock
from kwire.log._log_config import LogConfig
from kwire.log._log_loader import read_topic_id
from kwire.log._meta_properties import (
    MetaProperties,
    read_meta_properties,
    verify_ensemble,
)
from kwire.log._writer import _fsync_dir, write_atomic
from kwire.log.internal_topics import CLUSTER_METADATA

log = logging.getLogger("kwire.log")

__all__ = [
    "CLEANER_OFFSET_CHECKPOINT",
    "CLEAN_SHUTDOWN_FILE",
    "LOG_START_OFFSET_CHECKPOINT",
    "RECOVERY_POINT_CHECKPOINT",
    "REPLICATION_OFFSET_CHECKPOINT",
    "DataDir",
    "encode_offset_checkpoint",
    "read_offset_checkpoint",
]

RECOVERY_POINT_CHECKPOINT: Final = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT: Final = "log-start-offset-checkpoint"
REPLICATION_OFFSET_CHECKPOINT: Final = "replication-offset-checkpoint"
CLEAN_SHUTDOWN_FILE: Final = ".kafka_cleanshutdown"
CLEANER_OFFSET_CHECKPOINT: Final = "cleaner-offset-checkpoint"
_CHECKPOINT_VERSION: Final = 0


def encode_offset_checkpoint(offsets: Mapping[TopicPartition, int]) -> str:
    """The text of an ``OffsetCheckpointFile``."""
    lines = [str(_CHECKPOINT_VERSION), str(len(offsets))]
    lines += [f"{tp.topic} {tp.partition} {offset}" for tp, offset in offsets.items()]
    return "\n".join(lines) + "\n"


def read_offset_checkpoint(text: str) -> dict[TopicPartition, int]:
    """Parse an ``OffsetCheckpointFile`` (``DecodeError`` as Kafka's "Malformed line")."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if not lines:
        return {}
    if lines[0].strip() != str(_CHECKPOINT_VERSION):
        raise DecodeError(
            f"Unrecognized version of the checkpoint file: {lines[0]!r}", path="line 1"
        )
    try:
        expected = int(lines[1])
    except (IndexError, ValueError):
        raise DecodeError("malformed entry count", path="line 2") from None
    out: dict[TopicPartition, int] = {}
    for number, line in enumerate(lines[2:], start=3):
        parts = line.split()
        if len(parts) != 3 or not parts[1].isdigit() or not parts[2].lstrip("-").isdigit():
            raise DecodeError(f"Malformed line in checkpoint file: {line!r}", path=f"line {number}")
        out[TopicPartition(parts[0], int(parts[1]))] = int(parts[2])
    if len(out) != expected:
        raise DecodeError(
            f"Expected {expected} entries in checkpoint file but found only {len(out)}",
            path=f"line {len(lines)}",
        )
    return out


class DataDir:
    """One broker data directory; see the module doc. Open with ``DataDir.open``."""

    def __init__(
        self,
        path: str,
        cluster_id: str,
        node_id: int,
        directory_id: str,
        clean: bool,
        lock: DirLock | None = None,
    ) -> None:
        self.path = path
        #: The directory's ``.lock`` (``open`` takes it; ``close`` lets it go).
        self.lock = lock
        self.cluster_id = cluster_id
        self.node_id = node_id
        self.directory_id = directory_id
        #: Whether the previous run ended with ``close`` (``.kafka_cleanshutdown`` was present).
        self.had_clean_shutdown = clean
        #: Takes the directory offline on an I/O error (shared with every log opened here).
        self.failures = LogDirFailureChannel()
        self.recovery_points = self._read(RECOVERY_POINT_CHECKPOINT)
        self.log_start_offsets = self._read(LOG_START_OFFSET_CHECKPOINT)
        self.high_watermarks = self._read(REPLICATION_OFFSET_CHECKPOINT)

    @classmethod
    def open(cls, path: str | os.PathLike[str], *, cluster_id: str | None, node_id: int) -> DataDir:
        """Create or check the directory and its ``meta.properties``; ``cluster_id=None``
        accepts the stored one (or makes a random one for a new directory)."""
        (data_dir,) = cls.open_all([path], cluster_id=cluster_id, node_id=node_id)
        return data_dir

    @classmethod
    def open_all(
        cls,
        paths: Sequence[str | os.PathLike[str]],
        *,
        cluster_id: str | None,
        node_id: int,
        new_cluster_id: Callable[[], str] = random_uuid_text,
    ) -> list[DataDir]:
        """Open a node's log directories (``log.dirs``) as ``KafkaRaftServer.initializeLogDirs``
        does: each locked, each ``meta.properties`` read once, the files checked together
        (``verify_ensemble``: one cluster, one node, distinct directory ids), then the missing
        ones written (the cluster's id, a new directory id; a file without a directory id gets
        one, as Kafka's ``MetaPropertiesEnsemble.Copier``). ``cluster_id=None`` accepts the
        stored one, else ``new_cluster_id()`` names a new cluster."""
        roots = list(dict.fromkeys(os.path.abspath(os.fspath(p)) for p in paths))
        locks: list[DirLock] = []
        try:
            for root in roots:
                os.makedirs(root, exist_ok=True)
                locks.append(DirLock.acquire(root))
            found = {r: m for r in roots if (m := read_meta_properties(r)) is not None}
            verify_ensemble(found, cluster_id=cluster_id, node_id=node_id, kraft=True)
            stored = next((m.cluster_id for m in found.values() if m.cluster_id), None)
            cluster = stored or cluster_id or new_cluster_id()
            taken = {m.directory_id for m in found.values()}
            out = []
            for root, lock in zip(roots, locks, strict=True):
                meta: MetaProperties | None = found.get(root)
                if meta is None or meta.directory_id is None:
                    directory_id = random_uuid_text()
                    while directory_id in taken:  # Copier.generateValidDirectoryId
                        directory_id = random_uuid_text()
                    taken.add(directory_id)
                    meta = MetaProperties(1, cluster, node_id, directory_id)
                    meta.write(root)
                out.append(cls._opened(root, lock, meta))
            return out
        except BaseException:
            for lock in locks:
                lock.release()
            raise

    @classmethod
    def _opened(cls, root: str, lock: DirLock, meta: MetaProperties) -> DataDir:
        # v1, verified: every field is there
        assert meta.cluster_id and meta.node_id is not None and meta.directory_id
        marker = os.path.join(root, CLEAN_SHUTDOWN_FILE)
        clean = os.path.exists(marker)
        self = cls(root, meta.cluster_id, meta.node_id, meta.directory_id, clean, lock)
        if clean:
            os.remove(marker)
            _fsync_dir(root)
        # LogManager.loadLogs: one line a directory, what its logs' load will do (the metadata
        # log is not one of them: it always recovers, and says so itself).
        logs = sum(tp.topic != CLUSTER_METADATA for tp in self.partition_dirs())
        if not logs:
            log.debug("no logs found to be loaded in %s", root)
        elif clean:
            log.info(
                "skipping recovery of %d logs from %s since clean shutdown file was found",
                logs,
                root,
            )
        else:
            log.info(
                "recovering %d logs from %s since no clean shutdown file was found", logs, root
            )
        return self

    def _read(self, name: str) -> dict[TopicPartition, int]:
        try:
            with open(os.path.join(self.path, name), encoding="utf-8") as f:
                return read_offset_checkpoint(f.read())
        except FileNotFoundError:
            return {}

    @property
    def offline(self) -> bool:
        """An I/O error took the directory offline (until the process restarts)."""
        return self.failures.is_offline(self.path)

    def _write_checkpoint(self, name: str, text: str) -> None:
        """``CheckpointFile.write``: an I/O error takes the directory offline."""
        self.failures.check(self.path)
        with self.failures.guard(self.path, f"Error while writing {name} in dir {self.path}"):
            write_atomic(os.path.join(self.path, name), text)

    def read_cleaner_checkpoint(self) -> dict[TopicPartition, int]:
        """The log cleaner's ``cleaner-offset-checkpoint`` (empty when absent)."""
        return self._read(CLEANER_OFFSET_CHECKPOINT)

    def write_cleaner_checkpoint(self, offsets: Mapping[TopicPartition, int]) -> None:
        """Replace ``cleaner-offset-checkpoint`` (entries sorted by topic and partition)."""
        text = encode_offset_checkpoint(dict(sorted(offsets.items())))
        self._write_checkpoint(CLEANER_OFFSET_CHECKPOINT, text)

    def partition_dirs(self) -> list[TopicPartition]:
        """The ``<topic>-<partition>`` folders (``-delete``/``-future``/``-stray`` ones skipped)."""
        out = []
        for name in sorted(os.listdir(self.path)):
            tp = parse_partition_dir(name)
            if tp is not None and os.path.isdir(os.path.join(self.path, name)):
                out.append(tp)
        return out

    def has_partition_dir(self, topic: str, partition: int) -> bool:
        """Whether ``<topic>-<partition>`` is a folder of this directory (where its log opens,
        ``LogManager.nextLogDirs`` aside)."""
        return os.path.isdir(os.path.join(self.path, f"{topic}-{partition}"))

    def disk_usage(self) -> tuple[int, int]:
        """(total, usable) bytes of the file system holding the directory (DescribeLogDirs'
        ``TotalBytes`` / ``UsableBytes``: ``FileStore.getTotalSpace`` / ``getUsableSpace``);
        ``OSError`` when it cannot be read."""
        stat = os.statvfs(self.path)
        return stat.f_blocks * stat.f_frsize, stat.f_bavail * stat.f_frsize

    def open_log(
        self,
        topic: str,
        partition: int,
        config: LogConfig,
        now_ms: int,
        topic_id: bytes | None = None,
        producer_id_expiration_ms: int | None = None,
        new: bool = False,
    ) -> LiveLog:
        """Open (or create) a partition's log with its checkpointed offsets. ``new``: the
        partition of a topic being created; a folder of the same name whose
        ``partition.metadata`` holds another topic id is a stray, left by a creation that
        failed half-way (an I/O error before the topic was recorded): it is renamed
        ``<topic>-<partition>.<uuid>-stray``, as Kafka renames the stray logs it finds."""
        tp = TopicPartition(topic, partition)
        folder = os.path.join(self.path, f"{topic}-{partition}")
        if new and topic_id is not None:
            found = read_topic_id(folder)
            if found is not None and found != topic_id:
                stray = f"{folder}.{uuid.uuid4().hex}-stray"
                log.warning("%s holds another topic id: renamed %s", folder, stray)
                with self.failures.guard(self.path, f"Error while renaming {folder}"):
                    os.replace(folder, stray)
        return LiveLog.open(
            folder,
            config,
            now_ms=now_ms,
            recovery_point=self.recovery_points.get(tp, 0),
            log_start_offset=self.log_start_offsets.get(tp, 0),
            topic_id=topic_id,
            high_watermark=self.high_watermarks.get(tp),
            clean_shutdown=self.had_clean_shutdown,
            producer_id_expiration_ms=producer_id_expiration_ms,
            failure_channel=self.failures,
        )

    def adopt(
        self,
        live: LiveLog,
        config: LogConfig,
        now_ms: int,
        topic_id: bytes | None = None,
        producer_id_expiration_ms: int | None = None,
    ) -> LiveLog:
        """Move ``live`` (a log of another directory of this broker, ``log.dirs``) here and
        reopen it: AlterReplicaLogDirs' effect. Kafka copies into a ``-future`` log and swaps it
        in once caught up; here the log is closed, its folder moved (renamed on one file system,
        else copied then removed), and its offsets checkpointed for this directory so the
        reopened log has the same log start, recovery point and high watermark."""
        tp = TopicPartition(live.topic, live.partition)
        source = live.path
        starts = live.log_start_offset
        recovery, hw = live.recovery_point, live.high_watermark
        live.close()
        folder = os.path.join(self.path, os.path.basename(source))
        with self.failures.guard(self.path, f"Error while moving {source} to {self.path}"):
            try:
                os.rename(source, folder)
            except OSError:
                import shutil  # here: only a move between log directories needs it

                shutil.copytree(source, folder)
                shutil.rmtree(source)
            _fsync_dir(self.path)
            _fsync_dir(os.path.dirname(source))
        self.recovery_points[tp] = recovery
        self.log_start_offsets[tp] = starts
        self.high_watermarks[tp] = hw
        return self.open_log(
            live.topic,
            live.partition,
            config,
            now_ms,
            topic_id=topic_id,
            producer_id_expiration_ms=producer_id_expiration_ms,
        )

    def write_checkpoints(self, logs: Iterable[LiveLog]) -> None:
        """Write the three checkpoints from ``logs`` (the partitions this directory holds); none
        while the directory is offline (Kafka checkpoints its live directories only)."""
        if self.offline:
            return
        items = sorted(logs, key=lambda lg: (lg.topic, lg.partition))
        recovery = {TopicPartition(lg.topic, lg.partition): lg.recovery_point for lg in items}
        starts = {
            TopicPartition(lg.topic, lg.partition): lg.log_start_offset
            for lg in items
            if lg.segment_base_offsets and lg.log_start_offset > lg.segment_base_offsets[0]
        }
        hws = {TopicPartition(lg.topic, lg.partition): lg.high_watermark for lg in items}
        for name, offsets in (
            (RECOVERY_POINT_CHECKPOINT, recovery),
            (LOG_START_OFFSET_CHECKPOINT, starts),
            (REPLICATION_OFFSET_CHECKPOINT, hws),
        ):
            self._write_checkpoint(name, encode_offset_checkpoint(offsets))
        self.recovery_points, self.log_start_offsets, self.high_watermarks = recovery, starts, hws

    def abandon(self) -> None:
        """Let the ``.lock`` go and nothing else: what a killed process leaves behind (for tests
        that simulate a crash in one process; a real broker calls ``close``)."""
        if self.lock is not None:
            self.lock.release()

    def close(self, logs: Iterable[LiveLog]) -> None:
        """Clean shutdown: close every log, write the checkpoints, then the clean marker. An
        offline directory only has its logs' descriptors closed: no checkpoint, no marker, so the
        next start recovers; a log that fails now raises its ``KafkaStorageError`` (after the
        other logs are closed)."""
        try:
            items = list(logs)
            failed: KafkaStorageError | None = None
            for lg in items:
                try:
                    lg.close()
                except KafkaStorageError as exc:
                    failed = failed or exc
            if failed is not None:
                raise failed
            if self.offline:
                log.error("%s is offline: its logs are recovered at the next start", self.path)
                return
            self.write_checkpoints(items)
            with contextlib.suppress(FileExistsError):
                self._write_checkpoint(CLEAN_SHUTDOWN_FILE, '{"version":0}')
        finally:
            self.abandon()  # the .lock goes last, whatever happened
