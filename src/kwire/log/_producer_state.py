"""Kafka's producer state: idempotence and transaction bookkeeping of one partition.

Approach: follows Kafka 3.9's ``ProducerStateManager``, ``ProducerStateEntry`` and
``ProducerAppendInfo`` (storage module), without their Java plumbing:

- per producer id an entry keeps the epoch, the coordinator epoch, the first offset of its ongoing
  transaction, and the metadata (last sequence, last offset, offset delta, max timestamp) of its
  last 5 data batches (``NUM_BATCHES_TO_RETAIN``), which is what duplicate detection looks at;
- an append is checked on a working copy (``ProducerAppendInfo``) and committed by ``update``, so
  a rejected batch leaves no trace. Checks by origin: REPLICATION checks nothing (stale epochs
  and coordinator epochs are only logged by Kafka), COORDINATOR checks epochs, CLIENT also checks
  sequences (``checkSequence``): a new epoch must start at 0 unless the producer is unknown (no
  epoch yet: then any sequence is accepted, KIP-360 since 2.5, so UNKNOWN_PRODUCER_ID is never
  returned); in the same epoch the first sequence must follow the last (wrapping after
  ``Integer.MAX_VALUE``) unless the entry has no epoch;
- a data batch from a producer with an ongoing transaction must be transactional
  (INVALID_TXN_STATE); a transactional batch opens a transaction at its base offset; a COMMIT /
  ABORT marker closes it and yields a ``CompletedTxn``; an aborted one goes to the ``.txnindex``
  with Kafka's last stable offset (the first offset of the earliest *other* ongoing transaction,
  else the marker's offset + 1);
- snapshots (``<offset>.snapshot``) keep one entry per producer with only the last batch's
  metadata, as Kafka writes them (``_snapshot.py`` has the format);
- producer ids expire (``removeExpiredProducers``, ``isProducerExpired``): an entry without an
  ongoing transaction whose last timestamp (the max timestamp of its last batch or marker) is
  ``producer.id.expiration.ms`` or more in the past is dropped, and a snapshot being loaded drops
  such entries too (``loadFromSnapshot``). A later batch of an expired producer is that of an
  unknown producer: accepted with any sequence, as above.

The offline ``LogWriter`` replays with origin REPLICATION through the same code.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Iterable
from dataclasses import field
from typing import Final, NamedTuple

from kwire._lazy import lazy_dataclass
from kwire.errors import KwireError
from kwire.log._errors import ProducerStateError
from kwire.log._snapshot import ProducerSnapshotEntry, encode_producer_snapshot
from kwire.log._txnindex import AbortedTxn
from kwire.records import (
    AppendOrigin,
    Batch,
    ControlRecordType,
    EndTransactionMarker,
    decode_control_record,
)
from kwire.records._sequence import NO_SEQUENCE, first_sequence, in_sequence, last_sequence

__all__ = [
    "NUM_BATCHES_TO_RETAIN",
    "BatchMetadata",
    "CompletedTxn",
    "ProducerAppendInfo",
    "ProducerStateEntry",
    "ProducerStateManager",
    "last_sequence",
]

log = logging.getLogger("kwire.log")

NUM_BATCHES_TO_RETAIN: Final = 5
NO_PRODUCER_EPOCH: Final = -1
NO_TIMESTAMP: Final = -1


class BatchMetadata(NamedTuple):
    """One retained batch of a producer (Kafka's ``BatchMetadata``)."""

    last_seq: int
    last_offset: int
    offset_delta: int
    timestamp: int

    @property
    def first_seq(self) -> int:
        return first_sequence(self.last_seq, self.offset_delta)

    @property
    def first_offset(self) -> int:
        return self.last_offset - self.offset_delta


class CompletedTxn(NamedTuple):
    producer_id: int
    first_offset: int
    last_offset: int
    is_aborted: bool


@lazy_dataclass
class ProducerStateEntry:
    """Kafka's ``ProducerStateEntry``: what the partition knows about one producer id."""

    producer_id: int
    producer_epoch: int = NO_PRODUCER_EPOCH
    batch_metadata: deque[BatchMetadata] = field(
        default_factory=lambda: deque(maxlen=NUM_BATCHES_TO_RETAIN)
    )
    coordinator_epoch: int = -1
    last_timestamp: int = NO_TIMESTAMP
    current_txn_first_offset: int | None = None

    def copy(self) -> ProducerStateEntry:
        return ProducerStateEntry(
            self.producer_id,
            self.producer_epoch,
            deque(self.batch_metadata, maxlen=NUM_BATCHES_TO_RETAIN),
            self.coordinator_epoch,
            self.last_timestamp,
            self.current_txn_first_offset,
        )

    @property
    def is_empty(self) -> bool:
        return not self.batch_metadata

    @property
    def first_seq(self) -> int:
        return self.batch_metadata[0].first_seq if self.batch_metadata else NO_SEQUENCE

    @property
    def last_seq(self) -> int:
        return self.batch_metadata[-1].last_seq if self.batch_metadata else NO_SEQUENCE

    @property
    def first_data_offset(self) -> int:
        return self.batch_metadata[0].first_offset if self.batch_metadata else -1

    @property
    def last_data_offset(self) -> int:
        return self.batch_metadata[-1].last_offset if self.batch_metadata else -1

    @property
    def last_offset_delta(self) -> int:
        return self.batch_metadata[-1].offset_delta if self.batch_metadata else 0

    def maybe_update_producer_epoch(self, epoch: int) -> None:
        if self.producer_epoch != epoch:
            self.batch_metadata.clear()
            self.producer_epoch = epoch

    def add_batch(
        self, epoch: int, last_seq: int, last_offset: int, offset_delta: int, timestamp: int
    ) -> None:
        self.maybe_update_producer_epoch(epoch)
        self.batch_metadata.append(BatchMetadata(last_seq, last_offset, offset_delta, timestamp))
        self.last_timestamp = timestamp

    def find_duplicate_batch(self, batch: Batch) -> BatchMetadata | None:
        """``findDuplicateBatch``: a retained batch of the same epoch and sequence range."""
        if batch.producer_epoch != self.producer_epoch:
            return None
        first = batch.base_sequence
        last = last_sequence(first, batch.offset_delta)
        for meta in self.batch_metadata:
            if meta.first_seq == first and meta.last_seq == last:
                return meta
        return None


class ProducerAppendInfo:
    """Kafka's ``ProducerAppendInfo``: validates batches of one producer on a copy of its entry."""

    __slots__ = ("current", "origin", "producer_id", "transactions", "updated")

    def __init__(self, producer_id: int, current: ProducerStateEntry, origin: AppendOrigin) -> None:
        self.producer_id = producer_id
        self.current = current
        self.origin = origin
        self.updated = current.copy()
        #: (producer id, first offset) of the transactions this append started.
        self.transactions: list[int] = []

    def _check_producer_epoch(self, epoch: int, offset: int) -> None:
        current = self.updated.producer_epoch
        if epoch < current:
            message = (
                f"Epoch of producer {self.producer_id} at offset {offset} is {epoch}, which is "
                f"smaller than the last seen epoch {current}"
            )
            if self.origin is AppendOrigin.REPLICATION:
                log.warning(message)
            else:
                # Since 2.7 Kafka answers a stale epoch with INVALID_PRODUCER_EPOCH (not fenced).
                raise ProducerStateError("INVALID_PRODUCER_EPOCH", message)

    def _check_sequence(self, epoch: int, first_seq: int, offset: int) -> None:
        updated, current = self.updated, self.current
        if epoch != updated.producer_epoch:
            if first_seq != 0 and updated.producer_epoch != NO_PRODUCER_EPOCH:
                raise ProducerStateError(
                    "OUT_OF_ORDER_SEQUENCE_NUMBER",
                    f"Invalid sequence number for new epoch of producer {self.producer_id} at "
                    f"offset {offset}: {epoch} (request epoch), {first_seq} (seq. number), "
                    f"{updated.producer_epoch} (current producer epoch)",
                )
            return
        if not updated.is_empty:
            current_last = updated.last_seq
        elif epoch == current.producer_epoch:
            current_last = current.last_seq
        else:
            current_last = NO_SEQUENCE
        # No epoch at all (the producer's records were deleted): any sequence is accepted.
        if current.producer_epoch != NO_PRODUCER_EPOCH and not in_sequence(current_last, first_seq):
            raise ProducerStateError(
                "OUT_OF_ORDER_SEQUENCE_NUMBER",
                f"Out of order sequence number for producer {self.producer_id} at offset "
                f"{offset}: {first_seq} (incoming seq. number), {current_last} "
                "(current end sequence number)",
            )

    def append(self, batch: Batch) -> CompletedTxn | None:
        """Check and record one v2 batch of this producer; a marker may complete a transaction."""
        if batch.is_control:
            try:
                record = next(iter(batch), None)
                if record is None:  # the cleaner removed the whole transaction
                    return None
                control = decode_control_record(record)
            except KwireError:
                return None
            if not isinstance(control.value, EndTransactionMarker):
                return None
            return self.append_end_txn_marker(
                control.value,
                control.type == ControlRecordType.ABORT,
                batch.producer_epoch,
                batch.base_offset,
                record.timestamp,
            )
        self.append_data_batch(batch)
        return None

    def append_data_batch(self, batch: Batch) -> None:
        first_offset = batch.base_offset
        epoch = batch.producer_epoch
        if self.origin is not AppendOrigin.REPLICATION:
            self._check_producer_epoch(epoch, first_offset)
        if self.origin is AppendOrigin.CLIENT:
            self._check_sequence(epoch, batch.base_sequence, first_offset)
        last_offset = batch.last_offset
        self.updated.add_batch(
            epoch,
            last_sequence(batch.base_sequence, batch.offset_delta),
            last_offset,
            last_offset - first_offset,
            batch.max_timestamp,
        )
        ongoing = self.updated.current_txn_first_offset
        if ongoing is not None and not batch.is_transactional:
            if self.origin is not AppendOrigin.REPLICATION:
                raise ProducerStateError(
                    "INVALID_TXN_STATE",
                    f"Expected transactional write from producer {self.producer_id} at offset "
                    f"{first_offset}",
                )
        elif ongoing is None and batch.is_transactional:
            self.updated.current_txn_first_offset = first_offset
            self.transactions.append(first_offset)

    def append_end_txn_marker(
        self,
        marker: EndTransactionMarker,
        aborted: bool,
        epoch: int,
        offset: int,
        timestamp: int,
    ) -> CompletedTxn | None:
        if self.origin is not AppendOrigin.REPLICATION:
            self._check_producer_epoch(epoch, offset)
        if self.updated.coordinator_epoch > marker.coordinator_epoch:
            message = (
                f"Invalid coordinator epoch for producerId {self.producer_id} at offset {offset}: "
                f"{marker.coordinator_epoch} (zombie), {self.updated.coordinator_epoch} (current)"
            )
            if self.origin is AppendOrigin.REPLICATION:
                log.info(message)
            else:
                raise ProducerStateError("TRANSACTION_COORDINATOR_FENCED", message)
        first = self.updated.current_txn_first_offset
        completed = (
            CompletedTxn(self.producer_id, first, offset, aborted) if first is not None else None
        )
        entry = self.updated
        entry.maybe_update_producer_epoch(epoch)
        entry.coordinator_epoch = marker.coordinator_epoch
        entry.last_timestamp = timestamp
        entry.current_txn_first_offset = None
        return completed


class ProducerStateManager:
    """Kafka's ``ProducerStateManager`` (in memory; files are the caller's business)."""

    def __init__(self) -> None:
        self.producers: dict[int, ProducerStateEntry] = {}
        #: producer id -> first offset of its ongoing transaction.
        self.ongoing: dict[int, int] = {}
        #: The log offset up to which batches were applied (``lastMapOffset``).
        self.map_end_offset = 0

    def entry(self, producer_id: int) -> ProducerStateEntry | None:
        return self.producers.get(producer_id)

    def prepare_update(self, producer_id: int, origin: AppendOrigin) -> ProducerAppendInfo:
        current = self.producers.get(producer_id) or ProducerStateEntry(producer_id)
        return ProducerAppendInfo(producer_id, current, origin)

    def update(self, info: ProducerAppendInfo) -> None:
        self.producers[info.producer_id] = info.updated
        for first in info.transactions:
            self.ongoing.setdefault(info.producer_id, first)

    def last_stable_offset(self, completed: CompletedTxn) -> int:
        others = [f for p, f in self.ongoing.items() if p != completed.producer_id]
        return min(others) if others else completed.last_offset + 1

    def complete_txn(self, completed: CompletedTxn) -> None:
        self.ongoing.pop(completed.producer_id, None)

    def first_unstable_offset(self) -> int | None:
        return min(self.ongoing.values()) if self.ongoing else None

    @staticmethod
    def is_producer_expired(entry: ProducerStateEntry, now_ms: int, expiration_ms: int) -> bool:
        """``isProducerExpired``: no ongoing transaction, idle ``expiration_ms`` or longer."""
        return (
            entry.current_txn_first_offset is None
            and now_ms - entry.last_timestamp >= expiration_ms
        )

    def remove_expired_producers(self, now_ms: int, expiration_ms: int) -> list[int]:
        """``removeExpiredProducers``: drop the expired entries; their producer ids."""
        expired = [
            pid
            for pid, entry in self.producers.items()
            if self.is_producer_expired(entry, now_ms, expiration_ms)
        ]
        for pid in expired:
            del self.producers[pid]
        return expired

    def replay(self, batch: Batch) -> AbortedTxn | None:
        """Apply one batch without checks (origin REPLICATION, as recovery and ``LogWriter`` do);
        returns the aborted transaction it completed, for the ``.txnindex``."""
        if batch.magic >= 2 and batch.producer_id >= 0:
            info = self.prepare_update(batch.producer_id, AppendOrigin.REPLICATION)
            completed = info.append(batch)
            self.update(info)
            if completed is not None:
                lso = self.last_stable_offset(completed)
                self.complete_txn(completed)
                if completed.is_aborted:
                    return AbortedTxn(
                        completed.producer_id, completed.first_offset, completed.last_offset, lso
                    )
        self.map_end_offset = batch.last_offset + 1
        return None

    # -- snapshots -------------------------------------------------------------------------------

    def snapshot_entries(self) -> list[ProducerSnapshotEntry]:
        return [
            ProducerSnapshotEntry(
                producer_id=pid,
                producer_epoch=e.producer_epoch,
                last_sequence=e.last_seq,
                last_offset=e.last_data_offset,
                offset_delta=e.last_offset_delta,
                timestamp=e.last_timestamp,
                coordinator_epoch=e.coordinator_epoch,
                current_txn_first_offset=e.current_txn_first_offset,
            )
            for pid, e in sorted(self.producers.items())
        ]

    def snapshot(self) -> bytes:
        return encode_producer_snapshot(self.snapshot_entries())

    def load(
        self,
        entries: Iterable[ProducerSnapshotEntry],
        offset: int,
        *,
        now_ms: int | None = None,
        expiration_ms: int | None = None,
    ) -> None:
        """Replace the state by a snapshot's entries taken at log offset ``offset``; with
        ``now_ms`` and ``expiration_ms``, expired entries are left out (``loadFromSnapshot``)."""
        self.producers.clear()
        self.ongoing.clear()
        for s in entries:
            if (
                now_ms is not None
                and expiration_ms is not None
                and s.current_txn_first_offset is None
                and now_ms - s.timestamp >= expiration_ms
            ):
                continue
            e = ProducerStateEntry(
                s.producer_id,
                s.producer_epoch,
                coordinator_epoch=s.coordinator_epoch,
                last_timestamp=s.timestamp,
                current_txn_first_offset=s.current_txn_first_offset,
            )
            if s.has_batch_metadata:
                e.batch_metadata.append(
                    BatchMetadata(s.last_sequence, s.last_offset, s.offset_delta, s.timestamp)
                )
            self.producers[s.producer_id] = e
            if s.current_txn_first_offset is not None:
                self.ongoing[s.producer_id] = s.current_txn_first_offset
        self.map_end_offset = offset

    def clear(self, offset: int) -> None:
        self.producers.clear()
        self.ongoing.clear()
        self.map_end_offset = offset
