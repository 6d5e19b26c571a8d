"""The asyncio edge of the broker: listeners, connections, frames in, responses out.

Approach, after Kafka's ``SocketServer``: one task per connection reads a size-prefixed frame,
hands the decoded request to the handler table, and writes the response before it reads the next
request (Kafka mutes a channel while one of its requests is in flight, so responses go out in
request order and a client that pipelines just waits in its socket buffer: no unbounded
buffering here). A frame larger than ``socket.request.max.bytes``, a header that does not parse,
an API or version the personality does not serve (except ApiVersions, KIP-511) closes the
connection, as Kafka does; nothing a client sends can stop the other connections.

Listeners (``_security``): one asyncio server per configured listener (``listeners``), TLS
through the ``ssl`` module, and on SASL listeners a ``SaslAuthenticator`` per connection
(``_sasl``) that admits only ApiVersions, SaslHandshake and SaslAuthenticate until the client has
authenticated, with frames limited to ``sasl.server.max.receive.size`` meanwhile (Kafka's
``SaslServerAuthenticator``). Each request carries its listener's advertised endpoint and the
connection's principal in its ``RequestContext``.

A response with ``FileRecords`` goes out in pieces: the encoded bytes up to each reference, then
the referenced segment slices with ``loop.sendfile`` (``os.sendfile`` on plain sockets: the record
bytes never pass through Python; over TLS, where encryption happens in user space, they are
read in 64 KiB chunks and written through the SSL transport), then the rest. Their duplicated
descriptors are the request's (``RequestContext.hold``), released when the request ends, whether
its response was written or not. A long-polling Fetch (``Deferred``) waits on an
``asyncio.Event`` that any append to a watched partition sets.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import logging
import os
import ssl
import struct
import threading
import time
from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, Any, Final

from kwire.broker._api_versions import api_versions_response
from kwire.broker._apis import CLOSE_CONNECTION, TABLE, Deferred, dispatch
from kwire.broker._context import RequestContext
from kwire.broker._file_records import ConvertedRecords, FileRecords
from kwire.broker._metrics import broker_metrics
from kwire.broker._routing import DISCONNECT, Faults, error_response
from kwire.broker._security import (
    ANONYMOUS,
    Listener,
    SslPrincipalMapper,
    listener_config,
    parse_listeners,
    principal_from_certificate,
    server_ssl_context,
)
from kwire.broker._state import BrokerState
from kwire.errors import FrameSizeError, KafkaStorageError, KwireError
from kwire.protocol import (
    ErrorCode,
    FrameReader,
    KafkaMessage,
    decode_request_frame,
    response_header_version,
)
from kwire.protocol.messages import ResponseHeader

if TYPE_CHECKING:
    from kwire.broker._sasl import SaslAuthenticator, SaslStep

__all__ = ["KafkaServer", "encode_response_pieces", "housekeep"]

log = logging.getLogger("kwire.broker")

_SIZE: Final = struct.Struct(">i")
_HEAD: Final = struct.Struct(">hhi")  # api key, api version, correlation id
API_VERSIONS: Final = 18
PRODUCE: Final = 0
#: Decompressed bytes of a request's records validated on the loop rather than the worker pool.
INLINE_VALIDATION_BYTES: Final = 1 << 17
_RESPONSE_HEADER: Final = ResponseHeader


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
    message.encode_into(out, version)
    if api_key not in _FILE_RECORDS_APIS:  # nothing to look for: one piece
        size = len(out) - 4
        out[0:4] = _SIZE.pack(size)
        return size, [bytes(out)]
    references: list[FileRecords] = []
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


#: The APIs whose responses may hold ``FileRecords``: Fetch (``_fetch``), alone.
_FILE_RECORDS_APIS: Final = frozenset({1})


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
    """Serves one ``BrokerState`` on its listeners (``listeners``; else PLAINTEXT on host:port).

    In an in-process cluster (``_cluster``) each node is a ``KafkaServer`` over the shared state:
    ``node_id`` names it in its requests' contexts, ``listeners`` are its own (ports of its
    own), only one node runs the state's housekeeping, and ``faults`` may delay or fail chosen
    requests.
    """

    def __init__(
        self,
        state: BrokerState,
        host: str,
        port: int,
        *,
        node_id: int | None = None,
        listeners: list[Listener] | None = None,
        housekeeping: bool = True,
        faults: Faults | None = None,
    ) -> None:
        self.state = state
        self.host = host
        self.port = port
        self.node_id = state.node_id if node_id is None else node_id
        self.faults = faults
        self._run_housekeeping = housekeeping
        self.running = False  # listening (between start and stop)
        self.bound: dict[str, int] = {}  # listener name -> bound port
        self.max_request_bytes = state.broker_int("socket.request.max.bytes")
        #: Kafka's ``connections.max.idle.ms``: a connection that moves no byte for this long
        #: (silent, stuck mid-request, or not reading its response) is closed (-1: never)
        self.max_idle_ms = state.broker_int("connections.max.idle.ms")
        self._reaper: asyncio.Task[None] | None = None
        #: Kafka's request handler threads (``num.io.threads``), for the costly pure work of a
        #: request; each connection has one request at a time, so its queue is bounded too
        self._workers: concurrent.futures.ThreadPoolExecutor | None = None
        self.listeners = (
            list(listeners)
            if listeners is not None
            else parse_listeners(state.static_config, host, port)
        )
        #: listener name -> the (host, port) it advertises (bound port once started)
        self.endpoints: dict[str, tuple[str, int]] = {}
        self._servers: list[asyncio.Server] = []
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()
        self._open: dict[asyncio.Task[None], _Connection] = {}
        self._waiters = _Waiters()
        self._housekeeping: asyncio.Task[None] | None = None
        state.on_notify(self._waiters.wake)
        self.metrics = broker_metrics(state)  # request counts, quotas (_metrics, _quotas)

    async def start(self) -> None:
        static = self.state.static_config
        self._servers = []  # a node of a cluster starts again on the same object
        try:
            for listener in self.listeners:
                context = server_ssl_context(static, listener.name) if listener.uses_tls else None
                server = await asyncio.get_running_loop().create_server(
                    functools.partial(_Channel, self, listener, context is not None),
                    listener.host or None,
                    listener.port,
                    reuse_address=True,
                    ssl=context,
                )
                self._servers.append(server)
                bound = server.sockets[0].getsockname()[1]
                host = listener.advertised_host or listener.host
                if host in ("", "0.0.0.0", "::"):
                    host = self.host if self.host not in ("", "0.0.0.0", "::") else "127.0.0.1"
                self.endpoints[listener.name] = (host, listener.advertised_port or bound)
                log.info("listening on %s://%s:%d", listener.name, listener.host, bound)
        except BaseException:
            for server in self._servers:
                server.close()
            raise
        self._server = self._servers[0]
        self.port = self._server.sockets[0].getsockname()[1]
        self.bound = {
            listener.name: server.sockets[0].getsockname()[1]
            for listener, server in zip(self.listeners, self._servers, strict=True)
        }
        if self.node_id == self.state.node_id:
            self.state.port = self.port
        self.state.broker_started(
            self.node_id, self.endpoints, {lst.name: lst.protocol for lst in self.listeners}
        )
        if self._run_housekeeping:
            self._housekeeping = asyncio.create_task(self._housekeep())
        if self.max_idle_ms >= 0:
            self._reaper = asyncio.create_task(self._close_idle())
        self.running = True

    async def stop(self) -> None:
        self.running = False
        for server in self._servers:
            server.close()
        await asyncio.sleep(0)  # connections accepted just before the close register first
        for task in list(self._connections):
            task.cancel()
        if self._connections:
            # bounded: a connection that does not unwind is dropped, never waited on forever
            _done, stuck = await asyncio.wait(list(self._connections), timeout=10)
            for task in stuck:
                conn = self._open.get(task)
                log.warning("stopping: connection %s did not close", conn and conn.address)
                if conn is not None and conn.transport is not None:
                    conn.transport.abort()
                task.cancel()
        for background in (self._housekeeping, self._reaper):
            if background is not None:
                background.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await background
        self._reaper = None
        if self._workers is not None:
            self._workers.shutdown(wait=False, cancel_futures=True)
            self._workers = None
        for server in self._servers:
            with contextlib.suppress(Exception):
                await server.wait_closed()

    def connection_stats(self) -> list[dict[str, Any]]:
        """Each open connection: its peer, requests read, and the bytes the broker holds for it
        (``output``: queued in the transport, unsent; ``input``: read from the socket, not yet
        handled). Call on the server's loop."""
        return [conn.stats() for conn in self._open.values()]

    async def _housekeep(self) -> None:
        await housekeep(self.state)

    async def _close_idle(self) -> None:
        """Kafka's ``Selector`` idle expiry: close each connection whose last byte in or out
        is older than ``connections.max.idle.ms``. Time spent handling its request (a long
        poll included) is the broker's, not the client's, and does not count."""
        idle_s = self.max_idle_ms / 1000.0
        tick = min(max(idle_s / 4, 0.01), 1.0)
        while True:
            await asyncio.sleep(tick)
            now = time.monotonic()
            for task, conn in list(self._open.items()):
                if conn.handling or now - conn.last_active <= idle_s:
                    continue
                log.info(
                    "closing %s: idle for more than connections.max.idle.ms (%d)",
                    conn.address,
                    self.max_idle_ms,
                )
                # cancel first, abort after (in _serve): an abort during loop.sendfile leaves
                # asyncio 3.11's transport half reset; a cancel unwinds the sendfile, then the
                # abort drops what the client never read instead of waiting for it to drain
                conn.expired = True
                task.cancel()

    # --- one connection -----------------------------------------------------------------------

    async def _serve(self, listener: Listener, writer: _Channel) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        peer = writer.get_extra_info("peername")
        address = f"{peer[0]}:{peer[1]}" if peer else "?"
        conn = _Connection(address, listener)
        conn.channel, conn.transport = writer, writer.transport
        writer.conn = conn
        self._open[task] = conn
        closed = self.metrics.connected(conn)
        try:
            self._secure(conn, writer)
            await self._requests(writer, conn)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        except asyncio.CancelledError:
            conn.expired = True  # stopping, or closed for idleness: do not wait for the client
        except Exception:
            log.exception("connection %s failed", address)
        finally:
            closed()
            self._connections.discard(task)
            self._open.pop(task, None)
            # a connection accepted while the broker stopped can be left to the garbage
            # collector after its loop closed: closing its transport then has no loop to run on
            with contextlib.suppress(RuntimeError):
                if conn.expired:
                    writer.transport.abort()
                else:
                    writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()
            # connection and channel refer to each other: unlinked, reference counting frees
            # the channel's buffers now (a half-received request's may be 100 MB), not a
            # cyclic collection that may come much later
            writer.conn, conn.channel, conn.transport = None, None, None

    def _secure(self, conn: _Connection, writer: _Channel) -> None:
        """The connection's principal (a client certificate) and its SASL authenticator."""
        listener, static = conn.listener, self.state.static_config
        if listener.protocol == "SSL":
            ssl_object = writer.get_extra_info("ssl_object")
            cert = ssl_object.getpeercert() if isinstance(ssl_object, ssl.SSLObject) else None
            rules = listener_config(static, listener.name, "ssl.principal.mapping.rules")
            conn.principal = principal_from_certificate(cert, SslPrincipalMapper(rules))
        if listener.uses_sasl:
            # SASL (hashlib, hmac, SCRAM, delegation tokens) loads with its first listener
            from kwire.broker._delegation_tokens import token_login
            from kwire.broker._sasl import SaslAuthenticator, SaslConfig, scram_store

            state = self.state
            store = scram_store(state)
            conn.sasl = SaslAuthenticator(
                SaslConfig.from_config(static, listener.name),
                store.get,
                state.now_ms,
                token_lookup=functools.partial(token_login, state),
            )

    def _admitted(self, conn: _Connection, api_key: int) -> bool:
        """Kafka's SASL gate: only the SASL exchange before authentication, and no request once
        a KIP-368 session expired."""
        sasl = conn.sasl
        if sasl is None:
            return True
        if sasl.authenticated:
            if sasl.expired():
                log.info("closing %s: authentication session expired", conn.address)
                return False
            return True
        if not sasl.admits(api_key):
            log.warning(
                "closing %s: unexpected request of API key %d during SASL authentication",
                conn.address,
                api_key,
            )
            return False
        if api_key == API_VERSIONS:
            sasl.api_versions_seen()
        return True

    async def _sasl_reply(
        self,
        writer: _Channel,
        conn: _Connection,
        step: SaslStep,
        version: int,
        correlation_id: int,
    ) -> bool:
        """Answer one SASL step; False when the connection must close."""
        if step.delay_ms:
            await asyncio.sleep(step.delay_ms / 1000.0)  # connection.failed.authentication.delay.ms
        if isinstance(step.response, bytes):
            writer.write(_SIZE.pack(len(step.response)) + step.response)
            await writer.drain()
        elif step.response is not None:
            await self._send(writer, step.response, version, correlation_id)
        if step.close:
            log.info("closing %s: SASL authentication failed", conn.address)
            return False
        if conn.sasl is not None and conn.sasl.authenticated:
            conn.principal = conn.sasl.principal or ANONYMOUS
        return True

    async def _requests(self, writer: _Channel, conn: _Connection) -> None:
        mute_ms = 0
        while True:
            if mute_ms:  # KIP-219: a throttled channel is muted after its response went out
                conn.handling = True
                await asyncio.sleep(mute_ms / 1000.0)
                conn.handling, conn.last_active, mute_ms = False, time.monotonic(), 0
            sasl = conn.sasl
            limit = self.max_request_bytes
            if sasl is not None and not sasl.authenticated:
                limit = min(limit, sasl.max_receive_size)  # sasl.server.max.receive.size
            try:
                frame = await writer.read_frame(limit)
            except FrameSizeError as exc:
                setting = (
                    "socket.request.max.bytes"
                    if limit == self.max_request_bytes
                    else "sasl.server.max.receive.size"
                )
                log.warning("closing %s: %s", conn.address, _refused_size(exc.size, setting, limit))
                return
            size = len(frame) - 4
            started = time.perf_counter_ns()
            if sasl is not None and sasl.raw_tokens:  # after a SaslHandshake v0
                token = bytes(frame[4:])
                if not await self._sasl_reply(writer, conn, sasl.raw_token(token), 0, 0):
                    return
                continue
            if size < 8:
                log.warning("closing %s: request too short for a header", conn.address)
                return
            api_key, api_version, correlation_id = _HEAD.unpack_from(frame, 4)
            conn.requests += 1
            if not self._admitted(conn, api_key):
                return
            if not self.state.personality.supports(api_key, api_version) or api_key not in TABLE:
                if api_key == API_VERSIONS and API_VERSIONS in self.state.personality.advertised:
                    # An ApiVersions version the broker does not know is answered in v0 with
                    # UNSUPPORTED_VERSION: from 2.4 (KIP-511) with the versions it serves, so the
                    # client retries with one of them; 0.10.0-2.3 with an empty list.
                    response = api_versions_response(self.state, ErrorCode.UNSUPPORTED_VERSION)
                    if not self.state.personality.kip511:
                        response.api_keys = []
                    await self._send(writer, response, 0, correlation_id, conn)
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
            host, port = self.endpoints.get(conn.listener.name, (self.host, self.port))
            ctx = RequestContext(
                api_key=api_key,
                api_version=api_version,
                correlation_id=correlation_id,
                client_id=request.header.client_id,
                client_address=conn.address,
                listener_host=host,
                listener_port=port,
                listener_name=conn.listener.name,
                security_protocol=conn.listener.protocol,
                principal=conn.principal,
                token_authenticated=conn.sasl is not None and conn.sasl.token_authenticated,
                node_id=self.node_id,
            )
            if api_key == API_VERSIONS and api_version >= 3:
                conn.software = (
                    request.message.client_software_name,
                    request.message.client_software_version,
                )
            conn.client_id = request.header.client_id
            if not conn.logged:
                conn.log()
            step = None if sasl is None else sasl.exchange(api_key, api_version, request.message)
            if step is not None:
                if not await self._sasl_reply(writer, conn, step, api_version, correlation_id):
                    return
                continue
            fault = self.faults.take(api_key, self.node_id) if self.faults else None
            if fault is not None:
                if fault.delay_ms:
                    await asyncio.sleep(fault.delay_ms / 1000.0)
                if fault.error == DISCONNECT:
                    log.info("closing %s: injected disconnect (API key %d)", conn.address, api_key)
                    return
                if fault.error is not None:
                    error = ErrorCode(int(fault.error))
                    response = error_response(api_key, api_version, request.message, error)
                    await self._send(writer, response, api_version, correlation_id, conn)
                    continue
            try:
                outcome, parked = await self._outcome(conn, ctx, request.message)
                # metrics and quotas: sets throttle_time_ms, returns how long to mute (_metrics)
                mute_ms = self.metrics.request(
                    conn, ctx, request.message, outcome, size, started, parked
                )
                if outcome is None:
                    continue
                if outcome is CLOSE_CONNECTION:
                    log.info("closing %s: a request without response failed", conn.address)
                    return
                await self._send(writer, outcome, api_version, correlation_id, conn)
            finally:
                # the one place what the request holds goes back (a Fetch's FileRecords), its
                # response written or not: a handler or encoding that raised, a client gone
                # mid-send, a broker stopping
                ctx.release()

    async def _outcome(
        self, conn: _Connection, ctx: RequestContext, message: Any
    ) -> tuple[Any, int]:
        """The request's outcome (a parked one waited for) and the nanoseconds it was parked."""
        api_key, api_version = ctx.api_key, ctx.api_version
        conn.handling = True
        parked = 0
        try:
            await self._work_ahead(ctx, message)
            outcome = dispatch(self.state, ctx, message)
            if isinstance(outcome, Deferred):
                parked = time.perf_counter_ns()
                outcome = await self._wait(outcome)
                parked = time.perf_counter_ns() - parked
        except KafkaStorageError:
            # The log directory is offline: KafkaApis.handleError answers the request's error
            # response (the connection stays open), the coordinators NOT_COORDINATOR.
            outcome = error_response(api_key, api_version, message, storage_error(api_key, message))
        except Exception:
            # A bug: KafkaApis.handle logs it and answers the request's error response with
            # UNKNOWN_SERVER_ERROR (Errors.forException), the connection staying open; a
            # Produce with acks=0 has no response (ProduceRequest.getErrorResponse: null),
            # so its connection is closed instead.
            log.exception(
                "unexpected error handling %s v%d from %s",
                type(message).__name__,
                api_version,
                conn.address,
            )
            if api_key == PRODUCE and getattr(message, "acks", None) == 0:
                outcome = CLOSE_CONNECTION
            else:
                outcome = error_response(
                    api_key, api_version, message, ErrorCode.UNKNOWN_SERVER_ERROR
                )
        finally:
            conn.handling = False
            conn.last_active = time.monotonic()
        return outcome, parked

    async def _work_ahead(self, ctx: RequestContext, message: Any) -> None:
        """Run a request's costly pure work (a Produce's compressed records: decompression and
        the record walk) ahead of the handler, which finds the results in ``ctx.validated``.

        Records that decompress to at most ``INLINE_VALIDATION_BYTES`` are validated here, on
        the loop: handing them to a worker thread costs more than the work (two thread switches
        and a wake-up of the loop, measured at 2-4x the CPU of a 16 KiB batch's validation). The
        rest, and any batch that exceeds that budget part-way, go to the worker pool (Kafka's
        request handler threads), so other connections are served meanwhile."""
        if ctx.api_key != PRODUCE:
            return
        from kwire.broker._data import validation_jobs  # with the first Produce: start loads less

        jobs = validation_jobs(self.state, ctx, message)
        if not jobs:
            return
        validated = {key: job(INLINE_VALIDATION_BYTES) for key, job in jobs}
        heavy = [(key, job) for key, job in jobs if validated[key] is None]
        if heavy:
            loop = asyncio.get_running_loop()
            pool = self._pool()
            results = await asyncio.gather(*(loop.run_in_executor(pool, job) for _, job in heavy))
            validated.update((key, result) for (key, _), result in zip(heavy, results, strict=True))
        ctx.validated = validated

    def _pool(self) -> concurrent.futures.ThreadPoolExecutor:
        if self._workers is None:
            self._workers = concurrent.futures.ThreadPoolExecutor(
                max_workers=self.state.broker_int("num.io.threads"),
                thread_name_prefix=f"kwire-io-{self.node_id}",
                initializer=_lower_priority,
            )
        return self._workers

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
                task = asyncio.current_task()
                if task is not None and task.cancelling():
                    # Python 3.11's wait_for loses a cancel that races the event (gh-86296):
                    # without this the parked request waits on and a stopping broker hangs
                    raise asyncio.CancelledError
                if event.is_set():
                    result = deferred.complete(False)
                    if result is not None:
                        return result
        finally:
            self._waiters.remove(deferred.keys, event)

    async def _send(
        self,
        writer: _Channel,
        message: Any,
        version: int,
        correlation_id: int,
        conn: _Connection | None = None,
    ) -> None:
        _, pieces = encode_response_pieces(message, version, correlation_id)
        if len(pieces) == 1:  # no segment bytes to send (every response but a Fetch's, mostly)
            writer.write(pieces[0])  # type: ignore[arg-type]  # the one piece is bytes
            await writer.drain()
            if conn is not None:
                conn.last_active = time.monotonic()
            return
        loop = asyncio.get_running_loop()

        def progressed() -> None:
            if conn is not None:
                conn.last_active = time.monotonic()

        # the FileRecords' descriptors are the request's to release (_requests), sent or not
        for piece in pieces:
            if isinstance(piece, ConvertedRecords):
                for chunk in piece.chunks():  # one converted chunk in memory at a time
                    writer.write(chunk)
                    await writer.drain()
                    progressed()
            elif isinstance(piece, FileRecords):
                await writer.drain()
                for s in piece.slices:
                    await _sendfile(loop, writer, s.fd, s.position, s.size, progressed)
            else:
                writer.write(piece)
        await writer.drain()
        progressed()


def _lower_priority() -> None:
    """A worker thread yields the CPU to the event loop's thread: what a worker does is one
    connection's costly work, what the loop does is every connection's I/O (on Linux a thread
    has its own nice value; elsewhere this does nothing)."""
    with contextlib.suppress(AttributeError, OSError):
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), _WORKER_NICE)


#: How much lower than the loop's the workers' scheduling priority is (nice levels).
_WORKER_NICE: Final = 10


#: Group and transaction coordinator APIs: an append to their internal topic that fails with
#: KAFKA_STORAGE_ERROR answers NOT_COORDINATOR (GroupMetadataManager.storeOffsets / storeGroup,
#: TransactionStateManager.appendTransactionToLog), so the client looks for the coordinator again.
_COORDINATOR_APIS: Final = frozenset({8, 11, 13, 14, 24, 25, 26, 28, 42, 47, 68})
_INIT_PRODUCER_ID: Final = 22


def storage_error(api_key: int, request: Any) -> ErrorCode:
    """The error a request answers when the log directory is offline."""
    if api_key in _COORDINATOR_APIS or (
        api_key == _INIT_PRODUCER_ID and getattr(request, "transactional_id", None) is not None
    ):
        return ErrorCode.NOT_COORDINATOR
    return ErrorCode.KAFKA_STORAGE_ERROR


async def housekeep(state: BrokerState) -> None:
    """Kafka's scheduled tasks: coordinator timers (every 100 ms), deletes of retired segment
    files and flushes (every second; ``segment.ms`` rolls only on append), retention (``log.retention.check.interval.ms``), high-watermark
    checkpoints (``replica.high.watermark.checkpoint.interval.ms``)."""
    tick = 0.1
    retention_every = state.broker_int("log.retention.check.interval.ms") / 1000.0
    # the high watermarks the kafka-log streaming source reads as its end (Kafka: 5000 ms)
    checkpoint_every = state.broker_int("replica.high.watermark.checkpoint.interval.ms") / 1000.0
    elapsed = since_logs = since_checkpoint = since_retention = 0.0
    while True:
        await asyncio.sleep(tick)
        elapsed += tick
        try:
            state.run_tickers()
            if elapsed - since_checkpoint >= checkpoint_every - 1e-9:
                since_checkpoint = elapsed
                state.write_checkpoints()
            if elapsed - since_logs < 1.0:
                continue
            since_logs = elapsed
            now = state.now_ms()
            for partition in state.iter_partitions():
                partition.log.delete_pending_files(now)
                partition.log.maybe_flush(now)
            if elapsed - since_retention >= retention_every:
                since_retention = elapsed
                for partition in state.iter_partitions():
                    partition.log.enforce_retention(now)
        except Exception:
            log.exception("housekeeping failed")


_TLS_CHUNK: Final = 1 << 16


#: Bytes per ``sendfile`` call: between calls the connection is marked active.
_SENDFILE_STEP: Final = 1 << 20


async def _sendfile(
    loop: asyncio.AbstractEventLoop,
    writer: _Channel,
    fd: int,
    offset: int,
    count: int,
    progressed: Callable[[], None],
) -> None:
    """``sendfile`` a slice of a segment (a plain copy only where the transport cannot)."""
    if writer.get_extra_info("ssl_object") is not None:
        # TLS encrypts in user space, so the bytes must pass through Python: read and write
        # in chunks (asyncio's own sendfile fallback swaps the SSL transport's protocol and
        # loses the connection).
        while count > 0:
            chunk = os.pread(fd, min(count, _TLS_CHUNK), offset)
            if not chunk:
                raise ConnectionError(f"segment ended {count} bytes early")
            writer.write(chunk)
            await writer.drain()
            progressed()
            offset += len(chunk)
            count -= len(chunk)
        return
    with os.fdopen(os.dup(fd), "rb", buffering=0) as file:
        while count > 0:
            step = min(count, _SENDFILE_STEP)
            sent = await loop.sendfile(writer.transport, file, offset, step, fallback=True)
            if sent != step:
                raise ConnectionError(f"sent {sent} of {step} record bytes")
            progressed()
            offset += step
            count -= step


class _Connection:
    """What the broker logs about a client connection (one line each)."""

    def __init__(self, address: str, listener: Listener) -> None:
        self.address = address
        self.listener = listener
        self.principal = ANONYMOUS
        self.sasl: SaslAuthenticator | None = None
        self.client_id: str | None = None
        self.software: tuple[str, str] | None = None
        self.requests = 0
        self.logged = False
        self.last_active = time.monotonic()  # the last byte in or out
        self.handling = False  # a request of this connection is with the broker
        self.expired = False  # closed by the broker without waiting for unsent output
        self.channel: _Channel | None = None
        self.transport: asyncio.WriteTransport | None = None

    def stats(self) -> dict[str, Any]:
        transport, channel = self.transport, self.channel
        output = (
            transport.get_write_buffer_size()
            if transport is not None and not transport.is_closing()
            else 0
        )
        return {
            "address": self.address,
            "requests": self.requests,
            "output": output,
            "input": channel.wire.buffered if channel is not None else 0,
        }

    def log(self) -> None:
        self.logged = True
        software = f" software={self.software[0]}/{self.software[1]}" if self.software else ""
        log.info("connection from %s client_id=%s%s", self.address, self.client_id, software)


class _Channel(asyncio.BufferedProtocol):
    """asyncio's side of one connection: the transport reads into the ``FrameReader``'s
    buffers (``recv_into``, no intermediate copy), reading pauses while the connection holds
    all it may read ahead, and the server task reads frames and writes responses through it
    with the calls of a ``StreamWriter`` (``write``, ``drain``, ``close``)."""

    def __init__(self, server: KafkaServer, listener: Listener, tls: bool) -> None:
        self.server = server
        self.listener = listener
        self.wire = FrameReader()  # kwire.protocol's frame cutter, the client's too
        self.conn: _Connection | None = None
        self.transport: asyncio.Transport = None  # type: ignore[assignment]  # set on connect
        self._tls = tls
        self._loop = asyncio.get_running_loop()
        self._reading_paused = False
        self._writing_paused = False
        self._eof = False
        self._lost: BaseException | None = None
        self._gone = False
        self._data: asyncio.Future[None] | None = None  # the server task waiting for bytes
        self._drained: asyncio.Future[None] | None = None  # ... for the output to drain
        self._closed: asyncio.Future[None] = self._loop.create_future()

    # --- asyncio.BufferedProtocol ----------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        # tracked from its creation, so a broker that stops before the task first runs still
        # cancels and awaits it (not a pending task destroyed with the loop)
        task = self._loop.create_task(self.server._serve(self.listener, self))
        self.server._connections.add(task)

    def get_buffer(self, sizehint: int) -> memoryview:
        return self.wire.get_buffer()

    def buffer_updated(self, nbytes: int) -> None:
        self.wire.buffer_updated(nbytes)
        if self.conn is not None:
            self.conn.last_active = time.monotonic()  # a request still arriving is not idle
        if not self.wire.wants_data and not self._reading_paused:
            self._reading_paused = True
            self.transport.pause_reading()
        self._wake_reader()

    def eof_received(self) -> bool:
        self._eof = True
        self._wake_reader()
        # keep a plain socket open to send the last response (a client that half-closes after
        # its request); the ssl transport closes on its own
        return not self._tls

    def connection_lost(self, exc: Exception | None) -> None:
        self._gone = True
        self._lost = exc
        self._wake_reader()
        waiter, self._drained = self._drained, None
        if waiter is not None and not waiter.done():
            waiter.set_exception(exc or ConnectionResetError("connection lost"))
        if not self._closed.done():
            self._closed.set_result(None)

    def pause_writing(self) -> None:
        self._writing_paused = True

    def resume_writing(self) -> None:
        self._writing_paused = False
        waiter, self._drained = self._drained, None
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    # --- the server task's side ----------------------------------------------------------------

    async def read_frame(self, limit: int) -> bytearray:
        """The next request frame; ``FrameSizeError`` above ``limit``; ``IncompleteReadError``
        when the client closed first (between requests or in the middle of one)."""
        while True:
            frame = self.wire.next_frame(limit)
            if self._reading_paused and self.wire.wants_data and not self._gone:
                self._reading_paused = False
                self.transport.resume_reading()
            if frame is not None:
                return frame
            if self._eof or self._gone:
                raise asyncio.IncompleteReadError(b"", None)
            self._data = self._loop.create_future()
            try:
                await self._data
            finally:
                self._data = None

    def _wake_reader(self) -> None:
        waiter = self._data
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.transport.write(data)

    async def drain(self) -> None:
        if self._gone:
            raise self._lost or ConnectionResetError("connection lost")
        if self.transport.is_closing():
            await asyncio.sleep(0)  # let connection_lost run, as StreamWriter.drain does
            if self._gone:
                raise self._lost or ConnectionResetError("connection lost")
        if not self._writing_paused:
            return
        waiter = self._drained
        if waiter is None or waiter.done():
            waiter = self._drained = self._loop.create_future()
        await waiter

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self.transport.get_extra_info(name, default)

    def close(self) -> None:
        self.transport.close()

    async def wait_closed(self) -> None:
        await self._closed


def _refused_size(size: int, setting: str, limit: int) -> str:
    """Why a frame's size prefix was refused, with what the bytes likely were: Kafka's
    ``NetworkReceive`` says only "Invalid receive (size = N)", which leaves a user who pointed
    curl or a TLS client at the port reading a size of a billion bytes."""
    head = _SIZE.pack(size)
    if head[:2] == b"\x16\x03":  # a TLS record header: handshake, SSL 3.0 / TLS 1.x
        likely = " (a TLS handshake? this listener does not use TLS)"
    elif head.rstrip(b" ").isalpha() and head.isupper():  # "GET ", "POST", "HEAD", "PUT "
        likely = " (an HTTP request? this port speaks Kafka's protocol, not HTTP)"
    else:
        likely = ""
    if size < 0:
        return f"invalid request size {size}{likely}"
    return f"request of {size} bytes exceeds {setting} ({limit}){likely}"
