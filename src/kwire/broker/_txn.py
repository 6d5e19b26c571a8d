"""The transaction coordinator: Kafka's transaction state machine, its log and its markers.

Approach, after Kafka 3.9's ``TransactionCoordinator``, ``TransactionMetadata``,
``TransactionStateManager`` and ``TransactionMarkerChannelManager`` (franz-go's ``kfake/txns.go``
for the compact shape):

- one ``TransactionMetadata`` per transactional id, in Kafka's states (Empty, Ongoing,
  PrepareCommit, PrepareAbort, CompleteCommit, CompleteAbort, Dead, PrepareEpochFence). Every
  change is *prepared* on a copy, written to ``__transaction_state`` as Kafka writes it
  (``TransactionLogKey``/``TransactionLogValue``, version-prefixed, value version 0), and only
  then applied, so a failed write changes nothing;
- the coordinator is driven by requests and ``now_ms`` (no clock of its own, no sockets): the
  handlers in ``_txn_apis`` call it, and a broker ticker calls ``tick(now_ms)`` for the timers
  (aborting timed-out transactions, expiring idle transactional ids);
- this broker is a single node, so the transaction markers are written synchronously: EndTxn
  writes PrepareCommit/PrepareAbort, appends a COMMIT/ABORT control batch (with the coordinator
  epoch) to every partition of the transaction (``AppendOrigin.COORDINATOR``), moves their high
  watermarks, then writes CompleteCommit/CompleteAbort. Kafka answers the client after the
  Prepare write and sends the markers afterwards; the client cannot tell the difference, except
  that an InitProducerId that fences an ongoing transaction still answers CONCURRENT_TRANSACTIONS
  (as Kafka does) although the abort is already complete;
- after the markers the group coordinator (``state.services.group``), when there is one, is
  told with ``complete_txn(producer_id, commit)`` so transactional offset commits become visible
  or are dropped (Kafka's ``GroupCoordinator.onTransactionCompleted``);
- the state is loaded back from ``__transaction_state`` when the coordinator starts (the first
  transactional request after a broker start); transactions found in PrepareCommit/PrepareAbort
  get their markers written again and are completed, as Kafka does on loading.

Transaction version 2 (KIP-890 part 2; ``transaction.version`` finalized at 2, Kafka 4.x's
default on a new cluster): a client that ends its transaction with EndTxn v5 gets the producer
epoch bumped on every commit or abort (``TransactionMetadata.prepareAbortOrCommit`` with a
client ``TransactionVersion`` that ``supportsEpochBump``): the Prepare record already carries the
bumped epoch, the markers are written with it (so the partitions' producer state moves to it and
a late write of the old epoch is refused as INVALID_PRODUCER_EPOCH), and the answer carries the
new producer id and epoch. A retry of that EndTxn (the epoch one below, the transaction complete)
is answered with the current id and epoch. An exhausted epoch (``Short.MaxValue - 1``) is
bumped once more for the markers, then the producer id rotates (Kafka writes the next id in the
Prepare record's tagged ``NextProducerId``; kwire writes value version 0, so it is one more
CompleteX record with the new id). In TV2 an abort is allowed with no transaction open (Empty or complete): it only bumps the
epoch. Produce v12+ of a transactional batch adds its partition to the transaction itself
(``AddPartitionsToTxnManager`` in add mode, ``_txn_apis.add_partition_for_produce``). Clients
that use EndTxn v4 or older (Kafka's Java producer 3.9, TV1) keep the epoch: TV1 rules.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final, NamedTuple

from kwire.broker._state import BrokerError, BrokerState, Partition, partition_for
from kwire.errors import KwireError
from kwire.log import LogError
from kwire.log.internal_topics import (
    CONSUMER_OFFSETS,
    TRANSACTION_STATE,
    TransactionState,
    read_version,
    versioned,
)
from kwire.log.storage import KafkaStorageError, ProducerStateError
from kwire.protocol import ErrorCode
from kwire.records import AppendError, build_batch, build_end_txn_marker

__all__ = [
    "GROUP_TOPIC",
    "TRANSACTION_TOPIC",
    "InitResult",
    "TransactionCoordinator",
    "TransactionMetadata",
    "TransactionState",
    "coordinator_for",
]

log = logging.getLogger("kwire.broker")

TRANSACTION_TOPIC: Final = TRANSACTION_STATE
GROUP_TOPIC: Final = CONSUMER_OFFSETS
NO_PRODUCER_ID: Final = -1
NO_PRODUCER_EPOCH: Final = -1
SHORT_MAX: Final = 2**15 - 1
LOG_KEY_VERSION: Final = 0
#: Value version 0 is what Kafka writes until transaction.version 2 is finalized.
LOG_VALUE_VERSION: Final = 0

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


_COMPLETE: Final = (TransactionState.COMPLETE_COMMIT, TransactionState.COMPLETE_ABORT)
_PREPARE: Final = (TransactionState.PREPARE_COMMIT, TransactionState.PREPARE_ABORT)

TopicPartition = tuple[str, int]


def is_epoch_exhausted(epoch: int) -> bool:
    """Kafka never hands out ``Short.MaxValue`` so a fence is always possible."""
    return epoch >= SHORT_MAX - 1


@dataclasses.dataclass
class TransactionMetadata:
    """Kafka's ``TransactionMetadata`` of one transactional id."""

    transactional_id: str
    producer_id: int
    producer_epoch: int = NO_PRODUCER_EPOCH
    last_producer_epoch: int = NO_PRODUCER_EPOCH
    previous_producer_id: int = NO_PRODUCER_ID
    timeout_ms: int = 60_000
    state: TransactionState = TransactionState.EMPTY
    partitions: frozenset[TopicPartition] = frozenset()
    start_ms: int = -1
    last_update_ms: int = -1

    def transit(self, **changes: Any) -> TransactionMetadata:
        """A prepared next state (Kafka's ``TxnTransitMetadata``), applied once it is written."""
        return dataclasses.replace(self, **changes)


class InitResult(NamedTuple):
    error: ErrorCode
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH


class _Failed(Exception):
    """A prepared change could not be applied; answer with ``error``."""

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


class TransactionCoordinator:
    """The transaction coordinator of one broker (see the module doc)."""

    def __init__(self, state: BrokerState) -> None:
        self.state = state
        self.transactions: dict[str, TransactionMetadata] = {}
        self.max_timeout_ms = broker_setting(state, "transaction.max.timeout.ms")
        self.abort_interval_ms = broker_setting(
            state, "transaction.abort.timed.out.transaction.cleanup.interval.ms"
        )
        self.expiration_ms = broker_setting(state, "transactional.id.expiration.ms")
        self.expire_interval_ms = broker_setting(
            state, "transaction.remove.expired.transaction.cleanup.interval.ms"
        )
        now = state.now_ms()
        self._next_abort_check = now + self.abort_interval_ms
        self._next_expire_check = now + self.expire_interval_ms

    # --- the transaction log ------------------------------------------------------------------

    @property
    def num_partitions(self) -> int:
        topic = self.state.topic(TRANSACTION_TOPIC)
        if topic is not None:
            return len(topic.partitions)
        return broker_setting(self.state, "transaction.state.log.num.partitions")

    def partition_for(self, transactional_id: str) -> int:
        return partition_for(transactional_id, self.num_partitions)

    def _log_partition(self, transactional_id: str) -> Partition:
        """The ``__transaction_state`` partition of an id, the topic created on first use."""
        if self.state.topic(TRANSACTION_TOPIC) is None:
            segment = broker_setting(self.state, "transaction.state.log.segment.bytes")
            # TransactionStateManager.transactionTopicConfigs
            self.state.create_topic(
                TRANSACTION_TOPIC,
                broker_setting(self.state, "transaction.state.log.num.partitions"),
                {
                    "cleanup.policy": "compact",
                    "compression.type": "uncompressed",
                    "unclean.leader.election.enable": "false",
                    "segment.bytes": str(segment),
                },
            )
        found = self.state.partition(TRANSACTION_TOPIC, self.partition_for(transactional_id))
        assert found is not None
        return found

    def coordinator_epoch(self, transactional_id: str) -> int:
        """The leader epoch of the id's ``__transaction_state`` partition (Kafka's coordinator
        epoch, written in every marker)."""
        return self._log_partition(transactional_id).leader_epoch

    def _write(self, meta: TransactionMetadata, now_ms: int) -> None:
        """Append ``meta`` (a tombstone for Dead) to the transaction log; ``_Failed`` if not."""
        from kwire.protocol import message_class

        key_cls = message_class("TransactionLogKey")
        value_cls = message_class("TransactionLogValue")
        key = versioned(key_cls(transactional_id=meta.transactional_id), LOG_KEY_VERSION)
        value: bytes | None = None
        if meta.state is not TransactionState.DEAD:
            value = versioned(
                value_cls(
                    producer_id=meta.producer_id,
                    producer_epoch=meta.producer_epoch,
                    transaction_timeout_ms=meta.timeout_ms,
                    transaction_status=int(meta.state),
                    transaction_partitions=_partitions_schema(value_cls, meta),
                    transaction_last_update_timestamp_ms=meta.last_update_ms,
                    transaction_start_timestamp_ms=meta.start_ms,
                ),
                LOG_VALUE_VERSION,
            )
        try:
            partition = self._log_partition(meta.transactional_id)
            records = build_batch([(0, now_ms, key, value)], 2)
            _append(self.state, partition, records, now_ms)
        except KafkaStorageError as exc:
            # TransactionStateManager.appendTransactionToLog: the log dir is offline
            log.warning("could not write the state of %s: %s", meta.transactional_id, exc)
            raise _Failed(ErrorCode.NOT_COORDINATOR) from None
        except (BrokerError, KwireError, LogError, ProducerStateError, AppendError) as exc:
            log.warning("could not write the state of %s: %s", meta.transactional_id, exc)
            raise _Failed(ErrorCode.COORDINATOR_NOT_AVAILABLE) from None

    def _apply(self, meta: TransactionMetadata, now_ms: int) -> TransactionMetadata:
        """Write a prepared state, then make it the current one."""
        self._write(meta, now_ms)
        if meta.state is TransactionState.DEAD:
            self.transactions.pop(meta.transactional_id, None)
        else:
            self.transactions[meta.transactional_id] = meta
        return meta

    def load(self) -> None:
        """Read ``__transaction_state`` back (Kafka's ``loadTransactionsForTxnTopicPartition``)."""
        from kwire.protocol import message_class

        topic = self.state.topic(TRANSACTION_TOPIC)
        if topic is None:
            return
        key_cls = message_class("TransactionLogKey")
        value_cls = message_class("TransactionLogValue")
        loaded: dict[str, TransactionMetadata] = {}
        for partition in topic.partitions:
            for key, value in _read_records(partition):
                if key is None or len(key) < 2:
                    continue
                version, body = read_version(key)
                if version != LOG_KEY_VERSION:
                    continue  # Kafka skips unknown key versions too
                txn_id = key_cls.decode(body, version).transactional_id
                if value is None:
                    loaded.pop(txn_id, None)
                    continue
                meta = _decode_value(value_cls, txn_id, value)
                if meta is not None:
                    loaded[txn_id] = meta
        self.transactions = {k: v for k, v in loaded.items() if v.state != TransactionState.DEAD}
        now = self.state.now_ms()
        for meta in list(self.transactions.values()):
            if meta.state in _PREPARE:
                try:
                    self._complete(meta, now)
                except _Failed as exc:
                    log.warning("could not complete %s: %s", meta.transactional_id, exc)

    # --- InitProducerId -----------------------------------------------------------------------

    def init_producer_id(
        self,
        transactional_id: str,
        timeout_ms: int,
        expected: tuple[int, int] | None,
        now_ms: int,
    ) -> InitResult:
        """``handleInitProducerId`` for a transactional id (``expected``: KIP-360's id and epoch)."""
        if not transactional_id:
            return InitResult(ErrorCode.INVALID_REQUEST)
        if not 0 < timeout_ms <= self.max_timeout_ms:
            return InitResult(ErrorCode.INVALID_TRANSACTION_TIMEOUT)
        meta = self.transactions.get(transactional_id)
        if meta is None:
            meta = TransactionMetadata(
                transactional_id,
                self.state.allocate_producer_id(),
                timeout_ms=timeout_ms,
                last_update_ms=now_ms,
            )
            # Kafka keeps the new metadata in its cache before writing (putTransactionStateIfNotExists)
            self.transactions[transactional_id] = meta
        if expected is not None and not self._valid_producer_id(meta, expected):
            return InitResult(ErrorCode.PRODUCER_FENCED)
        state = meta.state
        if state in _PREPARE:
            return InitResult(ErrorCode.CONCURRENT_TRANSACTIONS)
        try:
            if state is TransactionState.ONGOING:
                # Fence the current producer and abort its transaction; the client retries and
                # gets the epoch bumped a second time (TransactionCoordinator, case Ongoing).
                self._fence_and_abort(meta, now_ms)
                return InitResult(ErrorCode.CONCURRENT_TRANSACTIONS)
            if state not in (TransactionState.EMPTY, *_COMPLETE):
                raise AssertionError(f"{transactional_id} found in state {state.kafka_name}")
            if is_epoch_exhausted(meta.producer_epoch) and (
                expected is None or expected[1] == meta.producer_epoch
            ):
                nxt = meta.transit(
                    producer_id=self.state.allocate_producer_id(),
                    previous_producer_id=meta.producer_id,
                    producer_epoch=0,
                    last_producer_epoch=meta.producer_epoch if expected else NO_PRODUCER_EPOCH,
                )
            else:
                epochs = _increment_epoch(meta, None if expected is None else expected[1])
                if isinstance(epochs, ErrorCode):
                    return InitResult(epochs)
                nxt = meta.transit(producer_epoch=epochs[0], last_producer_epoch=epochs[1])
            nxt = nxt.transit(
                state=TransactionState.EMPTY,
                timeout_ms=timeout_ms,
                partitions=frozenset(),
                start_ms=-1,
                last_update_ms=now_ms,
            )
            self._apply(nxt, now_ms)
        except _Failed as exc:
            return InitResult(exc.error)
        log.info(
            "initialized transactional id %s with producer id %d epoch %d",
            transactional_id,
            nxt.producer_id,
            nxt.producer_epoch,
        )
        return InitResult(ErrorCode.NONE, nxt.producer_id, nxt.producer_epoch)

    @staticmethod
    def _valid_producer_id(meta: TransactionMetadata, expected: tuple[int, int]) -> bool:
        pid, epoch = expected
        return (
            meta.producer_epoch == NO_PRODUCER_EPOCH
            or pid == meta.producer_id
            or (pid == meta.previous_producer_id and is_epoch_exhausted(epoch))
        )

    def _fence_and_abort(self, meta: TransactionMetadata, now_ms: int) -> None:
        """PrepareEpochFence then PrepareAbort with the bumped epoch, markers, CompleteAbort."""
        if meta.producer_epoch >= SHORT_MAX:
            raise AssertionError(f"cannot fence producer {meta.producer_id} at epoch {SHORT_MAX}")
        fenced = meta.transit(
            producer_epoch=meta.producer_epoch + 1, last_producer_epoch=NO_PRODUCER_EPOCH
        )
        self._end(fenced, commit=False, now_ms=now_ms)

    # --- AddPartitionsToTxn / AddOffsetsToTxn -------------------------------------------------

    def _check_producer(
        self, transactional_id: str, producer_id: int, producer_epoch: int
    ) -> TransactionMetadata | ErrorCode:
        if not transactional_id:
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
    ) -> ErrorCode:
        """``handleAddPartitionsToTransaction``: the transaction becomes (or stays) Ongoing."""
        found = self._check_producer(transactional_id, producer_id, producer_epoch)
        if isinstance(found, ErrorCode):
            return found
        meta = found
        added = frozenset(partitions)
        if meta.state in _PREPARE:
            return ErrorCode.CONCURRENT_TRANSACTIONS
        if meta.state is TransactionState.ONGOING and added <= meta.partitions:
            return ErrorCode.NONE
        start = now_ms if meta.state in (TransactionState.EMPTY, *_COMPLETE) else meta.start_ms
        try:
            self._apply(
                meta.transit(
                    state=TransactionState.ONGOING,
                    partitions=meta.partitions | added,
                    start_ms=start,
                    last_update_ms=now_ms,
                ),
                now_ms,
            )
        except _Failed as exc:
            return exc.error
        return ErrorCode.NONE

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

    def group_partition(self, group_id: str) -> TopicPartition:
        """The ``__consumer_offsets`` partition of a group (``GroupCoordinator.partitionFor``)."""
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
    ) -> InitResult:
        """``handleEndTransaction`` from a client; ``epoch_bump``: the client uses transaction
        version 2 (EndTxn v5 with ``transaction.version`` 2 finalized)."""
        if not transactional_id:
            return InitResult(ErrorCode.INVALID_REQUEST)
        meta = self.transactions.get(transactional_id)
        if meta is None or meta.producer_id != producer_id:
            if epoch_bump and meta is not None and self._retry_after_rotation(meta, producer_id):
                return InitResult(ErrorCode.NONE, meta.producer_id, meta.producer_epoch)
            return InitResult(ErrorCode.INVALID_PRODUCER_ID_MAPPING)
        if epoch_bump:
            return self._end_txn_v2(meta, producer_epoch, commit, now_ms)
        if producer_epoch != meta.producer_epoch:
            return InitResult(ErrorCode.PRODUCER_FENCED)
        wanted = TransactionState.COMPLETE_COMMIT if commit else TransactionState.COMPLETE_ABORT
        preparing = TransactionState.PREPARE_COMMIT if commit else TransactionState.PREPARE_ABORT
        state = meta.state
        if state is TransactionState.ONGOING:
            try:
                done = self._end(meta, commit=commit, now_ms=now_ms)
            except _Failed as exc:
                return InitResult(exc.error)
            return InitResult(ErrorCode.NONE, done.producer_id, done.producer_epoch)
        if state is wanted:  # a retry of a completed EndTxn
            return InitResult(ErrorCode.NONE, meta.producer_id, meta.producer_epoch)
        if state is preparing:
            return InitResult(ErrorCode.CONCURRENT_TRANSACTIONS)
        log.debug(
            "TransactionalId %s's state is %s, but received transaction marker result to send: %s",
            transactional_id,
            state.kafka_name,
            "COMMIT" if commit else "ABORT",
        )
        return InitResult(ErrorCode.INVALID_TXN_STATE)

    @staticmethod
    def _retry_after_rotation(meta: TransactionMetadata, producer_id: int) -> bool:
        """A TV2 EndTxn retried after its epoch bump rotated the producer id."""
        return (
            producer_id == meta.previous_producer_id
            and meta.producer_epoch == 0
            and meta.state in _COMPLETE
        )

    def _end_txn_v2(
        self, meta: TransactionMetadata, producer_epoch: int, commit: bool, now_ms: int
    ) -> InitResult:
        """``handleEndTransaction`` with a client that supports the epoch bump (TV2)."""
        wanted = TransactionState.COMPLETE_COMMIT if commit else TransactionState.COMPLETE_ABORT
        preparing = TransactionState.PREPARE_COMMIT if commit else TransactionState.PREPARE_ABORT
        state = meta.state
        # This EndTxn already bumped the epoch: a retry of it (TransactionCoordinator's
        # retryOnEpochBump).
        retry = producer_epoch == meta.producer_epoch - 1 and state in (wanted, preparing)
        if producer_epoch != meta.producer_epoch and not retry:
            return InitResult(ErrorCode.PRODUCER_FENCED)
        if retry:
            if state is wanted:
                return InitResult(ErrorCode.NONE, meta.producer_id, meta.producer_epoch)
            return InitResult(ErrorCode.CONCURRENT_TRANSACTIONS)
        if state in _PREPARE:
            return InitResult(ErrorCode.CONCURRENT_TRANSACTIONS)
        empty_abort = not commit and state in (TransactionState.EMPTY, *_COMPLETE)
        if state is not TransactionState.ONGOING and not empty_abort:
            return InitResult(ErrorCode.INVALID_TXN_STATE)
        if meta.producer_epoch >= SHORT_MAX:
            return InitResult(ErrorCode.PRODUCER_FENCED)
        # TransactionCoordinator: an exhausted epoch (32766) is still bumped for the markers
        # (32767, never handed out), then the producer id is rotated.
        rotate = is_epoch_exhausted(meta.producer_epoch)
        bumped = meta.transit(
            producer_epoch=meta.producer_epoch + 1, last_producer_epoch=meta.producer_epoch
        )
        try:
            done = self._end(bumped, commit=commit, now_ms=now_ms)
            if rotate:
                done = self._apply(
                    done.transit(
                        producer_id=self.state.allocate_producer_id(),
                        previous_producer_id=done.producer_id,
                        producer_epoch=0,
                        last_producer_epoch=NO_PRODUCER_EPOCH,
                    ),
                    now_ms,
                )
        except _Failed as exc:
            return InitResult(exc.error)
        return InitResult(ErrorCode.NONE, done.producer_id, done.producer_epoch)

    def _end(self, meta: TransactionMetadata, *, commit: bool, now_ms: int) -> TransactionMetadata:
        """Prepare (written), markers, complete (written); raises ``_Failed``."""
        prepared = meta.transit(
            state=TransactionState.PREPARE_COMMIT if commit else TransactionState.PREPARE_ABORT,
            last_update_ms=now_ms,
        )
        self._apply(prepared, now_ms)
        return self._complete(prepared, now_ms)

    def _complete(self, meta: TransactionMetadata, now_ms: int) -> TransactionMetadata:
        commit = meta.state is TransactionState.PREPARE_COMMIT
        self._write_markers(meta, commit, now_ms)
        done = self._apply(
            meta.transit(
                state=TransactionState.COMPLETE_COMMIT
                if commit
                else TransactionState.COMPLETE_ABORT,
                partitions=frozenset(),
                last_update_ms=now_ms,
            ),
            now_ms,
        )
        group = self.state.services.group
        complete_txn: Callable[[int, bool], object] | None = getattr(group, "complete_txn", None)
        if complete_txn is not None:
            complete_txn(meta.producer_id, commit)
        log.info(
            "%s transaction of %s (producer id %d epoch %d)",
            "committed" if commit else "aborted",
            meta.transactional_id,
            meta.producer_id,
            meta.producer_epoch,
        )
        return done

    def _write_markers(self, meta: TransactionMetadata, commit: bool, now_ms: int) -> None:
        """``TransactionMarkerChannelManager`` for one node: a marker batch per partition."""
        coordinator_epoch = self.coordinator_epoch(meta.transactional_id)
        for topic, index in sorted(meta.partitions):
            partition = self.state.partition(topic, index)
            if partition is None:
                continue  # deleted since: Kafka drops the markers of unknown partitions too
            if topic == GROUP_TOPIC and not _has_open_txn(partition, meta.producer_id):
                # Only what the group coordinator wrote transactionally needs a marker here;
                # its pending offsets are settled by complete_txn below.
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
                _append(self.state, partition, marker, now_ms)
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
        for meta in list(self.transactions.values()):
            if meta.state is TransactionState.ONGOING and meta.start_ms + meta.timeout_ms < now_ms:
                try:
                    self._fence_and_abort(meta, now_ms)
                except _Failed as exc:
                    log.warning("could not abort %s: %s", meta.transactional_id, exc)
                    continue
                log.info("aborted timed-out transaction of %s", meta.transactional_id)
                aborted.append(meta.transactional_id)
        return aborted

    def expire_transactional_ids(self, now_ms: int) -> list[str]:
        """``removeExpiredTransactionalIds``: ids idle for ``transactional.id.expiration.ms``
        (Empty or complete) become Dead and are tombstoned."""
        expired = []
        for meta in list(self.transactions.values()):
            idle = meta.state in (TransactionState.EMPTY, *_COMPLETE)
            if idle and meta.last_update_ms + self.expiration_ms <= now_ms:
                try:
                    self._apply(meta.transit(state=TransactionState.DEAD), now_ms)
                except _Failed:
                    continue
                expired.append(meta.transactional_id)
        return expired

    # --- Describe / List ----------------------------------------------------------------------

    def describe(self, transactional_id: str) -> TransactionMetadata | ErrorCode:
        if not transactional_id:
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


# --- helpers ----------------------------------------------------------------------------------


def _partitions_schema(value_cls: Any, meta: TransactionMetadata) -> list[Any] | None:
    """Kafka writes null partitions for Empty, else one entry per topic."""
    if meta.state is TransactionState.EMPTY:
        return None
    from kwire.protocol import struct_class

    schema = struct_class(value_cls, "transaction_partitions")
    by_topic: dict[str, list[int]] = {}
    for topic, index in sorted(meta.partitions):
        by_topic.setdefault(topic, []).append(index)
    return [schema(topic=t, partition_ids=ids) for t, ids in by_topic.items()]


def _decode_value(value_cls: Any, txn_id: str, value: bytes) -> TransactionMetadata | None:
    if len(value) < 2:
        return None
    version, body = read_version(value)
    if not value_cls.MIN_VERSION <= version <= value_cls.MAX_VERSION:
        log.warning("unknown TransactionLogValue version %d for %s", version, txn_id)
        return None
    decoded = value_cls.decode(body, version)
    partitions = frozenset(
        (p.topic, i) for p in decoded.transaction_partitions or () for i in p.partition_ids
    )
    return TransactionMetadata(
        txn_id,
        decoded.producer_id,
        producer_epoch=decoded.producer_epoch,
        timeout_ms=decoded.transaction_timeout_ms,
        state=TransactionState(decoded.transaction_status),
        partitions=partitions,
        start_ms=decoded.transaction_start_timestamp_ms,
        last_update_ms=decoded.transaction_last_update_timestamp_ms,
    )


def _read_records(partition: Partition) -> Iterable[tuple[bytes | None, bytes | None]]:
    """Every data record (key, value) of a partition, in offset order."""
    start = partition.log.log_start_offset
    for batch in partition.log.iter_batches():
        if batch.is_control:
            continue
        for record in batch:
            if record.offset < start:
                continue
            key = None if record.key is None else bytes(record.key)
            value = None if record.value is None else bytes(record.value)
            yield key, value


def _has_open_txn(partition: Partition, producer_id: int) -> bool:
    entry = partition.log.producer_state().get(producer_id)
    return entry is not None and entry.current_txn_first_offset is not None


def _append(state: BrokerState, partition: Partition, records: bytes, now_ms: int) -> None:
    state.append_as_coordinator(partition, records, now_ms)


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
