"""Is a spec change a compatible evolution? Kafka's evolution rules, checked between two spec sets.

Approach: load both sides with the ordinary loader (so a spec that breaks a single-file rule, such as
a tagged field in an inflexible version or taggedVersions outside versions, is reported with the
loader's own message), then walk the two messages side by side for every version both sides
have. At each such version the untagged fields must keep their wire layout exactly, the version
must stay flexible or inflexible, and every tag must keep its field, type and nullability. Tags are
also compared across all versions, because a tag number must never be reused even after its field
is gone. Findings at the same rule and field are merged over versions so the report stays short.

Three kinds of finding: ``violation`` (incompatible), ``removal`` (versions or messages dropped:
wire-compatible for what remains, but old peers lose them, as Kafka 4.0 did in KIP-896) and
``change`` (compatible: new versions, new tagged fields, new messages, renames). Changes to a
version the old spec marked unstable (``latestVersionUnstable``) are reported as ``change``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import field
from pathlib import Path
from typing import Literal

from kwire._lazy import lazy_dataclass
from kwire.protocol._spec import (
    FieldSpec,
    MessageSpec,
    SpecError,
    StructSpec,
    VersionRange,
    load_spec_file,
)

__all__ = ["EvolutionReport", "Finding", "check_evolution", "compare_messages"]

Kind = Literal["violation", "removal", "change"]
_KIND_ORDER = {"violation": 0, "removal": 1, "change": 2}


@lazy_dataclass(frozen=True)
class Finding:
    """One rule outcome: which rule, where (file, message, field path), at which versions, and why."""

    kind: Kind
    rule: str
    file: str
    message: str
    field: str
    detail: str
    versions: str = ""

    def to_json(self) -> dict[str, str]:
        return {
            "kind": self.kind,
            "rule": self.rule,
            "file": self.file,
            "message": self.message,
            "field": self.field,
            "versions": self.versions,
            "detail": self.detail,
        }


@lazy_dataclass
class EvolutionReport:
    """What comparing two releases' specs found: violations, removals and changes."""

    findings: list[Finding] = field(default_factory=list)

    @property
    def violations(self) -> list[Finding]:
        return [f for f in self.findings if f.kind == "violation"]

    @property
    def removals(self) -> list[Finding]:
        return [f for f in self.findings if f.kind == "removal"]

    @property
    def changes(self) -> list[Finding]:
        return [f for f in self.findings if f.kind == "change"]

    def ok(self, *, strict: bool = False) -> bool:
        """No violations (and, when ``strict``, no removals either)."""
        return not self.violations and not (strict and self.removals)


# -- loading ------------------------------------------------------------------------------------


def _spec_files(path: Path) -> dict[str, Path]:
    if path.is_dir():
        return {p.name: p for p in sorted(path.glob("*.json"))}
    return {path.name: path}


def _load(path: Path, report: EvolutionReport, side: str) -> MessageSpec | None:
    try:
        return load_spec_file(path)
    except SpecError as exc:
        if side == "new":
            report.findings.append(
                Finding(
                    "violation", _rule_for_load_error(str(exc)), path.name, path.stem, "", str(exc)
                )
            )
        else:  # a broken baseline says nothing about the change; report it anyway
            report.findings.append(
                Finding("violation", "invalid-old-spec", path.name, path.stem, "", str(exc))
            )
        return None


def _rule_for_load_error(message: str) -> str:
    """Name the evolution rule a loader error breaks (the loader enforces the single-file rules)."""
    text = message.lower()
    if "flexible" in text and "tagged" in text:
        return "tagged-field-in-inflexible-version"
    if "taggedversions" in text and "subset of versions" in text:
        return "tagged-versions-outside-versions"
    if "duplicate tag" in text:
        return "duplicate-tag"
    return "invalid-spec"


def check_evolution(old: str | Path, new: str | Path) -> EvolutionReport:
    """Compare two spec files or two spec directories (matched by file name)."""
    old_files, new_files = _spec_files(Path(old)), _spec_files(Path(new))
    if Path(old).is_file() and Path(new).is_file():  # two single files: compare them directly
        old_files = {"spec": Path(old)}
        new_files = {"spec": Path(new)}
    report = EvolutionReport()
    for name in sorted(old_files.keys() | new_files.keys()):
        if name not in new_files:
            report.findings.append(
                Finding(
                    "removal", "message-removed", name, Path(name).stem, "", "spec file removed"
                )
            )
            continue
        new_spec = _load(new_files[name], report, "new")
        if name not in old_files:
            if new_spec is not None:
                report.findings.append(
                    Finding(
                        "change",
                        "new-message",
                        name,
                        new_spec.name,
                        "",
                        f"new {new_spec.type}, versions {new_spec.valid_versions}",
                    )
                )
            continue
        old_spec = _load(old_files[name], report, "old")
        if old_spec is not None and new_spec is not None:
            report.findings.extend(compare_messages(old_spec, new_spec, file=new_files[name].name))
    report.findings.sort(key=lambda f: (_KIND_ORDER[f.kind], f.file, f.field, f.rule))
    return report


# -- comparison ---------------------------------------------------------------------------------


@lazy_dataclass(frozen=True)
class _Raw:
    """A finding at one version, before versions are merged."""

    kind: Kind
    rule: str
    field: str
    detail: str
    version: int | None


def compare_messages(old: MessageSpec, new: MessageSpec, *, file: str = "") -> list[Finding]:
    """Every finding for one message evolving from ``old`` to ``new``."""
    file = file or new.source or f"{new.name}.json"
    raws = list(_compare(old, new))
    unstable = old.valid_versions.highest if old.latest_version_unstable else None
    merged: dict[tuple[Kind, str, str, str], list[int]] = {}
    for r in raws:
        kind = r.kind
        if kind == "violation" and r.version is not None and r.version == unstable:
            kind = "change"  # an unstable version may still change
        versions = merged.setdefault((kind, r.rule, r.field, r.detail), [])
        if r.version is not None:
            versions.append(r.version)
    return [
        Finding(kind, rule, file, new.name, path, detail, _ranges(sorted(set(vs))))
        for (kind, rule, path, detail), vs in merged.items()
    ]


def _ranges(versions: list[int]) -> str:
    parts: list[str] = []
    start = prev = None
    for v in [*versions, None]:
        if v is not None and prev is not None and v == prev + 1:
            prev = v
            continue
        if start is not None:
            parts.append(str(start) if start == prev else f"{start}-{prev}")
        start = prev = v
    return ",".join(parts)


def _compare(old: MessageSpec, new: MessageSpec) -> Iterator[_Raw]:
    if old.api_key != new.api_key:
        yield _Raw(
            "violation", "api-key-changed", "", f"apiKey {old.api_key} -> {new.api_key}", None
        )
    if old.type != new.type:
        yield _Raw("violation", "type-changed", "", f"type {old.type} -> {new.type}", None)
    added = _difference(new.valid_versions, old.valid_versions)
    removed = _difference(old.valid_versions, new.valid_versions)
    if added:
        yield _Raw("change", "new-versions", "", f"versions {_ranges(added)} added", None)
    if removed:
        yield _Raw("removal", "versions-removed", "", f"versions {_ranges(removed)} removed", None)
    shared = [v for v in old.versions() if v in new.valid_versions]
    for v in shared:
        if old.flexible(v) != new.flexible(v):
            what = (
                "inflexible version turned flexible"
                if new.flexible(v)
                else ("flexible version turned inflexible")
            )
            yield _Raw("violation", "flexibility-changed", "", what, v)
            continue  # every field would differ; the flexibility change says it all
        if new.flexible(v) and old.tag_header != new.tag_header:
            # kwire extension: the interleaved tag header of KIP-482's first draft: the tag-header
            # layout of an existing version changed
            yield _Raw(
                "violation",
                "tag-header-changed",
                "",
                f"tag headers changed from {old.tag_header} to {new.tag_header}",
                v,
            )
        yield from _compare_struct(old, new, old.struct, new.struct, "", v)
    yield from _tag_reuse(old, new, old.struct, new.struct, "")


def _difference(a: VersionRange, b: VersionRange) -> list[int]:
    return [v for v in a.versions() if v not in b]


def _wire_type(spec: MessageSpec, f: FieldSpec, v: int) -> str:
    """How a field is written at ``v``: type, compactness and nullability (not its name)."""
    t = f.type
    compact = t.has_compact_form and f.compact(v, spec.flexible_versions)
    # wire_type: the varint encoding at v (kwire extension, the varint proposal) is part of the
    # layout
    text = ("compact " if compact else "") + f.wire_type(v)
    if f.nullable(v):
        text = "nullable " + text
    return text


def _struct_of(f: FieldSpec) -> StructSpec | None:
    return f.struct


def _path(parent: str, f: FieldSpec) -> str:
    return f"{parent}.{f.name}" if parent else f.name


def _compare_struct(
    old: MessageSpec, new: MessageSpec, a: StructSpec, b: StructSpec, path: str, v: int
) -> Iterator[_Raw]:
    a_fields = [f for f in a.fields_at(v) if not f.tagged(v)]
    b_fields = [f for f in b.fields_at(v) if not f.tagged(v)]
    for i in range(max(len(a_fields), len(b_fields))):
        fa = a_fields[i] if i < len(a_fields) else None
        fb = b_fields[i] if i < len(b_fields) else None
        if fa is None and fb is not None:
            yield _Raw(
                "violation",
                "untagged-field-added",
                _path(path, fb),
                f"untagged field {fb.name} added to an existing version (add a tagged field, or bump the version)",
                v,
            )
            continue
        if fb is None and fa is not None:
            yield _Raw(
                "violation",
                "untagged-field-removed",
                _path(path, fa),
                f"untagged field {fa.name} removed from an existing version",
                v,
            )
            continue
        assert fa is not None and fb is not None
        ta, tb = _wire_type(old, fa, v), _wire_type(new, fb, v)
        if ta != tb:
            yield _Raw(
                "violation",
                "layout-changed",
                _path(path, fb),
                f"field {fa.name} at position {i} was {ta}, now {fb.name} is {tb}",
                v,
            )
            continue
        if fa.name != fb.name:
            yield _Raw(
                "change", "field-renamed", _path(path, fb), f"{fa.name} renamed to {fb.name}", v
            )
        sa, sb = _struct_of(fa), _struct_of(fb)
        if sa is not None and sb is not None:
            yield from _compare_struct(old, new, sa, sb, _path(path, fb), v)
    a_tags = {f.tag: f for f in a.fields_at(v) if f.tagged(v)}
    b_tags = {f.tag: f for f in b.fields_at(v) if f.tagged(v)}
    for tag in sorted(t for t in a_tags.keys() | b_tags.keys() if t is not None):
        fa, fb = a_tags.get(tag), b_tags.get(tag)
        if fa is None and fb is not None:
            yield _Raw(
                "change",
                "new-tagged-field",
                _path(path, fb),
                f"tagged field {fb.name} (tag {tag}) added",
                v,
            )
            continue
        if fb is None and fa is not None:
            yield _Raw(
                "change",
                "tagged-field-removed",
                _path(path, fa),
                f"tagged field {fa.name} (tag {tag}) removed; tag {tag} must never be reused",
                v,
            )
            continue
        assert fa is not None and fb is not None
        if fa.name != fb.name:
            continue  # reported once, over all versions, by _tag_reuse
        if fa.wire_type(v) != fb.wire_type(v):
            yield _Raw(
                "violation",
                "tagged-type-changed",
                _path(path, fb),
                f"tagged field {fb.name} (tag {tag}) changed type {fa.wire_type(v)} -> "
                f"{fb.wire_type(v)}",
                v,
            )
        elif fa.nullable(v) != fb.nullable(v):
            yield _Raw(
                "violation",
                "tagged-nullability-changed",
                _path(path, fb),
                f"tagged field {fb.name} (tag {tag}) became "
                + ("nullable" if fb.nullable(v) else "non-nullable"),
                v,
            )
        else:
            sa, sb = _struct_of(fa), _struct_of(fb)
            if sa is not None and sb is not None:
                yield from _compare_struct(old, new, sa, sb, _path(path, fb), v)


def _tags(fields: Iterable[FieldSpec]) -> dict[int, FieldSpec]:
    return {f.tag: f for f in fields if f.tag is not None}


def _tag_reuse(
    old: MessageSpec, new: MessageSpec, a: StructSpec, b: StructSpec, path: str
) -> Iterator[_Raw]:
    """A tag number keeps its field forever, whatever the versions (Kafka's evolution rule)."""
    a_tags, b_tags = _tags(a.fields), _tags(b.fields)
    for tag in sorted(a_tags.keys() & b_tags.keys()):
        if a_tags[tag].name != b_tags[tag].name:
            yield _Raw(
                "violation",
                "tag-reused",
                _path(path, b_tags[tag]),
                f"tag {tag} belonged to {a_tags[tag].name}, now to {b_tags[tag].name}",
                None,
            )
    by_name = {f.name: f for f in b.fields}
    for fa in a.fields:
        fb = by_name.get(fa.name)
        if fb is None:
            continue
        sa, sb = _struct_of(fa), _struct_of(fb)
        if sa is not None and sb is not None and sa is not a:
            yield from _tag_reuse(old, new, sa, sb, _path(path, fb))
