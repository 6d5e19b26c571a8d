"""Headers and size-prefixed frames, as Kafka's network layer makes them.

Kafka's ``ApiKeys`` table decides, per API and version, which request header (v0, v1 or v2) and
which response header (v0 or v1) goes in front of a message; kwire must choose the same for every
one. Then whole frames: for every request and response message-version, Kafka writes a frame
(RequestUtils.serialize behind an int32 size, the body of SendBuilder's sends) around one of the
round-trip test's random instances, and kwire must write the same bytes and read the header and
message back from Kafka's frame.
"""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING, Any

import pytest
from check_specs import json_diff
from test_protocol_kafka_roundtrip import (
    JAR_SPECS,
    MESSAGE_VERSIONS,
    generate_cases,
    restore_records,
)

from kwire.protocol import (
    bundled_specs,
    decode_request_frame,
    decode_response_frame,
    encode_request_frame,
    encode_response_frame,
    message_class,
    message_spec,
    request_header_version,
    response_header_version,
)

if TYPE_CHECKING:  # only for annotations: "conftest" names several modules in a full run
    from conftest import JavaProcess

pytestmark = pytest.mark.oracle

API_VERSIONS = [
    (n, v) for n, v in MESSAGE_VERSIONS if message_spec(n).type in ("request", "response")
]
CLIENT_IDS = ("kwire", None, "", "clïent-🦀")


@pytest.fixture(scope="module")
def api_keys(protocol_oracle: JavaProcess) -> list[dict[str, Any]]:
    return protocol_oracle.request({"op": "apiKeys"})  # type: ignore[no-any-return]


def test_every_api_and_version_is_kafkas(api_keys: list[dict[str, Any]]) -> None:
    kafka = {
        (a["apiKey"], kind): (a["oldestVersion"], a["latestVersion"])
        for a in api_keys
        for kind in ("request", "response")
    }
    # the jar's APIs are those of Kafka 3.9.1's specs (the staged copy the merge reads) ...
    jar_specs = {
        (s.api_key, s.type): (s.valid_versions.lowest, s.valid_versions.highest)
        for s in JAR_SPECS.values()
        if s.type in ("request", "response")
    }
    assert jar_specs == kafka
    assert len(api_keys) == 88
    # ... and the bundled corpus speaks every version of them (and Kafka 4.x's besides)
    mine = {
        (s.api_key, s.type): set(s.versions())
        for s in bundled_specs().values()
        if s.type in ("request", "response")
    }
    missing = {
        key: sorted(set(range(lo, hi + 1)) - mine.get(key, set()))
        for key, (lo, hi) in kafka.items()
        if not set(range(lo, hi + 1)) <= mine.get(key, set())
    }
    assert missing == {}
    assert len(mine) > len(kafka)


def test_header_versions_are_kafkas(api_keys: list[dict[str, Any]]) -> None:
    differences = []
    for api in api_keys:
        for i, (req, resp) in enumerate(
            zip(api["requestHeaderVersions"], api["responseHeaderVersions"], strict=True)
        ):
            version = api["oldestVersion"] + i
            mine = (
                request_header_version(api["apiKey"], version),
                response_header_version(api["apiKey"], version),
            )
            if mine != (req, resp):
                differences.append(f"{api['name']} v{version}: kwire {mine}, Kafka {(req, resp)}")
    assert not differences, "\n".join(differences)


@pytest.mark.parametrize(
    ("name", "version"), API_VERSIONS, ids=[f"{n}-v{v}" for n, v in API_VERSIONS]
)
def test_frames_are_kafkas(protocol_oracle: JavaProcess, name: str, version: int) -> None:
    cls = message_class(name)
    spec = message_spec(name)
    request = spec.type == "request"
    cases = generate_cases(name, version)[:4]
    asks = [
        {
            "op": "frame",
            "message": name,
            "version": version,
            "json": sent,
            "correlationId": [0, -1, 2**31 - 1, -(2**31)][i],
            "clientId": CLIENT_IDS[i],
        }
        for i, (_, sent) in enumerate(cases)
    ]
    replies = protocol_oracle.batch(asks)
    for ask, reply in zip(asks, replies, strict=True):
        assert "error" not in reply, reply
        frame = base64.b64decode(reply["bytes"])
        where = f"{name} v{version} correlation id {ask['correlationId']}"
        message = cls.from_json(ask["json"], version)
        if request:
            mine = encode_request_frame(
                message, version, correlation_id=ask["correlationId"], client_id=ask["clientId"]
            )
            parsed: Any = decode_request_frame(frame)
            assert parsed.api_key == spec.api_key and parsed.api_version == version, where
            if reply["headerVersion"] >= 1:
                assert parsed.header.client_id == ask["clientId"], where
        else:
            mine = encode_response_frame(message, version, correlation_id=ask["correlationId"])
            parsed = decode_response_frame(frame, spec.api_key, version)
        assert mine == frame, f"{where}:\n  kwire {mine.hex()}\n  kafka {frame.hex()}"
        assert parsed.correlation_id == ask["correlationId"], where
        got = parsed.message.to_json(version)
        want = restore_records(message.to_json(version), ask["json"], spec.struct, version)
        assert not json_diff("", got, want), where
