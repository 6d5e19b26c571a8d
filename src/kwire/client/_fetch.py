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
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kwire.client._metadata import ClusterMetadata
from kwire.errors import DecodeError
from kwire.log import ReadCommittedFilter
from kwire.protocol import ZERO_UUID, ErrorCode, message_class, struct_class
from kwire.records import read_batches

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "READ_COMMITTED",
    "READ_UNCOMMITTED",
    "FetchPosition",
    "FetchedPartition",
    "FetchedRange",
    "fetch_request",
    "parse_fetch_response",
]

READ_UNCOMMITTED = 0
READ_COMMITTED = 1


@dataclass(frozen=True, slots=True)
class FetchPosition:
    topic: str
    partition: int
    offset: int
    leader_epoch: int = -1


@dataclass(slots=True)
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
    cls = message_class("FetchRequest")
    topic_cls = struct_class(cls, "topics")
    part_cls = struct_class(cls, "topics", "partitions")
    by_topic: dict[str, list[FetchPosition]] = {}
    for pos in positions:
        by_topic.setdefault(pos.topic, []).append(pos)
    topics = []
    for topic, parts in by_topic.items():
        entry = topic_cls(
            partitions=[
                part_cls(
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
    return cls(replica_id=-1, max_wait_ms=max_wait_ms, min_bytes=min_bytes, topics=topics, **extra)


def parse_fetch_response(
    response: Any, version: int, metadata: ClusterMetadata
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


@dataclass(slots=True)
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
    ) -> FetchedRange:
        """Decode ``fetched.records`` from the fetch offset ``start`` (see the module notes).

        Under ``read_committed`` the answer's own aborted-transaction list decides, as each of
        Kafka's ``CompletedFetch`` does (a broker lists every aborted transaction overlapping
        the range it returns).
        """
        import pyarrow as pa
        import pyarrow.compute as pc

        from kwire.records._columnar import decode_columnar

        view = fetched.records
        committed = ReadCommittedFilter(aborted_transactions(fetched)) if read_committed else None
        next_offset = start
        dropped: list[int] = []
        cut = 0
        try:
            for batch in read_batches(view, verify_crc=False, allow_truncated_tail=True):
                cut = batch.position + len(batch.view)
                next_offset = max(next_offset, batch.next_offset)
                if committed is not None and not committed.keep(batch):
                    dropped.append(batch.base_offset)
        except DecodeError:
            pass  # the columnar decode below raises with the position
        needed = tuple(dict.fromkeys([*columns, "offset", "isControl", "batchOffset"]))
        result = decode_columnar(
            view[:cut],
            columns=needed,
            max_decompressed_size=max_decompressed_size,
            topic=fetched.topic,
            partition=fetched.partition,
        )
        table = result.batch
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
        return cls(rows=table, next_offset=next_offset)


def aborted_transactions(fetched: FetchedPartition) -> Iterable[tuple[int, int, int]]:
    """The response's aborted transactions as ``ReadCommittedFilter`` takes them.

    A fetch answer says only where each aborted transaction starts; it ends at its ABORT marker,
    which ``ReadCommittedFilter`` meets in the batches, so the last offset is unbounded here.
    """
    return [(pid, first, 2**63 - 1) for pid, first in fetched.aborted]
