"""Confluent's wire format: magic byte 0, a 4-byte schema id, for Protobuf the message indexes,
then the payload; schema ids of a whole Arrow column read with numpy; the base of the
per-format decoders.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from kwire.spark._registry_store import _UNKNOWN_GUID, SchemaEntry, SchemaStore

if TYPE_CHECKING:
    import pyarrow as pa


# ---- the wire format -----------------------------------------------------------------------------


def parse_wire_prefix(data: bytes | memoryview, protobuf: bool) -> tuple[int, list[int], int]:
    """(schema id, message indexes, payload start) of one Confluent-framed value."""
    if len(data) < 5 or data[0] != 0:
        raise ValueError("not in Confluent's wire format (magic byte 0 and a schema id)")
    schema_id = int.from_bytes(data[1:5], "big")
    if not protobuf:
        return schema_id, [], 5
    indexes, pos = _message_indexes(data, 5)
    return schema_id, indexes, pos


def _zigzag(data: bytes | memoryview, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(data) or shift > 63:
            raise ValueError("truncated Protobuf message indexes")
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7


def _message_indexes(data: bytes | memoryview, pos: int) -> tuple[list[int], int]:
    count, pos = _zigzag(data, pos)
    if count == 0:
        return [0], pos  # the shortcut for the first message
    if count < 0 or count > 100_000:
        raise ValueError("bad Protobuf message index count")
    indexes = []
    for _ in range(count):
        i, pos = _zigzag(data, pos)
        indexes.append(i)
    return indexes, pos


# ---- per-format decoders -------------------------------------------------------------------------


class _Format:
    """Decodes one side (key or value) of a batch; built lazily on each executor."""

    schema_type = ""

    def __init__(self, store: SchemaStore, reader: SchemaEntry) -> None:
        self.store = store
        self.reader = reader

    def arrow_type(self) -> pa.DataType:
        raise NotImplementedError

    def decode(
        self, column: pa.Array, header_ids: dict[int, int] | None
    ) -> tuple[pa.Array, np.ndarray, dict[int, str]]:
        """(decoded array, schema id per row (-1 none), {row: reason} for rows that failed)."""
        raise NotImplementedError


def _binary_parts(column: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(data bytes, start offsets, end offsets) of a binary array, without a copy."""
    import pyarrow as pa

    if column.type != pa.binary():
        column = column.cast(pa.binary())
    n = len(column)
    bufs = column.buffers()
    offsets = np.frombuffer(bufs[1], np.int32)[column.offset : column.offset + n + 1]
    data = np.frombuffer(bufs[2], np.uint8) if bufs[2] is not None else np.zeros(0, np.uint8)
    return data, offsets[:-1].astype(np.int64), offsets[1:].astype(np.int64)


def _prefixed_ids(
    column: pa.Array, header_ids: dict[int, int] | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[int, str]]:
    """Vectorised wire-format parse: (data, ids, payload starts, ends, errors); ids -1 for nulls."""
    data, starts, ends = _binary_parts(column)
    n = len(column)
    valid = np.asarray(column.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    ids = np.full(n, -1, np.int64)
    framed = valid & (ends - starts >= 5)
    safe = np.where(framed, starts, 0)
    if len(data):
        framed &= data[np.minimum(safe, len(data) - 1)] == 0
        b = [data[np.minimum(safe + k, len(data) - 1)].astype(np.int64) for k in range(1, 5)]
        ids = np.where(framed, (b[0] << 24) | (b[1] << 16) | (b[2] << 8) | b[3], -1)
    payload = np.where(framed, starts + 5, starts)
    if header_ids:
        rows = np.fromiter(header_ids.keys(), np.int64, len(header_ids))
        ids[rows] = np.fromiter(header_ids.values(), np.int64, len(header_ids))
        payload[rows] = starts[rows]
        framed[rows] = valid[rows]
    errors = {
        int(i): "not in Confluent's wire format (no magic byte 0 and schema id)"
        for i in np.nonzero(valid & ~framed)[0]
    }
    for i in np.nonzero(ids == _UNKNOWN_GUID)[0]:
        errors[int(i)] = "the schema GUID in its header is not known"
    return data, ids, payload, ends, errors


def _pyvalues_to_arrow(
    values: list[Any], arrow_type: pa.DataType, errors: dict[int, str], what: str
) -> pa.Array:
    import pyarrow as pa

    bad = (pa.ArrowException, TypeError, ValueError, OverflowError)
    try:
        return pa.array(values, type=arrow_type)
    except bad:
        pass
    fixed = []
    for i, v in enumerate(values):
        try:
            pa.array([v], type=arrow_type)
        except bad as exc:
            errors[i] = f"{what}: value does not fit {arrow_type}: {exc}"
            v = None
        fixed.append(v)
    return pa.array(fixed, type=arrow_type)
