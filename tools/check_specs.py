"""Check kwire's message specs, as kwire's spec model reads them, against Kafka's compiled classes.

kwire bundles Kafka's JSON specs (``src/kwire/protocol/specs``: Kafka 3.9.1's, copied from the jar by
``tools/sync_specs.py``, merged with Kafka 4.3.1's by ``tools/merge_specs.py``) and generates its
codecs from its own reading of them. This tool proves that
reading right: it asks Kafka's generated classes in ``kafka-clients.jar`` for their wire schema and
defaults (``tools/java/ProtocolOracle.java dump``) and compares them, for every message and version,
with what kwire's spec model says kwire will write:

* the set of messages and each one's version range;
* per version and struct (nested ones included): whether it is flexible, the untagged fields in wire
  order, and the tagged fields in tag order, each with Kafka's schema name (snake case), its JSON
  name, its tag and its exact wire type (``INT32``, ``COMPACT_NULLABLE_STRING``, ``ARRAY`` of ...,
  nullable or not);
* the defaults: the JSON Kafka's JsonConverter writes for a freshly constructed instance of every
  struct at every version must equal the defaults of kwire's spec model in the same JSON form.

Usage::

    python tools/check_specs.py                      # bundled specs vs the jar (fetched via pip),
                                                     #   only what the jar can judge (see below)
    python tools/check_specs.py --judged --spec-dir DIR   # the same for another directory
    python tools/check_specs.py --spec-dir DIR       # any spec directory, e.g. a Kafka checkout's
                                                     #   clients/src/main/resources/common/message
    python tools/check_specs.py --jar kafka-clients-X.Y.Z.jar    # another Kafka release's jar
    python tools/check_specs.py --dump FILE          # use a saved dump instead of running Java
    python tools/check_specs.py --save-dump FILE     # keep the dump that was made

The bundled corpus is a superset of Kafka 3.9.1's, so for it (or with ``--judged``) only what the
jar can judge is compared: the messages and versions the jar defines (a message Kafka 4.x renamed
under its new name), less the message-versions where kwire follows Kafka 4.x
(``kwire.protocol.releases.DIFFERS_FROM_3_9_1``); messages and versions the jar lacks are not
differences then. ``--spec-dir`` alone compares exactly: the same messages and versions, all alike.

It prints every difference and exits 1 if there is any (0 when all match, 2 on usage errors). A newer
jar is brought in the same way: copy its specs in (``tools/sync_specs.py --jar``), then run this
with ``--jar`` and fix whatever it reports.
``tests/oracle/test_protocol_schemas.py`` runs the same comparison inside ``make test``.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from merge_specs import RENAMED  # noqa: E402  (the jar's name -> the bundled name)

from kwire.protocol import FieldSpec, FieldType, MessageSpec, StructSpec, bundled_specs  # noqa: E402
from kwire.protocol._spec import STRUCT_DEFAULT, load_spec_dir, snake_case  # noqa: E402
from kwire.protocol.releases import DIFFERS_FROM_3_9_1  # noqa: E402

#: kwire's primitive type names -> the names of Kafka's ``Type`` constants.
FIXED_WIRE_TYPES = {
    "bool": "BOOLEAN",
    "int8": "INT8",
    "int16": "INT16",
    "uint16": "UINT16",
    "int32": "INT32",
    "uint32": "UNSIGNED_INT32",
    "int64": "INT64",
    "float64": "FLOAT64",
    "uuid": "UUID",
}

JSON = Any  # a decoded JSON value


# ----------------------------------------------------------------------------------------------
# The jar's side
# ----------------------------------------------------------------------------------------------


def jar_dump(jar: Path | None = None) -> dict[str, Any]:
    """Runs ``ProtocolOracle dump`` against the kafka-clients jar that tools/kafka_jars.py provides,
    or against ``jar`` (another Kafka release: the program is compiled against the pinned jar and
    run with ``jar`` in its place, which the generated classes' stable shape allows)."""
    sys.path.insert(0, str(ROOT / "tools"))
    import kafka_jars

    classes = kafka_jars.compile_java("ProtocolOracle")
    argv = kafka_jars.java_command("ProtocolOracle", classes)
    if jar is not None:
        cp = argv.index("-cp") + 1
        pinned = str(kafka_jars.kafka_clients_jar())
        argv[cp] = os.pathsep.join(
            str(jar.resolve()) if p == pinned else p for p in argv[cp].split(os.pathsep)
        )
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "dump.json"
        run = subprocess.run([*argv, "dump", str(out)], stderr=subprocess.PIPE, text=True)
        if run.returncode != 0:
            raise RuntimeError(f"ProtocolOracle dump failed:\n{run.stderr[-3000:]}")
        return json.loads(out.read_text(encoding="utf-8"))  # type: ignore[no-any-return]


# ----------------------------------------------------------------------------------------------
# kwire's side, in the dump's shape (see ProtocolOracle.dump)
# ----------------------------------------------------------------------------------------------


def wire_type(spec: MessageSpec, field: FieldSpec, ftype: FieldType, version: int) -> JSON:
    """The wire type kwire's model gives ``field`` (or an array element of it) at ``version``."""
    compact = field.compact(version, spec.flexible_versions)
    nullable = field.nullable(version)
    if ftype.is_array:
        assert ftype.element is not None
        return {
            "type": "COMPACT_ARRAY" if compact else "ARRAY",
            "nullable": nullable,
            # Array elements are never null.
            "items": element_type(spec, field, ftype.element, version, compact),
        }
    return element_type(spec, field, ftype, version, compact, nullable)


def element_type(
    spec: MessageSpec,
    field: FieldSpec,
    ftype: FieldType,
    version: int,
    compact: bool,
    nullable: bool = False,
) -> JSON:
    if ftype.is_struct:
        assert field.struct is not None, f"{spec.name}.{field.name}: unresolved struct"
        return {
            "type": "STRUCT",
            "nullable": nullable,
            "struct": struct_schema(spec, field.struct, version),
        }
    if ftype.name in FIXED_WIRE_TYPES:
        return {"type": FIXED_WIRE_TYPES[ftype.name], "nullable": False}
    prefix = "COMPACT_" if compact else ""
    if ftype.name == "records":
        return {"type": prefix + "RECORDS", "nullable": nullable}
    base = {"string": "STRING", "bytes": "BYTES"}[ftype.name]
    return {"type": prefix + ("NULLABLE_" if nullable else "") + base, "nullable": nullable}


def struct_schema(spec: MessageSpec, struct: StructSpec, version: int) -> JSON:
    """A struct at a version as kwire will write it: untagged fields in order, tagged ones by tag."""
    fields, tagged = [], []
    for f in struct.fields_at(version):
        entry: dict[str, JSON] = {"name": snake_case(f.name), "json": f.json_name}
        if f.tagged(version):
            entry["tag"] = f.tag
            entry["type"] = wire_type(spec, f, f.type, version)
            tagged.append(entry)
        else:
            entry["type"] = wire_type(spec, f, f.type, version)
            fields.append(entry)
    tagged.sort(key=lambda e: e["tag"])
    return {
        "flexible": spec.flexible(version),
        "fields": fields,
        "taggedFields": tagged,
        "default": struct_default(spec, struct, version),
    }


def default_json(spec: MessageSpec, field: FieldSpec, version: int) -> JSON:
    """A field's spec default in the JSON form Kafka's JsonConverter writes it."""
    value = field.default_value()
    if value is STRUCT_DEFAULT:
        assert field.struct is not None
        return struct_default(spec, field.struct, version)
    if isinstance(value, uuid.UUID):
        return base64.urlsafe_b64encode(value.bytes).rstrip(b"=").decode()
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    return value  # None, [], bool, int, float, str


def struct_default(spec: MessageSpec, struct: StructSpec, version: int) -> JSON:
    """The JSON of a fresh instance: every untagged field at its default (tagged ones are omitted,
    as Kafka's JsonConverter omits a tagged field that holds its default)."""
    return {
        f.json_name: default_json(spec, f, version)
        for f in struct.fields_at(version)
        if not f.tagged(version)
    }


# ----------------------------------------------------------------------------------------------
# The comparison
# ----------------------------------------------------------------------------------------------


def json_diff(path: str, want: JSON, got: JSON) -> list[str]:
    """Differences between two JSON values, strict about types (``0``, ``0.0`` and ``false`` differ)."""
    if isinstance(want, dict) and isinstance(got, dict):
        out = []
        if list(want) != list(got):
            out.append(f"{path}: keys kwire {list(want)}, jar {list(got)}")
        for key in want:
            if key in got:
                out += json_diff(f"{path}.{key}", want[key], got[key])
        return out
    if isinstance(want, list) and isinstance(got, list):
        if len(want) != len(got):
            return [f"{path}: kwire {want!r}, jar {got!r}"]
        return [
            d
            for i, (w, g) in enumerate(zip(want, got, strict=True))
            for d in json_diff(f"{path}[{i}]", w, g)
        ]
    if type(want) is not type(got) or want != got:
        return [f"{path}: kwire {want!r}, jar {got!r}"]
    return []


def _type_name(t: JSON) -> str:
    null = " (nullable)" if t["nullable"] else ""
    if t["type"] in ("ARRAY", "COMPACT_ARRAY"):
        return f"{t['type']} of {_type_name(t['items'])}{null}"
    if t["type"] == "STRUCT":
        return f"STRUCT{null}"
    return f"{t['type']}{null}"


def compare_type(path: str, want: JSON, got: JSON) -> list[str]:
    if want["type"] != got["type"] or want["nullable"] != got["nullable"]:
        return [f"{path}: type kwire {_type_name(want)}, jar {_type_name(got)}"]
    if want["type"] in ("ARRAY", "COMPACT_ARRAY"):
        return compare_type(path + "[]", want["items"], got["items"])
    if want["type"] == "STRUCT":
        return compare_struct(path, want["struct"], got["struct"])
    return []


def compare_fields(path: str, kind: str, want: list[JSON], got: list[JSON]) -> list[str]:
    out = []
    names_w = [f["name"] for f in want]
    names_g = [f["name"] for f in got]
    if names_w != names_g:
        out.append(f"{path}: {kind} kwire {names_w}, jar {names_g}")
    by_name = {f["name"]: f for f in got}
    for w in want:
        g = by_name.get(w["name"])
        if g is None:
            continue
        where = f"{path}.{w['json']}"
        if w["json"] != g["json"]:
            out.append(f"{where}: JSON name kwire {w['json']!r}, jar {g['json']!r}")
        if w.get("tag") != g.get("tag"):
            out.append(f"{where}: tag kwire {w.get('tag')}, jar {g.get('tag')}")
        out += compare_type(where, w["type"], g["type"])
    return out


def compare_struct(path: str, want: JSON, got: JSON, defaults: bool = True) -> list[str]:
    out = []
    if want["flexible"] != got["flexible"]:
        out.append(f"{path}: flexible kwire {want['flexible']}, jar {got['flexible']}")
    out += compare_fields(path, "fields", want["fields"], got["fields"])
    out += compare_fields(path, "tagged fields", want["taggedFields"], got["taggedFields"])
    if defaults:
        out += json_diff(f"{path} default", want["default"], got["default"])
    return out


def judged_pairs(dump: Mapping[str, Any]) -> set[tuple[str, int]]:
    """The (message, version) pairs of the bundled corpus the jar can judge: the jar's, renamed
    messages under their bundled name, less ``DIFFERS_FROM_3_9_1``."""
    return {
        (RENAMED.get(name, name), int(v))
        for name, entry in dump["messages"].items()
        for v in entry["versions"]
    } - DIFFERS_FROM_3_9_1


def compare(
    dump: Mapping[str, Any], specs: Mapping[str, MessageSpec], *, judged: bool = False
) -> list[str]:
    """Every difference between the jar's dump and kwire's spec models; empty when they agree.

    With ``judged``, only the pairs of :func:`judged_pairs` are compared (each must be in ``specs``);
    what ``specs`` has beyond them is not a difference."""
    if judged:
        return _compare_judged(dump, specs)
    out: list[str] = []
    jar = dump["messages"]
    for name in sorted(set(specs) - set(jar)):
        out.append(f"{name}: in kwire's specs but not in the jar")
    for name in sorted(set(jar) - set(specs)):
        out.append(f"{name}: in the jar but not in kwire's specs")
    for name in sorted(set(specs) & set(jar)):
        spec, entry = specs[name], jar[name]
        want_versions = list(spec.versions())
        got_versions = [int(v) for v in entry["versions"]]
        if want_versions != got_versions:
            out.append(
                f"{name}: versions kwire {spec.valid_versions}, "
                f"jar {entry['lowestVersion']}-{entry['highestVersion']}"
            )
        if entry["apiKey"] != (spec.api_key if spec.api_key is not None else -1):
            out.append(f"{name}: apiKey kwire {spec.api_key}, jar {entry['apiKey']}")
        for v in want_versions:
            if str(v) in entry["versions"]:
                want = struct_schema(spec, spec.struct, v)
                out += compare_struct(f"{name} v{v}", want, entry["versions"][str(v)])
    return out


def _compare_judged(dump: Mapping[str, Any], specs: Mapping[str, MessageSpec]) -> list[str]:
    out: list[str] = []
    pairs = judged_pairs(dump)
    for name, entry in sorted(dump["messages"].items()):
        mine = RENAMED.get(name, name)
        versions = sorted(v for n, v in pairs if n == mine)
        if not versions:
            continue
        spec = specs.get(mine)
        if spec is None:
            out.append(f"{mine}: in the jar but not in kwire's specs")
            continue
        if entry["apiKey"] != (spec.api_key if spec.api_key is not None else -1):
            out.append(f"{mine}: apiKey kwire {spec.api_key}, jar {entry['apiKey']}")
        have = set(spec.versions())
        for v in versions:
            if v not in have:
                out.append(f"{mine} v{v}: in the jar but not in kwire's specs")
                continue
            want = struct_schema(spec, spec.struct, v)
            out += compare_struct(f"{mine} v{v}", want, entry["versions"][str(v)])
    return out


def count_versions(dump: Mapping[str, Any]) -> int:
    return sum(len(e["versions"]) for e in dump["messages"].values())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--spec-dir", type=Path, help="spec directory to check (default: bundled)")
    parser.add_argument("--jar", type=Path, help="another kafka-clients jar to check against")
    parser.add_argument("--dump", type=Path, help="a saved ProtocolOracle dump to compare with")
    parser.add_argument("--save-dump", type=Path, help="write the jar's dump to this file")
    parser.add_argument(
        "--judged",
        action="store_true",
        help="compare only what the jar can judge (the default for the bundled specs)",
    )
    args = parser.parse_args(argv)
    if args.jar is not None and not args.jar.is_file():
        parser.error(f"no such jar: {args.jar}")

    dump = json.loads(args.dump.read_text(encoding="utf-8")) if args.dump else jar_dump(args.jar)
    if args.save_dump:
        args.save_dump.write_text(json.dumps(dump), encoding="utf-8")
    specs = load_spec_dir(args.spec_dir) if args.spec_dir else bundled_specs()
    judged = args.judged or args.spec_dir is None
    differences = compare(dump, specs, judged=judged)
    for line in differences:
        print(line)
    print(
        f"kwire specs: {len(specs)} messages, "
        f"{sum(len(s.versions()) for s in specs.values())} message-versions; "
        f"jar (Kafka {dump['kafkaVersion']}): {len(dump['messages'])} messages, "
        f"{count_versions(dump)} message-versions"
        + (f", {len(judged_pairs(dump))} judged" if judged else "")
        + f"; {len(differences)} differences",
        file=sys.stderr,
    )
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main())
