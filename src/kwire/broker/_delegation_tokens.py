"""Delegation tokens (KIP-48): CreateDelegationToken (38), RenewDelegationToken (39),
ExpireDelegationToken (40), DescribeDelegationToken (41), and the SCRAM credentials a token
authenticates with.

Versions: v0 (1.1) is the first; v1 (2.0) changes nothing but KIP-219's throttling; v2 (2.4) is
the flexible form; v3 (3.3, KIP-373) lets CreateDelegationToken name an owner other than the
requester, and the Create and Describe responses name the token's requester. Kafka 4.0 removed
v0 of all four (KIP-896).

Follows Kafka's KRaft split. The gateway (``ControllerApis`` for Create/Renew/Expire,
``KafkaApis.handleDescribeTokensRequest``): no token request over PLAINTEXT, over SSL without a
client certificate, or from a connection that itself authenticated with a token
(DELEGATION_TOKEN_REQUEST_NOT_ALLOWED); a token for another owner needs CREATE_TOKENS on that
USER; Describe shows the tokens the requester owns, requested or may renew, and others only with
DESCRIBE on the DELEGATION_TOKEN or DESCRIBE_TOKENS on its owner (``DelegationTokenManager.
filterToken``). The rules (``DelegationTokenControlManager``): without
``delegation.token.secret.key`` every call is DELEGATION_TOKEN_AUTH_DISABLED; a token's HMAC is
HMAC-SHA512(secret key, token id); lifetimes are capped by ``delegation.token.max.lifetime.ms``
(7 days) and each renewal by ``delegation.token.expiry.time.ms`` (1 day), never past the max;
renewers must be ``User`` principals; only the owner or a renewer may renew or expire; a negative
expiry period removes the token at once. Tokens are ``DelegationTokenRecord``s in
``__cluster_metadata`` (removal: ``RemoveDelegationTokenRecord``), fsynced before the answer and
replayed at start, so they survive a restart (with the same secret key the HMACs are the same).
Expired tokens are swept, as the controller does every ``delegation.token.expiry.check.
interval.ms``, here when a token request or a token authentication comes after that interval.

Authentication (``ScramSaslServer`` with the ``tokenauth=true`` extension): the SCRAM user name
is the token id and the password is the base64 of the HMAC; the principal is the token's owner,
marked token-authenticated; the session ends when the token expires (KIP-368). The broker derives
each token's SCRAM credentials (4096 iterations, as ``DelegationTokenCache``) on first use.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from dataclasses import field, replace
from typing import Any, Final, NamedTuple

from kwire._lazy import lazy_dataclass
from kwire._wire import random_uuid_text
from kwire.broker import _metadata_image as mimage
from kwire.broker._acl import DELEGATION_TOKEN, USER, authorize
from kwire.broker._apis import register
from kwire.broker._context import RequestContext
from kwire.broker._metadata_image import DelegationToken, ScramCredential
from kwire.broker._sasl import scram_credential
from kwire.broker._state import BrokerState
from kwire.protocol import ErrorCode
from kwire.protocol.messages import (
    CreateDelegationTokenRequest,
    CreateDelegationTokenResponse,
    DescribeDelegationTokenRequest,
    DescribeDelegationTokenResponse,
    ExpireDelegationTokenRequest,
    ExpireDelegationTokenResponse,
    RenewDelegationTokenRequest,
    RenewDelegationTokenResponse,
)

__all__ = ["DelegationTokenCache", "TokenLogin", "token_hmac", "token_login"]

CREATE_RESPONSE: Final = CreateDelegationTokenResponse
RENEW_RESPONSE: Final = RenewDelegationTokenResponse
EXPIRE_RESPONSE: Final = ExpireDelegationTokenResponse
DESCRIBE_RESPONSE: Final = DescribeDelegationTokenResponse
DESCRIBED: Final = DescribeDelegationTokenResponse.DescribedDelegationToken
DESCRIBED_RENEWER: Final = DescribeDelegationTokenResponse.DescribedDelegationTokenRenewer

SECRET_KEY: Final = "delegation.token.secret.key"
SECRET_KEY_ALIAS: Final = "delegation.token.master.key"  # the pre-2.? name, still read
MAX_LIFETIME: Final = ("delegation.token.max.lifetime.ms", 7 * 24 * 3600 * 1000)
EXPIRY_TIME: Final = ("delegation.token.expiry.time.ms", 24 * 3600 * 1000)
CHECK_INTERVAL: Final = ("delegation.token.expiry.check.interval.ms", 3600 * 1000)
TOKEN_ITERATIONS: Final = 4096  # ScramMechanism.minIterations, what DelegationTokenCache uses
ERROR_TIMESTAMP: Final = -1  # DelegationTokenManager.ErrorTimestamp
USER_TYPE: Final = "User"


def _secret(state: BrokerState) -> str | None:
    static = state.static_config
    return static.get(SECRET_KEY) or static.get(SECRET_KEY_ALIAS) or None


def _ms(state: BrokerState, setting: tuple[str, int]) -> int:
    return int(state.static_config.get(setting[0]) or setting[1])


def token_hmac(secret: str, token_id: str) -> bytes:
    """``DelegationTokenControlManager.createHmac``: HMAC-SHA512 of the id under the secret."""
    return hmac.new(secret.encode(), token_id.encode(), hashlib.sha512).digest()


def _split(principal: str) -> tuple[str, str]:
    kind, _, name = principal.partition(":")
    return kind, name


@lazy_dataclass
class DelegationTokenCache:
    """The broker's token service: derived SCRAM credentials (``DelegationTokenCache``) and when
    expired tokens were last swept."""

    credentials: dict[tuple[str, str, int], ScramCredential] = field(default_factory=dict)
    last_sweep_ms: int = 0


def _service(state: BrokerState) -> DelegationTokenCache:
    found = state.services.delegation_tokens
    if found is None:
        found = state.services.delegation_tokens = DelegationTokenCache(
            last_sweep_ms=state.now_ms()
        )
    return found


def _sweep(state: BrokerState) -> None:
    """``DelegationTokenControlManager.sweepExpiredDelegationTokens``, at most once an interval."""
    service, now = _service(state), state.now_ms()
    if now - service.last_sweep_ms < _ms(state, CHECK_INTERVAL):
        return
    service.last_sweep_ms = now
    expired = [
        t.token_id
        for t in state.metadata_image.delegation_tokens.values()
        if t.max_timestamp < now or t.expiry_timestamp < now
    ]
    if expired:
        state.append_metadata([mimage.remove_delegation_token_record(t) for t in expired])


class TokenLogin(NamedTuple):
    """What SCRAM authentication with a token needs: the credential, the owner, the expiry."""

    credential: ScramCredential
    owner: str
    expiry_timestamp: int


def token_login(state: BrokerState, token_id: str, mechanism: str) -> TokenLogin | None:
    """The SCRAM credential of token ``token_id`` (``DelegationTokenCache.credential``), or None
    for an unknown token, an expired one, or when tokens are disabled."""
    secret = _secret(state)
    if secret is None:
        return None
    _sweep(state)
    token = state.metadata_image.delegation_tokens.get(token_id)
    now = state.now_ms()
    if token is None or token.expiry_timestamp < now or token.max_timestamp < now:
        return None
    service = _service(state)
    key = (token_id, mechanism, token.issue_timestamp)
    credential = service.credentials.get(key)
    if credential is None:
        password = base64.b64encode(token_hmac(secret, token_id)).decode("ascii")
        credential = scram_credential(mechanism, password, TOKEN_ITERATIONS)
        service.credentials[key] = credential
    return TokenLogin(credential, token.owner, token.expiry_timestamp)


def _allow_token_requests(ctx: RequestContext) -> bool:
    """``ControllerApis.allowTokenRequests``."""
    if ctx.token_authenticated or ctx.security_protocol == "PLAINTEXT":
        return False
    return not (ctx.security_protocol == "SSL" and ctx.principal == "User:ANONYMOUS")


def _by_hmac(state: BrokerState, secret: str, given: bytes) -> DelegationToken | None:
    """``DelegationTokenCache.tokenForHmac``."""
    for token in state.metadata_image.delegation_tokens.values():
        if hmac.compare_digest(token_hmac(secret, token.token_id), given):
            return token
    return None


def _may_renew(token: DelegationToken, principal: str) -> bool:
    return principal == token.owner or principal in token.renewers


# --- CreateDelegationToken (38) -----------------------------------------------------------------


@register(38, 0, 3)
def handle_create_delegation_token(
    state: BrokerState, ctx: RequestContext, request: CreateDelegationTokenRequest
) -> Any:
    requester = ctx.principal
    owner = requester
    if ctx.api_version >= 3 and request.owner_principal_name:
        owner = f"{request.owner_principal_type}:{request.owner_principal_name}"
    owner_type, owner_name = _split(owner)
    # The requester is named from v3 on (CreateDelegationTokenResponse.prepareResponse).
    req_type, req_name = _split(requester) if ctx.api_version >= 3 else ("", "")
    response: Any = CREATE_RESPONSE(
        error_code=0,
        principal_type=owner_type,
        principal_name=owner_name,
        token_requester_principal_type=req_type,
        token_requester_principal_name=req_name,
        issue_timestamp_ms=ERROR_TIMESTAMP,
        expiry_timestamp_ms=ERROR_TIMESTAMP,
        max_timestamp_ms=ERROR_TIMESTAMP,
        token_id="",
        hmac=b"",
        throttle_time_ms=0,
    )
    if not _allow_token_requests(ctx):
        response.error_code = int(ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED)
        return response
    if owner != requester and not authorize(state, ctx, "CREATE_TOKENS", USER, owner):
        response.error_code = int(ErrorCode.DELEGATION_TOKEN_AUTHORIZATION_FAILED)
        return response
    # From here the controller answers: its error responses keep the fields' defaults.
    response.issue_timestamp_ms = response.expiry_timestamp_ms = response.max_timestamp_ms = 0
    secret = _secret(state)
    if secret is None:
        response.error_code = int(ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED)
        return response
    _sweep(state)
    renewers: list[str] = []
    for renewer in request.renewers:
        if renewer.principal_type != USER_TYPE:
            response.error_code = int(ErrorCode.INVALID_PRINCIPAL_TYPE)
            return response
        renewers.append(f"{renewer.principal_type}:{renewer.principal_name}")
    now = state.now_ms()
    max_lifetime = _ms(state, MAX_LIFETIME)
    if request.max_lifetime_ms > 0:
        max_lifetime = min(max_lifetime, request.max_lifetime_ms)
    max_timestamp = now + max_lifetime
    token = DelegationToken(
        token_id=random_uuid_text(state.random),
        owner=owner,
        requester=requester,
        renewers=tuple(renewers),
        issue_timestamp=now,
        max_timestamp=max_timestamp,
        expiry_timestamp=min(max_timestamp, now + _ms(state, EXPIRY_TIME)),
    )
    state.append_metadata([mimage.delegation_token_record(token)])
    response.issue_timestamp_ms = token.issue_timestamp
    response.expiry_timestamp_ms = token.expiry_timestamp
    response.max_timestamp_ms = token.max_timestamp
    response.token_id = token.token_id
    response.hmac = token_hmac(secret, token.token_id)
    return response


# --- RenewDelegationToken (39) and ExpireDelegationToken (40) -----------------------------------


def _find_for_change(
    state: BrokerState, ctx: RequestContext, given: bytes
) -> tuple[DelegationToken | None, ErrorCode]:
    """The checks Renew and Expire share (``DelegationTokenControlManager``)."""
    secret = _secret(state)
    if secret is None:
        return None, ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED
    _sweep(state)
    token = _by_hmac(state, secret, given)
    if token is None:
        return None, ErrorCode.DELEGATION_TOKEN_NOT_FOUND
    now = state.now_ms()
    if token.max_timestamp < now or token.expiry_timestamp < now:
        return None, ErrorCode.DELEGATION_TOKEN_EXPIRED
    if not _may_renew(token, ctx.principal):
        return None, ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH
    return token, ErrorCode.NONE


@register(39, 0, 2)
def handle_renew_delegation_token(
    state: BrokerState, ctx: RequestContext, request: RenewDelegationTokenRequest
) -> Any:
    if not _allow_token_requests(ctx):
        return RENEW_RESPONSE(
            error_code=int(ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED),
            expiry_timestamp_ms=ERROR_TIMESTAMP,
            throttle_time_ms=0,
        )
    token, error = _find_for_change(state, ctx, bytes(request.hmac))
    if token is None:
        return RENEW_RESPONSE(error_code=int(error), expiry_timestamp_ms=0, throttle_time_ms=0)
    period = _ms(state, EXPIRY_TIME)
    if request.renew_period_ms > 0:
        period = min(period, request.renew_period_ms)
    expiry = min(token.max_timestamp, state.now_ms() + period)
    state.append_metadata([mimage.delegation_token_record(replace(token, expiry_timestamp=expiry))])
    return RENEW_RESPONSE(error_code=0, expiry_timestamp_ms=expiry, throttle_time_ms=0)


@register(40, 0, 2)
def handle_expire_delegation_token(
    state: BrokerState, ctx: RequestContext, request: ExpireDelegationTokenRequest
) -> Any:
    if not _allow_token_requests(ctx):
        return EXPIRE_RESPONSE(
            error_code=int(ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED),
            expiry_timestamp_ms=ERROR_TIMESTAMP,
            throttle_time_ms=0,
        )
    token, error = _find_for_change(state, ctx, bytes(request.hmac))
    if token is None:
        return EXPIRE_RESPONSE(error_code=int(error), expiry_timestamp_ms=0, throttle_time_ms=0)
    period = request.expiry_time_period_ms
    if period < 0:  # expire now: the token is removed
        state.append_metadata([mimage.remove_delegation_token_record(token.token_id)])
        return EXPIRE_RESPONSE(error_code=0, expiry_timestamp_ms=period, throttle_time_ms=0)
    expiry = min(token.max_timestamp, state.now_ms() + period)
    state.append_metadata([mimage.delegation_token_record(replace(token, expiry_timestamp=expiry))])
    return EXPIRE_RESPONSE(error_code=0, expiry_timestamp_ms=expiry, throttle_time_ms=0)


# --- DescribeDelegationToken (41) ---------------------------------------------------------------


@register(41, 0, 3)
def handle_describe_delegation_token(
    state: BrokerState, ctx: RequestContext, request: DescribeDelegationTokenRequest
) -> Any:
    def answer(error: ErrorCode, tokens: list[Any]) -> Any:
        return DESCRIBE_RESPONSE(error_code=int(error), tokens=tokens, throttle_time_ms=0)

    if not _allow_token_requests(ctx):
        return answer(ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, [])
    secret = _secret(state)
    if secret is None:
        return answer(ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED, [])
    owners = request.owners
    if owners is not None and not owners:
        return answer(ErrorCode.NONE, [])
    _sweep(state)
    wanted = None if owners is None else {f"{o.principal_type}:{o.principal_name}" for o in owners}
    me = ctx.principal
    out = []
    for token in state.metadata_image.delegation_tokens.values():
        related = {token.owner, token.requester, *token.renewers}  # TokenInformation.ownerOrRenewer
        if wanted is not None and not wanted & related:
            continue
        if not (
            me in related
            or authorize(state, ctx, "DESCRIBE", DELEGATION_TOKEN, token.token_id)
            or authorize(state, ctx, "DESCRIBE_TOKENS", USER, token.owner)
        ):
            continue
        owner_type, owner_name = _split(token.owner)
        req_type, req_name = _split(token.requester) if ctx.api_version >= 3 else ("", "")
        out.append(
            DESCRIBED(
                principal_type=owner_type,
                principal_name=owner_name,
                token_requester_principal_type=req_type,
                token_requester_principal_name=req_name,
                issue_timestamp=token.issue_timestamp,
                expiry_timestamp=token.expiry_timestamp,
                max_timestamp=token.max_timestamp,
                token_id=token.token_id,
                hmac=token_hmac(secret, token.token_id),
                renewers=[
                    DESCRIBED_RENEWER(principal_type=kind, principal_name=name)
                    for kind, name in map(_split, token.renewers)
                ],
            )
        )
    return answer(ErrorCode.NONE, out)
