"""The broker's sans-IO side of a connection (``kwire.protocol.FrameReader``, the client's frame
cutter too): bytes in, request frames out, driven here with bytes only; and where a Produce's compressed records are
validated (on the loop within a budget, else on the worker pool)."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import pytest
from test_data_path import batch
from test_server import Client, produce_request

from kwire.broker import Broker
from kwire.broker._server import INLINE_VALIDATION_BYTES
from kwire.errors import FrameSizeError
from kwire.protocol import FrameReader
from kwire.protocol._frames import OWN_BUFFER_FROM, STAGING_BYTES
from kwire.records import Compression

LIMIT = 100 * 1024 * 1024


def frame(body: bytes) -> bytes:
    return struct.pack(">i", len(body)) + body


def feed(conn: FrameReader, data: bytes) -> None:
    """Put ``data`` into the connection as a socket's ``recv_into`` would, buffer by buffer."""
    view = memoryview(data)
    while view:
        buf = conn.get_buffer()
        assert len(buf) > 0
        n = min(len(buf), len(view))
        buf[:n] = view[:n]
        conn.buffer_updated(n)
        view = view[n:]


def take_all(conn: FrameReader) -> list[bytes]:
    out = []
    while (f := conn.next_frame(LIMIT)) is not None:
        out.append(bytes(f))
    return out


def test_frames_split_at_every_byte_boundary_come_out_whole() -> None:
    frames = [frame(os.urandom(n)) for n in (0, 1, 7, 300, 5000)]
    stream = b"".join(frames)
    for cut in range(len(stream) + 1):
        conn = FrameReader()
        feed(conn, stream[:cut])
        got = take_all(conn)
        feed(conn, stream[cut:])
        got += take_all(conn)
        assert got == frames
        assert conn.buffered == 0


def test_many_small_frames_in_one_read_and_a_partial_one_kept() -> None:
    frames = [frame(bytes([i]) * 20) for i in range(50)]
    conn = FrameReader()
    feed(conn, b"".join(frames) + frames[0][:10])
    assert take_all(conn) == frames
    assert conn.buffered == 10  # the next request's first bytes stay until the rest arrives


def test_a_large_frame_is_received_into_its_own_buffer() -> None:
    body = os.urandom(3 * STAGING_BYTES)
    data = frame(body)
    conn = FrameReader()
    feed(conn, data[:1000])
    assert conn.next_frame(LIMIT) is None  # sized, checked, given a buffer of its own
    rest = conn.get_buffer()
    assert len(rest) == len(data) - 1000  # the socket fills the frame in place, no staging
    feed(conn, data[1000:])
    got = conn.next_frame(LIMIT)
    assert got is not None and bytes(got) == data
    assert len(data) > OWN_BUFFER_FROM


@pytest.mark.parametrize("size", [-1, LIMIT + 1])
def test_a_size_beyond_the_limit_is_refused_before_anything_is_allocated(size: int) -> None:
    conn = FrameReader()
    feed(conn, struct.pack(">i", size) + b"xy")
    with pytest.raises(FrameSizeError) as err:
        conn.next_frame(LIMIT)
    assert err.value.size == size
    assert len(conn.get_buffer()) < STAGING_BYTES  # no buffer of the claimed size


def test_read_ahead_is_bounded_while_no_frame_is_taken() -> None:
    conn = FrameReader()
    small = frame(b"x" * 100)
    while conn.wants_data:
        buf = conn.get_buffer()
        n = min(len(buf), len(small))
        buf[:n] = small[:n]
        conn.buffer_updated(n)
    assert conn.buffered == STAGING_BYTES  # the server pauses reading here
    # asked again anyway (asyncio resumes reading after a sendfile): one more buffer, then full
    more = conn.get_buffer()
    assert len(more) > 0
    assert take_all(conn)  # frames taken, room again
    assert conn.wants_data


def _gzip_batch_of(total_bytes: int) -> bytes:
    values = [os.urandom(1000) for _ in range(total_bytes // 1000)]
    return batch(values, compression=Compression.GZIP)


def test_small_compressed_records_are_validated_without_the_worker_pool(tmp_path: Path) -> None:
    with Broker(tmp_path / "data") as broker:
        broker.create_topic("t", 1)
        client = Client(broker.port)
        try:
            small = _gzip_batch_of(16 * 1024)
            response = client.call(produce_request("t", small), 9)
            assert response.responses[0].partition_responses[0].error_code == 0
            server = broker._server
            assert server is not None and server._workers is None  # no thread hand-off
            # records beyond the loop's budget still go to the pool, and append the same way
            big = _gzip_batch_of(2 * INLINE_VALIDATION_BYTES)
            response = client.call(produce_request("t", big), 9)
            part = response.responses[0].partition_responses[0]
            assert (part.error_code, part.base_offset) == (0, 16)
            assert server._workers is not None
            assert broker.end_offsets("t") == [16 + 2 * INLINE_VALIDATION_BYTES // 1000]
        finally:
            client.close()


def test_reading_goes_on_after_a_large_frame_arrives_whole() -> None:
    """A large frame filled in its own buffer does not stop reading: the bytes after it go to the
    staging buffer (a pause and a resume of the socket per large request cost two system calls),
    and frames still come out in order; read-ahead stays bounded by the staging buffer."""
    large = frame(os.urandom(2 * OWN_BUFFER_FROM))
    conn = FrameReader()
    feed(conn, large[:100])
    assert conn.next_frame(LIMIT) is None  # its own buffer from here
    feed(conn, large[100:])
    assert conn.wants_data  # the whole frame waits, yet reading goes on
    assert conn.buffered == len(large)
    small = [frame(bytes([i]) * 30) for i in range(3)]
    feed(conn, b"".join(small))
    assert conn.buffered == len(large) + sum(map(len, small))
    assert take_all(conn) == [large, *small]
    # bounded: with a whole large frame untaken, the staging buffer fills and reading pauses
    feed(conn, large[:100])
    assert conn.next_frame(LIMIT) is None
    feed(conn, large[100:])
    filler = frame(b"y" * 100)
    while conn.wants_data:
        buf = conn.get_buffer()
        n = min(len(buf), len(filler))
        buf[:n] = filler[:n]
        conn.buffer_updated(n)
    assert conn.buffered == len(large) + STAGING_BYTES
