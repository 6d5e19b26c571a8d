"""The shared wire primitives: varints as KIP-482 describes them, and their failure modes."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kwire import DecodeError
from kwire._wire import (
    read_uvarint,
    read_uvarlong,
    read_varint,
    read_varlong,
    uvarint_size,
    varint_size,
    write_uvarint,
    write_varint,
)


def test_seed_example_300_is_ac_02() -> None:
    out = bytearray()
    write_uvarint(out, 300)
    assert bytes(out) == b"\xac\x02"
    assert read_uvarint(memoryview(out), 0) == (300, 2)


@given(st.integers(0, 2**32 - 1))
def test_uvarint_roundtrip(value: int) -> None:
    out = bytearray(b"x")
    write_uvarint(out, value)
    assert read_uvarint(bytes(out), 1) == (value, len(out))
    assert uvarint_size(value) == len(out) - 1


@given(st.integers(-(2**63), 2**63 - 1))
def test_varlong_roundtrip(value: int) -> None:
    out = bytearray()
    write_varint(out, value)
    assert read_varlong(bytes(out), 0) == (value, len(out))
    assert varint_size(value) == len(out)


def test_zigzag_small_values() -> None:
    for value, encoded in [(0, b"\x00"), (-1, b"\x01"), (1, b"\x02"), (-2, b"\x03"), (63, b"\x7e")]:
        out = bytearray()
        write_varint(out, value)
        assert bytes(out) == encoded
        assert read_varint(encoded, 0) == (value, 1)


@pytest.mark.parametrize(
    ("data", "reader", "message"),
    [
        (b"", read_uvarint, "truncated"),
        (b"\x80\x80", read_uvarint, "truncated"),
        (b"\xff\xff\xff\xff\xff\x01", read_uvarint, "longer than 5"),
        (b"\xff\xff\xff\xff\x7f", read_uvarint, "32 bits"),
        (b"\xff" * 10 + b"\x01", read_uvarlong, "longer than 10"),
        (b"\xff\xff\xff\xff\xff\x01", read_varint, "longer than 5"),
    ],
)
def test_bad_varints_raise_decode_error_with_offset(data: bytes, reader, message: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(DecodeError, match=message) as info:
        reader(data, 0)
    assert info.value.offset == 0
