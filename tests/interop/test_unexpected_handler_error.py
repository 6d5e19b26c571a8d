"""A handler that fails unexpectedly: the client gets the request's error response with
UNKNOWN_SERVER_ERROR and the connection stays open, as Kafka's ``KafkaApis.handle`` does
(``case e: Throwable => requestHelper.handleError``: ``getErrorResponse(Errors.forException(e))``,
and only a request without a response, a Produce with acks=0, closes the connection)."""

from __future__ import annotations

import socket
import struct
from typing import Any

import confluent_kafka as ck
import pytest
from confluent_kafka.admin import AdminClient, ConfigResource
from interop_helpers import ck_conf

from kwire.broker import _apis
from kwire.protocol import ErrorCode, decode_response_frame, encode_request_frame
from kwire.protocol.messages import ApiVersionsRequest, DescribeClusterRequest

pytestmark = pytest.mark.interop

DESCRIBE_CLUSTER = 60
DESCRIBE_CONFIGS = 32


def _fail(*_: Any) -> Any:
    raise RuntimeError("a bug in a handler")


def _exchange(sock: socket.socket, frame: bytes, api_key: int, version: int) -> Any:
    sock.sendall(frame)
    size = struct.unpack(">i", _read(sock, 4))[0]
    body = _read(sock, size)
    return decode_response_frame(struct.pack(">i", size) + body, api_key, version).message


def _read(sock: socket.socket, n: int) -> bytes:
    out = b""
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        assert chunk, "the broker closed the connection"
        out += chunk
    return out


def test_a_failing_handler_answers_unknown_server_error_and_keeps_the_connection(
    start_broker: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    broker = start_broker()
    monkeypatch.setitem(_apis._LOADED, DESCRIBE_CLUSTER, _fail)
    with socket.create_connection(("127.0.0.1", broker.port), timeout=10) as sock:
        frame = encode_request_frame(DescribeClusterRequest(), 0, correlation_id=1, client_id="t")
        answer = _exchange(sock, frame, DESCRIBE_CLUSTER, 0)
        assert answer.error_code == ErrorCode.UNKNOWN_SERVER_ERROR
        frame = encode_request_frame(ApiVersionsRequest(), 0, correlation_id=2, client_id="t")
        assert _exchange(sock, frame, 18, 0).error_code == 0  # the same connection still serves

    monkeypatch.setitem(_apis._LOADED, DESCRIBE_CONFIGS, _fail)
    admin = AdminClient(ck_conf(broker.bootstrap))
    resource = ConfigResource(ConfigResource.Type.BROKER, "1")
    with pytest.raises(ck.KafkaException) as failed:
        admin.describe_configs([resource], request_timeout=10)[resource].result(timeout=20)
    assert failed.value.args[0].code() == ck.KafkaError.UNKNOWN
    assert admin.list_topics(timeout=10).brokers  # the client goes on with the broker
