"""Load and validate Kafka JSON message specs.

``parse_spec(text, source)`` strips ``//`` comments (outside strings), parses the JSON, builds the
model and checks Kafka's own rules at load time (FieldSpec, StructSpec, MessageSpec and
StructRegistry in Kafka's generator, plus the generator's "tagged versions inside flexible
versions" check), so a bad spec fails here, naming the file and the field, instead of at runtime.
Unknown keys are rejected, which keeps spec-language extensions explicit (add them to the key
sets below).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Final

from kwire.errors import SpecError
from kwire.protocol._extension_points import (
    FIELD_SPEC_FORMS,
    KAFKA_TAG_HEADER,
    extra_field_keys,
    tag_header_names,
)
from kwire.protocol._spec._model import (
    FieldSpec,
    FieldType,
    MessageSpec,
    StructSpec,
    parse_default,
)
from kwire.protocol._spec._versions import NONE, VersionRange

__all__ = [
    "FIELD_KEYS",
    "MESSAGE_KEYS",
    "SpecError",
    "load_spec_dir",
    "load_spec_file",
    "parse_spec",
]


MESSAGE_TYPES: Final = frozenset(
    {"request", "response", "header", "metadata", "data", "coordinator-key", "coordinator-value"}
)
MESSAGE_KEYS: Final = frozenset(
    {
        "apiKey",
        "type",
        "name",
        "validVersions",
        "deprecatedVersions",
        "flexibleVersions",
        "fields",
        "commonStructs",
        "listeners",
        "latestVersionUnstable",
        "headerVersions",
        "tagHeader",  # the tag-header layout: Kafka's, or a registered extension's
    }
)
FIELD_KEYS: Final = frozenset(
    {
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
        "about",
        "flexibleVersions",
        "zeroCopy",
        "fields",
    }
)
STRUCT_KEYS: Final = frozenset({"name", "versions", "deprecatedVersions", "fields"})
_FIELD_NAME: Final = re.compile(r"[A-Za-z][A-Za-z0-9]*\Z")
#: Kafka's EntityType.verifyTypeMatches: entity -> allowed field types.
_ENTITY_TYPES: Final[dict[str, tuple[str, ...]]] = {
    "unknown": (),
    "transactionalId": ("string",),
    "producerId": ("int64",),
    "groupId": ("string",),
    "topicName": ("string",),
    "brokerId": ("int32",),
}


def strip_comments(text: str) -> str:
    """Remove ``//`` line comments that are not inside JSON strings (``"http://..."`` survives)."""
    out: list[str] = []
    i, n = 0, len(text)
    in_string = False
    while i < n:
        ch = text[i]
        if in_string:
            out.append(ch)
            if ch == "\\" and i + 1 < n:
                out.append(text[i + 1])
                i += 2
                continue
            if ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
            out.append(ch)
        elif ch == "/" and text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        else:
            out.append(ch)
        i += 1
    return "".join(out)


class _Ctx:
    """Where we are, for error messages: the file and the field path."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.path: list[str] = []

    def error(self, message: str) -> SpecError:
        where = f"{self.source}"
        if self.path:
            where += f", field {'.'.join(self.path)}"
        return SpecError(f"{where}: {message}")


def _versions(ctx: _Ctx, raw: Any, key: str, default: VersionRange | None) -> VersionRange:
    if raw is not None and not isinstance(raw, str):
        raise ctx.error(f"{key} must be a string, not {raw!r}")
    try:
        return VersionRange.parse(raw, default)
    except ValueError as exc:
        raise ctx.error(f"{key}: {exc}") from None


def _bool(ctx: _Ctx, obj: dict[str, Any], key: str) -> bool:
    value = obj.get(key, False)
    if not isinstance(value, bool):
        raise ctx.error(f"{key} must be true or false, not {value!r}")
    return value


def _parse_field(ctx: _Ctx, obj: Any) -> FieldSpec:
    if not isinstance(obj, dict):
        raise ctx.error(f"a field must be an object, not {obj!r}")
    name = obj.get("name")
    if not isinstance(name, str) or not _FIELD_NAME.match(name):
        raise ctx.error(f"invalid field name {name!r}")
    ctx.path.append(name)
    try:
        unknown = set(obj) - FIELD_KEYS - extra_field_keys()
        if unknown:
            raise ctx.error(f"unknown keys {sorted(unknown)}")
        tagged = _versions(ctx, obj.get("taggedVersions"), "taggedVersions", NONE)
        if "versions" not in obj and tagged.empty:
            raise ctx.error("you must specify the versions of the field")
        versions = _versions(ctx, obj.get("versions"), "versions", tagged)
        type_raw = obj.get("type")
        encodings: tuple[tuple[VersionRange, str], ...] = ()
        form = ""
        claimed = None
        # an extension's spec form (kwire.protocol.ext) may give the field per-version wire types
        for spec_form in FIELD_SPEC_FORMS:
            parsed = spec_form.parse(ctx.error, obj, versions, FieldType.parse)
            if parsed is not None:
                type_text, encodings, form = parsed
                claimed = spec_form
                break
        else:
            if not isinstance(type_raw, str):
                raise ctx.error("a field needs a type")
            type_text = type_raw
        try:
            ftype = FieldType.parse(type_text)
        except ValueError as exc:
            raise ctx.error(str(exc)) from None
        nullable = _versions(ctx, obj.get("nullableVersions"), "nullableVersions", NONE)
        if not nullable.empty and not ftype.can_be_nullable:
            raise ctx.error(f"type {ftype} cannot be nullable")
        default = obj.get("default", "")
        # Jackson coerces JSON booleans and numbers into the String property, and so do we; a JSON
        # null is "no default" (FieldSpec: ``fieldDefault == null ? "" : fieldDefault``), as in
        # Kafka 3.9's ConsumerGroupMemberMetadataValue.ClassicMemberMetadata.
        if default is None:
            default = ""
        elif isinstance(default, bool):
            default = "true" if default else "false"
        elif isinstance(default, int | float):
            default = str(default)
        if not isinstance(default, str):
            raise ctx.error(f"default must be a JSON string, not {default!r}")
        entity = obj.get("entityType", "unknown")
        if entity not in _ENTITY_TYPES:
            raise ctx.error(f"unknown entityType {entity!r}")
        allowed = _ENTITY_TYPES[entity]
        if allowed:
            base = ftype.element.name if ftype.element is not None else ftype.name
            if base not in allowed:
                raise ctx.error(f"entityType {entity} does not match type {ftype}")
        about = obj.get("about", "")
        if not isinstance(about, str):
            raise ctx.error("about must be a string")
        sub_raw = obj.get("fields")
        if sub_raw is not None and not isinstance(sub_raw, list):
            raise ctx.error("fields must be a list")
        if sub_raw and not (ftype.is_array or ftype.is_struct):
            raise ctx.error(f"non-array or struct field {name} cannot have fields")
        if sub_raw and not (ftype.is_struct or ftype.is_struct_array):
            raise ctx.error(f"field {name} has fields but type {ftype} holds no struct")
        sub = tuple(_parse_field(ctx, f) for f in (sub_raw or []))
        flex_raw = obj.get("flexibleVersions")
        flexible = None
        if flex_raw not in (None, ""):
            flexible = _versions(ctx, flex_raw, "flexibleVersions", None)
            if ftype.name not in ("string", "bytes"):
                raise ctx.error(
                    "invalid flexibleVersions override: only fields of type string or bytes can "
                    "specify a flexibleVersions override"
                )
        tag = obj.get("tag")
        if isinstance(tag, str):  # Jackson coerces "0" into the Integer property
            try:
                tag = int(tag)
            except ValueError:
                raise ctx.error(f"tag must be an integer, not {tag!r}") from None
        if tag is not None and (not isinstance(tag, int) or isinstance(tag, bool)):
            raise ctx.error(f"tag must be an integer, not {tag!r}")
        map_key = _bool(ctx, obj, "mapKey")
        if tag is not None and map_key:
            raise ctx.error("tagged fields cannot be used as keys (mapKey)")
        if tag is not None:
            if tag < 0:
                raise ctx.error(f"specifies a tag of {tag}; tags cannot be negative")
            if tagged.empty:
                raise ctx.error(
                    f"specifies a tag of {tag}, but has no tagged versions; if a tag is "
                    "specified, taggedVersions must be specified as well"
                )
            nt = nullable.intersect(tagged)
            if not (nt.empty or nt == tagged):
                raise ctx.error(
                    f"specifies nullableVersions {nullable} and taggedVersions {tagged}; either "
                    "all tagged versions must be nullable, or none must be"
                )
            if not tagged.open_ended:
                raise ctx.error(
                    f"specifies taggedVersions {tagged}, which is not open-ended; taggedVersions "
                    "must be either none, or an open-ended range (that ends with a plus sign)"
                )
            if tagged.intersect(versions) != tagged:
                raise ctx.error(
                    f"specifies taggedVersions {tagged} and versions {versions}; taggedVersions "
                    "must be a subset of versions"
                )
        elif not tagged.empty:
            raise ctx.error(
                f"does not specify a tag, but specifies taggedVersions {tagged}; specify a tag "
                "or remove the taggedVersions"
            )
        zero_copy = _bool(ctx, obj, "zeroCopy")
        if zero_copy and ftype.name != "bytes":
            raise ctx.error("only fields of type bytes can use zeroCopy")
        spec = FieldSpec(
            name=name,
            type=ftype,
            versions=versions,
            nullable_versions=nullable,
            tagged_versions=tagged,
            tag=tag,
            default=default,
            ignorable=_bool(ctx, obj, "ignorable"),
            map_key=map_key,
            entity_type=entity,
            about=about,
            flexible_versions=flexible,
            zero_copy=zero_copy,
            fields=sub,
            encodings=encodings,
            encoding_form=form,
        )
        try:
            value = parse_default(spec)
        except ValueError as exc:
            raise ctx.error(f"invalid default {default!r} for {ftype} field: {exc}") from None
        if claimed is not None and isinstance(value, int):
            claimed.check_default(ctx.error, value, encodings)
        return spec
    finally:
        ctx.path.pop()


def _check_struct_fields(ctx: _Ctx, struct_name: str, fields: tuple[FieldSpec, ...]) -> None:
    tags: set[int] = set()
    names: set[str] = set()
    attrs: dict[str, str] = {}
    for f in fields:
        ctx.path.append(f.name)
        try:
            if f.tag is not None:
                if f.tag in tags:
                    raise ctx.error(
                        f"in {struct_name}, field {f.name} has a duplicate tag ID {f.tag}; all tag "
                        "IDs must be unique"
                    )
                tags.add(f.tag)
            if f.name in names:
                raise ctx.error(f"in {struct_name}, field {f.name} has a duplicate name")
            names.add(f.name)
            other = attrs.setdefault(f.attr, f.name)
            if other != f.name:
                raise ctx.error(
                    f"in {struct_name}, fields {other} and {f.name} have the same Python name {f.attr}"
                )
        finally:
            ctx.path.pop()
    for i in range(len(tags)):
        if i not in tags:
            raise ctx.error(
                f"in {struct_name}, the tag IDs are not contiguous; make use of tag {i} before "
                "using any higher tag IDs"
            )


def parse_spec(text: str, source: str = "<spec>") -> MessageSpec:
    """Parse and validate one spec file's text; ``source`` names it in errors."""
    ctx = _Ctx(source)
    try:
        obj = json.loads(strip_comments(text))
    except json.JSONDecodeError as exc:
        raise ctx.error(f"invalid JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise ctx.error("a spec must be a JSON object")
    unknown = set(obj) - MESSAGE_KEYS
    if unknown:
        raise ctx.error(f"unknown keys {sorted(unknown)}")
    name = obj.get("name")
    if not isinstance(name, str) or not name[:1].isupper() or not name.isidentifier():
        raise ctx.error(f"invalid message name {name!r}")
    mtype = obj.get("type")
    if mtype not in MESSAGE_TYPES:
        raise ctx.error(f"invalid message type {mtype!r}")
    api_key = obj.get("apiKey")
    if api_key is not None and (not isinstance(api_key, int) or isinstance(api_key, bool)):
        raise ctx.error(f"apiKey must be an integer, not {api_key!r}")
    if mtype in ("request", "response") and api_key is None:
        raise ctx.error(f"a {mtype} needs an apiKey")
    valid = (
        _versions(ctx, obj.get("validVersions"), "validVersions", None)
        if "validVersions" in obj
        else None
    )
    if valid is None:
        raise ctx.error("you must specify validVersions")
    deprecated = _versions(ctx, obj.get("deprecatedVersions"), "deprecatedVersions", NONE)
    unstable = _bool(ctx, obj, "latestVersionUnstable")
    listeners_raw = obj.get("listeners") or []
    if not isinstance(listeners_raw, list) or not all(isinstance(x, str) for x in listeners_raw):
        raise ctx.error("listeners must be a list of strings")
    if valid.empty:
        flexible = NONE
    else:
        if "flexibleVersions" not in obj:
            raise ctx.error(
                "you must specify a value for flexibleVersions (use 0+ for new messages)"
            )
        flexible = _versions(ctx, obj.get("flexibleVersions"), "flexibleVersions", NONE)
        if not flexible.empty and not flexible.open_ended:
            raise ctx.error(
                f"flexibleVersions {flexible} is not open-ended; it must be either none or an "
                "open-ended range (that ends with a plus sign)"
            )
        if listeners_raw and mtype != "request":
            raise ctx.error("listeners is only valid for messages of type request")
        if unstable and mtype != "request":
            raise ctx.error("latestVersionUnstable is only valid for messages of type request")
    fields_raw = obj.get("fields") or []
    if not isinstance(fields_raw, list):
        raise ctx.error("fields must be a list")
    fields = tuple(_parse_field(ctx, f) for f in fields_raw)
    common_raw = obj.get("commonStructs") or []
    if not isinstance(common_raw, list):
        raise ctx.error("commonStructs must be a list")
    commons: list[tuple[str, VersionRange, tuple[FieldSpec, ...]]] = []
    for c in common_raw:
        if not isinstance(c, dict) or not isinstance(c.get("name"), str):
            raise ctx.error("a common struct needs a name")
        cname = c["name"]
        bad = set(c) - STRUCT_KEYS
        if bad:
            raise ctx.error(f"common struct {cname}: unknown keys {sorted(bad)}")
        if not cname[:1].isupper():
            raise ctx.error(f"common struct {cname}: the first letter must be capitalized")
        ctx.path.append(cname)
        cvers = _versions(ctx, c.get("versions"), "versions", None) if "versions" in c else None
        if cvers is None:
            raise ctx.error(f"you must specify the versions of the {cname} structure")
        cfields = tuple(_parse_field(ctx, f) for f in (c.get("fields") or []))
        ctx.path.pop()
        commons.append((cname, cvers, cfields))
    tag_header = obj.get("tagHeader", KAFKA_TAG_HEADER)
    if tag_header not in tag_header_names():
        names = ", ".join(tag_header_names())
        raise ctx.error(f"tagHeader must be one of {names}, not {tag_header!r}")
    spec = _resolve(
        ctx,
        obj,
        name,
        mtype,
        api_key,
        valid,
        flexible,
        deprecated,
        unstable,
        tuple(listeners_raw),
        fields,
        commons,
    )
    if tag_header != KAFKA_TAG_HEADER:
        from dataclasses import replace

        spec = replace(spec, tag_header=tag_header)
    return spec


def _resolve(
    ctx: _Ctx,
    obj: dict[str, Any],
    name: str,
    mtype: str,
    api_key: int | None,
    valid: VersionRange,
    flexible: VersionRange,
    deprecated: VersionRange,
    unstable: bool,
    listeners: tuple[str, ...],
    fields: tuple[FieldSpec, ...],
    commons: list[tuple[str, VersionRange, tuple[FieldSpec, ...]]],
) -> MessageSpec:
    """Kafka's StructRegistry: register common and inline structs, then link every struct field."""
    common_names = {c[0] for c in commons}
    if len(common_names) != len(commons):
        raise ctx.error("a common struct was specified twice")
    inline: dict[str, tuple[VersionRange, tuple[FieldSpec, ...]]] = {}

    def register(fs: tuple[FieldSpec, ...]) -> None:
        for f in fs:
            sname = f.type.struct_name
            if sname is None:
                continue
            ctx.path.append(f.name)
            if sname in common_names:
                if f.fields:
                    raise ctx.error(
                        f"can't re-specify the common struct {sname} as an inline struct"
                    )
            elif f.fields:
                if sname in inline or sname == name:
                    raise ctx.error(f"struct {sname} was specified twice")
                inline[sname] = (f.versions, f.fields)
            ctx.path.pop()
            register(f.fields)

    for _, _, cf in commons:
        register(cf)
    register(fields)

    built: dict[str, StructSpec] = {}
    building: set[str] = set()

    def link(fs: tuple[FieldSpec, ...], owner: str) -> tuple[FieldSpec, ...]:
        _check_struct_fields(ctx, owner, fs)
        out = []
        for f in fs:
            ctx.path.append(f.name)
            if f.tag is not None and not flexible.contains(f.tagged_versions.intersect(valid)):
                raise ctx.error(
                    f"taggedVersions {f.tagged_versions} are not a subset of the flexible "
                    f"versions {flexible}"
                )
            sname = f.type.struct_name
            if sname is not None:
                struct = build(sname)
                f = _replace(f, struct)
            ctx.path.pop()
            out.append(f)
        return tuple(out)

    def build(sname: str) -> StructSpec:
        if sname in built:
            return built[sname]
        if sname in building:
            raise ctx.error(f"struct {sname} contains itself")
        building.add(sname)
        if sname in inline:
            vers, fs = inline[sname]
            spec = StructSpec(sname, vers, link(fs, sname), is_common=False)
        else:
            match = next((c for c in commons if c[0] == sname), None)
            if match is None:
                raise ctx.error(f"unable to locate a specification for the structure {sname}")
            spec = StructSpec(sname, match[1], link(match[2], sname), is_common=True)
        building.discard(sname)
        built[sname] = spec
        return spec

    root = StructSpec(name, valid, link(fields, name))
    common_specs = tuple(build(c[0]) for c in commons)
    return MessageSpec(
        name=name,
        type=mtype,
        api_key=api_key,
        valid_versions=valid,
        flexible_versions=flexible,
        struct=root,
        common_structs=common_specs,
        latest_version_unstable=unstable,
        listeners=listeners,
        deprecated_versions=deprecated,
        structs=dict(built),
        source=ctx.source,
    )


def _replace(f: FieldSpec, struct: StructSpec) -> FieldSpec:
    from dataclasses import replace

    return replace(f, struct=struct, fields=struct.fields if f.fields else f.fields)


def load_spec_file(path: str | Path) -> MessageSpec:
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise SpecError(f"{p.name}: cannot read: {exc}") from None
    return parse_spec(text, p.name)


def load_spec_dir(path: str | Path) -> dict[str, MessageSpec]:
    """Every ``*.json`` spec in a directory, by message name (``SpecError`` on a bad one)."""
    d = Path(path)
    if not d.is_dir():
        raise SpecError(f"{d}: not a directory of message specs")
    out: dict[str, MessageSpec] = {}
    for p in sorted(d.glob("*.json")):
        spec = load_spec_file(p)
        if spec.name in out:
            raise SpecError(f"{p.name}: message {spec.name} is defined twice")
        out[spec.name] = spec
    return out
