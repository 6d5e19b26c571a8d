"""Schema Registry decoding for the kafka-log source: options valueFormat / keyFormat = avro,
protobuf or json turn the value (key) column into typed columns.

Wire format (Confluent's): magic byte 0, a 4-byte big-endian schema id, for Protobuf the message
indexes (a zigzag varint count then the indexes; a single 0 byte stands for [0]), then the
payload. Header-based serializers leave the payload bare and put the id in a header
(``__value_schema_id`` / ``__key_schema_id``: magic 0 + id, or magic 1 + a 16-byte GUID); the
``valueSchemaIdHeader`` option names another header.

Schemas come from the ``_schemas`` topic of the same log directory (what Confluent's registry
writes: JSON keys ``{"keytype":"SCHEMA","subject":..,"version":..,"magic":1}`` and JSON values
``{"subject","version","id","schema","schemaType","references","deleted"}``, null for a hard
delete; a backup decodes itself, no registry needed), or from ``schemaRegistryUrl`` through
confluent-kafka's SchemaRegistryClient (every version of the subject fetched on the driver, ids
the executors meet later fetched by id). The output type is resolved on the driver from the
subject's latest schema (TopicNameStrategy ``<topic>-value`` unless ``valueSubject``); records
written with an older schema are resolved against it (Avro: fastavro's schema resolution).
Protobuf schemas are base64 FileDescriptorProtos or .proto source text (compiled with protoc from
grpcio-tools, references written at their names); JSON Schema ``$ref`` follows references to
other subjects (a ``referencing.Registry`` for validation, the other document for the type).

Decoding runs on the Arrow batches the reader yields: schema ids are read for the whole column
with numpy (no Python object per record); Avro datums of the latest schema go through the
compiled Arrow decoder (kwire.spark._avro), others through fastavro; Protobuf (the protobuf
runtime) and JSON (json + jsonschema validation) decode per record. A value that does not decode
is a null with `_corrupt_record` saying why (PERMISSIVE), is dropped (DROPMALFORMED) or fails
the task (FAILFAST, CorruptRecordError); the count is logged per split and, with reportPath,
written there.

This module is the source and its reader; the schema store is ``_registry_store``, the wire
format ``_registry_wire``, the formats ``_registry_avro``, ``_registry_protobuf`` and
``_registry_json``.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from kwire._lazy import lazy_dataclass
from kwire.errors import CorruptRecordError, OptionError
from kwire.spark._options import ReadOptions, parse_read_options
from kwire.spark._registry_avro import _Avro
from kwire.spark._registry_json import _Json
from kwire.spark._registry_protobuf import _Protobuf
from kwire.spark._registry_store import (
    _UNKNOWN_GUID,
    DEFAULT_HEADERS,
    FORMATS,
    SCHEMAS_TOPIC,
    SchemaEntry,
    SchemaStore,
    _opt,
    store_from_records,
    store_from_registry,
)
from kwire.spark._registry_wire import _Format, parse_wire_prefix
from kwire.spark._schema import CORRUPT_RECORD, RECORD_COLUMNS, arrow_schema
from kwire.spark._source import KafkaLogReader

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql.types import StructType

__all__ = [
    "SchemaEntry",
    "SchemaStore",
    "TypedReader",
    "TypedSource",
    "parse_wire_prefix",
    "store_from_records",
    "typed_source",
]

log = logging.getLogger("kwire.spark")

_FORMAT_CLASSES: dict[str, type[_Format]] = {"avro": _Avro, "protobuf": _Protobuf, "json": _Json}


# ---- the source and its reader -------------------------------------------------------------------


@lazy_dataclass
class _Side:
    """Decoding of one column: "key" or "value"."""

    column: str
    fmt: str
    subject: str
    reader: SchemaEntry
    headers: tuple[str, ...]
    message: str | None = None  # Protobuf: the message to decode (option valueMessage)
    _decoder: _Format | None = None

    def decoder(self, store: SchemaStore) -> _Format:
        if self._decoder is None:
            if self.fmt == "protobuf":
                self._decoder = _Protobuf(store, self.reader, self.message)
            else:
                self._decoder = _FORMAT_CLASSES[self.fmt](store, self.reader)
        return self._decoder

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_decoder"] = None  # compiled decoders and protobuf classes are per process
        return state


def read_schemas_topic(path: str, topic: str = SCHEMAS_TOPIC) -> SchemaStore:
    """Read the registry's topic from a log directory on the driver into a store."""
    from kwire.spark._read import read_split

    reader = KafkaLogReader(
        path,
        parse_read_options({"subscribe": topic, "mode": "DROPMALFORMED"}),
        None,  # type: ignore[arg-type]
    )
    target = arrow_schema(["key", "value", "partition", "offset"])
    rows: list[tuple[int, int, bytes | None, bytes | None]] = []
    for part in reader.partitions():
        splits: tuple[Any, ...] = getattr(part, "splits", (part,))
        for split in splits:
            for batch in read_split(split, reader.options, target):
                d = batch.to_pydict()
                rows.extend(zip(d["partition"], d["offset"], d["key"], d["value"], strict=True))
    rows.sort(key=lambda r: (r[0], r[1]))
    return store_from_records([(k, v) for _, _, k, v in rows])


def _header_ids(
    batch: pa.RecordBatch, names: tuple[str, ...], store: SchemaStore
) -> dict[int, int]:
    """Row -> schema id for rows carrying one of the ``names`` headers (magic 0 id or 1 GUID)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if "headers" not in batch.schema.names:
        return {}
    headers = batch.column("headers")
    if headers.null_count == len(headers):
        return {}
    flat = pc.list_flatten(headers)
    parents = pc.list_parent_indices(headers).to_numpy()
    hits = np.nonzero(
        pc.is_in(flat.field("key"), pa.array(list(names))).to_numpy(zero_copy_only=False)
    )[0]
    found: dict[int, int] = {}
    for j in hits:  # one per record that uses headers (small: a header value each)
        value = flat.field("value")[int(j)].as_py()
        if not value:
            continue
        if value[0] == 0 and len(value) >= 5:
            found[int(parents[j])] = int.from_bytes(value[1:5], "big")
        elif value[0] == 1 and len(value) >= 17:
            entry = store.by_guid(str(uuid.UUID(bytes=bytes(value[1:17]))))
            found[int(parents[j])] = entry.id if entry is not None else _UNKNOWN_GUID
    return found


class TypedReader(KafkaLogReader):
    """The kafka-log reader with key and/or value decoded by their registered schemas."""

    def __init__(
        self,
        path: str,
        options: ReadOptions,
        schema: StructType,
        sides: list[_Side],
        store: SchemaStore,
    ) -> None:
        super().__init__(path, options, schema)
        self.sides = sides
        self.store = store

    def read(self, partition: Any) -> Iterator[pa.RecordBatch]:
        from pyspark.sql.pandas.types import to_arrow_schema

        from kwire.spark._plan import SegmentSplit, SplitGroup
        from kwire.spark._read import read_split

        if isinstance(partition, SegmentSplit):
            splits: tuple[SegmentSplit, ...] = (partition,)
        elif isinstance(partition, SplitGroup):
            splits = partition.splits
        else:
            return
        target = to_arrow_schema(self.schema, timezone="UTC")
        wanted = [
            s
            for s in self.sides
            if s.column in target.names or f"{s.column}SchemaId" in target.names
        ]
        raw_names = [c for c in RECORD_COLUMNS if c in target.names]
        for side in wanted:
            if side.column not in raw_names:
                raw_names.append(side.column)
        if any(s.headers for s in wanted) and "headers" not in raw_names:
            raw_names.append("headers")
        if CORRUPT_RECORD in target.names:
            raw_names.append(CORRUPT_RECORD)
        raw_target = arrow_schema(raw_names)
        for split in splits:
            failed = 0
            reasons: list[str] = []
            for batch in read_split(split, self.options, raw_target):
                out, bad = self._transform(batch, target, wanted, reasons)
                failed += bad
                if out.num_rows:
                    yield out
            if failed:
                log.warning(
                    "kwire: %d records of %s did not decode: %s",
                    failed,
                    split.uri,
                    "; ".join(reasons[:5]),
                )
                if self.options.report_path:
                    _report_undecoded(self.options.report_path, split, failed, reasons)

    def _transform(
        self, batch: pa.RecordBatch, target: pa.Schema, sides: list[_Side], reasons: list[str]
    ) -> tuple[pa.RecordBatch, int]:
        import pyarrow as pa

        decoded: dict[str, pa.Array] = {}
        errors: dict[int, str] = {}
        for side in sides:
            header_ids = _header_ids(batch, side.headers, self.store) if side.headers else None
            array, ids, errs = side.decoder(self.store).decode(
                batch.column(side.column), header_ids
            )
            decoded[side.column] = array
            decoded[f"{side.column}SchemaId"] = pa.array(
                np.where(ids >= 0, ids, 0).astype(np.int32), mask=ids < 0
            )
            for i, why in errs.items():
                errors.setdefault(i, f"{side.column}: {why}")
        if errors and len(reasons) < 20:
            reasons.extend(list(errors.values())[: 20 - len(reasons)])
        mode = self.options.mode
        if errors and mode == "FAILFAST":
            row = min(errors)
            raise CorruptRecordError(
                errors[row], offset=row, context="Schema Registry decoding (mode FAILFAST)"
            )
        arrays = []
        for f in target:
            if f.name in decoded:
                column = decoded[f.name]
            elif f.name == CORRUPT_RECORD and errors:
                old = batch.column(CORRUPT_RECORD).to_pylist()
                column = pa.array(
                    [old[i] if old[i] is not None else errors.get(i) for i in range(len(old))],
                    pa.string(),
                )
            else:
                column = batch.column(f.name)
            arrays.append(column if column.type == f.type else column.cast(f.type))
        out = pa.RecordBatch.from_arrays(arrays, schema=target)
        if errors and mode == "DROPMALFORMED":
            keep = np.ones(out.num_rows, bool)
            keep[list(errors)] = False
            out = out.filter(pa.array(keep))
        return out, len(errors)


def _report_undecoded(report_path: str, split: Any, failed: int, reasons: list[str]) -> None:
    from kwire.spark._fs import resolve

    fs, root = resolve(report_path)
    fs.create_dir(root, recursive=True)
    doc = {
        "segment": split.uri,
        "start": split.start,
        "end": split.end,
        "skipped_bytes": 0,
        "undecoded_records": failed,
        "problems": reasons[:20],
    }
    name = f"undecoded-{split.topic}-{split.partition}-{split.start}-{uuid.uuid4().hex[:8]}"
    with fs.open_output_stream(f"{root}/{name}.json") as out:
        out.write(json.dumps(doc).encode())


@lazy_dataclass
class TypedSource:
    """What the data source needs for valueFormat/keyFormat: the schema and the reader."""

    path: str
    options: ReadOptions
    sides: list[_Side]
    store: SchemaStore

    def arrow_schema(self) -> pa.Schema:
        import pyarrow as pa

        base = arrow_schema(
            list(RECORD_COLUMNS) + ([CORRUPT_RECORD] if self.options.mode == "PERMISSIVE" else [])
        )
        by_column = {s.column: s for s in self.sides}
        fields = []
        for f in base:
            if f.name == CORRUPT_RECORD:
                for s in self.sides:
                    fields.append(pa.field(f"{s.column}SchemaId", pa.int32()))
            if f.name in by_column:
                side = by_column[f.name]
                fields.append(pa.field(f.name, side.decoder(self.store).arrow_type()))
            else:
                fields.append(f)
        if CORRUPT_RECORD not in base.names:
            fields.extend(pa.field(f"{s.column}SchemaId", pa.int32()) for s in self.sides)
        return pa.schema(fields)

    def schema(self) -> StructType:
        from pyspark.sql.pandas.types import from_arrow_schema

        return from_arrow_schema(self.arrow_schema())

    def reader(self, schema: StructType) -> TypedReader:
        return TypedReader(self.path, self.options, schema, self.sides, self.store)


def _topics(path: str, options: ReadOptions) -> list[str]:
    from kwire.log import partitions_from_paths
    from kwire.spark._fs import list_files, resolve, to_uri

    fs, root = resolve(to_uri(path))
    files = list_files(fs, root)
    return sorted(
        {
            p.topic
            for p in partitions_from_paths(sorted(files), files)
            if not p.topic.startswith("_") and options.wants(p.topic, p.partition)
        }
    )


def typed_source(path: str, raw: Mapping[str, str]) -> TypedSource | None:
    """The decoding asked for by ``valueFormat``/``keyFormat``, resolved on the driver."""
    given = {side: _opt(raw, f"{side}Format") for side in ("key", "value")}
    formats: dict[str, str] = {
        side: f.lower() for side, f in given.items() if f is not None and f.lower() != "binary"
    }
    if not formats:
        return None
    for side, fmt in formats.items():
        if fmt not in FORMATS:
            raise OptionError(f"option {side}Format: expected avro, protobuf or json, got {fmt!r}")
    options = parse_read_options(raw)
    topics = _topics(path, options)
    if options.topics is None and options.topic_pattern is None and options.assign is None:
        # the registry's own topics and Kafka's internal ones are not records of the subject
        options = replace(options, topics=frozenset(topics))
    url = _opt(raw, "schemaRegistryUrl")
    subjects = {}
    for side in formats:
        subject = _opt(raw, f"{side}Subject")
        if subject is None:
            if len(topics) != 1:
                raise OptionError(
                    f"{side}Format: {len(topics)} topics selected ({', '.join(topics[:5])}); "
                    f"name one with subscribe or give {side}Subject"
                )
            subject = f"{topics[0]}-{side}"  # TopicNameStrategy
        subjects[side] = subject
    if url:
        store = store_from_registry(url, list(subjects.values()))
    else:
        schemas_path = _opt(raw, "schemasPath") or path
        store = read_schemas_topic(schemas_path, _opt(raw, "schemasTopic") or SCHEMAS_TOPIC)
    sides = []
    for side, fmt in formats.items():
        reader = store.latest(subjects[side])
        if reader.schema_type != FORMATS[fmt]:
            raise OptionError(
                f"{side}Format {fmt}: subject {subjects[side]} holds a {reader.schema_type} schema"
            )
        header = _opt(raw, f"{side}SchemaIdHeader")
        headers = (header,) if header else DEFAULT_HEADERS[side]
        message = _opt(raw, f"{side}Message")
        sides.append(_Side(side, fmt, subjects[side], reader, headers, message))
    return TypedSource(path, options, sides, store)
