"""``java_string``: bytes shown as Java's ``new String(bytes, UTF_8)`` shows them."""

from __future__ import annotations

import pytest

from kwire.records import java_string


@pytest.mark.parametrize(
    ("data", "java"),
    [
        # What Java 17's new String(bytes, UTF_8) gives (checked in tests/oracle/test_log_java.py).
        (b"\xed\xa0\x80", "\ufffd"),  # an encoded surrogate: one replacement for three bytes
        (b"\xe0\x80\x80", "\ufffd\ufffd\ufffd"),  # overlong 3-byte form
        (b"\xe2\x82", "\ufffd"),  # a cut 3-byte sequence
        (b"\xf0\x9f\x98", "\ufffd"),  # a cut 4-byte sequence
        (b"\xf4\x90\x80\x80", "\ufffd\ufffd\ufffd\ufffd"),  # beyond U+10FFFF
        (b"\xc3\xa9", "\u00e9"),
        (b"a\xffb", "a\ufffdb"),
    ],
)
def test_values_print_as_javas_string_decoder(data: bytes, java: str) -> None:
    assert java_string(data) == java
    assert java_string(memoryview(data)) == java
