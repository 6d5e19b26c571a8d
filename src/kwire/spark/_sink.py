"""The "kafka-log" sink: a DataFrame with Spark's Kafka sink columns becomes Kafka log directories.

Input columns (as Spark's Kafka sink): `value` (binary or string, required), `key`, `headers`
(array<struct<key string, value binary>>), `topic` (or the `topic` option), `partition` (or
Kafka's default partitioner, murmur2 of the key modulo the `numPartitions` option), `timestamp`
(or the time of writing). Options: magic (2; 0 and 1 for legacy readers), compression (codec),
recordsPerBatch, segmentBytes, indexIntervalBytes.

Commit protocol. Offsets are per topic-partition and must be dense and increasing, but a Spark
task does not know how many records other tasks hold for the same topic-partition. So each task
writes whatever topic-partitions it sees into its own staging folder
(`<path>/_kwire_staging/<job>/<task>-<attempt>/<topic>-<partition>/`), with offsets from 0 (from
the existing log end offset when appending), as
complete segments (kwire.log's LogWriter: .log, .index, .timeindex, written under temporary
names), and returns the list as its commit message. On the driver, `commit` takes, per
topic-partition, the chunks in task order: a single chunk (the normal case after
`repartition("topic", "partition")`, which `write_kafka_log` does) is renamed into place without
reading a byte; several chunks are merged by re-appending their batches with offsets shifted
(kwire.records' broker append path patches offsets in place), which reads those chunks on the
driver, so it is the slow path and logs a warning. `abort` deletes the staging folder.
mode("overwrite") replaces every topic-partition folder under the path; mode("append") adds to
existing topic-partitions after their log end offset (found from the last segment's tail, as
Kafka's readNextOffset) and creates the others.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import tempfile
import time
import uuid
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage

from kwire._lazy import lazy_dataclass
from kwire.client import default_partition
from kwire.errors import KwireError
from kwire.log._layout import parse_partition_dir
from kwire.records import Batch, BatchBuilder, Compression, read_batches
from kwire.spark._fs import STAGING_DIR, list_files, resolve
from kwire.spark._options import WriteOptions

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame
    from pyspark.sql.types import StructType

__all__ = ["KafkaLogWriter", "TaskCommit", "write_kafka_log"]

log = logging.getLogger("kwire.spark")

STAGING = STAGING_DIR
_CODECS = {
    "none": Compression.NONE,
    "gzip": Compression.GZIP,
    "snappy": Compression.SNAPPY,
    "lz4": Compression.LZ4,
    "zstd": Compression.ZSTD,
}


@lazy_dataclass(frozen=True)
class Chunk:
    """One topic-partition as one task wrote it into staging."""

    topic: str
    partition: int
    path: str  # staging folder `<topic>-<partition>` (URI)
    records: int
    next_offset: int
    bytes: int


@lazy_dataclass(frozen=True)
class TaskCommit(WriterCommitMessage):  # type: ignore[misc]
    """What a write task sends the driver: its attempt and the chunks it wrote."""

    task: int
    attempt: int
    chunks: tuple[Chunk, ...]


class _PartitionSink:
    """One topic-partition of one task: a builder for the open batch, a LogWriter for the rest."""

    def __init__(
        self, root: str, topic: str, partition: int, options: WriteOptions, start_offset: int
    ) -> None:
        from kwire.log import LogWriter

        self.options = options
        self.writer = LogWriter(
            root,
            topic,
            partition,
            segment_bytes=options.segment_bytes,
            index_interval_bytes=options.index_interval_bytes,
            start_offset=start_offset,
        )
        self.writer.__enter__()
        self.codec = _CODECS[options.compression]
        self.builder = self._builder()
        self.records = 0
        self.bytes = 0

    def _builder(self) -> BatchBuilder:
        return BatchBuilder(self.options.magic, self.codec, base_offset=self.writer.next_offset)

    def append(self, timestamp: int, key: bytes | None, value: bytes | None, headers: Any) -> None:
        self.builder.append(timestamp=timestamp, key=key, value=value, headers=headers)
        self.records += 1
        if len(self.builder) >= self.options.records_per_batch:
            self.flush()

    def flush(self) -> None:
        if len(self.builder):
            data = self.builder.build()
            self.writer.append(data)
            self.bytes += len(data)
            self.builder = self._builder()

    def close(self) -> int:
        self.flush()
        self.writer.close()
        return int(self.writer.next_offset)


def _move_into(fs: Any, src: str, final: str) -> None:
    """Move a written topic-partition folder to ``final``; when ``final`` exists (append), move
    its segment files in (their names, base offsets, follow the existing ones) and keep the
    existing leader-epoch-checkpoint."""
    import pyarrow.fs as pafs

    if fs.get_file_info(final).type == pafs.FileType.NotFound:
        fs.move(src, final)
        return
    for info in fs.get_file_info(pafs.FileSelector(src)):
        name = info.path.rstrip("/").rsplit("/", 1)[-1]
        target = f"{final}/{name}"
        if fs.get_file_info(target).type != pafs.FileType.NotFound:
            continue  # leader-epoch-checkpoint: the existing one stays
        fs.move(info.path, target)
    fs.delete_dir(src)


def _as_bytes(value: Any) -> bytes | None:
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode()
    return bytes(value)


SinkRow = tuple[
    str | None, int | None, bytes | None, bytes | None, list[tuple[str, bytes | None]], int
]


def sink_rows(batch: pa.RecordBatch, topic_option: str | None, now_ms: int) -> Iterator[SinkRow]:
    """Spark's Kafka sink columns of each row: (topic, partition, key, value, headers,
    timestamp ms). The ``topic`` option wins over the column, as in Spark; a missing partition
    is None (the caller partitions), a missing timestamp ``now_ms``."""
    import pyarrow as pa
    import pyarrow.compute as pc

    n = batch.num_rows
    cols = {name: batch.column(name) for name in batch.schema.names}
    values = cols["value"].to_pylist()
    keys = cols["key"].to_pylist() if "key" in cols else [None] * n
    if topic_option is not None or "topic" not in cols:
        topics: list[str | None] = [topic_option] * n
    else:
        topics = cols["topic"].to_pylist()
    parts = cols["partition"].to_pylist() if "partition" in cols else [None] * n
    if "timestamp" in cols:
        ts = pc.cast(cols["timestamp"], pa.timestamp("ms", tz="UTC"), safe=False)
        stamps = pc.cast(ts, pa.int64()).to_pylist()
    else:
        stamps = [now_ms] * n
    headers = cols["headers"].to_pylist() if "headers" in cols else [None] * n
    for i in range(n):
        hdrs = headers[i]
        yield (
            topics[i],
            parts[i],
            _as_bytes(keys[i]),
            _as_bytes(values[i]),
            [(h["key"], _as_bytes(h["value"])) for h in hdrs] if hdrs else [],
            now_ms if stamps[i] is None else stamps[i],
        )


def _shifted(batch: Batch, shift: int, now_ms: int) -> bytes | bytearray | memoryview:
    """The batch with every offset moved by ``shift`` (no record is rebuilt when avoidable).

    The offset in front of a v2 batch, a magic 1 message (inner offsets are relative: KIP-31) and
    an uncompressed magic 0 message lies outside its CRC, so it is patched; a compressed magic 0
    message carries absolute inner offsets and goes through the broker append path.
    """
    if shift == 0:
        return batch.view
    if batch.magic == 0 and batch.compression != Compression.NONE:
        from kwire.records._append import TopicConfig, validate_and_assign

        result = validate_and_assign(
            batch.view,
            next_offset=batch.base_offset + shift,
            now_ms=now_ms,
            config=TopicConfig(message_format=0),
        )
        return result.records
    out = bytearray(batch.view)
    out[0:8] = (int.from_bytes(out[0:8], "big", signed=True) + shift).to_bytes(
        8, "big", signed=True
    )
    return out


class KafkaLogWriter(DataSourceArrowWriter):  # type: ignore[misc]
    """Writes Kafka log directories; see the module comment for the commit protocol."""

    def __init__(
        self, uri: str, options: WriteOptions, schema: StructType, overwrite: bool
    ) -> None:
        names = set(schema.fieldNames())
        if "value" not in names:
            raise KwireError("kafka-log sink: the DataFrame needs a `value` column")
        if "topic" not in names and options.topic is None:
            raise KwireError('kafka-log sink: give a `topic` column or .option("topic", ...)')
        unknown = names - {"key", "value", "headers", "topic", "partition", "timestamp"}
        if unknown:
            raise KwireError(
                f"kafka-log sink: unexpected columns {sorted(unknown)} (Spark's Kafka sink "
                "columns are key, value, headers, topic, partition, timestamp)"
            )
        self.uri = uri
        self.options = options
        self.names = names
        self.overwrite = overwrite
        self.job = uuid.uuid4().hex[:12]
        # append: new records go after each existing topic-partition's log end offset
        self.log_end: dict[tuple[str, int], int] = {} if overwrite else self._log_end_offsets()

    # ---- driver helpers ---------------------------------------------------------------------
    def _existing_partitions(self) -> list[str]:
        import pyarrow.fs as pafs

        fs, root = resolve(self.uri)
        try:
            infos = fs.get_file_info(pafs.FileSelector(root, allow_not_found=True))
        except (FileNotFoundError, NotADirectoryError):
            return []
        return sorted(
            i.path
            for i in infos
            if i.type == pafs.FileType.Directory
            and parse_partition_dir(i.path.rstrip("/").rsplit("/", 1)[-1]) is not None
        )

    def _log_end_offsets(self) -> dict[tuple[str, int], int]:
        """Each existing topic-partition's next offset: from its last segment, read from the last
        offset-index position on (Kafka's readNextOffset), so only its tail is read."""
        from kwire.log import OffsetIndex, partitions_from_paths, scan_batches
        from kwire.spark._fs import read_bytes

        fs, root = resolve(self.uri)
        try:
            files = list_files(fs, root)
        except KwireError:
            return {}
        ends: dict[tuple[str, int], int] = {}
        for pdir in partitions_from_paths(sorted(files), files):
            if not pdir.segments:
                continue
            seg = pdir.segments[-1]
            start = 0
            if seg.index:
                index = OffsetIndex(read_bytes(fs, seg.index), seg.base_offset)
                start = index.lookup(index.last_offset).position
            nxt = seg.base_offset
            for batch in scan_batches(read_bytes(fs, seg.log, start), base_position=start):
                nxt = batch.last_offset + 1
            ends[(pdir.topic, pdir.partition)] = max(nxt, ends.get((pdir.topic, pdir.partition), 0))
        return ends

    def _staging(self) -> str:
        return f"{self.uri.rstrip('/')}/{STAGING}/{self.job}"

    # ---- executors ----------------------------------------------------------------------------
    def write(self, iterator: Iterator[pa.RecordBatch]) -> TaskCommit:
        from pyspark import TaskContext

        ctx = TaskContext.get()
        task = ctx.partitionId() if ctx is not None else 0
        attempt = ctx.attemptNumber() if ctx is not None else 0
        target = f"{self._staging()}/{task:05d}-{attempt}"
        local = "://" not in target
        root = target if local else tempfile.mkdtemp(prefix="kwire-sink-")
        opts = self.options
        sinks: dict[tuple[str, int], _PartitionSink] = {}
        now = int(time.time() * 1000)
        counter = 0
        try:
            for batch in iterator:
                for topic, part, key, value, hdrs, stamp in sink_rows(batch, opts.topic, now):
                    if topic is None:
                        raise KwireError("kafka-log sink: a row has no topic (null `topic`)")
                    if part is None:
                        part = default_partition(key, opts.num_partitions, counter)
                        counter += 1
                    sink = sinks.get((topic, part))
                    if sink is None:
                        sink = sinks[(topic, part)] = _PartitionSink(
                            root, topic, part, opts, self.log_end.get((topic, part), 0)
                        )
                    sink.append(stamp, key, value, hdrs)
            chunks = []
            for (topic, part), sink in sorted(sinks.items()):
                next_offset = sink.close()
                chunks.append(
                    Chunk(
                        topic,
                        part,
                        f"{target}/{topic}-{part}",
                        sink.records,
                        next_offset,
                        sink.bytes,
                    )
                )
            if not local and sinks:
                import pyarrow.fs as pafs

                fs, path = resolve(target)
                pafs.copy_files(root, path, destination_filesystem=fs)
        finally:
            if not local:
                shutil.rmtree(root, ignore_errors=True)
        return TaskCommit(task, attempt, tuple(chunks))

    # ---- driver: commit / abort ---------------------------------------------------------------
    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        fs, root = resolve(self.uri)
        by_tp: dict[tuple[str, int], list[tuple[int, Chunk]]] = {}
        for message in messages:
            if not isinstance(message, TaskCommit):
                continue
            for chunk in message.chunks:
                by_tp.setdefault((chunk.topic, chunk.partition), []).append((message.task, chunk))
        if self.overwrite:
            for path in self._existing_partitions():
                fs.delete_dir(path)
        for (topic, part), chunks in sorted(by_tp.items()):
            chunks.sort(key=lambda tc: tc[0])
            final = f"{root.rstrip('/')}/{topic}-{part}"
            if len(chunks) == 1:
                _, src_path = resolve(chunks[0][1].path)
                _move_into(fs, src_path, final)
            else:
                log.warning(
                    "kwire: %s-%d came from %d Spark tasks; merging them on the driver "
                    "(repartition by topic and partition, or use write_kafka_log, to avoid this)",
                    topic,
                    part,
                    len(chunks),
                )
                self._merge(topic, part, [c for _, c in chunks], final)
        self._cleanup()

    def _merge(self, topic: str, part: int, chunks: list[Chunk], final: str) -> None:
        from kwire.log import LogWriter

        fs, _ = resolve(self.uri)
        now = int(time.time() * 1000)
        out_root = tempfile.mkdtemp(prefix="kwire-merge-")
        with LogWriter(
            out_root,
            topic,
            part,
            segment_bytes=self.options.segment_bytes,
            index_interval_bytes=self.options.index_interval_bytes,
            start_offset=self.log_end.get((topic, part), 0),
        ) as writer:
            for chunk in chunks:
                _, chunk_path = resolve(chunk.path)
                logs = sorted(
                    p for p in list_files(fs, chunk_path, staging=True) if p.endswith(".log")
                )
                for log_path in logs:
                    with fs.open_input_file(log_path) as f:
                        data = f.read()
                    if not data:
                        continue
                    for batch in read_batches(data):
                        writer.append(_shifted(batch, writer.next_offset - batch.base_offset, now))
        import pyarrow.fs as pafs

        merged = f"{out_root}/{topic}-{part}"
        if "://" in self.uri:
            staged = f"{self._staging()}/merged/{topic}-{part}"
            _, staged_path = resolve(staged)
            pafs.copy_files(merged, staged_path, destination_filesystem=fs)
            _move_into(fs, staged_path, final)
        else:
            _move_into(fs, merged, final)
        shutil.rmtree(out_root, ignore_errors=True)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        self._cleanup()

    def _cleanup(self) -> None:
        import pyarrow.fs as pafs

        fs, staging = resolve(self._staging())
        with contextlib.suppress(OSError):
            fs.delete_dir(staging)
        parent = staging.rsplit("/", 1)[0]
        with contextlib.suppress(OSError):
            if not fs.get_file_info(pafs.FileSelector(parent)):
                fs.delete_dir(parent)


def write_kafka_log(df: DataFrame, path: str, *, mode: str = "overwrite", **options: str) -> None:
    """Write ``df`` (Spark's Kafka sink columns) as Kafka log directories at ``path``.

    Rows are repartitioned by (topic, partition) first, keeping their order within each
    topic-partition, so every topic-partition is written by exactly one task and the commit only
    renames folders. ``options`` are the sink's (``compression="zstd"``, ``magic="1"``, ...).
    """
    from pyspark.sql import functions as F

    order = "__kwire_order"
    keys = [c for c in ("topic", "partition") if c in df.columns]
    ordered = df.withColumn(order, F.monotonically_increasing_id())
    if keys:
        ordered = ordered.repartition(*keys).sortWithinPartitions(*keys, order)
    writer = ordered.drop(order).write.format("kafka-log").mode(mode)
    for key, value in options.items():
        writer = writer.option(key, str(value))
    writer.save(path)
