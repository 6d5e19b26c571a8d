"""One Kafka request over a fresh socket, with ``kwire.protocol``'s ``ClientConnection``: what the
tests that check a broker's answer byte for byte (not a client's reading of it) send.

``exchange("host:port" or a port on 127.0.0.1, message, version)`` is the decoded response, or
``AssertionError`` when the broker closes the connection first, ``TimeoutError`` after
``timeout`` seconds: every wait is bounded.
"""

from __future__ import annotations

import socket
import time
from typing import Any

from kwire.protocol import ClientConnection


def exchange(
    address: str | int, message: Any, version: int, *, timeout: float = 10.0, client_id: str = "raw"
) -> Any:
    host, port = ("127.0.0.1", address) if isinstance(address, int) else address.rsplit(":", 1)
    conn = ClientConnection(client_id)
    with socket.create_connection((host, int(port)), timeout=timeout) as sock:
        sock.sendall(conn.send(message, version))
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            response = conn.next_response()
            if response is not None:
                return response.message
            chunk = sock.recv(1 << 16)
            assert chunk, "closed by the broker"
            conn.receive_data(chunk)
    raise TimeoutError(f"no answer from {host}:{port} in {timeout} s")
