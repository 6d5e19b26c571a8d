"""Seed 003's draft tag header (one varlong, length in even bits, tag in odd bits): opt-in only."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kwire._wire import read_uvarlong, write_uvarint
from kwire.errors import DecodeError
from kwire.protocol import AnyMessage, load_specs, message_class
from kwire.protocol._evolution import compare_messages
from kwire.protocol._reference import careful_decode
from kwire.protocol._spec import SpecError, parse_spec
from kwire.protocol._testing import roundtrip
from kwire.protocol.ext.tag_header import interleave, read_interleaved_tag_header, uninterleave

# Six tagged fields (tags must be contiguous from 0); tag 5 is a 4-byte int32, as in KIP-482's first
# draft.
TAGGED: dict[str, Any] = {
    "type": "data",
    "name": "Tagged",
    "validVersions": "0",
    "flexibleVersions": "0+",
    "fields": [
        {"name": "Plain", "type": "int8", "versions": "0+"},
        *(
            {
                "name": f"T{i}",
                "type": "string",
                "versions": "0+",
                "taggedVersions": "0+",
                "tag": i,
                "default": "",
            }
            for i in range(5)
        ),
        {"name": "T5", "type": "int32", "versions": "0+", "taggedVersions": "0+", "tag": 5},
        {
            "name": "Inner",
            "type": "InnerStruct",
            "versions": "0+",
            "fields": [{"name": "Value", "type": "int16", "versions": "0+"}],
        },
    ],
}


def make(header: str | None = "interleaved", *, switch: str | None = None) -> type[AnyMessage]:
    obj = json.loads(json.dumps(TAGGED))
    if header is not None:
        obj["tagHeader"] = header
    spec = parse_spec(json.dumps(obj), "Tagged.json")
    return load_specs({spec.name: spec}, tag_header=switch).message_class("Tagged")


def test_worked_example_of_seed_003() -> None:
    # tag 5 = 0b101, length 4 = 0b100 -> ...T2L2T1L1T0L0 = ...110010
    header = interleave(5, 4)
    assert bin(header).endswith("110010") and header == 0b110010
    assert uninterleave(header) == (5, 4)
    assert read_interleaved_tag_header(bytes([header]), 0) == (5, 4, 1)


def test_worked_example_on_the_wire() -> None:
    cls = make()
    msg = cls(plain=1, t5=0x01020304)
    data = roundtrip(msg, 0)
    # int8, Inner (int16, empty tag section), then the tag section: one field, header 0b110010, 4 bytes
    assert data == bytes([1, 0, 0, 0, 1, 0b110010, 1, 2, 3, 4])
    assert careful_decode(cls, data, 0)[0] == msg


def test_kip482_header_is_the_default() -> None:
    cls = make(None)
    data = roundtrip(cls(plain=1, t5=0x01020304), 0)
    assert data == bytes([1, 0, 0, 0, 1, 5, 4, 1, 2, 3, 4])  # tag, then size: two varints
    # and the bundled classes use Kafka's form
    api = message_class("ApiVersionsResponse")
    out = api(zk_migration_ready=True).encode(3)
    assert out.endswith(bytes([1, 3, 1, 1]))  # one tag: tag 3, size 1, true


def test_codec_level_switch_overrides_the_spec() -> None:
    on = make(None, switch="interleaved")
    off = make("interleaved", switch="kip482")
    msg_on = on(plain=1, t5=7)
    msg_off = off(plain=1, t5=7)
    assert roundtrip(msg_on, 0)[4:6] == bytes([1, 0b110010])
    assert roundtrip(msg_off, 0)[4:7] == bytes([1, 5, 4])
    with pytest.raises(ValueError, match="tag_header must be one of"):
        load_specs({}, tag_header="zigzag")


def test_several_tags_multibyte_headers_and_unknown_tags_round_trip() -> None:
    cls = make()
    long_text = "x" * 300
    msg = cls(plain=1, t0="a", t3=long_text, t5=-1, unknown_tags={6: b"", 40: bytes(range(100))})
    msg.inner.value = 9
    msg.inner.unknown_tags = {0: b"\x01"}
    data = roundtrip(msg, 0)
    assert careful_decode(cls, data, 0)[0] == msg
    # walk the top-level tag section by hand: tags in order, headers interleaved
    # int8, Inner (int16, one tag: header, 1 byte), then the count
    assert data[:7] == bytes([1, 0, 9, 1, interleave(0, 1), 1, 5])
    p = 7
    seen = []
    for _ in range(5):
        h, p = read_uvarlong(data, p)
        tag, size = uninterleave(h)
        seen.append((tag, size))
        p += size
    assert seen == [(0, 2), (3, 302), (5, 4), (6, 0), (40, 100)]
    # a header for tag 3, length 302 needs 3 bytes interleaved (two varints would too: 1 + 2)
    hdr = bytearray()
    write_uvarint(hdr, interleave(3, 302))
    assert len(hdr) == 3


def test_unknown_tags_decode_with_interleaved_headers() -> None:
    cls = make()
    body = bytearray([1, 0, 0, 0, 1])  # int8, inner (value, no tags), one tag
    write_uvarint(body, interleave(9, 200))
    body += bytes(200)
    msg = cls.decode(bytes(body), 0)
    assert msg.unknown_tags == {9: bytes(200)}
    assert msg.encode(0) == bytes(body)


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (bytes([1, 0, 0, 0, 1]), "truncated unsigned varlong"),
        (bytes([1, 0, 0, 0, 1]) + b"\xff" * 10, "longer than 10 bytes"),
        (bytes([1, 0, 0, 0, 1, 0b110010, 1, 2]), "tag 5 needs 4 bytes"),
        (bytes([1, 0, 0, 0, 2, 0b110010, 1, 2, 3, 4, 0b110010, 1, 2, 3, 4]), "duplicate tag 5"),
    ],
)
def test_bad_interleaved_headers_are_decode_errors(data: bytes, reason: str) -> None:
    cls = make()
    with pytest.raises(DecodeError, match=reason) as info:
        cls.decode(data, 0)
    assert info.value.path == "_tagged_fields"
    assert info.value.offset is not None and info.value.offset >= 5


def test_bad_tag_header_value_is_a_spec_error() -> None:
    obj = dict(TAGGED, tagHeader="sideways")
    with pytest.raises(
        SpecError, match=r"Tagged\.json: tagHeader must be one of kip482, interleaved"
    ):
        parse_spec(json.dumps(obj), "Tagged.json")


def test_spec_check_reports_a_tag_header_change() -> None:
    old = parse_spec(json.dumps(TAGGED), "Tagged.json")
    new = parse_spec(json.dumps(dict(TAGGED, tagHeader="interleaved")), "Tagged.json")
    findings = compare_messages(old, new)
    assert [(f.kind, f.rule, f.versions) for f in findings] == [
        ("violation", "tag-header-changed", "0")
    ]


@given(st.integers(0, 2**32 - 1), st.integers(0, 2**32 - 1))
def test_interleave_is_invertible_and_fits_a_varlong(tag: int, length: int) -> None:
    h = interleave(tag, length)
    assert 0 <= h < 2**64
    assert uninterleave(h) == (tag, length)
    # bit by bit: even bits are the length, odd bits the tag
    for i in range(32):
        assert (h >> (2 * i)) & 1 == (length >> i) & 1
        assert (h >> (2 * i + 1)) & 1 == (tag >> i) & 1
    out = bytearray()
    write_uvarint(out, h)
    assert read_interleaved_tag_header(bytes(out), 0) == (tag, length, len(out))


@given(st.data())
def test_mutated_interleaved_tag_sections_give_only_decode_errors(data: st.DataObject) -> None:
    cls = make()
    msg = cls(plain=1, t1="abc", t5=7, unknown_tags={9: bytes(20)})
    raw = bytearray(msg.encode(0))
    for _ in range(data.draw(st.integers(1, 3))):
        i = data.draw(st.integers(4, len(raw) - 1))  # inside the top-level tag section
        raw[i] = data.draw(st.integers(0, 255))
    try:
        back = cls.decode(bytes(raw), 0)
    except DecodeError as exc:
        assert exc.offset is not None  # trailing bytes have no field path
        return
    assert cls.decode(back.encode(0), 0) == back
