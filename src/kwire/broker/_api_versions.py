"""ApiVersions (API key 18, v0-4): the versions and, from v3, the features the broker serves.

After Kafka 3.9's ``KafkaApis.handleApiVersionsRequest`` and ``ApiVersionsResponse``. v1 adds
``throttle_time_ms``; v3 is flexible and brings KIP-511 (the client's software name and version,
validated here) and KIP-584's supported and finalized features; v4 lists features whose lowest
version is 0 (v3 clients reject them). An ApiVersions version the broker does not know is
answered by the server, in v0, with ``api_versions_response(state, UNSUPPORTED_VERSION)``.
A module of its own so that a broker's first requests load only their own handlers.
"""

from __future__ import annotations

import re
from typing import Any, Final

from kwire.broker._apis import register
from kwire.broker._context import RequestContext
from kwire.broker._state import BrokerState
from kwire.protocol import ErrorCode
from kwire.protocol.messages import ApiVersionsRequest, ApiVersionsResponse

__all__ = ["api_versions_response", "handle_api_versions"]

#: KIP-511's pattern for the client software name and version in ApiVersions v3+.
_SOFTWARE: Final = re.compile(r"^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$")

API_VERSIONS_RESPONSE: Final = ApiVersionsResponse
API_VERSION: Final = ApiVersionsResponse.ApiVersion
SUPPORTED_FEATURE: Final = ApiVersionsResponse.SupportedFeatureKey
FINALIZED_FEATURE: Final = ApiVersionsResponse.FinalizedFeatureKey


def api_versions_response(
    state: BrokerState, error: ErrorCode = ErrorCode.NONE, version: int = 0
) -> Any:
    """The personality's API ranges and, from v3, its features (Kafka's ``ApiVersionsResponse``:
    a feature whose lowest supported version is 0 is left out below v4, as v3 clients reject it)."""
    personality = state.personality
    keys = [
        API_VERSION(api_key=key, min_version=lo, max_version=hi)
        for key, (lo, hi) in sorted(personality.advertised.items())
    ]
    response: Any = API_VERSIONS_RESPONSE(error_code=int(error), api_keys=keys, throttle_time_ms=0)
    if version >= 3 and error == ErrorCode.NONE:
        response.supported_features = [
            SUPPORTED_FEATURE(name=name, min_version=lo, max_version=hi)
            for name, (lo, hi) in sorted(personality.supported_features.items())
            if version >= 4 or lo > 0
        ]
        finalized = sorted(state.finalized_features.items())
        response.finalized_features = [
            FINALIZED_FEATURE(name=name, max_version_level=level, min_version_level=level)
            for name, level in finalized
        ]
        # Kafka's epoch is the metadata image's offset (a client keeps the newest it has seen).
        response.finalized_features_epoch = state.metadata_log.features_epoch if finalized else -1
    return response


@register(18, 0, 4)
def handle_api_versions(
    state: BrokerState, ctx: RequestContext, request: ApiVersionsRequest
) -> Any:
    """ApiVersions; v3+ validates the client software name and version (KIP-511)."""
    if ctx.api_version >= 3:
        for value in (request.client_software_name, request.client_software_version):
            if not value or not _SOFTWARE.match(value):
                return API_VERSIONS_RESPONSE(error_code=int(ErrorCode.INVALID_REQUEST))
    return api_versions_response(state, version=ctx.api_version)
