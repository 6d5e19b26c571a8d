"""A release personality: what a broker of one Apache Kafka release advertises and how it behaves.

Approach: the facts (which API versions a release's broker advertises, which message format it
writes by default) live in ``kwire.protocol.releases``; this module turns them into the broker's
view, restricted to the APIs kwire's broker implements (Kafka advertises only what it serves, and
a client that sees an API advertised will use it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field
from typing import Final

from kwire._lazy import lazy_dataclass
from kwire.protocol import releases

__all__ = ["Personality", "group_version_features", "personality"]

#: Message format (``log.message.format.version``) a release writes by default, as the oldest
#: release of each magic: 0.10.0 introduced magic 1 (KIP-32), 0.11.0 magic 2 (KIP-98).
_FORMAT_BY_MAGIC: Final = {0: "0.9.0", 1: "0.10.0", 2: "3.0-IV1"}


@lazy_dataclass(frozen=True)
class Personality:
    """The broker-facing facts of one release (``personality("2.0")``)."""

    release: str
    advertised: Mapping[int, tuple[int, int]]  # api key -> (min, max) in ApiVersionsResponse
    accepted: Mapping[int, tuple[int, int]]  # api key -> (min, max) it really serves
    default_magic: int
    kip511: bool  # ApiVersions of an unknown version answered with a v0 UNSUPPORTED_VERSION
    #: ApiVersions v3+ features: name -> (min, max) supported, name -> finalized level.
    supported_features: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    finalized_features: Mapping[str, int] = field(default_factory=dict)

    def supports(self, api_key: int, version: int) -> bool:
        found = self.accepted.get(api_key)
        return found is not None and found[0] <= version <= found[1]

    def default_broker_config(self) -> dict[str, str]:
        """Broker settings that differ by release (the stored message format)."""
        if self.default_magic == 2:
            return {}
        return {"log.message.format.version": _FORMAT_BY_MAGIC[self.default_magic]}


def personality(release: str, implemented: Mapping[int, tuple[int, int]]) -> Personality:
    """The personality of ``release`` limited to the ``implemented`` API versions."""
    info = releases.broker_personality(release)
    advertised: dict[int, tuple[int, int]] = {}
    accepted: dict[int, tuple[int, int]] = {}
    for key, (lo, hi) in info.api_versions.items():
        if key not in implemented:
            continue
        ilo, ihi = implemented[key]
        top = min(hi, ihi)
        if top < max(lo, ilo):
            continue
        advertised[key] = (lo, top)
        alo, ahi = info.accepted_versions.get(key, (lo, hi))
        accepted[key] = (max(alo, ilo), min(ahi, top))
    supported = dict(info.supported_features or {})
    finalized = dict(info.finalized_features or {})
    group_supported, group_finalized = group_version_features(info.release)
    supported.update(group_supported)
    finalized.update(group_finalized)
    return Personality(
        release=info.release,
        advertised=advertised,
        accepted=accepted,
        default_magic=info.default_message_format,
        kip511=info.api_versions_v0_fallback,
        supported_features=supported,
        finalized_features=finalized,
    )


def group_version_features(release: str) -> tuple[dict[str, tuple[int, int]], dict[str, int]]:
    """``group.version`` as ApiVersions v3+ advertises it: (supported ranges, finalized levels).

    Kafka 4.0 made KIP-848 GA: ``GroupVersion.GV_1`` is supported and finalized on a new 4.x
    cluster, and the broker serves ConsumerGroupHeartbeat only when the finalized level is >= 1
    (``KafkaApis.isConsumerGroupProtocolEnabled``). Before 4.0 the feature is not advertised
    (3.7-3.9 ran the protocol as an early-access config). The other 4.x features come from
    ``kwire.protocol.releases``; the finalized levels a broker serves are those of its metadata
    log (``BrokerState.finalized_features``), these are a new cluster's.
    """
    parts = tuple(int(p) for p in release.split(".")[:2])
    if parts >= (4, 0):
        return {"group.version": (0, 1)}, {"group.version": 1}
    return {}, {}
