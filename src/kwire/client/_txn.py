"""A transactional producer's rules without I/O: its state machine and what each error means.

``Transaction`` follows Kafka's ``TransactionManager`` (clients/producer/internals): states
UNINITIALIZED -> READY (InitProducerId with the ``transactional.id``) -> IN_TRANSACTION
(``begin``) -> COMMITTING_TRANSACTION / ABORTING_TRANSACTION (EndTxn) -> READY, and
FATAL_ERROR, after which only closing the producer is allowed. It keeps the producer id and epoch
with the per-partition sequences (``IdempotentSequences``), the partitions and groups already added
to the open transaction, and whether the broker uses transaction version 2 (KIP-890 part 2: the
partition of a transactional Produce v12+ and the group of a TxnOffsetCommit v5+ join the
transaction on the broker's side, and EndTxn v5 bumps the epoch, answering the epoch to use next).

Errors, as ``TransactionManager``'s ``TxnRequestHandler`` subclasses treat them:
PRODUCER_FENCED and INVALID_PRODUCER_EPOCH mean another producer with the same transactional id
took over (fatal: ``ProducerFencedError``); TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
INVALID_PRODUCER_ID_MAPPING, INVALID_TXN_STATE and UNSUPPORTED_FOR_MESSAGE_FORMAT are fatal too;
CONCURRENT_TRANSACTIONS, COORDINATOR_LOAD_IN_PROGRESS, NOT_COORDINATOR and
COORDINATOR_NOT_AVAILABLE are retried with backoff (the last two after finding the coordinator
again); anything else aborts the transaction (ABORTABLE_ERROR: the application aborts and goes on).
"""

from __future__ import annotations

import enum
from dataclasses import field
from typing import Final

from kwire._lazy import lazy_dataclass
from kwire.client._errors import RETRIABLE, ClientError, KafkaApiError
from kwire.client._produce import IdempotentSequences
from kwire.protocol import ErrorCode

__all__ = [
    "COORDINATOR_MOVED",
    "FENCED",
    "TXN_RETRIABLE",
    "ProducerFencedError",
    "Transaction",
    "TransactionError",
    "TransactionState",
    "txn_error",
]

E = ErrorCode

#: Another producer with the same transactional id has a newer epoch (``ProducerFencedException``).
FENCED: Final = frozenset({E.PRODUCER_FENCED, E.INVALID_PRODUCER_EPOCH})
#: Fatal besides fencing: the transactional id cannot be used by this producer any more.
_FATAL: Final = FENCED | frozenset(
    {
        E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
        E.INVALID_PRODUCER_ID_MAPPING,
        E.INVALID_TXN_STATE,
        E.UNSUPPORTED_FOR_MESSAGE_FORMAT,
        E.UNSUPPORTED_VERSION,
        E.CLUSTER_AUTHORIZATION_FAILED,
    }
)
#: Find the coordinator again, then retry (``lookupCoordinator`` in ``TxnRequestHandler``).
COORDINATOR_MOVED: Final = frozenset({E.NOT_COORDINATOR, E.COORDINATOR_NOT_AVAILABLE})
#: Retried with backoff against the same coordinator (all in ``RETRIABLE`` too).
TXN_RETRIABLE: Final = COORDINATOR_MOVED | frozenset(
    {E.CONCURRENT_TRANSACTIONS, E.COORDINATOR_LOAD_IN_PROGRESS}
)


class TransactionState(enum.Enum):
    """Kafka's ``TransactionManager.State`` (the states a client reaches)."""

    UNINITIALIZED = "UNINITIALIZED"
    READY = "READY"
    IN_TRANSACTION = "IN_TRANSACTION"
    COMMITTING_TRANSACTION = "COMMITTING_TRANSACTION"
    ABORTING_TRANSACTION = "ABORTING_TRANSACTION"
    ABORTABLE_ERROR = "ABORTABLE_ERROR"
    FATAL_ERROR = "FATAL_ERROR"


class TransactionError(KafkaApiError):
    """A transactional request failed; ``fatal`` says the producer cannot go on (close it)."""

    def __init__(
        self, error: ErrorCode, where: str, message: str | None = None, *, fatal: bool = False
    ) -> None:
        super().__init__(error, where, message)
        self.fatal = fatal

    @property
    def retriable(self) -> bool:
        return not self.fatal and self.error in RETRIABLE


class ProducerFencedError(TransactionError):
    """Another producer with the same ``transactional.id`` took over (a newer epoch): fatal."""

    def __init__(self, error: ErrorCode, where: str, message: str | None = None) -> None:
        super().__init__(error, where, message, fatal=True)


def txn_error(error: ErrorCode, where: str, message: str | None = None) -> TransactionError:
    """The typed error for a transactional request's ``error`` (never NONE)."""
    if error in FENCED:
        return ProducerFencedError(error, where, message)
    return TransactionError(error, where, message, fatal=error in _FATAL)


_S = TransactionState
#: What each operation may start from (``TransactionManager.State.isTransitionValid``).
_ALLOWED: Final[dict[TransactionState, frozenset[TransactionState]]] = {
    _S.READY: frozenset({_S.UNINITIALIZED, _S.COMMITTING_TRANSACTION, _S.ABORTING_TRANSACTION}),
    _S.IN_TRANSACTION: frozenset({_S.READY}),
    _S.COMMITTING_TRANSACTION: frozenset({_S.IN_TRANSACTION}),
    _S.ABORTING_TRANSACTION: frozenset({_S.IN_TRANSACTION, _S.ABORTABLE_ERROR}),
}


@lazy_dataclass(slots=True)
class Transaction:
    """One transactional producer's state (``transactional.id``), driven by the client."""

    transactional_id: str
    timeout_ms: int = 60_000
    state: TransactionState = TransactionState.UNINITIALIZED
    sequences: IdempotentSequences = field(default_factory=IdempotentSequences)
    transaction_v2: bool = False
    partitions: set[tuple[str, int]] = field(default_factory=set)
    groups: set[str] = field(default_factory=set)
    last_error: TransactionError | None = None
    #: opened by another producer instance: EndTxn is sent even though nothing was added here
    resumed: bool = False

    @classmethod
    def resume(
        cls,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        *,
        transaction_v2: bool,
    ) -> Transaction:
        """An open transaction of another producer instance (a Spark task), to be committed or
        aborted here. Kafka's ``TransactionCoordinator.endTransaction`` checks the transactional
        id, producer id and epoch of an EndTxn, not the connection it came on, so whoever holds
        the three can end the transaction (Flink's ``FlinkKafkaInternalProducer`` does the same
        to commit after a restart)."""
        return cls(
            transactional_id,
            state=TransactionState.IN_TRANSACTION,
            sequences=IdempotentSequences(producer_id, producer_epoch),
            transaction_v2=transaction_v2,
            resumed=True,
        )

    @property
    def producer_id(self) -> int:
        return self.sequences.producer_id

    @property
    def producer_epoch(self) -> int:
        return self.sequences.producer_epoch

    def _move(self, to: TransactionState) -> None:
        if self.state is _S.FATAL_ERROR:
            raise ClientError(
                f"transactional producer {self.transactional_id!r} hit a fatal error and must be "
                f"closed: {self.last_error}"
            )
        if self.state not in _ALLOWED[to]:
            raise ClientError(
                f"transactional producer {self.transactional_id!r}: cannot go from "
                f"{self.state.value} to {to.value}"
            )
        self.state = to

    def initialized(self, producer_id: int, producer_epoch: int, *, transaction_v2: bool) -> None:
        """InitProducerId answered: a fresh producer id/epoch, sequences from 0."""
        self._move(_S.READY)
        self.sequences = IdempotentSequences(producer_id, producer_epoch)
        self.transaction_v2 = transaction_v2

    def begin(self) -> None:
        self._move(_S.IN_TRANSACTION)
        self.partitions.clear()
        self.groups.clear()

    def require_open(self, what: str) -> None:
        if self.state is _S.FATAL_ERROR or self.state is _S.ABORTABLE_ERROR:
            raise ClientError(
                f"{what}: the transaction of {self.transactional_id!r} failed "
                f"({self.last_error}); {'close the producer' if self.state is _S.FATAL_ERROR else 'abort it'}"
            )
        if self.state is not _S.IN_TRANSACTION:
            raise ClientError(f"{what}: no transaction is open (begin one first)")

    def to_add(self, partitions: list[tuple[str, int]]) -> list[tuple[str, int]]:
        """Partitions needing AddPartitionsToTxn before a Produce (none with transaction v2: the
        broker adds them itself)."""
        if self.transaction_v2:
            return []
        return [tp for tp in dict.fromkeys(partitions) if tp not in self.partitions]

    def added(self, partitions: list[tuple[str, int]]) -> None:
        self.partitions.update(partitions)

    def ending(self, commit: bool) -> None:
        self._move(_S.COMMITTING_TRANSACTION if commit else _S.ABORTING_TRANSACTION)

    def ended(self, producer_id: int, producer_epoch: int) -> None:
        """EndTxn answered NONE; with transaction v2 the answer's (bumped) epoch is the next one
        to use, and sequences start over (``TransactionManager.handleEndTxn`` TV2)."""
        self._move(_S.READY)
        if self.transaction_v2 and producer_id >= 0:
            self.sequences = IdempotentSequences(producer_id, producer_epoch)
        self.partitions.clear()
        self.groups.clear()
        self.resumed = False

    def failed(self, error: TransactionError) -> TransactionError:
        """Record a non-retriable failure: FATAL_ERROR, or ABORTABLE_ERROR inside a transaction."""
        self.last_error = error
        if error.fatal:
            self.state = _S.FATAL_ERROR
        elif self.state in (_S.IN_TRANSACTION, _S.COMMITTING_TRANSACTION):
            self.state = _S.ABORTABLE_ERROR
        return error
