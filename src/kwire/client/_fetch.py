"""Fetch without I/O: building Fetch requests, reading their responses, and turning a partition's
fetched bytes into Arrow rows of an offset range.

A fetch answer for one partition is a run of whole batches, usually followed by a partial one the
broker cut at the size limit; the first batch may start before the fetch offset (a compressed
batch, or a v2 batch, is returned whole). ``FetchedRange.from_partition`` decodes every whole batch
with the records layer's columnar decoder (no Python object per record), keeps the rows in
``[start, end)`` and, under ``read_committed``, drops the aborted transactions' batches with
Kafka's consumer logic (``kwire.log.ReadCommittedFilter``, the rule of Kafka's ``CompletedFetch``).
Control records never reach the rows. ``next_offset`` is where the next fetch starts: after the
last whole batch, even when every row of it was dropped.

A range is read with one fetch kept in flight ahead of the decode (librdkafka and Kafka's
``Fetcher`` prefetch the same way): ``scan_fetched`` reads only the batch headers of an answer, so
``fetch_ahead`` knows where the next fetch starts before any record is decoded, and the broker
prepares that answer while this one is decoded and handed on.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from kwire._lazy import lazy_dataclass
from kwire.client._metadata import ClusterMetadata
from kwire.errors import DecodeError
from kwire.log import ReadCommittedFilter
from kwire.protocol import ZERO_UUID, ErrorCode
from kwire.records import read_batches

if TYPE_CHECKING:
    import pyarrow as pa

    from kwire.protocol.messages import FetchResponse

__all__ = [
    "READ_COMMITTED",
    "READ_UNCOMMITTED",
    "FetchPosition",
    "FetchScan",
    "FetchedPartition",
    "FetchedRange",
    "fetch_ahead",
    "fetch_request",
    "parse_fetch_response",
    "scan_fetched",
]

READ_UNCOMMITTED = 0
READ_COMMITTED = 1


@lazy_dataclass(frozen=True, slots=True)
class FetchPosition:
    topic: str
    partition: int
    offset: int
    leader_epoch: int = -1


@lazy_dataclass(slots=True)
class FetchedPartition:
    topic: str
    partition: int
    error: ErrorCode
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int
    aborted: list[tuple[int, int]]  # (producer id, first offset)
    records: memoryview


def fetch_request(
    positions: Sequence[FetchPosition],
    version: int,
    metadata: ClusterMetadata,
    *,
    isolation_level: int = READ_UNCOMMITTED,
    max_wait_ms: int = 500,
    min_bytes: int = 1,
    max_bytes: int = 52_428_800,
    partition_max_bytes: int = 1_048_576,
) -> Any:
    """A consumer's (replica id -1) full Fetch of ``positions`` (no fetch session)."""
    from kwire.protocol.messages import FetchRequest

    by_topic: dict[str, list[FetchPosition]] = {}
    for pos in positions:
        by_topic.setdefault(pos.topic, []).append(pos)
    topics = []
    for topic, parts in by_topic.items():
        entry = FetchRequest.FetchTopic(
            partitions=[
                FetchRequest.FetchPartition(
                    partition=p.partition,
                    fetch_offset=p.offset,
                    partition_max_bytes=partition_max_bytes,
                    current_leader_epoch=p.leader_epoch if version >= 9 else -1,
                )
                for p in parts
            ]
        )
        if version >= 13:
            entry.topic_id = metadata.topic_ids.get(topic, ZERO_UUID)
        else:
            entry.topic = topic
        topics.append(entry)
    extra: dict[str, Any] = {}
    if version >= 3:
        extra["max_bytes"] = max_bytes
    if version >= 4:
        extra["isolation_level"] = isolation_level
    if version >= 7:
        extra["session_id"] = 0
        extra["session_epoch"] = -1  # FINAL_EPOCH: a full fetch that opens no session
    return FetchRequest(
        replica_id=-1, max_wait_ms=max_wait_ms, min_bytes=min_bytes, topics=topics, **extra
    )


def parse_fetch_response(
    response: FetchResponse, version: int, metadata: ClusterMetadata
) -> list[FetchedPartition]:
    """Every partition of a FetchResponse (a top-level error, v7+, applies to each)."""
    top = ErrorCode(getattr(response, "error_code", 0))
    out: list[FetchedPartition] = []
    for topic_entry in response.responses:
        if version >= 13:
            name = metadata.topic_name(topic_entry.topic_id) or "?"
        else:
            name = topic_entry.topic
        for p in topic_entry.partitions:
            error = ErrorCode(p.error_code) if top == ErrorCode.NONE else top
            aborted = [
                (a.producer_id, a.first_offset)
                for a in (getattr(p, "aborted_transactions", None) or ())
            ]
            records = p.records
            out.append(
                FetchedPartition(
                    topic=name,
                    partition=p.partition_index,
                    error=error,
                    high_watermark=p.high_watermark,
                    last_stable_offset=getattr(p, "last_stable_offset", -1),
                    log_start_offset=getattr(p, "log_start_offset", -1),
                    aborted=aborted,
                    records=memoryview(records if records is not None else b""),
                )
            )
    return out


@lazy_dataclass(frozen=True, slots=True)
class FetchScan:
    """What one partition's fetched bytes hold, from the batch headers alone (nothing decoded)."""

    cut: int  # bytes of whole batches (the partial batch the broker cut at the size limit is left)
    next_offset: int  # where the next fetch starts
    dropped: tuple[int, ...]  # base offsets of aborted transactions' batches (read_committed)
    has_control: bool  # a control batch (transaction marker) is among the whole batches


def scan_fetched(fetched: FetchedPartition, *, start: int, read_committed: bool) -> FetchScan:
    """Walk the batch headers of ``fetched`` (fetched from offset ``start``); see ``FetchScan``."""
    committed = ReadCommittedFilter(aborted_transactions(fetched)) if read_committed else None
    next_offset = start
    dropped: list[int] = []
    cut = 0
    has_control = False
    try:
        for batch in read_batches(fetched.records, verify_crc=False, allow_truncated_tail=True):
            cut = batch.position + len(batch.view)
            next_offset = max(next_offset, batch.next_offset)
            has_control = has_control or batch.is_control
            if committed is not None and not committed.keep(batch):
                dropped.append(batch.base_offset)
    except DecodeError:
        pass  # the columnar decode of the bytes before ``cut`` raises with the position
    return FetchScan(cut, next_offset, tuple(dropped), has_control)


def fetch_ahead(position: int, next_offset: int, *, end: int, limit: int) -> int | None:
    """The offset to fetch while the answer fetched at ``position`` is decoded, or None.

    ``next_offset`` is that answer's ``FetchScan.next_offset``; ``limit`` its high watermark
    (last stable offset under read_committed; -1 if the broker did not say). None when the
    answer made no progress (the caller retries at ``position`` and counts), when the range
    ends there, or at the limit: a fetch at the high watermark would wait ``fetch.max.wait.ms``
    for records the range may not need.
    """
    if next_offset <= position or next_offset >= end:
        return None
    if limit >= 0 and next_offset >= limit:
        return None
    return next_offset


@lazy_dataclass(slots=True)
class FetchedRange:
    """Rows of one fetch answer within ``[start, end)`` and where the next fetch starts."""

    rows: pa.RecordBatch
    next_offset: int

    @classmethod
    def from_partition(
        cls,
        fetched: FetchedPartition,
        *,
        start: int,
        end: int | None,
        columns: Sequence[str],
        read_committed: bool,
        max_decompressed_size: int | None = None,
        scan: FetchScan | None = None,
    ) -> FetchedRange:
        """Decode ``fetched.records`` from the fetch offset ``start`` (see the module notes).

        Under ``read_committed`` the answer's own aborted-transaction list decides, as each of
        Kafka's ``CompletedFetch`` does (a broker lists every aborted transaction overlapping
        the range it returns). ``scan``: the answer's ``scan_fetched`` (made here if not given).
        """
        import pyarrow as pa
        import pyarrow.compute as pc

        from kwire.records._columnar import decode_columnar

        if scan is None:
            scan = scan_fetched(fetched, start=start, read_committed=read_committed)
        dropped = scan.dropped
        needed = tuple(dict.fromkeys([*columns, "offset", "isControl", "batchOffset"]))
        result = decode_columnar(
            fetched.records[: scan.cut],
            columns=needed,
            max_decompressed_size=max_decompressed_size,
            topic=fetched.topic,
            partition=fetched.partition,
        )
        table = result.batch
        if not dropped and not scan.has_control and table.num_rows:
            # the usual answer: every row kept unless the range's ends cut into it (a filter
            # is a copy of every column, values included)
            bounds = pc.min_max(table.column("offset"))
            low, high = bounds["min"].as_py(), bounds["max"].as_py()
            if low >= start and (end is None or high < end):
                return cls(rows=table.select(list(columns)), next_offset=scan.next_offset)
        mask = pc.and_(
            pc.greater_equal(table.column("offset"), start),
            pc.invert(table.column("isControl")),
        )
        if end is not None:
            mask = pc.and_(mask, pc.less(table.column("offset"), end))
        if dropped:
            mask = pc.and_(
                mask,
                pc.invert(pc.is_in(table.column("batchOffset"), pa.array(dropped, pa.int64()))),
            )
        table = table.filter(mask).select(list(columns))
        return cls(rows=table, next_offset=scan.next_offset)


def aborted_transactions(fetched: FetchedPartition) -> Iterable[tuple[int, int, int]]:
    """The response's aborted transactions as ``ReadCommittedFilter`` takes them.

    A fetch answer says only where each aborted transaction starts; it ends at its ABORT marker,
    which ``ReadCommittedFilter`` meets in the batches, so the last offset is unbounded here.
    """
    return [(pid, first, 2**63 - 1) for pid, first in fetched.aborted]
