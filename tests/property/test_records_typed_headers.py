"""Property: typed header values round-trip for every type."""

from __future__ import annotations

import struct

from hypothesis import given
from hypothesis import strategies as st

from kwire.errors import DecodeError
from kwire.records.typed_headers import HeaderType, decode_value, encode_value

_f32 = st.floats(width=32, allow_nan=False)

VALUES = st.one_of(
    st.tuples(st.just(HeaderType.BOOLEAN), st.booleans()),
    st.tuples(st.just(HeaderType.BYTE), st.integers(-(2**7), 2**7 - 1)),
    st.tuples(st.just(HeaderType.CHAR), st.characters(max_codepoint=0xFFFF, exclude_categories=())),
    st.tuples(st.just(HeaderType.SHORT), st.integers(-(2**15), 2**15 - 1)),
    st.tuples(st.just(HeaderType.INT), st.integers(-(2**31), 2**31 - 1)),
    st.tuples(st.just(HeaderType.LONG), st.integers(-(2**63), 2**63 - 1)),
    st.tuples(st.just(HeaderType.FLOAT), _f32),
    st.tuples(st.just(HeaderType.DOUBLE), st.floats(allow_nan=False)),
    st.tuples(st.just(HeaderType.STRING), st.text()),
    st.tuples(st.just(HeaderType.BYTES), st.binary()),
)


@given(VALUES)
def test_roundtrip(item: tuple[HeaderType, object]) -> None:
    kind, value = item
    wire = encode_value(value, kind)
    assert wire[0] == kind
    decoded = decode_value(wire)
    assert decoded.type == kind
    if kind == HeaderType.FLOAT:
        assert struct.pack(">f", decoded.value) == struct.pack(">f", value)  # type: ignore[arg-type]
    else:
        assert decoded.value == value
    assert encode_value(decoded) == wire


@given(st.binary(max_size=20))
def test_decode_random_bytes_only_typed_errors(data: bytes) -> None:
    try:
        decoded = decode_value(data)
    except DecodeError as exc:
        assert exc.offset is not None
    else:
        assert encode_value(decoded) == data or decoded.type == HeaderType.FLOAT
