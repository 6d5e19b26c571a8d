"""SASL: the mechanisms (SCRAM against RFC 7677's vector, PLAIN, OAUTHBEARER's unsecured JWS), the
per-connection authenticator (Kafka's pre-auth gate, KIP-152 errors, KIP-368 sessions), SCRAM
credential APIs, and a SASL listener facing hostile bytes before authentication."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import random
import socket
import struct
from pathlib import Path
from typing import Any

import pytest

from kwire.broker import Broker
from kwire.broker._sasl import (
    OAuthBearerServer,
    PlainServer,
    SaslAuthenticationError,
    SaslAuthenticator,
    SaslConfig,
    ScramServer,
    ScramStore,
    scram_credential,
    scram_store,
)
from kwire.protocol import ErrorCode, message_class
from kwire.protocol._scram import salted_password

GENERIC = (
    "Authentication failed during authentication due to invalid credentials with SASL mechanism {}"
)


# --- SCRAM -------------------------------------------------------------------------------------


def test_scram_sha_256_rfc7677_vector() -> None:
    salt = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
    credential = scram_credential("SCRAM-SHA-256", "pencil", 4096, salt)
    server = ScramServer(
        "SCRAM-SHA-256",
        lambda user, mech: credential if user == "user" else None,
        nonce=lambda: "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0",
    )
    first = server.evaluate(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO")
    assert first == (
        b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
    )
    final = server.evaluate(
        b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
        b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
    )
    assert final == b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
    assert server.complete and server.authorization_id == "user"


def scram_client(
    mechanism: str, user: str, password: str, server: Any, extensions: str = ""
) -> bytes:
    """A SCRAM client (RFC 5802), as Kafka's ``ScramSaslClient``: the server's final message.
    ``server`` is anything with ``evaluate(bytes) -> bytes``; ``extensions``: ",k=v" appended to
    the client-first message (``tokenauth=true``)."""
    algorithm = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}[mechanism]
    bare = f"n={user},r=clientnonce123{extensions}"
    server_first = server.evaluate(("n,," + bare).encode()).decode()
    fields = dict(p.split("=", 1) for p in server_first.split(","))
    salted = salted_password(mechanism, password, base64.b64decode(fields["s"]), int(fields["i"]))
    without_proof = f"c=biws,r={fields['r']}"
    auth = f"{bare},{server_first},{without_proof}".encode()
    client_key = hmac.new(salted, b"Client Key", algorithm).digest()
    stored = hashlib.new(algorithm, client_key).digest()
    signature = hmac.new(stored, auth, algorithm).digest()
    proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
    final: bytes = server.evaluate(f"{without_proof},p={base64.b64encode(proof).decode()}".encode())
    return final


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scram_exchange_and_wrong_password(mechanism: str) -> None:
    credential = scram_credential(mechanism, "secret", 4096)
    lookup = {("alice", mechanism): credential}.get

    def find(user: str, mech: str) -> Any:
        return lookup((user, mech))

    server = ScramServer(mechanism, find)
    final = scram_client(mechanism, "alice", "secret", server)
    assert final.startswith(b"v=") and server.complete
    with pytest.raises(SaslAuthenticationError) as bad:
        scram_client(mechanism, "alice", "wrong", ScramServer(mechanism, find))
    assert bad.value.generic
    with pytest.raises(SaslAuthenticationError) as unknown:
        scram_client(mechanism, "mallory", "secret", ScramServer(mechanism, find))
    assert unknown.value.generic  # the same answer as a wrong password


@pytest.mark.parametrize(
    "message",
    [b"", b"garbage", b"y,,n=a,r=b", b"n,,n=,r=x", b"\xff\xfe", b"n,a=bob,n=alice,r=abc"],
)
def test_scram_rejects_malformed_first_messages(message: bytes) -> None:
    credential = scram_credential("SCRAM-SHA-512", "pw", 4096)
    server = ScramServer("SCRAM-SHA-512", lambda u, m: credential)
    with pytest.raises(SaslAuthenticationError):
        server.evaluate(message)


def test_scram_store_survives_a_restart(tmp_path: Path) -> None:
    from kwire.broker import implemented_versions, personality
    from kwire.broker._state import BrokerState

    def open_state() -> BrokerState:
        return BrokerState(tmp_path, personality=personality("4.3", implemented_versions()))

    state = open_state()
    credential = scram_credential("SCRAM-SHA-512", "not-in-the-log!", 8192)
    scram_store(state).put("alice", "SCRAM-SHA-512", credential)
    state.close()
    state = open_state()
    assert scram_store(state).get("alice", "SCRAM-SHA-512") == credential
    assert scram_store(state).get("alice", "SCRAM-SHA-256") is None
    state.close()
    assert not (tmp_path / "scram-credentials.json").exists()
    log = (tmp_path / "__cluster_metadata-0" / "00000000000000000000.log").read_bytes()
    assert b"not-in-the-log!" not in log
    assert credential.stored_key in log


def test_scram_store_in_memory() -> None:
    store = ScramStore.in_memory()
    credential = scram_credential("SCRAM-SHA-256", "pw", 4096)
    store.put("alice", "SCRAM-SHA-256", credential)
    assert store.credentials == {("alice", "SCRAM-SHA-256"): credential}
    assert store.get("alice", "SCRAM-SHA-512") is None
    assert store.get("alice", "PLAIN") is None
    assert not store.delete("alice", "SCRAM-SHA-512")
    assert store.delete("alice", "SCRAM-SHA-256")
    assert store.credentials == {}


# --- PLAIN -------------------------------------------------------------------------------------


def test_plain() -> None:
    users = {"alice": "alice-secret"}
    server = PlainServer(users)
    assert server.evaluate(b"\0alice\0alice-secret") == b""
    assert server.complete and server.authorization_id == "alice"
    assert PlainServer(users).evaluate(b"alice\0alice\0alice-secret") == b""
    for bad, message in [
        (b"\0alice\0wrong", "Authentication failed: Invalid username or password"),
        (b"\0bob\0alice-secret", "Authentication failed: Invalid username or password"),
        (b"\0alice", "Invalid SASL/PLAIN response: expected 3 tokens, got 2"),
        (b"\0\0pw", "Authentication failed: username not specified"),
        (
            b"bob\0alice\0alice-secret",
            "Authentication failed: Client requested an authorization id that is different "
            "from username",
        ),
    ]:
        with pytest.raises(SaslAuthenticationError, match=message):
            PlainServer(users).evaluate(bad)


# --- OAUTHBEARER ------------------------------------------------------------------------------

NOW = 1_700_000_000_000


def jws(claims: dict[str, Any], header: dict[str, Any] | None = None) -> str:
    def b64(doc: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(doc).encode()).decode().rstrip("=")

    return f"{b64(header or {'alg': 'none'})}.{b64(claims)}."


def oauth_message(token: str, authzid: str = "") -> bytes:
    return f"n,{'a=' + authzid if authzid else ''},\x01auth=Bearer {token}\x01\x01".encode()


def test_oauthbearer_unsecured_token() -> None:
    server = OAuthBearerServer({}, lambda: NOW)
    token = jws({"sub": "svc", "exp": NOW / 1000 + 60, "iat": NOW / 1000})
    assert server.evaluate(oauth_message(token, "svc")) == b""
    assert server.complete and server.authorization_id == "svc"
    assert server.expires_at_ms == NOW + 60_000


@pytest.mark.parametrize(
    "token",
    [
        jws({"sub": "svc", "exp": NOW / 1000 - 1}),  # expired
        jws({"sub": "svc"}),  # no exp
        jws({"exp": NOW / 1000 + 60}),  # no sub
        jws({"sub": "svc", "exp": NOW / 1000 + 60}, {"alg": "HS256"}),  # signed: not unsecured
        jws({"sub": "svc", "exp": NOW / 1000 + 60, "iat": NOW / 1000 + 30}),  # issued later
        "not-a-token",
    ],
)
def test_oauthbearer_invalid_tokens(token: str) -> None:
    server = OAuthBearerServer({}, lambda: NOW)
    challenge = json.loads(server.evaluate(oauth_message(token)))
    assert challenge["status"] == "invalid_token"
    with pytest.raises(SaslAuthenticationError):
        server.evaluate(b"\x01")  # the client's answer to the error challenge


def test_oauthbearer_scope_and_authzid() -> None:
    options = {"unsecuredValidatorRequiredScope": "kafka"}
    server = OAuthBearerServer(options, lambda: NOW)
    token = jws({"sub": "svc", "exp": NOW / 1000 + 60, "scope": "other"})
    assert json.loads(server.evaluate(oauth_message(token)))["status"] == "insufficient_scope"
    good = jws({"sub": "svc", "exp": NOW / 1000 + 60, "scope": ["kafka"]})
    assert OAuthBearerServer(options, lambda: NOW).evaluate(oauth_message(good)) == b""
    with pytest.raises(SaslAuthenticationError, match="different from the token's principal"):
        OAuthBearerServer(options, lambda: NOW).evaluate(oauth_message(good, "root"))


# --- the authenticator ------------------------------------------------------------------------

HANDSHAKE = message_class("SaslHandshakeRequest")
AUTHENTICATE = message_class("SaslAuthenticateRequest")


def authenticator(
    reauth_ms: int = 0, clock: list[int] | None = None, **extra: str
) -> SaslAuthenticator:
    now = clock or [NOW]
    config = SaslConfig.from_config(
        {
            "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512,OAUTHBEARER",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": (
                "org.apache.kafka.common.security.plain.PlainLoginModule required "
                'user_alice="alice-secret" user_bob="bob-secret";'
            ),
            "connections.max.reauth.ms": str(reauth_ms),
            **extra,
        },
        "SASL_PLAINTEXT",
    )
    return SaslAuthenticator(config, lambda u, m: None, lambda: now[0])


def test_gate_before_authentication() -> None:
    auth = authenticator()
    assert auth.admits(18) and auth.admits(17) and not auth.admits(3) and not auth.admits(36)
    auth.api_versions_seen()
    assert not auth.admits(18) and auth.admits(17)  # one ApiVersions, then the handshake
    step = auth.handshake(1, HANDSHAKE(mechanism="PLAIN"))
    assert step.response.error_code == 0 and not step.close
    assert step.response.mechanisms == ["PLAIN", "SCRAM-SHA-512", "OAUTHBEARER"]
    assert auth.admits(36) and not auth.admits(0) and not auth.admits(17)
    step = auth.authenticate(2, AUTHENTICATE(auth_bytes=b"\0alice\0alice-secret"))
    assert step.response.error_code == 0 and not step.close
    assert auth.authenticated and auth.principal == "User:alice"
    assert step.response.session_lifetime_ms == 0
    assert auth.admits(0) and auth.admits(3)


def test_unsupported_mechanism_closes() -> None:
    auth = authenticator()
    step = auth.handshake(1, HANDSHAKE(mechanism="GSSAPI"))
    assert step.response.error_code == ErrorCode.UNSUPPORTED_SASL_MECHANISM and step.close


def test_failed_authentication_answers_then_closes() -> None:
    auth = authenticator()
    auth.handshake(1, HANDSHAKE(mechanism="SCRAM-SHA-512"))
    step = auth.authenticate(2, AUTHENTICATE(auth_bytes=b"n,,n=alice,r=abc"))
    assert step.close and step.delay_ms == 100  # connection.failed.authentication.delay.ms
    assert step.response.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
    assert step.response.error_message == GENERIC.format("SCRAM-SHA-512")
    assert not auth.authenticated and not auth.admits(36)


def test_raw_tokens_after_handshake_v0() -> None:
    auth = authenticator()
    auth.handshake(0, HANDSHAKE(mechanism="PLAIN"))
    assert auth.raw_tokens
    step = auth.raw_token(b"\0bob\0bob-secret")
    assert step.response == b"" and not step.close and auth.principal == "User:bob"
    assert not auth.raw_tokens
    bad = authenticator()
    bad.handshake(0, HANDSHAKE(mechanism="PLAIN"))
    assert bad.raw_token(b"\0bob\0nope").close


def test_reauthentication_kip_368() -> None:
    clock = [NOW]
    auth = authenticator(reauth_ms=10_000, clock=clock)
    auth.handshake(1, HANDSHAKE(mechanism="PLAIN"))
    step = auth.authenticate(1, AUTHENTICATE(auth_bytes=b"\0alice\0alice-secret"))
    assert step.response.session_lifetime_ms == 10_000
    clock[0] += 9_000
    assert not auth.expired()
    assert auth.handshake(1, HANDSHAKE(mechanism="PLAIN")).response.error_code == 0
    step = auth.authenticate(1, AUTHENTICATE(auth_bytes=b"\0alice\0alice-secret"))
    assert step.response.error_code == 0 and step.response.session_lifetime_ms == 10_000
    clock[0] += 10_001
    assert auth.expired()
    # A re-authentication as someone else fails.
    other = authenticator(reauth_ms=10_000, clock=clock)
    other.handshake(1, HANDSHAKE(mechanism="PLAIN"))
    other.authenticate(1, AUTHENTICATE(auth_bytes=b"\0alice\0alice-secret"))
    other.handshake(1, HANDSHAKE(mechanism="PLAIN"))
    step = other.authenticate(1, AUTHENTICATE(auth_bytes=b"\0bob\0bob-secret"))
    assert step.close and "Cannot change principals" in step.response.error_message


def test_oauth_session_ends_with_the_token() -> None:
    clock = [NOW]
    auth = authenticator(reauth_ms=3_600_000, clock=clock)
    auth.handshake(1, HANDSHAKE(mechanism="OAUTHBEARER"))
    token = jws({"sub": "svc", "exp": NOW / 1000 + 60})
    step = auth.authenticate(1, AUTHENTICATE(auth_bytes=oauth_message(token)))
    assert step.response.session_lifetime_ms == 60_000 and auth.principal == "User:svc"


# --- a SASL listener against hostile clients ---------------------------------------------------


def frame(api_key: int, version: int, body: bytes, correlation_id: int = 1) -> bytes:
    header = struct.pack(">hhih", api_key, version, correlation_id, 4) + b"test"
    payload = header + body
    return struct.pack(">i", len(payload)) + payload


def closed(sock: socket.socket) -> bool:
    sock.settimeout(5)
    try:
        while True:
            data = sock.recv(65536)
            if not data:
                return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except TimeoutError:
        return False


@pytest.fixture
def sasl_broker(tmp_path: Path) -> Any:
    config = {
        "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": 'user_alice="alice-secret";',
    }
    with Broker(tmp_path / "data", config=config) as broker:
        yield broker


def connect(broker: Any) -> socket.socket:
    host, port = broker.bootstrap_for("SASL_PLAINTEXT").rsplit(":", 1)
    return socket.create_connection((host, int(port)), timeout=5)


def test_listener_closes_requests_before_authentication(sasl_broker: Any) -> None:
    with connect(sasl_broker) as sock:
        sock.sendall(frame(3, 1, struct.pack(">i", -1)))  # Metadata v1, all topics
        assert closed(sock)
    with connect(sasl_broker) as sock:  # larger than sasl.server.max.receive.size: closed
        sock.sendall(struct.pack(">i", 524289) + b"\0" * 1024)
        assert closed(sock)


def test_listener_survives_fuzzed_sasl_exchanges(sasl_broker: Any) -> None:
    rng = random.Random(7)
    for i in range(60):
        with connect(sasl_broker) as sock:
            mechanism = rng.choice([b"PLAIN", b"SCRAM-SHA-512", b"SCRAM-SHA-256", b"X" * 40])
            handshake = struct.pack(">h", len(mechanism)) + mechanism
            try:
                sock.sendall(frame(17, 1, handshake, i))
                token = rng.randbytes(rng.randrange(0, 300))
                body = struct.pack(">i", len(token)) + token
                if i % 3 == 0:
                    body = rng.randbytes(rng.randrange(0, 40))  # not even a request body
                sock.sendall(frame(36, 1, body, i + 1))
            except OSError:
                pass
            closed(sock)
    # The broker still serves everyone: the PLAINTEXT listener and a good SASL login.
    assert sasl_broker.create_topic("after-fuzz").name == "after-fuzz"
    with connect(sasl_broker) as sock:
        sock.sendall(frame(17, 1, struct.pack(">h", 5) + b"PLAIN"))
        sock.settimeout(5)
        size = struct.unpack(">i", sock.recv(4))[0]
        assert size > 0
        sock.recv(size)
        token = b"\0alice\0alice-secret"
        sock.sendall(frame(36, 1, struct.pack(">i", len(token)) + token, 2))
        size = struct.unpack(">i", sock.recv(4))[0]
        reply = sock.recv(size)
        assert reply[4:6] == b"\0\0"  # error_code NONE after the correlation id


def test_scram_credentials_apis(tmp_path: Path) -> None:
    from kwire.broker import RequestContext, implemented_versions, personality
    from kwire.broker._sasl import (
        handle_alter_user_scram_credentials,
        handle_describe_user_scram_credentials,
    )
    from kwire.broker._state import BrokerState
    from kwire.protocol import struct_class

    state = BrokerState(tmp_path, personality=personality("4.3", implemented_versions()))
    ctx = RequestContext(api_key=51, api_version=0, correlation_id=1, client_id="t")
    alter = message_class("AlterUserScramCredentialsRequest")
    up = struct_class(alter, "upsertions")
    delete = struct_class(alter, "deletions")
    salt = b"salt" * 4
    salted = salted_password("SCRAM-SHA-512", "pw", salt, 4096)
    response = handle_alter_user_scram_credentials(
        state,
        ctx,
        alter(
            deletions=[delete(name="ghost", mechanism=2)],
            upsertions=[
                up(name="alice", mechanism=2, iterations=4096, salt=salt, salted_password=salted),
                up(name="bob", mechanism=2, iterations=100, salt=salt, salted_password=salted),
                up(name="carol", mechanism=9, iterations=4096, salt=salt, salted_password=salted),
            ],
        ),
    )
    errors = {r.user: r.error_code for r in response.results}
    assert errors == {
        "ghost": ErrorCode.RESOURCE_NOT_FOUND,
        "alice": 0,
        "bob": ErrorCode.UNACCEPTABLE_CREDENTIAL,
        "carol": ErrorCode.UNSUPPORTED_SASL_MECHANISM,
    }
    describe = message_class("DescribeUserScramCredentialsRequest")
    found = handle_describe_user_scram_credentials(state, ctx, describe(users=None))
    assert [
        (r.user, [(c.mechanism, c.iterations) for c in r.credential_infos]) for r in found.results
    ] == [("alice", [(2, 4096)])]
    # What AlterUserScramCredentials stored authenticates the password it was salted from, after
    # a restart too.
    state.close()
    state = BrokerState(tmp_path, personality=personality("4.3", implemented_versions()))
    server = ScramServer("SCRAM-SHA-512", scram_store(state).get)
    assert scram_client("SCRAM-SHA-512", "alice", "pw", server).startswith(b"v=")
    state.close()
