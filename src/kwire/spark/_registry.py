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
"""

from __future__ import annotations

import base64
import json
import logging
import os
import re
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from kwire.errors import CorruptRecordError, KwireError, OptionError
from kwire.spark._options import ReadOptions, parse_read_options
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

FORMATS = {"avro": "AVRO", "protobuf": "PROTOBUF", "json": "JSON"}
SCHEMAS_TOPIC = "_schemas"
_UNKNOWN_GUID = -2
DEFAULT_HEADERS = {"value": ("__value_schema_id",), "key": ("__key_schema_id",)}


def _opt(options: Mapping[str, str], name: str) -> str | None:
    lowered = {str(k).lower(): v for k, v in options.items()}
    value = lowered.get(name.lower())
    return None if value is None else str(value)


# ---- the schema store --------------------------------------------------------------------------


@dataclass(frozen=True)
class SchemaEntry:
    """One registered schema (as the registry's ``_schemas`` topic or REST API gives it)."""

    id: int
    schema_type: str  # AVRO, PROTOBUF, JSON
    schema: str
    references: tuple[tuple[str, str, int], ...] = ()  # (name, subject, version)
    subject: str | None = None
    version: int | None = None
    deleted: bool = False
    guid: str | None = None


@dataclass
class SchemaStore:
    """Schemas by id and subject versions; picklable, shipped to executors with the reader."""

    by_id: dict[int, SchemaEntry] = field(default_factory=dict)
    versions: dict[str, dict[int, SchemaEntry]] = field(default_factory=dict)
    url: str | None = None

    def add(self, entry: SchemaEntry) -> None:
        self.by_id.setdefault(entry.id, entry)
        if entry.subject is not None and entry.version is not None:
            self.versions.setdefault(entry.subject, {})[entry.version] = entry

    def latest(self, subject: str) -> SchemaEntry:
        live = [e for v, e in sorted(self.versions.get(subject, {}).items()) if not e.deleted]
        if not live:
            raise OptionError(f"no schema registered under subject {subject!r}")
        return live[-1]

    def version(self, subject: str, version: int) -> SchemaEntry:
        entry = self.versions.get(subject, {}).get(version)
        if entry is None and self.url:
            entry = _fetch_version(self.url, subject, version)
            self.add(entry)
        if entry is None:
            raise KwireError(f"schema {subject} version {version} is not known")
        return entry

    def get(self, schema_id: int) -> SchemaEntry | None:
        entry = self.by_id.get(schema_id)
        if entry is None and self.url:
            try:
                entry = _fetch_id(self.url, schema_id)
            except Exception:  # the registry does not know it: the record is corrupt
                return None
            self.by_id[schema_id] = entry
        return entry

    def by_guid(self, guid: str) -> SchemaEntry | None:
        for entry in self.by_id.values():
            if entry.guid == guid:
                return entry
        return None


def _entry(doc: Mapping[str, Any]) -> SchemaEntry:
    refs = tuple(
        (str(r["name"]), str(r["subject"]), int(r["version"])) for r in doc.get("references") or ()
    )
    return SchemaEntry(
        id=int(doc["id"]),
        schema_type=str(doc.get("schemaType") or "AVRO").upper(),
        schema=str(doc["schema"]),
        references=refs,
        subject=doc.get("subject"),
        version=None if doc.get("version") is None else int(doc["version"]),
        deleted=bool(doc.get("deleted", False)),
        guid=doc.get("guid"),
    )


def store_from_records(records: list[tuple[bytes | None, bytes | None]]) -> SchemaStore:
    """A store from the ``_schemas`` topic's (key, value) records, in offset order."""
    latest: dict[tuple[str, int], SchemaEntry | None] = {}
    for key, value in records:
        if key is None:
            continue
        try:
            k = json.loads(key)
        except ValueError:
            continue
        if not isinstance(k, dict):
            continue
        keytype = k.get("keytype")
        if keytype == "SCHEMA":
            slot = (str(k.get("subject")), int(k.get("version", 0)))
            if value is None:  # a hard delete
                latest[slot] = None
                continue
            try:
                latest[slot] = _entry(json.loads(value))
            except (ValueError, KeyError, TypeError):
                continue
        elif keytype == "DELETE_SUBJECT" and value is not None:
            try:
                doc = json.loads(value)
                subject, upto = str(doc["subject"]), int(doc["version"])
            except (ValueError, KeyError, TypeError):
                continue
            for (s, v), e in list(latest.items()):
                if s == subject and v <= upto and e is not None:
                    latest[(s, v)] = replace(e, deleted=True)
    store = SchemaStore()
    for entry in latest.values():
        if entry is not None:
            store.add(entry)
    return store


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


def _client(url: str) -> Any:
    try:
        from confluent_kafka.schema_registry import SchemaRegistryClient
    except ImportError:
        return None
    return SchemaRegistryClient({"url": url})


def _http_json(url: str) -> Any:
    import urllib.request

    with urllib.request.urlopen(url, timeout=30) as resp:
        return json.loads(resp.read())


def _from_registered(rs: Any, subject: str | None = None) -> SchemaEntry:
    schema = rs.schema if hasattr(rs, "schema") else rs
    refs = tuple((r.name, r.subject, int(r.version)) for r in (schema.references or ()))
    return SchemaEntry(
        id=int(rs.schema_id),
        schema_type=str(schema.schema_type or "AVRO").upper(),
        schema=str(schema.schema_str),
        references=refs,
        subject=getattr(rs, "subject", subject),
        version=getattr(rs, "version", None),
        guid=None if getattr(rs, "guid", None) is None else str(rs.guid),
    )


def _fetch_version(url: str, subject: str, version: int) -> SchemaEntry:
    client = _client(url)
    if client is not None:
        return _from_registered(client.get_version(subject, version), subject)
    return _entry(_http_json(f"{url.rstrip('/')}/subjects/{subject}/versions/{version}"))


def _fetch_id(url: str, schema_id: int) -> SchemaEntry:
    client = _client(url)
    if client is not None:
        schema = client.get_schema(schema_id)
        refs = tuple((r.name, r.subject, int(r.version)) for r in (schema.references or ()))
        return SchemaEntry(
            schema_id, str(schema.schema_type or "AVRO").upper(), schema.schema_str, refs
        )
    doc = _http_json(f"{url.rstrip('/')}/schemas/ids/{schema_id}")
    return _entry({**doc, "id": schema_id})


def store_from_registry(url: str, subjects: list[str]) -> SchemaStore:
    """Every version of ``subjects`` (and what they reference) from a registry, on the driver."""
    store = SchemaStore(url=url)
    client = _client(url)
    todo = list(subjects)
    seen: set[str] = set()
    while todo:
        subject = todo.pop()
        if subject in seen:
            continue
        seen.add(subject)
        if client is not None:
            versions = client.get_versions(subject)
        else:
            versions = _http_json(f"{url.rstrip('/')}/subjects/{subject}/versions")
        for v in versions:
            entry = _fetch_version(url, subject, int(v))
            store.add(entry)
            todo.extend(ref_subject for _, ref_subject, _ in entry.references)
    return store


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


class _Protobuf(_Format):
    schema_type = "PROTOBUF"

    def __init__(self, store: SchemaStore, reader: SchemaEntry, message: str | None = None) -> None:
        super().__init__(store, reader)
        self._fdps: dict[int, tuple[Any, ...]] = {}
        self._files: dict[int, Any] = {}
        self._classes: dict[tuple[int, tuple[int, ...]], Any] = {}
        self._converters: dict[Any, _Converter] = {}  # by descriptor, with the classes above
        index = 0  # Confluent's default: the file's first message
        if message is not None:
            names = [m.name for m in self.root(reader).message_type]
            short = message.rsplit(".", 1)[-1]
            if short not in names:
                raise OptionError(f"Protobuf schema {reader.id} has no message {message!r}")
            index = names.index(short)
        self.descriptor = self.message(reader, (index,)).DESCRIPTOR

    def files(self, entry: SchemaEntry) -> tuple[Any, ...]:
        """The entry's FileDescriptorProtos, dependencies first (see _proto_files)."""
        if entry.id not in self._fdps:
            self._fdps[entry.id] = _proto_files(self.store, entry)
        return self._fdps[entry.id]

    def root(self, entry: SchemaEntry) -> Any:
        """The entry's own FileDescriptorProto."""
        return self.files(entry)[-1]

    def file(self, entry: SchemaEntry) -> Any:
        if entry.id not in self._files:
            from google.protobuf import descriptor_pool

            pool = descriptor_pool.DescriptorPool()
            for fdp in self.files(entry):  # dependencies first, each file once
                pool.Add(fdp)
            self._files[entry.id] = pool.FindFileByName(self.root(entry).name)
        return self._files[entry.id]

    def message(self, entry: SchemaEntry, indexes: tuple[int, ...]) -> Any:
        key = (entry.id, indexes)
        if key not in self._classes:
            from google.protobuf import message_factory

            desc = self.file(entry).message_types_by_name[
                self.root(entry).message_type[indexes[0]].name
            ]
            for i in indexes[1:]:
                desc = desc.nested_types[i]
            self._classes[key] = message_factory.GetMessageClass(desc)
        return self._classes[key]

    def arrow_type(self) -> pa.DataType:
        return _proto_arrow_type(self.descriptor, ())

    def decode(
        self, column: pa.Array, header_ids: dict[int, int] | None
    ) -> tuple[pa.Array, np.ndarray, dict[int, str]]:
        n = len(column)
        ids = np.full(n, -1, np.int64)
        errors: dict[int, str] = {}
        values: list[Any] = []
        header_ids = header_ids or {}
        for i, raw in enumerate(column.to_pylist()):
            if raw is None:
                values.append(None)
                continue
            try:
                if i in header_ids:
                    schema_id = header_ids[i]
                    indexes, pos = _message_indexes(raw, 0)
                else:
                    schema_id, indexes, pos = parse_wire_prefix(raw, protobuf=True)
                ids[i] = schema_id
                entry = self.store.get(schema_id)
                if entry is None or entry.schema_type != "PROTOBUF":
                    raise ValueError(f"unknown Protobuf schema id {schema_id}")
                msg = self.message(entry, tuple(indexes))()
                msg.ParseFromString(raw[pos:])
                values.append(_proto_value(msg, self._converters))
            except Exception as exc:  # DecodeError, ValueError, KeyError, IndexError
                errors[i] = f"Protobuf: {type(exc).__name__}: {exc}"
                values.append(None)
        return _pyvalues_to_arrow(values, self.arrow_type(), errors, "Protobuf"), ids, errors


def _describe(entry: SchemaEntry) -> str:
    where = f" (subject {entry.subject} version {entry.version})" if entry.subject else ""
    return f"Protobuf schema {entry.id}{where}"


def _serialized_proto(entry: SchemaEntry) -> Any:
    """The entry's FileDescriptorProto if it is stored serialized (base64), else None."""
    from google.protobuf import descriptor_pb2

    try:
        raw = base64.b64decode(entry.schema, validate=True)
        return descriptor_pb2.FileDescriptorProto.FromString(raw)
    except Exception:  # binascii.Error, DecodeError: .proto source text
        return None


# Compiled files by everything protoc saw (per process: protoc runs once per schema, not per task)
_COMPILED: dict[tuple[Any, ...], tuple[Any, ...]] = {}


def _proto_files(
    store: SchemaStore, entry: SchemaEntry, name: str | None = None, stack: tuple[int, ...] = ()
) -> tuple[Any, ...]:
    """The entry's file (named ``name`` when it is imported under that name) after every file it
    imports, each once, in dependency order: what a descriptor pool takes one by one.

    The schema is a base64 FileDescriptorProto, or .proto source text (the registry's canonical
    form) compiled with protoc from grpcio-tools; references are other subjects' schemas, in either
    form, imported under their reference names; google/protobuf/*.proto come with the runtime."""
    if entry.id in stack:
        raise KwireError(f"{_describe(entry)}: its references form a cycle")
    fdp = _serialized_proto(entry)
    if fdp is None:
        return _compile_proto(store, entry, name or f"schema_{entry.id}.proto", (*stack, entry.id))
    if name is not None and fdp.name != name:
        fdp = type(fdp).FromString(fdp.SerializeToString())
        fdp.name = name
    out: dict[str, Any] = {}
    for ref_name, subject, version in entry.references:
        ref = store.version(subject, version)
        for f in _proto_files(store, ref, ref_name, (*stack, entry.id)):
            out.setdefault(f.name, f)
    for dep in fdp.dependency:
        if dep not in out:
            for f in _builtin_files(dep):
                out.setdefault(f.name, f)
    out[fdp.name] = fdp
    return tuple(out.values())


# Files Confluent's registry knows without references, besides google/protobuf/*.proto
_BUILTIN_PROTOS = {
    "confluent/meta.proto": "confluent_kafka.schema_registry.confluent.meta_pb2",
    "confluent/type/decimal.proto": "confluent_kafka.schema_registry.confluent.type.decimal_pb2",
}


def _builtin_files(name: str) -> list[Any]:
    """A file the registry imports without a reference (google/protobuf/*, google/type/*,
    confluent/*) and what it imports, dependencies first, as the installed Python packages
    (protobuf, googleapis-common-protos, confluent-kafka) ship them; [] if not available."""
    import importlib

    from google.protobuf import descriptor_pb2

    stem = name.removesuffix(".proto").replace("/", ".")
    if name.startswith(("google/protobuf/", "google/type/")):
        module = f"{stem}_pb2"
    elif name in _BUILTIN_PROTOS:
        module = _BUILTIN_PROTOS[name]
    else:
        return []
    try:
        root = importlib.import_module(module).DESCRIPTOR
    except ImportError:
        return []
    files: dict[str, Any] = {}

    def walk(fd: Any) -> None:
        for dep in fd.dependencies:
            walk(dep)
        if fd.name not in files:
            fdp = descriptor_pb2.FileDescriptorProto()
            fd.CopyToProto(fdp)
            files[fd.name] = fdp

    walk(root)
    return list(files.values())


_IMPORT = re.compile(r'^\s*import\s+(?:public\s+|weak\s+)?"([^"]+)"\s*;', re.MULTILINE)


def _compile_proto(
    store: SchemaStore, entry: SchemaEntry, root: str, stack: tuple[int, ...]
) -> tuple[Any, ...]:
    """Compile .proto source (the entry's, at ``root``, and its references') with protoc."""
    sources: dict[str, str] = {}  # path under the include dir -> .proto text
    serialized: dict[str, Any] = {}  # files of references stored serialized, by name

    def collect(e: SchemaEntry, path: str, stack: tuple[int, ...]) -> None:
        sources[path] = e.schema
        for ref_name, subject, version in e.references:
            if ref_name in sources or ref_name in serialized:
                continue
            ref = store.version(subject, version)
            if _serialized_proto(ref) is None:
                if ref.id in stack:
                    raise KwireError(f"{_describe(ref)}: its references form a cycle")
                collect(ref, ref_name, (*stack, ref.id))
            else:
                for f in _proto_files(store, ref, ref_name, stack):
                    serialized.setdefault(f.name, f)

    collect(entry, root, stack)
    for text in list(sources.values()):  # confluent/*, google/type/*: from the Python packages
        for name in _IMPORT.findall(text):
            # google/protobuf/*.proto are in protoc's include dir
            if name not in sources and not name.startswith("google/protobuf/"):
                for f in _builtin_files(name):
                    serialized.setdefault(f.name, f)
    key = (
        root,
        tuple(sorted(sources.items())),
        tuple(f.SerializeToString() for f in serialized.values()),
    )
    if key not in _COMPILED:
        files = _run_protoc(entry, root, sources, list(serialized.values()))
        if len(_COMPILED) >= 256:
            _COMPILED.clear()
        _COMPILED[key] = files
    return _COMPILED[key]


def _run_protoc(
    entry: SchemaEntry, root: str, sources: dict[str, str], serialized: list[Any]
) -> tuple[Any, ...]:
    import importlib.resources
    import subprocess
    import sys
    import tempfile
    from pathlib import Path, PurePosixPath

    from google.protobuf import descriptor_pb2

    try:
        import grpc_tools
    except ImportError as exc:
        raise KwireError(
            f"{_describe(entry)} is .proto source text; compiling it needs protoc from "
            "grpcio-tools: pip install grpcio-tools (or kwire[spark])"
        ) from exc
    with tempfile.TemporaryDirectory(prefix="kwire-proto-") as tmp:
        src, out = Path(tmp, "src"), Path(tmp, "out.pb")
        for path, text in sources.items():
            parts = PurePosixPath(path).parts
            if not parts or PurePosixPath(path).is_absolute() or ".." in parts:
                raise KwireError(f"{_describe(entry)}: bad reference name {path!r}")
            target = src.joinpath(*parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        with importlib.resources.as_file(
            importlib.resources.files(grpc_tools) / "_proto"
        ) as include:
            args = [
                sys.executable or "python3",
                "-m",
                "grpc_tools.protoc",
                f"--proto_path={src}",
                f"--proto_path={include}",
                "--include_imports",
                f"--descriptor_set_out={out}",
            ]
            if serialized:
                given = Path(tmp, "in.pb")
                given.write_bytes(
                    descriptor_pb2.FileDescriptorSet(file=serialized).SerializeToString()
                )
                args.append(f"--descriptor_set_in={given}")
            try:
                proc = subprocess.run(
                    [*args, root], capture_output=True, timeout=300, cwd=tmp, check=False
                )
            except (OSError, subprocess.TimeoutExpired) as exc:
                raise KwireError(f"{_describe(entry)}: protoc did not run: {exc}") from exc
        if proc.returncode != 0 or not out.exists():
            message = (
                proc.stderr.decode("utf-8", "replace").strip()
                or proc.stdout.decode("utf-8", "replace").strip()
            )
            message = message.replace(f"{src}{os.sep}", "")  # paths as the schema names them
            raise KwireError(
                f"{_describe(entry)}: protoc cannot compile its .proto source: "
                f"{message or f'exit status {proc.returncode}'}"
            )
        files = list(descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes()).file)
    own = [f for f in files if f.name == root]
    if not own:
        raise KwireError(f"{_describe(entry)}: protoc's output has no file {root}")
    return (*[f for f in files if f.name != root], own[0])


def _is_repeated(f: Any) -> bool:
    repeated = getattr(f, "is_repeated", None)  # protobuf >= 5 (``label`` is gone in 7)
    return bool(repeated) if repeated is not None else f.label == f.LABEL_REPEATED


def _proto_arrow_type(desc: Any, seen: tuple[str, ...]) -> pa.DataType:
    import pyarrow as pa
    from google.protobuf.descriptor import FieldDescriptor as F

    if desc.full_name in seen:
        raise KwireError(f"recursive Protobuf message {desc.full_name} has no Spark type")
    seen = (*seen, desc.full_name)
    scalars = {
        F.TYPE_DOUBLE: pa.float64(),
        F.TYPE_FLOAT: pa.float32(),
        F.TYPE_INT64: pa.int64(),
        F.TYPE_UINT64: pa.int64(),
        F.TYPE_INT32: pa.int32(),
        F.TYPE_FIXED64: pa.int64(),
        F.TYPE_FIXED32: pa.int64(),
        F.TYPE_BOOL: pa.bool_(),
        F.TYPE_STRING: pa.string(),
        F.TYPE_BYTES: pa.binary(),
        F.TYPE_UINT32: pa.int64(),
        F.TYPE_ENUM: pa.string(),
        F.TYPE_SFIXED32: pa.int32(),
        F.TYPE_SFIXED64: pa.int64(),
        F.TYPE_SINT32: pa.int32(),
        F.TYPE_SINT64: pa.int64(),
    }

    def one(f: Any) -> pa.DataType:
        if f.type == F.TYPE_MESSAGE:
            return _proto_arrow_type(f.message_type, seen)
        return scalars[f.type]

    fields = []
    for f in desc.fields:
        if f.type == F.TYPE_MESSAGE and f.message_type.GetOptions().map_entry:
            kf, vf = f.message_type.fields_by_name["key"], f.message_type.fields_by_name["value"]
            t: pa.DataType = pa.map_(one(kf), pa.field("value", one(vf), nullable=True))
        elif _is_repeated(f):
            t = pa.list_(pa.field("element", one(f), nullable=True))
        else:
            t = one(f)
        fields.append(pa.field(f.name, t, nullable=True))
    return pa.struct(fields)


_Converter = Callable[[Any], Any]


def _proto_value(msg: Any, cache: dict[Any, _Converter] | None = None) -> dict[str, Any]:
    """A message as the Python value of its Arrow struct (enums by name, maps as pairs, unset
    fields with presence as None); ``cache`` keeps the converters built for its descriptors."""
    result: dict[str, Any] = _proto_converter(msg.DESCRIPTOR, {} if cache is None else cache)(msg)
    return result


def _proto_converter(desc: Any, cache: dict[Any, _Converter]) -> _Converter:
    """The converter of messages of ``desc``: the per-field decisions (map, repeated, presence,
    nested message, enum names) taken once from the descriptor, not once per value. Keyed by
    the descriptor itself: two schema versions have messages of one name with other fields."""
    found = cache.get(desc)
    if found is not None:
        return found
    steps: list[tuple[str, _Converter]] = []

    def convert(msg: Any) -> dict[str, Any]:
        return {name: get(msg) for name, get in steps}

    cache[desc] = convert  # before the fields: recursive types end here
    for f in desc.fields:
        steps.append((f.name, _proto_field(f, cache)))
    return convert


def _proto_one(f: Any, cache: dict[Any, _Converter]) -> _Converter | None:
    """The converter of one value of field ``f`` (None: the value as it is)."""
    from google.protobuf.descriptor import FieldDescriptor as F

    if f.type == F.TYPE_MESSAGE:
        return _proto_converter(f.message_type, cache)
    if f.type == F.TYPE_ENUM:
        names = {v.number: v.name for v in f.enum_type.values}
        return lambda v: names.get(v) or str(v)
    return None


def _proto_field(f: Any, cache: dict[Any, _Converter]) -> _Converter:
    """The field's Arrow value from a message (getattr once, the decisions made here)."""
    from google.protobuf.descriptor import FieldDescriptor as F

    name = f.name
    if f.type == F.TYPE_MESSAGE and f.message_type.GetOptions().map_entry:
        value = _proto_one(f.message_type.fields_by_name["value"], cache)
        if value is None:
            return lambda m: list(getattr(m, name).items())
        return lambda m: [(k, value(v)) for k, v in getattr(m, name).items()]
    one = _proto_one(f, cache)
    if _is_repeated(f):
        if one is None:
            return lambda m: list(getattr(m, name))
        return lambda m: [one(v) for v in getattr(m, name)]
    if f.has_presence:
        if one is None:
            return lambda m: getattr(m, name) if m.HasField(name) else None
        return lambda m: one(getattr(m, name)) if m.HasField(name) else None
    if one is None:
        return lambda m: getattr(m, name)
    return lambda m: one(getattr(m, name))


class _Json(_Format):
    schema_type = "JSON"

    def __init__(self, store: SchemaStore, reader: SchemaEntry) -> None:
        super().__init__(store, reader)
        self.doc = json.loads(reader.schema)
        self.docs = _json_documents(store, reader, self.doc)
        self._validators: dict[int, Callable[[Any], str | None]] = {}

    def validator(self, entry: SchemaEntry) -> Callable[[Any], str | None]:
        """The check of a value against schema ``entry``: None, or why the value does not match."""
        if entry.id not in self._validators:
            doc = json.loads(entry.schema)
            docs = _json_documents(self.store, entry, doc)
            self._validators[entry.id] = _fast_json_check(doc, docs) or _json_check(doc, docs)
        return self._validators[entry.id]

    def arrow_type(self) -> pa.DataType:
        return _json_arrow_type(self.doc, self.doc, _json_base("", self.doc), self.docs, ())

    def decode(
        self, column: pa.Array, header_ids: dict[int, int] | None
    ) -> tuple[pa.Array, np.ndarray, dict[int, str]]:
        n = len(column)
        ids = np.full(n, -1, np.int64)
        errors: dict[int, str] = {}
        values: list[Any] = []
        header_ids = header_ids or {}
        for i, raw in enumerate(column.to_pylist()):
            if raw is None:
                values.append(None)
                continue
            try:
                if i in header_ids:
                    schema_id, pos = header_ids[i], 0
                else:
                    schema_id, _, pos = parse_wire_prefix(raw, protobuf=False)
                ids[i] = schema_id
                entry = self.store.get(schema_id)
                if entry is None or entry.schema_type != "JSON":
                    raise ValueError(f"unknown JSON schema id {schema_id}")
                doc = json.loads(raw[pos:])
                problem = self.validator(entry)(doc)
                if problem is not None:
                    raise ValueError(f"does not match schema {schema_id}: {problem}")
                values.append(doc)
            except Exception as exc:  # ValueError (JSON too), UnicodeDecodeError
                errors[i] = f"JSON: {exc}"
                values.append(None)
        return _pyvalues_to_arrow(values, self.arrow_type(), errors, "JSON"), ids, errors


def _json_check(doc: Any, docs: Mapping[str, Any]) -> Callable[[Any], str | None]:
    """``jsonschema``'s validator for ``doc``, the referenced documents in its registry."""
    from jsonschema.validators import validator_for
    from referencing import Registry, Resource
    from referencing.jsonschema import specification_with

    cls = validator_for(doc)
    # referenced documents without "$schema" are read as the referring one's dialect
    spec = specification_with(cls.META_SCHEMA["$schema"])
    registry: Any = Registry()
    for uri, ref_doc in docs.items():
        registry = registry.with_resource(
            uri, Resource.from_contents(ref_doc, default_specification=spec)
        )
    validator = cls(doc, registry=registry)

    def check(value: Any) -> str | None:
        problem = next(iter(validator.iter_errors(value)), None)
        return None if problem is None else str(problem.message)

    return check


def _fast_json_check(doc: Any, docs: Mapping[str, Any]) -> Callable[[Any], str | None] | None:
    """The same check with ``jsonschema-rs`` (Rust; ~40x faster, the same drafts), or None
    where it is not installed or cannot build the schema (then ``jsonschema`` does). Formats are
    annotations, not checked, as ``jsonschema`` does by default; no reference is fetched."""
    try:
        import jsonschema_rs
    except ImportError:
        return None
    resources = []
    for uri, ref_doc in docs.items():
        resources.append((uri, ref_doc))
        if ":" not in uri:  # a relative name, as resolved against a document without an $id
            resources.append((f"json-schema:///{uri}", ref_doc))
    try:
        registry = jsonschema_rs.Registry(resources) if resources else None
        validator = jsonschema_rs.validator_for(
            doc, registry=registry, validate_formats=False, offline=True
        )
    except Exception:  # a schema jsonschema-rs refuses: leave it to jsonschema
        return None

    def check(value: Any) -> str | None:
        if validator.is_valid(value):
            return None
        problem = next(iter(validator.iter_errors(value)), None)
        return "invalid" if problem is None else str(problem.message)

    return check


def _json_base(base: str, doc: Any) -> str:
    """The base URI inside ``doc`` (its ``$id`` resolved against ``base``)."""
    from urllib.parse import urljoin

    own = doc.get("$id") if isinstance(doc, dict) else None
    if isinstance(own, str):
        return urljoin(base, own) if base else own
    return base


def _json_documents(store: SchemaStore, entry: SchemaEntry, doc: Any) -> dict[str, Any]:
    """The documents ``entry`` references (recursively), by every URI a ``$ref`` may name them
    with: the reference name, the name resolved against the referring document's ``$id``, and
    the document's own ``$id``."""
    from urllib.parse import urljoin

    docs: dict[str, Any] = {}
    todo = [(entry, _json_base("", doc))]
    seen = {entry.id}
    while todo:
        current, base = todo.pop()
        for name, subject, version in current.references:
            ref = store.version(subject, version)
            try:
                ref_doc = json.loads(ref.schema)
            except ValueError as exc:
                raise KwireError(
                    f"JSON schema {ref.id} (subject {subject} version {version}, referenced as "
                    f"{name!r}) is not JSON: {exc}"
                ) from exc
            uris = [name, urljoin(base, name) if base else name]
            own = _json_base("", ref_doc)
            if own:
                uris.append(own)
            for uri in uris:
                docs.setdefault(uri, ref_doc)
            if ref.id not in seen:
                seen.add(ref.id)
                todo.append((ref, own or (urljoin(base, name) if base else name)))
    return docs


def _json_pointer(doc: Any, fragment: str) -> Any:
    """The part of ``doc`` a ``$ref`` fragment (a JSON pointer; "" the whole) points at."""
    from urllib.parse import unquote

    target = doc
    if not fragment:
        return target
    if not fragment.startswith("/"):
        raise KeyError(fragment)  # an anchor: not followed
    for part in unquote(fragment)[1:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        target = target[int(part)] if isinstance(target, list) else target[part]
    return target


def _json_arrow_type(
    s: Any, doc: Any, base: str, docs: Mapping[str, Any], seen: tuple[str, ...]
) -> pa.DataType:
    """The Arrow type of schema ``s`` (part of document ``doc`` whose base URI is ``base``);
    ``$ref`` is followed within the document and into ``docs`` (referenced subjects)."""
    from urllib.parse import urljoin

    import pyarrow as pa

    if not isinstance(s, dict):
        return pa.string()
    if "$ref" in s:
        ref = str(s["$ref"])
        uri, _, fragment = ref.partition("#")
        if uri:
            absolute = urljoin(base, uri) if base else uri
            target_doc = docs.get(absolute, docs.get(uri))
            if target_doc is None:
                return pa.string()  # not a referenced subject: left as JSON text
            target_base = _json_base(absolute, target_doc)
        else:
            target_doc, target_base = doc, base
        key = f"{target_base}#{fragment}"
        if key in seen:
            return pa.string()  # recursive: no Arrow type
        try:
            target = _json_pointer(target_doc, fragment)
        except (KeyError, IndexError, ValueError, TypeError):
            return pa.string()
        return _json_arrow_type(target, target_doc, target_base, docs, (*seen, key))

    def sub(x: Any) -> pa.DataType:
        return _json_arrow_type(x, doc, base, docs, seen)

    for combo in ("oneOf", "anyOf"):
        if combo in s:
            branches = [
                b for b in s[combo] if not (isinstance(b, dict) and b.get("type") == "null")
            ]
            return sub(branches[0]) if len(branches) == 1 else pa.string()
    t = s.get("type")
    if isinstance(t, list):
        others = [x for x in t if x != "null"]
        t = others[0] if len(others) == 1 else None
    if t == "object" and "properties" in s:
        return pa.struct(
            [pa.field(name, sub(schema), nullable=True) for name, schema in s["properties"].items()]
        )
    if t == "array":
        return pa.list_(pa.field("element", sub(s.get("items", {}))))
    return {
        "string": pa.string(),
        "integer": pa.int64(),
        "number": pa.float64(),
        "boolean": pa.bool_(),
    }.get(str(t), pa.string())


_FORMAT_CLASSES: dict[str, type[_Format]] = {"avro": _Avro, "protobuf": _Protobuf, "json": _Json}


# ---- the source and its reader -------------------------------------------------------------------


@dataclass
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


@dataclass
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
