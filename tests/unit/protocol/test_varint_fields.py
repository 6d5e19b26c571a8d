"""Varint fields, kwire's extension of the spec language after the varint proposal (both forms)."""

from __future__ import annotations

import json
import struct
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kwire._wire import write_uvarint, write_varint
from kwire.errors import DecodeError, EncodeError
from kwire.protocol import AnyMessage, inspect, load_specs
from kwire.protocol._codegen import emit_module
from kwire.protocol._evolution import compare_messages
from kwire.protocol._reference import careful_decode
from kwire.protocol._spec import SpecError, parse_spec
from kwire.protocol._testing import roundtrip
from kwire.protocol.ext.varint_fields import encoded_size, wire_range

# v0 inflexible and all fixed; v1 flexible, varints (form A and form B); v2 adds varint64 on B.
SAMPLE: dict[str, Any] = {
    "type": "data",
    "name": "Sample",
    "validVersions": "0-2",
    "flexibleVersions": "1+",
    "fields": [
        {"name": "A", "type": {"0": "int32", "1+": "unsigned_varint32"}, "versions": "0+"},
        {
            "name": "B",
            "type": "int64",
            "versions": "0+",
            "default": "-1",
            "encoding": {"0-1": "fixed64", "2+": "varint64"},
        },
        {
            "name": "C",
            "type": "[]int16",
            "versions": "0+",
            "encoding": {"0": "fixed16", "1+": "varint16"},
        },
        {"name": "E", "type": {"0": "int32", "1+": "varint64"}, "versions": "0+"},
        {
            "name": "F",
            "type": "int32",
            "versions": "0+",
            "encoding": {"0": "fixed32", "1+": "varint16"},
        },
        {
            "name": "D",
            "type": "int32",
            "versions": "1+",
            "taggedVersions": "1+",
            "tag": 0,
            "encoding": "unsigned32",
        },
    ],
}


def make(spec: dict[str, Any], source: str = "Sample.json") -> type[AnyMessage]:
    parsed = parse_spec(json.dumps(spec), source)
    return load_specs({parsed.name: parsed}).message_class(parsed.name)


@pytest.fixture(scope="module")
def sample() -> type[AnyMessage]:
    return make(SAMPLE)


def expected_bytes(a: int, b: int, c: list[int], e: int, f: int, d: int, version: int) -> bytes:
    """The wire form, written by hand from the _wire primitives (independent of the emitter)."""
    out = bytearray()
    if version == 0:
        out += struct.pack(">iq", a, b)
        out += struct.pack(f">i{len(c)}h", len(c), *c)
        out += struct.pack(">ii", e, f)
        return bytes(out)
    write_uvarint(out, a)
    if version == 1:
        out += struct.pack(">q", b)
    else:
        write_varint(out, b)
    write_uvarint(out, len(c) + 1)
    for x in c:
        write_varint(out, x)
    write_varint(out, e)
    write_varint(out, f)
    if d == 0:
        out.append(0)
    else:
        tagged = bytearray()
        write_uvarint(tagged, d)
        out += bytes([1, 0, len(tagged)]) + tagged
    return bytes(out)


@pytest.mark.parametrize("version", [0, 1, 2])
@pytest.mark.parametrize(
    "values",
    [
        (0, -1, [], 0, 0, 0),
        (300, 5, [1, -1, 32767, -32768], -7, 1000, 0),
        (2**31 - 1, -(2**40), [64, -65], 2**31 - 1, -(2**15), 129),
    ],
)
def test_bytes_match_the_hand_written_form(
    sample: type[AnyMessage], version: int, values: tuple[Any, ...]
) -> None:
    a, b, c, e, f, d = values
    if version == 0:
        d = 0  # D is absent from v0
    msg = sample(a=a, b=b, c=c, e=e, f=f, d=d)
    data = roundtrip(msg, version)
    assert data == expected_bytes(a, b, c, e, f, d, version)
    back, end = careful_decode(sample, data, version)
    assert back == msg and end == len(data)


def test_varints_make_small_values_smaller(sample: type[AnyMessage]) -> None:
    msg = sample(a=1, b=2, c=[1, 2, 3], e=4, f=5)
    # v0 all fixed: 4 + 8 + (4 + 3 * 2) + 4 + 4; v1: 1 + 8 + (1 + 3) + 1 + 1 + tags 1; v2: b is 1
    assert [len(msg.encode(v)) for v in (0, 1, 2)] == [30, 16, 9]


def test_python_type_is_the_widest_any_version_uses(sample: type[AnyMessage]) -> None:
    fields = {f.attr: f for f in inspect(sample, 1)}
    assert fields["e"].type == "int64"  # int32 in v0, varint64 in v1+
    assert fields["a"].type == "int32"
    assert fields["c"].type == "[]int16"
    assert fields["e"].wire(0) == "int32" and fields["e"].wire(1) == "varint64"
    # a 64-bit value fits v1 but not v0's fixed int32, and the error names the field
    msg = sample(e=2**40)
    assert sample.decode(msg.encode(1), 1).e == 2**40
    with pytest.raises(EncodeError, match=r"out of range for int32 at version 0.*field e\b"):
        msg.encode(0)


def test_negative_value_into_unsigned_varint_names_the_field(sample: type[AnyMessage]) -> None:
    msg = sample(a=-1)
    assert sample.decode(msg.encode(0), 0).a == -1  # fixed int32 in v0 takes it
    with pytest.raises(
        EncodeError, match=r"negative value -1 cannot be written as unsigned_varint32.*field a\)"
    ):
        msg.encode(1)
    with pytest.raises(EncodeError, match=r"negative value -5 .*field d\)"):
        sample(d=-5).encode(1)
    out = bytearray(b"keep")
    with pytest.raises(EncodeError):
        msg.encode_into(out, 1)
    assert out == b"keep"


def test_range_is_checked_per_wire_width(sample: type[AnyMessage]) -> None:
    # F is an int32 written as varint16 from v1: 40000 fits v0 (fixed32), not v1
    msg = sample(f=40000)
    assert sample.decode(msg.encode(0), 0).f == 40000
    with pytest.raises(
        EncodeError, match=r"40000 is out of range for varint16 at version 1.*field f\)"
    ):
        msg.encode(1)


def test_overlong_varint_is_a_decode_error_with_path_and_offset(sample: type[AnyMessage]) -> None:
    # A as an unsigned varint32 that runs on for 6 bytes
    data = b"\x80\x80\x80\x80\x80\x01"
    with pytest.raises(DecodeError) as info:
        sample.decode(data, 1)
    assert info.value.path == "a" and info.value.offset == 0
    assert "longer than 5 bytes" in str(info.value)


def test_varint16_out_of_range_on_decode(sample: type[AnyMessage]) -> None:
    good = sample(c=[1, 2]).encode(1)
    # replace c's second element (zigzag 4 -> b"\x04") with zigzag(40000) = 80000, three bytes
    big = bytearray()
    write_uvarint(big, 80000)
    i = good.index(b"\x03\x02\x04") + 2  # count 2+1, elements 1 -> 2, 2 -> 4
    data = good[:i] + bytes(big) + good[i + 1 :]
    with pytest.raises(DecodeError) as info:
        sample.decode(data, 1)
    assert info.value.path == "c[1]" and info.value.offset == i
    assert "varint16 value 40000 is out of range" in str(info.value)


def test_truncated_varint_is_a_decode_error(sample: type[AnyMessage]) -> None:
    data = sample(a=1, b=2, c=[], e=300).encode(1)
    cut = data.index(bytes([0xD8, 0x04]))  # zigzag(300) = 600 = 0xD8 0x04
    with pytest.raises(DecodeError) as info:
        sample.decode(data[: cut + 1], 1)
    assert info.value.path == "e" and info.value.offset == cut
    assert "truncated" in str(info.value)


def test_json_round_trips(sample: type[AnyMessage]) -> None:
    msg = sample(a=7, b=-(2**40), c=[-3, 4], e=2**35, f=-2, d=9)
    for version in (1, 2):
        obj = msg.to_json(version)
        assert obj == {"a": 7, "b": -(2**40), "c": [-3, 4], "e": 2**35, "f": -2, "d": 9}
        assert sample.from_json(obj, version) == msg


@given(
    st.integers(*wire_range("unsigned_varint32")),
    st.integers(*wire_range("varint64")),
    st.lists(st.integers(*wire_range("varint16")), max_size=5),
    st.integers(*wire_range("varint64")),
    st.integers(*wire_range("varint16")),
    st.integers(*wire_range("unsigned_varint32")),
)
@settings(max_examples=60, deadline=None)
def test_property_roundtrip_and_size(a: int, b: int, c: list[int], e: int, f: int, d: int) -> None:
    cls = make(SAMPLE)
    msg = cls(a=a, b=b, c=c, e=e, f=f, d=d)
    data = roundtrip(msg, 2)
    assert careful_decode(cls, data, 2)[0] == msg
    body = (
        encoded_size("unsigned_varint32", a)
        + encoded_size("varint64", b)
        + 1
        + sum(encoded_size("varint16", x) for x in c)
        + encoded_size("varint64", e)
        + encoded_size("varint16", f)
    )
    tags = 1 if d == 0 else 3 + encoded_size("unsigned_varint32", d)
    assert len(data) == body + tags


def test_tagged_varint_field_is_written_within_its_size(sample: type[AnyMessage]) -> None:
    data = sample(d=300).encode(1)
    assert data.endswith(b"\x01\x00\x02\xac\x02")  # one tag: tag 0, size 2, uvarint 300


# ------------------------------------------------------------------------------------------------
# Loader validation


def _with(field: dict[str, Any], versions: str = "0-3", flexible: str = "1+") -> dict[str, Any]:
    return {
        "type": "data",
        "name": "Bad",
        "validVersions": versions,
        "flexibleVersions": flexible,
        "fields": [field],
    }


@pytest.mark.parametrize(
    ("field", "message"),
    [
        (
            {"name": "X", "type": {"0-1": "int32", "3+": "varint32"}, "versions": "0+"},
            "version 2 .* not covered",
        ),
        ({"name": "X", "type": {"0-2": "int32", "2+": "varint32"}, "versions": "0+"}, "overlap"),
        (
            {"name": "X", "type": {"0": "int32", "1+": "string"}, "versions": "0+"},
            "version-dependent type must be one of",
        ),
        (
            {"name": "X", "type": {"0": "int32", "1+": "float64"}, "versions": "0+"},
            "version-dependent type must be one of",
        ),
        (
            {"name": "X", "type": {"0": "[]int32", "1+": "varint32"}, "versions": "0+"},
            "cannot mix arrays",
        ),
        (
            {
                "name": "X",
                "type": {"0": "int32", "1+": "unsigned_varint32"},
                "versions": "0+",
                "default": "-1",
            },
            "default -1 is negative",
        ),
        (
            {
                "name": "X",
                "type": "int32",
                "versions": "0+",
                "default": "-1",
                "encoding": {"0": "fixed32", "1+": "unsigned32"},
            },
            "default -1 is negative",
        ),
        (
            {
                "name": "X",
                "type": "int32",
                "versions": "0+",
                "default": "70000",
                "encoding": {"0": "fixed32", "1+": "varint16"},
            },
            "default 70000 does not fit varint16",
        ),
        (
            {
                "name": "X",
                "type": {"0": "int32", "1+": "varint32"},
                "versions": "0+",
                "encoding": {"0+": "fixed32"},
            },
            "mixes both varint forms",
        ),
        (
            {"name": "X", "type": "varint32", "versions": "0+", "encoding": "fixed32"},
            "mixes both varint forms",
        ),
        (
            {"name": "X", "type": "string", "versions": "0+", "encoding": {"0+": "varint32"}},
            "only valid on int16, int32 and int64",
        ),
        (
            {"name": "X", "type": "int16", "versions": "0+", "encoding": {"0+": "varint32"}},
            "wider than the field's type int16",
        ),
        (
            {"name": "X", "type": "int32", "versions": "0+", "encoding": {"0+": "zigzag32"}},
            "encoding 'zigzag32'",
        ),
        (
            {
                "name": "X",
                "type": "int32",
                "versions": "2+",
                "encoding": {"0-1": "fixed32", "2+": "varint32"},
            },
            "outside the field's versions",
        ),
        (
            {
                "name": "X",
                "type": {"0": "int32", "1+": "varint32"},
                "versions": "0+",
                "nullableVersions": "1+",
            },
            "cannot be nullable",
        ),
        ({"name": "X", "type": 5, "versions": "0+"}, "a field needs a type"),
    ],
)
def test_loader_rejects_bad_varint_fields(field: dict[str, Any], message: str) -> None:
    with pytest.raises(SpecError, match=message) as info:
        parse_spec(json.dumps(_with(field)), "Bad.json")
    text = str(info.value)
    assert text.startswith("Bad.json") and "field X" in text


def test_ranges_may_extend_beyond_versions_and_are_clipped() -> None:
    field = {
        "name": "X",
        "type": "int32",
        "versions": "1+",
        "encoding": {"0-2": "fixed32", "3+": "varint32"},
    }
    spec = parse_spec(json.dumps(_with(field)), "Ok.json")
    (x,) = spec.fields
    assert [(str(r), w) for r, w in x.encodings] == [("1-2", "int32"), ("3+", "varint32")]
    assert x.encoding_form == "encoding"
    assert x.wire_type(2) == "int32" and x.wire_type(3) == "varint32"


def test_varint_type_name_alone_is_form_a_for_every_version() -> None:
    field = {"name": "X", "type": "[]unsigned_varint64", "versions": "0+"}
    (x,) = parse_spec(json.dumps(_with(field)), "Ok.json").fields
    assert str(x.type) == "[]int64" and x.encoding_form == "type"
    assert x.wire_type(0) == "[]unsigned_varint64"


def test_specs_without_either_form_are_unchanged() -> None:
    from kwire.protocol._bundled import bundled_specs

    specs = bundled_specs()
    assert all(
        not f.encodings for s in specs.values() for st_ in s.iter_structs() for f in st_.fields
    )
    assert all(s.tag_header == "kip482" for s in specs.values())
    source = emit_module([specs["MetadataRequest"], specs["MetadataResponse"]])
    assert "VARINTS" not in source and "interleaved" not in source


def test_spec_check_reports_an_encoding_change_in_an_existing_version() -> None:
    old = dict(SAMPLE)
    new = json.loads(json.dumps(SAMPLE))
    new["fields"][1]["encoding"] = {"0": "fixed64", "1+": "varint64"}  # v1 changes layout
    findings = compare_messages(
        parse_spec(json.dumps(old), "S.json"), parse_spec(json.dumps(new), "S.json")
    )
    layout = [f for f in findings if f.rule == "layout-changed"]
    assert len(layout) == 1 and layout[0].field == "B" and layout[0].versions == "1"
    assert "int64" in layout[0].detail and "varint64" in layout[0].detail
    # a new version with a new encoding is a compatible change
    newer = json.loads(json.dumps(SAMPLE))
    newer["validVersions"] = "0-3"
    newer["fields"][0]["type"] = {"0": "int32", "1-2": "unsigned_varint32", "3+": "varint32"}
    findings = compare_messages(
        parse_spec(json.dumps(old), "S.json"), parse_spec(json.dumps(newer), "S.json")
    )
    assert [f.rule for f in findings if f.kind == "violation"] == []
    # a tagged field whose encoding changes is a tagged type change
    tagged = json.loads(json.dumps(SAMPLE))
    tagged["fields"][5]["encoding"] = "varint32"
    findings = compare_messages(
        parse_spec(json.dumps(old), "S.json"), parse_spec(json.dumps(tagged), "S.json")
    )
    assert [f.rule for f in findings if f.kind == "violation"] == ["tagged-type-changed"]


def test_both_forms_give_the_same_bytes() -> None:
    form_a = {"name": "X", "type": {"0": "int32", "1+": "unsigned_varint32"}, "versions": "0+"}
    form_b = {
        "name": "X",
        "type": "int32",
        "versions": "0+",
        "encoding": {"0": "fixed32", "1+": "unsigned32"},
    }
    a = make(_with(form_a, versions="0-1"), "A.json")
    b = make(_with(form_b, versions="0-1"), "B.json")
    for value in (0, 1, 127, 128, 2**31 - 1):
        for version in (0, 1):
            assert a(x=value).encode(version) == b(x=value).encode(version)
    assert a(x=300).encode(1) == b"\xac\x02\x00"


@given(st.data())
@settings(max_examples=150, deadline=None)
def test_mutated_bytes_give_only_decode_errors(data: st.DataObject) -> None:
    cls = make(SAMPLE)
    version = data.draw(st.sampled_from([1, 2]))
    msg = cls(a=300, b=-(2**33), c=[1, -200, 3], e=2**40, f=-5, d=77)
    raw = bytearray(msg.encode(version))
    for _ in range(data.draw(st.integers(1, 4))):
        kind = data.draw(st.sampled_from(["flip", "cut", "insert"]))
        i = data.draw(st.integers(0, len(raw) - 1))
        if kind == "flip":
            raw[i] = data.draw(st.integers(0, 255))
        elif kind == "cut":
            del raw[i:]
            if not raw:
                raw.append(0x80)
        else:
            raw[i:i] = bytes([data.draw(st.sampled_from([0x80, 0xFF, 0x7F, 0x00]))])
    try:
        back = cls.decode(bytes(raw), version)
    except DecodeError as exc:
        assert exc.offset is not None and 0 <= exc.offset <= len(raw)
        return
    # whatever decodes must encode and decode to itself (non-minimal varints are accepted, as
    # Kafka's readers do, so the bytes themselves may differ)
    assert cls.decode(back.encode(version), version) == back


@pytest.mark.parametrize("header", ["kip482", "interleaved"])
def test_random_instances_round_trip(header: str) -> None:
    import random

    from kwire.protocol._testing import random_instance

    spec = parse_spec(json.dumps(dict(SAMPLE, tagHeader=header)), "Sample.json")
    cls = load_specs({spec.name: spec}).message_class("Sample")
    rng = random.Random(5)
    for version in (0, 1, 2):
        for _ in range(200):
            msg = random_instance(cls, version, rng)
            data = roundtrip(msg, version)
            assert careful_decode(cls, data, version)[0] == msg


def test_varints_in_inflexible_versions_and_nullable_arrays() -> None:
    spec = {
        "type": "data",
        "name": "Plain",
        "validVersions": "0-1",
        "flexibleVersions": "1+",
        "fields": [
            {
                "name": "Ids",
                "type": "[]unsigned_varint64",
                "versions": "0+",
                "nullableVersions": "0+",
            },
            {"name": "N", "type": "varint16", "versions": "0+"},
        ],
    }
    cls = make(spec, "Plain.json")
    for version, ids, expected in [
        (0, [1, 300], b"\x00\x00\x00\x02\x01\xac\x02\x09"),  # int32 count, uvarints, zigzag(-5)
        (0, None, b"\xff\xff\xff\xff\x09"),
        (1, [1, 300], b"\x03\x01\xac\x02\x09\x00"),  # compact count, ..., empty tag section
        (1, None, b"\x00\x09\x00"),
        (1, [], b"\x01\x09\x00"),
    ]:
        msg = cls(ids=ids, n=-5)
        assert roundtrip(msg, version) == expected
        assert careful_decode(cls, expected, version)[0] == msg
    with pytest.raises(DecodeError) as info:
        cls.decode(b"\x00\x00\x00\x02\x01\xff", 0)  # second id truncated
    assert info.value.path == "ids[1]" and info.value.offset == 5


@pytest.mark.parametrize("kind", ["unsigned", "varint"])
def test_runs_of_varint_fields(kind: str) -> None:
    # consecutive varint fields are read and written together when every value is one byte
    names = ["P", "Q", "R"]
    spec = _with({"name": "X", "type": "int8", "versions": "0+"})
    spec["fields"] = [
        {"name": n, "type": "int32", "versions": "0+", "encoding": f"{kind}32"} for n in names
    ]
    cls = make(spec, "Run.json")
    lo = 0 if kind == "unsigned" else -70
    for values in (
        [0, 1, 63],
        [5, 127, 0],
        [lo, 300, 64],
        [2**31 - 1, 0, 1],
        [-1 if lo else 9, 2, 3],
    ):
        msg = cls(p=values[0], q=values[1], r=values[2])
        expected = bytearray()
        for value in values:
            (write_uvarint if kind == "unsigned" else write_varint)(expected, value)
        data = roundtrip(msg, 0)
        assert data == bytes(expected)
        assert careful_decode(cls, data, 0)[0] == msg
    if kind == "unsigned":
        with pytest.raises(EncodeError, match=r"negative value -1 .*field q\)"):
            cls(p=1, q=-1, r=1).encode(0)
