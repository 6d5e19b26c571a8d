"""The transaction coordinator's shard: every transactional id of this node, sans-IO.

Approach: Kafka's ``TransactionCoordinator`` decisions over ``TransactionStateManager``'s cache,
in the shape of the group coordinator's shard (``group/_shard.py``). Each operation takes the
request and the time and returns an ``Outcome``: the answer, the ``__transaction_state`` records
to append (``_txn_records``) and, when it prepared a commit or an abort, the transactional id
whose markers go out next. It changes nothing itself: ``replay`` is the only way the state
changes, called by the runtime (``_txn.TransactionCoordinator``) after each append and, at start,
for every record of the log. The shard never touches a partition, a file or the broker state;
producer ids come from the ``allocate_producer_id`` it is given.

Multi-step operations follow Kafka: EndTxn (and the fencing of an ongoing transaction by
InitProducerId or a timeout) writes PrepareCommit/PrepareAbort; the runtime then writes the
markers into the data partitions and asks ``complete`` for the CompleteCommit/CompleteAbort
record. Transaction version 2 (KIP-890 part 2, a client ending with EndTxn v5): the Prepare record
already carries the bumped epoch; an exhausted epoch (``Short.MaxValue - 1``) is bumped once more
for the markers and the Prepare record names the next producer id, which the Complete record
moves to (``TransactionMetadata.prepareAbortOrCommit`` / ``prepareComplete``). An abort is
allowed with no transaction open: it only bumps the epoch.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterable
from typing import Final, Generic, NamedTuple, TypeVar

from kwire._lazy import lazy_dataclass
from kwire.broker._txn_records import (
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    TopicPartition,
    TransactionMetadata,
    Transit,
    TxnRecord,
    decode_record,
    record_of,
)
from kwire.log.internal_topics import TransactionState
from kwire.protocol import ErrorCode

__all__ = ["InitResult", "Outcome", "TransactionShard", "is_epoch_exhausted"]

SHORT_MAX: Final = 2**15 - 1
_COMPLETE: Final = (TransactionState.COMPLETE_COMMIT, TransactionState.COMPLETE_ABORT)
_PREPARE: Final = (TransactionState.PREPARE_COMMIT, TransactionState.PREPARE_ABORT)

T = TypeVar("T")


def is_epoch_exhausted(epoch: int) -> bool:
    """Kafka never hands out ``Short.MaxValue`` so a fence is always possible."""
    return epoch >= SHORT_MAX - 1


class InitResult(NamedTuple):
    error: ErrorCode
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH


@lazy_dataclass
class Outcome(Generic[T]):
    """What an operation decided (Kafka's ``CoordinatorResult``)."""

    result: T
    records: list[TxnRecord] = dataclasses.field(default_factory=list)
    #: the transactional id just prepared: its markers, then ``complete``
    markers: str | None = None


class TransactionShard:
    """The transactions of this node (module doc)."""

    def __init__(
        self,
        *,
        allocate_producer_id: Callable[[], int],
        value_version: Callable[[], int],
        max_timeout_ms: int = 900_000,
        expiration_ms: int = 604_800_000,
    ) -> None:
        self.transactions: dict[str, TransactionMetadata] = {}
        self.allocate_producer_id = allocate_producer_id
        #: the TransactionLogValue version to write (1 once transaction.version 2 is finalized)
        self.value_version = value_version
        self.max_timeout_ms = max_timeout_ms
        self.expiration_ms = expiration_ms

    # --- the records ------------------------------------------------------------------------

    def record(self, meta: TransactionMetadata) -> TxnRecord:
        return record_of(meta, self.value_version())

    def replay(self, key: bytes, value: bytes | None, transit: Transit | None = None) -> None:
        """A record into the state: the only way it changes (``loadTransactionsForTxnTopicPartition``
        at start; after each append the record the operation wrote)."""
        decoded = decode_record(key, value, transit)
        if decoded is None:
            return
        txn_id, meta = decoded
        if meta is None or meta.state is TransactionState.DEAD:
            self.transactions.pop(txn_id, None)
        else:
            self.transactions[txn_id] = meta

    def prepared(self) -> list[str]:
        """The transactions found in PrepareCommit/PrepareAbort (their markers are owed)."""
        return [t for t, m in self.transactions.items() if m.state in _PREPARE]

    # --- InitProducerId ---------------------------------------------------------------------

    @staticmethod
    def id_error(transactional_id: str | None) -> ErrorCode:
        """An empty transactional id is INVALID_REQUEST: ``TransactionCoordinator`` rejects it
        (InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, DescribeTransactions)
        before it looks up the transaction (``getTransactionState``, NOT_COORDINATOR on another
        node), so the handlers ask before routing."""
        return ErrorCode.NONE if transactional_id else ErrorCode.INVALID_REQUEST

    def init_error(self, transactional_id: str, timeout_ms: int) -> ErrorCode:
        """What ``TransactionCoordinator.handleInitProducerId`` rejects before it looks up the
        transaction: an empty transactional id, then a timeout above
        ``transaction.max.timeout.ms``."""
        if self.id_error(transactional_id) is not ErrorCode.NONE:
            return ErrorCode.INVALID_REQUEST
        if not 0 < timeout_ms <= self.max_timeout_ms:
            return ErrorCode.INVALID_TRANSACTION_TIMEOUT
        return ErrorCode.NONE

    def init_producer_id(
        self,
        transactional_id: str,
        timeout_ms: int,
        expected: tuple[int, int] | None,
        now_ms: int,
    ) -> Outcome[InitResult]:
        """``handleInitProducerId`` for a transactional id (``expected``: KIP-360's id and epoch)."""
        error = self.init_error(transactional_id, timeout_ms)
        if error is not ErrorCode.NONE:
            return Outcome(InitResult(error))
        meta = self.transactions.get(transactional_id)
        if meta is None:
            meta = TransactionMetadata(
                transactional_id,
                self.allocate_producer_id(),
                timeout_ms=timeout_ms,
                last_update_ms=now_ms,
            )
        if expected is not None and not _valid_producer_id(meta, expected):
            return Outcome(InitResult(ErrorCode.PRODUCER_FENCED))
        state = meta.state
        if state in _PREPARE:
            return Outcome(InitResult(ErrorCode.CONCURRENT_TRANSACTIONS))
        if state is TransactionState.ONGOING:
            # Fence the current producer and abort its transaction; the client retries and
            # gets the epoch bumped a second time (TransactionCoordinator, case Ongoing).
            fenced = self.fence_and_abort(meta, now_ms)
            return Outcome(InitResult(ErrorCode.CONCURRENT_TRANSACTIONS), *_rest(fenced))
        if state not in (TransactionState.EMPTY, *_COMPLETE):
            raise AssertionError(f"{transactional_id} found in state {state.kafka_name}")
        if is_epoch_exhausted(meta.producer_epoch) and (
            expected is None or expected[1] == meta.producer_epoch
        ):
            nxt = meta.transit(
                producer_id=self.allocate_producer_id(),
                previous_producer_id=meta.producer_id,
                producer_epoch=0,
                last_producer_epoch=meta.producer_epoch if expected else NO_PRODUCER_EPOCH,
            )
        else:
            epochs = _increment_epoch(meta, None if expected is None else expected[1])
            if isinstance(epochs, ErrorCode):
                return Outcome(InitResult(epochs))
            nxt = meta.transit(producer_epoch=epochs[0], last_producer_epoch=epochs[1])
        nxt = nxt.transit(
            state=TransactionState.EMPTY,
            timeout_ms=timeout_ms,
            partitions=frozenset(),
            start_ms=-1,
            last_update_ms=now_ms,
        )
        result = InitResult(ErrorCode.NONE, nxt.producer_id, nxt.producer_epoch)
        return Outcome(result, [self.record(nxt)])

    def fence_and_abort(self, meta: TransactionMetadata, now_ms: int) -> Outcome[None]:
        """PrepareAbort with the epoch bumped (Kafka's PrepareEpochFence, then the abort): the
        markers and CompleteAbort follow."""
        if meta.producer_epoch >= SHORT_MAX:
            raise AssertionError(f"cannot fence producer {meta.producer_id} at epoch {SHORT_MAX}")
        fenced = meta.transit(
            producer_epoch=meta.producer_epoch + 1, last_producer_epoch=NO_PRODUCER_EPOCH
        )
        return self._prepare(fenced, commit=False, now_ms=now_ms)

    # --- AddPartitionsToTxn / AddOffsetsToTxn -------------------------------------------------

    def _check_producer(
        self, transactional_id: str, producer_id: int, producer_epoch: int
    ) -> TransactionMetadata | ErrorCode:
        if self.id_error(transactional_id) is not ErrorCode.NONE:
            return ErrorCode.INVALID_REQUEST
        meta = self.transactions.get(transactional_id)
        if meta is None or meta.producer_id != producer_id:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING
        if meta.producer_epoch != producer_epoch:
            return ErrorCode.PRODUCER_FENCED
        return meta

    def add_partitions(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Iterable[TopicPartition],
        now_ms: int,
    ) -> Outcome[ErrorCode]:
        """``handleAddPartitionsToTransaction``: the transaction becomes (or stays) Ongoing."""
        found = self._check_producer(transactional_id, producer_id, producer_epoch)
        if isinstance(found, ErrorCode):
            return Outcome(found)
        meta = found
        added = frozenset(partitions)
        if meta.state in _PREPARE:
            return Outcome(ErrorCode.CONCURRENT_TRANSACTIONS)
        if meta.state is TransactionState.ONGOING and added <= meta.partitions:
            return Outcome(ErrorCode.NONE)
        start = now_ms if meta.state in (TransactionState.EMPTY, *_COMPLETE) else meta.start_ms
        ongoing = meta.transit(
            state=TransactionState.ONGOING,
            partitions=meta.partitions | added,
            start_ms=start,
            last_update_ms=now_ms,
        )
        return Outcome(ErrorCode.NONE, [self.record(ongoing)])

    def verify_partitions(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Iterable[TopicPartition],
    ) -> dict[TopicPartition, ErrorCode]:
        """``handleVerifyPartitionsInTransaction`` (KIP-890 part 1, AddPartitionsToTxn v4+
        with ``verify_only``): NONE for the partitions in the transaction."""
        wanted = list(partitions)
        found = self._check_producer(transactional_id, producer_id, producer_epoch)
        if isinstance(found, ErrorCode):
            return {tp: found for tp in wanted}
        if found.state in _PREPARE:
            return {tp: ErrorCode.CONCURRENT_TRANSACTIONS for tp in wanted}
        return {
            tp: ErrorCode.NONE if tp in found.partitions else ErrorCode.TRANSACTION_ABORTABLE
            for tp in wanted
        }

    # --- EndTxn -------------------------------------------------------------------------------

    def end_txn(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        now_ms: int,
        *,
        epoch_bump: bool = False,
    ) -> Outcome[InitResult]:
        """``handleEndTransaction`` from a client; ``epoch_bump``: the client uses transaction
        version 2 (EndTxn v5 with ``transaction.version`` 2 finalized)."""
        if self.id_error(transactional_id) is not ErrorCode.NONE:
            return Outcome(InitResult(ErrorCode.INVALID_REQUEST))
        meta = self.transactions.get(transactional_id)
        if meta is None or meta.producer_id != producer_id:
            if epoch_bump and meta is not None and _retry_after_rotation(meta, producer_id):
                return Outcome(InitResult(ErrorCode.NONE, meta.producer_id, meta.producer_epoch))
            return Outcome(InitResult(ErrorCode.INVALID_PRODUCER_ID_MAPPING))
        if epoch_bump:
            return self._end_txn_v2(meta, producer_epoch, commit, now_ms)
        if producer_epoch != meta.producer_epoch:
            return Outcome(InitResult(ErrorCode.PRODUCER_FENCED))
        wanted = TransactionState.COMPLETE_COMMIT if commit else TransactionState.COMPLETE_ABORT
        preparing = TransactionState.PREPARE_COMMIT if commit else TransactionState.PREPARE_ABORT
        state = meta.state
        if state is TransactionState.ONGOING:
            # TransactionVersion.transactionVersionForEndTxn: EndTxn v4 or older is TV0
            tv0 = meta.transit(client_transaction_version=0)
            prepared = self._prepare(tv0, commit=commit, now_ms=now_ms)
            return Outcome(InitResult(ErrorCode.NONE, meta.producer_id, meta.producer_epoch),
                           *_rest(prepared))  # fmt: skip
        if state is wanted:  # a retry of a completed EndTxn
            return Outcome(InitResult(ErrorCode.NONE, meta.producer_id, meta.producer_epoch))
        if state is preparing:
            return Outcome(InitResult(ErrorCode.CONCURRENT_TRANSACTIONS))
        return Outcome(InitResult(ErrorCode.INVALID_TXN_STATE))

    def _end_txn_v2(
        self, meta: TransactionMetadata, producer_epoch: int, commit: bool, now_ms: int
    ) -> Outcome[InitResult]:
        """``handleEndTransaction`` with a client that supports the epoch bump (TV2)."""
        wanted = TransactionState.COMPLETE_COMMIT if commit else TransactionState.COMPLETE_ABORT
        preparing = TransactionState.PREPARE_COMMIT if commit else TransactionState.PREPARE_ABORT
        state = meta.state
        # This EndTxn already bumped the epoch: a retry of it (TransactionCoordinator's
        # retryOnEpochBump).
        retry = producer_epoch == meta.producer_epoch - 1 and state in (wanted, preparing)
        if producer_epoch != meta.producer_epoch and not retry:
            return Outcome(InitResult(ErrorCode.PRODUCER_FENCED))
        if retry:
            if state is wanted:
                return Outcome(InitResult(ErrorCode.NONE, meta.producer_id, meta.producer_epoch))
            return Outcome(InitResult(ErrorCode.CONCURRENT_TRANSACTIONS))
        if state in _PREPARE:
            return Outcome(InitResult(ErrorCode.CONCURRENT_TRANSACTIONS))
        empty_abort = not commit and state in (TransactionState.EMPTY, *_COMPLETE)
        if state is not TransactionState.ONGOING and not empty_abort:
            return Outcome(InitResult(ErrorCode.INVALID_TXN_STATE))
        if meta.producer_epoch >= SHORT_MAX:
            return Outcome(InitResult(ErrorCode.PRODUCER_FENCED))
        # TransactionCoordinator: an exhausted epoch (32766) is still bumped for the markers
        # (32767, never handed out); the Prepare record names the next producer id.
        bumped = meta.transit(
            producer_epoch=meta.producer_epoch + 1,
            last_producer_epoch=meta.producer_epoch,
            client_transaction_version=2,
        )
        if is_epoch_exhausted(meta.producer_epoch):
            bumped = bumped.transit(next_producer_id=self.allocate_producer_id())
            result = InitResult(ErrorCode.NONE, bumped.next_producer_id, 0)
        else:
            result = InitResult(ErrorCode.NONE, bumped.producer_id, bumped.producer_epoch)
        return Outcome(result, *_rest(self._prepare(bumped, commit=commit, now_ms=now_ms)))

    def _prepare(self, meta: TransactionMetadata, *, commit: bool, now_ms: int) -> Outcome[None]:
        prepared = meta.transit(
            state=TransactionState.PREPARE_COMMIT if commit else TransactionState.PREPARE_ABORT,
            last_update_ms=now_ms,
        )
        return Outcome(None, [self.record(prepared)], prepared.transactional_id)

    def complete(self, transactional_id: str, now_ms: int) -> Outcome[TransactionMetadata | None]:
        """The markers of a prepared transaction are written: CompleteCommit/CompleteAbort (the
        producer id rotated when the Prepare record named the next one). The answer is the
        prepared state the markers were written for; None if nothing is prepared."""
        meta = self.transactions.get(transactional_id)
        if meta is None or meta.state not in _PREPARE:
            return Outcome(None)
        commit = meta.state is TransactionState.PREPARE_COMMIT
        done = meta.transit(
            state=TransactionState.COMPLETE_COMMIT if commit else TransactionState.COMPLETE_ABORT,
            partitions=frozenset(),
            last_update_ms=now_ms,
        )
        if meta.next_producer_id != NO_PRODUCER_ID:
            done = done.transit(
                producer_id=meta.next_producer_id,
                previous_producer_id=meta.producer_id,
                producer_epoch=0,
                last_producer_epoch=NO_PRODUCER_EPOCH,
                next_producer_id=NO_PRODUCER_ID,
            )
        return Outcome(meta, [self.record(done)])

    # --- timers -------------------------------------------------------------------------------

    def timed_out(self, now_ms: int) -> list[str]:
        """``abortTimedOutTransactions``: the Ongoing transactions whose ``start + timeout``
        has passed (each is then fenced and aborted)."""
        return [
            t
            for t, m in self.transactions.items()
            if m.state is TransactionState.ONGOING and m.start_ms + m.timeout_ms < now_ms
        ]

    def expired(self, now_ms: int) -> list[str]:
        """``removeExpiredTransactionalIds``: ids idle (Empty or complete) for
        ``transactional.id.expiration.ms``."""
        return [
            t
            for t, m in self.transactions.items()
            if m.state in (TransactionState.EMPTY, *_COMPLETE)
            and m.last_update_ms + self.expiration_ms <= now_ms
        ]

    def expire(self, transactional_id: str) -> Outcome[None]:
        """The tombstone of an expired id (Kafka's transition to Dead)."""
        meta = self.transactions.get(transactional_id)
        if meta is None:
            return Outcome(None)
        return Outcome(None, [self.record(meta.transit(state=TransactionState.DEAD))])

    # --- Describe / List ----------------------------------------------------------------------

    def describe(self, transactional_id: str) -> TransactionMetadata | ErrorCode:
        if self.id_error(transactional_id) is not ErrorCode.NONE:
            return ErrorCode.INVALID_REQUEST
        meta = self.transactions.get(transactional_id)
        if meta is None or meta.state is TransactionState.DEAD:
            return ErrorCode.TRANSACTIONAL_ID_NOT_FOUND
        return meta

    def list_transactions(
        self,
        *,
        producer_ids: Iterable[int] = (),
        states: Iterable[str] = (),
        duration_ms: int = -1,
        pattern: str | None = None,
        now_ms: int,
    ) -> tuple[list[TransactionMetadata], list[str]]:
        """``listTransactionStates``: the matching transactions and the unknown state filters.

        Raises ``re.error`` for a bad ``pattern`` (ListTransactions v2's regular expression).
        """
        pids = set(producer_ids)
        names = list(states)
        known = {s for n in names if (s := TransactionState.from_name(n)) is not None}
        unknown = [n for n in names if TransactionState.from_name(n) is None]
        regex = re.compile(pattern) if pattern else None
        out = []
        for meta in self.transactions.values():
            if meta.state is TransactionState.DEAD:
                continue
            if pids and meta.producer_id not in pids:
                continue
            if names and meta.state not in known:
                continue
            if duration_ms >= 0 and now_ms - meta.start_ms <= duration_ms:
                continue
            if regex is not None and not regex.fullmatch(meta.transactional_id):
                continue
            out.append(meta)
        return out, unknown


def _rest(outcome: Outcome[None]) -> tuple[list[TxnRecord], str | None]:
    """The records and markers of a step, for the outcome of the operation that made it."""
    return outcome.records, outcome.markers


def _valid_producer_id(meta: TransactionMetadata, expected: tuple[int, int]) -> bool:
    pid, epoch = expected
    return (
        meta.producer_epoch == NO_PRODUCER_EPOCH
        or pid == meta.producer_id
        or (pid == meta.previous_producer_id and is_epoch_exhausted(epoch))
    )


def _retry_after_rotation(meta: TransactionMetadata, producer_id: int) -> bool:
    """A TV2 EndTxn retried after its epoch bump rotated the producer id."""
    return (
        producer_id == meta.previous_producer_id
        and meta.producer_epoch == 0
        and meta.state in _COMPLETE
    )


def _increment_epoch(
    meta: TransactionMetadata, expected_epoch: int | None
) -> tuple[int, int] | ErrorCode:
    """``prepareIncrementProducerEpoch``: (next epoch, last epoch), or PRODUCER_FENCED."""
    bumped = meta.producer_epoch + 1
    if expected_epoch is None:
        return bumped, NO_PRODUCER_EPOCH
    if meta.producer_epoch == NO_PRODUCER_EPOCH or expected_epoch == meta.producer_epoch:
        return bumped, meta.producer_epoch
    if expected_epoch == meta.last_producer_epoch:
        return meta.producer_epoch, meta.last_producer_epoch  # a retry of a successful bump
    return ErrorCode.PRODUCER_FENCED
