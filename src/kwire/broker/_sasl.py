"""SASL: the per-connection authenticator, the PLAIN, SCRAM and OAUTHBEARER servers, SCRAM
credentials, and the SaslHandshake, SaslAuthenticate and *UserScramCredentials APIs.

Approach, after Kafka 3.9's ``SaslServerAuthenticator``: a ``SaslAuthenticator`` per connection
of a SASL listener is a sans-IO state machine (``INITIAL`` -> ``HANDSHAKE`` -> ``AUTHENTICATE``
-> ``COMPLETE``, or ``FAILED``). Before it completes only ApiVersions, SaslHandshake and then
SaslAuthenticate are accepted; anything else closes the connection, as Kafka's
``IllegalSaslStateException`` does. A SaslHandshake v0 switches to the pre-KIP-152 exchange of raw
size-prefixed tokens; v1 to SaslAuthenticate requests (KIP-152 error responses). Re-authentication
(KIP-368) starts with a SaslHandshake on an authenticated connection. Every completed exchange
(SaslAuthenticate of any version, or raw tokens) starts a session of ``connections.max.reauth.ms``,
cut to the credential's own expiry (an OAUTHBEARER token's ``exp``), or of that expiry alone when
the config is 0; the SaslAuthenticate response (v1+) carries it and the server closes a connection
whose session expired.

Failures keep Kafka's wording: a ``SaslAuthenticationError`` raised with ``generic=True`` (Kafka's
plain ``SaslException``: SCRAM's bad proof or unknown user) is answered with "Authentication failed
during authentication due to invalid credentials with SASL mechanism <m>", so a client learns
nothing about which part was wrong.

The mechanisms: ``PlainServer`` (``PlainSaslServer``, users from a JAAS-style
``user_<name>="<password>"`` config), ``ScramServer`` (``ScramSaslServer``/``ScramFormatter``,
RFC 5802/7677, SHA-256 and SHA-512), ``OAuthBearerServer`` (``OAuthBearerSaslServer`` with the
``OAuthBearerUnsecuredValidator``: an unsigned JWS, ``alg`` "none"). SCRAM credentials are kept
as a KRaft broker keeps them (``ScramControlManager``): ``UserScramCredentialRecord``s and
``RemoveUserScramCredentialRecord``s in ``__cluster_metadata``, replayed into the metadata image
at start (``ScramStore`` is a view of it; a change is fsynced before it is answered). A
``scram-credentials.json`` of an older kwire is imported once when the metadata log opens.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import json
import re
import secrets
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final, Protocol

from kwire._lazy import lazy_dataclass
from kwire.broker import _metadata_image as mimage
from kwire.broker import _metadata_log as mlog
from kwire.broker._acl import CLUSTER, authorize
from kwire.broker._apis import register
from kwire.broker._context import RequestContext
from kwire.broker._metadata_image import ScramCredential
from kwire.broker._security import listener_config
from kwire.broker._state import BrokerState
from kwire.protocol import ErrorCode
from kwire.protocol import _scram as scram
from kwire.protocol.messages import (
    AlterUserScramCredentialsRequest,
    AlterUserScramCredentialsResponse,
    DescribeUserScramCredentialsRequest,
    DescribeUserScramCredentialsResponse,
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)

__all__ = [
    "MECHANISM_IDS",
    "OAuthBearerServer",
    "PlainServer",
    "SaslAuthenticationError",
    "SaslAuthenticator",
    "SaslConfig",
    "ScramCredential",
    "ScramServer",
    "ScramStore",
    "scram_credential",
    "scram_store",
]

SASL_HANDSHAKE: Final = 17
SASL_AUTHENTICATE: Final = 36
API_VERSIONS: Final = 18
SCRAM_MECHANISMS: Final = scram.SCRAM_HASHES
#: ScramMechanism's wire ids (DescribeUserScramCredentials, AlterUserScramCredentials).
MECHANISM_IDS: Final = mimage.SCRAM_MECHANISMS
_MECHANISM_WIRE: Final = {name: key for key, name in MECHANISM_IDS.items()}
MIN_ITERATIONS: Final = 4096
MAX_ITERATIONS: Final = 16384
DEFAULT_MECHANISMS: Final = "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512"
MAX_RECEIVE_SIZE: Final = 524288  # sasl.server.max.receive.size

HANDSHAKE_REQUEST: Final = SaslHandshakeRequest
HANDSHAKE_RESPONSE: Final = SaslHandshakeResponse
AUTHENTICATE_REQUEST: Final = SaslAuthenticateRequest
AUTHENTICATE_RESPONSE: Final = SaslAuthenticateResponse
DESCRIBE_SCRAM_RESPONSE: Final = DescribeUserScramCredentialsResponse
DESCRIBE_SCRAM_RESULT: Final = (
    DescribeUserScramCredentialsResponse.DescribeUserScramCredentialsResult
)
DESCRIBE_SCRAM_INFO: Final = DescribeUserScramCredentialsResponse.CredentialInfo
ALTER_SCRAM_RESPONSE: Final = AlterUserScramCredentialsResponse
ALTER_SCRAM_RESULT: Final = AlterUserScramCredentialsResponse.AlterUserScramCredentialsResult


#: (token id, mechanism) -> (the token's SCRAM credential, its owner "Type:name", its expiry ms),
#: or None: an unknown or expired token (``DelegationTokenCache``; ``_delegation_tokens``).
TokenLookup = Callable[[str, str], tuple[ScramCredential, str, int] | None]


class SaslAuthenticationError(Exception):
    """Authentication failed; ``generic``: answer with the message that hides the reason."""

    def __init__(self, message: str, generic: bool = False) -> None:
        super().__init__(message)
        self.generic = generic


class SaslServer(Protocol):
    mechanism: str

    def evaluate(self, response: bytes) -> bytes: ...

    @property
    def complete(self) -> bool: ...

    @property
    def authorization_id(self) -> str: ...

    @property
    def expires_at_ms(self) -> int | None: ...


# --- PLAIN ------------------------------------------------------------------------------------


class PlainServer:
    """``PlainSaslServer``: ``authzid NUL authcid NUL passwd`` against configured passwords."""

    mechanism = "PLAIN"

    def __init__(self, users: Mapping[str, str]) -> None:
        self.users = users
        self._user: str | None = None

    def evaluate(self, response: bytes) -> bytes:
        try:
            text = response.decode("utf-8")
        except UnicodeDecodeError:
            raise SaslAuthenticationError("Invalid SASL/PLAIN response: not UTF-8") from None
        tokens = text.split("\0")
        if len(tokens) != 3:
            raise SaslAuthenticationError(
                f"Invalid SASL/PLAIN response: expected 3 tokens, got {len(tokens)}"
            )
        authzid, username, password = tokens
        if not username:
            raise SaslAuthenticationError("Authentication failed: username not specified")
        if not password:
            raise SaslAuthenticationError("Authentication failed: password not specified")
        expected = self.users.get(username)
        if expected is None or not hmac.compare_digest(
            expected.encode("utf-8"), password.encode("utf-8")
        ):
            raise SaslAuthenticationError("Authentication failed: Invalid username or password")
        if authzid and authzid != username:
            raise SaslAuthenticationError(
                "Authentication failed: Client requested an authorization id that is different "
                "from username"
            )
        self._user = username
        return b""

    @property
    def complete(self) -> bool:
        return self._user is not None

    @property
    def authorization_id(self) -> str:
        assert self._user is not None
        return self._user

    @property
    def expires_at_ms(self) -> int | None:
        return None


# --- SCRAM ------------------------------------------------------------------------------------


def credential_from_salted(
    mechanism: str, salt: bytes, salted_password: bytes, iterations: int
) -> ScramCredential:
    """``ScramFormatter``: ClientKey, StoredKey = H(ClientKey), ServerKey from SaltedPassword."""
    key = scram.client_key(mechanism, salted_password)
    return ScramCredential(
        salt,
        scram.stored_key(mechanism, key),
        scram.server_key(mechanism, salted_password),
        iterations,
    )


def scram_credential(
    mechanism: str, password: str, iterations: int = 4096, salt: bytes | None = None
) -> ScramCredential:
    salt = salt if salt is not None else secrets.token_bytes(32)
    return credential_from_salted(
        mechanism, salt, scram.salted_password(mechanism, password, salt, iterations), iterations
    )


_SASLNAME: Final = r"(?:[\x01-\x2b\x2d-\x3c\x3e-\x7f]|=2C|=3D|[^\x00-\x7f])+"
_CLIENT_FIRST: Final = re.compile(
    rf"n,(?:a=(?P<authzid>{_SASLNAME}))?,(?P<bare>n=(?P<user>{_SASLNAME}),"
    r"r=(?P<nonce>[\x21-\x2b\x2d-\x7e]+)(?P<extensions>(?:,[A-Za-z]+=[^,]*)*))",
    re.DOTALL,
)
_CLIENT_FINAL: Final = re.compile(
    r"(?P<bare>c=(?P<binding>[A-Za-z0-9+/=]*),r=(?P<nonce>[\x21-\x2b\x2d-\x7e]+)"
    r"(?:,[A-Za-z]+=[^,]*)*),p=(?P<proof>[A-Za-z0-9+/=]+)",
    re.DOTALL,
)


def _unescape_saslname(name: str) -> str:
    return name.replace("=2C", ",").replace("=3D", "=")


class ScramServer:
    """``ScramSaslServer``: client-first -> server-first -> client-final -> server-final."""

    def __init__(
        self,
        mechanism: str,
        lookup: Callable[[str, str], ScramCredential | None],
        nonce: Callable[[], str] = lambda: secrets.token_urlsafe(24),
        token_lookup: TokenLookup | None = None,
    ) -> None:
        self.mechanism = mechanism
        self._lookup = lookup
        self._token_lookup = token_lookup
        self._nonce = nonce
        self._step = 0
        self._user: str | None = None
        #: Set by a ``tokenauth=true`` exchange: the token's owner and expiry.
        self.token_authenticated = False
        self._token_expiry: int | None = None
        self._credential: ScramCredential | None = None
        self._client_first_bare = ""
        self._server_first = ""

    def evaluate(self, response: bytes) -> bytes:
        try:
            text = response.decode("utf-8")
        except UnicodeDecodeError:
            raise SaslAuthenticationError("Invalid SCRAM message", generic=True) from None
        if self._step == 0:
            return self._first(text)
        if self._step == 1:
            return self._final(text)
        raise SaslAuthenticationError("Unexpected SASL request in state COMPLETE", generic=True)

    def _first(self, text: str) -> bytes:
        found = _CLIENT_FIRST.fullmatch(text)
        if found is None:
            raise SaslAuthenticationError("Invalid SCRAM client first message", generic=True)
        user = _unescape_saslname(found.group("user"))
        authzid = found.group("authzid")
        extensions = dict(
            e.split("=", 1) for e in found.group("extensions").split(",")[1:] if "=" in e
        )
        if authzid is not None and _unescape_saslname(authzid) != user:
            raise SaslAuthenticationError(
                "Authentication failed: Client requested an authorization id that is different "
                "from username"
            )
        if extensions.get("tokenauth", "false").lower() == "true":
            # The user name is a token id; the principal is the token's owner (ScramSaslServer).
            login = None if self._token_lookup is None else self._token_lookup(user, self.mechanism)
            if login is None:
                raise SaslAuthenticationError(
                    f"Token Authentication failed: Invalid tokenId : {user}", generic=True
                )
            credential, owner, self._token_expiry = login
            self.token_authenticated = True
            user_for_principal = owner.partition(":")[2]
        else:
            stored = self._lookup(user, self.mechanism)
            if stored is None:
                raise SaslAuthenticationError(
                    "Authentication failed: Invalid user credentials", generic=True
                )
            credential, user_for_principal = stored, user
        self._user, self._credential = user_for_principal, credential
        self._client_first_bare = found.group("bare")
        nonce = found.group("nonce") + self._nonce()
        salt = base64.b64encode(credential.salt).decode("ascii")
        self._server_first = f"r={nonce},s={salt},i={credential.iterations}"
        self._step = 1
        return self._server_first.encode("ascii")

    def _final(self, text: str) -> bytes:
        found = _CLIENT_FINAL.fullmatch(text)
        credential = self._credential
        assert credential is not None
        if found is None:
            raise SaslAuthenticationError("Invalid SCRAM client final message", generic=True)
        server_nonce = self._server_first.split(",", 1)[0][2:]
        if found.group("nonce") != server_nonce:
            raise SaslAuthenticationError(
                "Invalid client nonce in the final client message.", generic=True
            )
        try:
            proof = base64.b64decode(found.group("proof"), validate=True)
        except binascii.Error:
            raise SaslAuthenticationError("Invalid client proof", generic=True) from None
        auth_message = ",".join(
            (self._client_first_bare, self._server_first, found.group("bare"))
        ).encode("utf-8")
        signature = scram.hmac_digest(self.mechanism, credential.stored_key, auth_message)
        if len(proof) != len(signature):
            raise SaslAuthenticationError("Invalid client credentials", generic=True)
        client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=True))
        if not hmac.compare_digest(
            scram.stored_key(self.mechanism, client_key), credential.stored_key
        ):
            raise SaslAuthenticationError("Invalid client credentials", generic=True)
        server_signature = scram.hmac_digest(self.mechanism, credential.server_key, auth_message)
        self._step = 2
        return b"v=" + base64.b64encode(server_signature)

    @property
    def complete(self) -> bool:
        return self._step == 2

    @property
    def authorization_id(self) -> str:
        assert self._user is not None
        return self._user

    @property
    def expires_at_ms(self) -> int | None:
        """A token's expiry ends the session (``ScramSaslServer``'s credential lifetime)."""
        return self._token_expiry


# --- OAUTHBEARER ------------------------------------------------------------------------------

_OAUTH_INITIAL: Final = re.compile(
    r"n,(?:a=(?P<authzid>[^,]*))?,\x01(?P<pairs>(?:[A-Za-z]+=[\x21-\x7E \t\r\n]+\x01)*)\x01",
    re.DOTALL,
)


def _b64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class OAuthBearerServer:
    """``OAuthBearerSaslServer`` with ``OAuthBearerUnsecuredValidator`` (RFC 7628, unsigned JWS).

    Options (Kafka's JAAS option names): ``unsecuredValidatorPrincipalClaimName`` (``sub``),
    ``unsecuredValidatorScopeClaimName`` (``scope``), ``unsecuredValidatorRequiredScope``
    (space-separated), ``unsecuredValidatorAllowableClockSkewMs`` (0).
    """

    mechanism = "OAUTHBEARER"

    def __init__(self, options: Mapping[str, str], now_ms: Callable[[], int]) -> None:
        self.principal_claim = options.get("unsecuredValidatorPrincipalClaimName") or "sub"
        self.scope_claim = options.get("unsecuredValidatorScopeClaimName") or "scope"
        self.required_scope = (options.get("unsecuredValidatorRequiredScope") or "").split()
        self.skew_ms = int(options.get("unsecuredValidatorAllowableClockSkewMs") or "0")
        self._now_ms = now_ms
        self._principal: str | None = None
        self._expires: int | None = None
        self._error: str | None = None

    def evaluate(self, response: bytes) -> bytes:
        if response == b"\x01" and self._error is not None:
            raise SaslAuthenticationError(self._error)
        self._error = None
        try:
            text = response.decode("utf-8")
        except UnicodeDecodeError:
            raise SaslAuthenticationError("Invalid OAUTHBEARER client first message") from None
        found = _OAUTH_INITIAL.fullmatch(text)
        if found is None:
            raise SaslAuthenticationError("Invalid OAUTHBEARER client first message")
        pairs = dict(p.split("=", 1) for p in found.group("pairs").split("\x01") if p)
        auth = pairs.get("auth", "")
        if not auth.startswith("Bearer "):
            raise SaslAuthenticationError("Invalid OAUTHBEARER client first message")
        try:
            principal, expires = self._validate(auth[len("Bearer ") :].strip())
        except _InvalidToken as exc:
            self._error = json.dumps({"status": exc.status, **exc.extra}, separators=(",", ":"))
            return self._error.encode("utf-8")
        authzid = found.group("authzid")
        if authzid and authzid != principal:
            raise SaslAuthenticationError(
                f"Authentication failed: Client requested an authorization id ({authzid}) that "
                f"is different from the token's principal name ({principal})"
            )
        self._principal, self._expires = principal, expires
        return b""

    def _validate(self, token: str) -> tuple[str, int]:
        """``OAuthBearerUnsecuredJws`` and ``OAuthBearerValidationUtils``' checks."""
        parts = token.split(".")
        if len(parts) != 3 or parts[2]:
            raise _InvalidToken("invalid_token")
        try:
            header = json.loads(_b64url(parts[0]))
            claims = json.loads(_b64url(parts[1]))
        except (ValueError, binascii.Error):
            raise _InvalidToken("invalid_token") from None
        if not isinstance(header, dict) or not isinstance(claims, dict):
            raise _InvalidToken("invalid_token")
        if header.get("alg") != "none":
            raise _InvalidToken("invalid_token")
        principal = claims.get(self.principal_claim)
        exp = claims.get("exp")
        iat = claims.get("iat")
        if not isinstance(principal, str) or not principal.strip():
            raise _InvalidToken("invalid_token")
        if isinstance(exp, bool) or not isinstance(exp, int | float):
            raise _InvalidToken("invalid_token")
        if iat is not None and (isinstance(iat, bool) or not isinstance(iat, int | float)):
            raise _InvalidToken("invalid_token")
        now = self._now_ms()
        expires = int(exp * 1000)
        if iat is not None and int(iat * 1000) > now + self.skew_ms:
            raise _InvalidToken("invalid_token")
        if now - self.skew_ms >= expires:
            raise _InvalidToken("invalid_token")
        if iat is not None and expires <= int(iat * 1000):
            raise _InvalidToken("invalid_token")
        scope = claims.get(self.scope_claim)
        scopes = scope.split() if isinstance(scope, str) else list(scope or [])
        missing = [s for s in self.required_scope if s not in scopes]
        if missing:
            raise _InvalidToken("insufficient_scope", {"scope": " ".join(self.required_scope)})
        return principal, expires

    @property
    def complete(self) -> bool:
        return self._principal is not None

    @property
    def authorization_id(self) -> str:
        assert self._principal is not None
        return self._principal

    @property
    def expires_at_ms(self) -> int | None:
        return self._expires


class _InvalidToken(Exception):
    def __init__(self, status: str, extra: Mapping[str, str] | None = None) -> None:
        super().__init__(status)
        self.status = status
        self.extra = dict(extra or {})


# --- credentials ------------------------------------------------------------------------------


class ScramStore(mlog.ImageView):
    """SCRAM credentials by (user, mechanism name), as the metadata image holds them
    (``UserScramCredentialRecord`` / ``RemoveUserScramCredentialRecord``; see ``ImageView``)."""

    @property
    def credentials(self) -> dict[tuple[str, str], ScramCredential]:
        """A snapshot: (user, mechanism name) -> credential."""
        return {
            (user, MECHANISM_IDS[mechanism]): credential
            for (user, mechanism), credential in self._image.scram_credentials.items()
            if mechanism in MECHANISM_IDS
        }

    def get(self, user: str, mechanism: str) -> ScramCredential | None:
        wire = _MECHANISM_WIRE.get(mechanism)
        return None if wire is None else self._image.scram_credentials.get((user, wire))

    def put(self, user: str, mechanism: str, credential: ScramCredential) -> None:
        self.alter([(user, mechanism, credential)])

    def delete(self, user: str, mechanism: str) -> bool:
        if self.get(user, mechanism) is None:
            return False
        self.alter([(user, mechanism, None)])
        return True

    def alter(self, changes: Iterable[tuple[str, str, ScramCredential | None]]) -> None:
        """Upsert (a credential) or delete (``None``) credentials, all in one batch."""
        self._write(mimage.scram_records((u, _MECHANISM_WIRE[m], c) for u, m, c in changes))


def scram_store(state: BrokerState) -> ScramStore:
    store = state.services.scram
    if store is None:
        store = state.services.scram = ScramStore(state.metadata_image, state.append_metadata)
    return store


def set_scram_password(
    state: BrokerState,
    user: str,
    password: str,
    mechanism: str = "SCRAM-SHA-512",
    iterations: int = 4096,
) -> None:
    """Add or replace a SCRAM credential (``kafka-configs --alter --add-config``'s effect)."""
    scram_store(state).put(user, mechanism, scram_credential(mechanism, password, iterations))


# --- configuration ----------------------------------------------------------------------------

_JAAS_OPTION: Final = re.compile(r'([A-Za-z0-9_.\-]+)\s*=\s*"((?:[^"\\]|\\.)*)"')


def jaas_options(text: str | None) -> dict[str, str]:
    """``name="value"`` options of a JAAS ``sasl.jaas.config`` line."""
    return {k: v.replace('\\"', '"') for k, v in _JAAS_OPTION.findall(text or "")}


@lazy_dataclass
class SaslConfig:
    """One listener's SASL settings (Kafka's names, listener-prefixed or not)."""

    mechanisms: list[str]
    plain_users: dict[str, str]
    oauth_options: dict[str, str]
    reauth_ms: dict[str, int]
    max_receive_size: int
    failed_delay_ms: int

    @classmethod
    def from_config(cls, static: Mapping[str, str], listener: str) -> SaslConfig:
        def get(name: str) -> str | None:
            return listener_config(static, listener, name)

        mechanisms = [
            m.strip().upper()
            for m in (get("sasl.enabled.mechanisms") or DEFAULT_MECHANISMS).split(",")
            if m.strip()
        ]
        plain = jaas_options(get("plain.sasl.jaas.config") or get("sasl.jaas.config"))
        users = {k[len("user_") :]: v for k, v in plain.items() if k.startswith("user_")}
        oauth = jaas_options(get("oauthbearer.sasl.jaas.config"))
        reauth = {
            m: int(
                get(f"{m.lower()}.connections.max.reauth.ms")
                or get("connections.max.reauth.ms")
                or 0
            )
            for m in mechanisms
        }
        return cls(
            mechanisms,
            users,
            oauth,
            reauth,
            int(get("sasl.server.max.receive.size") or MAX_RECEIVE_SIZE),
            int(get("connection.failed.authentication.delay.ms") or 100),
        )


# --- the authenticator ------------------------------------------------------------------------


@lazy_dataclass
class SaslStep:
    """What the server does after one SASL frame: send ``response`` (a message, raw token
    bytes or nothing), then close the connection when ``close``; ``delay_ms`` before a failure."""

    response: Any = None
    close: bool = False
    delay_ms: int = 0


class SaslAuthenticator:
    """One SASL connection's state machine (see the module doc); sans-IO."""

    def __init__(
        self,
        config: SaslConfig,
        lookup: Callable[[str, str], ScramCredential | None],
        now_ms: Callable[[], int],
        token_lookup: TokenLookup | None = None,
    ) -> None:
        self.config = config
        self._lookup = lookup
        self._token_lookup = token_lookup
        self._now_ms = now_ms
        self.state = "INITIAL"
        self.token_authenticated = False
        self.raw_tokens = False  # after a SaslHandshake v0
        self.principal: str | None = None
        self.mechanism: str | None = None
        self.expires_at_ms: int | None = None
        #: What the SaslAuthenticate response (v1+) tells the client (0: no limit).
        self.session_lifetime_ms = 0
        self._server: SaslServer | None = None
        self._reauth = False

    @property
    def authenticated(self) -> bool:
        return self.principal is not None and not self._reauth

    @property
    def max_receive_size(self) -> int:
        return self.config.max_receive_size

    def expired(self) -> bool:
        return self.expires_at_ms is not None and self._now_ms() >= self.expires_at_ms

    def admits(self, api_key: int) -> bool:
        """Whether a request of ``api_key`` may come now (else: close the connection)."""
        if self.state == "COMPLETE":
            return True
        if self.state == "INITIAL":
            return api_key in (API_VERSIONS, SASL_HANDSHAKE)
        if self.state == "HANDSHAKE":
            return api_key == SASL_HANDSHAKE
        if self.state == "AUTHENTICATE":
            return api_key == SASL_AUTHENTICATE
        return False

    def api_versions_seen(self) -> None:
        if self.state == "INITIAL":
            self.state = "HANDSHAKE"

    def exchange(self, api_key: int, version: int, request: Any) -> SaslStep | None:
        """The step for a SaslHandshake, or a SaslAuthenticate before authentication; ``None``
        for any other request (a re-authentication's SaslAuthenticate goes to its handler)."""
        if api_key == SASL_HANDSHAKE:
            return self.handshake(version, request)
        if api_key == SASL_AUTHENTICATE and not self.authenticated:
            return self.authenticate(version, request)
        return None

    def handshake(self, version: int, request: Any) -> SaslStep:
        mechanism = str(request.mechanism or "")
        enabled = list(self.config.mechanisms)
        if self.state == "COMPLETE":
            if version < 1:
                self.state = "FAILED"
                return SaslStep(None, close=True)
            self._reauth = True
            if mechanism != self.mechanism:
                self.state = "FAILED"
                return SaslStep(
                    HANDSHAKE_RESPONSE(
                        error_code=int(ErrorCode.UNSUPPORTED_SASL_MECHANISM), mechanisms=enabled
                    ),
                    close=True,
                )
        if mechanism not in enabled or self._new_server(mechanism) is None:
            self.state = "FAILED"
            return SaslStep(
                HANDSHAKE_RESPONSE(
                    error_code=int(ErrorCode.UNSUPPORTED_SASL_MECHANISM), mechanisms=enabled
                ),
                close=True,
            )
        self.mechanism = mechanism
        self._server = self._new_server(mechanism)
        self.state = "AUTHENTICATE"
        self.raw_tokens = version == 0
        return SaslStep(HANDSHAKE_RESPONSE(error_code=0, mechanisms=enabled))

    def _new_server(self, mechanism: str) -> SaslServer | None:
        if mechanism == "PLAIN":
            return PlainServer(self.config.plain_users)
        if mechanism in SCRAM_MECHANISMS:
            return ScramServer(mechanism, self._lookup, token_lookup=self._token_lookup)
        if mechanism == "OAUTHBEARER":
            return OAuthBearerServer(self.config.oauth_options, self._now_ms)
        return None

    def authenticate(self, version: int, request: Any) -> SaslStep:
        """A SaslAuthenticate request (KIP-152)."""
        token = bytes(request.auth_bytes or b"")
        try:
            challenge = self._evaluate(token)
        except SaslAuthenticationError as exc:
            return SaslStep(
                AUTHENTICATE_RESPONSE(
                    error_code=int(ErrorCode.SASL_AUTHENTICATION_FAILED),
                    error_message=self._public_message(exc),
                    auth_bytes=b"",
                    session_lifetime_ms=0,
                ),
                close=True,
                delay_ms=self.config.failed_delay_ms,
            )
        # the lifetime was set when the exchange completed; the field exists from v1
        lifetime = self.session_lifetime_ms if self.state == "COMPLETE" and version >= 1 else 0
        return SaslStep(
            AUTHENTICATE_RESPONSE(
                error_code=0,
                error_message=None,
                auth_bytes=challenge,
                session_lifetime_ms=lifetime,
            )
        )

    def raw_token(self, token: bytes) -> SaslStep:
        """A raw token after a SaslHandshake v0: the answer is a raw token; failures close."""
        try:
            challenge = self._evaluate(token)
        except SaslAuthenticationError:
            return SaslStep(None, close=True, delay_ms=self.config.failed_delay_ms)
        if self.state == "COMPLETE":
            self.raw_tokens = False
        return SaslStep(challenge)

    def _evaluate(self, token: bytes) -> bytes:
        server = self._server
        if server is None or self.state != "AUTHENTICATE":
            self.state = "FAILED"
            raise SaslAuthenticationError("Unexpected SASL request", generic=True)
        try:
            challenge = server.evaluate(token)
        except SaslAuthenticationError:
            self.state = "FAILED"
            raise
        if server.complete:
            principal = "User:" + server.authorization_id
            if self._reauth and principal != self.principal:
                self.state = "FAILED"
                raise SaslAuthenticationError(
                    f"Cannot change principals during re-authentication from {self.principal}: "
                    f"{principal}"
                )
            self.principal = principal
            self.token_authenticated = bool(getattr(server, "token_authenticated", False))
            self.state = "COMPLETE"
            self._reauth = False
            self._start_session(server.expires_at_ms)
        return challenge

    def _start_session(self, credential_expiry_ms: int | None) -> None:
        """KIP-368, on every path that completes an exchange (SaslAuthenticate of any version,
        raw tokens): ``connections.max.reauth.ms``, cut to the credential's own expiry, or that
        expiry alone when the config is 0 (``SaslServerAuthenticator.ReauthInfo.
        calcCompletionTimesAndReturnSessionLifetimeMs``). No config and no expiry: no limit."""
        assert self.mechanism is not None
        max_reauth = self.config.reauth_ms.get(self.mechanism, 0)
        now = self._now_ms()
        if credential_expiry_ms is None and max_reauth <= 0:
            self.session_lifetime_ms, self.expires_at_ms = 0, None
            return
        if credential_expiry_ms is None:
            lifetime = max_reauth
        elif max_reauth <= 0:
            lifetime = max(0, credential_expiry_ms - now)
        else:
            lifetime = max(0, min(credential_expiry_ms - now, max_reauth))
        self.session_lifetime_ms, self.expires_at_ms = lifetime, now + lifetime

    def _public_message(self, exc: SaslAuthenticationError) -> str:
        if exc.generic:
            return (
                "Authentication failed during authentication due to invalid credentials with "
                f"SASL mechanism {self.mechanism}"
            )
        return str(exc)


# --- the APIs ---------------------------------------------------------------------------------


@register(SASL_HANDSHAKE, 0, 1)
def handle_sasl_handshake(
    state: BrokerState, ctx: RequestContext, request: SaslHandshakeRequest
) -> Any:
    """On a listener without SASL (or once authenticated, v0): ILLEGAL_SASL_STATE, as
    ``KafkaApis.handleSaslHandshakeRequest``. SASL listeners answer in the server."""
    return HANDSHAKE_RESPONSE(error_code=int(ErrorCode.ILLEGAL_SASL_STATE), mechanisms=[])


@register(SASL_AUTHENTICATE, 0, 2)
def handle_sasl_authenticate(
    state: BrokerState, ctx: RequestContext, request: SaslAuthenticateRequest
) -> Any:
    return AUTHENTICATE_RESPONSE(
        error_code=int(ErrorCode.ILLEGAL_SASL_STATE),
        error_message="SaslAuthenticate request received after successful authentication",
        auth_bytes=b"",
    )


@register(50, 0, 0)
def handle_describe_user_scram_credentials(
    state: BrokerState, ctx: RequestContext, request: DescribeUserScramCredentialsRequest
) -> Any:
    """``ControllerApis``/``ScramControlManager.describeScramCredentials``."""
    if not authorize(state, ctx, "DESCRIBE", CLUSTER, "kafka-cluster"):
        return DESCRIBE_SCRAM_RESPONSE(
            throttle_time_ms=0,
            error_code=int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED),
            error_message=None,
            results=[],
        )
    store = scram_store(state)
    by_user: dict[str, list[tuple[int, int]]] = {}
    for (user, mechanism), credential in sorted(store.credentials.items()):
        wire = next(k for k, v in MECHANISM_IDS.items() if v == mechanism)
        by_user.setdefault(user, []).append((wire, credential.iterations))
    results = []
    if request.users is None or not request.users:
        names = list(by_user)
    else:
        names = [u.name for u in request.users]
    seen: set[str] = set()
    duplicates = {n for n in names if n in seen or seen.add(n)}  # type: ignore[func-returns-value]
    for name in dict.fromkeys(names):
        out = DESCRIBE_SCRAM_RESULT(
            user=name, error_code=0, error_message=None, credential_infos=[]
        )
        if name in duplicates:
            out.error_code = int(ErrorCode.DUPLICATE_RESOURCE)
            out.error_message = (
                "Cannot describe SCRAM credentials for the same user twice in a single request"
            )
        elif name not in by_user:
            out.error_code = int(ErrorCode.RESOURCE_NOT_FOUND)
            out.error_message = f"Attempt to describe a user credential that does not exist: {name}"
        else:
            out.credential_infos = [
                DESCRIBE_SCRAM_INFO(mechanism=m, iterations=i) for m, i in by_user[name]
            ]
        results.append(out)
    return DESCRIBE_SCRAM_RESPONSE(
        throttle_time_ms=0, error_code=0, error_message=None, results=results
    )


@register(51, 0, 0)
def handle_alter_user_scram_credentials(
    state: BrokerState, ctx: RequestContext, request: AlterUserScramCredentialsRequest
) -> Any:
    """``ScramControlManager.alterCredentials``: per-user results, Kafka's checks."""
    allowed = authorize(state, ctx, "ALTER", CLUSTER, "kafka-cluster")
    store = scram_store(state)
    changes = [(d.name, d.mechanism, None) for d in request.deletions] + [
        (u.name, u.mechanism, u) for u in request.upsertions
    ]
    counts: dict[tuple[str, int], int] = {}
    for name, mechanism, _ in changes:
        counts[(name, mechanism)] = counts.get((name, mechanism), 0) + 1
    errors: dict[str, tuple[ErrorCode, str | None]] = {}

    def fail(name: str, error: ErrorCode, message: str | None) -> None:
        errors.setdefault(name, (error, message))

    for name, mechanism, upsertion in changes:
        if not allowed:
            fail(name, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None)
        elif not name:
            fail(name, ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty")
        elif mechanism not in MECHANISM_IDS:
            fail(name, ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism")
        elif counts[(name, mechanism)] > 1:
            fail(
                name,
                ErrorCode.DUPLICATE_RESOURCE,
                "A user credential cannot be altered twice in the same request",
            )
        elif upsertion is None and store.get(name, MECHANISM_IDS[mechanism]) is None:
            fail(
                name,
                ErrorCode.RESOURCE_NOT_FOUND,
                "Attempt to delete a user credential that does not exist",
            )
        elif upsertion is not None and upsertion.iterations < MIN_ITERATIONS:
            fail(name, ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations")
        elif upsertion is not None and upsertion.iterations > MAX_ITERATIONS:
            fail(name, ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations")
    accepted: list[tuple[str, str, ScramCredential | None]] = []
    for name, mechanism, upsertion in changes:
        if name in errors:
            continue
        mech = MECHANISM_IDS[mechanism]
        credential = None
        if upsertion is not None:
            credential = credential_from_salted(
                mech, bytes(upsertion.salt), bytes(upsertion.salted_password), upsertion.iterations
            )
        accepted.append((name, mech, credential))
    store.alter(accepted)  # one batch, in the metadata log before the answer
    results = []
    for name in dict.fromkeys(n for n, _, _ in changes):
        error, message = errors.get(name, (ErrorCode.NONE, None))
        results.append(ALTER_SCRAM_RESULT(user=name, error_code=int(error), error_message=message))
    return ALTER_SCRAM_RESPONSE(throttle_time_ms=0, results=results)
