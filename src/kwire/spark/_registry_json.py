"""JSON Schema values of the Schema Registry decoding: validation (jsonschema, or a fast check for
simple schemas), ``$ref`` across subjects, the Arrow type of a schema.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from kwire.errors import KwireError
from kwire.spark._registry_store import SchemaEntry, SchemaStore
from kwire.spark._registry_wire import _Format, _pyvalues_to_arrow, parse_wire_prefix

if TYPE_CHECKING:
    import pyarrow as pa


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
