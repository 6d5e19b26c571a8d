"""A release personality: what a broker of one Apache Kafka release advertises and how it behaves.

Approach: the facts (which API versions a release's broker advertises, which message format it
writes by default) live in ``kwire.protocol.releases``; this module turns them into the broker's
view, restricted to the APIs kwire's broker implements (Kafka advertises only what it serves, and
a client that sees an API advertised will use it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from kwire.protocol import releases

__all__ = ["Personality", "personality"]

#: Message format (``log.message.format.version``) a release writes by default, as the oldest
#: release of each magic: 0.10.0 introduced magic 1 (KIP-32), 0.11.0 magic 2 (KIP-98).
_FORMAT_BY_MAGIC: Final = {0: "0.9.0", 1: "0.10.0", 2: "3.0-IV1"}


@dataclass(frozen=True)
class Personality:
    """The broker-facing facts of one release (``personality("2.0")``)."""

    release: str
    advertised: Mapping[int, tuple[int, int]]  # api key -> (min, max) in ApiVersionsResponse
    accepted: Mapping[int, tuple[int, int]]  # api key -> (min, max) it really serves
    default_magic: int
    kip511: bool  # ApiVersions of an unknown version answered with a v0 UNSUPPORTED_VERSION

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
    return Personality(
        release=info.release,
        advertised=advertised,
        accepted=accepted,
        default_magic=info.default_message_format,
        kip511=info.api_versions_v0_fallback,
    )
