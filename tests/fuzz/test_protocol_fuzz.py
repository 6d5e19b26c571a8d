"""Random and mutated bytes into every decoder: only ``DecodeError`` may come out.

Inputs are random bytes, and valid encodings of random instances that are truncated, extended or
have bytes overwritten. A decode that succeeds must give a message that encodes again.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kwire import DecodeError
from kwire.protocol import iter_message_versions, message_class
from kwire.protocol._testing import instances

EXAMPLES = int(os.environ.get("KWIRE_FUZZ_EXAMPLES", "6"))
CASES = list(iter_message_versions())


def _check(cls: type, data: bytes, version: int) -> None:
    try:
        msg = cls.decode(data, version)  # type: ignore[attr-defined]
    except DecodeError as exc:
        assert exc.offset is not None and 0 <= exc.offset <= len(data)
        return
    msg.encode(version)


@pytest.mark.parametrize(("name", "version"), CASES, ids=[f"{n}-v{v}" for n, v in CASES])
def test_only_decode_errors_escape(name: str, version: int) -> None:
    cls = message_class(name)

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(st.data())
    def check(data: st.DataObject) -> None:
        raw = data.draw(st.binary(max_size=64))
        _check(cls, raw, version)
        valid = data.draw(instances(cls, version, max_items=2)).encode(version)
        for _ in range(3):
            mutated = bytearray(valid)
            op = data.draw(st.sampled_from(["cut", "flip", "insert", "ff"]))
            if mutated and op == "cut":
                del mutated[data.draw(st.integers(0, len(mutated) - 1)) :]
            elif mutated and op == "flip":
                i = data.draw(st.integers(0, len(mutated) - 1))
                mutated[i] = data.draw(st.integers(0, 255))
            elif op == "insert":
                i = data.draw(st.integers(0, len(mutated)))
                mutated[i:i] = data.draw(st.binary(min_size=1, max_size=4))
            elif mutated:
                i = data.draw(st.integers(0, len(mutated) - 1))
                mutated[i : i + 4] = b"\xff\xff\xff\xff"
            _check(cls, bytes(mutated), version)

    check()
