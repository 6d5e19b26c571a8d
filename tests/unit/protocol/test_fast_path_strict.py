"""A fast-path failure that the reference does not confirm: an error in tests, a warning outside.

The suite runs with ``KWIRE_STRICT_FASTPATH=1`` (tests/conftest.py). A generated function is
replaced by a broken one to stand for a generator bug.
"""

from __future__ import annotations

from typing import Any

import pytest

from kwire.errors import DecodeError, FastPathError, FastPathFallbackWarning
from kwire.protocol import fast_path_fallbacks, message_class


def _broken(*args: Any) -> Any:
    raise IndexError("a generator bug")


def test_strict_mode_makes_a_successful_fallback_fail(monkeypatch: pytest.MonkeyPatch) -> None:
    cls = message_class("ApiVersionsRequest")
    data = cls(client_software_name="x").encode(3)
    monkeypatch.setitem(cls._decoders, 3, _broken)
    with pytest.raises(FastPathError, match="generated decoder of ApiVersionsRequest v3"):
        cls.decode(data, 3)


def test_outside_strict_mode_a_warning_and_a_count(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KWIRE_STRICT_FASTPATH", "0")
    cls = message_class("ApiVersionsRequest")
    msg = cls(client_software_name="x")
    data = msg.encode(3)
    before = fast_path_fallbacks().get(("ApiVersionsRequest", 3, "decoder"), 0)
    monkeypatch.setitem(cls._decoders, 3, _broken)
    with pytest.warns(FastPathFallbackWarning, match="IndexError: a generator bug"):
        assert cls.decode(data, 3) == msg  # the reference's result, still correct
    assert fast_path_fallbacks()[("ApiVersionsRequest", 3, "decoder")] == before + 1


def test_encoder_bug_is_reported_too(monkeypatch: pytest.MonkeyPatch) -> None:
    cls = message_class("ApiVersionsRequest")
    monkeypatch.setitem(cls._encoders, 3, _broken)
    with pytest.raises(FastPathError, match="generated encoder of ApiVersionsRequest v3"):
        cls(client_software_name="x").encode(3)


def test_bad_input_is_not_a_fast_path_failure() -> None:
    cls = message_class("ApiVersionsRequest")
    with pytest.raises(DecodeError):
        cls.decode(b"\x01", 3)
