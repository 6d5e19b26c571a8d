"""Request/response headers, size-prefixed frames, and sans-IO connections (bytes in, events out).

A Kafka frame is an int32 size followed by a header and a message body. The header version follows
Kafka's ``ApiMessageType``: requests use header v2 in flexible versions and v1 otherwise (v0 only for
ControlledShutdown v0, which has no client id); responses use header v1 in flexible versions and v0
otherwise, except ApiVersions responses, which always use v0 (KIP-511) so old clients can read them.

``ClientConnection`` and ``ServerConnection`` hold no sockets: feed them received bytes with
``receive_data`` and take the bytes to send from ``send``/``respond`` (in the style of h11).
Responses are matched to requests by correlation id. A client may instead let the socket write
straight into the frames (``receive_buffer`` / ``received_into``, for ``recv_into`` or asyncio's
``BufferedProtocol``): ``FrameReader`` gives each large frame a buffer of its own size, so a
fetched megabyte is copied once, from the kernel, and its records are views of that buffer.
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from kwire.errors import DecodeError
from kwire.protocol._registry import message_class
from kwire.protocol._runtime import KafkaMessage

__all__ = [
    "ClientConnection",
    "FrameBuffer",
    "FrameReader",
    "Request",
    "Response",
    "ServerConnection",
    "decode_request_frame",
    "decode_response_frame",
    "encode_request_frame",
    "encode_response_frame",
    "request_header_version",
    "response_header_version",
]

_SIZE = struct.Struct(">i")
_KEY_VERSION = struct.Struct(">hh")
API_VERSIONS_KEY = 18
CONTROLLED_SHUTDOWN_KEY = 7
#: Frames larger than this are refused before buffering them (Kafka's socket.request.max.bytes is
#: 100 MiB by default; fetch responses can be larger, so this is generous).
MAX_FRAME = 1 << 30


# Cached: every request and response asks, and the lookup by API key plus the version range test
# cost a few microseconds each time (the bundled specs never change in a process).
@functools.lru_cache(maxsize=2048)
def request_header_version(api_key: int, api_version: int) -> int:
    """The request header version Kafka uses for this API and version."""
    if api_key == CONTROLLED_SHUTDOWN_KEY and api_version == 0:
        return 0
    info = message_class(api_key=api_key, kind="request").__kafka_message__
    return 2 if api_version in info.flexible else 1


@functools.lru_cache(maxsize=2048)
def response_header_version(api_key: int, api_version: int) -> int:
    """The response header version Kafka uses for this API and version."""
    if api_key == API_VERSIONS_KEY:
        return 0
    info = message_class(api_key=api_key, kind="response").__kafka_message__
    return 1 if api_version in info.flexible else 0


@dataclass
class Request:
    """A decoded request: its header (a ``RequestHeader``) and message."""

    header: Any
    message: Any

    @property
    def correlation_id(self) -> int:
        return int(self.header.correlation_id)

    @property
    def api_key(self) -> int:
        return int(self.header.request_api_key)

    @property
    def api_version(self) -> int:
        return int(self.header.request_api_version)


@dataclass
class Response:
    """A decoded response, with the request it answers (when a connection matched it)."""

    header: Any
    message: Any
    api_key: int
    api_version: int
    request: Any = None

    @property
    def correlation_id(self) -> int:
        return int(self.header.correlation_id)


def _frame(out: bytearray) -> bytes:
    size = len(out) - 4
    out[0:4] = _SIZE.pack(size)
    return bytes(out)


def encode_request_frame(
    message: KafkaMessage,
    version: int,
    *,
    correlation_id: int,
    client_id: str | None = "kwire",
) -> bytes:
    """A whole size-prefixed request frame: size, request header, message."""
    api_key = message.API_KEY
    if api_key is None or message.__kafka_message__.kind != "request":
        raise TypeError(f"{type(message).__name__} is not a request")
    header_cls = message_class("RequestHeader")
    hv = request_header_version(api_key, version)
    header = header_cls(
        request_api_key=api_key,
        request_api_version=version,
        correlation_id=correlation_id,
        client_id=client_id if hv >= 1 else None,
    )
    out = bytearray(4)
    header.encode_into(out, hv)
    message.encode_into(out, version)
    return _frame(out)


def encode_response_frame(message: KafkaMessage, version: int, *, correlation_id: int) -> bytes:
    """A whole size-prefixed response frame: size, response header, message."""
    api_key = message.API_KEY
    if api_key is None or message.__kafka_message__.kind != "response":
        raise TypeError(f"{type(message).__name__} is not a response")
    header = message_class("ResponseHeader")(correlation_id=correlation_id)
    out = bytearray(4)
    header.encode_into(out, response_header_version(api_key, version))
    message.encode_into(out, version)
    return _frame(out)


def _body(frame: bytes | bytearray | memoryview) -> memoryview:
    view = memoryview(frame).cast("B") if not isinstance(frame, memoryview) else frame.cast("B")
    if len(view) < 4:
        raise DecodeError("frame shorter than its 4-byte size", offset=0, context="frame")
    (size,) = _SIZE.unpack_from(view, 0)
    if size != len(view) - 4:
        raise DecodeError(
            f"frame size {size} does not match the {len(view) - 4} bytes given",
            offset=0,
            context="frame",
        )
    return view


@functools.lru_cache(maxsize=256)
def _request_class(api_key: int) -> type[KafkaMessage]:
    """``message_class`` by API key, cached (a lookup per request otherwise); KeyError if none."""
    return message_class(api_key=api_key, kind="request")


def decode_request_frame(
    frame: bytes | bytearray | memoryview, *, allow_trailing: bool = False
) -> Request:
    """Parse a whole size-prefixed request frame (header versions chosen as Kafka does).

    Bytes after the message are an error, unless ``allow_trailing``: a Kafka broker reads a
    request's fields and ignores what follows them (librdkafka 2.16 sends three extra bytes
    after a Metadata v13 request, and Kafka answers it), so a broker passes ``True``.
    """
    view = _body(frame)
    if len(view) < 8:
        raise DecodeError(
            "request frame too short for an API key and version", offset=4, context="RequestHeader"
        )
    api_key, api_version = _KEY_VERSION.unpack_from(view, 4)
    try:
        cls = _request_class(api_key)
    except KeyError:
        raise DecodeError(f"unknown API key {api_key}", offset=4, context="RequestHeader") from None
    if not cls.MIN_VERSION <= api_version <= cls.MAX_VERSION:
        raise DecodeError(
            f"{cls.__name__} has no version {api_version}", offset=6, context="RequestHeader"
        )
    hv = request_header_version(api_key, api_version)
    header, pos = message_class("RequestHeader").decode_from(view, hv, 4)
    message, _ = cls.decode_from(view, api_version, pos, whole=not allow_trailing)
    return Request(header, message)


def decode_response_frame(
    frame: bytes | bytearray | memoryview, api_key: int, api_version: int
) -> Response:
    """Parse a whole size-prefixed response frame to a request of ``api_key`` / ``api_version``."""
    view = _body(frame)
    cls = message_class(api_key=api_key, kind="response")
    hv = response_header_version(api_key, api_version)
    header, pos = message_class("ResponseHeader").decode_from(view, hv, 4)
    message, _ = cls.decode_from(view, api_version, pos, whole=True)
    return Response(header, message, api_key, api_version)


class FrameBuffer:
    """Split a byte stream into size-prefixed frames (each returned with its size prefix)."""

    def __init__(self, max_frame: int = MAX_FRAME) -> None:
        self._buf = bytearray()
        self._max = max_frame

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        self._buf += data

    def frames(self) -> Iterator[bytes]:
        while len(self._buf) >= 4:
            (size,) = _SIZE.unpack_from(self._buf, 0)
            if size < 0 or size > self._max:
                raise DecodeError(f"invalid frame size {size}", offset=0, context="frame")
            if len(self._buf) < 4 + size:
                return
            frame = bytes(self._buf[: 4 + size])
            del self._buf[: 4 + size]
            yield frame

    @property
    def buffered(self) -> int:
        return len(self._buf)


class FrameReader:
    """Size-prefixed frames read in place: ``buffer()`` is where the next bytes go, ``written(n)``
    says how many went there and returns the frames completed.

    Small frames (up to ``scratch`` bytes) are cut from one reused scratch buffer (one short copy
    each); a larger one, once its size prefix is in, gets a ``bytearray`` of exactly its size and
    the socket fills the rest of it directly. Frames are returned with their size prefix.
    """

    def __init__(self, max_frame: int = MAX_FRAME, scratch: int = 65_536) -> None:
        self._max = max_frame
        self._scratch = bytearray(max(scratch, 8))
        self._scratch_view = memoryview(self._scratch)
        self._fill = 0  # bytes of the scratch buffer in use
        self._frame: bytearray | None = None  # the large frame being filled
        self._frame_fill = 0

    def buffer(self) -> memoryview:
        if self._frame is not None:
            return memoryview(self._frame)[self._frame_fill :]
        return self._scratch_view[self._fill :]

    def written(self, n: int) -> list[bytes | bytearray]:
        out: list[bytes | bytearray] = []
        if self._frame is not None:
            self._frame_fill += n
            if self._frame_fill == len(self._frame):
                out.append(self._frame)
                self._frame = None
            return out
        self._fill += n
        buf = self._scratch
        pos = 0
        while self._fill - pos >= 4:
            (size,) = _SIZE.unpack_from(buf, pos)
            if size < 0 or size > self._max:
                raise DecodeError(f"invalid frame size {size}", offset=0, context="frame")
            total = 4 + size
            if self._fill - pos >= total:
                out.append(bytes(self._scratch_view[pos : pos + total]))
                pos += total
            elif total > len(buf):
                frame = bytearray(total)
                have = self._fill - pos
                frame[:have] = self._scratch_view[pos : self._fill]
                self._frame, self._frame_fill = frame, have
                pos = self._fill
                break
            else:
                break  # a small frame not all in yet
        if pos:
            rest = self._fill - pos
            buf[:rest] = self._scratch_view[pos : self._fill]
            self._fill = rest
        return out

    @property
    def buffered(self) -> int:
        return self._fill + self._frame_fill if self._frame is not None else self._fill


_API_VERSIONS_KEY = 18


class ClientConnection:
    """The client side of one Kafka connection, without I/O.

    ``send(message, version)`` returns the frame bytes to write and remembers the request;
    ``receive_data(data)`` takes bytes read from the socket; ``next_response()`` returns the next
    complete ``Response`` (matched to its request by correlation id) or ``None``.
    """

    def __init__(self, client_id: str | None = "kwire", *, first_correlation_id: int = 0) -> None:
        self.client_id = client_id
        self._next_id = first_correlation_id
        self._pending: dict[int, tuple[KafkaMessage, int]] = {}
        self._frames = FrameBuffer()
        self._reader = FrameReader()
        self._ready: list[bytes | bytearray] = []

    @property
    def next_correlation_id(self) -> int:
        """The correlation id the next ``send`` will use (to match an answer to its caller)."""
        return self._next_id

    @property
    def pending(self) -> dict[int, tuple[KafkaMessage, int]]:
        """Requests awaiting a response: correlation id -> (request, version)."""
        return dict(self._pending)

    def send(self, message: KafkaMessage, version: int, *, expect_response: bool = True) -> bytes:
        cid = self._next_id
        self._next_id = (self._next_id + 1) & 0x7FFFFFFF
        frame = encode_request_frame(message, version, correlation_id=cid, client_id=self.client_id)
        if expect_response:
            self._pending[cid] = (message, version)
        return frame

    def receive_data(self, data: bytes | bytearray | memoryview) -> None:
        self._frames.feed(data)
        self._ready.extend(self._frames.frames())

    def receive_buffer(self) -> memoryview:
        """Where the socket may write next (never empty); then call ``received_into``.

        The in-place alternative to ``receive_data``: use one or the other on a connection.
        """
        return self._reader.buffer()

    def received_into(self, n: int) -> None:
        """``n`` bytes were written at the start of the last ``receive_buffer()``."""
        self._ready.extend(self._reader.written(n))

    def next_response(self) -> Response | None:
        if not self._ready:
            return None
        frame = self._ready.pop(0)
        if len(frame) < 8:
            raise DecodeError(
                "response frame too short for a correlation id", offset=4, context="ResponseHeader"
            )
        (cid,) = _SIZE.unpack_from(frame, 4)
        entry = self._pending.pop(cid, None)
        if entry is None:
            raise DecodeError(
                f"response with unknown correlation id {cid}", offset=4, context="ResponseHeader"
            )
        request, version = entry
        api_key = request.API_KEY
        assert api_key is not None
        try:
            response = decode_response_frame(frame, api_key, version)
        except DecodeError:
            if api_key != _API_VERSIONS_KEY or version == 0:
                raise
            # A broker that does not speak this ApiVersions version answers in v0 with
            # UNSUPPORTED_VERSION and its own range (Kafka's ApiVersionsResponse.parse falls back
            # to v0 the same way); the caller reads the error and asks again.
            response = decode_response_frame(frame, api_key, 0)
        response.request = request
        return response


class ServerConnection:
    """The broker side of one connection, without I/O: requests in, response frames out."""

    def __init__(self) -> None:
        self._frames = FrameBuffer()
        self._ready: list[bytes] = []

    def receive_data(self, data: bytes | bytearray | memoryview) -> None:
        self._frames.feed(data)
        self._ready.extend(self._frames.frames())

    def next_request(self) -> Request | None:
        if not self._ready:
            return None
        return decode_request_frame(self._ready.pop(0))

    def respond(self, request: Request, message: KafkaMessage) -> bytes:
        """The frame answering ``request`` with ``message`` (same API version and correlation id)."""
        if request.api_key != message.API_KEY:
            raise TypeError(f"{type(message).__name__} does not answer API key {request.api_key}")
        return encode_response_frame(
            message, request.api_version, correlation_id=request.correlation_id
        )
