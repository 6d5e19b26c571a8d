"""Kafka's producer-sequence arithmetic, the one home of the wrap-around rule.

Approach: a producer's sequence numbers are int32s that wrap from ``Integer.MAX_VALUE`` to 0
(``DefaultRecordBatch.incrementSequence`` / ``decrementSequence``). For the values Kafka feeds
them (a non-negative sequence moved by an offset delta) both are addition modulo 2**31, written as
a mask so the same function serves one record (``Record.sequence``), one batch
(``Batch.last_sequence``), the producer state of the log, and whole numpy arrays in the columnar
decoder.
"""

from __future__ import annotations

from typing import Final, TypeVar

from kwire._wire import INT32_MAX

__all__ = [
    "NO_SEQUENCE",
    "decrement_sequence",
    "first_sequence",
    "in_sequence",
    "increment_sequence",
    "last_sequence",
]

#: ``RecordBatch.NO_SEQUENCE``: a batch without producer sequence numbers.
NO_SEQUENCE: Final = -1

_N = TypeVar("_N")  # an int, or a numpy integer array (the columnar decoder)


def increment_sequence(sequence: _N, increment: _N | int) -> _N:
    """``DefaultRecordBatch.incrementSequence``: ``sequence + increment``, wrapping after INT32_MAX."""
    return (sequence + increment) & INT32_MAX  # type: ignore[operator, return-value]


def decrement_sequence(sequence: _N, decrement: _N | int) -> _N:
    """``DefaultRecordBatch.decrementSequence``: ``sequence - decrement``, wrapping below 0."""
    return (sequence - decrement) & INT32_MAX  # type: ignore[operator, return-value]


def last_sequence(base_sequence: int, last_offset_delta: int) -> int:
    """``DefaultRecordBatch.lastSequence``: the sequence of a batch's last record (or -1)."""
    if base_sequence < 0:
        return NO_SEQUENCE
    return increment_sequence(base_sequence, last_offset_delta)


def first_sequence(last_seq: int, offset_delta: int) -> int:
    """A retained batch's first sequence from its last (``BatchMetadata.firstSeq``), or -1."""
    if last_seq < 0:
        return NO_SEQUENCE
    return decrement_sequence(last_seq, offset_delta)


def in_sequence(last_seq: int, next_seq: int) -> bool:
    """``ProducerAppendInfo.inSequence``: ``next_seq`` directly follows ``last_seq`` (wrapping)."""
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == INT32_MAX)
