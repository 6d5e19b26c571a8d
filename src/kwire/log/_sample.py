"""A realistic Kafka log directory, generated: what `kwire sample`, `make run`, the Spark tests and
the benchmarks read.

Approach: records come from kwire.records' builders and go to disk through kwire.log's
LogWriter (segments roll at `segment_bytes`, with .index/.timeindex/.txnindex written as Kafka
does). A seeded random generator makes the content deterministic for a given seed and size.
Topics, chosen to cover what real logs hold:
  orders-0..2          magic 2, every codec (rotating per batch), keys, JSON values, headers on
                       most records, some null keys, an idempotent producer on partition 0
  clicks-legacy-0      a format upgrade history: magic 0, then magic 1 (one stretch with
                       LogAppendTime), then magic 2; every codec each format allows
  payments-0..1        transactions from three interleaved producers: committed and aborted,
                       COMMIT/ABORT control batches, aborted ones in the .txnindex
  users-compacted-0    a compacted topic: offset holes, tombstones (null values), batches whose
                       first records were cleaned away
`SampleSummary` says what was written, so a reader can prove it read everything back.
"""

from __future__ import annotations

import json
import random
from dataclasses import field
from pathlib import Path

from kwire._lazy import lazy_dataclass
from kwire.log._datadir import CLEANER_OFFSET_CHECKPOINT, encode_offset_checkpoint
from kwire.log._layout import TopicPartition
from kwire.log._writer import LogWriter
from kwire.records import BatchBuilder, Compression, build_end_txn_marker

__all__ = ["PartitionSummary", "SampleSummary", "write_sample"]

BASE_TIME_MS = 1_700_000_000_000
MIN_SEGMENT_BYTES = 16 * 1024
_V2_CODECS = (
    Compression.NONE,
    Compression.GZIP,
    Compression.SNAPPY,
    Compression.LZ4,
    Compression.ZSTD,
)
_LEGACY_CODECS = _V2_CODECS[:4]


@lazy_dataclass
class PartitionSummary:
    """What was written to one topic-partition."""

    records: int = 0  # data records (control records not included)
    aborted: int = 0  # data records in aborted transactions (included in `records`)
    control: int = 0  # control records (transaction markers)
    batches: int = 0
    bytes: int = 0
    segments: int = 0
    magics: set[int] = field(default_factory=set)
    codecs: set[str] = field(default_factory=set)


@lazy_dataclass
class SampleSummary:
    """What ``write_sample`` wrote, per ``topic-partition`` and in total."""

    path: str
    partitions: dict[str, PartitionSummary] = field(default_factory=dict)

    @property
    def records(self) -> int:
        return sum(p.records for p in self.partitions.values())

    @property
    def committed_records(self) -> int:
        """Records a read_committed consumer returns."""
        return sum(p.records - p.aborted for p in self.partitions.values())

    @property
    def control_records(self) -> int:
        return sum(p.control for p in self.partitions.values())

    @property
    def bytes(self) -> int:
        return sum(p.bytes for p in self.partitions.values())

    @property
    def segments(self) -> int:
        return sum(p.segments for p in self.partitions.values())


_OPEN: list[_Partition] = []


class _Partition:
    """A LogWriter plus the bookkeeping of what went into it."""

    def __init__(
        self, root: Path, topic: str, partition: int, summary: SampleSummary, segment_bytes: int
    ) -> None:
        self.writer = LogWriter(
            str(root),
            topic,
            partition,
            segment_bytes=segment_bytes,
            index_interval_bytes=4096,
            fsync=False,
        )
        self.writer.__enter__()
        _OPEN.append(self)  # once there is a writer to close (LogWriter refuses a used directory)
        self.info = summary.partitions.setdefault(f"{topic}-{partition}", PartitionSummary())

    @property
    def next_offset(self) -> int:
        return int(self.writer.next_offset)

    def append(self, builder: BatchBuilder, *, aborted: bool = False) -> None:
        data = builder.build()
        self.writer.append(data)
        info = self.info
        info.records += len(builder)
        info.aborted += len(builder) if aborted else 0
        info.batches += 1
        info.bytes += len(data)
        info.magics.add(builder.magic)
        info.codecs.add(builder.compression.name.lower())

    def append_marker(self, data: bytes) -> None:
        self.writer.append(data)
        self.info.control += 1
        self.info.batches += 1
        self.info.bytes += len(data)

    def close(self) -> None:
        if self in _OPEN:
            _OPEN.remove(self)
        self.writer.close()
        self.info.segments = len(self.writer.segments_written)


def _value(rng: random.Random, n: int, size: int) -> bytes:
    doc = {
        "id": n,
        "customer": f"c-{rng.randrange(10_000):05d}",
        "amount": round(rng.uniform(1, 500), 2),
        "items": rng.randrange(1, 9),
        "note": "x" * rng.randrange(0, size),
    }
    return json.dumps(doc, separators=(",", ":")).encode()


def _orders(root: Path, summary: SampleSummary, rng: random.Random, n: int, seg: int) -> None:
    for partition in range(3):
        part = _Partition(root, "orders", partition, summary, seg)
        ts = BASE_TIME_MS + partition
        written = 0
        batch_no = 0
        idempotent = partition == 0
        sequence = 0
        while written < n:
            count = min(n - written, rng.randrange(1, 60))
            codec = _V2_CODECS[batch_no % len(_V2_CODECS)]
            builder = BatchBuilder(
                2,
                codec,
                base_offset=part.next_offset,
                producer_id=1000 if idempotent else -1,
                producer_epoch=0 if idempotent else -1,
                base_sequence=sequence if idempotent else -1,
                partition_leader_epoch=batch_no // 40,
            )
            for _ in range(count):
                ts += rng.randrange(0, 40)
                record_ts = ts - rng.randrange(0, 500) if rng.random() < 0.05 else ts
                key = None if rng.random() < 0.1 else f"order-{rng.randrange(5000)}".encode()
                headers: list[tuple[str, bytes | None]] = []
                if rng.random() < 0.8:
                    headers.append(("trace-id", rng.randbytes(8).hex().encode()))
                    headers.append(("source", None if rng.random() < 0.2 else b"web"))
                builder.append(
                    timestamp=record_ts,
                    key=key,
                    value=_value(rng, written, 200),
                    headers=headers,
                )
                written += 1
            sequence += count
            part.append(builder)
            batch_no += 1
        part.close()


def _legacy(root: Path, summary: SampleSummary, rng: random.Random, n: int, seg: int) -> None:
    part = _Partition(root, "clicks-legacy", 0, summary, seg)
    ts = BASE_TIME_MS
    written = 0
    batch_no = 0
    while written < n:
        phase = 3 * written // n  # magic 0, then 1, then 2: a format upgrade history
        magic = phase
        codecs = _V2_CODECS if magic == 2 else _LEGACY_CODECS
        codec = codecs[batch_no % len(codecs)]
        log_append = magic == 1 and (batch_no // 5) % 2 == 1
        count = min(n - written, rng.randrange(1, 30))
        builder = BatchBuilder(
            magic,
            codec,
            base_offset=part.next_offset,
            timestamp_type=1 if log_append else 0,
            log_append_time=ts + 1000 if log_append else None,
        )
        for _ in range(count):
            ts += rng.randrange(1, 30)
            builder.append(
                timestamp=-1 if magic == 0 else ts,
                key=f"user-{rng.randrange(300)}".encode() if rng.random() < 0.7 else None,
                value=f"/page/{rng.randrange(100)}?ref={rng.randrange(10)}".encode(),
            )
            written += 1
        part.append(builder)
        batch_no += 1
    part.close()


def _payments(root: Path, summary: SampleSummary, rng: random.Random, n: int, seg: int) -> None:
    for partition in range(2):
        part = _Partition(root, "payments", partition, summary, seg)
        ts = BASE_TIME_MS
        written = 0
        # producer id -> (epoch, first offset of its open transaction, batches left, abort?)
        open_txns: dict[int, list[int]] = {}
        producers = [5000 + 10 * partition + i for i in range(3)]
        sequences = dict.fromkeys(producers, 0)
        while written < n or open_txns:
            pid = rng.choice(producers)
            ts += rng.randrange(1, 20)
            if pid not in open_txns:
                if written >= n:
                    pid = next(iter(open_txns))
                else:
                    abort = 1 if rng.random() < 0.3 else 0
                    open_txns[pid] = [part.next_offset, rng.randrange(1, 4), abort]
            state = open_txns[pid]
            if state[1] > 0 and written < n:
                count = min(n - written, rng.randrange(1, 20))
                builder = BatchBuilder(
                    2,
                    _V2_CODECS[rng.randrange(len(_V2_CODECS))],
                    base_offset=part.next_offset,
                    producer_id=pid,
                    producer_epoch=1,
                    base_sequence=sequences[pid],
                    is_transactional=True,
                )
                for _ in range(count):
                    builder.append(
                        timestamp=ts,
                        key=f"acct-{rng.randrange(100)}".encode(),
                        value=_value(rng, written, 50),
                        headers=[("txn", str(pid).encode())],
                    )
                    written += 1
                sequences[pid] += count
                part.append(builder, aborted=bool(state[2]))
                state[1] -= 1
                continue
            # end the transaction with a marker
            marker_offset = part.next_offset
            part.append_marker(
                build_end_txn_marker(
                    not state[2],
                    coordinator_epoch=0,
                    producer_id=pid,
                    producer_epoch=1,
                    offset=marker_offset,
                    timestamp=ts,
                )
            )
            first_offset = state[0]
            del open_txns[pid]
            if state[2]:
                others = [s[0] for s in open_txns.values()]
                lso = min(others) if others else marker_offset + 1
                part.writer.append_aborted_txn(pid, first_offset, marker_offset, lso)
        part.close()


def _compacted(root: Path, summary: SampleSummary, rng: random.Random, n: int, seg: int) -> None:
    part = _Partition(root, "users-compacted", 0, summary, seg)
    ts = BASE_TIME_MS
    written = 0
    offset = 0
    batch_no = 0
    while written < n:
        count = min(n - written, rng.randrange(1, 25))
        base = offset
        builder = BatchBuilder(2, _V2_CODECS[batch_no % 5], base_offset=base)
        offset += rng.randrange(0, 3)  # the cleaner removed the batch's first records
        for _ in range(count):
            ts += rng.randrange(1, 10)
            tombstone = rng.random() < 0.1
            builder.append(
                offset=offset,
                timestamp=ts,
                key=f"user-{rng.randrange(2000)}".encode(),
                value=None if tombstone else _value(rng, offset, 80),
            )
            written += 1
            offset += 1 + (rng.randrange(1, 6) if rng.random() < 0.3 else 0)  # holes
        part.append(builder)
        offset += rng.randrange(0, 4)  # whole batches cleaned away
        batch_no += 1
    part.close()
    # Kafka's cleaner records how far it cleaned (LogCleanerManager): gaps below that offset are
    # compaction, not lost data, to a reader of the directory.
    checkpoint = {TopicPartition("users-compacted", 0): offset}
    (root / CLEANER_OFFSET_CHECKPOINT).write_text(encode_offset_checkpoint(checkpoint))


def write_sample(
    path: str | Path,
    *,
    records_per_partition: int = 500,
    segment_bytes: int = 16 * 1024,
    seed: int = 4,
) -> SampleSummary:
    """Write a realistic Kafka log directory into ``path`` (which must not hold one already)."""
    if segment_bytes < MIN_SEGMENT_BYTES:
        raise ValueError(f"segment_bytes must be >= {MIN_SEGMENT_BYTES} (the largest sample batch)")
    root = Path(path)
    root.mkdir(parents=True, exist_ok=True)
    summary = SampleSummary(str(root))
    rng = random.Random(seed)
    n = records_per_partition
    try:
        _orders(root, summary, rng, n, segment_bytes)
        _legacy(root, summary, rng, n, segment_bytes)
        _payments(root, summary, rng, n, segment_bytes)
        _compacted(root, summary, rng, n, segment_bytes)
    finally:
        while _OPEN:
            _OPEN[-1].close()
    return summary
