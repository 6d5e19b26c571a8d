"""Per-version wire layouts computed straight from Kafka's raw JSON message specs.

A small, independent reading of the spec language used by ``tools/merge_specs.py`` and the release
tests to *verify* the merged corpus: it does not share code with kwire's own loader on purpose, so the
two can check each other. A layout is what decides the bytes on the wire for one message-version:

    Layout  = (flexible, fields)
    fields  = tuple of Field, regular fields in declaration order, then tagged fields by tag
    Field   = (name, type, nullable, tag, children)

``type`` is a primitive word (``int32``, ``string``, ``records``, ...), ``[]<primitive>`` for an array
of primitives, ``[]struct`` for an array of structs or ``struct``; ``children`` holds the nested
fields of struct types. Struct *names*, ``about``, ``entityType``, ``mapKey`` and friends do not
change the bytes and are left out. Field-level ``flexibleVersions`` (only ``RequestHeader.ClientId``
has one) is folded into the type as ``string!legacy`` where it differs from the message's.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

PRIMITIVES = frozenset(
    {
        "bool",
        "int8",
        "int16",
        "uint16",
        "int32",
        "uint32",
        "int64",
        "float64",
        "string",
        "uuid",
        "bytes",
        "records",
    }
)


class Versions(NamedTuple):
    """An inclusive version range; ``hi`` is None for open-ended (``N+``); empty for ``none``."""

    lo: int
    hi: int | None
    empty: bool = False

    @classmethod
    def parse(cls, text: str | None, *, default: str = "none") -> Versions:
        s = (text if text is not None else default).strip()
        if s == "none":
            return cls(0, -1, True)
        if s.endswith("+"):
            return cls(int(s[:-1]), None)
        if "-" in s:
            a, b = s.split("-", 1)
            return cls(int(a), int(b))
        return cls(int(s), int(s))

    def __contains__(self, v: object) -> bool:
        if self.empty or not isinstance(v, int):
            return False
        return v >= self.lo and (self.hi is None or v <= self.hi)

    def __str__(self) -> str:
        if self.empty:
            return "none"
        if self.hi is None:
            return f"{self.lo}+"
        if self.hi == self.lo:
            return str(self.lo)
        return f"{self.lo}-{self.hi}"

    @classmethod
    def from_set(cls, versions: Iterable[int], *, open_ended_from: int | None = None) -> Versions:
        """The range covering exactly ``versions`` (which must be contiguous)."""
        vs = sorted(set(versions))
        if not vs:
            return cls(0, -1, True)
        if vs != list(range(vs[0], vs[-1] + 1)):
            raise ValueError(f"versions are not contiguous: {vs}")
        if open_ended_from is not None and vs[-1] >= open_ended_from:
            return cls(vs[0], None)
        return cls(vs[0], vs[-1])


_COMMENT = re.compile(r'"(?:\\.|[^"\\])*"|//[^\n]*')


def strip_comments(text: str) -> str:
    """Remove ``//`` comments (outside strings) from Kafka's JSON-with-comments."""
    return _COMMENT.sub(lambda m: m.group(0) if m.group(0).startswith('"') else "", text)


def load_spec(path: Path | str) -> dict[str, Any]:
    spec = json.loads(strip_comments(Path(path).read_text(encoding="utf-8")))
    assert isinstance(spec, dict)
    return spec


def load_spec_text(text: str) -> dict[str, Any]:
    spec = json.loads(strip_comments(text))
    assert isinstance(spec, dict)
    return spec


class Field(NamedTuple):
    name: str
    type: str
    nullable: bool
    tag: int | None
    children: tuple[Field, ...] | None


class Layout(NamedTuple):
    flexible: bool
    fields: tuple[Field, ...]


def valid_versions(spec: Mapping[str, Any]) -> list[int]:
    vr = Versions.parse(spec.get("validVersions"))
    if vr.empty:
        return []
    assert vr.hi is not None, "validVersions must be closed"
    return list(range(vr.lo, vr.hi + 1))


def _common_structs(spec: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    return {s["name"]: s for s in spec.get("commonStructs", [])}


def _fields_layout(
    fields: Iterable[Mapping[str, Any]],
    version: int,
    flexible: bool,
    common: Mapping[str, Mapping[str, Any]],
) -> tuple[Field, ...]:
    regular: list[Field] = []
    tagged: list[Field] = []
    for f in fields:
        if version not in Versions.parse(f.get("versions")):
            continue
        ftype: str = f["type"]
        elem = ftype[2:] if ftype.startswith("[]") else ftype
        children: tuple[Field, ...] | None = None
        if elem in PRIMITIVES:
            wtype = ftype
        else:
            sub = f.get("fields")
            if sub is None:
                sub = common[elem]["fields"]
            children = _fields_layout(sub, version, flexible, common)
            wtype = "[]struct" if ftype.startswith("[]") else "struct"
        fflex = f.get("flexibleVersions")
        if fflex is not None and (version in Versions.parse(fflex)) != flexible:
            wtype += "!legacy" if version not in Versions.parse(fflex) else "!compact"
        nullable = version in Versions.parse(f.get("nullableVersions"))
        tag: int | None = None
        if "tag" in f and version in Versions.parse(f.get("taggedVersions")):
            tag = int(f["tag"])
        entry = Field(f["name"], wtype, nullable, tag, children)
        (tagged if tag is not None else regular).append(entry)
    tagged.sort(key=lambda e: e.tag if e.tag is not None else -1)
    return tuple(regular) + tuple(tagged)


def layout(spec: Mapping[str, Any], version: int) -> Layout:
    """The wire layout of ``spec`` at ``version`` (which must be one of its valid versions)."""
    if version not in valid_versions(spec):
        raise ValueError(f"{spec['name']} has no version {version}")
    flexible = version in Versions.parse(spec.get("flexibleVersions"))
    return Layout(
        flexible, _fields_layout(spec["fields"], version, flexible, _common_structs(spec))
    )


def layouts(spec: Mapping[str, Any]) -> dict[int, Layout]:
    return {v: layout(spec, v) for v in valid_versions(spec)}


def describe_difference(a: Layout, b: Layout, path: str = "") -> str | None:
    """A short text naming the first difference between two layouts, or None if equal."""
    if a.flexible != b.flexible:
        return f"{path or '<message>'}: flexible {a.flexible} != {b.flexible}"
    return _diff_fields(a.fields, b.fields, path)


def _diff_fields(a: tuple[Field, ...], b: tuple[Field, ...], path: str) -> str | None:
    for i in range(max(len(a), len(b))):
        if i >= len(a):
            return f"{path}: extra field {b[i].name} on the right"
        if i >= len(b):
            return f"{path}: extra field {a[i].name} on the left"
        fa, fb = a[i], b[i]
        here = f"{path}.{fa.name}" if path else fa.name
        if fa.name.lower() != fb.name.lower():
            return f"{here}: name {fa.name} != {fb.name}"
        for attr in ("type", "nullable", "tag"):
            if getattr(fa, attr) != getattr(fb, attr):
                return f"{here}: {attr} {getattr(fa, attr)!r} != {getattr(fb, attr)!r}"
        if fa.children is not None and fb.children is not None:
            d = _diff_fields(fa.children, fb.children, here)
            if d:
                return d
    return None


def _anon(fields: tuple[Field, ...]) -> tuple[Field, ...]:
    return tuple(
        Field("", f.type, f.nullable, f.tag, None if f.children is None else _anon(f.children))
        for f in fields
    )


def wire_equal(a: Layout, b: Layout) -> bool:
    """Do two layouts give the same bytes (field names aside)?"""
    return a.flexible == b.flexible and _anon(a.fields) == _anon(b.fields)
