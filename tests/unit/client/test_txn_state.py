"""The transactional producer's state machine and error rules (kwire.client._txn), without I/O:
Kafka's ``TransactionManager`` states and which errors are fatal, retried or abortable."""

from __future__ import annotations

import pytest

from kwire.client import ClientError, ProducerFencedError, Transaction, TransactionState
from kwire.client._txn import txn_error
from kwire.protocol import ErrorCode

S = TransactionState


def ready(v2: bool = False) -> Transaction:
    txn = Transaction("t")
    txn.initialized(7, 3, transaction_v2=v2)
    return txn


def test_ready_in_transaction_commit_ready() -> None:
    txn = ready()
    txn.begin()
    assert txn.to_add([("a", 0), ("a", 0), ("b", 1)]) == [("a", 0), ("b", 1)]
    txn.added([("a", 0)])
    assert txn.to_add([("a", 0), ("b", 1)]) == [("b", 1)]
    txn.ending(True)
    assert txn.state is S.COMMITTING_TRANSACTION
    txn.ended(-1, -1)
    assert (txn.state, txn.partitions, txn.producer_epoch) == (S.READY, set(), 3)


def test_transaction_v2_adds_nothing_and_takes_the_bumped_epoch() -> None:
    txn = ready(v2=True)
    txn.begin()
    assert txn.to_add([("a", 0)]) == []  # the broker adds it (KIP-890 part 2)
    txn.sequences.acknowledged("a", 0, 5)
    txn.ending(False)
    txn.ended(7, 4)
    assert (txn.producer_id, txn.producer_epoch, txn.sequences.base_sequence("a", 0)) == (7, 4, 0)


def test_invalid_transitions_are_refused() -> None:
    txn = Transaction("t")
    with pytest.raises(ClientError, match="UNINITIALIZED to IN_TRANSACTION"):
        txn.begin()
    txn = ready()
    with pytest.raises(ClientError, match="READY to COMMITTING_TRANSACTION"):
        txn.ending(True)
    with pytest.raises(ClientError, match="no transaction is open"):
        txn.require_open("produce")


@pytest.mark.parametrize("code", [ErrorCode.PRODUCER_FENCED, ErrorCode.INVALID_PRODUCER_EPOCH])
def test_fencing_is_fatal(code: ErrorCode) -> None:
    txn = ready()
    txn.begin()
    error = txn.failed(txn_error(code, "Produce"))
    assert isinstance(error, ProducerFencedError) and not error.retriable
    assert txn.state is S.FATAL_ERROR
    with pytest.raises(ClientError, match="fatal"):
        txn.ending(False)


@pytest.mark.parametrize(
    "code",
    [
        ErrorCode.CONCURRENT_TRANSACTIONS,
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
        ErrorCode.NOT_COORDINATOR,
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ],
)
def test_coordinator_errors_are_retried(code: ErrorCode) -> None:
    error = txn_error(code, "EndTxn")
    assert error.retriable and not error.fatal


def test_other_errors_abort_the_transaction() -> None:
    txn = ready()
    txn.begin()
    txn.failed(txn_error(ErrorCode.MESSAGE_TOO_LARGE, "Produce"))
    assert txn.state is S.ABORTABLE_ERROR
    with pytest.raises(ClientError, match="abort it"):
        txn.require_open("produce")
    txn.ending(False)  # aborting is allowed
    txn.ended(-1, -1)
    assert txn.state is S.READY


def test_resume_ends_another_instances_transaction() -> None:
    txn = Transaction.resume("t-3", 11, 2, transaction_v2=False)
    assert (txn.state, txn.producer_id, txn.producer_epoch, txn.resumed) == (
        S.IN_TRANSACTION,
        11,
        2,
        True,
    )
    txn.ending(True)
    txn.ended(-1, -1)
    assert txn.state is S.READY and not txn.resumed
