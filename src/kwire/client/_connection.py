"""One connection to one broker, on asyncio: the I/O edge of the client.

Frames are encoded and matched to their requests by the protocol layer's sans-IO
``ClientConnection``; this module only moves bytes. Opening a connection negotiates versions:
ApiVersions v3 (a broker that does not know v3 answers v0 with UNSUPPORTED_VERSION and its own
range, KIP-511, and is asked again), and a broker that closes the connection instead (no
ApiVersions API: Kafka before 0.10.0) is reconnected to and spoken to with the
``broker.version.fallback`` table.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from kwire.client._config import ClientConfig
from kwire.client._errors import ClientError, ConnectionClosed, KafkaApiError
from kwire.client._sasl import SaslCredentials, sasl_tokens
from kwire.client._versions import ApiVersionTable, fallback_versions, versions_from_response
from kwire.protocol import ClientConnection, ErrorCode, message_class

__all__ = ["BrokerConnection"]

_API_VERSIONS = message_class("ApiVersionsRequest")


class BrokerConnection:
    """Requests to one broker; several may be in flight, answered in order."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        config: ClientConfig,
        address: str,
    ) -> None:
        self._reader = reader
        self._writer = writer
        self._config = config
        self.address = address
        self._protocol = ClientConnection(config.client_id)
        self._waiters: dict[int, asyncio.Future[Any]] = {}
        self._closed: BaseException | None = None
        self._task = asyncio.get_running_loop().create_task(self._read_loop())
        self.versions = ApiVersionTable({18: (0, 0)}, source="not negotiated")

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
        try:
            reader, writer = await asyncio.wait_for(
                asyncio.open_connection(
                    host, port, ssl=context, server_hostname=host if context else None
                ),
                timeout,
            )
        except (OSError, TimeoutError) as exc:
            raise ConnectionClosed(f"cannot connect to {host}:{port}: {exc}") from exc
        return cls(reader, writer, config, f"{host}:{port}")

    async def _negotiate(self) -> ApiVersionTable:
        request = _API_VERSIONS(client_software_name="kwire", client_software_version="0")
        top = _API_VERSIONS.MAX_VERSION
        response = await self.request(request, top, check=False)
        if response.error_code == ErrorCode.UNSUPPORTED_VERSION:
            theirs = {k.api_key: k.max_version for k in response.api_keys}
            version = min(top, theirs.get(18, 0))
            response = await self.request(request, version, check=False)
        if response.error_code != ErrorCode.NONE:
            raise KafkaApiError(ErrorCode(response.error_code), f"ApiVersions to {self.address}")
        return versions_from_response(response)

    async def _authenticate(self, credentials: SaslCredentials) -> None:
        """SaslHandshake v1, then the mechanism's tokens in SaslAuthenticate (KIP-152)."""
        handshake = message_class("SaslHandshakeRequest")
        if not self.versions.has(17) or self.versions.pick("SaslHandshakeRequest") < 1:
            raise ClientError(
                f"{self.address} has no SaslHandshake v1 (Kafka 1.0+): kwire.client does not "
                "speak SASL before it"
            )
        answer = await self.request(handshake(mechanism=credentials.mechanism), 1, check=False)
        if answer.error_code:
            raise KafkaApiError(
                ErrorCode(answer.error_code),
                f"SaslHandshake with {self.address}",
                f"the broker enables {', '.join(answer.mechanisms or []) or 'no mechanism'}",
            )
        authenticate = message_class("SaslAuthenticateRequest")
        version = self.versions.pick("SaslAuthenticateRequest")
        tokens = sasl_tokens(credentials)
        token = next(tokens)
        while True:
            answer = await self.request(authenticate(auth_bytes=token), version, check=False)
            if answer.error_code:
                raise KafkaApiError(
                    ErrorCode(answer.error_code),
                    f"SASL {credentials.mechanism} authentication of {credentials.username!r} "
                    f"with {self.address}",
                    answer.error_message,
                )
            try:
                token = tokens.send(bytes(answer.auth_bytes or b""))
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
        self._writer.write(frame)
        try:
            await self._writer.drain()
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

    async def _read_loop(self) -> None:
        try:
            while True:
                data = await self._reader.read(1 << 20)
                if not data:
                    raise ConnectionClosed(f"{self.address} closed the connection")
                self._protocol.receive_data(data)
                while (response := self._protocol.next_response()) is not None:
                    future = self._waiters.pop(response.correlation_id, None)
                    if future is not None and not future.done():
                        future.set_result(response.message)
        except asyncio.CancelledError:
            self._fail(ConnectionClosed("closed"))
            raise
        except BaseException as exc:
            self._fail(exc if isinstance(exc, ClientError) else ConnectionClosed(str(exc)))

    def _fail(self, exc: BaseException) -> None:
        if self._closed is None:
            self._closed = exc
        for future in self._waiters.values():
            if not future.done():
                future.set_exception(
                    exc if isinstance(exc, ClientError) else ConnectionClosed(str(exc))
                )
        self._waiters.clear()
        self._writer.close()

    @property
    def closed(self) -> bool:
        return self._closed is not None

    async def close(self) -> None:
        self._fail(ConnectionClosed("closed by the client"))
        self._task.cancel()
        with contextlib.suppress(BaseException):
            await self._task
        with contextlib.suppress(Exception):
            await self._writer.wait_closed()
