"""The write-time rules, decided by Kafka's Java code and by kwire for the same JSON.

Kafka's JsonConverter reads every field it finds, whatever the version; its writer then refuses
what the version cannot carry. For each message-version, starting from a valid instance (the
round-trip test's "min" case), each top-level field is set in turn to something the version may
not accept, and both Kafka and kwire (``from_json`` then ``encode``) are asked to write it:

* a non-default value in a field the version does not have (not a struct: Kafka's converter cannot
  read a struct at a version the struct lacks): an UnsupportedVersionError unless the field is
  ignorable, in which case the value is dropped (both must write the same bytes);
* null in a field that is not nullable at the version: an error;
* a non-compact string of 32768 bytes: an error (Kafka: "field is too long to be serialized").

Only the fields Kafka 3.9.1 knows are tried (the bundled specs add Kafka 4.x's fields, which 3.9.1's
converter would silently skip), in the message-versions it can judge (``MESSAGE_VERSIONS``).
kwire must refuse exactly what Kafka refuses, with a KwireError (UnsupportedVersionError for the
first rule) that names the field, and otherwise write exactly Kafka's bytes.
"""

from __future__ import annotations

import base64
import random
from typing import TYPE_CHECKING, Any

import pytest
from test_protocol_kafka_roundtrip import (
    JAR_FIELDS,
    MESSAGE_VERSIONS,
    RandomMessage,
    generate_cases,
)

from kwire.errors import KwireError, UnsupportedVersionError
from kwire.protocol import message_class, message_spec, snake_case

if TYPE_CHECKING:  # only for annotations: "conftest" names several modules in a full run
    from conftest import JavaProcess

pytestmark = pytest.mark.oracle

LONG_STRING = "x" * 0x8000


def _cases(name: str, version: int) -> list[tuple[str, dict[str, Any]]]:
    """(what, JSON) pairs that break, or may break, one write rule each."""
    spec = message_spec(name)
    _, base = generate_cases(name, version)[0]  # "min": valid, tagged fields absent
    out = []
    for f in spec.struct.fields:
        if f.name not in JAR_FIELDS[name]:
            continue  # new in Kafka 4.x: the 3.9.1 jar cannot judge it
        if version not in f.versions:
            if f.struct is not None:
                # Kafka's converter cannot read a struct at a version the struct does not have
                # ("Can't read version 0 of ReplicaState"), so the rule cannot be asked via JSON.
                continue
            value = RandomMessage(
                spec, version, random.Random(f"rules:{name}:{version}:{f.name}"), "max"
            ).field(f, 0)
            out.append(
                (f"{f.name} (not in v{version}{', ignorable' if f.ignorable else ''})", value)
            )
            continue
        if not f.nullable(version) and (f.type.can_be_nullable and f.type.name != "records"):
            out.append((f"{f.name} = null (not nullable at v{version})", None))
        if f.type.name == "string" and not f.compact(version, spec.flexible_versions):
            out.append((f"{f.name} = 32768 bytes (non-compact string)", LONG_STRING))
    return [
        (what, {**base, spec.struct.fields[_index(spec, what)].json_name: value})
        for what, value in out
    ]


def _index(spec: Any, what: str) -> int:
    name = what.split(" ", 1)[0]
    return next(i for i, f in enumerate(spec.struct.fields) if f.name == name)


RULE_CASES = [(n, v, what, obj) for n, v in MESSAGE_VERSIONS for what, obj in _cases(n, v)]


def test_there_are_cases_for_every_rule() -> None:
    kinds = [what for _, _, what, _ in RULE_CASES]
    assert sum("not in v" in k and "ignorable" not in k for k in kinds) > 100
    assert sum("ignorable" in k for k in kinds) > 100
    assert sum("= null" in k for k in kinds) > 100
    assert sum("32768 bytes" in k for k in kinds) > 100


@pytest.mark.parametrize("name", sorted({n for n, _ in MESSAGE_VERSIONS}))
def test_kwire_refuses_what_kafka_refuses(protocol_oracle: JavaProcess, name: str) -> None:
    cls = message_class(name)
    cases = [(v, what, obj) for n, v, what, obj in RULE_CASES if n == name]
    replies = protocol_oracle.batch(
        [{"op": "encode", "message": name, "version": v, "json": obj} for v, _, obj in cases]
    )
    failures = []
    for (version, what, obj), reply in zip(cases, replies, strict=True):
        where = f"{name} v{version} {what}"
        try:
            mine: bytes | KwireError = cls.from_json(obj, version).encode(version)
        except KwireError as exc:
            mine = exc
        except Exception as exc:
            failures.append(f"{where}: kwire raised {type(exc).__name__}: {exc}")
            continue
        if "error" in reply:
            if not isinstance(mine, KwireError):
                failures.append(
                    f"{where}: Kafka refuses ({reply['error']}), kwire writes {mine.hex()}"
                )
            elif ("UnsupportedVersionException" in reply["error"]) != isinstance(
                mine, UnsupportedVersionError
            ):
                failures.append(
                    f"{where}: Kafka: {reply['error']}; kwire: {type(mine).__name__}: {mine}"
                )
            elif snake_case(what.split(" ", 1)[0]) not in str(mine):
                failures.append(f"{where}: kwire's error does not name the field: {mine}")
        elif isinstance(mine, KwireError):
            failures.append(
                f"{where}: Kafka writes it, kwire refuses: {type(mine).__name__}: {mine}"
            )
        elif mine != base64.b64decode(reply["bytes"]):
            failures.append(
                f"{where}: kwire {mine.hex()}, Kafka {base64.b64decode(reply['bytes']).hex()}"
            )
    assert not failures, f"{len(failures)} failures:\n" + "\n".join(failures[:10])
