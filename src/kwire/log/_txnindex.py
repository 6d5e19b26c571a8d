"""Kafka's transaction index (``.txnindex``): the aborted transactions of a segment.

Approach: the file is a plain sequence of 34-byte entries (Kafka's ``AbortedTxn``): version int16
(0), producer id int64, first offset int64, last offset int64, last stable offset int64, all
big-endian. An entry lives in the ``.txnindex`` of the segment holding the transaction's ABORT
marker (its ``last_offset``); the transaction's data may sit in earlier segments, so a reader of a
segment in ``read_committed`` needs the entries of that segment *and of all later ones*.
``collect_aborted_transactions`` is Kafka's ``TransactionIndex.collectAbortedTxns`` over any
number of segments' entries.

Reading is lenient the way Kafka is (a partial trailing entry, from a crash mid-write, is not an
entry) but says so in ``problems``; ``read_txn_index`` is the strict variant that raises.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator
from typing import Final, NamedTuple

from kwire._wire import as_view
from kwire.errors import DecodeError
from kwire.log._index import BytesLike

__all__ = [
    "TXN_INDEX_ENTRY_SIZE",
    "AbortedTxn",
    "TransactionIndex",
    "collect_aborted_transactions",
    "encode_aborted_txn",
    "encode_txn_index",
    "read_txn_index",
]

TXN_INDEX_ENTRY_SIZE: Final = 34
CURRENT_VERSION: Final = 0
_ENTRY: Final = struct.Struct(">hqqqq")


class AbortedTxn(NamedTuple):
    """One aborted transaction: offsets ``first_offset .. last_offset`` (the ABORT marker)."""

    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int
    version: int = CURRENT_VERSION


def encode_aborted_txn(txn: AbortedTxn) -> bytes:
    return _ENTRY.pack(
        txn.version, txn.producer_id, txn.first_offset, txn.last_offset, txn.last_stable_offset
    )


def encode_txn_index(entries: Iterable[AbortedTxn]) -> bytes:
    return b"".join(encode_aborted_txn(t) for t in entries)


class TransactionIndex:
    """The entries of a ``.txnindex`` over any bytes-like (copied; the buffer is not kept)."""

    __slots__ = ("entries", "problems")

    def __init__(self, buffer: BytesLike) -> None:
        view = as_view(buffer)
        self.entries: list[AbortedTxn] = []
        self.problems: list[str] = []
        whole = len(view) - len(view) % TXN_INDEX_ENTRY_SIZE
        for i, (version, pid, first, last, lso) in enumerate(_ENTRY.iter_unpack(view[:whole])):
            if version > CURRENT_VERSION:
                # Kafka throws "Unexpected aborted transaction version" and reads no further.
                self.problems.append(
                    f"entry {i} at byte {i * TXN_INDEX_ENTRY_SIZE}: unexpected aborted "
                    f"transaction version {version}, current version is {CURRENT_VERSION}"
                )
                break
            self.entries.append(AbortedTxn(pid, first, last, lso, version))
        if whole != len(view):
            self.problems.append(
                f"{len(view) - whole} trailing bytes at byte {whole} are not a whole "
                f"{TXN_INDEX_ENTRY_SIZE}-byte entry"
            )

    def __len__(self) -> int:
        return len(self.entries)

    def __iter__(self) -> Iterator[AbortedTxn]:
        return iter(self.entries)


def read_txn_index(buffer: BytesLike) -> list[AbortedTxn]:
    """The aborted transactions of a ``.txnindex``; ``DecodeError`` on anything but whole v0 entries."""
    index = TransactionIndex(buffer)
    if index.problems:
        first = index.problems[0]
        at = len(index.entries) * TXN_INDEX_ENTRY_SIZE
        raise DecodeError(first, offset=at, path=f"AbortedTxn[{len(index.entries)}]")
    return index.entries


def collect_aborted_transactions(
    entries: Iterable[AbortedTxn], start_offset: int, end_offset: int | None = None
) -> list[AbortedTxn]:
    """Kafka's ``collectAbortedTxns``: the transactions overlapping ``[start_offset, end_offset)``
    (``last_offset >= start_offset`` and ``first_offset < end_offset``), sorted by first offset.

    Pass the entries of the segment holding ``start_offset`` and of every later segment.
    """
    hits = [
        t
        for t in entries
        if t.last_offset >= start_offset and (end_offset is None or t.first_offset < end_offset)
    ]
    hits.sort(key=lambda t: (t.first_offset, t.last_offset))
    return hits
