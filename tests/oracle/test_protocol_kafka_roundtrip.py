"""Random messages of every message-version Kafka 3.9.1 can judge, made and read by its Java code and
by kwire.

kwire bundles the merged Kafka 3.9.1 + 4.3.1 corpus (tools/merge_specs.py). Kafka 3.9.1's jar can
judge the (message, version) pairs it defines itself: the 666 of its dump (the 652 of its *Data
classes and the 14 of its other generated specs), less the five where kwire follows Kafka 4.x's
layout (``kwire.protocol.releases.DIFFERS_FROM_3_9_1``; 3.9.1's ListClientMetricsResources is 4.x's
ListConfigResources): 661 pairs, ``MESSAGE_VERSIONS``, which the other Java oracle tests of the
protocol share. The versions new in 4.x are judged by kio instead (test_kio_differential.py);
test_every_bundled_version_is_judged checks that every bundled version is one or the other.
For each of them, random instances are generated as JSON from kwire's spec
model (seeded, so a failure repeats): tagged fields present and absent, nulls where nullable, empty
and several-element arrays, non-ASCII strings, extreme integers (int64 min and max included),
UUIDs, bytes, float64s (negative, fractional, extreme), records fields holding real record batches,
other bytes or nothing, and strings, bytes, records and arrays long enough for two-byte lengths.
Kafka's JsonConverter reads each one and Kafka serializes it (tools/java/ProtocolOracle.java, one
JVM for the session, one batch per message-version). Then:

1. kwire decodes Kafka's bytes to the JSON Kafka's converter wrote for the same object (same keys
   in the same order, same JSON types: 1, 1.0 and true differ). Records fields aside: Kafka writes
   each as ``""``, losing it, and kwire as base64, so there kwire's value must be the records bytes
   that went in.
2. kwire encodes that JSON (records restored), and the JSON that was generated, to exactly Kafka's
   bytes.
3. Kafka decodes kwire's bytes back to the same JSON.
4. In flexible versions, unknown tagged fields that kwire adds (to the top level and to every
   nested struct) are written in ascending tag order after the known ones (Kafka's tags are
   contiguous from 0), exactly as Kafka writes back the unknown tags it kept, and Kafka reads them
   in that order.

test_generated_cases_cover_every_field_and_state shows the cases reach every field of every
message-version in every state (value, absent, null, empty, several elements).

A failure names the message, version and case seed and shows the JSON and both byte strings in hex.
"""

from __future__ import annotations

import base64
import os
import random
from typing import TYPE_CHECKING, Any

import kio_layout
import merge_specs
import pytest
from check_specs import json_diff

from kwire.protocol import (
    FieldSpec,
    FieldType,
    MessageSpec,
    StructSpec,
    iter_message_versions,
    message_class,
    message_spec,
)
from kwire.protocol._spec import INT_RANGES, load_spec_dir
from kwire.protocol.releases import DIFFERS_FROM_3_9_1

if TYPE_CHECKING:  # only for annotations: "conftest" names several modules in a full run
    from conftest import JavaProcess

pytestmark = pytest.mark.oracle

#: Random cases per message-version, after the two fixed extreme ones ("min" and "max").
RANDOM_CASES = int(os.environ.get("KWIRE_ORACLE_CASES", "30"))
COORDINATOR_SPECS = merge_specs.SPECS / "coordinator-3.9"
METADATA_SPECS = merge_specs.SPECS / "metadata-3.9"
SHARE_COORDINATOR_SPECS = merge_specs.SPECS / "share-coordinator"
STREAMS_COORDINATOR_SPECS = merge_specs.SPECS / "streams-coordinator"
TRANSACTION_COORDINATOR_SPECS = merge_specs.SPECS / "transaction-coordinator"
SEED = 20250512  # any fixed number (the build date of the 3.9.1 jar's classes)

#: A genuine v2 record batch (two records, no compression) as Kafka 3.9.1 writes it: made with
#: MemoryRecords.withRecords(Compression.NONE, new SimpleRecord(1700000000000L, "key", "value é"),
#: new SimpleRecord(1700000000001L, null, "v2")) in jshell against kafka-clients.jar.
RECORD_BATCH = bytes.fromhex(
    "00000000000000000000004cffffffff029fff69910000000000010000018bcfe568000000018bcfe568"
    "01ffffffffffffffffffffffffffff0000000222000000066b65791076616c756520c3a900100002020104"
    "763200"
)
STRINGS = (
    "",
    "a",
    "kafka-topic.0_1",
    "héllo wörld",
    "日本語のトピック",
    "🦀 crab \U0001f980",
    'tab\tnew\nline "quoted" \\',
    "nul\x00 and \x7f",
    "a longer string, over 127 bytes, whose compact length takes two bytes: " + "ß" * 40,
)
FLOATS = (
    0.0,
    -0.0,
    1.5,
    -2.75,
    0.1,
    -1e-300,
    1e300,
    5e-324,
    -1.7976931348623157e308,
    3.141592653589793,
)

JSON = Any


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def uuid_json(data: bytes) -> str:
    """Kafka's Uuid.toString(): base64url without padding, 22 characters."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class RandomMessage:
    """Random JSON for one message-version, in the shape of Kafka's JsonConverter.

    ``mode`` is ``"min"`` (tagged fields absent, nulls wherever nullable, empty arrays, minimum
    integers), ``"max"`` (every tagged field present, nothing null, arrays of three, maximum
    integers, long non-ASCII strings) or ``"random"``.
    """

    def __init__(self, spec: MessageSpec, version: int, rng: random.Random, mode: str) -> None:
        self.spec = spec
        self.version = version
        self.rng = rng
        self.mode = mode

    def message(self) -> dict[str, JSON]:
        return self.struct(self.spec.struct, 0)

    def struct(self, struct: StructSpec, depth: int) -> dict[str, JSON]:
        out: dict[str, JSON] = {}
        for f in struct.fields_at(self.version):
            if f.tagged(self.version) and (
                self.mode == "min" or (self.mode == "random" and self.rng.random() < 0.5)
            ):
                continue  # absent: the field keeps its default
            out[f.json_name] = self.field(f, depth)
        return out

    def field(self, f: FieldSpec, depth: int) -> JSON:
        if f.nullable(self.version) and (
            self.mode == "min" or (self.mode == "random" and self.rng.random() < 0.2)
        ):
            return None
        if f.type.is_array:
            assert f.type.element is not None
            length = self.length(depth)
            if self.mode == "random" and not f.type.element.is_struct and self.rng.random() < 0.1:
                length = 130  # a length that needs two bytes as a compact (uvarint) length
            return [self.value(f, f.type.element, depth + 1) for _ in range(length)]
        return self.value(f, f.type, depth)

    def length(self, depth: int) -> int:
        if self.mode == "min":
            return 0
        if self.mode == "max":
            return 3 if depth < 2 else 1
        return self.rng.choice((0, 1, 2, 3, 5) if depth < 2 else (0, 1, 2))

    def value(self, f: FieldSpec, t: FieldType, depth: int) -> JSON:
        rng, mode = self.rng, self.mode
        name = t.name
        if t.is_struct:
            assert f.struct is not None
            return self.struct(f.struct, depth + 1)
        if name == "bool":
            return mode == "max" if mode != "random" else rng.random() < 0.5
        if name in INT_RANGES:
            lo, hi = INT_RANGES[name]
            if mode == "min":
                return lo
            if mode == "max":
                return hi
            return rng.choice((lo, hi, 0, max(lo, -1), 1, rng.randint(lo, hi), rng.randint(lo, hi)))
        if name == "float64":
            if mode == "min":
                return -1.7976931348623157e308
            if mode == "max":
                return 1.7976931348623157e308
            return rng.choice((*FLOATS, rng.uniform(-1e6, 1e6)))
        if name == "uuid":
            if mode == "min":
                return uuid_json(bytes(16))
            if mode == "max":
                return uuid_json(b"\xff" * 16)
            return uuid_json(rng.randbytes(16))
        if name == "string":
            if mode == "min":
                return ""
            if mode == "max":
                return "ünïcødé-🦀-" * 5
            choice = rng.choice((*STRINGS, None))
            if choice is None:
                return "".join(rng.choice("abcXYZ019._-é") for _ in range(rng.randint(1, 40)))
            return choice
        if name == "bytes":
            if mode == "min":
                return ""
            if mode == "max":
                return b64(bytes(range(256)))
            return b64(rng.randbytes(rng.choice((0, 1, 3, 16, 40))))
        if name == "records":
            if mode == "min":
                return ""  # not nullable here (nulls were handled by the caller)
            if mode == "max":
                return b64(RECORD_BATCH)
            return rng.choice(
                (
                    b64(RECORD_BATCH),
                    b64(RECORD_BATCH * 3),
                    "",
                    b64(rng.randbytes(rng.randint(1, 30))),
                )
            )
        raise AssertionError(f"unexpected type {t}")


def restore_records(java: JSON, sent: JSON, struct: StructSpec, version: int) -> JSON:
    """Kafka's JSON with every records field put back to the base64 that was sent.

    Kafka's converter writes a records field as ``""`` whatever it holds; kwire writes base64.
    """
    if not isinstance(java, dict) or not isinstance(sent, dict):
        return java
    out = dict(java)
    for f in struct.fields_at(version):
        key = f.json_name
        if key not in out:
            continue
        if f.type.name == "records":
            if out[key] is not None:
                out[key] = sent.get(key)
        elif f.struct is not None and out[key] is not None:
            if f.type.is_array:
                out[key] = [
                    restore_records(j, s, f.struct, version)
                    for j, s in zip(out[key], sent.get(key) or [], strict=True)
                ]
            else:
                out[key] = restore_records(out[key], sent.get(key), f.struct, version)
    return out


def generate_cases(name: str, version: int) -> list[tuple[str, dict[str, JSON]]]:
    spec = message_spec(name)
    cases = []
    for mode in ("min", "max"):
        rng = random.Random(f"{SEED}:{name}:{version}:{mode}")
        cases.append((mode, RandomMessage(spec, version, rng, mode).message()))
    for i in range(RANDOM_CASES):
        case_seed = f"{SEED}:{name}:{version}:{i}"
        cases.append(
            (
                f"random {case_seed}",
                RandomMessage(spec, version, random.Random(case_seed), "random").message(),
            )
        )
    return cases


def jar_judged(jar_pairs: set[tuple[str, int]]) -> set[tuple[str, int]]:
    """The bundled (message, version) pairs Kafka 3.9.1's jar can judge, given the pairs it defines:
    renamed messages under their bundled (4.x) name, less ``DIFFERS_FROM_3_9_1``."""
    return {(merge_specs.RENAMED.get(n, n), v) for n, v in jar_pairs} - DIFFERS_FROM_3_9_1


#: The (message, version) pairs of Kafka 3.9.1's specs, from the staged copy of its jar's files
#: (tools/specs/kafka-3.9.1, checked against the jar by test_protocol_sync_specs.py and against its
#: dump below), so that tests can be parametrized without starting Java.
_OLD_SPECS = load_spec_dir(merge_specs.OLD_DIR)
JAR_PAIRS = {(name, v) for name, spec in _OLD_SPECS.items() for v in spec.versions()}
#: Kafka 3.9.1's spec models, under the bundled (4.x) names.
JAR_SPECS = {merge_specs.RENAMED.get(name, name): spec for name, spec in _OLD_SPECS.items()}
_JUDGED = jar_judged(JAR_PAIRS)
#: What the Java oracle tests compare, in the bundled corpus's order.
MESSAGE_VERSIONS = [p for p in iter_message_versions() if p in _JUDGED]
#: The names of the fields Kafka 3.9.1 knows, per bundled message name (top level).
JAR_FIELDS = {
    name: frozenset(f.name for f in spec.struct.fields) for name, spec in JAR_SPECS.items()
}


def jar_versions(name: str) -> list[int]:
    """The versions of a bundled message that Kafka 3.9.1's jar can judge."""
    return [v for n, v in MESSAGE_VERSIONS if n == name]


def test_every_message_version_is_covered(kafka_schemas: dict[str, Any]) -> None:
    jar = {
        (name, int(v))
        for name, entry in kafka_schemas["messages"].items()
        for v in entry["versions"]
    }
    assert jar == JAR_PAIRS and len(jar) == kafka_schemas["messageVersionCount"] == 666
    assert set(MESSAGE_VERSIONS) == jar_judged(jar)
    assert len(MESSAGE_VERSIONS) == len(set(MESSAGE_VERSIONS)) == 661
    # every judged pair is bundled, and the only 3.9.1 pairs left out are the documented ones
    assert set(MESSAGE_VERSIONS) <= set(iter_message_versions())
    assert {(merge_specs.RENAMED.get(n, n), v) for n, v in jar} - set(
        MESSAGE_VERSIONS
    ) == DIFFERS_FROM_3_9_1


def test_every_bundled_version_is_judged() -> None:
    """Every bundled message-version is checked by Kafka's 3.9.1 Java code (here) or by kio, which
    carries Kafka 4.3.1's schemas (test_kio_differential.py); the five 3.9.1 has differently are
    kio's."""
    bundled = set(iter_message_versions())
    kio = {(name, version) for name, version, _kind, _cls in kio_layout.kio_entities()}
    assert kio <= bundled
    # The coordinators' record formats (__consumer_offsets, __transaction_state) are Kafka's own
    # spec files, verbatim, but neither kafka-clients nor kio carries them: the broker's tests
    # judge them (records written, replayed after a restart, read by Kafka's clients' effects).
    coordinator = {
        (name, version)
        for name, version in bundled
        if (COORDINATOR_SPECS / f"{name}.json").is_file()
        or (TRANSACTION_COORDINATOR_SPECS / f"{name}.json").is_file()
    }
    assert len({name for name, _ in coordinator}) == 18
    # Likewise the KRaft metadata records (__cluster_metadata), Kafka 3.9's metadata module
    # verbatim (ZkMigrationRecord.json names ZkMigrationStateRecord, so by the spec's name): the
    # broker's tests (tests/unit/broker/test_metadata_log.py) judge those it writes.
    metadata_names = set(load_spec_dir(METADATA_SPECS))
    metadata = {(name, version) for name, version in bundled if name in metadata_names}
    assert len(metadata_names) == 25 and len(metadata) == 34
    # And the share coordinator's records (__share_group_state, KIP-932), Kafka's share-coordinator
    # module verbatim: tests/unit/broker/test_share_state.py judges what the broker writes.
    share_names = set(load_spec_dir(SHARE_COORDINATOR_SPECS))
    share = {(name, version) for name, version in bundled if name in share_names}
    assert len(share_names) == len(share) == 4
    # And the streams-group records (__consumer_offsets, KIP-1071): tests/unit/broker/
    # test_streams_group.py judges what the broker writes.
    streams_names = set(load_spec_dir(STREAMS_COORDINATOR_SPECS))
    streams = {(name, version) for name, version in bundled if name in streams_names}
    assert len(streams_names) == len(streams) == 14
    unjudged = bundled - set(MESSAGE_VERSIONS) - kio - coordinator - metadata - share - streams
    assert not unjudged, sorted(unjudged)
    assert kio >= DIFFERS_FROM_3_9_1
    assert len(bundled) == 744 + len(coordinator) + len(metadata) + len(share) + len(streams)


def _hex(data: bytes) -> str:
    return data.hex(" ") if len(data) <= 512 else data[:512].hex(" ") + f" ... ({len(data)} bytes)"


@pytest.mark.parametrize(
    ("name", "version"), MESSAGE_VERSIONS, ids=[f"{n}-v{v}" for n, v in MESSAGE_VERSIONS]
)
def test_kafka_and_kwire_agree(protocol_oracle: JavaProcess, name: str, version: int) -> None:
    cls = message_class(name)
    spec = message_spec(name)
    cases = generate_cases(name, version)
    replies = protocol_oracle.batch(
        [{"op": "encode", "message": name, "version": version, "json": sent} for _, sent in cases]
    )
    failures: list[str] = []
    kwire_bytes: list[bytes] = []
    for (label, sent), reply in zip(cases, replies, strict=True):
        where = f"{name} v{version} case {label}"
        if "error" in reply:
            failures.append(
                f"{where}: Kafka rejected the generated JSON: {reply['error']}\n  json: {sent}"
            )
            kwire_bytes.append(b"")
            continue
        java_bytes = base64.b64decode(reply["bytes"])
        java_json = restore_records(reply["json"], sent, spec.struct, version)
        assert reply["redecoded"] == reply["json"], (
            f"{where}: Kafka does not round-trip its own bytes"
        )
        # 1. kwire reads Kafka's bytes as Kafka's converter wrote the object.
        try:
            decoded = cls.decode(java_bytes, version).to_json(version)
        except Exception as exc:
            decoded = f"{type(exc).__name__}: {exc}"
        differences = json_diff("", decoded, java_json) if isinstance(decoded, dict) else [decoded]
        if differences:
            failures.append(
                f"{where}: kwire decodes Kafka's bytes differently: {'; '.join(differences[:5])}\n"
                f"  bytes: {_hex(java_bytes)}\n  kafka: {java_json}\n  kwire: {decoded}"
            )
        # 2. kwire writes Kafka's bytes, from Kafka's JSON and from the generated JSON.
        for source, obj in (("Kafka's JSON", java_json), ("the generated JSON", sent)):
            try:
                encoded = cls.from_json(obj, version).encode(version)
            except Exception as exc:
                failures.append(
                    f"{where}: kwire cannot encode {source}: {type(exc).__name__}: {exc}\n  json: {obj}"
                )
                encoded = b""
            if encoded and encoded != java_bytes:
                failures.append(
                    f"{where}: kwire encodes {source} differently\n  json:  {obj}\n"
                    f"  kafka: {_hex(java_bytes)}\n  kwire: {_hex(encoded)}"
                )
        kwire_bytes.append(encoded)
    # 3. Kafka reads kwire's bytes back to the same JSON.
    decodes = protocol_oracle.batch(
        [
            {"op": "decode", "message": name, "version": version, "bytes": b64(data)}
            for data in kwire_bytes
        ]
    )
    for (label, _), data, reply, enc in zip(cases, kwire_bytes, decodes, replies, strict=True):
        if data and "error" not in enc and reply != {"json": enc["json"]}:
            failures.append(
                f"{name} v{version} case {label}: Kafka reads kwire's bytes differently\n"
                f"  bytes: {_hex(data)}\n  kafka json: {enc['json']}\n  kafka read:  {reply}"
            )
    # 4. Unknown tagged fields (flexible versions): kwire writes them merged in tag order with the
    #    known ones, exactly as Kafka writes back the unknown tags it kept.
    if spec.flexible(version):
        failures += _check_unknown_tags(protocol_oracle, cls, spec, version, replies[1])
    assert not failures, f"{len(failures)} failures:\n" + "\n".join(failures[:8])


def _free_tag(struct: StructSpec) -> int:
    """The lowest tag the struct declares in no version. (Kafka rejects a tag that the struct
    declares for other versions only: "Tag 0 is not valid for version 0".)"""
    known = {f.tag for f in struct.fields if f.tag is not None}
    return min(set(range(len(known) + 1)) - known)


def _add_unknown_tags(obj: Any, struct: StructSpec, version: int) -> int:
    """Gives ``obj`` and every struct inside it two unknown tags: the lowest free tag and 300 (a
    two-byte tag). Returns how many structs got them."""
    obj.unknown_tags = {_free_tag(struct): b"\x00\x01\xff", 300: b""}
    count = 1
    for f in struct.fields_at(version):
        value = getattr(obj, f.attr)
        if f.struct is None or value is None:
            continue
        for element in value if f.type.is_array else [value]:
            count += _add_unknown_tags(element, f.struct, version)
    return count


def _check_unknown_tags(
    oracle: JavaProcess, cls: Any, spec: MessageSpec, version: int, reply: dict[str, Any]
) -> list[str]:
    """Unknown tags in the "max" case (every known tag present), at the top level and in every
    nested struct: Kafka must read kwire's bytes and write them back unchanged."""
    where = f"{spec.name} v{version} case max + unknown tags"
    if "error" in reply:
        return []  # reported above
    message = cls.decode(base64.b64decode(reply["bytes"]), version)
    _add_unknown_tags(message, spec.struct, version)
    data = message.encode(version)
    again = oracle.request(
        {"op": "reencode", "message": spec.name, "version": version, "bytes": b64(data)}
    )
    if "error" in again:
        return [
            f"{where}: Kafka cannot read kwire's bytes: {again['error']}\n  bytes: {_hex(data)}"
        ]
    out = []
    if base64.b64decode(again["bytes"]) != data:
        out.append(
            f"{where}: Kafka writes the tags back differently\n  kwire: {_hex(data)}\n"
            f"  kafka: {_hex(base64.b64decode(again['bytes']))}"
        )
    free = _free_tag(spec.struct)
    if again["unknownTags"] != [free, 300]:
        out.append(f"{where}: Kafka read the unknown tags in the order {again['unknownTags']}")
    if again["json"] != reply["json"]:
        out.append(f"{where}: Kafka reads kwire's bytes as {again['json']}, not {reply['json']}")
    back = cls.decode(data, version)
    if back != message or back.encode(version) != data:
        out.append(f"{where}: kwire does not read back its unknown tags")
    return out


def _coverage(
    struct: StructSpec, version: int, obj: dict[str, JSON], path: str, seen: set[tuple[str, str]]
) -> None:
    for f in struct.fields_at(version):
        where = f"{path}.{f.json_name}"
        if f.json_name not in obj:
            seen.add((where, "absent"))
            continue
        value = obj[f.json_name]
        if value is None:
            seen.add((where, "null"))
            continue
        seen.add((where, "value"))
        if f.type.is_array:
            seen.add((where, "empty" if not value else "several" if len(value) >= 2 else "one"))
            if f.struct is not None:
                for element in value:
                    _coverage(f.struct, version, element, where + "[]", seen)
        elif f.struct is not None:
            _coverage(f.struct, version, value, where, seen)


def _wanted(struct: StructSpec, version: int, path: str, out: set[tuple[str, str]]) -> None:
    for f in struct.fields_at(version):
        where = f"{path}.{f.json_name}"
        out.add((where, "value"))
        if f.tagged(version):
            out.add((where, "absent"))
        if f.nullable(version):
            out.add((where, "null"))
        if f.type.is_array:
            out |= {(where, "empty"), (where, "several")}
        if f.struct is not None:
            _wanted(f.struct, version, where + ("[]" if f.type.is_array else ""), out)


def test_generated_cases_cover_every_field_and_state() -> None:
    """Over each message-version's cases, every field (nested ones too) holds a value at least once;
    every tagged field is also absent, every nullable one null, every array empty and several long."""
    missing = []
    for name, version in MESSAGE_VERSIONS:
        spec = message_spec(name)
        wanted: set[tuple[str, str]] = set()
        _wanted(spec.struct, version, "", wanted)
        seen: set[tuple[str, str]] = set()
        for _, case in generate_cases(name, version):
            _coverage(spec.struct, version, case, "", seen)
        missing += [
            f"{name} v{version}{path}: never {state}" for path, state in sorted(wanted - seen)
        ]
    assert not missing, "\n".join(missing[:30])
