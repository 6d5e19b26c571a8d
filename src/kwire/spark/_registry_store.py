"""The Schema Registry's schemas for the kafka-log source's typed columns: ``SchemaStore`` (by id
and by subject), filled from a ``_schemas`` topic backup or from a registry through
confluent-kafka's SchemaRegistryClient.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import field, replace
from typing import TYPE_CHECKING, Any

from kwire._lazy import lazy_dataclass
from kwire.errors import KwireError, OptionError

if TYPE_CHECKING:
    pass


FORMATS = {"avro": "AVRO", "protobuf": "PROTOBUF", "json": "JSON"}
SCHEMAS_TOPIC = "_schemas"
_UNKNOWN_GUID = -2
DEFAULT_HEADERS = {"value": ("__value_schema_id",), "key": ("__key_schema_id",)}


def _opt(options: Mapping[str, str], name: str) -> str | None:
    lowered = {str(k).lower(): v for k, v in options.items()}
    value = lowered.get(name.lower())
    return None if value is None else str(value)


# ---- the schema store --------------------------------------------------------------------------


@lazy_dataclass(frozen=True)
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


@lazy_dataclass
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
