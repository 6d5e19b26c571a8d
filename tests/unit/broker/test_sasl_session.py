"""KIP-368 session lifetimes on every SASL path, as Kafka's ``SaslServerAuthenticator``
(``ReauthInfo.calcCompletionTimesAndReturnSessionLifetimeMs``) computes them: whenever an exchange
completes (SaslAuthenticate of any version, or the raw tokens after a SaslHandshake v0), the
session lasts ``connections.max.reauth.ms``, cut to the credential's own lifetime where it has one
(an OAUTHBEARER token's ``exp``), and the credential's lifetime alone when the config is 0."""

from __future__ import annotations

import base64
import json
import socket
import struct
from pathlib import Path
from typing import Any

import pytest

from kwire.broker import Broker, ManualClock
from kwire.broker._sasl import SaslAuthenticator, SaslConfig
from kwire.protocol import message_class

NOW = 1_700_000_000_000
HANDSHAKE = message_class("SaslHandshakeRequest")
AUTHENTICATE = message_class("SaslAuthenticateRequest")
PLAIN = b"\0alice\0alice-secret"


def authenticator(reauth_ms: int, clock: list[int]) -> SaslAuthenticator:
    config = SaslConfig.from_config(
        {
            "sasl.enabled.mechanisms": "PLAIN,OAUTHBEARER",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": (
                "org.apache.kafka.common.security.plain.PlainLoginModule required "
                'user_alice="alice-secret";'
            ),
            "connections.max.reauth.ms": str(reauth_ms),
        },
        "SASL_PLAINTEXT",
    )
    return SaslAuthenticator(config, lambda u, m: None, lambda: clock[0])


def oauth(lifetime_s: int) -> bytes:
    def b64(doc: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(doc).encode()).decode().rstrip("=")

    token = f"{b64({'alg': 'none'})}.{b64({'sub': 'svc', 'exp': NOW // 1000 + lifetime_s})}."
    return f"n,,\x01auth=Bearer {token}\x01\x01".encode()


def complete(auth: SaslAuthenticator, path: str, mechanism: str, token: bytes) -> int | None:
    """Authenticates along ``path``; the session lifetime the client was told (None: no field)."""
    if path == "raw":
        auth.handshake(0, HANDSHAKE(mechanism=mechanism))
        step = auth.raw_token(token)
        assert not step.close
        lifetime = None
    else:
        version = int(path[-1])
        auth.handshake(1, HANDSHAKE(mechanism=mechanism))
        step = auth.authenticate(version, AUTHENTICATE(auth_bytes=token))
        assert step.response.error_code == 0
        lifetime = step.response.session_lifetime_ms if version >= 1 else None
    assert auth.authenticated
    return lifetime


PATHS = ["raw", "authenticate-v0", "authenticate-v1", "authenticate-v2"]


@pytest.mark.parametrize("path", PATHS)
def test_connections_max_reauth_ms_bounds_every_path(path: str) -> None:
    clock = [NOW]
    auth = authenticator(10_000, clock)
    lifetime = complete(auth, path, "PLAIN", PLAIN)
    assert lifetime in (None, 10_000)
    clock[0] += 9_999
    assert not auth.expired()
    clock[0] += 1
    assert auth.expired()


@pytest.mark.parametrize("path", PATHS)
def test_an_oauth_token_ends_its_session_without_reauth_config(path: str) -> None:
    clock = [NOW]
    auth = authenticator(0, clock)
    lifetime = complete(auth, path, "OAUTHBEARER", oauth(60))
    assert lifetime in (None, 60_000)
    clock[0] += 59_999
    assert not auth.expired()
    clock[0] += 1
    assert auth.expired()


@pytest.mark.parametrize("path", PATHS)
def test_the_shorter_of_token_and_config(path: str) -> None:
    clock = [NOW]
    auth = authenticator(30_000, clock)
    assert complete(auth, path, "OAUTHBEARER", oauth(60)) in (None, 30_000)
    clock[0] += 30_000
    assert auth.expired()


@pytest.mark.parametrize("path", PATHS)
def test_no_lifetime_without_config_or_credential_expiry(path: str) -> None:
    clock = [NOW]
    auth = authenticator(0, clock)
    assert complete(auth, path, "PLAIN", PLAIN) in (None, 0)
    clock[0] += 10 * 365 * 86_400_000
    assert not auth.expired()


def test_reauthentication_restarts_the_session() -> None:
    clock = [NOW]
    auth = authenticator(0, clock)
    assert complete(auth, "authenticate-v2", "OAUTHBEARER", oauth(60)) == 60_000
    clock[0] += 50_000
    assert auth.handshake(1, HANDSHAKE(mechanism="OAUTHBEARER")).response.error_code == 0
    step = auth.authenticate(2, AUTHENTICATE(auth_bytes=oauth(120)))
    assert step.response.error_code == 0
    assert step.response.session_lifetime_ms == 70_000  # the new token's exp, from now
    clock[0] += 69_999
    assert not auth.expired()
    clock[0] += 1
    assert auth.expired()


# --- on a listener: a connection past its session is closed ------------------------------------


def _frame(api_key: int, version: int, body: bytes, correlation_id: int) -> bytes:
    header = struct.pack(">hhih", api_key, version, correlation_id, 4) + b"test"
    return struct.pack(">i", len(header) + len(body)) + header + body


def _reply(sock: socket.socket) -> bytes | None:
    """One size-prefixed reply, or None when the broker closed the connection."""
    data = b""
    while len(data) < 4:
        chunk = sock.recv(4 - len(data))
        if not chunk:
            return None
        data += chunk
    (size,) = struct.unpack(">i", data)
    body = b""
    while len(body) < size:
        chunk = sock.recv(size - len(body))
        if not chunk:
            return None
        body += chunk
    return body


def test_a_raw_token_session_is_closed_when_it_ends(tmp_path: Path) -> None:
    """SaslHandshake v0 and a raw PLAIN token (the pre-KIP-152 exchange), then Metadata requests:
    served within ``connections.max.reauth.ms``, the connection closed after it."""
    clock = ManualClock(NOW)
    config = {
        "listeners": "SASL_PLAINTEXT://127.0.0.1:0",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": 'user_alice="alice-secret";',
        "connections.max.reauth.ms": "10000",
    }
    metadata = _frame(3, 1, struct.pack(">i", -1), 3)  # Metadata v1, all topics
    with Broker(tmp_path / "data", config=config, clock=clock) as broker:
        host, port = broker.bootstrap.rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            sock.sendall(_frame(17, 0, struct.pack(">h", 5) + b"PLAIN", 1))
            handshake = _reply(sock)
            assert handshake is not None and handshake[4:6] == b"\0\0"
            sock.sendall(struct.pack(">i", len(PLAIN)) + PLAIN)
            assert _reply(sock) == b""  # PLAIN's empty final token
            sock.sendall(metadata)
            assert _reply(sock) is not None
            clock.advance(10_000)
            sock.sendall(metadata)
            assert _reply(sock) is None
