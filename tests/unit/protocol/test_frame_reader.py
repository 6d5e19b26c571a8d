"""``FrameReader`` and ``ClientConnection.receive_buffer``: frames read in place, as recv_into does.

The broker reads requests with the same ``FrameReader`` (tests/unit/broker/test_broker_connection.py
drives its read-ahead bound and per-take limit from the broker's side)."""

from __future__ import annotations

import random

import pytest

from kwire import DecodeError
from kwire.errors import FrameSizeError
from kwire.protocol import ClientConnection, FrameReader, encode_response_frame, message_class
from kwire.protocol._frames import MAX_FRAME, OWN_BUFFER_FROM, STAGING_BYTES


def frame(size: int, fill: int) -> bytes:
    return size.to_bytes(4, "big") + bytes([fill % 256]) * size


def written(reader: FrameReader, n: int, limit: int = MAX_FRAME) -> list[bytearray]:
    """``n`` bytes went into the last ``get_buffer()``: the frames they completed."""
    reader.buffer_updated(n)
    out = []
    while (f := reader.next_frame(limit)) is not None:
        out.append(f)
    return out


def read_in_chunks(reader: FrameReader, stream: bytes, rng: random.Random) -> list[bytes]:
    """Feed ``stream`` as a socket would: up to a random count of bytes into each buffer."""
    out: list[bytes] = []
    pos = 0
    for _ in range(len(stream) + 1):  # each step writes at least one byte
        if pos == len(stream):
            break
        buf = reader.get_buffer()
        assert len(buf) > 0
        n = min(len(buf), len(stream) - pos, rng.randint(1, 200_000))
        buf[:n] = stream[pos : pos + n]
        pos += n
        out.extend(bytes(f) for f in written(reader, n))
    assert pos == len(stream)
    return out


@pytest.mark.parametrize("seed", range(20))
def test_frames_of_every_size_come_out_whole_and_in_order(seed: int) -> None:
    rng = random.Random(seed)
    frames = [
        frame(rng.choice([0, 1, 7, 100, 60_000, 65_532, 65_533, 70_000, 300_000]), i)
        for i in range(40)
    ]
    reader = FrameReader(staging_bytes=65_536)
    assert read_in_chunks(reader, b"".join(frames), rng) == frames
    assert reader.buffered == 0


def test_a_large_frame_is_filled_in_its_own_buffer() -> None:
    """The socket writes straight into the returned frame: no copy after the first scratch bytes."""
    reader = FrameReader(staging_bytes=1024)
    big = frame(10_000, 3)
    head = reader.get_buffer()
    head[:100] = big[:100]
    assert written(reader, 100) == []
    body = reader.get_buffer()
    assert len(body) == len(big) - 100  # exactly the rest of this frame
    body[:] = big[100:]
    (done,) = written(reader, len(body))
    assert done == big
    assert isinstance(done, bytearray)
    assert memoryview(done).obj is body.obj  # the buffer the socket wrote into


def test_bad_frame_size_is_a_decode_error() -> None:
    reader = FrameReader()
    buf = reader.get_buffer()
    buf[:4] = (-5).to_bytes(4, "big", signed=True)
    with pytest.raises(DecodeError, match="invalid frame size"):
        written(reader, 4)


def test_client_connection_reads_responses_in_place() -> None:
    client = ClientConnection()
    request = message_class("ApiVersionsRequest")(client_software_name="x")
    client.send(request, 3)
    client.send(request, 3)
    response = message_class("ApiVersionsResponse")
    stream = encode_response_frame(response(error_code=35), 3, correlation_id=0)
    stream += encode_response_frame(response(error_code=0), 3, correlation_id=1)
    rng = random.Random(1)
    pos = 0
    while pos < len(stream):
        buf = client.receive_buffer()
        n = min(len(buf), len(stream) - pos, rng.randint(1, 9))
        buf[:n] = stream[pos : pos + n]
        client.received_into(n)
        pos += n
    first, second = client.next_response(), client.next_response()
    assert first is not None and second is not None and client.next_response() is None
    assert (first.correlation_id, first.message.error_code) == (0, 35)
    assert (second.correlation_id, second.message.error_code) == (1, 0)
    assert client.pending == {}


# --- the one cutter's edges (the client's and the broker's) ------------------------------------


def put(reader: FrameReader, data: bytes) -> None:
    """Write ``data`` into the reader's buffers without taking frames (as a socket would)."""
    view = memoryview(data)
    while view:
        buf = reader.get_buffer()
        n = min(len(buf), len(view))
        buf[:n] = view[:n]
        reader.buffer_updated(n)
        view = view[n:]


@pytest.mark.parametrize("cut", [1, 2, 3])
def test_a_size_prefix_split_across_reads_waits_for_its_rest(cut: int) -> None:
    reader = FrameReader()
    whole = frame(10, 7)
    put(reader, whole[:cut])
    assert reader.next_frame() is None
    assert reader.buffered == cut
    put(reader, whole[cut:])
    assert reader.next_frame() == bytearray(whole)
    assert reader.buffered == 0


@pytest.mark.parametrize("seed", range(5))
def test_size_prefixes_split_at_the_end_of_a_small_staging_buffer(seed: int) -> None:
    """A 16-byte staging buffer: prefixes and bodies straddle its end, and frames larger than it
    get buffers of their own; every frame still comes out whole and in order."""
    rng = random.Random(seed)
    frames = [frame(rng.choice([0, 1, 5, 11, 12, 13, 40]), i) for i in range(60)]
    reader = FrameReader(staging_bytes=16)
    assert read_in_chunks(reader, b"".join(frames), rng) == frames
    assert reader.buffered == 0


def test_a_frame_larger_than_the_staging_buffer_gets_its_own() -> None:
    """Below the own-buffer size, yet larger than the staging buffer: its own buffer, never a
    staging buffer that cannot hold it (which would keep a broker's reading paused)."""
    reader = FrameReader(staging_bytes=1024)
    big = frame(5000, 1)
    put(reader, big[:100])
    assert reader.next_frame() is None
    assert len(reader.get_buffer()) == len(big) - 100
    put(reader, big[100:])
    assert reader.next_frame() == bytearray(big)


@pytest.mark.parametrize("size", [-1, -(2**31)])
def test_a_negative_size_is_refused(size: int) -> None:
    reader = FrameReader()
    put(reader, size.to_bytes(4, "big", signed=True))
    with pytest.raises(FrameSizeError, match="invalid frame size") as err:
        reader.next_frame()
    assert (err.value.size, err.value.limit) == (size, MAX_FRAME)
    assert isinstance(err.value, DecodeError)  # what the client reports as a broken connection


def test_the_size_limit_is_set_per_take() -> None:
    """The broker takes with sasl.server.max.receive.size before authentication and
    socket.request.max.bytes after: the same frame is refused by one take, taken by the next."""
    reader = FrameReader()
    at_limit, over = frame(100, 1), frame(101, 2)
    put(reader, at_limit + over)
    assert reader.next_frame(100) == bytearray(at_limit)  # exactly at the limit: taken
    with pytest.raises(FrameSizeError) as err:
        reader.next_frame(100)
    assert (err.value.size, err.value.limit) == (101, 100)
    assert reader.buffered == len(over)  # refused before anything was taken or allocated
    assert reader.next_frame(101) == bytearray(over)


def test_the_limit_is_checked_before_a_large_frame_is_given_a_buffer() -> None:
    reader = FrameReader()
    put(reader, (OWN_BUFFER_FROM * 4).to_bytes(4, "big") + b"xy")
    with pytest.raises(FrameSizeError):
        reader.next_frame(OWN_BUFFER_FROM)
    assert len(reader.get_buffer()) < STAGING_BYTES  # still the staging buffer, no own buffer
    assert reader.next_frame(OWN_BUFFER_FROM * 4) is None  # a larger limit: its own buffer now
    assert len(reader.get_buffer()) == OWN_BUFFER_FROM * 4 + 4 - 6


def test_fed_bytes_stay_within_the_staging_buffer() -> None:
    """``feed`` takes frames as it copies, so a megabyte of small frames needs no larger buffer."""
    reader = FrameReader()
    frames = [frame(100, i) for i in range(10_000)]
    assert reader.feed(b"".join(frames) + frames[0][:50]) == frames
    assert reader.buffered == 50
    assert len(reader.get_buffer()) <= STAGING_BYTES


def test_an_announced_size_gets_its_buffer_as_the_bytes_arrive() -> None:
    """A size prefix alone does not make the reader allocate (and zero) what it announces: a
    client that sends 100 MB prefixes and a few bytes would make a broker allocate 100 MB per
    connection, on its event loop. The buffer grows with what arrives; the frame is whole."""
    size = 16 << 20
    data = size.to_bytes(4, "big") + bytes(range(256)) * (size // 256)
    reader = FrameReader()
    put(reader, data[:100])
    assert reader.next_frame() is None
    assert len(reader.get_buffer()) <= 2 << 20  # not 16 MiB
    assert reader.wants_data
    got = read_in_chunks(reader, data[100:], random.Random(1))
    assert got == [data]
    assert reader.buffered == 0
