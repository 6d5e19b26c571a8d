"""Kafka's producer state snapshots (``<offset>.snapshot``), read and written.

Approach: the file is one struct of Kafka's old-style ``Schema`` types (``ProducerStateManager``'s
``PID_SNAPSHOT_MAP_SCHEMA``), big-endian:

    version          int16   (1)
    crc              uint32  CRC32C of every byte after this field
    producer_entries array   int32 count, then per entry:
        producer_id int64, epoch int16, last_sequence int32, last_offset int64,
        offset_delta int32, timestamp int64, coordinator_epoch int32,
        current_txn_first_offset int64 (-1: no ongoing transaction)

Kafka rejects any other version, a CRC mismatch and a schema error (``CorruptSnapshotException``);
so does this reader, with ``DecodeError`` naming the field and byte. An entry with
``last_offset < 0`` carries no batch metadata (Kafka's ``ProducerStateEntry`` without
``BatchMetadata``); ``first_sequence`` follows Kafka's ``decrementSequence`` wrap-around.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from typing import Final

from kwire._lazy import lazy_dataclass
from kwire._wire import as_view
from kwire.errors import DecodeError
from kwire.log._index import BytesLike
from kwire.records._sequence import decrement_sequence
from kwire.records._v2 import crc32c  # not the crc32c package's: see _v2._load_crc32c

__all__ = [
    "ProducerSnapshot",
    "ProducerSnapshotEntry",
    "encode_producer_snapshot",
    "read_producer_snapshot",
]

PRODUCER_SNAPSHOT_VERSION: Final = 1
_HEADER: Final = struct.Struct(">hIi")  # version, crc, entry count
_ENTRY: Final = struct.Struct(">qhiqiqiq")
_CRC_START: Final = 6


@lazy_dataclass(frozen=True)
class ProducerSnapshotEntry:
    """One producer's entry in a ``.snapshot`` file (Kafka's ``ProducerStateManager``
    snapshot schema)."""

    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_offset: int
    offset_delta: int
    timestamp: int
    coordinator_epoch: int
    #: First offset of the producer's ongoing transaction, None when there is none.
    current_txn_first_offset: int | None

    @property
    def has_batch_metadata(self) -> bool:
        return self.last_offset >= 0

    @property
    def first_sequence(self) -> int:
        return decrement_sequence(self.last_sequence, self.offset_delta)


@lazy_dataclass(frozen=True)
class ProducerSnapshot:
    """A parsed ``.snapshot`` file: its version, CRC and producer entries."""

    version: int
    crc: int
    entries: tuple[ProducerSnapshotEntry, ...]
    #: Bytes after the entries: Kafka ignores them, and so does this reader.
    trailing_bytes: int = 0


def read_producer_snapshot(buffer: BytesLike) -> ProducerSnapshot:
    """Parse and verify a producer state snapshot (``DecodeError`` as Kafka's ``CorruptSnapshotException``)."""
    view = as_view(buffer)
    if len(view) < _HEADER.size:
        raise DecodeError(
            f"Snapshot failed schema validation: {len(view)} bytes, need at least {_HEADER.size}",
            offset=0,
            path="ProducerSnapshot",
        )
    version, crc, count = _HEADER.unpack_from(view, 0)
    if version != PRODUCER_SNAPSHOT_VERSION:
        raise DecodeError(
            f"Snapshot contained an unknown file version {version}",
            offset=0,
            path="ProducerSnapshot.version",
        )
    computed = crc32c(view[_CRC_START:])
    if computed != crc:
        raise DecodeError(
            f"Snapshot is corrupt (CRC is no longer valid). Stored crc: {crc}. "
            f"Computed crc: {computed}",
            offset=2,
            path="ProducerSnapshot.crc",
        )
    pos = _HEADER.size
    if count < 0 or count > (len(view) - pos) // _ENTRY.size:
        raise DecodeError(
            f"Snapshot failed schema validation: {count} entries do not fit in "
            f"{len(view) - pos} bytes",
            offset=pos - 4,
            path="ProducerSnapshot.producer_entries",
        )
    entries = []
    for _ in range(count):
        pid, epoch, seq, last_offset, delta, ts, coord, txn_first = _ENTRY.unpack_from(view, pos)
        entries.append(
            ProducerSnapshotEntry(
                producer_id=pid,
                producer_epoch=epoch,
                last_sequence=seq,
                last_offset=last_offset,
                offset_delta=delta,
                timestamp=ts,
                coordinator_epoch=coord,
                current_txn_first_offset=txn_first if txn_first >= 0 else None,
            )
        )
        pos += _ENTRY.size
    # Kafka's Schema.read leaves bytes after the array unread (they are inside the CRC though).
    return ProducerSnapshot(
        version=version, crc=crc, entries=tuple(entries), trailing_bytes=len(view) - pos
    )


def encode_producer_snapshot(entries: Iterable[ProducerSnapshotEntry]) -> bytes:
    """A version-1 snapshot file holding ``entries`` (CRC filled in, as Kafka writes it)."""
    items = list(entries)
    out = bytearray(_HEADER.pack(PRODUCER_SNAPSHOT_VERSION, 0, len(items)))
    for e in items:
        out += _ENTRY.pack(
            e.producer_id,
            e.producer_epoch,
            e.last_sequence,
            e.last_offset,
            e.offset_delta,
            e.timestamp,
            e.coordinator_epoch,
            -1 if e.current_txn_first_offset is None else e.current_txn_first_offset,
        )
    struct.pack_into(">I", out, 2, crc32c(bytes(out[_CRC_START:])))
    return bytes(out)
