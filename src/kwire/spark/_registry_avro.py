"""Avro values of the Schema Registry decoding: the latest schema's datums through the compiled
Arrow decoder (kwire.spark._avro), others through fastavro's schema resolution.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from kwire.spark._registry_store import SchemaEntry, SchemaStore
from kwire.spark._registry_wire import _Format, _prefixed_ids

if TYPE_CHECKING:
    import pyarrow as pa


class _Avro(_Format):
    schema_type = "AVRO"

    def __init__(self, store: SchemaStore, reader: SchemaEntry) -> None:
        super().__init__(store, reader)
        from kwire.spark._avro import _expand

        self._parsed: dict[int, Any] = {}
        self.reader_parsed = self.parsed(reader)
        self.expanded = _expand(self.reader_parsed)
        self._fast: Any = False  # the compiled decoder of the reader schema (None: unsupported)
        self._resolving: dict[int, Any] = {}  # by writer schema id (None: through fastavro)

    def parsed(self, entry: SchemaEntry) -> Any:
        from kwire.spark._avro import parse_avro

        if entry.id not in self._parsed:
            named: dict[str, Any] = {}
            for _, subject, version in entry.references:
                parse_avro(self.store.version(subject, version).schema, named)
            self._parsed[entry.id] = parse_avro(entry.schema, named)
        return self._parsed[entry.id]

    def arrow_type(self) -> pa.DataType:
        from kwire.spark._avro import avro_arrow_type

        return avro_arrow_type(self.expanded)

    def fast(self) -> Any:
        if self._fast is False:
            from kwire.spark._avro import AvroDecoder, UnsupportedAvro

            try:
                self._fast = AvroDecoder(self.expanded)
            except UnsupportedAvro:
                self._fast = None
        return self._fast

    def resolving(self, entry: SchemaEntry) -> Any:
        """The compiled decoder of an older writer schema resolved into the reader's column, or
        None where the pair needs fastavro."""
        if entry.id not in self._resolving:
            from kwire.spark._avro import ResolvingAvroDecoder, UnsupportedAvro, _expand

            try:
                writer = _expand(self.parsed(entry))
                self._resolving[entry.id] = ResolvingAvroDecoder(writer, self.expanded)
            except UnsupportedAvro:
                self._resolving[entry.id] = None
        return self._resolving[entry.id]

    def decode(
        self, column: pa.Array, header_ids: dict[int, int] | None
    ) -> tuple[pa.Array, np.ndarray, dict[int, str]]:
        import pyarrow as pa

        from kwire.spark._avro import decode_avro_loop

        data, ids, starts, ends, errors = _prefixed_ids(column, header_ids)
        arrow_type = self.arrow_type()
        pieces: list[tuple[np.ndarray, pa.Array]] = []
        for schema_id in np.unique(ids[ids >= 0]):
            rows = np.nonzero(ids == schema_id)[0]
            entry = self.store.get(int(schema_id))
            if entry is None or entry.schema_type != "AVRO":
                why = "unknown schema id" if entry is None else f"a {entry.schema_type} schema"
                errors.update({int(i): f"Avro: {why} {schema_id}" for i in rows})
                continue
            fast = self.fast() if _same_avro(entry, self.reader) else self.resolving(entry)
            array = None
            if fast is not None:
                try:
                    array, status = fast.decode(data, starts[rows], ends[rows])
                except (
                    pa.ArrowException
                ):  # not UTF-8 somewhere (or a conversion): fastavro says which
                    array = None
                else:
                    for i in rows[status == 0]:
                        errors[int(i)] = f"Avro: cannot decode with schema id {schema_id}"
            if array is None:
                payloads = [bytes(data[s:e]) for s, e in zip(starts[rows], ends[rows], strict=True)]
                array, bad = decode_avro_loop(
                    payloads, self.parsed(entry), self.reader_parsed, arrow_type
                )
                for j, why in bad.items():
                    errors[int(rows[j])] = f"{why} (schema id {schema_id})"
            pieces.append((rows, array))
        return _assemble(len(column), pieces, arrow_type), ids, errors


def _same_avro(a: SchemaEntry, b: SchemaEntry) -> bool:
    return a.id == b.id or (a.schema == b.schema and a.references == b.references)


def _assemble(
    n: int, pieces: list[tuple[np.ndarray, pa.Array]], arrow_type: pa.DataType
) -> pa.Array:
    """One array of ``n`` rows from (row indexes, values) pieces; other rows null."""
    import pyarrow as pa

    if len(pieces) == 1 and len(pieces[0][0]) == n:
        return pieces[0][1]
    covered = np.concatenate([rows for rows, _ in pieces]) if pieces else np.zeros(0, np.int64)
    rest = np.setdiff1d(np.arange(n), covered)
    arrays = [a for _, a in pieces] + [pa.nulls(len(rest), arrow_type)]
    order = np.concatenate([covered, rest]).astype(np.int64)
    inverse = np.empty(n, np.int64)
    inverse[order] = np.arange(n)
    return pa.concat_arrays(arrays).take(pa.array(inverse))
