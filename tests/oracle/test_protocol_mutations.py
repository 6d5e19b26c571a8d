"""Damaged bytes, read by Kafka's Java decoder and by kwire's.

For every message-version, Kafka serializes a few of the random instances of
test_protocol_kafka_roundtrip.py; each is then damaged in seeded ways (a byte replaced, a bit flipped, a
byte inserted, the tail cut off) and both decoders read the result. Required:

1. kwire raises nothing but ``DecodeError``.
2. Bytes that Kafka reads and writes back unchanged (a well-formed message, as Kafka writes them)
   are read by kwire too, to the same JSON.
3. Whatever else kwire accepts, it understands as Kafka does: kwire's own bytes for what it read are
   read by Kafka to the same JSON.

The last two tests add, to a struct, a tag that it declares for other versions only: Kafka rejects
it, and so must kwire.

Otherwise kwire may reject what Kafka accepts and read non-canonical bytes its own way: the issue
asks kwire to be stricter than Kafka's generated readers, which take any negative length for null,
decode invalid UTF-8 with replacement characters, let a later duplicate tag win, and read a known
tagged field at its natural length whatever size its header declares (kwire bounds it by that size
and skips the rest, as franz-go does).
"""

from __future__ import annotations

import base64
import random
from typing import TYPE_CHECKING, Any

import pytest
from check_specs import json_diff
from test_protocol_kafka_roundtrip import (
    JAR_SPECS,
    MESSAGE_VERSIONS,
    b64,
    generate_cases,
    jar_versions,
    restore_records,
)

from kwire.errors import DecodeError
from kwire.protocol import message_class, message_spec

if TYPE_CHECKING:  # only for annotations: "conftest" names several modules in a full run
    from conftest import JavaProcess

pytestmark = pytest.mark.oracle

INSTANCES = 4  # of each message-version's cases ("min", "max" and two random ones)
MUTATIONS = 12  # per instance


def mutate(data: bytes, rng: random.Random) -> bytes:
    out = bytearray(data)
    kind = rng.randrange(4)
    if kind == 0 and out:
        out[rng.randrange(len(out))] = rng.randrange(256)
    elif kind == 1 and out:
        out[rng.randrange(len(out))] ^= 1 << rng.randrange(8)
    elif kind == 2:
        out.insert(rng.randrange(len(out) + 1), rng.randrange(256))
    elif out:
        del out[rng.randrange(len(out)) :]
    return bytes(out)


def same_json(mine: dict[str, Any], kafka: dict[str, Any], spec: Any, version: int) -> list[str]:
    """Differences between kwire's JSON and Kafka's (records fields restored from kwire's, and a
    float64 NaN, which Jackson writes as the string "NaN", taken as equal to kwire's nan)."""
    theirs = restore_records(kafka, mine, spec.struct, version)
    return [d for d in json_diff("", mine, theirs) if not d.endswith("kwire nan, jar 'NaN'")]


@pytest.mark.parametrize("name", sorted({n for n, _ in MESSAGE_VERSIONS}))
def test_damaged_bytes_read_as_kafka_reads_them(protocol_oracle: JavaProcess, name: str) -> None:
    cls = message_class(name)
    spec = message_spec(name)
    failures: list[str] = []
    for version in jar_versions(name):  # the versions the 3.9.1 jar can judge
        cases = generate_cases(name, version)[:INSTANCES]
        encoded = protocol_oracle.batch(
            [
                {"op": "encode", "message": name, "version": version, "json": sent}
                for _, sent in cases
            ]
        )
        rng = random.Random(f"mutations:{name}:{version}")
        damaged: list[bytes] = []
        for reply in encoded:
            assert "error" not in reply, reply
            original = base64.b64decode(reply["bytes"])
            damaged += [mutate(original, rng) for _ in range(MUTATIONS)]
        kafka = protocol_oracle.batch(
            [
                {"op": "reencode", "message": name, "version": version, "bytes": b64(data)}
                for data in damaged
            ]
        )
        # What kwire accepted, re-encoded by kwire, for Kafka to read (rule 3).
        to_check: list[tuple[bytes, dict[str, Any], bytes, str]] = []
        for data, reply in zip(damaged, kafka, strict=True):
            where = f"{name} v{version} bytes {data.hex()}"
            try:
                message = cls.decode(data, version)
            except DecodeError as exc:
                if "error" not in reply and base64.b64decode(reply["bytes"]) == data:
                    failures.append(f"{where}: well-formed for Kafka, kwire rejects it: {exc}")
                continue
            except Exception as exc:
                failures.append(f"{where}: kwire raised {type(exc).__name__}: {exc}")
                continue
            mine = message.to_json(version)
            if "error" not in reply and base64.b64decode(reply["bytes"]) == data:
                differences = same_json(mine, reply["json"], spec, version)
                if differences:
                    failures.append(f"{where}: kwire reads it differently: {differences[:3]}")
            else:
                why = reply.get("error", "Kafka writes it back differently")
                to_check.append((data, mine, message.encode(version), why))
        replies = protocol_oracle.batch(
            [
                {"op": "decode", "message": name, "version": version, "bytes": b64(again)}
                for *_, again, _ in to_check
            ]
        )
        for (data, mine, again, why), reply in zip(to_check, replies, strict=True):
            if "error" in reply or same_json(mine, reply["json"], spec, version):
                failures.append(
                    f"{name} v{version} bytes {data.hex()} ({why}): kwire reads {mine}, "
                    f"but Kafka reads kwire's bytes for it ({again.hex()}) as {reply}"
                )
    assert not failures, f"{len(failures)} failures:\n" + "\n".join(failures[:10])


# -- tags that a struct declares for other versions only ----------------------------------------


def _other_version_tag_cases() -> list[tuple[str, int, tuple[str, ...], int]]:
    """(message, version, attribute path, tag) for every struct reachable at a flexible version
    that declares a tagged field for other versions only (BrokerHeartbeatRequest v0: tag 0).

    Walked in Kafka 3.9.1's specs (the judged versions have the same layout in the bundled ones):
    a tag only Kafka 4.x declares is an unknown tag to the 3.9.1 jar, which keeps it."""
    cases = []
    for name, version in MESSAGE_VERSIONS:
        spec = JAR_SPECS[name]
        if not spec.flexible(version):
            continue

        def walk(
            struct: Any, path: tuple[str, ...], version: int = version, name: str = name
        ) -> None:
            for f in struct.fields:
                if f.tag is not None and not f.tagged(version):
                    cases.append((name, version, path, f.tag))
            for f in struct.fields_at(version):
                if f.struct is not None:
                    walk(f.struct, (*path, f.attr))

        walk(spec.struct, ())
    return cases


OTHER_VERSION_TAGS = _other_version_tag_cases()


def _with_other_version_tag(
    oracle: JavaProcess,
) -> list[tuple[str, int, str, bytes, dict[str, Any]]]:
    """kwire writes the "max" case with the other version's tag added (as an unknown tag) to the
    struct at the path; returns (message, version, where, bytes, Kafka's reply to decoding them)."""
    made = []
    for name, version, path, tag in OTHER_VERSION_TAGS:
        _, sent = generate_cases(name, version)[1]  # "max": every array has elements
        target = message = message_class(name).from_json(sent, version)
        for attr in path:
            target = getattr(target, attr)
            if isinstance(target, list):
                target = target[0]
        target.unknown_tags = {tag: b""}
        data = message.encode(version)
        reply = oracle.request(
            {"op": "decode", "message": name, "version": version, "bytes": b64(data)}
        )
        made.append((name, version, ".".join(("", *path)) + f" tag {tag}", data, reply))
    return made


def test_kafka_rejects_tags_declared_for_other_versions(protocol_oracle: JavaProcess) -> None:
    assert len(OTHER_VERSION_TAGS) == 20
    for name, version, where, data, reply in _with_other_version_tag(protocol_oracle):
        assert "not valid for version" in reply.get("error", ""), (
            name,
            version,
            where,
            data.hex(),
            reply,
        )


def test_kwire_rejects_tags_declared_for_other_versions(protocol_oracle: JavaProcess) -> None:
    """Kafka's generated readers throw "Tag N is not valid for version V" for such a tag (and so a
    broker rejects the request); kwire must not keep it in ``unknown_tags`` to write it back."""
    accepted = []
    for name, version, where, data, _ in _with_other_version_tag(protocol_oracle):
        try:
            message_class(name).decode(data, version)
        except DecodeError:
            continue
        accepted.append(f"{name} v{version}{where}: {data.hex()}")
    assert not accepted, "kwire accepts:\n" + "\n".join(accepted)
