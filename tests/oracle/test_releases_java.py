"""The merged 3.9.1 + 4.3.1 corpus against Kafka 3.9.1's Java code, for every version both share.

Merging Kafka 4.x's specs into kwire must not change a byte of what kwire writes for the versions
Kafka 3.9.1 already had (tools/merge_specs.py; docs/versions.md). For each of the 661 message-
versions that 3.9.1 defines with the same name and layout as the merged corpus (all of 3.9.1's 666
but the five documented 4.x changes in ``kwire.protocol.releases.DIFFERS_FROM_3_9_1``), random
messages generated from the merged spec model are serialized by Kafka 3.9.1's Java classes
(tools/java/ProtocolOracle.java); kwire's codec for the merged corpus must write the same bytes from
the same JSON, read Kafka's bytes and write them back unchanged, and Kafka must read kwire's bytes to
the same JSON. The codec is the bundled one once it carries the merged corpus, otherwise the merged
specs compiled with ``kwire.protocol.load_specs``.
"""

from __future__ import annotations

import base64
import functools
import random
from typing import TYPE_CHECKING, Any

import merge_specs
import pytest

from kwire.protocol import FieldSpec, FieldType, MessageSpec, StructSpec
from kwire.protocol._spec import INT_RANGES
from kwire.protocol.releases import DIFFERS_FROM_3_9_1

if TYPE_CHECKING:
    from conftest import JavaProcess

pytestmark = pytest.mark.oracle

CASES_PER_VERSION = 6
SHARED = sorted(merge_specs.shared_with_old())
TEXT = ("", "a", "héllo wörld", "日本語", "🦀", "a longer string " + "ß" * 70)


@functools.cache
def _registry() -> Any:
    """kwire's codec for the merged corpus: the bundled one once it carries Kafka 4.x's versions,
    else the merged specs compiled on the fly (both through kwire's public API)."""
    import types

    from kwire.protocol import bundled_specs, load_specs, message_class, message_spec

    produce = bundled_specs().get("ProduceRequest")
    if produce is not None and 13 in produce.versions():
        return types.SimpleNamespace(message_class=message_class, spec=message_spec)
    return load_specs(merge_specs.MERGED_DIR)


def _random_json(spec: MessageSpec, version: int, rng: random.Random) -> dict[str, Any]:
    """A random message in the JSON shape Kafka's JsonConverter reads."""

    def struct(s: StructSpec, depth: int) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in s.fields_at(version):
            if f.tagged(version) and rng.random() < 0.4:
                continue
            out[f.json_name] = field(f, depth)
        return out

    def field(f: FieldSpec, depth: int) -> Any:
        if f.nullable(version) and rng.random() < 0.2:
            return None
        if f.type.is_array:
            assert f.type.element is not None
            n = rng.choice((0, 1, 3)) if depth < 3 else 0
            return [value(f, f.type.element, depth + 1) for _ in range(n)]
        return value(f, f.type, depth)

    def value(f: FieldSpec, t: FieldType, depth: int) -> Any:
        if t.is_struct:
            assert f.struct is not None
            return struct(f.struct, depth + 1)
        if t.name == "bool":
            return rng.random() < 0.5
        if t.name in INT_RANGES:
            lo, hi = INT_RANGES[t.name]
            return rng.choice((lo, hi, 0, max(lo, -1), rng.randint(lo, hi)))
        if t.name == "float64":
            return rng.choice((0.0, -2.5, 1e300, rng.uniform(-1e6, 1e6)))
        if t.name == "uuid":
            return base64.urlsafe_b64encode(rng.randbytes(16)).rstrip(b"=").decode()
        if t.name == "string":
            return rng.choice(TEXT)
        if t.name in ("bytes", "records"):
            return base64.b64encode(rng.randbytes(rng.choice((0, 3, 20)))).decode()
        raise AssertionError(f"unexpected type {t}")

    return struct(spec.struct, 0)


def test_shared_versions_are_all_but_the_documented_changes(kafka_schemas: dict[str, Any]) -> None:
    jar = {(n, int(v)) for n, e in kafka_schemas["messages"].items() for v in e["versions"]}
    assert len(jar) == 666 and len(SHARED) == 661
    assert set(SHARED) <= jar
    renamed = {
        (old, v)
        for (new, v) in DIFFERS_FROM_3_9_1
        for old, n in merge_specs.RENAMED.items()
        if n == new
    }
    changed = {(n, v) for n, v in DIFFERS_FROM_3_9_1 if n not in merge_specs.RENAMED.values()}
    assert jar - set(SHARED) == renamed | changed


@pytest.mark.parametrize(("name", "version"), SHARED, ids=[f"{n}-v{v}" for n, v in SHARED])
def test_merged_corpus_writes_kafka_3_9_1_bytes(
    protocol_oracle: JavaProcess, name: str, version: int
) -> None:
    registry = _registry()
    cls = registry.message_class(name)
    spec = registry.spec(name)
    rng = random.Random(f"merged:{name}:{version}")
    sent = [_random_json(spec, version, rng) for _ in range(CASES_PER_VERSION)]
    replies = protocol_oracle.batch(
        [{"op": "encode", "message": name, "version": version, "json": j} for j in sent]
    )
    kwire_bytes = []
    for obj, reply in zip(sent, replies, strict=True):
        assert "error" not in reply, f"{name} v{version}: Kafka rejected {obj}: {reply['error']}"
        java = base64.b64decode(reply["bytes"])
        ours = cls.from_json(obj, version).encode(version)
        assert ours == java, (
            f"{name} v{version}: kwire writes {ours.hex()} for {obj}, Kafka {java.hex()}"
        )
        assert cls.decode(java, version).encode(version) == java, f"{name} v{version}: re-encoding"
        kwire_bytes.append(ours)
    decodes = protocol_oracle.batch(
        [
            {
                "op": "decode",
                "message": name,
                "version": version,
                "bytes": base64.b64encode(b).decode(),
            }
            for b in kwire_bytes
        ]
    )
    for reply, enc in zip(decodes, replies, strict=True):
        assert reply == {"json": enc["json"]}, (
            f"{name} v{version}: Kafka reads kwire's bytes as {reply}"
        )
