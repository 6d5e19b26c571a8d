"""Delegation tokens (KIP-48, APIs 38-41) through the wire codecs and the handlers, and SCRAM
authentication with a token (``tokenauth=true``).

Kafka's rules (``DelegationTokenControlManager``, ``ControllerApis.allowTokenRequests``,
``DelegationTokenManager.filterToken``): disabled without ``delegation.token.secret.key``; never
over PLAINTEXT or from a token-authenticated connection; the HMAC is HMAC-SHA512(secret, token
id); lifetimes capped by the configs; owner or renewer only for renew/expire; tokens are metadata
records that survive a restart.
"""

from __future__ import annotations

import base64
import hmac
from pathlib import Path
from typing import Any

import pytest

from kwire.broker import BrokerState
from kwire.broker._apis import HANDLERS
from kwire.broker._context import RequestContext
from kwire.broker._delegation_tokens import token_login
from kwire.broker._sasl import SaslAuthenticationError, SaslAuthenticator, SaslConfig, ScramServer
from kwire.protocol import (
    ErrorCode,
    decode_request_frame,
    decode_response_frame,
    encode_request_frame,
    encode_response_frame,
    message_class,
    struct_class,
)
from tests.unit.broker.test_sasl import scram_client
from tests.unit.broker.test_txn import NOW, clock, make_state

SECRET = "s3cr3t"
DAY = 24 * 3600 * 1000
RENEWER = struct_class(message_class("CreateDelegationTokenRequest"), "renewers")
OWNER = struct_class(message_class("DescribeDelegationTokenRequest"), "owners")
HANDSHAKE = message_class("SaslHandshakeRequest")
AUTHENTICATE = message_class("SaslAuthenticateRequest")
ACLS = {"authorizer.class.name": "StandardAuthorizer", "super.users": "User:admin"}


def call(
    state: BrokerState,
    name: str,
    version: int,
    principal: str = "User:alice",
    protocol: str = "SASL_PLAINTEXT",
    token_authenticated: bool = False,
    **fields: Any,
) -> Any:
    request = message_class(f"{name}Request")(**fields)
    api_key = request.API_KEY
    assert api_key is not None
    decoded = decode_request_frame(
        encode_request_frame(request, version, correlation_id=7, client_id="test")
    )
    ctx = RequestContext(
        api_key,
        version,
        7,
        "test",
        client_address="127.0.0.1:5555",
        security_protocol=protocol,
        principal=principal,
        token_authenticated=token_authenticated,
    )
    response = HANDLERS[api_key][0](state, ctx, decoded.message)
    data = encode_response_frame(response, version, correlation_id=7)
    return decode_response_frame(data, api_key, version).message


def create(state: BrokerState, version: int = 3, **fields: Any) -> Any:
    fields.setdefault("renewers", [])
    fields.setdefault("max_lifetime_ms", -1)
    return call(state, "CreateDelegationToken", version, **fields)


def describe(state: BrokerState, principal: str, owners: list[str] | None = None) -> Any:
    wanted = None
    if owners is not None:
        wanted = [OWNER(principal_type="User", principal_name=o) for o in owners]
    return call(state, "DescribeDelegationToken", 3, principal=principal, owners=wanted)


@pytest.fixture
def state(tmp_path: Path) -> Any:
    s = make_state(tmp_path / "d", **{"delegation.token.secret.key": SECRET})
    yield s
    s.close()


def test_disabled_without_secret_and_refused_where_kafka_refuses(tmp_path: Path) -> None:
    off = make_state(tmp_path / "off")
    try:
        assert create(off).error_code == ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED
        assert describe(off, "User:alice").error_code == ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED
        renew = call(off, "RenewDelegationToken", 2, hmac=b"x", renew_period_ms=-1)
        assert renew.error_code == ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED
    finally:
        off.close()
    on = make_state(tmp_path / "on", **{"delegation.token.secret.key": SECRET})
    try:
        refused = ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
        plaintext = create(on, principal="User:ANONYMOUS", protocol="PLAINTEXT")
        assert (plaintext.error_code, plaintext.expiry_timestamp_ms) == (refused, -1)
        assert create(on, token_authenticated=True).error_code == refused
        assert create(on, principal="User:ANONYMOUS", protocol="SSL").error_code == refused
        expire = call(
            on, "ExpireDelegationToken", 2, protocol="PLAINTEXT", hmac=b"", expiry_time_period_ms=1
        )
        assert (expire.error_code, expire.expiry_timestamp_ms) == (refused, -1)
        assert on.metadata_image.delegation_tokens == {}
    finally:
        on.close()


def test_create_lifetimes_hmac_and_restart(tmp_path: Path) -> None:
    config = {
        "delegation.token.secret.key": SECRET,
        "delegation.token.max.lifetime.ms": str(3 * DAY),
    }
    state = make_state(tmp_path / "d", **config)
    try:
        made = create(
            state,
            renewers=[RENEWER(principal_type="User", principal_name="bob")],
            max_lifetime_ms=-1,
        )
        assert made.error_code == 0
        assert (made.principal_type, made.principal_name) == ("User", "alice")
        assert (made.token_requester_principal_type, made.token_requester_principal_name) == (
            "User",
            "alice",
        )
        assert made.issue_timestamp_ms == NOW
        assert made.max_timestamp_ms == NOW + 3 * DAY  # delegation.token.max.lifetime.ms
        assert made.expiry_timestamp_ms == NOW + DAY  # delegation.token.expiry.time.ms default
        assert made.hmac == hmac.new(SECRET.encode(), made.token_id.encode(), "sha512").digest()
        assert len(made.token_id) == 22 and not made.token_id.startswith("-")  # Kafka's Uuid
        short = create(state, max_lifetime_ms=1000)
        assert (short.max_timestamp_ms, short.expiry_timestamp_ms) == (NOW + 1000, NOW + 1000)
        bad = create(state, renewers=[RENEWER(principal_type="Group", principal_name="g")])
        assert bad.error_code == ErrorCode.INVALID_PRINCIPAL_TYPE
    finally:
        state.close()
    again = make_state(tmp_path / "d", **config)
    try:
        tokens = describe(again, "User:alice").tokens
        found = {t.token_id: t for t in tokens}
        assert set(found) == {made.token_id, short.token_id}
        kept = found[made.token_id]
        assert kept.hmac == made.hmac
        assert [(r.principal_type, r.principal_name) for r in kept.renewers] == [("User", "bob")]
        assert (kept.expiry_timestamp, kept.max_timestamp) == (NOW + DAY, NOW + 3 * DAY)
    finally:
        again.close()


def test_v3_owner_needs_create_tokens_on_that_user(tmp_path: Path) -> None:
    state = make_state(tmp_path / "d", **{"delegation.token.secret.key": SECRET}, **ACLS)
    try:
        other = create(state, owner_principal_type="User", owner_principal_name="carol")
        assert other.error_code == ErrorCode.DELEGATION_TOKEN_AUTHORIZATION_FAILED
        assert (other.principal_name, other.token_requester_principal_name) == ("carol", "alice")
        made = create(
            state, principal="User:admin", owner_principal_type="User", owner_principal_name="carol"
        )
        assert made.error_code == 0
        assert (made.principal_name, made.token_requester_principal_name) == ("carol", "admin")
        # filterToken: the owner and the requester see it, a stranger does not, a super user does.
        assert [t.token_id for t in describe(state, "User:carol").tokens] == [made.token_id]
        assert [t.token_id for t in describe(state, "User:admin").tokens] == [made.token_id]
        assert describe(state, "User:mallory").tokens == []
        assert describe(state, "User:carol", owners=["nobody"]).tokens == []
        assert describe(state, "User:carol", owners=[]).tokens == []
    finally:
        state.close()


def test_renew_expire_and_the_clock(state: BrokerState) -> None:
    made = create(state, renewers=[RENEWER(principal_type="User", principal_name="bob")])

    def renew(principal: str, period: int = -1) -> Any:
        return call(
            state,
            "RenewDelegationToken",
            2,
            principal=principal,
            hmac=made.hmac,
            renew_period_ms=period,
        )

    assert renew("User:mallory").error_code == ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH
    wrong = call(state, "RenewDelegationToken", 2, hmac=b"nope", renew_period_ms=1)
    assert wrong.error_code == ErrorCode.DELEGATION_TOKEN_NOT_FOUND
    clock(state).advance(DAY // 2)
    renewed = renew("User:bob")  # a renewer may
    assert (renewed.error_code, renewed.expiry_timestamp_ms) == (0, NOW + DAY // 2 + DAY)
    assert renew("User:alice", 1000).expiry_timestamp_ms == NOW + DAY // 2 + 1000
    token = state.metadata_image.delegation_tokens[made.token_id]
    assert token.expiry_timestamp == NOW + DAY // 2 + 1000
    clock(state).advance(2000)  # past the expiry
    assert renew("User:alice").error_code == ErrorCode.DELEGATION_TOKEN_EXPIRED
    # A negative period removes a (live) token at once.
    other = create(state)
    gone = call(state, "ExpireDelegationToken", 2, hmac=other.hmac, expiry_time_period_ms=-1)
    assert (gone.error_code, gone.expiry_timestamp_ms) == (0, -1)
    assert other.token_id not in state.metadata_image.delegation_tokens
    # The sweep (delegation.token.expiry.check.interval.ms, 1 hour) removes the expired one.
    clock(state).advance(3600 * 1000)
    assert describe(state, "User:alice").tokens == []
    assert state.metadata_image.delegation_tokens == {}


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scram_with_a_token(state: BrokerState, mechanism: str) -> None:
    made = create(state)
    password = base64.b64encode(made.hmac).decode()

    def server() -> ScramServer:
        return ScramServer(
            mechanism, lambda u, m: None, token_lookup=lambda t, m: token_login(state, t, m)
        )

    def token_first(user: str) -> bytes:
        return f"n,,n={user},r=abc,tokenauth=true".encode()

    s = server()
    final = scram_client(mechanism, made.token_id, password, s, extensions=",tokenauth=true")
    assert final.startswith(b"v=") and s.complete
    assert (s.authorization_id, s.token_authenticated) == ("alice", True)
    assert s.expires_at_ms == made.expiry_timestamp_ms
    with pytest.raises(SaslAuthenticationError):
        scram_client(mechanism, made.token_id, "wrong", server(), extensions=",tokenauth=true")
    with pytest.raises(SaslAuthenticationError):
        server().evaluate(token_first("no-such-token"))
    # Without the extension the token id is an ordinary (unknown) user.
    with pytest.raises(SaslAuthenticationError):
        scram_client(mechanism, made.token_id, password, server())
    # The authenticator marks the connection token-authenticated, with the owner's principal
    # and a session that ends with the token (KIP-368).
    auth = SaslAuthenticator(
        SaslConfig([mechanism], {}, {}, {}, 1 << 20, 0),
        lambda u, m: None,
        state.now_ms,
        token_lookup=lambda t, m: token_login(state, t, m),
    )
    auth.handshake(1, HANDSHAKE(mechanism=mechanism))

    class Wire:
        def evaluate(self, token: bytes) -> bytes:
            step = auth.authenticate(2, AUTHENTICATE(auth_bytes=token))
            assert step.response.error_code == 0, step.response.error_message
            return bytes(step.response.auth_bytes)

    scram_client(mechanism, made.token_id, password, Wire(), extensions=",tokenauth=true")
    assert (auth.principal, auth.token_authenticated) == ("User:alice", True)
    assert auth.expires_at_ms == made.expiry_timestamp_ms
    assert create(state, token_authenticated=auth.token_authenticated).error_code == (
        ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
    )


def test_v0_on_3x_and_the_kip_896_report(tmp_path: Path) -> None:
    from kwire.broker._upgrade import removed_versions

    # Kafka 4.0 removed v0 of the four token APIs (and WriteTxnMarkers v0): a 3.9 broker serves
    # them, and the readiness report names a client that uses them.
    assert {(38, 0), (39, 0), (40, 0), (41, 0), (27, 0)} <= removed_versions("4.0")
    old = make_state(tmp_path / "old", "3.9", **{"delegation.token.secret.key": SECRET})
    try:
        assert old.personality.supports(38, 0) and old.personality.supports(27, 0)
        made = create(old, version=0)
        assert (made.error_code, made.principal_name) == (0, "alice")
        assert [t.token_id for t in describe(old, "User:alice").tokens] == [made.token_id]
    finally:
        old.close()
    new = make_state(tmp_path / "new", "4.3", **{"delegation.token.secret.key": SECRET})
    try:
        assert not new.personality.supports(38, 0) and new.personality.supports(38, 1)
    finally:
        new.close()


def test_describe_before_v3_names_no_requester(state: BrokerState) -> None:
    made = create(state)
    for version in (1, 2):
        described = call(
            state, "DescribeDelegationToken", version, principal="User:alice", owners=None
        )
        (token,) = described.tokens
        assert (token.token_id, token.principal_name) == (made.token_id, "alice")
        assert token.token_requester_principal_name == ""
