"""The compiled Avro decoder (kwire.spark._avro.AvroDecoder) against fastavro, the reference path:
the same Arrow array for every supported shape, random values, nulls, corrupt datums in between,
and batches whose list columns hold many times more items than rows (buffer growth)."""

from __future__ import annotations

import datetime as dt
import io
import json
import random
import uuid
from typing import Any

import pytest

np = pytest.importorskip("numpy")
pa = pytest.importorskip("pyarrow")
pytest.importorskip("fastavro")
pytest.importorskip("numba")

from kwire.spark._avro import (  # noqa: E402
    AvroDecoder,
    UnsupportedAvro,
    _expand,
    avro_arrow_type,
    decode_avro_loop,
    parse_avro,
)

ADDRESS = {
    "type": "record",
    "name": "Address",
    "fields": [
        {"name": "city", "type": "string"},
        {"name": "zip", "type": ["null", "string"], "default": None},
        {"name": "geo", "type": {"type": "array", "items": "double"}},
    ],
}
EVERYTHING = {
    "type": "record",
    "name": "Everything",
    "namespace": "t",
    "fields": [
        {"name": "i", "type": "int"},
        {"name": "l", "type": "long"},
        {"name": "b", "type": "boolean"},
        {"name": "f", "type": "float"},
        {"name": "d", "type": "double"},
        {"name": "s", "type": "string"},
        {"name": "by", "type": "bytes"},
        {"name": "fx", "type": {"type": "fixed", "name": "Four", "size": 4}},
        {"name": "e", "type": {"type": "enum", "name": "Color", "symbols": ["RED", "GREEN"]}},
        {"name": "ni", "type": ["null", "int"]},
        {"name": "nd", "type": ["double", "null"]},
        {"name": "nb", "type": ["null", "boolean"]},
        {"name": "date", "type": {"type": "int", "logicalType": "date"}},
        {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "tus", "type": {"type": "long", "logicalType": "timestamp-micros"}},
        {"name": "u", "type": {"type": "string", "logicalType": "uuid"}},
        {"name": "strs", "type": {"type": "array", "items": "string"}},
        {"name": "nested", "type": {"type": "array", "items": {"type": "array", "items": "long"}}},
        {"name": "m", "type": {"type": "map", "values": ["null", "long"]}},
        {"name": "addr", "type": ["null", ADDRESS]},
        {"name": "addrs", "type": {"type": "array", "items": "Address"}},
        {
            "name": "maparr",
            "type": ["null", {"type": "map", "values": {"type": "array", "items": "int"}}],
        },
    ],
}


def _value(rng: random.Random, big: bool = False) -> dict[str, Any]:
    def s() -> str:
        return "".join(rng.choice("abcé€😀 ") for _ in range(rng.randrange(0, 12)))

    def n(k: int) -> int:
        return rng.randrange(0, k * (40 if big else 1) + 1)

    def addr() -> dict[str, Any]:
        return {
            "city": s(),
            "zip": rng.choice([None, s()]),
            "geo": [rng.uniform(-1e9, 1e9) for _ in range(n(2))],
        }

    return {
        "i": rng.randrange(-(2**31), 2**31),
        "l": rng.randrange(-(2**63), 2**63),
        "b": rng.random() < 0.5,
        "f": float(np.float32(rng.uniform(-1e6, 1e6))),
        "d": rng.uniform(-1e300, 1e300),
        "s": s(),
        "by": bytes(rng.randrange(256) for _ in range(n(6))),
        "fx": bytes(rng.randrange(256) for _ in range(4)),
        "e": rng.choice(["RED", "GREEN"]),
        "ni": rng.choice([None, rng.randrange(-100, 100)]),
        "nd": rng.choice([None, rng.random()]),
        "nb": rng.choice([None, True, False]),
        "date": dt.date(2000, 1, 1) + dt.timedelta(days=rng.randrange(20000)),
        "ts": dt.datetime(2020, 1, 1, tzinfo=dt.UTC)
        + dt.timedelta(milliseconds=rng.randrange(10**10)),
        "tus": dt.datetime(2020, 1, 1, tzinfo=dt.UTC)
        + dt.timedelta(microseconds=rng.randrange(10**13)),
        "u": str(uuid.UUID(int=rng.getrandbits(128))),
        "strs": [s() for _ in range(n(3))],
        "nested": [[rng.randrange(-(2**40), 2**40) for _ in range(n(3))] for _ in range(n(2))],
        "m": {s(): rng.choice([None, rng.randrange(10**12)]) for _ in range(n(2))},
        "addr": rng.choice([None, addr()]),
        "addrs": [addr() for _ in range(n(2))],
        "maparr": rng.choice(
            [None, {s(): [rng.randrange(-5, 5) for _ in range(n(2))] for _ in range(n(2))}]
        ),
    }


def _encode(schema: Any, value: Any) -> bytes:
    from fastavro import schemaless_writer

    out = io.BytesIO()
    schemaless_writer(out, schema, value)
    return out.getvalue()


def _columns(payloads: list[bytes | None]) -> tuple[Any, Any, Any]:
    """(data, starts, ends) as the registry layer hands them over: one buffer, None as start -1."""
    data = b"".join(p for p in payloads if p is not None)
    starts, ends, pos = [], [], 0
    for p in payloads:
        if p is None:
            starts.append(-1)
            ends.append(-1)
        else:
            starts.append(pos)
            pos += len(p)
            ends.append(pos)
    return np.frombuffer(data, np.uint8), np.array(starts, np.int64), np.array(ends, np.int64)


def _check(schema_doc: Any, payloads: list[bytes | None]) -> Any:
    parsed = parse_avro(json.dumps(schema_doc))
    expanded = _expand(parsed)
    arrow_type = avro_arrow_type(expanded)
    expected, errors = decode_avro_loop(payloads, parsed, parsed, arrow_type)
    array, status = AvroDecoder(expanded).decode(*_columns(payloads))
    assert array.type == arrow_type
    array.validate(full=True)
    failed = {i for i, ok in enumerate(status) if not ok and payloads[i] is not None}
    assert failed == set(errors), (failed, errors)
    assert array.to_pylist() == expected.to_pylist()
    return array


@pytest.mark.parametrize("seed", range(6))
def test_every_supported_shape_matches_fastavro(seed: int) -> None:
    rng = random.Random(seed)
    parsed = parse_avro(json.dumps(EVERYTHING))
    payloads: list[bytes | None] = []
    for i in range(300):
        if i % 37 == 5:
            payloads.append(None)  # a null value (a tombstone)
        else:
            payloads.append(_encode(parsed, _value(rng)))
    array = _check(EVERYTHING, payloads)
    assert array.null_count == sum(p is None for p in payloads)


def test_corrupt_datums_become_null_rows_and_the_next_ones_still_decode() -> None:
    rng = random.Random(7)
    parsed = parse_avro(json.dumps(EVERYTHING))
    good = [_encode(parsed, _value(rng)) for _ in range(60)]
    payloads: list[bytes | None] = []
    for i, p in enumerate(good):
        if i % 6 == 1:
            payloads.append(p[: len(p) // 2])  # truncated
        elif i % 6 == 3:
            payloads.append(p[:-1] + b"")  # one byte short
        elif i % 6 == 4:
            payloads.append(b"\x00" * 3)  # too short for the record
        else:
            payloads.append(p)
    array = _check(EVERYTHING, payloads)
    assert array.null_count == sum(1 for i in range(60) if i % 6 in (1, 3, 4))


def test_a_bad_union_branch_or_enum_index_fails_only_that_datum() -> None:
    schema = {
        "type": "record",
        "name": "R",
        "fields": [
            {"name": "n", "type": ["null", "long"]},
            {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["A", "B"]}},
        ],
    }
    parsed = parse_avro(json.dumps(schema))
    ok = _encode(parsed, {"n": 3, "e": "B"})
    bad_branch = b"\x04" + ok[1:]  # union branch 2 of a 2-branch union
    bad_enum = ok[:-1] + b"\x06"  # enum index 3 of 2 symbols
    _check(schema, [ok, bad_branch, ok, bad_enum, ok])


def test_many_items_per_row_grow_the_buffers() -> None:
    """List columns far larger than the row count (and than any first guess of their size)."""
    rng = random.Random(3)
    parsed = parse_avro(json.dumps(EVERYTHING))
    payloads: list[bytes | None] = [_encode(parsed, _value(rng, big=True)) for _ in range(40)]
    payloads += [_encode(parsed, _value(rng)) for _ in range(200)]
    array = _check(EVERYTHING, payloads)
    assert sum(len(v["strs"]) for v in array.to_pylist()) > 40 * 10


def test_decoder_is_reusable_across_batches_of_different_shape() -> None:
    rng = random.Random(11)
    parsed = parse_avro(json.dumps(EVERYTHING))
    expanded = _expand(parsed)
    decoder = AvroDecoder(expanded)
    for size, big in ((5, False), (300, True), (1, False), (0, False), (700, False)):
        payloads = [_encode(parsed, _value(rng, big)) for _ in range(size)]
        expected, _ = decode_avro_loop(payloads, parsed, parsed, avro_arrow_type(expanded))
        array, status = decoder.decode(*_columns(payloads))
        assert array.to_pylist() == expected.to_pylist() and all(status)


def test_shapes_left_to_fastavro_are_refused() -> None:
    for schema in (
        ["null", "int", "string"],  # a general union
        {"type": "bytes", "logicalType": "decimal", "precision": 5, "scale": 2},
    ):
        with pytest.raises(UnsupportedAvro):
            AvroDecoder(_expand(parse_avro(json.dumps(schema))))


# --- schema resolution: an older writer schema read with the reader's -----------------------------

V1 = {
    "type": "record",
    "name": "Order",
    "namespace": "shop",
    "fields": [
        {"name": "id", "type": "int"},
        {"name": "amount", "type": "float"},
        {"name": "dropped", "type": "string"},
        {"name": "state", "type": {"type": "enum", "name": "State", "symbols": ["NEW", "OLD"]}},
        {"name": "raw", "type": "string"},
        {
            "name": "lines",
            "type": {
                "type": "array",
                "items": {
                    "type": "record",
                    "name": "Line",
                    "fields": [{"name": "sku", "type": "string"}, {"name": "n", "type": "int"}],
                },
            },
        },
        {"name": "extra", "type": {"type": "map", "values": "int"}},
        {"name": "maybe", "type": ["null", "long"], "default": None},
    ],
}
V2 = {
    "type": "record",
    "name": "Order",
    "namespace": "shop",
    "fields": [
        {"name": "id", "type": "long"},  # promoted
        {"name": "amount", "type": "double"},  # promoted
        {
            "name": "state",
            "type": {"type": "enum", "name": "State", "symbols": ["NEW", "PAID"], "default": "NEW"},
        },
        {"name": "raw", "type": "bytes"},  # string to bytes
        {
            "name": "lines",
            "type": {
                "type": "array",
                "items": {
                    "type": "record",
                    "name": "Line",
                    "fields": [
                        {"name": "sku", "type": "string"},
                        {"name": "n", "type": "long"},
                        {"name": "note", "type": "string", "default": "none"},  # added
                    ],
                },
            },
        },
        {"name": "extra", "type": {"type": "map", "values": "double"}},
        {"name": "maybe", "type": ["null", "long"], "default": None},
        {"name": "channel", "type": "string", "default": "web"},  # added
        {"name": "blob", "type": "bytes", "default": "\u00ff\u0001"},  # added, bytes default
        {"name": "when", "type": {"type": "long", "logicalType": "timestamp-millis"}, "default": 5},
        {"name": "tags", "type": {"type": "array", "items": "string"}, "default": ["a"]},
    ],
}


def _v1_value(rng: random.Random) -> dict[str, Any]:
    return {
        "id": rng.randrange(-(2**31), 2**31),
        "amount": float(np.float32(rng.uniform(-1e6, 1e6))),
        "dropped": "x" * rng.randrange(5),
        "state": rng.choice(["NEW", "OLD"]),
        "raw": "é" * rng.randrange(3),
        "lines": [{"sku": f"s{j}", "n": j} for j in range(rng.randrange(3))],
        "extra": {f"k{j}": j for j in range(rng.randrange(3))},
        "maybe": rng.choice([None, rng.randrange(10**15)]),
    }


def test_an_older_writer_schema_resolves_as_fastavro_does() -> None:
    from kwire.spark._avro import ResolvingAvroDecoder

    rng = random.Random(21)
    writer, reader = parse_avro(json.dumps(V1)), parse_avro(json.dumps(V2))
    payloads: list[bytes | None] = [_encode(writer, _v1_value(rng)) for _ in range(200)]
    payloads[7] = None
    payloads[9] = payloads[9][:3]  # truncated
    arrow_type = avro_arrow_type(_expand(reader))
    expected, errors = decode_avro_loop(payloads, writer, reader, arrow_type)
    decoder = ResolvingAvroDecoder(_expand(writer), _expand(reader))
    array, status = decoder.decode(*_columns(payloads))
    assert array.type == arrow_type
    array.validate(full=True)
    assert {i for i, ok in enumerate(status) if not ok and payloads[i] is not None} == set(errors)
    assert array.to_pylist() == expected.to_pylist()


@pytest.mark.parametrize(
    ("writer_field", "reader_field"),
    [
        ({"name": "a", "type": ["null", "int"]}, {"name": "a", "type": "int"}),  # null to required
        (  # a symbol the reader lacks, and no default
            {"name": "a", "type": {"type": "enum", "name": "E", "symbols": ["X", "Y"]}},
            {"name": "a", "type": {"type": "enum", "name": "E", "symbols": ["X"]}},
        ),
        ({"name": "a", "type": "long"}, {"name": "a", "type": "int"}),  # no demotion
        ({"name": "a", "type": "int"}, {"name": "b", "type": "int"}),  # no default for b
    ],
)
def test_pairs_the_columns_cannot_resolve_are_left_to_fastavro(
    writer_field: dict[str, Any], reader_field: dict[str, Any]
) -> None:
    from kwire.spark._avro import ResolvingAvroDecoder

    def record(field: dict[str, Any]) -> Any:
        return _expand(parse_avro(json.dumps({"type": "record", "name": "R", "fields": [field]})))

    with pytest.raises(UnsupportedAvro):
        ResolvingAvroDecoder(record(writer_field), record(reader_field))
