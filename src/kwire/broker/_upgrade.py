"""Upgrade readiness: which clients use protocol versions a later Kafka release removed.

Approach: the versions a release removed are the ones the release line before it served and it no
longer accepts, from ``kwire.protocol.releases`` (for 4.0 exactly KIP-896's list: Produce v0-2,
Fetch v0-3, ListOffsets v0, OffsetCommit v0-1, OffsetFetch v0, JoinGroup v0-1, CreateTopics
v0-1, DeleteTopics v0, OffsetForLeaderEpoch v0-1, the ACL, DescribeConfigs, DescribeLogDirs,
AlterReplicaLogDirs and delegation-token v0s, WriteTxnMarkers v0). The broker counts requests by
(client software, client id, API, version) anyway (``_metrics``); the report is those counts
filtered by the removed set, so it names each application (KIP-511 software name and version,
"unknown" for clients older than ApiVersions v3, as Kafka's ``ClientInformation``) before the
upgrade breaks it.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import asdict
from typing import Any

from kwire._lazy import lazy_dataclass
from kwire.protocol import releases

__all__ = ["RemovedUse", "removed_versions", "report"]

UNKNOWN = "unknown"  # ClientInformation.UNKNOWN_NAME_OR_VERSION


@functools.cache
def removed_versions(release: str) -> frozenset[tuple[int, int]]:
    """(api key, version) pairs the release line before ``release`` served and it refuses."""
    target = releases.broker_personality(release)
    previous = _previous_line(target.release)
    if previous is None:
        return frozenset()
    before = releases.broker_personality(previous)
    out: set[tuple[int, int]] = set()
    for key, (lo, hi) in before.api_versions.items():
        served = before.accepted_versions.get(key, (lo, hi))
        now = target.accepted_versions.get(key, target.api_versions.get(key))
        top = served[1] if now is None else min(served[1], now[0] - 1)
        out.update((key, v) for v in range(served[0], top + 1))
    return frozenset(out)


#: The last release line of each major version (what ``X.0`` follows).
_LAST_LINE = {4: "3.9", 3: "2.8", 2: "1.1", 1: "0.11.0"}


def _previous_line(release: str) -> str | None:
    parts = [int(p) for p in release.split(".")[:2]]
    if parts[0] == 0:
        return None  # 0.x lines only added versions
    if parts[1] > 0:
        return f"{parts[0]}.{parts[1] - 1}"
    return _LAST_LINE.get(parts[0])


@lazy_dataclass(frozen=True)
class RemovedUse:
    """One client's use of a removed version."""

    client_software_name: str
    client_software_version: str
    client_id: str
    api: str
    api_key: int
    version: int
    requests: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def describe(self, release: str) -> str:
        return (
            f"client {self.client_software_name}/{self.client_software_version} "
            f"(client_id={self.client_id}) used {self.api} v{self.version}, removed in Kafka "
            f"{release} (KIP-896)"
        )


#: (software name, software version, client id, api key, version) -> requests
Usage = Mapping[tuple[str, str, str, int, int], int]


def report(usage: Usage, release: str = "4.0") -> list[RemovedUse]:
    """Every client that used a version ``release`` removed, most requests first."""
    removed = removed_versions(release)
    out = [
        RemovedUse(name, version, client_id, releases.api_name(key), key, api_version, count)
        for (name, version, client_id, key, api_version), count in usage.items()
        if (key, api_version) in removed
    ]
    out.sort(key=lambda u: (u.client_software_name, u.client_id, u.api_key, u.version))
    return out
