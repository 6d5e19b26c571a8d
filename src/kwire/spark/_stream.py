"""The streaming side of "kafka-log": `spark.readStream.format("kafka-log")` over a live data dir.

PySpark's `DataSourceStreamReader` (Spark 4.0+; `latestOffset(start, limit)` with read limits
and `SupportsTriggerAvailableNow` from Spark 4.2). An offset is Spark's Kafka source JSON,
`{"topic": {"0": next_offset}}`; a micro-batch reads [start, end) of every topic-partition with
the batch planner (spark/_plan.py: index files only) and the batch reader (spark/_read.py).

Where a micro-batch may end, per partition (`snapshot`): the high watermark from the
`replication-offset-checkpoint` beside the partition folders (Kafka writes it every
replica.high.watermark.checkpoint.interval.ms, 5 s; so does `kwire broker`). A data dir with that
file but without a line for a partition (a new partition before its first checkpoint) gives the
partition nothing yet. Without the file (an offline copy, a writer that keeps none), or with
`streamEnd=logEnd`, the end is the log end: the last segment is read from its last offset-index
entry on and only whole batches whose CRC verifies count, so a batch still being written is not
there yet. `streamEnd=auto` (the default) takes the log end for the partitions whose only replica
is the data dir's node, by the KRaft metadata log in the data dir (`__cluster_metadata-0`, read
with `kwire.log.ReplicaSetReader`, incrementally, once per planning) and the node id of its
`meta.properties`: Kafka's high watermark is the lowest log end over the ISR, so with one replica
it is the leader's log end once an append completes, and those are the same records without
waiting for the checkpoint. Every other partition, and every data dir without a metadata log (a
ZooKeeper-mode Kafka, a `LogWriter` copy), keeps the checkpoint's high watermark. The log start
is the first segment's base offset, or the `log-start-offset-checkpoint` entry when higher. Readers get `live` splits: bytes past their end offset, a torn tail included,
are never reported as corruption.

Spark's Kafka source rules: startingOffsets (earliest, latest: the default, a JSON naming every
subscribed partition), startingTimestamp / startingOffsetsByTimestamp (the first offset with a
timestamp at or after it, Kafka's offsetsForTimes; none: the end); partitions and topics that
appear later (subscribe, subscribePattern) are read from offset 0; maxOffsetsPerTrigger splits the
limit over partitions in proportion to what each has (KafkaMicroBatchStream.rateLimit);
minOffsetsPerTrigger and maxTriggerDelay skip triggers while fewer offsets are new, up to the delay
(KafkaMicroBatchStream.delayBatch); startingOffsetsByTimestampStrategy (error, the default, or
latest) decides a partition without a record at or after the starting timestamp.
failOnDataLoss (default true) fails a batch whose start was deleted by retention, naming the
partition and offsets; false skips to the log start with a warning. Trigger.AvailableNow
records the ends when the query starts (`prepareForTriggerAvailableNow`) and never goes past them.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import threading
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)

from kwire._lazy import lazy_dataclass
from kwire.errors import DecodeError, OffsetOutOfRangeError
from kwire.log import (
    META_PROPERTIES,
    OffsetIndex,
    PartitionDir,
    TimeIndex,
    TopicPartition,
    meta_properties_node_id,
    partitions_from_paths,
    read_offset_checkpoint,
)
from kwire.log.metadata import CLUSTER_METADATA_DIR, ReplicaSetReader
from kwire.records import read_batches
from kwire.spark._fs import join_uri, list_files, read_bytes, resolve, to_uri
from kwire.spark._options import EARLIEST, LATEST, ReadOptions, bound_for
from kwire.spark._plan import (
    SegmentSplit,
    SplitGroup,
    check_named_partitions,
    pack_splits,
    plan_splits,
)

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.fs as pafs
    from pyspark.sql.types import StructType

__all__ = ["KafkaLogStreamReader", "PartitionEnds", "log_end_offset", "snapshot"]

log = logging.getLogger("kwire.spark")

HIGH_WATERMARKS = "replication-offset-checkpoint"
LOG_START_OFFSETS = "log-start-offset-checkpoint"

TP = tuple[str, int]
Offsets = dict[str, dict[str, int]]


@lazy_dataclass(frozen=True)
class PartitionEnds:
    """What a micro-batch may read of one topic-partition: offsets [log_start, end)."""

    log_start: int
    end: int
    pdir: PartitionDir


def _parent(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[0] if "/" in path else ""


def _checkpoints(fs: pafs.FileSystem, files: dict[str, int], name: str) -> dict[str, Any]:
    """Per data dir: its checkpoint file ``name`` parsed (None when unreadable right now)."""
    out: dict[str, Any] = {}
    for path in files:
        if path.rsplit("/", 1)[-1] == name:
            try:
                out[_parent(path)] = read_offset_checkpoint(bytes(read_bytes(fs, path)).decode())
            except (DecodeError, UnicodeDecodeError, FileNotFoundError):
                out[_parent(path)] = None  # replaced while we read it: use the last snapshot
    return out


def log_end_offset(fs: pafs.FileSystem, pdir: PartitionDir) -> int:
    """The offset after the last whole, CRC-valid batch (Kafka's readNextOffset, from the last
    offset-index entry of the last segment on); a torn tail does not count."""
    seg = pdir.segments[-1]
    start = 0
    if seg.index:
        try:
            index = OffsetIndex(read_bytes(fs, seg.index), seg.base_offset)
        except FileNotFoundError:
            index = OffsetIndex(b"", seg.base_offset)
        if len(index):
            start = index.lookup(index.last_offset).position
    try:
        view = read_bytes(fs, seg.log, start)
    except FileNotFoundError:
        return seg.base_offset
    nxt = seg.base_offset
    try:
        for batch in read_batches(view, verify_crc=True, allow_truncated_tail=True):
            nxt = batch.last_offset + 1
    except DecodeError:
        pass  # zeros or a batch still being written: the log ends before it
    return nxt


class _MetadataCache:
    """A data dir's metadata log read so far (``ReplicaSetReader``, incremental) and its node id
    (``meta.properties``, re-read when its size changes), kept on the driver between batches."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.reader = ReplicaSetReader()
        self.meta: tuple[int, int | None] | None = None  # (size of meta.properties, node id)


_METADATA: dict[str, _MetadataCache] = {}
_METADATA_LOCK = threading.Lock()


def _cache(uri: str, data_dir: str) -> _MetadataCache:
    with _METADATA_LOCK:
        return _METADATA.setdefault(f"{uri}\n{data_dir}", _MetadataCache())


def _node_id(
    fs: pafs.FileSystem, files: dict[str, int], data_dir: str, cache: _MetadataCache
) -> int | None:
    path = f"{data_dir}/{META_PROPERTIES}" if data_dir else META_PROPERTIES
    if path not in files:
        return None
    if cache.meta is None or cache.meta[0] != files[path]:
        try:
            node = meta_properties_node_id(bytes(read_bytes(fs, path)).decode("utf-8", "replace"))
        except FileNotFoundError:
            return None
        cache.meta = (files[path], node)
    return cache.meta[1]


def single_replica_partitions(
    fs: pafs.FileSystem, uri: str, files: dict[str, int], data_dirs: set[str]
) -> dict[str, frozenset[TopicPartition]]:
    """Per data dir of ``data_dirs``: the partitions whose only replica is that dir's node, by
    the KRaft metadata log (``__cluster_metadata-0``) in the data dir, or, for a data dir without
    one, the one metadata log under ``uri`` when both name the same node (a broker with more than
    one log dir). A data dir whose node or metadata log is unknown gets nothing."""
    logs: dict[str, dict[str, int]] = {}
    for path, size in files.items():
        folder = _parent(path)
        if folder.rsplit("/", 1)[-1] == CLUSTER_METADATA_DIR:
            logs.setdefault(_parent(folder), {})[path] = size
    if not logs:
        return {}
    replicas: dict[str, tuple[int | None, dict[tuple[str, int], tuple[int, ...]]]] = {}
    for data_dir, log_files in logs.items():
        cache = _cache(uri, data_dir)
        with cache.lock:
            node = _node_id(fs, files, data_dir, cache)
            sets = cache.reader.update(log_files, lambda p, start: read_bytes(fs, p, start))
        replicas[data_dir] = (node, sets)
    out: dict[str, frozenset[TopicPartition]] = {}
    for data_dir in data_dirs:
        found = replicas.get(data_dir)
        if found is None and len(replicas) == 1:
            ((node, sets),) = replicas.values()
            cache = _cache(uri, data_dir)
            with cache.lock:
                mine = _node_id(fs, files, data_dir, cache)
            found = (node, sets) if node is not None and mine == node else None
        if found is None:
            continue
        node, sets = found
        out[data_dir] = frozenset(
            TopicPartition(*tp)
            for tp, ids in sets.items()
            if len(ids) == 1 and (node is None or ids[0] == node)
        )
    return out


def snapshot(
    uri: str, options: ReadOptions, previous: dict[TP, int] | None = None, *, ends: bool = True
) -> dict[TP, PartitionEnds]:
    """Every selected topic-partition of the data dir at ``uri`` with its log start and end
    (``ends=False``: the log starts only matter; the ends are those of ``highWatermark``)."""
    fs, root = resolve(uri)
    files = list_files(fs, root)
    watermarks = (
        _checkpoints(fs, files, HIGH_WATERMARKS)
        if options.stream_end in ("highWatermark", "auto")
        else {}
    )
    # auto: a partition whose only replica is this node has its high watermark at its log end
    local = (
        single_replica_partitions(fs, uri, files, set(watermarks))
        if ends and watermarks and options.stream_end == "auto"
        else {}
    )
    starts = _checkpoints(fs, files, LOG_START_OFFSETS)
    result: dict[TP, PartitionEnds] = {}
    for pdir in partitions_from_paths(sorted(files), files):
        tp = (pdir.topic, pdir.partition)
        if not pdir.segments or not options.wants(*tp):
            continue
        parent = _parent(pdir.path)
        key = TopicPartition(*tp)
        log_start = pdir.segments[0].base_offset
        checkpointed = starts.get(parent)
        if checkpointed and key in checkpointed:
            log_start = max(log_start, checkpointed[key])
        if parent in watermarks and key not in local.get(parent, ()):
            marks = watermarks[parent]
            if marks is None:
                end = (previous or {}).get(tp, log_start)
            else:
                end = marks.get(key, log_start)  # not checkpointed yet: nothing to read yet
        else:
            end = log_end_offset(fs, pdir)
        end = max(end, log_start)
        if tp not in result or end > result[tp].end:
            result[tp] = PartitionEnds(log_start, end, pdir)
    return result


def offsets_to_json(offsets: dict[TP, int]) -> Offsets:
    out: Offsets = {}
    for (topic, partition), offset in sorted(offsets.items()):
        out.setdefault(topic, {})[str(partition)] = offset
    return out


def offsets_from_json(doc: Offsets) -> dict[TP, int]:
    return {(t, int(p)): int(o) for t, parts in doc.items() for p, o in parts.items()}


def offset_for_timestamp(fs: pafs.FileSystem, pdir: PartitionDir, ts: int, end: int) -> int | None:
    """Kafka's offsetsForTimes: the first offset below ``end`` whose record has a timestamp >= ts."""
    import pyarrow.compute as pc

    from kwire.records._columnar import decode_columnar

    for seg in pdir.segments:
        if seg.base_offset >= end:
            break
        tindex = (
            TimeIndex(read_bytes(fs, seg.timeindex), seg.base_offset) if seg.timeindex else None
        )
        largest = tindex.max_timestamp if tindex is not None and len(tindex) else None
        if seg is not pdir.segments[-1] and largest is not None and largest < ts:
            continue
        start = 0
        if tindex is not None and len(tindex) and seg.index:
            index = OffsetIndex(read_bytes(fs, seg.index), seg.base_offset)
            start = index.lookup(tindex.lookup(ts).offset).position
        result = decode_columnar(
            read_bytes(fs, seg.log, start),
            columns=("offset", "timestamp", "isControl"),
            allow_truncated_tail=True,
            on_corrupt="skip",
        )
        table = result.batch
        millis = pc.divide(pc.cast(table.column("timestamp"), "int64"), 1000)
        hit = pc.and_(
            pc.and_(pc.greater_equal(millis, ts), pc.less(table.column("offset"), end)),
            pc.invert(table.column("isControl")),
        )
        found = pc.indices_nonzero(pc.fill_null(hit, False))
        if len(found):
            return int(table.column("offset")[found[0].as_py()].as_py())
    return None


def rate_limit(start: dict[TP, int], end: dict[TP, int], limit: int) -> dict[TP, int]:
    """Spark's KafkaMicroBatchStream.rateLimit: ``limit`` offsets shared in proportion to what
    each partition has (at least one offset for a partition that has any)."""
    sizes = {tp: end[tp] - start.get(tp, 0) for tp in end if end[tp] > start.get(tp, 0)}
    total = sum(sizes.values())
    if total <= limit:
        return dict(end)
    out = dict(end)
    for tp, size in sizes.items():
        prorate = limit * (size / total)
        step = math.ceil(prorate) if prorate < 1 else math.floor(prorate)
        out[tp] = min(end[tp], start.get(tp, 0) + step)
    return out


def lost_before_log_start(
    options: ReadOptions, tp: tuple[str, int], wanted: int, log_start: int
) -> None:
    """A stream's offsets ``[wanted, log_start)`` are gone: fail (failOnDataLoss, the default,
    as Spark's Kafka source) naming them, or warn and go on from the log start. kafka-log's
    and kafka-wire's stream readers both."""
    message = (
        f"{tp[0]}-{tp[1]}: offsets {wanted} to {log_start - 1} are not in the log any "
        f"more (it starts at {log_start}); retention or DeleteRecords removed them, or the "
        "topic was recreated. Some data may have been lost. Set the source option "
        '"failOnDataLoss" to "false" to skip them with a warning.'
    )
    if options.fail_on_data_loss:
        raise OffsetOutOfRangeError(message=message)
    log.warning("kwire: skipping lost data: %s", message)


class TriggerDelay:
    """minOffsetsPerTrigger / maxTriggerDelay, as ``KafkaMicroBatchStream.delayBatch``: skip the
    trigger while fewer offsets than the minimum are new, until maxTriggerDelay has passed since
    the last batch that ran (not under Trigger.AvailableNow, which must finish). One per stream
    reader, kafka-log's and kafka-wire's alike."""

    def __init__(self, options: ReadOptions) -> None:
        self.minimum = options.min_offsets_per_trigger
        self.max_delay_ms = options.max_trigger_delay_ms
        self.last_trigger: float | None = None  # monotonic time of the last batch that ran

    def skip(self, begin: dict[TP, int], end: dict[TP, int], *, available_now: bool) -> bool:
        if self.minimum is None or available_now:
            return False
        now = time.monotonic()
        if self.last_trigger is None or (now - self.last_trigger) * 1000 >= self.max_delay_ms:
            self.last_trigger = now
            return False
        new = sum(max(0, e - begin.get(tp, 0)) for tp, e in end.items())
        if new < self.minimum:
            return True
        self.last_trigger = now
        return False


class KafkaLogStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):  # type: ignore[misc]
    """Micro-batches over a live Kafka data dir (see the module comment)."""

    def __init__(self, path: str, options: ReadOptions, schema: StructType) -> None:
        self.uri = to_uri(path)
        self.options = options
        self.schema = schema
        self._target_ends: dict[TP, int] | None = None  # Trigger.AvailableNow
        self._last_ends: dict[TP, int] = {}
        self._arrow: pa.Schema | None = None
        self._trigger_delay = TriggerDelay(options)

    # ---- driver ------------------------------------------------------------------------------
    def _snapshot(self) -> dict[TP, PartitionEnds]:
        snap = snapshot(self.uri, self.options, self._last_ends)
        self._last_ends = {tp: p.end for tp, p in snap.items()}
        return snap

    def initialOffset(self) -> Offsets:
        snap = self._snapshot()
        opts = self.options
        check_named_partitions(opts, list(snap))
        fs, _ = resolve(self.uri)
        start: dict[TP, int] = {}
        for (topic, partition), ends in snap.items():
            ts = (
                bound_for(opts.starting_timestamps, topic, partition, EARLIEST)
                if opts.starting_timestamps is not None
                else -1
            )
            if ts >= 0:
                found = offset_for_timestamp(fs, ends.pdir, ts, ends.end)
                if found is None and opts.timestamp_strategy == "error":
                    raise OffsetOutOfRangeError(
                        message=f"No offset matched from request of topic-partition {topic}-"
                        f"{partition} and timestamp {ts}. Set the option "
                        '"startingOffsetsByTimestampStrategy" to "latest" to start at its end.'
                    )
                start[(topic, partition)] = ends.end if found is None else found
                continue
            wanted = bound_for(opts.starting_offsets, topic, partition, LATEST)
            if wanted == EARLIEST:
                wanted = ends.log_start
            elif wanted == LATEST:
                wanted = ends.end
            elif wanted < ends.log_start:
                self._data_loss(topic, partition, wanted, ends.log_start)
                wanted = ends.log_start
            start[(topic, partition)] = wanted
        log.info("kwire: streaming %s from %s", self.uri, offsets_to_json(start))
        return offsets_to_json(start)

    def latestOffset(self, start: Offsets, limit: ReadLimit) -> Offsets:
        begin = offsets_from_json(start)
        snap = self._snapshot()
        end: dict[TP, int] = {}
        for tp in set(begin) | set(snap):
            s = begin.get(tp, 0)  # a partition that appeared later is read from offset 0
            e = snap[tp].end if tp in snap else s
            if self._target_ends is not None:
                e = min(e, self._target_ends.get(tp, s))
            end[tp] = max(s, e)
        if isinstance(limit, ReadMaxRows):
            end = rate_limit(begin, end, limit.max_rows)
        if self._trigger_delay.skip(begin, end, available_now=self._target_ends is not None):
            return offsets_to_json({tp: begin.get(tp, 0) for tp in end})
        return offsets_to_json(end)

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.options.max_offsets_per_trigger is not None:
            return ReadMaxRows(self.options.max_offsets_per_trigger)
        return ReadAllAvailable()

    def reportLatestOffset(self) -> Offsets:
        return offsets_to_json({tp: p.end for tp, p in self._snapshot().items()})

    def prepareForTriggerAvailableNow(self) -> None:
        self._target_ends = {tp: p.end for tp, p in self._snapshot().items()}
        log.info("kwire: Trigger.AvailableNow reads up to %s", offsets_to_json(self._target_ends))

    def _data_loss(self, topic: str, partition: int, wanted: int, log_start: int) -> None:
        lost_before_log_start(self.options, (topic, partition), wanted, log_start)

    def partitions(self, start: Offsets, end: Offsets) -> list[SegmentSplit | SplitGroup]:
        begin, stop = offsets_from_json(start), offsets_from_json(end)
        fs, root = resolve(self.uri)
        files = list_files(fs, root)
        log_starts = {
            tp: p.log_start
            for tp, p in snapshot(self.uri, self.options, self._last_ends, ends=False).items()
        }
        ranges: dict[TP, tuple[int, int]] = {}
        for tp, e in stop.items():
            s = begin.get(tp, 0)
            if e <= s:
                continue
            first = log_starts.get(tp, s)
            if s < first:
                self._data_loss(tp[0], tp[1], s, min(first, e))
                s = first
            if s < e:
                ranges[tp] = (s, e)
        if not ranges:
            return []
        opts = dataclasses.replace(
            self.options,
            starting_offsets={tp: r[0] for tp, r in ranges.items()},
            ending_offsets={tp: r[1] for tp, r in ranges.items()},
            starting_timestamps=None,
            ending_timestamps=None,
            topics=None,
            topic_pattern=None,
            assign=frozenset(ranges),
            named_partitions=(),
            fail_on_data_loss=self.options.fail_on_data_loss,
        )

        def read_file(path: str) -> memoryview:
            return read_bytes(fs, path)

        def read_tail(path: str, start: int) -> memoryview:
            return read_bytes(fs, path, start)

        splits = plan_splits(
            files, opts, read_file, lambda p: join_uri(self.uri, p), read_tail=read_tail
        )
        live = [dataclasses.replace(s, live=True) for s in splits]
        return pack_splits(live, self.options.max_split_bytes)

    def commit(self, end: Offsets) -> None:
        """Nothing to do: the log is not ours to trim."""

    # ---- executors ---------------------------------------------------------------------------
    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        from kwire.spark._read import read_split

        if isinstance(partition, SegmentSplit):
            splits: tuple[SegmentSplit, ...] = (partition,)
        elif isinstance(partition, SplitGroup):
            splits = partition.splits
        else:
            return
        if self._arrow is None:
            from pyspark.sql.pandas.types import to_arrow_schema

            self._arrow = to_arrow_schema(self.schema, timezone="UTC")
        for split in splits:
            try:
                yield from read_split(split, self.options, self._arrow)
            except FileNotFoundError:
                message = (
                    f"{split.topic}-{split.partition}: segment {split.name} was deleted before "
                    f"it was read (offsets from {split.start_offset or split.base_offset} to "
                    f"{split.end_offset}); retention removed it. Some data may have been lost. "
                    'Set the source option "failOnDataLoss" to "false" to skip it with a warning.'
                )
                if self.options.fail_on_data_loss:
                    raise OffsetOutOfRangeError(message=message) from None
                log.warning("kwire: skipping lost data: %s", message)
