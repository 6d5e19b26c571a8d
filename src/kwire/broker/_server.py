"""The asyncio edge of the broker: listeners, connections, frames in, responses out.

Approach, after Kafka's ``SocketServer``: one task per connection reads a size-prefixed frame,
hands the decoded request to the handler table, and writes the response before it reads the next
request (Kafka mutes a channel while one of its requests is in flight, so responses go out in
request order and a client that pipelines just waits in its socket buffer: no unbounded
buffering here). A frame larger than ``socket.request.max.bytes``, a header that does not parse,
an API or version the personality does not serve (except ApiVersions, KIP-511) closes the
connection, as Kafka does; nothing a client sends can stop the other connections.

A response with ``FileRecords`` goes out in pieces: the encoded bytes up to each reference, then
the referenced segment slices with ``loop.sendfile`` (``os.sendfile`` on plain sockets: the record
bytes never pass through Python), then the rest. A long-polling Fetch (``Deferred``) waits on an
``asyncio.Event`` that any append to a watched partition sets.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import struct
from collections.abc import Hashable
from typing import Any, Final

from kwire.broker._apis import CLOSE_CONNECTION, HANDLERS, Deferred
from kwire.broker._context import RequestContext
from kwire.broker._data import api_versions_response
from kwire.broker._fetch import FileRecords
from kwire.broker._state import BrokerState
from kwire.errors import KwireError
from kwire.protocol import (
    ErrorCode,
    KafkaMessage,
    decode_request_frame,
    message_class,
    response_header_version,
)

__all__ = ["KafkaServer", "encode_response_pieces"]

log = logging.getLogger("kwire.broker")

_SIZE: Final = struct.Struct(">i")
_HEAD: Final = struct.Struct(">hhi")  # api key, api version, correlation id
API_VERSIONS: Final = 18
_RESPONSE_HEADER = message_class("ResponseHeader")


def encode_response_pieces(
    message: KafkaMessage, version: int, correlation_id: int
) -> tuple[int, list[bytes | FileRecords]]:
    """The frame size and the pieces to send: encoded bytes and ``FileRecords`` between them."""
    api_key = message.API_KEY
    assert api_key is not None
    out = bytearray(4)
    _RESPONSE_HEADER(correlation_id=correlation_id).encode_into(
        out, response_header_version(api_key, version)
    )
    references: list[FileRecords] = []
    message.encode_into(out, version)
    _collect_references(message, references)
    references = [r for r in references if r.frame_position >= 0]
    references.sort(key=lambda r: r.frame_position)
    size = len(out) - 4 + sum(r.nbytes for r in references)
    out[0:4] = _SIZE.pack(size)
    pieces: list[bytes | FileRecords] = []
    last = 0
    for ref in references:
        pieces.append(bytes(out[last : ref.frame_position]))
        pieces.append(ref)
        last = ref.frame_position
    pieces.append(bytes(out[last:]))
    return size, pieces


def _collect_references(message: Any, found: list[FileRecords]) -> None:
    """The ``FileRecords`` inside a Fetch response (the only message that carries them)."""
    for topic in getattr(message, "responses", None) or ():
        for partition in getattr(topic, "partitions", None) or ():
            records = getattr(partition, "records", None)
            if isinstance(records, FileRecords):
                found.append(records)


class _Waiters:
    """Parked requests by key (a partition, a group): a notification sets their events."""

    def __init__(self) -> None:
        self.by_key: dict[Hashable, set[asyncio.Event]] = {}

    def add(self, keys: set[Hashable], event: asyncio.Event) -> None:
        for key in keys:
            self.by_key.setdefault(key, set()).add(event)

    def remove(self, keys: set[Hashable], event: asyncio.Event) -> None:
        for key in keys:
            events = self.by_key.get(key)
            if events is not None:
                events.discard(event)
                if not events:
                    del self.by_key[key]

    def wake(self, key: Hashable) -> None:
        for event in self.by_key.get(key, ()):
            event.set()


class KafkaServer:
    """Serves one ``BrokerState`` on one listener."""

    def __init__(self, state: BrokerState, host: str, port: int) -> None:
        self.state = state
        self.host = host
        self.port = port
        self.max_request_bytes = state.broker_int("socket.request.max.bytes")
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()
        self._waiters = _Waiters()
        self._housekeeping: asyncio.Task[None] | None = None
        state.on_notify(self._waiters.wake)

    async def start(self) -> None:
        self._server = await asyncio.start_server(
            self._serve, self.host, self.port, reuse_address=True, limit=1 << 16
        )
        sock = self._server.sockets[0]
        self.port = sock.getsockname()[1]
        self.state.port = self.port
        self._housekeeping = asyncio.create_task(self._housekeep())

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._connections):
            task.cancel()
        for task in list(self._connections):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if self._housekeeping is not None:
            self._housekeeping.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._housekeeping
        if self._server is not None:
            with contextlib.suppress(Exception):
                await self._server.wait_closed()

    async def _housekeep(self) -> None:
        """Kafka's scheduled tasks: coordinator timers (every 100 ms), rolls by segment.ms and
        flushes (every second), retention (``log.retention.check.interval.ms``), checkpoints."""
        tick = 0.1
        retention_every = self.state.broker_int("log.retention.check.interval.ms") / 1000.0
        checkpoint_every = 5.0  # replica.high.watermark.checkpoint.interval.ms
        elapsed = since_logs = since_checkpoint = since_retention = 0.0
        while True:
            await asyncio.sleep(tick)
            elapsed += tick
            try:
                self.state.run_tickers()
                if elapsed - since_logs < 1.0:
                    continue
                since_logs = elapsed
                now = self.state.now_ms()
                for partition in self.state.iter_partitions():
                    partition.log.maybe_roll(now)
                    partition.log.maybe_flush(now)
                if elapsed - since_retention >= retention_every:
                    since_retention = elapsed
                    for partition in self.state.iter_partitions():
                        partition.log.enforce_retention(now)
                if elapsed - since_checkpoint >= checkpoint_every:
                    since_checkpoint = elapsed
                    self.state.write_checkpoints()
            except Exception:
                log.exception("housekeeping failed")

    # --- one connection -----------------------------------------------------------------------

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        peer = writer.get_extra_info("peername")
        address = f"{peer[0]}:{peer[1]}" if peer else "?"
        conn = _Connection(address)
        try:
            await self._requests(reader, writer, conn)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        except asyncio.CancelledError:
            pass
        except Exception:
            log.exception("connection %s failed", address)
        finally:
            self._connections.discard(task)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()
            if not conn.logged and conn.requests:
                conn.log()

    async def _requests(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, conn: _Connection
    ) -> None:
        while True:
            head = await reader.readexactly(4)
            (size,) = _SIZE.unpack(head)
            if size < 0 or size > self.max_request_bytes:
                log.warning(
                    "closing %s: request of %d bytes exceeds socket.request.max.bytes (%d)",
                    conn.address,
                    size,
                    self.max_request_bytes,
                )
                return
            body = await reader.readexactly(size)
            frame = head + body
            if size < 8:
                log.warning("closing %s: request too short for a header", conn.address)
                return
            api_key, api_version, correlation_id = _HEAD.unpack_from(body, 0)
            conn.requests += 1
            if not self.state.personality.supports(api_key, api_version) or api_key not in HANDLERS:
                if api_key == API_VERSIONS and API_VERSIONS in self.state.personality.advertised:
                    # An ApiVersions version the broker does not know is answered in v0 with
                    # UNSUPPORTED_VERSION: from 2.4 (KIP-511) with the versions it serves, so the
                    # client retries with one of them; 0.10.0-2.3 with an empty list.
                    response = api_versions_response(self.state, ErrorCode.UNSUPPORTED_VERSION)
                    if not self.state.personality.kip511:
                        response.api_keys = []
                    await self._send(writer, response, 0, correlation_id)
                    continue
                log.warning(
                    "closing %s: API key %d version %d is not served by Kafka %s",
                    conn.address,
                    api_key,
                    api_version,
                    self.state.personality.release,
                )
                return
            try:
                request = decode_request_frame(frame, allow_trailing=True)
            except KwireError as exc:
                log.warning("closing %s: malformed request: %s", conn.address, exc)
                return
            ctx = RequestContext(
                api_key=api_key,
                api_version=api_version,
                correlation_id=correlation_id,
                client_id=request.header.client_id,
                client_address=conn.address,
                listener_host=self.host,
                listener_port=self.port,
            )
            if api_key == API_VERSIONS and api_version >= 3:
                conn.software = (
                    request.message.client_software_name,
                    request.message.client_software_version,
                )
            conn.client_id = request.header.client_id
            if not conn.logged:
                conn.log()
            handler = HANDLERS[api_key][0]
            outcome = handler(self.state, ctx, request.message)
            if isinstance(outcome, Deferred):
                outcome = await self._wait(outcome)
            if outcome is None:
                continue
            if outcome is CLOSE_CONNECTION:
                log.info("closing %s: a request without response failed", conn.address)
                return
            await self._send(writer, outcome, api_version, correlation_id)

    async def _wait(self, deferred: Deferred) -> Any:
        event = asyncio.Event()
        self._waiters.add(deferred.keys, event)
        try:
            while True:
                remaining = (deferred.deadline_ms - self.state.now_ms()) / 1000.0
                if remaining <= 0:
                    return deferred.complete(True)
                event.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(event.wait(), remaining)
                if event.is_set():
                    result = deferred.complete(False)
                    if result is not None:
                        return result
        finally:
            self._waiters.remove(deferred.keys, event)

    async def _send(
        self, writer: asyncio.StreamWriter, message: Any, version: int, correlation_id: int
    ) -> None:
        _, pieces = encode_response_pieces(message, version, correlation_id)
        loop = asyncio.get_running_loop()
        try:
            for piece in pieces:
                if isinstance(piece, FileRecords):
                    await writer.drain()
                    for s in piece.slices:
                        await _sendfile(loop, writer, s.fd, s.position, s.size)
                else:
                    writer.write(piece)
            await writer.drain()
        finally:
            for piece in pieces:
                if isinstance(piece, FileRecords):
                    piece.close()


async def _sendfile(
    loop: asyncio.AbstractEventLoop, writer: asyncio.StreamWriter, fd: int, offset: int, count: int
) -> None:
    """``sendfile`` a slice of a segment (a plain copy only where the transport cannot)."""
    with os.fdopen(os.dup(fd), "rb", buffering=0) as file:
        sent = await loop.sendfile(writer.transport, file, offset, count, fallback=True)
    if sent != count:
        raise ConnectionError(f"sent {sent} of {count} record bytes")


class _Connection:
    """What the broker logs about a client connection (one line each)."""

    def __init__(self, address: str) -> None:
        self.address = address
        self.client_id: str | None = None
        self.software: tuple[str, str] | None = None
        self.requests = 0
        self.logged = False

    def log(self) -> None:
        self.logged = True
        software = f" software={self.software[0]}/{self.software[1]}" if self.software else ""
        log.info("connection from %s client_id=%s%s", self.address, self.client_id, software)
