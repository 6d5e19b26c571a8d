"""Slow, idle and expensive clients (issue 21, items 4-6): what the broker holds for a connection
that does not read, when it closes one that says nothing, and that one connection's CPU work does
not stop the others. Mechanisms only (what is buffered, what is read, what is answered), no
timings: the numbers are in bench/bench_slow_clients.py and docs/benchmarks.md.
"""

from __future__ import annotations

import contextlib
import gc
import socket
import struct
import threading
import time
import weakref
from pathlib import Path
from typing import Any

import pytest
from test_data_path import batch, make_state, produce
from test_server import Client, fetch_request, produce_request

from kwire.broker import Broker, BrokerState, RequestContext
from kwire.broker._apis import handler
from kwire.broker._fetch import ConvertedRecords, FileRecords
from kwire.broker._server import encode_response_pieces
from kwire.protocol import (
    ClientConnection,
    ErrorCode,
    decode_response_frame,
    message_class,
    struct_class,
)
from kwire.records import DEFAULT_MAX_DECOMPRESSED_SIZE, Compression, build_batch, read_batches

NOW = 1_700_000_000_000


def raw_fetch(state: BrokerState, version: int, max_bytes: int = 1 << 24) -> Any:
    """The handler's own Fetch response (records as the server will send them, not decoded)."""
    cls = message_class("FetchRequest")
    request = cls(
        replica_id=-1,
        max_wait_ms=0,
        min_bytes=1,
        max_bytes=max_bytes,
        isolation_level=0,
        session_id=0,
        session_epoch=-1,
        topics=[
            struct_class(cls, "topics")(
                topic="t",
                partitions=[
                    struct_class(cls, "topics", "partitions")(
                        partition=0, fetch_offset=0, partition_max_bytes=max_bytes
                    )
                ],
            )
        ],
    )
    return handler(1)(state, RequestContext(1, version, 7, "test"), request)


def sent_records(response: Any, version: int) -> bytes:
    """The partition's record bytes as a client receives them."""
    size, pieces = encode_response_pieces(response, version, 7)
    frame = b"".join(p.to_bytes() if isinstance(p, FileRecords) else p for p in pieces)
    for p in pieces:
        if isinstance(p, FileRecords):
            p.close()
    assert len(frame) == size + 4
    decoded = decode_response_frame(frame, 1, version).message
    return bytes(decoded.responses[0].partitions[0].records)


# --- item 4: zero copy below v10, lazy down-conversion -----------------------------------------


@pytest.mark.parametrize("version", [4, 5, 6, 7, 8, 9])
@pytest.mark.parametrize("codec", [Compression.NONE, Compression.GZIP, Compression.LZ4])
def test_fetch_v4_to_v9_of_v2_batches_is_sent_from_the_segment(
    tmp_path: Path, version: int, codec: Compression
) -> None:
    # Kafka serves stored v2 batches to any Fetch v4+ straight from the file (FileRecords,
    # KafkaApis: no down-conversion when hasMatchingMagic); building them in memory is what let
    # slow readers grow the broker without bound.
    state = make_state(tmp_path / "d")
    try:
        state.create_topic("t", 1)
        for i in range(3):
            produce(state, "t", batch([b"v%d" % i] * 4, compression=codec))
        response = raw_fetch(state, version)
        records = response.responses[0].partitions[0].records
        assert isinstance(records, FileRecords)
        assert not isinstance(records, ConvertedRecords)
        segment = next((tmp_path / "d" / "t-0").glob("*.log")).read_bytes()
        assert sent_records(response, version) == segment
    finally:
        state.close()


def test_zstd_below_v10_is_still_refused(tmp_path: Path) -> None:
    state = make_state(tmp_path / "d")
    try:
        state.create_topic("t", 1)
        produce(state, "t", batch([b"x"], compression=Compression.ZSTD))
        part = raw_fetch(state, 9).responses[0].partitions[0]
        assert part.error_code == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
    finally:
        state.close()


def test_a_large_down_conversion_is_sent_in_bounded_chunks(tmp_path: Path) -> None:
    # Fetch v3 reads magic 1: Kafka's LazyDownConversionRecords converts while sending, the
    # frame sized by the stored bytes or the first converted chunk, whichever is larger.
    state = make_state(tmp_path / "d", "3.9")
    try:
        state.create_topic("t", 1)
        values = [b"%06d" % i + b"x" * 2000 for i in range(1500)]  # ~3 MB in 50-record batches
        for start in range(0, len(values), 50):
            produce(state, "t", batch(values[start : start + 50]))
        response = raw_fetch(state, 3)
        records = response.responses[0].partitions[0].records
        assert isinstance(records, ConvertedRecords)
        chunks = list(records.chunks())
        assert sum(map(len, chunks)) == records.nbytes
        assert max(map(len, chunks)) <= 2 * (1 << 18)  # one chunk converted at a time
        records.close()
        response = raw_fetch(state, 3)
        got = sent_records(response, 3)
        batches = list(read_batches(got, allow_truncated_tail=True))
        assert {b.magic for b in batches} == {1}
        got_values = [bytes(r.value) for b in batches for r in b.records()]
        # magic 1 is larger than v2 here: the frame holds the stored size, the batch cut at its
        # end is dropped by the client, which fetches again from the next offset
        assert 0 < len(got_values) < len(values)
        assert got_values == values[: len(got_values)]
    finally:
        state.close()


# --- item 4: a client that does not read --------------------------------------------------------


def test_a_client_that_stops_reading_holds_a_bounded_buffer_and_is_not_read(
    tmp_path: Path,
) -> None:
    with Broker(tmp_path / "data") as broker:
        broker.create_topic("t", 1)
        writer = Client(broker.port)
        try:
            for i in range(24):  # 12 MiB stored
                value = bytes([65 + i % 26]) * (512 * 1024)
                writer.call(produce_request("t", batch([value])), 9)
        finally:
            writer.close()
        slow = socket.socket()
        slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 32 * 1024)
        slow.connect(("127.0.0.1", broker.port))
        try:
            conn = ClientConnection("slow")
            slow.sendall(conn.send(fetch_request("t", 0), 9))  # 12 MiB answer, never read
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                stats = [c for c in broker.connections() if c["requests"]]
                if stats and stats[0]["output"] > 0:
                    break
                time.sleep(0.05)
            # pipelined requests behind the unsent response: the broker does not read them
            slow.setblocking(False)
            api_versions = message_class("ApiVersionsRequest")()
            frames = b"".join(conn.send(api_versions, 0) for _ in range(200))
            with contextlib.suppress(BlockingIOError):
                slow.send(frames)
            time.sleep(0.5)
            (stats,) = [c for c in broker.connections() if c["requests"]]
            assert stats["requests"] == 1
            assert stats["output"] <= 1 << 20  # not the 12 MiB response
            assert stats["input"] <= 1 << 17
        finally:
            slow.close()


# --- item 5: connections.max.idle.ms ------------------------------------------------------------


def closed_within(sock: socket.socket, seconds: float) -> bool:
    """True when the broker closes ``sock`` within ``seconds`` (nothing is read from it)."""
    sock.settimeout(seconds)
    try:
        while sock.recv(1 << 16):
            pass
        return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except TimeoutError:
        return False


def test_idle_half_sent_and_non_reading_connections_are_closed(tmp_path: Path) -> None:
    # Kafka's Selector closes a connection that moves no byte for connections.max.idle.ms:
    # silent, stuck mid-request, or not reading its response; a client that talks stays.
    config = {"connections.max.idle.ms": "300"}
    with Broker(tmp_path / "data", config=config) as broker:
        broker.create_topic("t", 1)
        writer = Client(broker.port)
        for i in range(16):  # 8 MiB to fetch
            writer.call(produce_request("t", batch([bytes([65 + i]) * (512 * 1024)])), 9)
        silent = socket.create_connection(("127.0.0.1", broker.port), timeout=5)
        half = socket.create_connection(("127.0.0.1", broker.port), timeout=5)
        half.sendall(struct.pack(">i", 100) + b"\x00\x12")  # 2 of 100 bytes, then nothing
        slow = socket.socket()
        slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 32 * 1024)
        slow.connect(("127.0.0.1", broker.port))
        slow.sendall(ClientConnection("slow").send(fetch_request("t", 0), 9))
        try:
            for _ in range(10):  # the talking client, 1.5 s in all, idle at most 150 ms
                assert writer.call(message_class("ApiVersionsRequest")(), 0).error_code == 0
                time.sleep(0.15)
            assert closed_within(silent, 5)
            assert closed_within(half, 5)
            assert closed_within(slow, 5)
            assert writer.call(message_class("ApiVersionsRequest")(), 0).error_code == 0
            (only,) = broker.connections()
            assert only["requests"] == 27
        finally:
            for s in (silent, half, slow):
                s.close()
            writer.close()


def test_a_closed_connection_frees_its_half_received_request_at_once(tmp_path: Path) -> None:
    """A client that announces a large request, sends a little and closes: the buffer made for
    that request goes with the connection, not at some later cyclic garbage collection (30
    such connections of 100 MB each left a broker at 3 GB resident after they had closed)."""
    with Broker(tmp_path / "data") as broker:
        server = broker._server
        assert server is not None
        half = socket.create_connection(("127.0.0.1", broker.port), timeout=5)
        half.sendall(struct.pack(">i", 16 << 20) + b"\x00\x12" + b"x" * 70_000)
        channels: list[Any] = []
        for _ in range(100):  # at most 5 s
            opened = broker.call(lambda _state: [c.channel for c in server._open.values()])
            if opened and opened[0].wire.buffered >= 70_000:
                channels = opened
                break
            time.sleep(0.05)
        (channel,) = channels
        gone = weakref.ref(channel)
        del channel, channels, opened
        gc.disable()  # only reference counting may free it now
        try:
            half.close()
            for _ in range(100):  # at most 5 s
                if gone() is None:
                    break
                time.sleep(0.05)
            assert gone() is None, gc.get_referrers(gone())
        finally:
            gc.enable()


def test_idle_connections_stay_open_under_the_default(tmp_path: Path) -> None:
    with Broker(tmp_path / "data") as broker:
        silent = socket.create_connection(("127.0.0.1", broker.port), timeout=5)
        try:
            assert not closed_within(silent, 0.5)  # 10 minutes by default
            default = broker.call(lambda state: state.broker_config("connections.max.idle.ms"))
            assert default == "600000"
        finally:
            silent.close()


# --- item 6: costly validation off the event loop -----------------------------------------------


def bomb(megabytes: int) -> bytes:
    """A gzip batch of ``megabytes`` 1 MiB zero values: ~1 KB on the wire per MiB inside."""
    zeros = bytes(1 << 20)
    return build_batch([(None, NOW, None, zeros)] * megabytes, 2, Compression.GZIP)


def test_other_connections_are_served_while_a_bomb_is_validated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Kafka validates on its request handler threads: a batch that takes long to decompress
    # holds one of them, not the network threads. Here the bomb's validation is held until the
    # other connection has been answered, which happens only if it runs off the event loop.
    from kwire.log import _live

    started, answered = threading.Event(), threading.Event()
    held: list[bool] = []
    real = _live.validate_and_assign

    def held_validation(records: Any, **kwargs: Any) -> Any:
        # the loop's own attempt stops at its small budget (INLINE_VALIDATION_BYTES); the
        # whole validation is the one held
        whole = kwargs.get("max_decompressed_size", DEFAULT_MAX_DECOMPRESSED_SIZE)
        big = len(memoryview(records)) > 10_000
        if big and whole == DEFAULT_MAX_DECOMPRESSED_SIZE and not started.is_set():
            started.set()
            held.append(answered.wait(10))
        return real(records, **kwargs)

    monkeypatch.setattr(_live, "validate_and_assign", held_validation)
    with Broker(tmp_path / "data") as broker:
        broker.create_topic("t", 1)
        attacker, other = Client(broker.port), Client(broker.port)
        try:
            other.call(message_class("ApiVersionsRequest")(), 0)
            attacker.send(produce_request("t", bomb(16)), 9)
            assert started.wait(10)  # the bomb's validation has started (and waits)
            reply = other.call(message_class("ApiVersionsRequest")(), 0)
            assert reply.error_code == 0
            answered.set()
            part = attacker.receive().message.responses[0].partition_responses[0]
            assert (part.error_code, part.base_offset) == (0, 0)
            assert held == [True]  # the validation waited for the other answer, and got it
            assert broker.end_offsets("t") == [16]
        finally:
            answered.set()
            attacker.close()
            other.close()


def test_a_bomb_beyond_the_decompression_bound_is_refused(tmp_path: Path) -> None:
    # decompression stops at 64 MiB (kwire's bound, DEFAULT_MAX_DECOMPRESSED_SIZE): the batch
    # is refused as corrupt, never decompressed whole, and the connection stays usable
    with Broker(tmp_path / "data") as broker:
        broker.create_topic("t", 1)
        client = Client(broker.port)
        try:
            response = client.call(produce_request("t", bomb(80)), 9)
            part = response.responses[0].partition_responses[0]
            assert part.error_code == ErrorCode.CORRUPT_MESSAGE
            ok = client.call(produce_request("t", batch([b"x"], compression=Compression.GZIP)), 9)
            assert ok.responses[0].partition_responses[0].base_offset == 0
        finally:
            client.close()


def test_validation_done_ahead_moves_to_the_log_end(tmp_path: Path) -> None:
    # Records validated off the loop at log end 0 while another append lands first: v2 keeps
    # the base offset outside the CRC, so the validated batch is appended at offset 1, intact.
    from kwire.broker._data import validation_jobs

    state = make_state(tmp_path / "d")
    try:
        state.create_topic("t", 1)
        request = produce_request("t", batch([b"a", b"b"], compression=Compression.GZIP))
        ctx = RequestContext(0, 9, 1, "test")
        jobs = validation_jobs(state, ctx, request)
        assert [key for key, _ in jobs] == [(0, 0)]
        ahead = {key: job() for key, job in jobs}
        produce(state, "t", batch([b"first"]))
        ctx.validated = ahead
        response = handler(0)(state, ctx, request)
        part = response.responses[0].partition_responses[0]
        assert (part.error_code, part.base_offset) == (0, 1)
        records = sent_records(raw_fetch(state, 12), 12)
        batches = list(read_batches(records))  # CRCs verified
        assert [(b.base_offset, b.last_offset) for b in batches] == [(0, 0), (1, 2)]
        assert [bytes(r.value) for b in batches for r in b.records()] == [b"first", b"a", b"b"]
    finally:
        state.close()
