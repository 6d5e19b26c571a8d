"""The transaction coordinator: the shard's records appended and replayed, and the markers.

Approach, in the shape of the group coordinator (``group/_runtime.py``; Kafka's
``CoordinatorRuntime``) over Kafka 4.x's ``TransactionStateManager`` / ``TransactionLog``:

- ``_txn_shard.TransactionShard`` decides (sans-IO): each operation returns its answer and the
  ``__transaction_state`` records to append (``_txn_records``: ``TransactionLogKey`` and
  ``TransactionLogValue``, v1 with its tagged fields once ``transaction.version`` 2 is finalized,
  v0 before; a tombstone for an expired id);
- ``TransactionCoordinator`` is the one runtime: it appends each record as a batch to the id's
  partition of the log (``BrokerTransactionLog``, or ``MemoryTransactionLog`` for property tests:
  there is no mode without one), then replays it into the shard; a failed append changes nothing
  and is answered as Kafka's ``appendTransactionToLog`` does (NOT_COORDINATOR when the log dir is
  offline, else COORDINATOR_NOT_AVAILABLE). ``load`` at start is the same replay over the log;
- between the Prepare and the Complete records it writes the transaction markers itself (this
  node leads every partition): a COMMIT/ABORT control batch with the coordinator epoch into every
  partition of the transaction (``AppendOrigin.COORDINATOR``), then tells the group coordinator
  (``complete_txn``, Kafka's ``onTransactionCompleted``). Kafka answers the client after the
  Prepare write and sends the markers afterwards; the client cannot tell the difference, except
  that an InitProducerId that fences an ongoing transaction still answers CONCURRENT_TRANSACTIONS
  (as Kafka does) although the abort is already complete. Transactions found prepared when the
  log is loaded get their markers written again and are completed, as Kafka does on loading;
- the coordinator is driven by requests and ``now_ms``: the handlers in ``_txn_apis`` call it,
  and a broker ticker calls ``tick(now_ms)`` for the timers (aborting timed-out transactions,
  expiring idle transactional ids).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Final, Protocol, TypeVar

from kwire.broker._coordinator_log import CoordinatorTopic, MemoryCoordinatorTopic
from kwire.broker._state import BrokerError, BrokerState, Partition, partition_for
from kwire.broker._txn_records import (
    TopicPartition,
    TransactionMetadata,
    TxnRecord,
)
from kwire.broker._txn_shard import InitResult, Outcome, TransactionShard, is_epoch_exhausted
from kwire.errors import KwireError
from kwire.log import LogError
from kwire.log.internal_topics import CONSUMER_OFFSETS, TRANSACTION_STATE, TransactionState
from kwire.log.storage import KafkaStorageError, ProducerStateError
from kwire.protocol import ErrorCode
from kwire.records import AppendError, Batch, build_batch, build_end_txn_marker

__all__ = [
    "GROUP_TOPIC",
    "TRANSACTION_TOPIC",
    "BrokerTransactionLog",
    "InitResult",
    "MemoryTransactionLog",
    "TopicPartition",
    "TransactionCoordinator",
    "TransactionLog",
    "TransactionMetadata",
    "TransactionState",
    "coordinator_for",
    "is_epoch_exhausted",
]

log = logging.getLogger("kwire.broker")

TRANSACTION_TOPIC: Final = TRANSACTION_STATE
GROUP_TOPIC: Final = CONSUMER_OFFSETS

#: Broker settings (Kafka's names and defaults) kwire's config table may not know.
DEFAULTS: Final[Mapping[str, int]] = {
    "transaction.max.timeout.ms": 900_000,
    "transaction.state.log.num.partitions": 50,
    "transaction.state.log.segment.bytes": 104_857_600,
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": 10_000,
    "transactional.id.expiration.ms": 604_800_000,
    "transaction.remove.expired.transaction.cleanup.interval.ms": 3_600_000,
    "offsets.topic.num.partitions": 50,
}
TRANSACTION_VERSION: Final = "transaction.version"

T = TypeVar("T")


class _Failed(Exception):
    """A record could not be appended; answer with ``error``."""

    def __init__(self, error: ErrorCode) -> None:
        super().__init__(error.name)
        self.error = error


def broker_setting(state: BrokerState, name: str) -> int:
    """A broker setting by Kafka's name: the broker's config table, else the static config."""
    try:
        value = state.broker_config(name)
    except KeyError:
        value = state.static_config.get(name)
    return DEFAULTS[name] if value is None else int(value)


# --- where the records go ---------------------------------------------------------------------


class TransactionLog(Protocol):
    """The partitions of ``__transaction_state``."""

    def num_partitions(self) -> int: ...

    def append(self, transactional_id: str, record: TxnRecord, now_ms: int) -> None: ...

    def partitions(self) -> Iterable[Iterable[Batch]]: ...


class BrokerTransactionLog(CoordinatorTopic):
    """The broker's ``__transaction_state`` topic, created (compacted) on first use."""

    def __init__(self, state: BrokerState) -> None:
        super().__init__(
            state,
            TRANSACTION_TOPIC,
            lambda: broker_setting(state, "transaction.state.log.num.partitions"),
            lambda: _transaction_topic_configs(state),
        )

    def append(self, transactional_id: str, record: TxnRecord, now_ms: int) -> None:
        self.append_batch(transactional_id, _record_batch(record, now_ms), now_ms)


def _transaction_topic_configs(state: BrokerState) -> dict[str, str]:
    """``TransactionStateManager.transactionTopicConfigs``."""
    return {
        "cleanup.policy": "compact",
        "compression.type": "uncompressed",
        "unclean.leader.election.enable": "false",
        "segment.bytes": str(broker_setting(state, "transaction.state.log.segment.bytes")),
    }


def _record_batch(record: TxnRecord, now_ms: int) -> bytes:
    return build_batch([(0, now_ms, record.key, record.value)], 2)


class MemoryTransactionLog(MemoryCoordinatorTopic):
    """``__transaction_state`` in memory: the batches per partition and every record in order
    (with what Kafka keeps beside it, for the property tests' replay)."""

    def __init__(self, num_partitions: int = 50) -> None:
        super().__init__(num_partitions)
        self.records: list[TxnRecord] = []

    def append(self, transactional_id: str, record: TxnRecord, now_ms: int) -> None:
        self.append_batch(transactional_id, _record_batch(record, now_ms), now_ms)
        self.records.append(record)


# --- the runtime --------------------------------------------------------------------------------


class TransactionCoordinator:
    """The transaction coordinator of one broker (see the module doc).

    Without a broker ``state`` (property tests) the records go to the ``log`` given (or a
    ``MemoryTransactionLog``) and no markers are written; every other path is the broker's."""

    def __init__(
        self,
        state: BrokerState | None,
        *,
        log: TransactionLog | None = None,
        allocate_producer_id: Callable[[], int] | None = None,
        transaction_version: Callable[[], int] | None = None,
        now_ms: int = 0,
    ) -> None:
        self.state = state

        def setting(name: str) -> int:
            return DEFAULTS[name] if state is None else broker_setting(state, name)

        if log is None:
            log = BrokerTransactionLog(state) if state is not None else MemoryTransactionLog()
        self.log = log
        if allocate_producer_id is None:
            assert state is not None, "a producer id source is needed without a broker"
            allocate_producer_id = state.allocate_producer_id
        if transaction_version is None:
            assert state is not None, "a transaction.version is needed without a broker"
            broker = state

            def transaction_version() -> int:
                return broker.feature_level(TRANSACTION_VERSION)

        version = transaction_version
        self.shard = TransactionShard(
            allocate_producer_id=allocate_producer_id,
            # TransactionLog.valueToBytes: v1 with TransactionVersion 2, else v0
            value_version=lambda: 1 if version() >= 2 else 0,
            max_timeout_ms=setting("transaction.max.timeout.ms"),
            expiration_ms=setting("transactional.id.expiration.ms"),
        )
        self.abort_interval_ms = setting(
            "transaction.abort.timed.out.transaction.cleanup.interval.ms"
        )
        self.expire_interval_ms = setting(
            "transaction.remove.expired.transaction.cleanup.interval.ms"
        )
        now = state.now_ms() if state is not None else now_ms
        #: the time without a broker clock (a load's completions are stamped with it)
        self._started_ms = now
        self._next_abort_check = now + self.abort_interval_ms
        self._next_expire_check = now + self.expire_interval_ms

    @property
    def transactions(self) -> dict[str, TransactionMetadata]:
        """The shard's state: every live transactional id."""
        return self.shard.transactions

    @property
    def max_timeout_ms(self) -> int:
        return self.shard.max_timeout_ms

    @property
    def expiration_ms(self) -> int:
        return self.shard.expiration_ms

    # --- the transaction log ------------------------------------------------------------------

    @property
    def num_partitions(self) -> int:
        return self.log.num_partitions()

    def partition_for(self, transactional_id: str) -> int:
        return partition_for(transactional_id, self.num_partitions)

    def _log_partition(self, transactional_id: str) -> Partition:
        """The ``__transaction_state`` partition of an id, the topic created on first use."""
        assert isinstance(self.log, BrokerTransactionLog)
        return self.log.partition(transactional_id)

    def coordinator_epoch(self, transactional_id: str) -> int:
        """The leader epoch of the id's ``__transaction_state`` partition (Kafka's coordinator
        epoch, written in every marker)."""
        if not isinstance(self.log, BrokerTransactionLog):
            return 0
        return self.log.partition(transactional_id).leader_epoch

    def _write(self, transactional_id: str, record: TxnRecord, now_ms: int) -> None:
        """Append one record, then replay it; ``_Failed`` (nothing changed) if the append fails."""
        try:
            self.log.append(transactional_id, record, now_ms)
        except KafkaStorageError as exc:
            # TransactionStateManager.appendTransactionToLog: the log dir is offline
            log.warning("could not write the state of %s: %s", transactional_id, exc)
            raise _Failed(ErrorCode.NOT_COORDINATOR) from None
        except (BrokerError, KwireError, LogError, ProducerStateError, AppendError) as exc:
            log.warning("could not write the state of %s: %s", transactional_id, exc)
            raise _Failed(ErrorCode.COORDINATOR_NOT_AVAILABLE) from None
        self.shard.replay(record.key, record.value, record.transit)

    def _run(self, transactional_id: str, outcome: Outcome[T], now_ms: int) -> T:
        """An operation's records written and replayed, then (when it prepared a transaction)
        its markers and its Complete record; raises ``_Failed``."""
        for record in outcome.records:
            self._write(transactional_id, record, now_ms)
        if outcome.markers is not None:
            self._complete(outcome.markers, now_ms)
        return outcome.result

    def _apply(self, meta: TransactionMetadata, now_ms: int) -> TransactionMetadata:
        """Write the record of a state as an operation would (tests stage a crash with it)."""
        self._write(meta.transactional_id, self.shard.record(meta), now_ms)
        return meta

    def load(self) -> None:
        """Replay ``__transaction_state`` (Kafka's ``loadTransactionsForTxnTopicPartition``),
        then complete the transactions found prepared."""
        self.shard.transactions.clear()
        for batches in self.log.partitions():
            for batch in batches:
                if batch.is_control:
                    continue
                for record in batch:
                    if record.key is None:
                        continue
                    value = None if record.value is None else bytes(record.value)
                    self.shard.replay(bytes(record.key), value)
        now = self.state.now_ms() if self.state is not None else self._started_ms
        for txn_id in self.shard.prepared():
            try:
                self._complete(txn_id, now)
            except _Failed as exc:
                log.warning("could not complete %s: %s", txn_id, exc)

    # --- the operations, as the handlers call them ---------------------------------------------

    def init_producer_id(
        self,
        transactional_id: str,
        timeout_ms: int,
        expected: tuple[int, int] | None,
        now_ms: int,
    ) -> InitResult:
        """``handleInitProducerId`` for a transactional id (``expected``: KIP-360's id and epoch)."""
        outcome = self.shard.init_producer_id(transactional_id, timeout_ms, expected, now_ms)
        try:
            result = self._run(transactional_id, outcome, now_ms)
        except _Failed as exc:
            return InitResult(exc.error)
        if result.error is ErrorCode.NONE:
            log.info(
                "initialized transactional id %s with producer id %d epoch %d",
                transactional_id,
                result.producer_id,
                result.producer_epoch,
            )
        return result

    def add_partitions(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Iterable[TopicPartition],
        now_ms: int,
    ) -> ErrorCode:
        """``handleAddPartitionsToTransaction``: the transaction becomes (or stays) Ongoing."""
        outcome = self.shard.add_partitions(
            transactional_id, producer_id, producer_epoch, partitions, now_ms
        )
        try:
            return self._run(transactional_id, outcome, now_ms)
        except _Failed as exc:
            return exc.error

    def verify_partitions(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Iterable[TopicPartition],
    ) -> dict[TopicPartition, ErrorCode]:
        """AddPartitionsToTxn v4+ with ``verify_only`` (the shard's ``verify_partitions``)."""
        return self.shard.verify_partitions(
            transactional_id, producer_id, producer_epoch, partitions
        )

    def end_txn(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        now_ms: int,
        *,
        epoch_bump: bool = False,
    ) -> InitResult:
        """``handleEndTransaction`` from a client; ``epoch_bump``: the client uses transaction
        version 2 (EndTxn v5 with ``transaction.version`` 2 finalized)."""
        outcome = self.shard.end_txn(
            transactional_id, producer_id, producer_epoch, commit, now_ms, epoch_bump=epoch_bump
        )
        try:
            return self._run(transactional_id, outcome, now_ms)
        except _Failed as exc:
            return InitResult(exc.error)

    def describe(self, transactional_id: str) -> TransactionMetadata | ErrorCode:
        return self.shard.describe(transactional_id)

    def list_transactions(
        self,
        *,
        producer_ids: Iterable[int] = (),
        states: Iterable[str] = (),
        duration_ms: int = -1,
        pattern: str | None = None,
        now_ms: int,
    ) -> tuple[list[TransactionMetadata], list[str]]:
        """``listTransactionStates`` (the shard's ``list_transactions``)."""
        return self.shard.list_transactions(
            producer_ids=producer_ids,
            states=states,
            duration_ms=duration_ms,
            pattern=pattern,
            now_ms=now_ms,
        )

    def group_partition(self, group_id: str) -> TopicPartition:
        """The ``__consumer_offsets`` partition of a group (``GroupCoordinator.partitionFor``)."""
        assert self.state is not None
        group = self.state.services.group
        partition_of = getattr(group, "partition_for", None)
        if callable(partition_of):
            return GROUP_TOPIC, int(partition_of(group_id))
        topic = self.state.topic(GROUP_TOPIC)
        count = (
            len(topic.partitions)
            if topic is not None
            else broker_setting(self.state, "offsets.topic.num.partitions")
        )
        return GROUP_TOPIC, partition_for(group_id, count)

    # --- the markers --------------------------------------------------------------------------

    def _complete(self, transactional_id: str, now_ms: int) -> None:
        """The markers of a prepared transaction, its Complete record, the group coordinator
        told; raises ``_Failed``."""
        prepared = self.shard.transactions.get(transactional_id)
        if prepared is None or prepared.state not in (
            TransactionState.PREPARE_COMMIT,
            TransactionState.PREPARE_ABORT,
        ):
            return
        commit = prepared.state is TransactionState.PREPARE_COMMIT
        self._write_markers(prepared, commit, now_ms)
        self._run(transactional_id, self.shard.complete(transactional_id, now_ms), now_ms)
        if self.state is not None:
            group = self.state.services.group
            complete_txn: Callable[[int, bool], object] | None = getattr(
                group, "complete_txn", None
            )
            if complete_txn is not None:
                complete_txn(prepared.producer_id, commit)
        log.info(
            "%s transaction of %s (producer id %d epoch %d)",
            "committed" if commit else "aborted",
            transactional_id,
            prepared.producer_id,
            prepared.producer_epoch,
        )

    def _write_markers(self, meta: TransactionMetadata, commit: bool, now_ms: int) -> None:
        """``TransactionMarkerChannelManager`` for one node: a marker batch per partition."""
        state = self.state
        if state is None:
            return
        coordinator_epoch = self.coordinator_epoch(meta.transactional_id)
        for topic, index in sorted(meta.partitions):
            partition = state.partition(topic, index)
            if partition is None:
                continue  # deleted since: Kafka drops the markers of unknown partitions too
            if topic == GROUP_TOPIC and not _has_open_txn(partition, meta.producer_id):
                # Only what the group coordinator wrote transactionally needs a marker here;
                # its pending offsets are settled by complete_txn.
                continue
            marker = build_end_txn_marker(
                commit,
                coordinator_epoch=coordinator_epoch,
                producer_id=meta.producer_id,
                producer_epoch=meta.producer_epoch,
                timestamp=now_ms,
                partition_leader_epoch=partition.leader_epoch,
            )
            try:
                state.append_as_coordinator(partition, marker, now_ms)
            except (KwireError, LogError, ProducerStateError, AppendError) as exc:
                # Kafka gives up on a partition that fences the marker (a newer epoch wrote
                # there); nothing else can fail on a single node.
                log.warning("transaction marker to %s-%d failed: %s", topic, index, exc)

    # --- timers -------------------------------------------------------------------------------

    def tick(self, now_ms: int) -> None:
        """The coordinator's scheduled tasks (a broker ticker calls this every 100 ms)."""
        if now_ms >= self._next_abort_check:
            self._next_abort_check = now_ms + self.abort_interval_ms
            self.abort_timed_out(now_ms)
        if now_ms >= self._next_expire_check:
            self._next_expire_check = now_ms + self.expire_interval_ms
            self.expire_transactional_ids(now_ms)

    def abort_timed_out(self, now_ms: int) -> list[str]:
        """``abortTimedOutTransactions``: fence and abort every Ongoing transaction whose
        ``start + timeout`` has passed; the transactional ids aborted."""
        aborted = []
        for txn_id in self.shard.timed_out(now_ms):
            meta = self.shard.transactions[txn_id]
            try:
                self._run(txn_id, self.shard.fence_and_abort(meta, now_ms), now_ms)
            except _Failed as exc:
                log.warning("could not abort %s: %s", txn_id, exc)
                continue
            log.info("aborted timed-out transaction of %s", txn_id)
            aborted.append(txn_id)
        return aborted

    def expire_transactional_ids(self, now_ms: int) -> list[str]:
        """``removeExpiredTransactionalIds``: ids idle for ``transactional.id.expiration.ms``
        (Empty or complete) become Dead and are tombstoned."""
        expired = []
        for txn_id in self.shard.expired(now_ms):
            try:
                self._run(txn_id, self.shard.expire(txn_id), now_ms)
            except _Failed:
                continue
            expired.append(txn_id)
        return expired


def coordinator_for(state: BrokerState) -> TransactionCoordinator:
    """The broker's transaction coordinator, started (loaded, its ticker added) on first use."""
    found = state.services.transaction
    if found is not None:
        return found
    coordinator = TransactionCoordinator(state)
    coordinator.load()
    state.services.transaction = coordinator
    state.add_ticker(coordinator.tick)
    return coordinator


def _has_open_txn(partition: Partition, producer_id: int) -> bool:
    entry = partition.log.producer_state().get(producer_id)
    return entry is not None and entry.current_txn_first_offset is not None
