"""One connection to one broker, on asyncio: the I/O edge of the client.

Frames are encoded and matched to their requests by the protocol layer's sans-IO
``ClientConnection``; this module only moves bytes. Reading is an asyncio ``BufferedProtocol``
over the ``ClientConnection``'s in-place frame buffers: a fetch answer goes from the kernel into
a buffer of its own size once, and the records the client decodes are views of it.

Opening a connection negotiates versions: ApiVersions v3 (a broker that does not know v3 answers
v0 with UNSUPPORTED_VERSION and its own range, KIP-511, and is asked again), and a broker that
closes the connection instead (no ApiVersions API: Kafka before 0.10.0) is reconnected to and
spoken to with the ``broker.version.fallback`` table.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from kwire.client._config import ClientConfig
from kwire.client._errors import ClientError, ConnectionClosed, KafkaApiError
from kwire.client._sasl import SaslCredentials, sasl_tokens
from kwire.client._versions import ApiVersionTable, fallback_versions, versions_from_response
from kwire.protocol import ClientConnection, ErrorCode
from kwire.protocol.messages import ApiVersionsRequest

if TYPE_CHECKING:
    from kwire.protocol.messages import (
        ApiVersionsResponse,
        SaslAuthenticateResponse,
        SaslHandshakeResponse,
    )

__all__ = ["BrokerConnection"]


class _FrameProtocol(asyncio.BufferedProtocol):
    """The socket's edge: bytes into the ``ClientConnection``'s buffers, responses to waiters."""

    def __init__(self, client_id: str) -> None:
        self.connection = ClientConnection(client_id)
        self.transport: asyncio.Transport | None = None
        self.owner: BrokerConnection | None = None
        self._drained: asyncio.Future[None] | None = None  # set while writing is paused

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def get_buffer(self, sizehint: int) -> memoryview:
        return self.connection.receive_buffer()

    def buffer_updated(self, nbytes: int) -> None:
        try:
            self.connection.received_into(nbytes)
            while (response := self.connection.next_response()) is not None:
                if self.owner is not None:
                    self.owner._answered(response.correlation_id, response.message)
        except Exception as exc:  # a frame that does not parse: nothing after it can be trusted
            if self.owner is not None:
                self.owner._fail(ConnectionClosed(f"{self.owner.address}: {exc}"))

    def eof_received(self) -> bool:
        if self.owner is not None:
            self.owner._fail(ConnectionClosed(f"{self.owner.address} closed the connection"))
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        if self.owner is not None:
            reason = f": {exc}" if exc is not None else ""
            self.owner._fail(
                ConnectionClosed(f"{self.owner.address} closed the connection{reason}")
            )
        if self._drained is not None and not self._drained.done():
            self._drained.set_result(None)

    def pause_writing(self) -> None:
        if self._drained is None or self._drained.done():
            self._drained = asyncio.get_running_loop().create_future()

    def resume_writing(self) -> None:
        if self._drained is not None and not self._drained.done():
            self._drained.set_result(None)

    async def drain(self) -> None:
        if self._drained is not None and not self._drained.done():
            await asyncio.shield(self._drained)


class BrokerConnection:
    """Requests to one broker; several may be in flight, answered in order."""

    def __init__(self, protocol: _FrameProtocol, config: ClientConfig, address: str) -> None:
        assert protocol.transport is not None
        self._transport = protocol.transport
        self._config = config
        self.address = address
        self._frames = protocol
        self._protocol = protocol.connection
        self._waiters: dict[int, asyncio.Future[Any]] = {}
        self._closed: BaseException | None = None
        self.versions = ApiVersionTable({18: (0, 0)}, source="not negotiated")
        protocol.owner = self

    @classmethod
    async def open(cls, host: str, port: int, config: ClientConfig) -> BrokerConnection:
        conn = await cls._connect(host, port, config)
        try:
            conn.versions = await conn._negotiate()
            if config.sasl is not None:
                await conn._authenticate(config.sasl)
        except ConnectionClosed:
            await conn.close()
            # no ApiVersions API: a broker before 0.10.0 closes the connection on one
            conn = await cls._connect(host, port, config)
            conn.versions = fallback_versions(config.broker_version_fallback)
        except BaseException:
            await conn.close()
            raise
        return conn

    @classmethod
    async def _connect(cls, host: str, port: int, config: ClientConfig) -> BrokerConnection:
        timeout = config.request_timeout_ms / 1000
        context = config.ssl_context()
        loop = asyncio.get_running_loop()
        try:
            _, protocol = await asyncio.wait_for(
                loop.create_connection(
                    lambda: _FrameProtocol(config.client_id),
                    host,
                    port,
                    ssl=context,
                    server_hostname=host if context else None,
                ),
                timeout,
            )
        except (OSError, TimeoutError) as exc:
            raise ConnectionClosed(f"cannot connect to {host}:{port}: {exc}") from exc
        return cls(protocol, config, f"{host}:{port}")

    async def _negotiate(self) -> ApiVersionTable:
        request = ApiVersionsRequest(client_software_name="kwire", client_software_version="0")
        top = ApiVersionsRequest.MAX_VERSION
        response: ApiVersionsResponse = await self.request(request, top, check=False)
        if response.error_code == ErrorCode.UNSUPPORTED_VERSION:
            theirs = {k.api_key: k.max_version for k in response.api_keys}
            version = min(top, theirs.get(18, 0))
            response = await self.request(request, version, check=False)
        if response.error_code != ErrorCode.NONE:
            raise KafkaApiError(ErrorCode(response.error_code), f"ApiVersions to {self.address}")
        return versions_from_response(response)

    async def _authenticate(self, credentials: SaslCredentials) -> None:
        """SaslHandshake v1, then the mechanism's tokens in SaslAuthenticate (KIP-152)."""
        from kwire.protocol.messages import SaslAuthenticateRequest, SaslHandshakeRequest

        if not self.versions.has(17) or self.versions.pick("SaslHandshakeRequest") < 1:
            raise ClientError(
                f"{self.address} has no SaslHandshake v1 (Kafka 1.0+): kwire.client does not "
                "speak SASL before it"
            )
        answer: SaslHandshakeResponse = await self.request(
            SaslHandshakeRequest(mechanism=credentials.mechanism), 1, check=False
        )
        if answer.error_code:
            raise KafkaApiError(
                ErrorCode(answer.error_code),
                f"SaslHandshake with {self.address}",
                f"the broker enables {', '.join(answer.mechanisms or []) or 'no mechanism'}",
            )
        version = self.versions.pick("SaslAuthenticateRequest")
        tokens = sasl_tokens(credentials)
        token = next(tokens)
        while True:
            authenticated: SaslAuthenticateResponse = await self.request(
                SaslAuthenticateRequest(auth_bytes=token), version, check=False
            )
            if authenticated.error_code:
                raise KafkaApiError(
                    ErrorCode(authenticated.error_code),
                    f"SASL {credentials.mechanism} authentication of {credentials.username!r} "
                    f"with {self.address}",
                    authenticated.error_message,
                )
            try:
                token = tokens.send(bytes(authenticated.auth_bytes or b""))
            except StopIteration:
                return

    async def request(self, message: Any, version: int, *, check: bool = True) -> Any:
        """Send ``message`` at ``version`` and wait for its response message.

        ``check``: raise ``KafkaApiError`` for a top-level ``error_code`` (per-partition errors
        are the caller's to read).
        """
        if self._closed is not None:
            raise ConnectionClosed(f"connection to {self.address} is closed: {self._closed}")
        cid = self._protocol.next_correlation_id
        frame = self._protocol.send(message, version)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiters[cid] = future
        self._transport.write(frame)
        try:
            await self._frames.drain()
            response = await asyncio.wait_for(future, self._config.request_timeout_ms / 1000)
        except TimeoutError:
            self._fail(ClientError(f"request to {self.address} timed out"))
            raise ClientError(
                f"{type(message).__name__} v{version} to {self.address}: no response within "
                f"request.timeout.ms={self._config.request_timeout_ms}"
            ) from None
        except (ConnectionError, OSError) as exc:
            self._fail(exc)
            raise ConnectionClosed(f"connection to {self.address} lost: {exc}") from exc
        error = getattr(response, "error_code", 0)
        if check and error:
            name = type(message).__name__.removesuffix("Request")
            raise KafkaApiError(ErrorCode(error), f"{name} to {self.address}")
        return response

    def _answered(self, correlation_id: int, message: Any) -> None:
        future = self._waiters.pop(correlation_id, None)
        if future is not None and not future.done():
            future.set_result(message)

    def _fail(self, exc: BaseException) -> None:
        if self._closed is None:
            self._closed = exc
        for future in self._waiters.values():
            if not future.done():
                future.set_exception(
                    exc if isinstance(exc, ClientError) else ConnectionClosed(str(exc))
                )
        self._waiters.clear()
        self._transport.close()

    @property
    def closed(self) -> bool:
        return self._closed is not None

    async def close(self) -> None:
        self._fail(ConnectionClosed("closed by the client"))
        await asyncio.sleep(0)  # the transport's connection_lost runs on the next loop turn
