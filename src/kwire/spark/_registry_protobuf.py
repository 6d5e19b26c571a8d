"""Protobuf values of the Schema Registry decoding: schemas as base64 FileDescriptorProtos or .proto
source compiled with protoc (grpcio-tools), references at their names; the Arrow type of a
message and the conversion of decoded messages to Python values.
"""

from __future__ import annotations

import base64
import os
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from kwire.errors import KwireError, OptionError
from kwire.spark._registry_store import SchemaEntry, SchemaStore
from kwire.spark._registry_wire import (
    _Format,
    _message_indexes,
    _pyvalues_to_arrow,
    parse_wire_prefix,
)

if TYPE_CHECKING:
    import pyarrow as pa


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
