"""The generated fast path alone, message by message and version by version, against the reference.

``KafkaMessage.decode`` re-decodes with the careful decoder whenever the generated decoder raises,
so a bug in generated code could hide behind the fallback. These tests call the generated
functions directly (``fast_roundtrip``): for every bundled message-version, random instances must
encode and decode through the generated code with no fallback, and the reference implementation
(the careful decoder, ``check_encodable``, JSON) must agree with what the generated code wrote.
KWIRE_PROPERTY_EXAMPLES raises the number of examples per message-version (default 4).
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kwire.protocol import iter_message_versions, message_class
from kwire.protocol._reference import careful_decode, check_encodable
from kwire.protocol._testing import fast_roundtrip, instances

EXAMPLES = int(os.environ.get("KWIRE_PROPERTY_EXAMPLES", "4"))
CASES = list(iter_message_versions())


@pytest.mark.parametrize(("name", "version"), CASES, ids=[f"{n}-v{v}" for n, v in CASES])
def test_fast_path_alone_every_message_version(name: str, version: int) -> None:
    cls = message_class(name)

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(st.data())
    def check(data: st.DataObject) -> None:
        msg = data.draw(instances(cls, version))
        encoded = fast_roundtrip(msg, version)
        check_encodable(msg, version)  # the reference accepts what the fast path wrote
        reference, end = careful_decode(cls, encoded, version)
        assert reference == msg and end == len(encoded)

    check()
