"""Request/response headers, size-prefixed frames, and sans-IO connections (bytes in, events out).

A Kafka frame is an int32 size followed by a header and a message body. The header version follows
Kafka's ``ApiMessageType``: requests use header v2 in flexible versions and v1 otherwise (v0 only for
ControlledShutdown v0, which has no client id); responses use header v1 in flexible versions and v0
otherwise, except ApiVersions responses, which always use v0 (KIP-511) so old clients can read them.

``ClientConnection`` and ``ServerConnection`` hold no sockets: feed them received bytes with
``receive_data`` and take the bytes to send from ``send``/``respond`` (in the style of h11).
Responses are matched to requests by correlation id. A client may instead let the socket write
straight into the frames (``receive_buffer`` / ``received_into``, for ``recv_into`` or asyncio's
``BufferedProtocol``). One ``FrameReader`` cuts frames for every side (these connections, the
broker's asyncio edge, the size-report CLI): a large frame gets a buffer of its own size, so a
fetched or produced megabyte is copied once, from the kernel, and its records are views of it.
"""

from __future__ import annotations

import functools
import struct
from typing import Any, Final

from kwire._lazy import lazy_dataclass
from kwire.errors import DecodeError, FrameSizeError
from kwire.protocol._registry import message_class
from kwire.protocol._runtime import KafkaMessage

__all__ = [
    "MAX_FRAME",
    "OWN_BUFFER_FROM",
    "STAGING_BYTES",
    "ClientConnection",
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
MAX_FRAME: Final = 1 << 30
#: Bytes a ``FrameReader`` reads ahead of the frame being taken before ``wants_data`` turns false.
STAGING_BYTES: Final = 1 << 16
#: A frame that has not fully arrived and is larger than this gets a buffer of its own, which
#: the socket fills in place; a smaller one waits in the staging buffer.
OWN_BUFFER_FROM: Final = 1 << 13
#: An own buffer starts at most this large and grows as its frame's bytes arrive: a size prefix
#: alone (a client that announces 100 MB and sends a few bytes) does not allocate the size.
OWN_BUFFER_START: Final = 1 << 20


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


@lazy_dataclass
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


@lazy_dataclass
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


class FrameReader:
    """Size-prefixed frames cut from the bytes one connection received, at either end of it.

    The edge puts received bytes where ``get_buffer`` says (``recv_into``, or asyncio's
    ``BufferedProtocol``) and reports how many with ``buffer_updated``; ``next_frame(limit)``
    takes the next whole frame, its size prefix included. Bytes a caller already holds go in
    with ``feed``, which copies them and returns the frames they completed.

    After Kafka's ``NetworkReceive``: a frame that does not arrive in one piece and is larger
    than ``OWN_BUFFER_FROM`` (or than the staging buffer) is read straight into a ``bytearray``
    of its own, so a large Produce or fetch answer is copied from the kernel where its decoder
    reads it. That buffer starts at ``OWN_BUFFER_START`` (or the frame's size, when smaller) and
    grows fourfold as the bytes arrive, so a size prefix alone allocates nothing large (Kafka's
    ``NetworkReceive`` allocates the announced size at once); a larger frame is moved a few
    times, a third of its size in all. Small frames that arrive together land in one staging
    buffer and are cut from it (one short copy each). A frame's size is checked against the
    limit passed to ``next_frame`` (the broker passes ``socket.request.max.bytes``, or
    ``sasl.server.max.receive.size`` before authentication) before anything of its size is
    allocated. Read-ahead is bounded: while the staging buffer is full and no frame is taken
    (the broker is handling the connection's request; Kafka mutes the channel meanwhile),
    ``wants_data`` is false and the edge pauses reading. A frame completed in its own buffer
    waits aside (``_ready``) while the bytes after it go to the staging buffer, so a large frame
    alone does not pause reading (a pause and a resume cost two system calls per request).
    """

    def __init__(self, staging_bytes: int = STAGING_BYTES) -> None:
        self._staging = bytearray(max(staging_bytes, 8))
        # a small frame must fit the staging buffer once compacted; a larger one gets its own
        self._own_from = min(OWN_BUFFER_FROM, len(self._staging))
        self._start = 0  # first byte not yet taken
        self._end = 0  # end of the bytes received into the staging buffer
        self._frame: bytearray | None = None  # a frame being filled in place (own buffer)
        self._filled = 0  # bytes of ``_frame`` received so far
        self._frame_size = 0  # the whole frame's size (``_frame`` grows to it)
        self._ready: bytearray | None = None  # a whole own-buffer frame, before the staged bytes

    # --- bytes in -----------------------------------------------------------------------------

    def get_buffer(self) -> memoryview:
        """Where the next received bytes go (never empty)."""
        frame = self._frame
        if frame is not None:
            if self._filled == len(frame):  # full, not yet whole: four times larger (a new
                # buffer, as the transport may still view the old one; x4, not x2, moves a 64 MiB
                # frame 21 MiB in all, not 63)
                grown = bytearray(min(self._frame_size, 4 * len(frame)))
                grown[: self._filled] = frame
                self._frame = frame = grown
            return memoryview(frame)[self._filled :]
        if self._end == len(self._staging):
            self._compact()
            if self._end == len(self._staging):
                # Full, yet asked again (asyncio's sendfile resumes reading when it is done):
                # a new, larger buffer, never a resize of one the transport may still view. The
                # broker pauses reading after this read, so it happens once per resume.
                grown = bytearray(len(self._staging) + STAGING_BYTES)
                grown[: self._end - self._start] = self._staging[self._start : self._end]
                self._end -= self._start
                self._start = 0
                self._staging = grown
        return memoryview(self._staging)[self._end :]

    def buffer_updated(self, nbytes: int) -> None:
        """``nbytes`` were written at the start of the last ``get_buffer``."""
        frame = self._frame
        if frame is not None:
            self._filled += nbytes
            if self._filled == self._frame_size:  # whole: aside, and the staging buffer reads on
                self._ready, self._frame = frame, None
        else:
            self._end += nbytes

    def feed(self, data: bytes | bytearray | memoryview, limit: int = MAX_FRAME) -> list[bytearray]:
        """Copy ``data`` in and return the whole frames it completed (``next_frame(limit)``)."""
        view = memoryview(data).cast("B")
        out: list[bytearray] = []
        while view:
            buf = self.get_buffer()
            n = min(len(buf), len(view))
            buf[:n] = view[:n]
            self.buffer_updated(n)
            view = view[n:]
            while (frame := self.next_frame(limit)) is not None:
                out.append(frame)
        return out

    @property
    def wants_data(self) -> bool:
        """False while the reader holds all it may read ahead: pause reading."""
        if self._frame is not None:
            return self._filled < self._frame_size
        return self._end - self._start < len(self._staging)

    @property
    def buffered(self) -> int:
        """Bytes received and not yet taken as frames."""
        ready = len(self._ready) if self._ready is not None else 0
        return self._end - self._start + (self._filled if self._frame is not None else 0) + ready

    # --- frames out ---------------------------------------------------------------------------

    def next_frame(self, limit: int = MAX_FRAME) -> bytearray | None:
        """The next whole frame (its 4-byte size prefix included), or ``None`` until more bytes
        arrive. Raises ``FrameSizeError`` for a size prefix below 0 or above ``limit``."""
        ready = self._ready
        if ready is not None:
            self._ready = None
            return ready
        frame = self._frame
        if frame is not None:
            if self._filled < self._frame_size:
                return None
            self._frame = None
            return frame
        start, available = self._start, self._end - self._start
        if available < 4:
            return None
        (size,) = _SIZE.unpack_from(self._staging, start)
        if size < 0 or size > limit:
            raise FrameSizeError(size, limit)
        total = 4 + size
        if available >= total:
            whole = self._staging[start : start + total]
            self._start = start + total
            if self._start == self._end:
                self._start = self._end = 0
            return whole
        if total > self._own_from:
            # The rest of this frame goes straight into its own buffer.
            own = bytearray(min(total, max(OWN_BUFFER_START, 2 * available)))
            own[:available] = self._staging[start : self._end]
            self._frame, self._filled, self._frame_size = own, available, total
            self._start = self._end = 0
        elif start + total > len(self._staging):
            self._compact()
        return None

    def _compact(self) -> None:
        """Move the bytes not yet taken to the start of the staging buffer."""
        start, end = self._start, self._end
        if start:
            self._staging[: end - start] = self._staging[start:end]
            self._start, self._end = 0, end - start


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
        self._reader = FrameReader()
        self._ready: list[bytearray] = []

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
        self._ready.extend(self._reader.feed(data))

    def receive_buffer(self) -> memoryview:
        """Where the socket may write next (never empty); then call ``received_into``.

        The in-place alternative to ``receive_data``: use one or the other on a connection.
        """
        return self._reader.get_buffer()

    def received_into(self, n: int) -> None:
        """``n`` bytes were written at the start of the last ``receive_buffer()``."""
        reader = self._reader
        reader.buffer_updated(n)
        while (frame := reader.next_frame()) is not None:
            self._ready.append(frame)

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
        self._reader = FrameReader()
        self._ready: list[bytearray] = []

    def receive_data(self, data: bytes | bytearray | memoryview) -> None:
        self._ready.extend(self._reader.feed(data))

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
