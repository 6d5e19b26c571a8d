"""The opt-in typed header codec (KIP-82 draft values)."""

from __future__ import annotations

import math
import struct

import pytest

from kwire.errors import DecodeError, EncodeError
from kwire.records import BatchBuilder, read_batch
from kwire.records.typed_headers import (
    HeaderType,
    TypedValue,
    decode_headers,
    decode_value,
    encode_headers,
    encode_value,
)


@pytest.mark.parametrize(
    ("value", "kind", "wire"),
    [
        (True, None, b"\x00\x01"),
        (False, None, b"\x00\x00"),
        (-2, HeaderType.BYTE, b"\x01\xfe"),
        ("é", HeaderType.CHAR, b"\x02\x00\xe9"),
        (-2, HeaderType.SHORT, b"\x03\xff\xfe"),
        (7, HeaderType.INT, b"\x04\x00\x00\x00\x07"),
        (7, None, b"\x05" + (7).to_bytes(8, "big")),
        (1.5, HeaderType.FLOAT, b"\x06" + struct.pack(">f", 1.5)),
        (1.5, None, b"\x07" + struct.pack(">d", 1.5)),
        ("héllo", None, b"\x08h\xc3\xa9llo"),
        (b"\x00\xff", None, b"\x09\x00\xff"),
    ],
)
def test_wire_format(value: object, kind: HeaderType | None, wire: bytes) -> None:
    assert encode_value(value, kind) == wire
    decoded = decode_value(wire)
    assert decoded.type == (kind if kind is not None else decoded.type)
    assert decoded.value == value


def test_through_a_batch_and_only_on_request() -> None:
    b = BatchBuilder(2)
    b.append(value=b"v", headers=encode_headers({"n": 5, "s": "x", "null": None}))
    (rec,) = read_batch(b.build())
    # read_batches never applies the codec: the values are the raw header bytes
    assert [bytes(v) if v is not None else None for _, v in rec.headers] == [
        b"\x05" + (5).to_bytes(8, "big"),
        b"\x08x",
        None,
    ]
    assert decode_headers(rec.headers) == [
        ("n", TypedValue(HeaderType.LONG, 5)),
        ("s", TypedValue(HeaderType.STRING, "x")),
        ("null", None),
    ]


def test_float_nan() -> None:
    assert math.isnan(float(decode_value(encode_value(math.nan)).value))


@pytest.mark.parametrize(
    ("value", "kind"),
    [
        (128, HeaderType.BYTE),
        (2**31, HeaderType.INT),
        (2**63, None),
        ("ab", HeaderType.CHAR),
        ("\U0001f600", HeaderType.CHAR),
        (1e300, HeaderType.FLOAT),
        (1, HeaderType.BOOLEAN),
        (True, HeaderType.INT),
        (object(), None),
        (b"x", HeaderType.STRING),
    ],
)
def test_encode_rejects(value: object, kind: HeaderType | None) -> None:
    with pytest.raises(EncodeError):
        encode_value(value, kind)


@pytest.mark.parametrize(
    "wire", [b"", b"\x0a", b"\x00", b"\x00\x02", b"\x04\x00", b"\x02\x00", b"\x08\xff"]
)
def test_decode_rejects(wire: bytes) -> None:
    with pytest.raises(DecodeError):
        decode_value(wire)


def test_decode_headers_names_the_header() -> None:
    with pytest.raises(DecodeError, match=r"headers\[1\]\('bad'\)"):
        decode_headers([("ok", b"\x00\x01"), ("bad", b"\x0f")])
