"""kwire against kio 0.6.5 (Kafka 4.3.1's schemas, an independent implementation), both directions.

For every request and response version kio has (and its headers and data messages: the consumer
protocol, KRaft records, EndTxnMarker, ...), random kio messages (tools/kio_oracle.py: nulls,
empty and several-element arrays, non-ASCII strings, extreme integers, tagged fields set or left
at their defaults):

1. kio encodes; kwire decodes the bytes to the same values and re-encodes them byte for byte;
2. kwire builds the same values through its constructors and encodes; kio decodes them to an equal
   message and re-encodes them to kwire's bytes.

kio's own limits (durations and timestamps through floats, the zero UUID and -1 timestamp as None)
are handled in tools/kio_oracle.py. kwire's codec for the merged 3.9.1 + 4.3.1 corpus is the
bundled one once it carries 4.x versions, otherwise the staged corpus (tools/specs/merged) loaded
with ``kwire.protocol.load_specs``.
"""

from __future__ import annotations

import functools
import random
import zlib
from typing import Any

import kio_layout
import kio_oracle
import merge_specs
import pytest

pytestmark = pytest.mark.oracle

SAMPLES = 4


def _cases() -> list[tuple[str, int]]:
    return sorted((name, version) for name, version, _kind, _cls in kio_layout.kio_entities())


CASES = _cases()


@functools.cache
def _kio_classes() -> dict[tuple[str, int], Any]:
    return {(n, v): c for n, v, _k, c in kio_layout.kio_entities()}


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


def _rng(name: str, version: int, direction: str) -> random.Random:
    return random.Random(zlib.crc32(f"{name}/{version}/{direction}".encode()))


def test_kio_covers_every_4x_api() -> None:
    names = {n for n, _v in CASES}
    assert len(CASES) == 625  # every message-version of Kafka 4.3.1 kio has
    assert {"RequestHeader", "EndTxnMarker", "ConsumerProtocolSubscription"} <= names
    for api in ("StreamsGroupHeartbeat", "DescribeShareGroupOffsets", "ListConfigResources"):
        assert f"{api}Request" in names and f"{api}Response" in names


@pytest.mark.parametrize(("name", "version"), CASES, ids=[f"{n}-v{v}" for n, v in CASES])
def test_kio_bytes_decode_in_kwire(name: str, version: int) -> None:
    kio_cls = _kio_classes()[(name, version)]
    cls = _registry().message_class(name)
    rng = _rng(name, version, "kio->kwire")
    for _ in range(SAMPLES):
        obj = kio_oracle.random_instance(kio_cls, rng)
        data = kio_oracle.kio_encode(obj)
        msg = cls.decode(data, version)
        diff = kio_oracle.tree_difference(
            kio_oracle.canon_kwire(msg, version), kio_oracle.canon_kio(obj)
        )
        assert diff is None, f"{name} v{version}: {diff}\nkio: {obj!r}"
        assert msg.encode(version) == data, f"{name} v{version}: kwire re-encoding differs"


@pytest.mark.parametrize(("name", "version"), CASES, ids=[f"{n}-v{v}" for n, v in CASES])
def test_kwire_bytes_decode_in_kio(name: str, version: int) -> None:
    kio_cls = _kio_classes()[(name, version)]
    cls = _registry().message_class(name)
    rng = _rng(name, version, "kwire->kio")
    for _ in range(SAMPLES):
        tree = kio_oracle.canon_kio(kio_oracle.random_instance(kio_cls, rng))
        msg = kio_oracle.build_kwire(cls, tree, version)
        data = msg.encode(version)
        back = kio_oracle.kio_decode(kio_cls, data)
        diff = kio_oracle.tree_difference(tree, kio_oracle.canon_kio(back))
        assert diff is None, f"{name} v{version}: {diff}\nkwire: {msg!r}"
        assert kio_oracle.kio_encode(back) == data, f"{name} v{version}: kio re-encoding differs"


def test_differential_helpers_notice_a_difference() -> None:
    # The comparison is not vacuous: one changed value or one lost element is reported.
    kio_cls = _kio_classes()[("MetadataResponse", 12)]
    obj = kio_oracle.random_instance(kio_cls, random.Random(7))
    tree = kio_oracle.canon_kio(obj)
    cls = _registry().message_class("MetadataResponse")
    msg = kio_oracle.build_kwire(cls, tree, 12)
    msg.throttle_time_ms = msg.throttle_time_ms ^ 1
    diff = kio_oracle.tree_difference(kio_oracle.canon_kwire(msg, 12), tree)
    assert diff is not None and "throttle" in diff.lower()
    msg2 = kio_oracle.build_kwire(cls, tree, 12)
    msg2.brokers = (
        [*msg2.brokers, msg2.brokers[0]] if msg2.brokers else [cls.__kafka_fields__[1].struct()]
    )
    assert kio_oracle.tree_difference(kio_oracle.canon_kwire(msg2, 12), tree) is not None
