"""The transaction coordinator's records: ``TransactionMetadata`` to and from ``__transaction_state``.

Approach, after Kafka 4.x's ``TransactionLog`` (``keyToBytes``, ``valueToBytes``,
``readTxnRecordValue``): a record is a ``TransactionLogKey`` v0 (the transactional id) and a
``TransactionLogValue`` (null for an expired id), each prefixed by its int16 version. The value is
written at version 1 once ``transaction.version`` 2 is finalized (flexible, with the tagged
PreviousProducerId, NextProducerId and ClientTransactionVersion of KIP-890), at version 0 before
(the bytes Kafka 3.9 writes and reads); both are read.

A ``TxnRecord`` also carries, beside the bytes, what Kafka's ``TxnTransitMetadata`` holds but
does not write (``Transit``): the last producer epoch (KIP-360's retried InitProducerId) and,
for a v0 value, the fields v0 has no room for. Replaying a record with it rebuilds the state the
operation decided; a load from the log has only the bytes and starts those at Kafka's defaults, as
Kafka's loading does.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any, Final, NamedTuple

from kwire._lazy import lazy_dataclass
from kwire.log.internal_topics import TransactionState, read_version, versioned
from kwire.protocol.messages import TransactionLogKey, TransactionLogValue

__all__ = [
    "NO_PRODUCER_EPOCH",
    "NO_PRODUCER_ID",
    "TopicPartition",
    "TransactionMetadata",
    "Transit",
    "TxnRecord",
    "decode_record",
    "record_of",
]

log = logging.getLogger("kwire.broker")

NO_PRODUCER_ID: Final = -1
NO_PRODUCER_EPOCH: Final = -1
LOG_KEY_VERSION: Final = 0

TopicPartition = tuple[str, int]


@lazy_dataclass
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
    #: the producer id the completion moves to (TV2, an exhausted epoch rotates the id)
    next_producer_id: int = NO_PRODUCER_ID
    #: the transaction version of the client that ended the transaction (2: epoch bumps)
    client_transaction_version: int = 0

    def transit(self, **changes: Any) -> TransactionMetadata:
        """A next state (Kafka's ``TxnTransitMetadata``), the state once its record is written."""
        return dataclasses.replace(self, **changes)


class Transit(NamedTuple):
    """What Kafka keeps beside a record, not in it (``TxnTransitMetadata``'s other fields)."""

    last_producer_epoch: int = NO_PRODUCER_EPOCH
    previous_producer_id: int = NO_PRODUCER_ID
    next_producer_id: int = NO_PRODUCER_ID
    client_transaction_version: int = 0


class TxnRecord(NamedTuple):
    """One ``__transaction_state`` record: key and value bytes (None: a tombstone)."""

    key: bytes
    value: bytes | None
    transit: Transit | None = None


def record_of(meta: TransactionMetadata, value_version: int) -> TxnRecord:
    """The record of ``meta`` (a tombstone for Dead), the value at ``value_version``."""
    key = versioned(TransactionLogKey(transactional_id=meta.transactional_id), LOG_KEY_VERSION)
    transit = Transit(
        meta.last_producer_epoch,
        meta.previous_producer_id,
        meta.next_producer_id,
        meta.client_transaction_version,
    )
    if meta.state is TransactionState.DEAD:
        return TxnRecord(key, None, transit)
    value = TransactionLogValue(
        producer_id=meta.producer_id,
        producer_epoch=meta.producer_epoch,
        transaction_timeout_ms=meta.timeout_ms,
        transaction_status=int(meta.state),
        transaction_partitions=_partitions(meta),
        transaction_last_update_timestamp_ms=meta.last_update_ms,
        transaction_start_timestamp_ms=meta.start_ms,
    )
    if value_version >= 1:
        value.previous_producer_id = meta.previous_producer_id
        value.next_producer_id = meta.next_producer_id
        value.client_transaction_version = meta.client_transaction_version
    return TxnRecord(key, versioned(value, value_version), transit)


def _partitions(meta: TransactionMetadata) -> list[TransactionLogValue.PartitionsSchema] | None:
    """Kafka writes null partitions for Empty, else one entry per topic."""
    if meta.state is TransactionState.EMPTY:
        return None
    by_topic: dict[str, list[int]] = {}
    for topic, index in sorted(meta.partitions):
        by_topic.setdefault(topic, []).append(index)
    return [
        TransactionLogValue.PartitionsSchema(topic=t, partition_ids=ids)
        for t, ids in by_topic.items()
    ]


def decode_record(
    key: bytes, value: bytes | None, transit: Transit | None = None
) -> tuple[str, TransactionMetadata | None] | None:
    """(transactional id, its state; None for a tombstone) of a record; None for a record Kafka
    skips too (an unknown key or value version)."""
    if len(key) < 2:
        return None
    version, body = read_version(key)
    if version != LOG_KEY_VERSION:
        return None
    txn_id = TransactionLogKey.decode(body, version).transactional_id
    if value is None:
        return txn_id, None
    if len(value) < 2:
        return None
    version, body = read_version(value)
    if not TransactionLogValue.MIN_VERSION <= version <= TransactionLogValue.MAX_VERSION:
        log.warning("unknown TransactionLogValue version %d for %s", version, txn_id)
        return None
    decoded = TransactionLogValue.decode(body, version)
    beside = transit or Transit()
    meta = TransactionMetadata(
        txn_id,
        decoded.producer_id,
        producer_epoch=decoded.producer_epoch,
        last_producer_epoch=beside.last_producer_epoch,
        timeout_ms=decoded.transaction_timeout_ms,
        state=TransactionState(decoded.transaction_status),
        partitions=frozenset(
            (p.topic, i) for p in decoded.transaction_partitions or () for i in p.partition_ids
        ),
        start_ms=decoded.transaction_start_timestamp_ms,
        last_update_ms=decoded.transaction_last_update_timestamp_ms,
    )
    if version >= 1:
        meta.previous_producer_id = decoded.previous_producer_id
        meta.next_producer_id = decoded.next_producer_id
        meta.client_transaction_version = decoded.client_transaction_version
    else:
        meta.previous_producer_id = beside.previous_producer_id
        meta.next_producer_id = beside.next_producer_id
        meta.client_transaction_version = beside.client_transaction_version
    return txn_id, meta
