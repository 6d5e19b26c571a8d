"""The share-partition state machine of KIP-932: which records of one partition a share group has
handed out, to whom, until when, and how often.

Approach, after Kafka's ``SharePartition`` (share module): the share-partition start offset
(SPSO) is the first offset not yet finished with; the end offset (SPEO) is one past the last
offset ever acquired. Offsets in between are *in flight*, each AVAILABLE, ACQUIRED (by one
member, under an acquisition lock until a deadline), ACKNOWLEDGED or ARCHIVED; an offset in that
window with no entry is a gap (compacted away, or a control batch) and counts as archived. The
SPSO moves past every finished offset at the front of the window, so the window only holds what
still matters.

Acquisition takes the fetched batches (their offset ranges, read from the log by the caller) and
acquires, in offset order, the AVAILABLE in-flight offsets and the offsets past the SPEO, whole
batches at a time (``batch_optimized``) or exactly ``max_records`` (``record_limit``), never more
than ``max_in_flight`` offsets beyond the SPSO (``group.share.partition.max.record.locks``).
Every acquisition counts a delivery. A release (RELEASE, a lock that timed out, the member
leaving) makes an offset AVAILABLE again, or ARCHIVED once its delivery count has reached the
limit (``group.share.delivery.count.limit``, ``SharePartition.releaseAcquiredRecords``).

Sans-IO: no log, no clock; the caller passes the batches and the time.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from enum import IntEnum
from typing import Final

from kwire._lazy import lazy_dataclass
from kwire.protocol import ErrorCode

__all__ = [
    "ACCEPT",
    "GAP",
    "REJECT",
    "RELEASE",
    "RENEW",
    "AcquiredRange",
    "InFlight",
    "RecordState",
    "SharePartition",
]

# AcknowledgeType (ShareFetch/ShareAcknowledge AcknowledgeTypes); RENEW is v2+ (KIP-1222)
GAP: Final = 0
ACCEPT: Final = 1
RELEASE: Final = 2
REJECT: Final = 3
RENEW: Final = 4


class RecordState(IntEnum):
    """Kafka's ``RecordState`` with its ids (the ShareSnapshot's ``DeliveryState``)."""

    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVED = 4


@lazy_dataclass(slots=True)
class InFlight:
    state: RecordState
    delivery_count: int
    member_id: str | None = None
    lock_deadline_ms: int = 0


@lazy_dataclass(frozen=True, slots=True)
class AcquiredRange:
    """One ``AcquiredRecords`` entry: contiguous offsets acquired with the same delivery count."""

    first_offset: int
    last_offset: int
    delivery_count: int


class SharePartition:
    """One (share group, topic partition): see the module doc."""

    def __init__(
        self,
        *,
        lock_duration_ms: int = 30_000,
        delivery_limit: int = 5,
        max_in_flight: int = 2000,
    ) -> None:
        self.lock_duration_ms = lock_duration_ms
        self.delivery_limit = delivery_limit
        self.max_in_flight = max_in_flight
        self.start_offset = -1  # -1: not initialized yet (share.auto.offset.reset decides)
        self.end_offset = -1
        self.records: dict[int, InFlight] = {}
        #: counts the changes worth persisting (not acquisitions, which Kafka does not persist)
        self.changes = 0

    # --- state ------------------------------------------------------------------------------

    @property
    def initialized(self) -> bool:
        return self.start_offset >= 0

    def initialize(self, start_offset: int) -> None:
        """Start at ``start_offset`` with nothing in flight (a new share partition)."""
        self.start_offset = self.end_offset = start_offset
        self.records.clear()
        self.changes += 1

    def restore(self, start_offset: int, records: dict[int, InFlight]) -> None:
        """Start from persisted state: offsets past the SPSO with their state (what a restarted
        broker reads back; acquired records come back AVAILABLE, as Kafka's persister keeps no
        locks)."""
        self.start_offset = start_offset
        self.records = {o: r for o, r in sorted(records.items()) if o >= start_offset}
        self.end_offset = max([start_offset, *(o + 1 for o in self.records)])
        self._advance_start()

    def skip_to(self, offset: int) -> None:
        """The log now starts at ``offset`` (retention, DeleteRecords): what lay before it is
        gone from the share partition too; what is in flight after it stays."""
        if offset <= self.start_offset:
            return
        for below in [o for o in self.records if o < offset]:
            del self.records[below]
        self.start_offset = offset
        self.end_offset = max(self.end_offset, offset)
        self._advance_start()
        self.changes += 1

    def state_of(self, offset: int) -> RecordState:
        """The state of ``offset`` (before the SPSO: finished, reported as ARCHIVED or
        ACKNOWLEDGED alike; past the SPEO: AVAILABLE, not fetched yet)."""
        if offset >= self.end_offset:
            return RecordState.AVAILABLE
        found = self.records.get(offset)
        return RecordState.ARCHIVED if found is None else found.state

    def next_fetch_offset(self) -> int:
        """Where a fetch reads the log from: the first AVAILABLE offset in flight, else the SPEO."""
        for offset, record in self.records.items():
            if record.state is RecordState.AVAILABLE:
                return offset
        return self.end_offset

    def can_acquire(self) -> bool:
        """Whether a fetch could acquire anything: an AVAILABLE offset, or room in the window."""
        if any(r.state is RecordState.AVAILABLE for r in self.records.values()):
            return True
        return self.end_offset - self.start_offset < self.max_in_flight

    def in_flight(self) -> Iterator[tuple[int, InFlight]]:
        return iter(sorted(self.records.items()))

    # --- acquisition ------------------------------------------------------------------------

    def acquire(
        self,
        member_id: str,
        batches: Iterable[tuple[int, int, bool]],
        max_records: int,
        now_ms: int,
        *,
        record_limit: bool = False,
    ) -> list[AcquiredRange]:
        """Acquire for ``member_id`` from ``batches`` (base offset, last offset, is control) read
        from the log at ``next_fetch_offset()``; the acquired offsets as ranges."""
        acquired: list[tuple[int, int]] = []  # (offset, delivery count)
        deadline = now_ms + self.lock_duration_ms
        for base, last, control in batches:
            for offset in range(max(base, self.start_offset), last + 1):
                if record_limit and len(acquired) >= max_records:
                    break
                record = self.records.get(offset)
                if record is None:
                    if offset < self.end_offset:
                        continue  # a gap already passed
                    if offset - self.start_offset >= self.max_in_flight:
                        return self._finish(acquired)
                    self.end_offset = offset + 1
                    if control:
                        continue  # a transaction marker: a gap, never delivered
                    record = self.records[offset] = InFlight(RecordState.AVAILABLE, 0)
                if record.state is not RecordState.AVAILABLE:
                    continue
                record.state = RecordState.ACQUIRED
                record.delivery_count += 1
                record.member_id = member_id
                record.lock_deadline_ms = deadline
                acquired.append((offset, record.delivery_count))
            if len(acquired) >= max_records:
                break  # whole batches: the limit is passed at a batch boundary
        return self._finish(acquired)

    def _finish(self, acquired: list[tuple[int, int]]) -> list[AcquiredRange]:
        self._advance_start()
        ranges: list[AcquiredRange] = []
        for offset, count in acquired:
            if (
                ranges
                and ranges[-1].last_offset == offset - 1
                and ranges[-1].delivery_count == count
            ):
                ranges[-1] = AcquiredRange(ranges[-1].first_offset, offset, count)
            else:
                ranges.append(AcquiredRange(offset, offset, count))
        return ranges

    # --- acknowledgement and release --------------------------------------------------------

    def acknowledge(
        self, member_id: str, first: int, last: int, types: list[int], now_ms: int
    ) -> ErrorCode:
        """Apply one acknowledgement batch: one type for the whole range, or one per offset.
        Nothing changes unless every offset is ACQUIRED by ``member_id`` (INVALID_RECORD_STATE,
        as ``SharePartition.acknowledge`` checks the batch before it applies it)."""
        if last < first or len(types) not in (1, last - first + 1):
            return ErrorCode.INVALID_REQUEST
        if any(t not in (GAP, ACCEPT, RELEASE, REJECT, RENEW) for t in types):
            return ErrorCode.INVALID_REQUEST
        if first < self.start_offset or last >= self.end_offset:
            return ErrorCode.INVALID_RECORD_STATE
        for offset in range(first, last + 1):
            record = self.records.get(offset)
            kind = types[0] if len(types) == 1 else types[offset - first]
            if record is None:
                if kind == GAP:
                    continue  # a gap acknowledged as one
                return ErrorCode.INVALID_RECORD_STATE
            if record.state is not RecordState.ACQUIRED or record.member_id != member_id:
                return ErrorCode.INVALID_RECORD_STATE
        for offset in range(first, last + 1):
            found = self.records.get(offset)
            if found is None:
                continue
            kind = types[0] if len(types) == 1 else types[offset - first]
            if kind == RENEW:
                found.lock_deadline_ms = now_ms + self.lock_duration_ms
            elif kind == ACCEPT:
                self._settle(found, RecordState.ACKNOWLEDGED)
            elif kind == RELEASE:
                self._release(found)
            else:  # REJECT, GAP
                self._settle(found, RecordState.ARCHIVED)
        self._advance_start()
        self.changes += 1
        return ErrorCode.NONE

    def release_member(self, member_id: str) -> bool:
        """Release every offset ``member_id`` holds (it left, or its session closed)."""
        released = False
        for record in self.records.values():
            if record.state is RecordState.ACQUIRED and record.member_id == member_id:
                self._release(record)
                released = True
        self._advance_start()
        self.changes += released
        return released

    def expire_locks(self, now_ms: int) -> bool:
        """Release the offsets whose acquisition lock has run out (``AcquisitionLockTimerTask``)."""
        released = False
        for record in self.records.values():
            if record.state is RecordState.ACQUIRED and record.lock_deadline_ms <= now_ms:
                self._release(record)
                released = True
        self._advance_start()
        self.changes += released
        return released

    def next_lock_deadline(self) -> int | None:
        deadlines = [
            r.lock_deadline_ms for r in self.records.values() if r.state is RecordState.ACQUIRED
        ]
        return min(deadlines) if deadlines else None

    def _release(self, record: InFlight) -> None:
        if record.delivery_count >= self.delivery_limit:
            self._settle(record, RecordState.ARCHIVED)
        else:
            self._settle(record, RecordState.AVAILABLE)

    @staticmethod
    def _settle(record: InFlight, state: RecordState) -> None:
        record.state = state
        record.member_id = None
        record.lock_deadline_ms = 0

    def _advance_start(self) -> None:
        """Move the SPSO past the finished offsets (and gaps) at the front of the window.
        Entries are added in offset order only (past the SPEO), so the first key is the least."""
        done = (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED)
        while self.records:
            first = next(iter(self.records))
            if self.records[first].state not in done:
                self.start_offset = first
                return
            del self.records[first]
        self.start_offset = self.end_offset
