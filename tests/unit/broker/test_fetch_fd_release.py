"""A Fetch response's ``FileRecords`` hold duplicated segment file descriptors until the server
has written them. Every way a response can fail to be written gives them back: the handler
raising after some were made (on its first read or on a parked fetch's later one), the encoding
raising, a down-conversion failing as its records are made, the client going away or the broker
stopping while the response is queued. Each test counts the process's open descriptors
(``/proc/self/fd``: the broker runs in a thread of the test's process) around bounded loops.
"""

from __future__ import annotations

import os
import socket
import struct
import time
from pathlib import Path
from typing import Any

import pytest
from test_data_path import batch, make_state, produce
from test_server import Client, fetch_request, produce_request

from kwire.broker import Broker, _fetch, _file_records, _partition_check, _server
from kwire.broker.testing import call
from kwire.errors import KwireError
from kwire.protocol import ClientConnection, ErrorCode, message_class, struct_class

LOOPS = 20
#: Descriptors the broker's own threads may hold for an instant while the test counts (a
#: checkpoint being written); a leak of one per loop is well beyond it.
SLACK = 2

pytestmark = pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc")


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def fetch(partitions: tuple[int, ...], max_wait_ms: int = 0, min_bytes: int = 1) -> Any:
    """A Fetch of topic t's ``partitions`` from offset 0, up to 16 MiB each."""
    cls = message_class("FetchRequest")
    partition = struct_class(cls, "topics", "partitions")
    return cls(
        max_wait_ms=max_wait_ms,
        min_bytes=min_bytes,
        max_bytes=1 << 24,
        topics=[
            struct_class(cls, "topics")(
                topic="t",
                partitions=[
                    partition(partition=i, fetch_offset=0, partition_max_bytes=1 << 24)
                    for i in partitions
                ],
            )
        ],
    )


def two_partition_fetch(max_wait_ms: int = 0, min_bytes: int = 1) -> Any:
    return fetch((0, 1), max_wait_ms, min_bytes)


def failing_on_partition_1(raise_on_call: int) -> tuple[Any, list[int]]:
    """``partition_or_error`` that raises on the ``raise_on_call``-th look-up of partition 1
    of each fetch (counted from 1), after partition 0's records were made."""
    real = _partition_check.partition_or_error
    calls = [0]

    def patched(state: Any, ctx: Any, topic: Any, partition: int, **kwargs: Any) -> Any:
        if partition == 1:
            calls[0] += 1
            if calls[0] % raise_on_call == 0:
                raise RuntimeError("injected: a later partition's read failed")
        return real(state, ctx, topic, partition, **kwargs)

    return patched, calls


def fill(broker: Broker, client: Client) -> None:
    broker.create_topic("t", 2)
    for _ in range(3):
        client.call(produce_request("t", batch([b"x" * 100] * 5)), 9)  # partition 0 only


def test_a_handler_that_raises_after_making_file_records_releases_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    patched, calls = failing_on_partition_1(1)
    with Broker(tmp_path / "data") as broker:
        client = Client(broker.port)
        try:
            fill(broker, client)
            monkeypatch.setattr(_fetch, "partition_or_error", patched)
            response = client.call(two_partition_fetch(), 12)  # warm-up: lazy loads, logging
            assert response.error_code == ErrorCode.UNKNOWN_SERVER_ERROR
            before = open_fds()
            for _ in range(LOOPS):
                response = client.call(two_partition_fetch(), 12)
                assert response.error_code == ErrorCode.UNKNOWN_SERVER_ERROR
            assert open_fds() <= before + SLACK
            assert calls[0] == LOOPS + 1
        finally:
            client.close()


def test_a_parked_fetch_whose_later_read_raises_releases_its_file_records(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # min_bytes beyond what is stored parks the fetch (its first read gives its records back);
    # the read at the deadline makes partition 0's records again, then raises on partition 1
    patched, calls = failing_on_partition_1(2)
    with Broker(tmp_path / "data") as broker:
        client = Client(broker.port)
        try:
            fill(broker, client)
            monkeypatch.setattr(_fetch, "partition_or_error", patched)
            request = two_partition_fetch(max_wait_ms=20, min_bytes=1 << 20)
            assert client.call(request, 12).error_code == ErrorCode.UNKNOWN_SERVER_ERROR
            before = open_fds()
            for _ in range(LOOPS):
                response = client.call(request, 12)
                assert response.error_code == ErrorCode.UNKNOWN_SERVER_ERROR
            assert open_fds() <= before + SLACK
            assert calls[0] == 2 * (LOOPS + 1)  # each fetch read twice: parked, then raised
        finally:
            client.close()


def test_a_response_whose_encoding_raises_releases_its_file_records(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = _server.encode_response_pieces

    def failing(message: Any, version: int, correlation_id: int) -> Any:
        if message.API_KEY == 1:
            raise RuntimeError("injected: the Fetch response did not encode")
        return real(message, version, correlation_id)

    with Broker(tmp_path / "data") as broker:
        writer = Client(broker.port)
        try:
            fill(broker, writer)
        finally:
            writer.close()
        monkeypatch.setattr(_server, "encode_response_pieces", failing)

        def one_fetch() -> None:
            client = Client(broker.port)
            try:
                client.send(fetch_request("t", 0), 12)
                assert client.closed_by_peer()  # an unexpected send failure drops the connection
            finally:
                client.close()

        one_fetch()
        before = open_fds()
        for _ in range(LOOPS):
            one_fetch()
        assert open_fds() <= before + SLACK


def test_a_down_conversion_that_fails_up_front_releases_its_descriptors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Fetch v3 of more than one chunk of v2 batches converts lazily (ConvertedRecords); the
    # first chunk is converted as the records are made, and a failure there is the partition's
    # CORRUPT_MESSAGE: the descriptors it had duplicated go back then.
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise KwireError("injected: the stored batch does not convert")

    state = make_state(tmp_path / "d", "3.9")
    try:
        state.create_topic("t", 1)
        values = [b"x" * 2000 for _ in range(50)]
        for _ in range(4):  # ~400 KB stored: beyond one conversion chunk
            produce(state, "t", batch(values))
        monkeypatch.setattr(_file_records, "convert_for_fetch", broken)

        cls = message_class("FetchRequest")

        def one_fetch() -> None:
            response = call(
                state,
                "Fetch",
                3,
                replica_id=-1,
                max_wait_ms=0,
                min_bytes=1,
                max_bytes=1 << 24,
                topics=[
                    struct_class(cls, "topics")(
                        topic="t",
                        partitions=[
                            struct_class(cls, "topics", "partitions")(
                                partition=0, fetch_offset=0, partition_max_bytes=1 << 24
                            )
                        ],
                    )
                ],
            )
            part = response.responses[0].partitions[0]
            assert part.error_code == ErrorCode.CORRUPT_MESSAGE

        one_fetch()
        before = open_fds()
        for _ in range(LOOPS):
            one_fetch()
        assert open_fds() == before  # no broker thread here: exact
    finally:
        state.close()


def big_topic(broker: Broker) -> None:
    broker.create_topic("t", 1)
    writer = Client(broker.port)
    try:
        for i in range(24):  # 12 MiB stored: more than the socket buffers of both ends hold
            writer.call(produce_request("t", batch([bytes([65 + i]) * (512 * 1024)])), 9)
    finally:
        writer.close()


def queue_a_fetch(port: int) -> socket.socket:
    """A connection whose 12 MiB Fetch response has started and waits, unread, once this
    returns: its size prefix has arrived, the rest cannot fit the buffers."""
    slow = socket.socket()
    slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 32 * 1024)
    slow.settimeout(10)
    slow.connect(("127.0.0.1", port))
    slow.sendall(ClientConnection("slow").send(fetch((0,)), 12))
    head = b""
    while len(head) < 4:
        chunk = slow.recv(4 - len(head))
        assert chunk, "closed by the broker"
        head += chunk
    assert struct.unpack(">i", head)[0] > 8 << 20
    return slow


def wait_until_closed(broker: Broker) -> None:
    deadline = time.monotonic() + 10
    while broker.connections() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not broker.connections()


def test_a_client_gone_while_its_fetch_response_is_queued_releases_it(tmp_path: Path) -> None:
    with Broker(tmp_path / "data") as broker:
        big_topic(broker)

        def one_round() -> None:
            slow = queue_a_fetch(broker.port)
            # a reset, not a close: the broker's send fails part-way
            slow.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            slow.close()
            wait_until_closed(broker)

        one_round()
        before = open_fds()
        for _ in range(5):
            one_round()
        assert open_fds() <= before + SLACK


def test_a_broker_stopped_with_fetch_responses_queued_releases_them(tmp_path: Path) -> None:
    before = open_fds()
    broker = Broker(tmp_path / "data").start()
    slow: list[socket.socket] = []
    try:
        big_topic(broker)
        slow = [queue_a_fetch(broker.port) for _ in range(3)]
    finally:
        broker.stop()
        for sock in slow:
            sock.close()
    # all the broker held is gone: its files, its sockets, the queued responses' records
    assert open_fds() <= before
