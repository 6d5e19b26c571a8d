"""Version negotiation: the highest version of each API both this client and the broker speak.

A broker's ``ApiVersionsResponse`` (KIP-35, Kafka 0.10.0+) lists its range per API key; kwire's
generated codecs know every version Kafka defines. A broker older than 0.10.0 has no ApiVersions
API and closes the connection on one; the client then uses the table of the release named by
``broker.version.fallback`` (librdkafka's option, default 0.9.0), from ``kwire.protocol.releases``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from kwire.errors import UnsupportedVersionError
from kwire.protocol import message_class
from kwire.protocol.releases import broker_api_versions

if TYPE_CHECKING:
    from kwire.protocol.messages import ApiVersionsResponse

__all__ = ["ApiVersionTable", "fallback_versions", "versions_from_response"]


class ApiVersionTable:
    """API key -> (min, max) a broker advertised, and the version to use for each request."""

    def __init__(
        self,
        advertised: Mapping[int, tuple[int, int]],
        *,
        source: str,
        features: Mapping[str, int] | None = None,
    ) -> None:
        self.advertised = dict(advertised)
        self.source = source
        #: finalized feature levels (ApiVersions v3+, KIP-584), e.g. ``transaction.version``
        self.features = dict(features or {})

    def has(self, api_key: int) -> bool:
        return api_key in self.advertised

    def pick(self, name: str, *, max_version: int | None = None) -> int:
        """The highest version of request ``name`` (e.g. ``"FetchRequest"``) both sides speak."""
        cls = message_class(name)
        api_key = cls.API_KEY
        assert api_key is not None
        ours = (cls.MIN_VERSION, cls.MAX_VERSION if max_version is None else max_version)
        theirs = self.advertised.get(api_key)
        if theirs is None:
            raise UnsupportedVersionError(
                f"the broker ({self.source}) does not serve {name.removesuffix('Request')}"
            )
        low, high = max(ours[0], theirs[0]), min(ours[1], theirs[1])
        if low > high:
            raise UnsupportedVersionError(
                f"no common version of {name.removesuffix('Request')}: the broker "
                f"({self.source}) serves v{theirs[0]}-v{theirs[1]}, this client v{ours[0]}-v{ours[1]}"
            )
        return high


def versions_from_response(response: ApiVersionsResponse) -> ApiVersionTable:
    return ApiVersionTable(
        {k.api_key: (k.min_version, k.max_version) for k in response.api_keys},
        source="ApiVersions",
        features={f.name: f.max_version_level for f in response.finalized_features or ()},
    )


def fallback_versions(release: str) -> ApiVersionTable:
    """The versions a broker of ``release`` (one without ApiVersions) serves."""
    return ApiVersionTable(
        broker_api_versions(release), source=f"broker.version.fallback={release}"
    )
