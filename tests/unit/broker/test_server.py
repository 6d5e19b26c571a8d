"""The asyncio edge: frames on real loopback sockets, ordering, KIP-511, long polls, sendfile."""

from __future__ import annotations

import logging
import socket
import struct
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from kwire.broker import Broker
from kwire.protocol import ClientConnection, ErrorCode, message_class, struct_class
from kwire.records import Compression, build_batch, read_batches

NOW = 1_700_000_000_000


class Client:
    """A bounded, blocking kwire.protocol client over one socket."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.conn = ClientConnection("server-test")

    def send(self, message: Any, version: int) -> None:
        self.sock.sendall(self.conn.send(message, version))

    def receive(self, timeout: float = 10.0) -> Any:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            response = self.conn.next_response()
            if response is not None:
                return response
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise ConnectionError("closed by the broker")
            self.conn.receive_data(chunk)
        raise TimeoutError

    def call(self, message: Any, version: int) -> Any:
        self.send(message, version)
        return self.receive().message

    def closed_by_peer(self, timeout: float = 5.0) -> bool:
        self.sock.settimeout(timeout)
        try:
            return self.sock.recv(1) == b""
        except ConnectionResetError:
            return True

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def broker(tmp_path: Path) -> Any:
    with Broker(tmp_path / "data") as b:
        yield b


def produce_request(topic: str, records: bytes) -> Any:
    cls = message_class("ProduceRequest")
    return cls(
        acks=-1,
        timeout_ms=1000,
        topic_data=[
            struct_class(cls, "topic_data")(
                name=topic,
                partition_data=[
                    struct_class(cls, "topic_data", "partition_data")(index=0, records=records)
                ],
            )
        ],
    )


def fetch_request(topic: str, offset: int, max_wait_ms: int = 0) -> Any:
    cls = message_class("FetchRequest")
    return cls(
        max_wait_ms=max_wait_ms,
        min_bytes=1,
        max_bytes=1 << 24,
        topics=[
            struct_class(cls, "topics")(
                topic=topic,
                partitions=[
                    struct_class(cls, "topics", "partitions")(
                        partition=0, fetch_offset=offset, partition_max_bytes=1 << 22
                    )
                ],
            )
        ],
    )


def test_unknown_api_versions_version_gets_a_v0_answer(broker: Broker) -> None:
    sock = socket.create_connection(("127.0.0.1", broker.port), timeout=5)
    try:
        # ApiVersions v99: header v1 (key, version, correlation id, client id), empty body
        body = struct.pack(">hhih", 18, 99, 42, 1) + b"x"
        sock.sendall(struct.pack(">i", len(body)) + body)
        size = struct.unpack(">i", sock.recv(4))[0]
        data = b""
        while len(data) < size:
            data += sock.recv(size - len(data))
        assert struct.unpack(">i", data[:4])[0] == 42
        response = message_class("ApiVersionsResponse").decode(data[4:], 0)
        assert response.error_code == ErrorCode.UNSUPPORTED_VERSION
        assert {k.api_key for k in response.api_keys} >= {0, 1, 3, 18}
    finally:
        sock.close()


def test_oversized_frame_and_unserved_version_close_only_that_connection(broker: Broker) -> None:
    bad = Client(broker.port)
    bystander = Client(broker.port)
    try:
        bad.sock.sendall(struct.pack(">i", 200 * 1024 * 1024))
        assert bad.closed_by_peer()
        other = Client(broker.port)
        body = struct.pack(">hhih", 3, 99, 1, 0)  # Metadata v99
        other.sock.sendall(struct.pack(">i", len(body)) + body)
        assert other.closed_by_peer()
        other.close()
        meta = bystander.call(message_class("MetadataRequest")(topics=None), 12)
        assert meta.brokers[0].port == broker.port
    finally:
        bad.close()
        bystander.close()


@pytest.mark.parametrize(
    ("sent", "said"),
    [
        (struct.pack(">i", -5), "invalid request size -5"),
        (b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", "an HTTP request? this port speaks Kafka"),
        (bytes.fromhex("160301020001"), "a TLS handshake? this listener does not use TLS"),
        (struct.pack(">i", 200 * 1024 * 1024), "exceeds socket.request.max.bytes (104857600)"),
    ],
    ids=["negative", "http", "tls", "too-large"],
)
def test_a_refused_frame_size_is_logged_as_what_it_likely_is(
    broker: Broker, sent: bytes, said: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A terminal user who points curl or a TLS client at the port reads why it was closed,
    not only a size of a billion bytes (Kafka's NetworkReceive gives the size alone)."""
    bad = Client(broker.port)
    try:
        with caplog.at_level(logging.WARNING, logger="kwire.broker"):
            bad.sock.sendall(sent)
            assert bad.closed_by_peer()
    finally:
        bad.close()
    lines = [r.getMessage() for r in caplog.records if r.name == "kwire.broker"]
    assert any(said in line for line in lines), lines


def test_pipelined_requests_are_answered_in_order(broker: Broker) -> None:
    broker.create_topic("t", 1)
    client = Client(broker.port)
    try:
        for i in range(20):
            client.send(produce_request("t", build_batch([(None, NOW, None, b"%d" % i)])), 9)
        offsets = [
            client.receive().message.responses[0].partition_responses[0].base_offset
            for _ in range(20)
        ]
        assert offsets == list(range(20))
    finally:
        client.close()


def test_long_poll_is_woken_by_an_append(broker: Broker) -> None:
    broker.create_topic("t", 1)
    waiting = Client(broker.port)
    writer = Client(broker.port)
    try:
        started = time.monotonic()
        waiting.send(fetch_request("t", 0, max_wait_ms=5000), 12)
        timer = threading.Timer(
            0.3,
            lambda: writer.call(produce_request("t", build_batch([(None, NOW, None, b"x")])), 9),
        )
        timer.start()
        response = waiting.receive(timeout=10).message
        elapsed = time.monotonic() - started
        timer.join()
        part = response.responses[0].partitions[0]
        assert [bytes(r.value) for b in read_batches(part.records) for r in b.records()] == [b"x"]
        assert elapsed < 4.0  # woken by the append, not by the 5 s deadline
    finally:
        waiting.close()
        writer.close()


def test_long_poll_is_answered_when_its_topic_is_deleted(broker: Broker) -> None:
    """ReplicaManager completes the delayed fetches of a partition it stops (deleted): the
    consumer learns UNKNOWN_TOPIC_OR_PARTITION at once, not when its max wait (here two
    minutes, longer than the receive below waits) runs out."""
    broker.create_topic("t", 1)
    waiting = Client(broker.port)
    try:
        waiting.send(fetch_request("t", 0, max_wait_ms=120_000), 12)
        timer = threading.Timer(0.3, lambda: broker.delete_topic("t"))
        timer.start()
        response = waiting.receive(timeout=30).message
        timer.join()
        part = response.responses[0].partitions[0]
        assert part.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    finally:
        waiting.close()


def test_fetch_sends_the_segment_bytes(broker: Broker) -> None:
    broker.create_topic("t", 1)
    client = Client(broker.port)
    try:
        sent = [
            build_batch([(None, NOW, b"k%d" % i, b"v" * 3000)], 2, Compression.ZSTD)
            for i in range(30)
        ]
        for records in sent:
            client.call(produce_request("t", records), 9)
        response = client.call(fetch_request("t", 0), 12)
        data = bytes(response.responses[0].partitions[0].records)
        segment = next((Path(broker.data_dir) / "t-0").glob("*.log")).read_bytes()
        assert data == segment[: len(data)]
        assert len(list(read_batches(data))) == 30
    finally:
        client.close()
