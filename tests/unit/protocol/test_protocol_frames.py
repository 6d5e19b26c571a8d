"""Headers chosen per API and version as Kafka does, frames, and the sans-IO connections."""

from __future__ import annotations

import pytest

from kwire import DecodeError
from kwire.protocol import (
    ClientConnection,
    FrameReader,
    ServerConnection,
    decode_request_frame,
    decode_response_frame,
    encode_request_frame,
    encode_response_frame,
    message_class,
    request_header_version,
    response_header_version,
)
from kwire.protocol._testing import nested


@pytest.mark.parametrize(
    ("api_key", "version", "request_hv", "response_hv"),
    [
        (3, 8, 1, 0),  # Metadata, before flexible versions
        (3, 9, 2, 1),  # first flexible Metadata
        (18, 2, 1, 0),
        (18, 3, 2, 0),  # ApiVersions responses always use header v0 (KIP-511)
        (7, 0, 0, 0),  # ControlledShutdown v0 has a header without client id
        (7, 1, 1, 0),
        (7, 3, 2, 1),
        (0, 9, 2, 1),  # Produce
    ],
)
def test_header_versions_follow_kafka(
    api_key: int, version: int, request_hv: int, response_hv: int
) -> None:
    assert request_header_version(api_key, version) == request_hv
    assert response_header_version(api_key, version) == response_hv


def test_request_frame_bytes() -> None:
    req = message_class("ApiVersionsRequest")(client_software_name="k", client_software_version="1")
    frame = encode_request_frame(req, 3, correlation_id=7, client_id="c")
    header = (
        b"\x00\x12\x00\x03" + b"\x00\x00\x00\x07" + b"\x00\x01c" + b"\x00"
    )  # v2: non-compact client id
    body = b"\x02k\x021\x00"
    assert frame == (len(header) + len(body)).to_bytes(4, "big") + header + body
    parsed = decode_request_frame(frame)
    assert parsed.message == req and parsed.correlation_id == 7 and parsed.header.client_id == "c"


def test_controlled_shutdown_v0_header_has_no_client_id() -> None:
    req = message_class("ControlledShutdownRequest")(broker_id=1)
    frame = encode_request_frame(req, 0, correlation_id=1, client_id="ignored")
    assert frame == b"\x00\x00\x00\x0c" + b"\x00\x07\x00\x00\x00\x00\x00\x01" + b"\x00\x00\x00\x01"
    assert decode_request_frame(frame).header.client_id == ""  # the default, as in Kafka


def test_response_frames_and_header_v1_tags() -> None:
    resp_cls = message_class("MetadataResponse")
    resp = resp_cls(throttle_time_ms=1)
    frame = encode_response_frame(resp, 12, correlation_id=99)
    assert frame[4:8] == (99).to_bytes(4, "big") and frame[8] == 0  # header v1: empty tag section
    back = decode_response_frame(frame, 3, 12)
    assert back.message == resp and back.correlation_id == 99
    old = encode_response_frame(resp, 8, correlation_id=99)
    assert len(old) == len(resp.encode(8)) + 8  # header v0 is just the correlation id


def test_bad_frames() -> None:
    with pytest.raises(DecodeError, match="size"):
        decode_request_frame(b"\x00\x00\x00\x09\x00")
    with pytest.raises(DecodeError, match="unknown API key"):
        decode_request_frame(b"\x00\x00\x00\x04\x7f\x00\x00\x00")
    with pytest.raises(DecodeError, match="invalid frame size"):
        FrameReader().feed(b"\xff\xff\xff\xff")


def test_connections_match_responses_by_correlation_id() -> None:
    client = ClientConnection("me")
    server = ServerConnection()
    meta_req = message_class("MetadataRequest")
    meta_resp = message_class("MetadataResponse")
    api_req = message_class("ApiVersionsRequest")
    api_resp = message_class("ApiVersionsResponse")
    stream = client.send(meta_req(topics=None), 12) + client.send(api_req(), 3)
    assert sorted(client.pending) == [0, 1]
    server.receive_data(stream[:10])
    assert server.next_request() is None
    server.receive_data(stream[10:])
    first, second = server.next_request(), server.next_request()
    assert first is not None and second is not None
    assert (first.api_key, first.api_version, second.api_key) == (3, 12, 18)
    broker = nested(meta_resp, "brokers")
    answers = server.respond(second, api_resp(error_code=35)) + server.respond(
        first, meta_resp(brokers=[broker(node_id=1, host="h", port=1)])
    )
    client.receive_data(answers)
    r1, r2 = client.next_response(), client.next_response()
    assert r1 is not None and r2 is not None and client.next_response() is None
    assert r1.correlation_id == 1 and r1.message.error_code == 35 and r1.request == api_req()
    assert r2.correlation_id == 0 and r2.message.brokers[0].host == "h"
    assert client.pending == {}


def test_unknown_correlation_id() -> None:
    client = ClientConnection()
    frame = encode_response_frame(message_class("ApiVersionsResponse")(), 3, correlation_id=5)
    client.receive_data(frame)
    with pytest.raises(DecodeError, match="unknown correlation id 5"):
        client.next_response()


def test_client_reads_an_apiversions_refusal_in_v0() -> None:
    """A broker older than the asked ApiVersions version answers in v0 with UNSUPPORTED_VERSION
    (Kafka's brokers since 0.10.0); the client reads that answer as v0, as Kafka's
    ApiVersionsResponse.parse does, instead of failing on it."""
    from kwire.protocol import ClientConnection, ErrorCode, message_class
    from kwire.protocol._frames import encode_response_frame

    request = message_class("ApiVersionsRequest")(client_software_name="kwire")
    client = ClientConnection("c")
    cid = client.next_correlation_id
    client.send(request, 4)
    answer = message_class("ApiVersionsResponse")(
        error_code=ErrorCode.UNSUPPORTED_VERSION,
        api_keys=[
            message_class("ApiVersionsResponse").ApiVersion(
                api_key=18, min_version=0, max_version=3
            )
        ],
    )
    client.receive_data(encode_response_frame(answer, 0, correlation_id=cid))
    response = client.next_response()
    assert response is not None
    assert response.message.error_code == ErrorCode.UNSUPPORTED_VERSION
    assert [(k.api_key, k.max_version) for k in response.message.api_keys] == [(18, 3)]
