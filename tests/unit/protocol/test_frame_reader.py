"""``FrameReader`` and ``ClientConnection.receive_buffer``: frames read in place, as recv_into does."""

from __future__ import annotations

import random

import pytest

from kwire import DecodeError
from kwire.protocol import ClientConnection, FrameReader, encode_response_frame, message_class


def frame(size: int, fill: int) -> bytes:
    return size.to_bytes(4, "big") + bytes([fill % 256]) * size


def read_in_chunks(reader: FrameReader, stream: bytes, rng: random.Random) -> list[bytes]:
    """Feed ``stream`` as a socket would: up to a random count of bytes into each buffer."""
    out: list[bytes] = []
    pos = 0
    for _ in range(len(stream) + 1):  # each step writes at least one byte
        if pos == len(stream):
            break
        buf = reader.buffer()
        assert len(buf) > 0
        n = min(len(buf), len(stream) - pos, rng.randint(1, 200_000))
        buf[:n] = stream[pos : pos + n]
        pos += n
        out.extend(bytes(f) for f in reader.written(n))
    assert pos == len(stream)
    return out


@pytest.mark.parametrize("seed", range(20))
def test_frames_of_every_size_come_out_whole_and_in_order(seed: int) -> None:
    rng = random.Random(seed)
    frames = [
        frame(rng.choice([0, 1, 7, 100, 60_000, 65_532, 65_533, 70_000, 300_000]), i)
        for i in range(40)
    ]
    reader = FrameReader(scratch=65_536)
    assert read_in_chunks(reader, b"".join(frames), rng) == frames
    assert reader.buffered == 0


def test_a_large_frame_is_filled_in_its_own_buffer() -> None:
    """The socket writes straight into the returned frame: no copy after the first scratch bytes."""
    reader = FrameReader(scratch=1024)
    big = frame(10_000, 3)
    head = reader.buffer()
    head[:100] = big[:100]
    assert reader.written(100) == []
    body = reader.buffer()
    assert len(body) == len(big) - 100  # exactly the rest of this frame
    body[:] = big[100:]
    (done,) = reader.written(len(body))
    assert done == big
    assert isinstance(done, bytearray)
    assert memoryview(done).obj is body.obj  # the buffer the socket wrote into


def test_bad_frame_size_is_a_decode_error() -> None:
    reader = FrameReader()
    buf = reader.buffer()
    buf[:4] = (-5).to_bytes(4, "big", signed=True)
    with pytest.raises(DecodeError, match="invalid frame size"):
        reader.written(4)


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
