"""``read_committed`` offline: what a Kafka consumer with ``isolation.level=read_committed`` returns.

Approach: the consumer's fetcher (``CompletedFetch`` in Kafka's client) gets, with each fetch, the
aborted transactions overlapping the fetched range (from the ``.txnindex`` files) and walks the
batches in offset order:

- before looking at a batch that has a producer id, every aborted transaction whose first offset
  is <= the batch's last offset marks its producer as "aborting";
- a control batch whose first record is an ABORT marker clears its producer's mark;
- a transactional data batch of a marked producer is dropped (it belongs to an aborted txn);
- control batches are never returned to the application.

``committed_batches`` applies exactly that to any iterable of batches (a segment scan, several
segments in order, a byte range in the middle of a segment), given the aborted transactions of the
range (``collect_aborted_transactions`` over the ``.txnindex`` of the first segment and every later
one). Unlike the consumer, which gets exactly the overlapping transactions from the broker, it also
accepts transactions that ended before the range starts and ignores them.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator

from kwire.errors import KwireError
from kwire.log._txnindex import AbortedTxn
from kwire.records import Batch, ControlRecordType, decode_control_record

__all__ = ["committed_batches", "is_abort_marker"]


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
    queue = [(t.first_offset, i, t.producer_id, t.last_offset) for i, t in enumerate(aborted)]
    heapq.heapify(queue)
    aborting: set[int] = set()
    for batch in batches:
        if batch.producer_id >= 0 and batch.magic >= 2:
            last = batch.last_offset
            while queue and queue[0][0] <= last:
                _, _, pid, txn_last = heapq.heappop(queue)
                # A transaction that ended before this batch cannot hold it (reading from the
                # middle of a log, its ABORT marker was never seen): do not mark its producer.
                if txn_last >= batch.base_offset:
                    aborting.add(pid)
            if batch.is_control:
                if is_abort_marker(batch):
                    aborting.discard(batch.producer_id)
            elif batch.is_transactional and batch.producer_id in aborting:
                continue
        if batch.is_control and not keep_control:
            continue
        yield batch
