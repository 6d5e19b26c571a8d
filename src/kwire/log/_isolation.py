"""``read_committed`` offline: what a Kafka consumer with ``isolation.level=read_committed`` returns.

Approach: the consumer's fetcher (``CompletedFetch`` in Kafka's client) gets, with each fetch, the
aborted transactions overlapping the fetched range (from the ``.txnindex`` files) and walks the
batches in offset order:

- before looking at a batch that has a producer id, every aborted transaction whose first offset
  is <= the batch's last offset marks its producer as "aborting";
- a control batch whose first record is an ABORT marker clears its producer's mark;
- a transactional data batch of a marked producer is dropped (it belongs to an aborted txn);
- control batches are never returned to the application.

``ReadCommittedFilter`` holds that state and judges one batch at a time (the Spark reader keeps one
per split across its decode windows); ``committed_batches`` applies it to any iterable of batches
(a segment scan, several segments in order, a byte range in the middle of a segment), given the
aborted transactions of the range (``collect_aborted_transactions`` over the ``.txnindex`` of the
first segment and every later one). Like the consumer, only transactions that end at or after the
first offset read count; earlier ones may be passed and are ignored.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator

from kwire.errors import KwireError
from kwire.log._txnindex import AbortedTxn
from kwire.records import Batch, ControlRecordType, decode_control_record

__all__ = ["ReadCommittedFilter", "committed_batches", "is_abort_marker"]


def is_abort_marker(batch: Batch) -> bool:
    """True for a control batch whose first record is an ABORT marker (Kafka's containsAbortMarker)."""
    if not batch.is_control:
        return False
    for record in batch:
        try:
            return decode_control_record(record).type == ControlRecordType.ABORT
        except KwireError:
            return False
    return False


class ReadCommittedFilter:
    """Kafka's read_committed consumer logic, fed one batch at a time in log order.

    ``aborted``: the aborted transactions overlapping the range being read, as
    ``(producer_id, first_offset, last_offset, ...)`` (an ``AbortedTxn`` or a plain tuple). As
    the consumer gets ``collectAbortedTxns(fetchOffset, ...)``, only transactions ending at or after
    the first batch read count. The state carries across calls, so a caller that decodes a range
    in windows (the Spark reader) keeps one filter for the whole range.
    """

    __slots__ = ("_aborting", "_queue", "_start")

    def __init__(self, aborted: Iterable[AbortedTxn | tuple[int, int, int]]) -> None:
        self._queue = [(t[1], i, t[0], t[2]) for i, t in enumerate(aborted)]
        heapq.heapify(self._queue)
        self._aborting: set[int] = set()
        self._start: int | None = None

    def keep_header(
        self,
        *,
        base_offset: int,
        last_offset: int,
        producer_id: int,
        is_transactional: bool,
        is_control: bool,
        is_abort: bool,
    ) -> bool:
        """Whether a consumer returns this v2 batch's records (control batches never)."""
        if self._start is None:
            self._start = base_offset
        if producer_id >= 0:
            queue = self._queue
            while queue and queue[0][0] <= last_offset:
                _, _, pid, txn_last = heapq.heappop(queue)
                if txn_last >= self._start:
                    self._aborting.add(pid)
            if is_control:
                if is_abort:
                    self._aborting.discard(producer_id)
                return False
            return not (is_transactional and producer_id in self._aborting)
        return not is_control

    def keep(self, batch: Batch) -> bool:
        """``keep_header`` for a parsed batch; legacy (magic 0/1) batches are always kept."""
        if batch.magic < 2:
            return True
        return self.keep_header(
            base_offset=batch.base_offset,
            last_offset=batch.last_offset,
            producer_id=batch.producer_id,
            is_transactional=batch.is_transactional,
            is_control=batch.is_control,
            is_abort=is_abort_marker(batch),
        )


def committed_batches(
    batches: Iterable[Batch],
    aborted: Iterable[AbortedTxn],
    *,
    keep_control: bool = False,
) -> Iterator[Batch]:
    """The batches a read_committed consumer would return records from, in order.

    ``aborted``: the aborted transactions overlapping the range being read. Control batches are
    dropped unless ``keep_control`` (they are still used to end aborted transactions).
    """
    txn_filter = ReadCommittedFilter(aborted)
    for batch in batches:
        if txn_filter.keep(batch) or (keep_control and batch.is_control):
            yield batch
