"""The broker's side of one Kafka connection, without I/O (h11's shape).

The server puts received bytes where ``get_buffer`` says and reports how many with
``buffer_updated``; it takes whole, size-prefixed request frames out with ``next_frame``. No
sockets, no event loop: the asyncio edge (``_server``) feeds it, and tests drive it with bytes.

Why this shape (after Kafka's ``NetworkReceive``): a request that does not arrive in one piece is
read straight into a buffer of its own size, so the socket's ``recv_into`` writes the body of a
large Produce where the decoder will read it (no StreamReader buffer to copy out of, no
``head + body`` join); small requests that arrive together land in one staging buffer and are cut
from it. Read-ahead is bounded: when the staging buffer is full and no frame is being taken
(the connection's request is with the broker: Kafka mutes the channel meanwhile),
``wants_data`` turns false and the server pauses reading. A frame's size is checked against the
limit the server passes to ``next_frame`` (``socket.request.max.bytes``, or
``sasl.server.max.receive.size`` before authentication) before anything of its size is allocated.
"""

from __future__ import annotations

import struct
from typing import Final

__all__ = ["BrokerConnection", "FrameSizeError"]

_SIZE: Final = struct.Struct(">i")

#: Bytes read ahead of the request being handled, before the server pauses reading.
STAGING_BYTES: Final = 1 << 16

#: A frame that has not fully arrived and is larger than this gets a buffer of its own, which
#: the socket fills in place; a smaller one waits in the staging buffer.
OWN_BUFFER_FROM: Final = 1 << 13


class FrameSizeError(Exception):
    """A frame's size prefix is negative or above the limit: the connection closes (Kafka's
    ``InvalidReceiveException``)."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"request of {size} bytes exceeds the limit of {limit}")
        self.size = size
        self.limit = limit


class BrokerConnection:
    """Request frames cut from the bytes one connection received."""

    def __init__(self, staging_bytes: int = STAGING_BYTES) -> None:
        self._staging = bytearray(staging_bytes)
        self._start = 0  # first byte not yet taken
        self._end = 0  # end of the bytes received into the staging buffer
        self._frame: bytearray | None = None  # a frame being filled in place (own buffer)
        self._filled = 0  # bytes of ``_frame`` received so far

    # --- bytes in -----------------------------------------------------------------------------

    def get_buffer(self) -> memoryview:
        """Where the next received bytes go (never empty)."""
        frame = self._frame
        if frame is not None:
            return memoryview(frame)[self._filled :]
        if self._end == len(self._staging):
            self._compact()
            if self._end == len(self._staging):
                # Full, yet asked again (asyncio's sendfile resumes reading when it is done):
                # a new, larger buffer, never a resize of one the transport may still view. The
                # server pauses reading after this read, so it happens once per resume.
                grown = bytearray(len(self._staging) + STAGING_BYTES)
                grown[: self._end - self._start] = self._staging[self._start : self._end]
                self._end -= self._start
                self._start = 0
                self._staging = grown
        return memoryview(self._staging)[self._end :]

    def buffer_updated(self, nbytes: int) -> None:
        """``nbytes`` were written at the start of the last ``get_buffer``."""
        if self._frame is not None:
            self._filled += nbytes
        else:
            self._end += nbytes

    @property
    def wants_data(self) -> bool:
        """False while the connection holds all it may read ahead: pause reading."""
        if self._frame is not None:
            return self._filled < len(self._frame)
        return self._end - self._start < len(self._staging)

    @property
    def buffered(self) -> int:
        """Bytes received and not yet taken as frames."""
        return self._end - self._start + (self._filled if self._frame is not None else 0)

    # --- frames out ---------------------------------------------------------------------------

    def next_frame(self, limit: int) -> bytearray | None:
        """The next whole frame (its 4-byte size prefix included), or ``None`` until more bytes
        arrive. Raises ``FrameSizeError`` for a size prefix below 0 or above ``limit``."""
        frame = self._frame
        if frame is not None:
            if self._filled < len(frame):
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
        if total > OWN_BUFFER_FROM:
            # The rest of this frame goes straight into its own buffer.
            own = bytearray(total)
            own[:available] = self._staging[start : self._end]
            self._frame, self._filled = own, available
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
