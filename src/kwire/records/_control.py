"""Control records (v2 batches with the control attribute), as Kafka 3.9 defines them.

A control record's key is ``version int16 (0) | type int16`` (Kafka's ``ControlRecordType``).
Transaction markers (ABORT 0, COMMIT 1) have the value ``version int16 (0) | coordinatorEpoch
int32`` (Kafka's ``EndTransactionMarker``) and live in transactional control batches. The KRaft
control records (LEADER_CHANGE 2, SNAPSHOT_HEADER 3, SNAPSHOT_FOOTER 4, KRAFT_VERSION 5,
KRAFT_VOTERS 6) carry a protocol message as value (``LeaderChangeMessage``, ...): kwire gives that
value through ``kwire.protocol.message_class`` when the protocol layer has it, else as raw bytes.

Approach: ``decode_control_record`` turns a ``Record`` of a control batch into a
``ControlRecord`` (type, key version, typed value); ``build_control_batch`` and
``build_end_txn_marker`` write them, mirroring ``MemoryRecords.withEndTransactionMarker``.
"""

from __future__ import annotations

import struct
from enum import IntEnum
from typing import Final

from kwire._lazy import lazy_dataclass
from kwire.errors import CorruptRecordError, DecodeError, EncodeError
from kwire.records._builder import BatchBuilder
from kwire.records._model import NO_TIMESTAMP, Record

__all__ = [
    "ControlRecord",
    "ControlRecordType",
    "EndTransactionMarker",
    "build_control_batch",
    "build_end_txn_marker",
    "control_key",
    "decode_control_record",
    "parse_control_key",
]

_KEY: Final = struct.Struct(">hh")
_MARKER: Final = struct.Struct(">hi")
CONTROL_KEY_VERSION: Final = 0
END_TXN_MARKER_VERSION: Final = 0


class ControlRecordType(IntEnum):
    """Kafka 3.9's ``ControlRecordType`` (UNKNOWN = -1 for a type kwire does not know)."""

    UNKNOWN = -1
    ABORT = 0
    COMMIT = 1
    LEADER_CHANGE = 2
    SNAPSHOT_HEADER = 3
    SNAPSHOT_FOOTER = 4
    KRAFT_VERSION = 5
    KRAFT_VOTERS = 6


#: The protocol message each KRaft control type carries as its value (Kafka's generated names).
KRAFT_VALUE_MESSAGES: Final = {
    ControlRecordType.LEADER_CHANGE: "LeaderChangeMessage",
    ControlRecordType.SNAPSHOT_HEADER: "SnapshotHeaderRecord",
    ControlRecordType.SNAPSHOT_FOOTER: "SnapshotFooterRecord",
    ControlRecordType.KRAFT_VERSION: "KRaftVersionRecord",
    ControlRecordType.KRAFT_VOTERS: "VotersRecord",
}


@lazy_dataclass(frozen=True)
class EndTransactionMarker:
    """The value of an ABORT or COMMIT control record."""

    type: ControlRecordType
    coordinator_epoch: int
    version: int = END_TXN_MARKER_VERSION

    def value_bytes(self) -> bytes:
        return _MARKER.pack(self.version, self.coordinator_epoch)


@lazy_dataclass(frozen=True)
class ControlRecord:
    """A decoded control record.

    ``value`` is an ``EndTransactionMarker`` for ABORT/COMMIT, the decoded protocol message for a
    KRaft type when kwire's protocol layer can decode it, else the raw value bytes (or None).
    ``type_id`` is the raw type (kept for UNKNOWN types).
    """

    type: ControlRecordType
    type_id: int
    key_version: int
    value: object
    offset: int
    timestamp: int


def control_key(control_type: int, version: int = CONTROL_KEY_VERSION) -> bytes:
    """The 4-byte key of a control record."""
    return _KEY.pack(version, control_type)


def parse_control_key(key: bytes | bytearray | memoryview | None) -> tuple[int, int]:
    """``(version, type id)`` of a control record key (Kafka rejects keys shorter than 4 bytes)."""
    if key is None or len(key) < 4:
        raise CorruptRecordError(
            f"control record key of {0 if key is None else len(key)} bytes (need 4)"
        )
    version, type_id = _KEY.unpack_from(key, 0)
    return version, type_id


def _type_of(type_id: int) -> ControlRecordType:
    try:
        return ControlRecordType(type_id)
    except ValueError:
        return ControlRecordType.UNKNOWN


def parse_end_txn_marker(
    control_type: ControlRecordType, value: bytes | bytearray | memoryview | None
) -> EndTransactionMarker:
    """Decode an ABORT/COMMIT value; later versions are read as version 0, as Kafka does."""
    if value is None or len(value) < _MARKER.size:
        raise CorruptRecordError(
            f"end transaction marker value of {0 if value is None else len(value)} bytes "
            f"(need {_MARKER.size})"
        )
    version, epoch = _MARKER.unpack_from(value, 0)
    if version < 0:
        raise CorruptRecordError(f"invalid end transaction marker version {version}")
    return EndTransactionMarker(control_type, epoch, version)


#: The version Kafka 3.9 writes KRaft control values at (``ControlRecordUtils.*_CURRENT_VERSION``).
KRAFT_VALUE_VERSION: Final = 0


def _decode_kraft_value(control_type: ControlRecordType, value: memoryview | bytes) -> object:
    """A KRaft control value as its protocol message (no version prefix: Kafka writes the body
    at version 0, and these messages carry their own ``version`` field); raw bytes when the
    value does not decode as that message (the record itself stays readable).
    """
    name = KRAFT_VALUE_MESSAGES.get(control_type)
    if name is None:
        return bytes(value)
    from kwire import protocol  # imported here: only KRaft logs need the protocol layer

    try:
        return protocol.message_class(name).decode(value, KRAFT_VALUE_VERSION)
    except DecodeError:
        return bytes(value)


def decode_control_record(record: Record) -> ControlRecord:
    """Decode a record of a control batch (its key says the type; its value the payload)."""
    try:
        version, type_id = parse_control_key(record.key)
        ctype = _type_of(type_id)
        value: object
        if ctype in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
            value = parse_end_txn_marker(ctype, record.value)
        elif record.value is None:
            value = None
        else:
            value = _decode_kraft_value(ctype, record.value)
    except CorruptRecordError as exc:
        raise CorruptRecordError(
            exc.reason, context=f"control record at offset {record.offset}"
        ) from None
    return ControlRecord(ctype, type_id, version, value, record.offset, record.timestamp)


def build_control_batch(
    control_type: int,
    value: bytes | bytearray | memoryview | object | None,
    *,
    offset: int = 0,
    timestamp: int = NO_TIMESTAMP,
    producer_id: int = -1,
    producer_epoch: int = -1,
    partition_leader_epoch: int = -1,
    is_transactional: bool | None = None,
) -> bytes:
    """A v2 control batch with one control record (transaction markers are transactional).

    ``value`` is bytes, or a kwire.protocol message (``LeaderChangeMessage``, ...), which is
    encoded at version 0 as Kafka writes KRaft control values.
    """
    if not -(2**15) <= control_type < 2**15 or control_type == ControlRecordType.UNKNOWN:
        raise EncodeError(f"invalid control record type {control_type}")
    raw: bytes | bytearray | memoryview | None
    if value is None or isinstance(value, bytes | bytearray | memoryview):
        raw = value
    else:
        encode = getattr(value, "encode", None)
        if encode is None:
            raise EncodeError(f"control record value must be bytes or a message, not {value!r}")
        raw = bytes(encode(KRAFT_VALUE_VERSION))
    if is_transactional is None:
        is_transactional = control_type in (ControlRecordType.ABORT, ControlRecordType.COMMIT)
    builder = BatchBuilder(
        2,
        base_offset=offset,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        partition_leader_epoch=partition_leader_epoch,
        is_transactional=is_transactional,
        is_control=True,
    )
    builder.append(offset, timestamp, control_key(control_type), raw)
    return builder.build()


def build_end_txn_marker(
    commit: bool,
    *,
    coordinator_epoch: int,
    producer_id: int,
    producer_epoch: int,
    offset: int = 0,
    timestamp: int = NO_TIMESTAMP,
    partition_leader_epoch: int = -1,
) -> bytes:
    """A COMMIT (``commit=True``) or ABORT marker batch, as ``MemoryRecords.withEndTransactionMarker``."""
    ctype = ControlRecordType.COMMIT if commit else ControlRecordType.ABORT
    marker = EndTransactionMarker(ctype, coordinator_epoch)
    return build_control_batch(
        ctype,
        marker.value_bytes(),
        offset=offset,
        timestamp=timestamp,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        partition_leader_epoch=partition_leader_epoch,
        is_transactional=True,
    )
