"""Kafka's compaction rules over bytes: the pure part of ``LogCleaner``'s ``Cleaner``.

Approach: no files here. The cleaner (``_cleaner.py``) hands these functions the bytes of a
segment (an ``mmap``) and gets back the bytes of the cleaned batches; what each piece follows in
Kafka 3.9 (``core/.../log/LogCleaner.scala``, ``MemoryRecords.filterTo``):

- ``OffsetMap`` is ``SkimpyOffsetMap``: key -> offset of its last record in the dirty section,
  plus the last offset seen (``latestOffset``). kwire keys it by the key bytes themselves (exact,
  no MD5 collisions) and bounds it by ``max_entries`` (Kafka: dedupe buffer / 24 bytes * load
  factor); a full map ends the round early, as Kafka's does;
- ``build_offset_map`` is ``buildOffsetMapForSegment``: records of aborted transactions are not
  mapped, keyless records neither, only offsets at or after the first dirty offset;
- ``CleanedTransactionMetadata`` is Kafka's class of that name: aborted transactions (from the
  ``.txnindex``) are consumed in first-offset order as batches are read; a data batch of an
  aborted transaction can be discarded; an ABORT marker is kept (and its entry goes to the cleaned
  ``.txnindex``) while batches of its transaction were seen in this pass, a COMMIT marker while
  batches of its transaction were seen; an empty control batch was cleaned before and may go;
- ``clean_batches`` is ``cleanInto``'s ``RecordFilter`` driven through ``filterTo``:
  ``checkBatchRetention`` (the batch holding a producer's last data offset, or its last marker,
  is kept even when empty, so producer state survives; so is the batch ending the cleaning round;
  a discardable marker goes once its delete horizon passed), ``shouldRetainRecord`` (the record
  is the latest for its key, and it has a value or is a tombstone whose horizon has not passed:
  v2 batches carry the horizon in the header (KIP-534: the ``deleteHorizonMs`` attribute and the
  base timestamp), legacy ones use the segment's modification time), then: a batch that keeps all
  its records is copied as is, unless it holds a tombstone or a discardable marker and has no
  horizon yet (then it is rebuilt with horizon = now + ``delete.retention.ms``); other batches are
  rebuilt with the same magic, codec, producer fields and offsets (v2: the original base and last
  offset, so offset holes are kept; a magic 1 wrapper: inner offsets relative to its first
  retained record, wrapper offset = the last one, as ``MemoryRecordsBuilder``); a v2 batch that
  must stay but keeps no record becomes an empty batch header (``writeEmptyHeader``).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping
from dataclasses import field
from typing import Final, NamedTuple

from kwire._lazy import lazy_dataclass
from kwire.errors import KwireError
from kwire.log._txnindex import AbortedTxn
from kwire.records import (
    CREATE_TIME,
    LOG_APPEND_TIME,
    Batch,
    BatchBuilder,
    BatchReader,
    Compression,
    ControlRecordType,
    Record,
    decode_control_record,
)
from kwire.records._v2 import encode_batch

__all__ = [
    "DEFAULT_MAX_MAP_ENTRIES",
    "CleanedTransactionMetadata",
    "CleanerStats",
    "CleaningRound",
    "LastRecord",
    "OffsetMap",
    "build_offset_map",
    "clean_batches",
]

#: kwire's default bound on the offset map (Python holds ~150 bytes per entry).
DEFAULT_MAX_MAP_ENTRIES: Final = 500_000

BytesLike = bytes | bytearray | memoryview


class OffsetMap:
    """Kafka's ``SkimpyOffsetMap`` (see the module doc)."""

    __slots__ = ("_map", "latest_offset", "max_entries")

    def __init__(self, max_entries: int = DEFAULT_MAX_MAP_ENTRIES) -> None:
        if max_entries < 1:
            raise ValueError("the offset map needs room for at least one key")
        self.max_entries = max_entries
        self._map: dict[bytes, int] = {}
        #: The last offset the map covers (-1 when nothing was added).
        self.latest_offset = -1

    def __len__(self) -> int:
        return len(self._map)

    @property
    def full(self) -> bool:
        return len(self._map) >= self.max_entries

    def put(self, key: BytesLike, offset: int) -> None:
        self._map[bytes(key)] = offset
        self.latest_offset = offset

    def get(self, key: BytesLike) -> int:
        """The key's last offset, -1 when the map does not hold it."""
        return self._map.get(bytes(key), -1)

    def update_latest_offset(self, offset: int) -> None:
        self.latest_offset = offset

    def clear(self) -> None:
        self._map.clear()
        self.latest_offset = -1


class LastRecord(NamedTuple):
    """``UnifiedLog.lastRecordsOfActiveProducers``' values: the producer's last data offset
    (None when it has none) and its epoch."""

    last_data_offset: int | None
    producer_epoch: int


@lazy_dataclass
class CleanerStats:
    """What a cleaning round read and wrote (a part of Kafka's ``CleanerStats``)."""

    map_messages_read: int = 0
    messages_read: int = 0
    messages_written: int = 0
    bytes_read: int = 0
    bytes_written: int = 0
    invalid_messages: int = 0


@lazy_dataclass
class _OngoingAbort:
    """An aborted transaction the cleaner is inside of, with the offset of the last batch it saw."""

    txn: AbortedTxn
    last_observed_batch_offset: int | None = None


class CleanedTransactionMetadata:
    """Kafka's ``CleanedTransactionMetadata`` (see the module doc).

    ``cleaned_index`` collects the aborted transactions whose ABORT marker is kept, for the
    cleaned segment's ``.txnindex``; the cleaner swaps in a new list for each cleaned segment.
    An aborted transaction added twice (it overlaps two segments) is queued once.
    """

    def __init__(self) -> None:
        self._queue: list[tuple[int, int, AbortedTxn]] = []
        self._queued: set[tuple[int, int]] = set()
        self._seq = 0
        self.ongoing_committed: set[int] = set()
        self.ongoing_aborted: dict[int, _OngoingAbort] = {}
        self.cleaned_index: list[AbortedTxn] | None = None

    def add_aborted_transactions(self, txns: Iterable[AbortedTxn]) -> None:
        for txn in txns:
            ident = (txn.producer_id, txn.first_offset)
            if ident in self._queued:
                continue
            self._queued.add(ident)
            self._seq += 1
            heapq.heappush(self._queue, (txn.first_offset, self._seq, txn))

    def _consume_aborted_up_to(self, offset: int) -> None:
        while self._queue and self._queue[0][0] <= offset:
            txn = heapq.heappop(self._queue)[2]
            self.ongoing_aborted.setdefault(txn.producer_id, _OngoingAbort(txn))

    def on_control_batch_read(self, batch: Batch) -> bool:
        """A marker was read; True when it may be discarded."""
        self._consume_aborted_up_to(batch.last_offset)
        try:
            record = next(iter(batch), None)
            if record is None:
                return True  # an empty control batch was cleaned before
            control_type = decode_control_record(record).type
        except KwireError:
            return False
        pid = batch.producer_id
        if control_type == ControlRecordType.ABORT:
            ongoing = self.ongoing_aborted.pop(pid, None)
            if ongoing is not None and ongoing.last_observed_batch_offset is not None:
                # Kept until every batch of the transaction was removed.
                if self.cleaned_index is not None:
                    self.cleaned_index.append(ongoing.txn)
                return False
            return True
        if control_type == ControlRecordType.COMMIT:
            # Discardable when no batch of the transaction was read in this pass.
            if pid in self.ongoing_committed:
                self.ongoing_committed.discard(pid)
                return False
            return True
        return False

    def on_batch_read(self, batch: Batch) -> bool:
        """A data batch was read; True when it belongs to an aborted transaction."""
        self._consume_aborted_up_to(batch.last_offset)
        if batch.is_transactional:
            ongoing = self.ongoing_aborted.get(batch.producer_id)
            if ongoing is not None:
                ongoing.last_observed_batch_offset = batch.last_offset
                return True
            self.ongoing_committed.add(batch.producer_id)
        return False

    def should_discard_batch(self, batch: Batch) -> bool:
        if batch.is_control:
            return self.on_control_batch_read(batch)
        return self.on_batch_read(batch)


def build_offset_map(
    buffer: BytesLike,
    offset_map: OffsetMap,
    *,
    start_offset: int,
    txn: CleanedTransactionMetadata,
    start_position: int = 0,
    stats: CleanerStats | None = None,
) -> bool:
    """``buildOffsetMapForSegment`` over one segment's bytes; True when the map filled up."""
    for batch in BatchReader(
        buffer, verify_crc=False, allow_truncated_tail=True, start=start_position
    ):
        if batch.is_control:
            txn.on_control_batch_read(batch)
        elif not txn.on_batch_read(batch):
            for record in batch:
                if stats is not None:
                    stats.map_messages_read += 1
                if record.key is not None and record.offset >= start_offset:
                    if offset_map.full:
                        return True
                    offset_map.put(record.key, record.offset)
        if batch.last_offset >= start_offset:
            offset_map.update_latest_offset(batch.last_offset)
    return False


@lazy_dataclass
class CleaningRound:
    """What ``clean_batches`` decides with: Kafka's ``cleanInto`` arguments."""

    offset_map: OffsetMap
    txn: CleanedTransactionMetadata
    now_ms: int
    delete_retention_ms: int
    #: ``upperBoundOffsetOfCleaningRound``: the batch ending just before it is always kept.
    upper_bound_offset: int
    #: ``lastRecordsOfActiveProducers``.
    last_records: Mapping[int, LastRecord] = field(default_factory=dict)
    #: Legacy (magic 0/1) tombstones of this segment are kept (segment modified after the
    #: legacy delete horizon).
    retain_legacy_deletes: bool = True
    stats: CleanerStats = field(default_factory=CleanerStats)

    def _is_last_of_producer(self, batch: Batch) -> bool:
        last = self.last_records.get(batch.producer_id)
        if last is None:
            return False
        if last.last_data_offset is not None:
            return batch.last_offset == last.last_data_offset
        return batch.is_control and batch.producer_epoch == last.producer_epoch

    def should_retain_record(self, batch: Batch, record: Record) -> bool:
        """``Cleaner.shouldRetainRecord``."""
        if record.offset > self.offset_map.latest_offset:
            return True
        if record.key is None:
            self.stats.invalid_messages += 1
            return False
        if record.offset < self.offset_map.get(record.key):
            return False
        if record.value is not None:
            return True
        if batch.magic >= 2:
            return not batch.has_delete_horizon or self.now_ms < batch.base_timestamp
        return self.retain_legacy_deletes


_DELETE: Final = 0
_DELETE_EMPTY: Final = 1
_RETAIN_EMPTY: Final = 2


def clean_batches(buffer: BytesLike, rules: CleaningRound, out: bytearray) -> None:
    """``cleanInto``: append the retained batches of ``buffer`` (one segment) to ``out``."""
    stats = rules.stats
    for batch in BatchReader(buffer, verify_crc=False, allow_truncated_tail=True):
        stats.bytes_read += batch.size
        can_discard = rules.txn.should_discard_batch(batch)
        if batch.is_control:
            discard_records = (
                can_discard and batch.has_delete_horizon and batch.base_timestamp <= rules.now_ms
            )
        else:
            discard_records = can_discard
        if batch.magic >= 2 and batch.producer_id >= 0 and rules._is_last_of_producer(batch):
            retention = _RETAIN_EMPTY
        elif batch.next_offset == rules.upper_bound_offset:
            retention = _RETAIN_EMPTY  # the round's last offset stays known
        elif discard_records:
            retention = _DELETE
        else:
            retention = _DELETE_EMPTY
        if retention == _DELETE:
            continue
        marker_for_empty_txn = can_discard and batch.is_control
        retained: list[Record] = []
        write_original = True
        tombstones = False
        for record in batch:
            stats.messages_read += 1
            if discard_records:
                keep = False
            elif batch.is_control:
                keep = True
            else:
                keep = rules.should_retain_record(batch, record)
            if keep:
                retained.append(record)
                tombstones |= record.value is None
            else:
                write_original = False
        start = len(out)
        if retained:
            need_horizon = (
                batch.magic >= 2
                and (tombstones or marker_for_empty_txn)
                and not batch.has_delete_horizon
            )
            if write_original and not need_horizon:
                out += batch.view
            else:
                if need_horizon:
                    horizon: int | None = rules.now_ms + rules.delete_retention_ms
                else:
                    horizon = batch.base_timestamp if batch.has_delete_horizon else None
                _rebuild(batch, retained, horizon).build_into(out)
            stats.messages_written += len(retained)
        elif retention == _RETAIN_EMPTY and batch.magic >= 2:
            _write_empty_header(batch, out)
        stats.bytes_written += len(out) - start


def _rebuild(batch: Batch, records: list[Record], horizon: int | None) -> BatchBuilder:
    """``buildRetainedRecordsInto``: the same magic, codec, timestamp type and producer fields."""
    log_append_time = batch.max_timestamp if batch.timestamp_type == LOG_APPEND_TIME else None
    timestamp_type = LOG_APPEND_TIME if log_append_time is not None else CREATE_TIME
    if batch.magic >= 2:
        builder = BatchBuilder(
            2,
            batch.compression,
            base_offset=batch.base_offset,
            timestamp_type=timestamp_type,
            log_append_time=log_append_time,
            producer_id=batch.producer_id,
            producer_epoch=batch.producer_epoch,
            base_sequence=batch.base_sequence,
            is_transactional=batch.is_transactional,
            is_control=batch.is_control,
            partition_leader_epoch=batch.partition_leader_epoch,
            delete_horizon_ms=horizon,
        )
    else:
        builder = BatchBuilder(
            batch.magic,
            batch.compression,
            base_offset=records[0].offset,
            timestamp_type=timestamp_type,
            log_append_time=log_append_time,
        )
    for r in records:
        builder.append(r.offset, r.timestamp, r.key, r.value, r.headers)
    if batch.magic >= 2:
        # overrideLastOffset: the batch keeps its last offset (and so its last sequence).
        builder.next_offset = batch.last_offset + 1
    return builder


def _write_empty_header(batch: Batch, out: bytearray) -> None:
    """``DefaultRecordBatch.writeEmptyHeader``: no records, the batch's offsets and producer."""
    ts = batch.max_timestamp
    encode_batch(
        out,
        b"",
        count=0,
        base_offset=batch.base_offset,
        last_offset_delta=batch.last_offset - batch.base_offset,
        base_timestamp=ts,
        max_timestamp=ts,
        compression=Compression.NONE,
        timestamp_type=batch.timestamp_type if batch.timestamp_type >= 0 else CREATE_TIME,
        is_transactional=batch.is_transactional,
        is_control=batch.is_control,
        producer_id=batch.producer_id,
        producer_epoch=batch.producer_epoch,
        base_sequence=batch.base_sequence,
        partition_leader_epoch=batch.partition_leader_epoch,
    )
