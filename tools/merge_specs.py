"""Bring Kafka 4.x's message specs into kwire: stage them, merge them with 3.9.1's, verify the result.

kwire speaks every version of every API that Kafka 3.9.1 or any 4.x release up to 4.3 speaks: one
spec corpus where each API has the union of both worlds' versions (Kafka 4.0 removed the oldest
versions of many APIs, KIP-896; old clients and old data still use them).

Inputs (all under ``tools/specs/``):

- ``kafka-3.9.1/``: Kafka 3.9.1's spec files, verbatim from ``kafka-clients-3.9.1.jar``
  (``python tools/sync_specs.py --dest tools/specs/kafka-3.9.1``).
- ``kafka-4.3/``: Kafka 4.3.1's spec files. ``stage`` writes them: for every message kio 0.6.5
  carries (kio is generated from Kafka 4.3.1's spec files and keeps every wire fact as field
  metadata), the 3.9.1 spec of the same message is rewritten to 4.3.1's versions, fields, types,
  tags and nullability; fields new in 4.x take their name, ``about`` and default from kio and their
  remaining attributes (``ignorable``, ``entityType``, ...) from ``upstream-attrs.json``, which
  records what Kafka's own 4.x spec files (apache/kafka, read through the search index) say.
  ``SOURCE`` lists, per file, where each part came from.

Outputs:

- ``merged/``: the union corpus (``merge``). For each message: the 4.3 spec is the base for the
  versions 4.3 has; 3.9.1's versions that 4.x removed are kept, with every field that exists only in
  them restored with its version range; a version both have follows 4.3's layout (the few where the
  layouts differ are listed by ``check`` and in docs/versions.md).

``check`` proves, mechanically and independently of kwire's own spec loader (``tools/spec_layout``):
every 4.3 version of the merged corpus has exactly the 4.3 staged layout, every 3.9.1-only version
exactly 3.9.1's layout, every 3.9.1 version that 4.3 also has and did not change the same layout in
both, and every staged 4.3 layout equals kio's.

    python tools/merge_specs.py stage   # rewrite tools/specs/kafka-4.3 from kio + 3.9.1 + attrs
    python tools/merge_specs.py merge   # rewrite tools/specs/merged
    python tools/merge_specs.py check   # exit 1 on any difference (also: merged is up to date)
    python tools/merge_specs.py releases  # rewrite the tables of kwire.protocol.releases
    python tools/merge_specs.py docs      # rewrite the per-API table of docs/versions.md
    python tools/merge_specs.py install   # copy merged/ into src/kwire/protocol/specs (then
                                          #   kwire codegen --write)
"""

from __future__ import annotations

import argparse
import ast
import copy
import dataclasses
import datetime
import inspect
import itertools
import json
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import spec_layout as sl

ROOT = Path(__file__).resolve().parent.parent
SPECS = ROOT / "tools" / "specs"
OLD_DIR = SPECS / "kafka-3.9.1"
NEW_DIR = SPECS / "kafka-4.3"
MERGED_DIR = SPECS / "merged"
ATTRS_FILE = SPECS / "upstream-attrs.json"
NEW_RELEASE = "4.3.1"
OLD_RELEASE = "3.9.1"

# Messages Kafka renamed in 4.x: old spec name -> new spec name (same API key).
RENAMED = {
    "ListClientMetricsResourcesRequest": "ListConfigResourcesRequest",
    "ListClientMetricsResourcesResponse": "ListConfigResourcesResponse",
}

LICENSE = """\
// Licensed to the Apache Software Foundation (ASF) under one or more
// contributor license agreements.  See the NOTICE file distributed with
// this work for additional information regarding copyright ownership.
// The ASF licenses this file to You under the Apache License, Version 2.0
// (the "License"); you may not use this file except in compliance with
// the License.  You may obtain a copy of the License at
//
//    http://www.apache.org/licenses/LICENSE-2.0
//
// Unless required by applicable law or agreed to in writing, software
// distributed under the License is distributed on an "AS IS" BASIS,
// WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
// See the License for the specific language governing permissions and
// limitations under the License.
"""

FIELD_KEY_ORDER = (
    "name",
    "type",
    "versions",
    "nullableVersions",
    "taggedVersions",
    "tag",
    "default",
    "ignorable",
    "mapKey",
    "entityType",
    "zeroCopy",
    "flexibleVersions",
    "about",
    "fields",
)

# ---------------------------------------------------------------------------------------------
# Version sets <-> Kafka range strings


def vset(text: str | None, default: str = "none") -> set[int]:
    r = sl.Versions.parse(text, default=default)
    if r.empty:
        return set()
    hi = r.hi if r.hi is not None else 0x7FFF
    return set(range(r.lo, hi + 1))


def range_text(versions: Iterable[int], top: int, *, open_ended: bool = True) -> str:
    """Kafka's range string for a contiguous version set; ``N+`` when it reaches ``top``."""
    vs = sorted(set(versions))
    if not vs:
        return "none"
    if vs != list(range(vs[0], vs[-1] + 1)):
        raise ValueError(f"not a contiguous version set: {vs}")
    if open_ended and vs[-1] >= top:
        return f"{vs[0]}+"
    return str(vs[0]) if vs[0] == vs[-1] else f"{vs[0]}-{vs[-1]}"


def cover_text(wanted: set[int], present: set[int], top: int) -> str:
    """A range whose intersection with ``present`` is exactly ``wanted`` (gaps may be filled)."""
    if not wanted:
        return "none"
    lo = min(wanted)
    hi = max(wanted)
    if hi >= max(present, default=hi):
        hi = max(hi, top)
    span = set(range(lo, hi + 1))
    if span & present != wanted:
        raise ValueError(f"no single range selects {sorted(wanted)} from {sorted(present)}")
    return range_text(span, top)


# ---------------------------------------------------------------------------------------------
# Reading kio 0.6.5 (Kafka 4.3.1)


def _kio_classes() -> dict[str, dict[int, Any]]:
    import kio_layout

    out: dict[str, dict[int, Any]] = {}
    for name, version, _kind, cls in kio_layout.kio_entities():
        out.setdefault(name, {})[version] = cls
    return out


def _docstrings(cls: Any) -> dict[str, str]:
    """Field docstrings of a kio dataclass (the ``about`` of Kafka's spec)."""
    try:
        tree = ast.parse(inspect.getsource(cls))
    except (OSError, TypeError):
        return {}
    out: dict[str, str] = {}
    body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
    for a, b in itertools.pairwise(body):
        if (
            isinstance(a, ast.AnnAssign)
            and isinstance(a.target, ast.Name)
            and isinstance(b, ast.Expr)
            and isinstance(b.value, ast.Constant)
            and isinstance(b.value.value, str)
        ):
            out[a.target.id] = b.value.value
    return out


KIO_PRIMITIVE = {
    "error_code": "int16",
    "timedelta_i32": "int32",
    "timedelta_i64": "int64",
    "datetime_i64": "int64",
}
TIME_TYPES = frozenset({"timedelta_i32", "timedelta_i64", "datetime_i64"})
ENTITY_TYPES = {
    "BrokerId": "brokerId",
    "GroupId": "groupId",
    "ProducerId": "producerId",
    "TopicName": "topicName",
    "TransactionalId": "transactionalId",
}
IMPLICIT_DEFAULTS: dict[str, object] = {
    "bool": False,
    "string": "",
    "bytes": b"",
    "records": None,
}


@dataclasses.dataclass
class KioField:
    """One field of one kio class (one message-version)."""

    name: str  # kio's snake_case name
    kafka_type: str | None  # None for struct fields
    array: bool
    nullable: bool
    tag: int | None
    struct: Any  # the kio class of a struct field, else None
    default: Any
    about: str | None
    type_hint: Any


def kio_fields(cls: Any) -> list[KioField]:
    import kio_layout
    from kio.serial._introspect import (
        EntityField,
        EntityTupleField,
        PrimitiveTupleField,
        classify_field,
    )

    docs = _docstrings(cls)
    out = []
    for f in dataclasses.fields(cls):
        kind = classify_field(f)
        kt = f.metadata.get("kafka_type")
        struct = kind.type_ if isinstance(kind, EntityField | EntityTupleField) else None
        array = isinstance(kind, EntityTupleField | PrimitiveTupleField)
        nullable = kio_layout.outer_optional(f) and (array or kt not in ("uuid", "datetime_i64"))
        if f.default is not dataclasses.MISSING:
            default = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        else:
            default = dataclasses.MISSING
        out.append(
            KioField(
                f.name,
                kt,
                array,
                nullable,
                f.metadata.get("tag"),
                struct,
                default,
                docs.get(f.name),
                f.type,
            )
        )
    return out


def kafka_name(kio_name: str, kafka_type: str | None) -> str:
    """Kafka's CamelCase field name for a kio field name (kio drops ``Ms`` on time types)."""
    name = "".join(p[:1].upper() + p[1:] for p in kio_name.split("_"))
    if kafka_type in TIME_TYPES:
        name += "Ms"
    return name


def default_text(kf: KioField, ktype: str) -> str | None:
    """Kafka's ``default`` string for a kio default, or None when it is the type's implicit one."""
    d = kf.default
    if d is None and kf.nullable:
        return "null"
    if d is dataclasses.MISSING or kf.struct is not None or kf.array:
        return None
    if d is None:
        if kf.kafka_type == "datetime_i64":
            return "-1"
        if kf.kafka_type == "uuid":
            return None
        return "null"
    if isinstance(d, datetime.timedelta):
        ms = round(d.total_seconds() * 1000)
        return None if ms == 0 else str(ms)
    if isinstance(d, datetime.datetime):
        return str(round(d.timestamp() * 1000))
    if isinstance(d, bool):
        return "true" if d else None
    if isinstance(d, int):
        return None if d == 0 else str(int(d))
    if isinstance(d, float):
        return None if d == 0 else repr(d)
    if isinstance(d, str):
        return None if d == "" else d
    return None


def _entity_type(hint: Any) -> str | None:
    for cand in (hint, *getattr(hint, "__args__", ())):
        name = getattr(cand, "__name__", "")
        if name in ENTITY_TYPES:
            return ENTITY_TYPES[name]
        for inner in getattr(cand, "__args__", ()):
            if getattr(inner, "__name__", "") in ENTITY_TYPES:
                return ENTITY_TYPES[getattr(inner, "__name__", "")]
    return None


# ---------------------------------------------------------------------------------------------
# Staging: 3.9.1 spec + kio facts -> 4.3.1 spec


class StageNotes:
    def __init__(self) -> None:
        self.new_fields: list[str] = []
        self.dropped_fields: list[str] = []
        self.renamed_fields: list[str] = []


def _match(base_fields: Sequence[Mapping[str, Any]], kname: str) -> Mapping[str, Any] | None:
    import kio_layout

    for bf in base_fields:
        if kio_layout.names_match(bf["name"], kname):
            return bf
    return None


def _ordered_union(per_version: Mapping[int, list[KioField]]) -> list[str]:
    """Field names over all versions, newest version's order first, older-only ones inserted
    after their predecessor."""
    order: list[str] = []
    for v in sorted(per_version, reverse=True):
        prev: str | None = None
        for kf in per_version[v]:
            if kf.name not in order:
                pos = order.index(prev) + 1 if prev is not None else 0
                order.insert(pos, kf.name)
            prev = kf.name
    return order


def stage_fields(
    base_fields: Sequence[Mapping[str, Any]],
    base_common: Mapping[str, Mapping[str, Any]],
    per_version: Mapping[int, list[KioField]],
    top: int,
    path: str,
    attrs: Mapping[str, Mapping[str, Any]],
    common_out: dict[str, dict[str, Any]],
    notes: StageNotes,
    struct_uses: Mapping[str, int],
) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    names = attrs.get("__names__", {})
    renames = attrs.get("__renames__", {})
    for kname in _ordered_union(per_version):
        present = {
            v: next(f for f in fs if f.name == kname)
            for v, fs in per_version.items()
            if any(f.name == kname for f in fs)
        }
        newest = present[max(present)]
        base = _match(base_fields, kname)
        fpath = f"{path}.{kname}"
        field: dict[str, Any]
        old_name = renames.get(fpath)
        if base is None and old_name is not None:
            # a field Kafka 4.x renamed: keep its 3.9.1 attributes under the new name
            base = next((b for b in base_fields if b["name"] == old_name), None)
            assert base is not None, f"{fpath}: no 3.9.1 field {old_name}"
            field = {k: copy.deepcopy(v) for k, v in base.items() if k != "fields"}
            field["name"] = kafka_name(kname, newest.kafka_type)
            if newest.about:
                field["about"] = newest.about
            notes.renamed_fields.append(f"{path}.{old_name} -> {field['name']}")
        elif base is not None:
            field = {k: copy.deepcopy(v) for k, v in base.items() if k != "fields"}
        else:
            field = {"name": names.get(fpath) or kafka_name(kname, newest.kafka_type)}
            notes.new_fields.append(f"{path}.{field['name']}")
        versions = set(present)
        # type
        if newest.struct is not None:
            sname = newest.struct.__name__
            if base is not None and old_name is None:
                bt = base["type"]
                sname = bt[2:] if bt.startswith("[]") else bt
            field["type"] = ("[]" if newest.array else "") + sname
        else:
            assert newest.kafka_type is not None
            prim = KIO_PRIMITIVE.get(newest.kafka_type, newest.kafka_type)
            field["type"] = ("[]" if newest.array else "") + prim
        field["versions"] = range_text(versions, top)
        # nullability
        nullable = {v for v, kf in present.items() if kf.nullable}
        if base is not None and "nullableVersions" in base:
            if vset(base["nullableVersions"]) & versions != nullable:
                field["nullableVersions"] = cover_text(nullable, versions, top)
        elif nullable:
            field["nullableVersions"] = cover_text(nullable, versions, top)
        if not nullable:
            field.pop("nullableVersions", None)
        # tags
        tagged = {v for v, kf in present.items() if kf.tag is not None}
        if tagged:
            tags = {kf.tag for kf in present.values() if kf.tag is not None}
            assert len(tags) == 1, f"{fpath}: several tags {tags}"
            field["tag"] = tags.pop()
            if base is None or vset(base.get("taggedVersions")) & versions != tagged:
                field["taggedVersions"] = cover_text(tagged, versions, top)
        else:
            field.pop("tag", None)
            field.pop("taggedVersions", None)
        extra = attrs.get(f"{path}.{field['name']}", {})
        if base is None:
            d = default_text(newest, field["type"])
            if d is not None:
                field["default"] = d
            et = _entity_type(newest.type_hint)
            if et:
                field["entityType"] = et
            if newest.about:
                field["about"] = newest.about
        for k, v in extra.items():
            if v is None:
                field.pop(k, None)
            else:
                field[k] = v
        # nested
        if newest.struct is not None:
            sub_versions = {v: kio_fields(kf.struct) for v, kf in present.items()}
            sname = field["type"].removeprefix("[]")
            base_sub: Sequence[Mapping[str, Any]] = []
            if base is not None:
                base_sub = base.get("fields") or base_common.get(sname, {}).get("fields", [])
            sub = stage_fields(
                base_sub,
                base_common,
                sub_versions,
                top,
                f"{path}.{field['name']}",
                attrs,
                common_out,
                notes,
                struct_uses,
            )
            is_common = (base is not None and "fields" not in base and sname in base_common) or (
                base is None and struct_uses.get(sname, 0) > 1
            )
            if is_common:
                prev = common_out.get(sname)
                merged_sub = sub if prev is None else _union_common(prev["fields"], sub, top)
                entry: dict[str, Any] = {"name": sname, "versions": "0+"}
                if sname in base_common:
                    entry = {k: v for k, v in base_common[sname].items() if k != "fields"}
                entry["fields"] = merged_sub
                common_out[sname] = entry
            else:
                field["fields"] = sub
        out.append(_ordered(field))
    for bf in base_fields:
        if not any(f["name"] == bf["name"] for f in out) and not any(
            _same_name(bf["name"], k) for fs in per_version.values() for k in (f.name for f in fs)
        ):
            notes.dropped_fields.append(f"{path}.{bf['name']}")
    return out


def _same_name(kafka: str, kio: str) -> bool:
    import kio_layout

    return kio_layout.names_match(kafka, kio)


def _union_common(
    a: list[dict[str, Any]], b: list[dict[str, Any]], top: int
) -> list[dict[str, Any]]:
    """A common struct used at several places (each seen at its own versions): one definition
    whose fields carry the union of the versions seen at every place."""
    out = [dict(f) for f in a]
    for f in b:
        i = next((k for k, x in enumerate(out) if x["name"] == f["name"]), None)
        if i is None:
            out.append(f)
            continue
        x = out[i]
        present = vset(x["versions"]) | vset(f["versions"])
        x["versions"] = range_text(present, top)
        for key in ("nullableVersions", "taggedVersions"):
            want = (vset(x.get(key)) & vset(x["versions"])) | (
                vset(f.get(key)) & vset(f["versions"])
            )
            want &= present
            if want:
                x[key] = cover_text(want, present, top)
        if "fields" in x and "fields" in f:
            x["fields"] = _union_common(x["fields"], f["fields"], top)
        out[i] = _ordered(x)
    return out


def _ordered(field: Mapping[str, Any]) -> dict[str, Any]:
    keys = [k for k in FIELD_KEY_ORDER if k in field] + [
        k for k in field if k not in FIELD_KEY_ORDER
    ]
    return {k: field[k] for k in keys}


def _count_struct_uses(classes: Iterable[Any], counts: dict[str, int], seen: set[int]) -> None:
    for cls in classes:
        for kf in kio_fields(cls):
            if kf.struct is not None:
                key = id(kf.struct)
                counts.setdefault(kf.struct.__name__, 0)
                if (cls.__name__, kf.name) not in _uses:
                    _uses.add((cls.__name__, kf.name))
                    counts[kf.struct.__name__] += 1
                if key not in seen:
                    seen.add(key)
                    _count_struct_uses([kf.struct], counts, seen)


_uses: set[tuple[str, str]] = set()


def stage_spec(
    name: str,
    classes: Mapping[int, Any],
    base: Mapping[str, Any] | None,
    attrs: Mapping[str, Mapping[str, Any]],
) -> tuple[dict[str, Any], StageNotes]:
    notes = StageNotes()
    versions = sorted(classes)
    top = versions[-1]
    newest = classes[top]
    spec: dict[str, Any] = {}
    if base is not None:
        spec = {
            k: copy.deepcopy(v) for k, v in base.items() if k not in ("fields", "commonStructs")
        }
    kind = newest.__type__.name
    if "apiKey" not in spec and kind in ("request", "response"):
        spec["apiKey"] = int(newest.__api_key__)
    spec["type"] = spec.get("type", kind)
    for k, v in attrs.get(name, {}).get("__message__", {}).items():
        spec[k] = v
    spec["name"] = name
    spec["validVersions"] = range_text(versions, top, open_ended=False)
    flex = [v for v in versions if classes[v].__flexible__]
    spec["flexibleVersions"] = range_text(flex, top) if flex else "none"
    spec.pop("latestVersionUnstable", None)
    base_common = {s["name"]: s for s in (base or {}).get("commonStructs", [])}
    counts: dict[str, int] = {}
    _uses.clear()
    _count_struct_uses([classes[v] for v in versions], counts, set())
    common_out: dict[str, dict[str, Any]] = {}
    per_version = {v: kio_fields(classes[v]) for v in versions}
    spec["fields"] = stage_fields(
        (base or {}).get("fields", []),
        base_common,
        per_version,
        top,
        name,
        attrs,
        common_out,
        notes,
        counts,
    )
    if common_out:
        spec["commonStructs"] = list(common_out.values())
    return spec, notes


# ---------------------------------------------------------------------------------------------
# Merging 3.9.1 + 4.3


def merge_fields(
    old: Sequence[Mapping[str, Any]],
    new: Sequence[Mapping[str, Any]],
    old_only: set[int],
    new_vs: set[int],
    top: int,
    path: str,
    report: list[str],
) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    by_name_old = {f["name"]: f for f in old}
    for nf in new:
        of = by_name_old.get(nf["name"])
        out.append(_merge_field(of, nf, old_only, new_vs, top, f"{path}.{nf['name']}", report))
    # fields that exist only in versions 4.x removed: restore them after their predecessor
    for i, of in enumerate(old):
        if any(f["name"] == of["name"] for f in out):
            continue
        keep = vset(of.get("versions")) & old_only
        if not keep:
            continue
        restored = _merge_field(of, None, old_only, new_vs, top, f"{path}.{of['name']}", report)
        pos = 0
        for j in range(i - 1, -1, -1):
            idx = next((k for k, f in enumerate(out) if f["name"] == old[j]["name"]), None)
            if idx is not None:
                pos = idx + 1
                break
        out.insert(pos, restored)
        report.append(f"restored {path}.{of['name']} (versions {restored['versions']})")
    return out


def _merge_field(
    of: Mapping[str, Any] | None,
    nf: Mapping[str, Any] | None,
    old_only: set[int],
    new_vs: set[int],
    top: int,
    path: str,
    report: list[str],
) -> dict[str, Any]:
    base = nf if nf is not None else of
    assert base is not None
    field = {k: copy.deepcopy(v) for k, v in base.items() if k != "fields"}
    ov = vset(of.get("versions")) & old_only if of is not None else set()
    nv = vset(nf.get("versions")) & new_vs if nf is not None else set()
    present = ov | nv
    open_src = (nf or of or {}).get("versions", "")
    try:
        field["versions"] = range_text(present, top, open_ended=open_src.endswith("+"))
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None
    for key in ("nullableVersions", "taggedVersions"):
        o = vset(of.get(key)) & ov if of is not None else set()
        n = vset(nf.get(key)) & nv if nf is not None else set()
        want = o | n
        if want:
            field[key] = cover_text(want, present, top)
        else:
            field.pop(key, None)
    if "taggedVersions" not in field:
        field.pop("tag", None)
    elif "tag" not in field and of is not None and "tag" in of:
        field["tag"] = of["tag"]
    if of is not None and nf is not None:
        for key in ("tag",):
            if key in of and key in nf and of[key] != nf[key] and ov:
                raise ValueError(f"{path}: {key} differs between releases: {of[key]} / {nf[key]}")
        if ov and of["type"] != nf["type"]:
            ot, nt = of["type"], nf["type"]
            prim = ot.removeprefix("[]") in sl.PRIMITIVES or nt.removeprefix("[]") in sl.PRIMITIVES
            if ot.startswith("[]") != nt.startswith("[]") or prim:
                raise ValueError(f"{path}: type differs between releases: {ot} / {nt}")
    osub = of.get("fields") if of is not None else None
    nsub = nf.get("fields") if nf is not None else None
    if osub is not None or nsub is not None:
        # nested fields exist only where their parent does
        field["fields"] = merge_fields(osub or [], nsub or [], ov, nv, top, path, report)
    return _ordered(field)


def merge_spec(
    old: Mapping[str, Any] | None, new: Mapping[str, Any] | None, report: list[str]
) -> dict[str, Any]:
    if old is None:
        assert new is not None
        return copy.deepcopy(dict(new))
    if new is None:
        return copy.deepcopy(dict(old))
    old_vs = set(sl.valid_versions(old))
    new_vs = set(sl.valid_versions(new))
    old_only = old_vs - new_vs
    allv = sorted(old_vs | new_vs)
    top = allv[-1]
    spec = {k: copy.deepcopy(v) for k, v in new.items() if k not in ("fields", "commonStructs")}
    spec["validVersions"] = range_text(allv, top, open_ended=False)
    flex = {v for v in old_only if v in vset(old.get("flexibleVersions"))} | {
        v for v in new_vs if v in vset(new.get("flexibleVersions"))
    }
    spec["flexibleVersions"] = range_text(flex, top) if flex else "none"
    name = spec["name"]
    spec["fields"] = merge_fields(old["fields"], new["fields"], old_only, new_vs, top, name, report)
    oc = {s["name"]: s for s in old.get("commonStructs", [])}
    nc = {s["name"]: s for s in new.get("commonStructs", [])}
    commons = []
    for sname in list(nc) + [s for s in oc if s not in nc]:
        o, n = oc.get(sname), nc.get(sname)
        entry = {k: copy.deepcopy(v) for k, v in (n or o or {}).items() if k != "fields"}
        entry["fields"] = merge_fields(
            (o or {}).get("fields", []),
            (n or {}).get("fields", []),
            old_only if o else set(),
            new_vs if n else set(),
            top,
            f"{name}.{sname}",
            report,
        )
        commons.append(entry)
    if commons:
        spec["commonStructs"] = commons
    if old_only:
        report.append(f"{name}: kept 3.9.1-only versions {sorted(old_only)}")
    return spec


# ---------------------------------------------------------------------------------------------
# Rendering in Kafka's style


def render(spec: Mapping[str, Any], header: Sequence[str]) -> str:
    lines = [LICENSE.rstrip("\n"), ""]
    lines += [f"// {h}" if h else "//" for h in header]
    lines.append("{")
    top_items = [(k, v) for k, v in spec.items()]
    for i, (k, v) in enumerate(top_items):
        comma = "," if i < len(top_items) - 1 else ""
        if k in ("fields", "commonStructs"):
            lines.append(f'  "{k}": [')
            lines += _render_fields(v, 2)
            lines.append(f"  ]{comma}")
        else:
            lines.append(f"  {json.dumps(k)}: {json.dumps(v, ensure_ascii=False)}{comma}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _render_fields(fields: Sequence[Mapping[str, Any]], indent: int) -> list[str]:
    out: list[str] = []
    pad = "  " * indent
    for i, f in enumerate(fields):
        comma = "," if i < len(fields) - 1 else ""
        head = ", ".join(
            f"{json.dumps(k)}: {json.dumps(v, ensure_ascii=False)}"
            for k, v in f.items()
            if k != "fields"
        )
        if "fields" in f:
            out.append(f'{pad}{{ {head}, "fields": [')
            out += _render_fields(f["fields"], indent + 1)
            out.append(f"{pad}]}}{comma}")
        else:
            out.append(f"{pad}{{ {head} }}{comma}")
    return out


# ---------------------------------------------------------------------------------------------
# Commands


def load_dir(d: Path) -> dict[str, dict[str, Any]]:
    return {p.stem: sl.load_spec(p) for p in sorted(d.glob("*.json"))}


def load_attrs() -> dict[str, Any]:
    if ATTRS_FILE.exists():
        data = json.loads(ATTRS_FILE.read_text())
        assert isinstance(data, dict)
        return data
    return {}


def stage(dest: Path = NEW_DIR) -> int:
    old = load_dir(OLD_DIR)
    attrs = load_attrs()
    classes = _kio_classes()
    dest.mkdir(parents=True, exist_ok=True)
    for p in dest.glob("*.json"):
        p.unlink()
    sources = attrs.get("__sources__", {})
    lines = [
        f"kafka_version: {NEW_RELEASE}",
        "tool: tools/merge_specs.py stage",
        "method: every file is Kafka 3.9.1's spec (tools/specs/kafka-3.9.1, from the jar) rewritten",
        "  to the versions, fields, types, tags and nullability of Kafka 4.3.1 as kio 0.6.5 records",
        "  them; fields new in 4.x take name/about/default from kio and other attributes from",
        "  tools/specs/upstream-attrs.json (read from apache/kafka's own 4.x spec files).",
        "files:",
    ]
    for name in sorted(classes):
        base_name = next((o for o, n in RENAMED.items() if n == name), name)
        base = old.get(base_name)
        spec, notes = stage_spec(name, classes[name], base, attrs)
        origin = f"3.9.1 {base_name}.json + kio" if base is not None else "kio (new in 4.x)"
        up = sources.get(name)
        if up:
            origin += f"; checked against apache/kafka {up}"
        header = [
            f"Kafka {NEW_RELEASE} spec for {name}, staged by kwire's tools/merge_specs.py stage.",
            f"Source: {origin}.",
        ]
        if notes.new_fields and base is not None:
            header.append("Fields new since 3.9.1: " + ", ".join(notes.new_fields) + ".")
        (dest / f"{name}.json").write_text(render(spec, header), encoding="utf-8")
        lines.append(f"  {name}.json: {origin}")
    (dest / "SOURCE").write_text("\n".join(lines) + "\n")
    print(f"staged {len(classes)} specs in {dest}")
    return 0


def merged_corpus() -> tuple[dict[str, dict[str, Any]], list[str], dict[str, str]]:
    """The merged specs by name, the merge report, and each file's provenance line."""
    old = load_dir(OLD_DIR)
    new = load_dir(NEW_DIR)
    report: list[str] = []
    out: dict[str, dict[str, Any]] = {}
    origin: dict[str, str] = {}
    for name in sorted(set(old) | set(new)):
        if name in RENAMED:
            report.append(f"{name}: renamed in Kafka 4.x to {RENAMED[name]}")
            continue
        base_old = next((o for o, n in RENAMED.items() if n == name), name)
        o, n = old.get(base_old), new.get(name)
        out[name] = merge_spec(o, n, report)
        if o is not None and n is not None:
            ov, nv = set(sl.valid_versions(o)), set(sl.valid_versions(n))
            only = sorted(ov - nv)
            origin[name] = f"Kafka {NEW_RELEASE} v{_rng(nv)}" + (
                f" + Kafka {OLD_RELEASE} v{_rng(only)} (removed in 4.x)" if only else ""
            )
        elif n is not None:
            origin[name] = f"Kafka {NEW_RELEASE} v{_rng(set(sl.valid_versions(n)))} (new in 4.x)"
        else:
            assert o is not None
            origin[name] = (
                f"Kafka {OLD_RELEASE} v{_rng(set(sl.valid_versions(o)))} (removed in 4.0)"
            )
    return out, report, origin


def _rng(vs: set[int] | list[int]) -> str:
    s = sorted(vs)
    return "none" if not s else (str(s[0]) if s[0] == s[-1] else f"{s[0]}-{s[-1]}")


def version_notes(path: Path) -> list[str]:
    """The ``//`` comment lines at the top level of a Kafka spec file before ``validVersions``:
    Kafka's notes on what each version changed."""
    notes: list[str] = []
    depth = 0
    for line in path.read_text(encoding="utf-8").splitlines():
        stripped = line.strip()
        if depth == 1 and stripped.startswith("//"):
            notes.append(stripped[2:].strip())
        if '"validVersions"' in stripped and depth == 1:
            break
        depth += line.count("{") - line.count("}")
    while notes and not notes[0]:
        notes.pop(0)
    while notes and not notes[-1]:
        notes.pop()
    return notes


def merged_files() -> dict[str, str]:
    specs, _report, origin = merged_corpus()
    files: dict[str, str] = {}
    for name, spec in specs.items():
        header = [
            f"kwire merged spec: {origin[name]}.",
            "Generated by tools/merge_specs.py merge from tools/specs/kafka-3.9.1 and",
            "tools/specs/kafka-4.3; do not edit (see docs/versions.md).",
        ]
        old_path = OLD_DIR / f"{next((a for a, b in RENAMED.items() if b == name), name)}.json"
        notes = version_notes(old_path) if old_path.exists() else []
        if notes:
            header += ["", f"Kafka {OLD_RELEASE}'s notes on its versions:", "", *notes]
        files[f"{name}.json"] = render(spec, header)
    src = [
        f"kafka_version: {OLD_RELEASE}+{NEW_RELEASE}",
        "origin: union of Kafka 3.9.1 (kafka-clients-3.9.1.jar) and Kafka 4.3.1 (via kio 0.6.5) specs",
        "tool: tools/merge_specs.py merge",
        "files:",
    ] + [f"  {n}.json: {origin[n]}" for n in sorted(origin)]
    files["SOURCE"] = "\n".join(src) + "\n"
    return files


def merge(dest: Path = MERGED_DIR) -> int:
    files = merged_files()
    dest.mkdir(parents=True, exist_ok=True)
    for p in dest.iterdir():
        if p.name not in files:
            p.unlink()
    for fname, text in files.items():
        (dest / fname).write_text(text, encoding="utf-8")
    print(f"merged {len(files) - 1} specs into {dest}")
    return 0


def verify(merged: Mapping[str, Mapping[str, Any]]) -> tuple[list[str], list[str]]:
    """(problems, notes): layout checks of a merged corpus against the 3.9.1 and 4.3 inputs."""
    old = load_dir(OLD_DIR)
    new = load_dir(NEW_DIR)
    problems: list[str] = []
    notes: list[str] = []
    for name, spec in merged.items():
        base_old = next((o for o, n in RENAMED.items() if n == name), name)
        o, n = old.get(base_old), new.get(name)
        mv = sl.valid_versions(spec)
        ov = sl.valid_versions(o) if o else []
        nv = sl.valid_versions(n) if n else []
        if sorted(set(ov) | set(nv)) != mv:
            problems.append(f"{name}: versions {mv} != union of {ov} and {nv}")
            continue
        for v in mv:
            got = sl.layout(spec, v)
            if v in nv:
                assert n is not None
                d = sl.describe_difference(got, sl.layout(n, v))
                if d:
                    problems.append(f"{name} v{v}: differs from {NEW_RELEASE}: {d}")
                if v in ov:
                    assert o is not None
                    before = sl.layout(o, v)
                    d = sl.describe_difference(before, got)
                    if d and not sl.wire_equal(before, got):
                        notes.append(f"{name} v{v}: layout changed since {OLD_RELEASE}: {d}")
                    elif d:
                        notes.append(f"{name} v{v}: renamed since {OLD_RELEASE}: {d}")
            else:
                assert o is not None
                d = sl.describe_difference(got, sl.layout(o, v))
                if d:
                    problems.append(f"{name} v{v}: differs from {OLD_RELEASE}: {d}")
    return problems, notes


def shared_with_old(merged: Mapping[str, Mapping[str, Any]] | None = None) -> set[tuple[str, int]]:
    """The (message, version) pairs of the merged corpus that Kafka 3.9.1 defines under the same
    name with exactly the same layout, field names included: what 3.9.1's Java classes can check.
    The rest are 4.x-only versions, renamed messages and the documented 4.x changes."""
    old = load_dir(OLD_DIR)
    merged = merged if merged is not None else load_dir(MERGED_DIR)
    out: set[tuple[str, int]] = set()
    for name, spec in merged.items():
        o = old.get(name)
        if o is None:
            continue
        ov = set(sl.valid_versions(o))
        for v in sl.valid_versions(spec):
            if v in ov and sl.describe_difference(sl.layout(o, v), sl.layout(spec, v)) is None:
                out.add((name, v))
    return out


def verify_staged_against_kio() -> list[str]:
    import kio_layout

    new = load_dir(NEW_DIR)
    problems: list[str] = []
    kl = kio_layout.kio_layouts()
    for name in sorted(set(kl) | set(new)):
        if name not in new or name not in kl:
            problems.append(f"{name}: only in {'kio' if name in kl else 'the staged specs'}")
            continue
        nv = sl.valid_versions(new[name])
        if nv != sorted(kl[name]):
            problems.append(f"{name}: versions {nv} != kio {sorted(kl[name])}")
            continue
        for v in nv:
            d = kio_layout.describe_difference(sl.layout(new[name], v), kl[name][v])
            if d:
                problems.append(f"{name} v{v}: differs from kio: {d}")
    return problems


def check() -> int:
    problems: list[str] = []
    files = merged_files()
    for fname, text in files.items():
        p = MERGED_DIR / fname
        if not p.exists() or p.read_text(encoding="utf-8") != text:
            problems.append(
                f"merged/{fname} is out of date (run: python tools/merge_specs.py merge)"
            )
    merged = load_dir(MERGED_DIR)
    more, notes = verify(merged)
    problems += more
    problems += verify_staged_against_kio()
    if write_releases(check_only=True):
        problems.append("release tables out of date (run: python tools/merge_specs.py releases)")
    if DOCS.exists() and write_docs(check_only=True):
        problems.append(
            "docs/versions.md table out of date (run: python tools/merge_specs.py docs)"
        )
    for n in notes:
        print("note:", n)
    for problem in problems:
        print("PROBLEM:", problem, file=sys.stderr)
    print(f"{len(merged)} merged specs: {'OK' if not problems else f'{len(problems)} problems'}")
    return 1 if problems else 0


RELEASES_PY = ROOT / "src" / "kwire" / "protocol" / "releases.py"
_BEGIN = "# --- generated by tools/merge_specs.py releases: begin ---"
_END = "# --- generated by tools/merge_specs.py releases: end ---"


def release_tables() -> dict[str, dict[int, tuple[str, int, int]]]:
    """The per-release API version tables for ``kwire.protocol.releases``, from their sources."""
    old: dict[int, tuple[str, int, int]] = {}
    for name, spec in load_dir(OLD_DIR).items():
        if spec.get("type") != "request":
            continue
        vs = sl.valid_versions(spec)
        if spec.get("latestVersionUnstable"):
            vs = vs[:-1]
        if vs:
            old[int(spec["apiKey"])] = (name.removesuffix("Request"), vs[0], vs[-1])
    new: dict[int, tuple[str, int, int]] = {}
    for name, by_version in _kio_classes().items():
        if not name.endswith("Request"):
            continue
        cls = next(iter(by_version.values()))
        if cls.__type__.name != "request":
            continue
        vs = sorted(by_version)
        new[int(cls.__api_key__)] = (name.removesuffix("Request"), vs[0], vs[-1])
    return {"3.9": dict(sorted(old.items())), "4.3": dict(sorted(new.items()))}


def differs_from_old() -> list[tuple[str, int]]:
    """Message-versions of the merged corpus that Kafka 3.9.1 also has (under this name or the
    name 4.x renamed it from) but defines differently, names included: kwire follows 4.x there."""
    old = load_dir(OLD_DIR)
    merged = load_dir(MERGED_DIR)
    shared = shared_with_old(merged)
    out = []
    for name, spec in merged.items():
        o = old.get(next((a for a, b in RENAMED.items() if b == name), name))
        if o is None:
            continue
        ov = set(sl.valid_versions(o))
        out += [(name, v) for v in sl.valid_versions(spec) if v in ov and (name, v) not in shared]
    return sorted(out)


def releases_block(tables: Mapping[str, Mapping[int, tuple[str, int, int]]]) -> str:
    lines = [
        _BEGIN,
        "# release -> {api key: (api name, lowest version, highest version)}",
        "_TABLES: Final[dict[str, dict[int, tuple[str, int, int]]]] = {",
    ]
    for release, table in tables.items():
        lines.append(f"    {json.dumps(release)}: {{")
        for key, (name, lo, hi) in table.items():
            lines.append(f"        {key}: ({json.dumps(name)}, {lo}, {hi}),")
        lines.append("    },")
    lines += ["}"]
    lines += [
        "#: Message-versions Kafka 3.9.1 also defines (under this name, or the one Kafka 4.x renamed",
        "#: it from) but differently (a field renamed or added): kwire follows Kafka 4.x there.",
        "DIFFERS_FROM_3_9_1: Final[frozenset[tuple[str, int]]] = frozenset(",
        "    {",
    ]
    lines += [f"        ({json.dumps(n)}, {v})," for n, v in differs_from_old()]
    lines += ["    }", ")", _END]
    return "\n".join(lines)


def write_releases(check_only: bool = False) -> int:
    text = RELEASES_PY.read_text(encoding="utf-8")
    a, b = text.index(_BEGIN), text.index(_END) + len(_END)
    new = text[:a] + releases_block(release_tables()) + text[b:]
    if check_only:
        if new != text:
            print("src/kwire/protocol/releases.py tables are out of date", file=sys.stderr)
            return 1
        return 0
    RELEASES_PY.write_text(new, encoding="utf-8")
    print(f"wrote release tables to {RELEASES_PY}")
    return 0


DOCS = ROOT / "docs" / "versions.md"
_DOC_BEGIN = "<!-- begin generated by tools/merge_specs.py docs -->"
_DOC_END = "<!-- end generated by tools/merge_specs.py docs -->"


def _span(vs: Iterable[int]) -> str:
    s = sorted(vs)
    if not s:
        return "-"
    out, start, prev = [], s[0], s[0]
    for v in [*s[1:], None]:
        if v is not None and v == prev + 1:
            prev = v
            continue
        out.append(str(start) if start == prev else f"{start}-{prev}")
        if v is not None:
            start = prev = v
    return ", ".join(out)


def docs_table() -> str:
    """The per-API table of docs/versions.md."""
    old = load_dir(OLD_DIR)
    merged = load_dir(MERGED_DIR)
    tables = release_tables()
    _problems, notes = verify(merged)
    changed = {n.split(" v")[0] for n in notes if "layout changed" in n}
    renamed = {n.split(" v")[0] for n in notes if "renamed" in n}
    rows = [
        "| Key | API | kwire | Kafka 3.9 | Kafka 4.3 | Notes |",
        "| ---: | --- | --- | --- | --- | --- |",
    ]
    requests = sorted(
        (int(s["apiKey"]), n.removesuffix("Request"), s)
        for n, s in merged.items()
        if s.get("type") == "request"
    )
    for key, api, spec in requests:
        kw = sl.valid_versions(spec)
        o = tables["3.9"].get(key)
        n = tables["4.3"].get(key)
        v39 = range(o[1], o[2] + 1) if o else range(0)
        v43 = range(n[1], n[2] + 1) if n else range(0)
        old_spec = old.get(f"{api}Request")
        note = []
        if key == 74:
            note.append("was ListClientMetricsResources in 3.9.1")
        if n is None:
            note.append("not in Kafka 4.x (ZooKeeper-era)")
        elif o is None and old_spec is None and key != 74:
            note.append("new in Kafka 4.x")
        removed = [v for v in v39 if v not in v43] if n else []
        if n and removed:
            note.append(f"4.x removed v{_span(removed)}")
        if old_spec is not None and old_spec.get("latestVersionUnstable"):
            last = sl.valid_versions(old_spec)[-1]
            if last in v43:
                note.append(f"3.9.1 v{last} was unstable; 4.3.1's v{last} is used")
            else:
                note.append(f"3.9.1 v{last} was unstable, dropped by 4.x; kept as 3.9.1 had it")
        for side in ("Request", "Response"):
            if f"{api}{side}" in changed:
                note.append(f"{side.lower()} layout of a shared version changed in 4.x")
            if f"{api}{side}" in renamed:
                note.append(f"{side.lower()} fields renamed in 4.x")
        rows.append(
            f"| {key} | {api} | {_span(kw)} | {_span(v39)} | {_span(v43)} | {'; '.join(note)} |"
        )
    others = sorted(
        (n, s) for n, s in merged.items() if s.get("type") not in ("request", "response")
    )
    rows += [
        "",
        "| Spec (header / data) | kwire | Kafka 3.9.1 | Kafka 4.3.1 |",
        "| --- | --- | --- | --- |",
    ]
    new = load_dir(NEW_DIR)
    for name, spec in others:
        ov = sl.valid_versions(old[name]) if name in old else []
        nv = sl.valid_versions(new[name]) if name in new else []
        rows.append(f"| {name} | {_span(sl.valid_versions(spec))} | {_span(ov)} | {_span(nv)} |")
    return "\n".join(rows)


def write_docs(check_only: bool = False) -> int:
    text = DOCS.read_text(encoding="utf-8")
    a, b = text.index(_DOC_BEGIN), text.index(_DOC_END)
    new = text[: a + len(_DOC_BEGIN)] + "\n" + docs_table() + "\n" + text[b:]
    if check_only:
        return 0 if new == text else 1
    DOCS.write_text(new, encoding="utf-8")
    print(f"wrote the version table to {DOCS}")
    return 0


BUNDLED_DIR = ROOT / "src" / "kwire" / "protocol" / "specs"

# Kafka's coordinator records (what __consumer_offsets and __transaction_state hold): not part of
# the client jar nor of kio, so not merged; copied verbatim from apache/kafka's group-coordinator
# and transaction-coordinator modules at the release named in their SOURCE, and bundled as they are.
COORDINATOR_DIR = SPECS / "coordinator-3.9"
# Kafka's KRaft metadata records (what __cluster_metadata holds), likewise: apache/kafka's metadata
# module at the release named in their SOURCE, verbatim.
METADATA_DIR = SPECS / "metadata-3.9"
# Kafka's share-coordinator records (what __share_group_state holds, KIP-932), likewise: apache/kafka's
# share-coordinator module at the commits named in their SOURCE, verbatim.
SHARE_COORDINATOR_DIR = SPECS / "share-coordinator"
# Kafka's streams-group records (KIP-1071, in __consumer_offsets), likewise, with the keys in the
# "data" form (see its SOURCE).
STREAMS_COORDINATOR_DIR = SPECS / "streams-coordinator"
# Kafka 4.x's TransactionLogValue (KIP-890's tagged fields), likewise, verbatim.
TRANSACTION_COORDINATOR_DIR = SPECS / "transaction-coordinator"


def _source_facts(folder: Path) -> dict[str, str]:
    text = (folder / "SOURCE").read_text(encoding="utf-8")
    return dict(line.split(": ", 1) for line in text.splitlines() if ": " in line)


def _coordinator_source() -> dict[str, str]:
    return _source_facts(COORDINATOR_DIR)


def _bundle_verbatim(files: dict[str, str], lines: list[str], folder: Path, kind: str) -> None:
    facts = _source_facts(folder)
    release = facts["kafka_version"]
    where = f"apache/kafka {facts['tag']} {facts['commit'][:12]}, verbatim"
    rel = folder.relative_to(ROOT)
    lines += [f"{kind}_records: Kafka {release} ({where}; {rel}/SOURCE)", f"{kind}_files:"]
    for path in sorted(folder.glob("*.json")):
        assert path.name not in files, path.name
        files[path.name] = path.read_text(encoding="utf-8")
        versions = sl.load_spec(path)["validVersions"]
        lines.append(f"  {path.name}: Kafka {release} v{versions} ({where})")


def bundled_files() -> dict[str, str]:
    """What kwire bundles: the merged corpus plus the coordinator and KRaft metadata records,
    one SOURCE for all."""
    files = merged_files()
    lines = files["SOURCE"].rstrip("\n").splitlines()
    _bundle_verbatim(files, lines, COORDINATOR_DIR, "coordinator")
    _bundle_verbatim(files, lines, METADATA_DIR, "metadata")
    _bundle_verbatim(files, lines, SHARE_COORDINATOR_DIR, "share_coordinator")
    _bundle_verbatim(files, lines, STREAMS_COORDINATOR_DIR, "streams_coordinator")
    _bundle_verbatim(files, lines, TRANSACTION_COORDINATOR_DIR, "transaction_coordinator")
    files["SOURCE"] = "\n".join(lines) + "\n"
    return files


def install(dest: Path = BUNDLED_DIR) -> int:
    """Make the merged corpus, the coordinator and the metadata records kwire's bundled specs
    (then run ``kwire codegen --write``)."""
    files = bundled_files()
    for p in dest.iterdir():
        if p.name not in files:
            p.unlink()
    for fname, text in files.items():
        (dest / fname).write_text(text, encoding="utf-8")
    print(f"installed {len(files) - 1} merged specs into {dest}; now run: kwire codegen --write")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "command", choices=("stage", "merge", "check", "report", "releases", "docs", "install")
    )
    args = parser.parse_args(argv)
    if args.command == "stage":
        return stage()
    if args.command == "merge":
        return merge()
    if args.command == "releases":
        return write_releases()
    if args.command == "docs":
        return write_docs()
    if args.command == "install":
        return install()
    if args.command == "report":
        _specs, report, _origin = merged_corpus()
        print("\n".join(report))
        return 0
    return check()


if __name__ == "__main__":
    raise SystemExit(main())
