"""Which Kafka release speaks which API versions.

kwire's bundled corpus is the union of Kafka 3.9.1's and Kafka 4.3.1's message specs (see
docs/versions.md), so one kwire decodes a 0.10-era client and a 4.3 client side by side. A broker
or a tool built on kwire often needs the narrower view of one release: what a 3.9 broker supports
versus a 4.3 broker. This module answers that from fixed tables:

    >>> from kwire.protocol.releases import supported_versions, releases_speaking
    >>> supported_versions("3.9")["Produce"]
    VersionRange('0-11')
    >>> releases_speaking("Metadata", 13)
    ('4.3',)

The tables (``_TABLES``) are data, written by ``tools/merge_specs.py releases`` and checked by the
tests against their sources: "3.9" is every API of Kafka 3.9.1's spec files (the kafka-clients
3.9.1 jar) with its stable versions (a version marked ``latestVersionUnstable`` is left out, as a
3.9 broker does not advertise it); "4.3" is every API of Kafka 4.3.1's spec files as kio 0.6.5
carries them. An API is named as in Kafka's ``ApiKeys`` without the Request/Response suffix
(``Produce``, ``ListConfigResources``); API keys work too. Listeners (broker, controller, zkBroker)
are not modelled: a table says what the release's spec files define, not which node serves it.

``DIFFERS_FROM_3_9_1`` lists the few message-versions Kafka 3.9.1 also defines but differently (a
field renamed or added by 4.x; kwire follows 4.x): everything else 3.9.1 defines, kwire encodes
exactly as Kafka 3.9.1 does, which is what the 3.9.1 Java oracle tests check.

Kafka 4.0, 4.1 and 4.2 are not in these spec-file tables: see docs/versions.md for what could be
established about them and why they are left out rather than guessed.

Broker personalities (``broker_api_versions``, ``broker_personality``) are a second, separate view:
for every Apache Kafka release from 0.8.0 to 4.3 (``BROKER_RELEASES``), what that release's broker
advertises in its ApiVersionsResponse on a client listener (``kwire broker --kafka-version``):

    >>> from kwire.protocol.releases import broker_api_versions, parse_release
    >>> broker_api_versions("0.10.2")[0], broker_api_versions("2.0")[1]
    ((0, 2), (0, 8))
    >>> parse_release("0.10.2.1"), parse_release("3.9.1")
    ('0.10.2', '3.9')

Sources of the personality tables (facts, not code):

- franz-go's ``pkg/kversion`` (twmb/franz-go at adb3a18, requests.go: tables ``z080`` ... ``z39``
  for ZooKeeper brokers, ``b28`` ... ``b42`` for KRaft brokers, each change noted with its KAFKA
  issue and KIP), evaluated into the tables below.
- Apache Kafka's own sources at the release tags (apache/kafka: 2.4.0 ... 3.8.0 tags, the 3.9
  branch): the request specs' ``validVersions``/``latestVersionUnstable``/``listeners`` give exactly
  franz-go's ZooKeeper tables for 2.4-3.9 and its KRaft tables for 3.3-3.9 (2.7's ``isEnabled``
  hides the Raft APIs 52-55). For the KRaft previews 2.8-3.2 the specs' listeners and franz-go
  differ on Envelope (advertised while the broker forwards, ``ApiVersionManager``) and
  DescribeQuorum; the tables follow franz-go, which records what those brokers answered.
- 4.3: not in franz-go; it is 4.2's table plus the two broker-listener versions Kafka 4.3.1's spec
  files (kio 0.6.5, the "4.3" spec table above) have beyond 4.2: InitProducerId 6 and
  DescribeLogDirs 5. The share-group APIs (76-79) start at version 1 in 4.1-4.3 as in 4.3.1's specs
  (v0 was the never-advertised early-access version; franz-go records maxima only).
- KIP-896 (4.0) minimums from franz-go's ``b40``, checked against 4.3.1's spec files; JoinGroup's
  minimum is 2 in 4.0 and 0 again from 4.1 (KAFKA-19444). 4.x brokers advertise Produce from
  version 0 (KAFKA-18659, for librdkafka) but accept only 3+: ``accepted_versions`` says so.
- Telemetry (GetTelemetrySubscriptions 71, PushTelemetry 72, KRaft 3.7+) is advertised only when a
  telemetry receiver is configured (Kafka's ``ApiVersionManager``): ``conditional_api_versions``.
- Feature ranges (ApiVersions v3+) come from Kafka's ``BrokerFeatures``/``MetadataVersion``/
  ``Features`` at the 3.3.0 ... 3.8.0 tags and the 3.9 branch. For 4.x, the non-metadata features
  follow Kafka's ``Feature`` enum and each ``FeatureVersion`` (``TransactionVersion``,
  ``GroupVersion``, ``EligibleLeaderReplicasVersion``, ``ShareVersion``, ``StreamsVersion``): a
  broker advertises ``minimumProduction()``..``latestProduction`` of a feature whose latest
  production level is above 0 (``BrokerFeatures.defaultSupportedFeatures``), and a new cluster
  finalizes each feature's ``defaultLevel`` for the release's metadata.version (a level of 0 is not
  listed). ``metadata.version`` is capped at 3.9-IV0 (21), the newest level kwire's metadata log
  writes (minimum 3.3-IV3, 7, as 4.0's ``MetadataVersion.MINIMUM_VERSION``). ZooKeeper brokers and
  the KRaft previews 2.8-3.2 are ``None`` (unknown).

0.8.x and 0.9.x brokers have no ApiVersions API (KIP-35 came in 0.10.0): their table is what the
broker accepts, with every API's minimum version 0.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from kwire._lazy import lazy_dataclass
from kwire.protocol._spec._versions import VersionRange

__all__ = [
    "BROKER_RELEASES",
    "DIFFERS_FROM_3_9_1",
    "NEWEST",
    "RELEASES",
    "BrokerPersonality",
    "api_key",
    "api_name",
    "broker_api_versions",
    "broker_personality",
    "match_releases",
    "parse_release",
    "release_info",
    "releases_speaking",
    "supported_versions",
    "supported_versions_by_key",
]

# --- generated by tools/merge_specs.py releases: begin ---
# release -> {api key: (api name, lowest version, highest version)}
_TABLES: Final[dict[str, dict[int, tuple[str, int, int]]]] = {
    "3.9": {
        0: ("Produce", 0, 11),
        1: ("Fetch", 0, 17),
        2: ("ListOffsets", 0, 9),
        3: ("Metadata", 0, 12),
        4: ("LeaderAndIsr", 0, 7),
        5: ("StopReplica", 0, 4),
        6: ("UpdateMetadata", 0, 8),
        7: ("ControlledShutdown", 0, 3),
        8: ("OffsetCommit", 0, 9),
        9: ("OffsetFetch", 0, 9),
        10: ("FindCoordinator", 0, 6),
        11: ("JoinGroup", 0, 9),
        12: ("Heartbeat", 0, 4),
        13: ("LeaveGroup", 0, 5),
        14: ("SyncGroup", 0, 5),
        15: ("DescribeGroups", 0, 5),
        16: ("ListGroups", 0, 5),
        17: ("SaslHandshake", 0, 1),
        18: ("ApiVersions", 0, 4),
        19: ("CreateTopics", 0, 7),
        20: ("DeleteTopics", 0, 6),
        21: ("DeleteRecords", 0, 2),
        22: ("InitProducerId", 0, 5),
        23: ("OffsetForLeaderEpoch", 0, 4),
        24: ("AddPartitionsToTxn", 0, 5),
        25: ("AddOffsetsToTxn", 0, 4),
        26: ("EndTxn", 0, 4),
        27: ("WriteTxnMarkers", 0, 1),
        28: ("TxnOffsetCommit", 0, 4),
        29: ("DescribeAcls", 0, 3),
        30: ("CreateAcls", 0, 3),
        31: ("DeleteAcls", 0, 3),
        32: ("DescribeConfigs", 0, 4),
        33: ("AlterConfigs", 0, 2),
        34: ("AlterReplicaLogDirs", 0, 2),
        35: ("DescribeLogDirs", 0, 4),
        36: ("SaslAuthenticate", 0, 2),
        37: ("CreatePartitions", 0, 3),
        38: ("CreateDelegationToken", 0, 3),
        39: ("RenewDelegationToken", 0, 2),
        40: ("ExpireDelegationToken", 0, 2),
        41: ("DescribeDelegationToken", 0, 3),
        42: ("DeleteGroups", 0, 2),
        43: ("ElectLeaders", 0, 2),
        44: ("IncrementalAlterConfigs", 0, 1),
        45: ("AlterPartitionReassignments", 0, 0),
        46: ("ListPartitionReassignments", 0, 0),
        47: ("OffsetDelete", 0, 0),
        48: ("DescribeClientQuotas", 0, 1),
        49: ("AlterClientQuotas", 0, 1),
        50: ("DescribeUserScramCredentials", 0, 0),
        51: ("AlterUserScramCredentials", 0, 0),
        52: ("Vote", 0, 1),
        53: ("BeginQuorumEpoch", 0, 1),
        54: ("EndQuorumEpoch", 0, 1),
        55: ("DescribeQuorum", 0, 2),
        56: ("AlterPartition", 0, 3),
        57: ("UpdateFeatures", 0, 1),
        58: ("Envelope", 0, 0),
        59: ("FetchSnapshot", 0, 1),
        60: ("DescribeCluster", 0, 1),
        61: ("DescribeProducers", 0, 0),
        62: ("BrokerRegistration", 0, 4),
        63: ("BrokerHeartbeat", 0, 1),
        64: ("UnregisterBroker", 0, 0),
        65: ("DescribeTransactions", 0, 0),
        66: ("ListTransactions", 0, 1),
        67: ("AllocateProducerIds", 0, 0),
        68: ("ConsumerGroupHeartbeat", 0, 0),
        69: ("ConsumerGroupDescribe", 0, 0),
        70: ("ControllerRegistration", 0, 0),
        71: ("GetTelemetrySubscriptions", 0, 0),
        72: ("PushTelemetry", 0, 0),
        73: ("AssignReplicasToDirs", 0, 0),
        74: ("ListClientMetricsResources", 0, 0),
        75: ("DescribeTopicPartitions", 0, 0),
        80: ("AddRaftVoter", 0, 0),
        81: ("RemoveRaftVoter", 0, 0),
        82: ("UpdateRaftVoter", 0, 0),
    },
    "4.3": {
        0: ("Produce", 3, 13),
        1: ("Fetch", 4, 18),
        2: ("ListOffsets", 1, 11),
        3: ("Metadata", 0, 13),
        8: ("OffsetCommit", 2, 10),
        9: ("OffsetFetch", 1, 10),
        10: ("FindCoordinator", 0, 6),
        11: ("JoinGroup", 0, 9),
        12: ("Heartbeat", 0, 4),
        13: ("LeaveGroup", 0, 5),
        14: ("SyncGroup", 0, 5),
        15: ("DescribeGroups", 0, 6),
        16: ("ListGroups", 0, 5),
        17: ("SaslHandshake", 0, 1),
        18: ("ApiVersions", 0, 4),
        19: ("CreateTopics", 2, 7),
        20: ("DeleteTopics", 1, 6),
        21: ("DeleteRecords", 0, 2),
        22: ("InitProducerId", 0, 6),
        23: ("OffsetForLeaderEpoch", 2, 4),
        24: ("AddPartitionsToTxn", 0, 5),
        25: ("AddOffsetsToTxn", 0, 4),
        26: ("EndTxn", 0, 5),
        27: ("WriteTxnMarkers", 1, 2),
        28: ("TxnOffsetCommit", 0, 5),
        29: ("DescribeAcls", 1, 3),
        30: ("CreateAcls", 1, 3),
        31: ("DeleteAcls", 1, 3),
        32: ("DescribeConfigs", 1, 4),
        33: ("AlterConfigs", 0, 2),
        34: ("AlterReplicaLogDirs", 1, 2),
        35: ("DescribeLogDirs", 1, 5),
        36: ("SaslAuthenticate", 0, 2),
        37: ("CreatePartitions", 0, 3),
        38: ("CreateDelegationToken", 1, 3),
        39: ("RenewDelegationToken", 1, 2),
        40: ("ExpireDelegationToken", 1, 2),
        41: ("DescribeDelegationToken", 1, 3),
        42: ("DeleteGroups", 0, 2),
        43: ("ElectLeaders", 0, 2),
        44: ("IncrementalAlterConfigs", 0, 1),
        45: ("AlterPartitionReassignments", 0, 1),
        46: ("ListPartitionReassignments", 0, 0),
        47: ("OffsetDelete", 0, 0),
        48: ("DescribeClientQuotas", 0, 1),
        49: ("AlterClientQuotas", 0, 1),
        50: ("DescribeUserScramCredentials", 0, 0),
        51: ("AlterUserScramCredentials", 0, 0),
        52: ("Vote", 0, 2),
        53: ("BeginQuorumEpoch", 0, 1),
        54: ("EndQuorumEpoch", 0, 1),
        55: ("DescribeQuorum", 0, 2),
        56: ("AlterPartition", 2, 3),
        57: ("UpdateFeatures", 0, 2),
        58: ("Envelope", 0, 0),
        59: ("FetchSnapshot", 0, 1),
        60: ("DescribeCluster", 0, 2),
        61: ("DescribeProducers", 0, 0),
        62: ("BrokerRegistration", 0, 4),
        63: ("BrokerHeartbeat", 0, 2),
        64: ("UnregisterBroker", 0, 0),
        65: ("DescribeTransactions", 0, 0),
        66: ("ListTransactions", 0, 2),
        67: ("AllocateProducerIds", 0, 0),
        68: ("ConsumerGroupHeartbeat", 0, 1),
        69: ("ConsumerGroupDescribe", 0, 1),
        70: ("ControllerRegistration", 0, 0),
        71: ("GetTelemetrySubscriptions", 0, 0),
        72: ("PushTelemetry", 0, 0),
        73: ("AssignReplicasToDirs", 0, 0),
        74: ("ListConfigResources", 0, 1),
        75: ("DescribeTopicPartitions", 0, 0),
        76: ("ShareGroupHeartbeat", 1, 1),
        77: ("ShareGroupDescribe", 1, 1),
        78: ("ShareFetch", 1, 2),
        79: ("ShareAcknowledge", 1, 2),
        80: ("AddRaftVoter", 0, 1),
        81: ("RemoveRaftVoter", 0, 0),
        82: ("UpdateRaftVoter", 0, 0),
        83: ("InitializeShareGroupState", 0, 0),
        84: ("ReadShareGroupState", 0, 0),
        85: ("WriteShareGroupState", 0, 1),
        86: ("DeleteShareGroupState", 0, 0),
        87: ("ReadShareGroupStateSummary", 0, 1),
        88: ("StreamsGroupHeartbeat", 0, 0),
        89: ("StreamsGroupDescribe", 0, 0),
        90: ("DescribeShareGroupOffsets", 0, 1),
        91: ("AlterShareGroupOffsets", 0, 0),
        92: ("DeleteShareGroupOffsets", 0, 0),
    },
}
#: Message-versions Kafka 3.9.1 also defines (under this name, or the one Kafka 4.x renamed
#: it from) but differently (a field renamed or added): kwire follows Kafka 4.x there.
DIFFERS_FROM_3_9_1: Final[frozenset[tuple[str, int]]] = frozenset(
    {
        ("ListConfigResourcesRequest", 0),
        ("ListConfigResourcesResponse", 0),
        ("ReadShareGroupStateSummaryResponse", 0),
        ("VoteRequest", 0),
        ("VoteRequest", 1),
    }
)
# --- generated by tools/merge_specs.py releases: end ---

#: Full Kafka versions of the tabled releases and where each table comes from.
_INFO: Final[dict[str, tuple[str, str]]] = {
    "3.9": ("3.9.1", "Kafka 3.9.1 spec files (kafka-clients-3.9.1.jar), stable versions"),
    "4.3": ("4.3.1", "Kafka 4.3.1 spec files as carried by kio 0.6.5"),
}

#: The releases this module knows, oldest first.
RELEASES: Final[tuple[str, ...]] = tuple(
    sorted(_TABLES, key=lambda r: tuple(map(int, r.split("."))))
)


def _release(release: str) -> str:
    """Normalise ``"3.9"``, ``"3.9.1"`` and ``"v4.3"`` to a table name."""
    r = release.strip().removeprefix("v")
    parts = r.split(".")
    key = ".".join(parts[:2])
    if key not in _TABLES or (len(parts) == 3 and _INFO[key][0] != r):
        known = ", ".join(f"{k} ({_INFO[k][0]})" for k in RELEASES)
        raise KeyError(f"unknown Kafka release {release!r}; known: {known}")
    return key


def api_name(api: str | int) -> str:
    """The API name (``"Metadata"``) for an API key or a name, with or without the
    ``Request``/``Response`` suffix; ``KeyError`` if no tabled release has it."""
    if isinstance(api, int):
        for table in _TABLES.values():
            if api in table:
                return table[api][0]
        raise KeyError(f"unknown API key {api}")
    name = api.removesuffix("Request").removesuffix("Response")
    for table in _TABLES.values():
        for entry in table.values():
            if entry[0] == name:
                return name
    raise KeyError(f"unknown API {api!r}")


def api_key(api: str | int) -> int:
    """The API key of an API name (or a key, checked)."""
    name = api_name(api)
    for table in _TABLES.values():
        for key, entry in table.items():
            if entry[0] == name:
                return key
    raise KeyError(f"unknown API {api!r}")  # pragma: no cover - api_name already checked


def supported_versions(release: str) -> dict[str, VersionRange]:
    """Every API the release speaks, by API name, with its version range."""
    return {name: VersionRange(lo, hi) for name, lo, hi in _TABLES[_release(release)].values()}


def supported_versions_by_key(release: str) -> dict[int, VersionRange]:
    """Every API the release speaks, by API key, with its version range."""
    return {key: VersionRange(lo, hi) for key, (_n, lo, hi) in _TABLES[_release(release)].items()}


def releases_speaking(api: str | int, version: int) -> tuple[str, ...]:
    """The tabled releases that speak ``version`` of ``api`` (oldest first; may be empty)."""
    key = api_key(api)
    out = []
    for release in RELEASES:
        entry = _TABLES[release].get(key)
        if entry is not None and entry[1] <= version <= entry[2]:
            out.append(release)
    return tuple(out)


def match_releases(versions: Mapping[str | int, int | VersionRange]) -> tuple[str, ...]:
    """The tabled releases that speak every given API version (or whole range): for example the
    versions a client uses, or what a peer advertised in ApiVersions."""
    wanted = {api_key(api): v for api, v in versions.items()}
    out = []
    for release in RELEASES:
        table = _TABLES[release]
        ok = True
        for key, v in wanted.items():
            entry = table.get(key)
            rng = VersionRange(entry[1], entry[2]) if entry is not None else VersionRange()
            if not rng.contains(v):
                ok = False
                break
        if ok:
            out.append(release)
    return tuple(out)


def release_info(release: str) -> dict[str, str]:
    """The full Kafka version of a tabled release and the source of its table."""
    key = _release(release)
    full, source = _INFO[key]
    return {"release": key, "kafka_version": full, "source": source}


# --- broker personalities: every release 0.8.0 ... 4.3 (see the module docstring for sources) ---

#: Every Apache Kafka release with a broker personality, oldest first.
BROKER_RELEASES: Final[tuple[str, ...]] = (
    "0.8.0", "0.8.1", "0.8.2", "0.9.0", "0.10.0", "0.10.1", "0.10.2", "0.11.0", "1.0", "1.1",
    "2.0", "2.1", "2.2", "2.3", "2.4", "2.5", "2.6", "2.7", "2.8",
    "3.0", "3.1", "3.2", "3.3", "3.4", "3.5", "3.6", "3.7", "3.8", "3.9",
    "4.0", "4.1", "4.2", "4.3",
)  # fmt: skip
#: The newest release kwire has a personality for.
NEWEST: Final[str] = "4.3"

# What a ZooKeeper-mode broker advertises (0.8.0 ... 3.9): release -> {api key: (min, max)}.
# Inter-broker APIs (LeaderAndIsr, StopReplica, ...) are included: a ZooKeeper broker lists them.
# fmt: off
_ZK: Final[dict[str, dict[int, tuple[int, int]]]] = {
    "0.8.0": {
        0: (0, 0), 1: (0, 0), 2: (0, 0), 3: (0, 0), 4: (0, 0), 5: (0, 0), 6: (0, 0), 7: (0, 0),
    },
    "0.8.1": {
        0: (0, 0), 1: (0, 0), 2: (0, 0), 3: (0, 0), 4: (0, 0), 5: (0, 0), 6: (0, 0), 7: (0, 0),
        8: (0, 0), 9: (0, 0),
    },
    "0.8.2": {
        0: (0, 0), 1: (0, 0), 2: (0, 0), 3: (0, 0), 4: (0, 0), 5: (0, 0), 6: (0, 0), 7: (0, 0),
        8: (0, 1), 9: (0, 1), 10: (0, 0), 11: (0, 0), 12: (0, 0),
    },
    "0.9.0": {
        0: (0, 1), 1: (0, 1), 2: (0, 0), 3: (0, 0), 4: (0, 0), 5: (0, 0), 6: (0, 1), 7: (0, 1),
        8: (0, 2), 9: (0, 1), 10: (0, 0), 11: (0, 0), 12: (0, 0), 13: (0, 0), 14: (0, 0),
        15: (0, 0), 16: (0, 0),
    },
    "0.10.0": {
        0: (0, 2), 1: (0, 2), 2: (0, 0), 3: (0, 1), 4: (0, 0), 5: (0, 0), 6: (0, 2), 7: (0, 1),
        8: (0, 2), 9: (0, 1), 10: (0, 0), 11: (0, 0), 12: (0, 0), 13: (0, 0), 14: (0, 0),
        15: (0, 0), 16: (0, 0), 17: (0, 0), 18: (0, 0),
    },
    "0.10.1": {
        0: (0, 2), 1: (0, 3), 2: (0, 1), 3: (0, 2), 4: (0, 0), 5: (0, 0), 6: (0, 2), 7: (0, 1),
        8: (0, 2), 9: (0, 1), 10: (0, 0), 11: (0, 1), 12: (0, 0), 13: (0, 0), 14: (0, 0),
        15: (0, 0), 16: (0, 0), 17: (0, 0), 18: (0, 0), 19: (0, 0), 20: (0, 0),
    },
    "0.10.2": {
        0: (0, 2), 1: (0, 3), 2: (0, 1), 3: (0, 2), 4: (0, 0), 5: (0, 0), 6: (0, 3), 7: (0, 1),
        8: (0, 2), 9: (0, 1), 10: (0, 0), 11: (0, 1), 12: (0, 0), 13: (0, 0), 14: (0, 0),
        15: (0, 0), 16: (0, 0), 17: (0, 0), 18: (0, 0), 19: (0, 1), 20: (0, 0),
    },
    "0.11.0": {
        0: (0, 3), 1: (0, 5), 2: (0, 2), 3: (0, 4), 4: (0, 0), 5: (0, 0), 6: (0, 3), 7: (0, 1),
        8: (0, 3), 9: (0, 3), 10: (0, 1), 11: (0, 2), 12: (0, 1), 13: (0, 1), 14: (0, 1),
        15: (0, 1), 16: (0, 1), 17: (0, 0), 18: (0, 1), 19: (0, 2), 20: (0, 1), 21: (0, 0),
        22: (0, 0), 23: (0, 0), 24: (0, 0), 25: (0, 0), 26: (0, 0), 27: (0, 0), 28: (0, 0),
        29: (0, 0), 30: (0, 0), 31: (0, 0), 32: (0, 0), 33: (0, 0),
    },
    "1.0": {
        0: (0, 5), 1: (0, 6), 2: (0, 2), 3: (0, 5), 4: (0, 1), 5: (0, 0), 6: (0, 4), 7: (0, 1),
        8: (0, 3), 9: (0, 3), 10: (0, 1), 11: (0, 2), 12: (0, 1), 13: (0, 1), 14: (0, 1),
        15: (0, 1), 16: (0, 1), 17: (0, 1), 18: (0, 1), 19: (0, 2), 20: (0, 1), 21: (0, 0),
        22: (0, 0), 23: (0, 0), 24: (0, 0), 25: (0, 0), 26: (0, 0), 27: (0, 0), 28: (0, 0),
        29: (0, 0), 30: (0, 0), 31: (0, 0), 32: (0, 0), 33: (0, 0), 34: (0, 0), 35: (0, 0),
        36: (0, 0), 37: (0, 0),
    },
    "1.1": {
        0: (0, 5), 1: (0, 7), 2: (0, 2), 3: (0, 5), 4: (0, 1), 5: (0, 0), 6: (0, 4), 7: (0, 1),
        8: (0, 3), 9: (0, 3), 10: (0, 1), 11: (0, 2), 12: (0, 1), 13: (0, 1), 14: (0, 1),
        15: (0, 1), 16: (0, 1), 17: (0, 1), 18: (0, 1), 19: (0, 2), 20: (0, 1), 21: (0, 0),
        22: (0, 0), 23: (0, 0), 24: (0, 0), 25: (0, 0), 26: (0, 0), 27: (0, 0), 28: (0, 0),
        29: (0, 0), 30: (0, 0), 31: (0, 0), 32: (0, 1), 33: (0, 0), 34: (0, 0), 35: (0, 0),
        36: (0, 0), 37: (0, 0), 38: (0, 0), 39: (0, 0), 40: (0, 0), 41: (0, 0), 42: (0, 0),
    },
    "2.0": {
        0: (0, 6), 1: (0, 8), 2: (0, 3), 3: (0, 6), 4: (0, 1), 5: (0, 0), 6: (0, 4), 7: (0, 1),
        8: (0, 4), 9: (0, 4), 10: (0, 2), 11: (0, 3), 12: (0, 2), 13: (0, 2), 14: (0, 2),
        15: (0, 2), 16: (0, 2), 17: (0, 1), 18: (0, 2), 19: (0, 3), 20: (0, 2), 21: (0, 1),
        22: (0, 1), 23: (0, 1), 24: (0, 1), 25: (0, 1), 26: (0, 1), 27: (0, 0), 28: (0, 1),
        29: (0, 1), 30: (0, 1), 31: (0, 1), 32: (0, 2), 33: (0, 1), 34: (0, 1), 35: (0, 1),
        36: (0, 0), 37: (0, 1), 38: (0, 1), 39: (0, 1), 40: (0, 1), 41: (0, 1), 42: (0, 1),
    },
    "2.1": {
        0: (0, 7), 1: (0, 10), 2: (0, 4), 3: (0, 7), 4: (0, 1), 5: (0, 0), 6: (0, 4), 7: (0, 1),
        8: (0, 6), 9: (0, 5), 10: (0, 2), 11: (0, 3), 12: (0, 2), 13: (0, 2), 14: (0, 2),
        15: (0, 2), 16: (0, 2), 17: (0, 1), 18: (0, 2), 19: (0, 3), 20: (0, 3), 21: (0, 1),
        22: (0, 1), 23: (0, 2), 24: (0, 1), 25: (0, 1), 26: (0, 1), 27: (0, 0), 28: (0, 2),
        29: (0, 1), 30: (0, 1), 31: (0, 1), 32: (0, 2), 33: (0, 1), 34: (0, 1), 35: (0, 1),
        36: (0, 0), 37: (0, 1), 38: (0, 1), 39: (0, 1), 40: (0, 1), 41: (0, 1), 42: (0, 1),
    },
    "2.2": {
        0: (0, 7), 1: (0, 10), 2: (0, 5), 3: (0, 7), 4: (0, 2), 5: (0, 1), 6: (0, 5), 7: (0, 2),
        8: (0, 6), 9: (0, 5), 10: (0, 2), 11: (0, 4), 12: (0, 2), 13: (0, 2), 14: (0, 2),
        15: (0, 2), 16: (0, 2), 17: (0, 1), 18: (0, 2), 19: (0, 3), 20: (0, 3), 21: (0, 1),
        22: (0, 1), 23: (0, 2), 24: (0, 1), 25: (0, 1), 26: (0, 1), 27: (0, 0), 28: (0, 2),
        29: (0, 1), 30: (0, 1), 31: (0, 1), 32: (0, 2), 33: (0, 1), 34: (0, 1), 35: (0, 1),
        36: (0, 1), 37: (0, 1), 38: (0, 1), 39: (0, 1), 40: (0, 1), 41: (0, 1), 42: (0, 1),
        43: (0, 0),
    },
    "2.3": {
        0: (0, 7), 1: (0, 11), 2: (0, 5), 3: (0, 8), 4: (0, 2), 5: (0, 1), 6: (0, 5), 7: (0, 2),
        8: (0, 7), 9: (0, 5), 10: (0, 2), 11: (0, 5), 12: (0, 3), 13: (0, 2), 14: (0, 3),
        15: (0, 3), 16: (0, 2), 17: (0, 1), 18: (0, 2), 19: (0, 3), 20: (0, 3), 21: (0, 1),
        22: (0, 1), 23: (0, 3), 24: (0, 1), 25: (0, 1), 26: (0, 1), 27: (0, 0), 28: (0, 2),
        29: (0, 1), 30: (0, 1), 31: (0, 1), 32: (0, 2), 33: (0, 1), 34: (0, 1), 35: (0, 1),
        36: (0, 1), 37: (0, 1), 38: (0, 1), 39: (0, 1), 40: (0, 1), 41: (0, 1), 42: (0, 1),
        43: (0, 0), 44: (0, 0),
    },
    "2.4": {
        0: (0, 8), 1: (0, 11), 2: (0, 5), 3: (0, 9), 4: (0, 4), 5: (0, 2), 6: (0, 6), 7: (0, 3),
        8: (0, 8), 9: (0, 6), 10: (0, 3), 11: (0, 6), 12: (0, 4), 13: (0, 4), 14: (0, 4),
        15: (0, 5), 16: (0, 3), 17: (0, 1), 18: (0, 3), 19: (0, 5), 20: (0, 4), 21: (0, 1),
        22: (0, 2), 23: (0, 3), 24: (0, 1), 25: (0, 1), 26: (0, 1), 27: (0, 0), 28: (0, 2),
        29: (0, 1), 30: (0, 1), 31: (0, 1), 32: (0, 2), 33: (0, 1), 34: (0, 1), 35: (0, 1),
        36: (0, 1), 37: (0, 1), 38: (0, 2), 39: (0, 1), 40: (0, 1), 41: (0, 1), 42: (0, 2),
        43: (0, 2), 44: (0, 1), 45: (0, 0), 46: (0, 0), 47: (0, 0),
    },
    "2.5": {
        0: (0, 8), 1: (0, 11), 2: (0, 5), 3: (0, 9), 4: (0, 4), 5: (0, 2), 6: (0, 6), 7: (0, 3),
        8: (0, 8), 9: (0, 7), 10: (0, 3), 11: (0, 7), 12: (0, 4), 13: (0, 4), 14: (0, 5),
        15: (0, 5), 16: (0, 3), 17: (0, 1), 18: (0, 3), 19: (0, 5), 20: (0, 4), 21: (0, 1),
        22: (0, 3), 23: (0, 3), 24: (0, 1), 25: (0, 1), 26: (0, 1), 27: (0, 0), 28: (0, 3),
        29: (0, 2), 30: (0, 2), 31: (0, 2), 32: (0, 2), 33: (0, 1), 34: (0, 1), 35: (0, 1),
        36: (0, 2), 37: (0, 2), 38: (0, 2), 39: (0, 2), 40: (0, 2), 41: (0, 2), 42: (0, 2),
        43: (0, 2), 44: (0, 1), 45: (0, 0), 46: (0, 0), 47: (0, 0),
    },
    "2.6": {
        0: (0, 8), 1: (0, 11), 2: (0, 5), 3: (0, 9), 4: (0, 4), 5: (0, 3), 6: (0, 6), 7: (0, 3),
        8: (0, 8), 9: (0, 7), 10: (0, 3), 11: (0, 7), 12: (0, 4), 13: (0, 4), 14: (0, 5),
        15: (0, 5), 16: (0, 4), 17: (0, 1), 18: (0, 3), 19: (0, 5), 20: (0, 4), 21: (0, 2),
        22: (0, 3), 23: (0, 3), 24: (0, 1), 25: (0, 1), 26: (0, 1), 27: (0, 0), 28: (0, 3),
        29: (0, 2), 30: (0, 2), 31: (0, 2), 32: (0, 3), 33: (0, 1), 34: (0, 1), 35: (0, 2),
        36: (0, 2), 37: (0, 2), 38: (0, 2), 39: (0, 2), 40: (0, 2), 41: (0, 2), 42: (0, 2),
        43: (0, 2), 44: (0, 1), 45: (0, 0), 46: (0, 0), 47: (0, 0), 48: (0, 0), 49: (0, 0),
    },
    "2.7": {
        0: (0, 8), 1: (0, 12), 2: (0, 5), 3: (0, 9), 4: (0, 4), 5: (0, 3), 6: (0, 6), 7: (0, 3),
        8: (0, 8), 9: (0, 7), 10: (0, 3), 11: (0, 7), 12: (0, 4), 13: (0, 4), 14: (0, 5),
        15: (0, 5), 16: (0, 4), 17: (0, 1), 18: (0, 3), 19: (0, 6), 20: (0, 5), 21: (0, 2),
        22: (0, 4), 23: (0, 3), 24: (0, 2), 25: (0, 2), 26: (0, 2), 27: (0, 0), 28: (0, 3),
        29: (0, 2), 30: (0, 2), 31: (0, 2), 32: (0, 3), 33: (0, 1), 34: (0, 1), 35: (0, 2),
        36: (0, 2), 37: (0, 3), 38: (0, 2), 39: (0, 2), 40: (0, 2), 41: (0, 2), 42: (0, 2),
        43: (0, 2), 44: (0, 1), 45: (0, 0), 46: (0, 0), 47: (0, 0), 48: (0, 0), 49: (0, 0),
        50: (0, 0), 51: (0, 0), 56: (0, 0), 57: (0, 0),
    },
    "2.8": {
        0: (0, 9), 1: (0, 12), 2: (0, 6), 3: (0, 11), 4: (0, 5), 5: (0, 3), 6: (0, 7), 7: (0, 3),
        8: (0, 8), 9: (0, 7), 10: (0, 3), 11: (0, 7), 12: (0, 4), 13: (0, 4), 14: (0, 5),
        15: (0, 5), 16: (0, 4), 17: (0, 1), 18: (0, 3), 19: (0, 7), 20: (0, 6), 21: (0, 2),
        22: (0, 4), 23: (0, 4), 24: (0, 3), 25: (0, 3), 26: (0, 3), 27: (0, 1), 28: (0, 3),
        29: (0, 2), 30: (0, 2), 31: (0, 2), 32: (0, 4), 33: (0, 2), 34: (0, 2), 35: (0, 2),
        36: (0, 2), 37: (0, 3), 38: (0, 2), 39: (0, 2), 40: (0, 2), 41: (0, 2), 42: (0, 2),
        43: (0, 2), 44: (0, 1), 45: (0, 0), 46: (0, 0), 47: (0, 0), 48: (0, 1), 49: (0, 1),
        50: (0, 0), 51: (0, 0), 56: (0, 0), 57: (0, 0), 60: (0, 0), 61: (0, 0),
    },
    "3.0": {
        0: (0, 9), 1: (0, 12), 2: (0, 7), 3: (0, 11), 4: (0, 5), 5: (0, 3), 6: (0, 7), 7: (0, 3),
        8: (0, 8), 9: (0, 8), 10: (0, 4), 11: (0, 7), 12: (0, 4), 13: (0, 4), 14: (0, 5),
        15: (0, 5), 16: (0, 4), 17: (0, 1), 18: (0, 3), 19: (0, 7), 20: (0, 6), 21: (0, 2),
        22: (0, 4), 23: (0, 4), 24: (0, 3), 25: (0, 3), 26: (0, 3), 27: (0, 1), 28: (0, 3),
        29: (0, 2), 30: (0, 2), 31: (0, 2), 32: (0, 4), 33: (0, 2), 34: (0, 2), 35: (0, 2),
        36: (0, 2), 37: (0, 3), 38: (0, 2), 39: (0, 2), 40: (0, 2), 41: (0, 2), 42: (0, 2),
        43: (0, 2), 44: (0, 1), 45: (0, 0), 46: (0, 0), 47: (0, 0), 48: (0, 1), 49: (0, 1),
        50: (0, 0), 51: (0, 0), 56: (0, 0), 57: (0, 0), 60: (0, 0), 61: (0, 0), 65: (0, 0),
        66: (0, 0), 67: (0, 0),
    },
    "3.1": {
        0: (0, 9), 1: (0, 13), 2: (0, 7), 3: (0, 12), 4: (0, 5), 5: (0, 3), 6: (0, 7), 7: (0, 3),
        8: (0, 8), 9: (0, 8), 10: (0, 4), 11: (0, 7), 12: (0, 4), 13: (0, 4), 14: (0, 5),
        15: (0, 5), 16: (0, 4), 17: (0, 1), 18: (0, 3), 19: (0, 7), 20: (0, 6), 21: (0, 2),
        22: (0, 4), 23: (0, 4), 24: (0, 3), 25: (0, 3), 26: (0, 3), 27: (0, 1), 28: (0, 3),
        29: (0, 2), 30: (0, 2), 31: (0, 2), 32: (0, 4), 33: (0, 2), 34: (0, 2), 35: (0, 2),
        36: (0, 2), 37: (0, 3), 38: (0, 2), 39: (0, 2), 40: (0, 2), 41: (0, 2), 42: (0, 2),
        43: (0, 2), 44: (0, 1), 45: (0, 0), 46: (0, 0), 47: (0, 0), 48: (0, 1), 49: (0, 1),
        50: (0, 0), 51: (0, 0), 56: (0, 0), 57: (0, 0), 60: (0, 0), 61: (0, 0), 65: (0, 0),
        66: (0, 0), 67: (0, 0),
    },
    "3.2": {
        0: (0, 9), 1: (0, 13), 2: (0, 7), 3: (0, 12), 4: (0, 6), 5: (0, 3), 6: (0, 7), 7: (0, 3),
        8: (0, 8), 9: (0, 8), 10: (0, 4), 11: (0, 9), 12: (0, 4), 13: (0, 5), 14: (0, 5),
        15: (0, 5), 16: (0, 4), 17: (0, 1), 18: (0, 3), 19: (0, 7), 20: (0, 6), 21: (0, 2),
        22: (0, 4), 23: (0, 4), 24: (0, 3), 25: (0, 3), 26: (0, 3), 27: (0, 1), 28: (0, 3),
        29: (0, 2), 30: (0, 2), 31: (0, 2), 32: (0, 4), 33: (0, 2), 34: (0, 2), 35: (0, 3),
        36: (0, 2), 37: (0, 3), 38: (0, 2), 39: (0, 2), 40: (0, 2), 41: (0, 2), 42: (0, 2),
        43: (0, 2), 44: (0, 1), 45: (0, 0), 46: (0, 0), 47: (0, 0), 48: (0, 1), 49: (0, 1),
        50: (0, 0), 51: (0, 0), 56: (0, 1), 57: (0, 0), 60: (0, 0), 61: (0, 0), 65: (0, 0),
        66: (0, 0), 67: (0, 0),
    },
    "3.3": {
        0: (0, 9), 1: (0, 13), 2: (0, 7), 3: (0, 12), 4: (0, 6), 5: (0, 3), 6: (0, 7), 7: (0, 3),
        8: (0, 8), 9: (0, 8), 10: (0, 4), 11: (0, 9), 12: (0, 4), 13: (0, 5), 14: (0, 5),
        15: (0, 5), 16: (0, 4), 17: (0, 1), 18: (0, 3), 19: (0, 7), 20: (0, 6), 21: (0, 2),
        22: (0, 4), 23: (0, 4), 24: (0, 3), 25: (0, 3), 26: (0, 3), 27: (0, 1), 28: (0, 3),
        29: (0, 3), 30: (0, 3), 31: (0, 3), 32: (0, 4), 33: (0, 2), 34: (0, 2), 35: (0, 4),
        36: (0, 2), 37: (0, 3), 38: (0, 3), 39: (0, 2), 40: (0, 2), 41: (0, 3), 42: (0, 2),
        43: (0, 2), 44: (0, 1), 45: (0, 0), 46: (0, 0), 47: (0, 0), 48: (0, 1), 49: (0, 1),
        50: (0, 0), 51: (0, 0), 56: (0, 2), 57: (0, 1), 60: (0, 0), 61: (0, 0), 65: (0, 0),
        66: (0, 0), 67: (0, 0),
    },
    "3.4": {
        0: (0, 9), 1: (0, 13), 2: (0, 7), 3: (0, 12), 4: (0, 7), 5: (0, 4), 6: (0, 8), 7: (0, 3),
        8: (0, 8), 9: (0, 8), 10: (0, 4), 11: (0, 9), 12: (0, 4), 13: (0, 5), 14: (0, 5),
        15: (0, 5), 16: (0, 4), 17: (0, 1), 18: (0, 3), 19: (0, 7), 20: (0, 6), 21: (0, 2),
        22: (0, 4), 23: (0, 4), 24: (0, 3), 25: (0, 3), 26: (0, 3), 27: (0, 1), 28: (0, 3),
        29: (0, 3), 30: (0, 3), 31: (0, 3), 32: (0, 4), 33: (0, 2), 34: (0, 2), 35: (0, 4),
        36: (0, 2), 37: (0, 3), 38: (0, 3), 39: (0, 2), 40: (0, 2), 41: (0, 3), 42: (0, 2),
        43: (0, 2), 44: (0, 1), 45: (0, 0), 46: (0, 0), 47: (0, 0), 48: (0, 1), 49: (0, 1),
        50: (0, 0), 51: (0, 0), 56: (0, 2), 57: (0, 1), 58: (0, 0), 60: (0, 0), 61: (0, 0),
        65: (0, 0), 66: (0, 0), 67: (0, 0),
    },
    "3.5": {
        0: (0, 9), 1: (0, 15), 2: (0, 8), 3: (0, 12), 4: (0, 7), 5: (0, 4), 6: (0, 8), 7: (0, 3),
        8: (0, 8), 9: (0, 8), 10: (0, 4), 11: (0, 9), 12: (0, 4), 13: (0, 5), 14: (0, 5),
        15: (0, 5), 16: (0, 4), 17: (0, 1), 18: (0, 3), 19: (0, 7), 20: (0, 6), 21: (0, 2),
        22: (0, 4), 23: (0, 4), 24: (0, 3), 25: (0, 3), 26: (0, 3), 27: (0, 1), 28: (0, 3),
        29: (0, 3), 30: (0, 3), 31: (0, 3), 32: (0, 4), 33: (0, 2), 34: (0, 2), 35: (0, 4),
        36: (0, 2), 37: (0, 3), 38: (0, 3), 39: (0, 2), 40: (0, 2), 41: (0, 3), 42: (0, 2),
        43: (0, 2), 44: (0, 1), 45: (0, 0), 46: (0, 0), 47: (0, 0), 48: (0, 1), 49: (0, 1),
        50: (0, 0), 51: (0, 0), 56: (0, 3), 57: (0, 1), 58: (0, 0), 60: (0, 0), 61: (0, 0),
        65: (0, 0), 66: (0, 0), 67: (0, 0),
    },
    "3.6": {
        0: (0, 9), 1: (0, 15), 2: (0, 8), 3: (0, 12), 4: (0, 7), 5: (0, 4), 6: (0, 8), 7: (0, 3),
        8: (0, 8), 9: (0, 8), 10: (0, 4), 11: (0, 9), 12: (0, 4), 13: (0, 5), 14: (0, 5),
        15: (0, 5), 16: (0, 4), 17: (0, 1), 18: (0, 3), 19: (0, 7), 20: (0, 6), 21: (0, 2),
        22: (0, 4), 23: (0, 4), 24: (0, 4), 25: (0, 3), 26: (0, 3), 27: (0, 1), 28: (0, 3),
        29: (0, 3), 30: (0, 3), 31: (0, 3), 32: (0, 4), 33: (0, 2), 34: (0, 2), 35: (0, 4),
        36: (0, 2), 37: (0, 3), 38: (0, 3), 39: (0, 2), 40: (0, 2), 41: (0, 3), 42: (0, 2),
        43: (0, 2), 44: (0, 1), 45: (0, 0), 46: (0, 0), 47: (0, 0), 48: (0, 1), 49: (0, 1),
        50: (0, 0), 51: (0, 0), 56: (0, 3), 57: (0, 1), 58: (0, 0), 60: (0, 0), 61: (0, 0),
        65: (0, 0), 66: (0, 0), 67: (0, 0),
    },
    "3.7": {
        0: (0, 10), 1: (0, 16), 2: (0, 8), 3: (0, 12), 4: (0, 7), 5: (0, 4), 6: (0, 8), 7: (0, 3),
        8: (0, 9), 9: (0, 9), 10: (0, 4), 11: (0, 9), 12: (0, 4), 13: (0, 5), 14: (0, 5),
        15: (0, 5), 16: (0, 4), 17: (0, 1), 18: (0, 3), 19: (0, 7), 20: (0, 6), 21: (0, 2),
        22: (0, 4), 23: (0, 4), 24: (0, 4), 25: (0, 3), 26: (0, 3), 27: (0, 1), 28: (0, 3),
        29: (0, 3), 30: (0, 3), 31: (0, 3), 32: (0, 4), 33: (0, 2), 34: (0, 2), 35: (0, 4),
        36: (0, 2), 37: (0, 3), 38: (0, 3), 39: (0, 2), 40: (0, 2), 41: (0, 3), 42: (0, 2),
        43: (0, 2), 44: (0, 1), 45: (0, 0), 46: (0, 0), 47: (0, 0), 48: (0, 1), 49: (0, 1),
        50: (0, 0), 51: (0, 0), 56: (0, 3), 57: (0, 1), 58: (0, 0), 60: (0, 1), 61: (0, 0),
        65: (0, 0), 66: (0, 0), 67: (0, 0), 68: (0, 0),
    },
    "3.8": {
        0: (0, 11), 1: (0, 16), 2: (0, 8), 3: (0, 12), 4: (0, 7), 5: (0, 4), 6: (0, 8), 7: (0, 3),
        8: (0, 9), 9: (0, 9), 10: (0, 5), 11: (0, 9), 12: (0, 4), 13: (0, 5), 14: (0, 5),
        15: (0, 5), 16: (0, 5), 17: (0, 1), 18: (0, 3), 19: (0, 7), 20: (0, 6), 21: (0, 2),
        22: (0, 5), 23: (0, 4), 24: (0, 5), 25: (0, 4), 26: (0, 4), 27: (0, 1), 28: (0, 4),
        29: (0, 3), 30: (0, 3), 31: (0, 3), 32: (0, 4), 33: (0, 2), 34: (0, 2), 35: (0, 4),
        36: (0, 2), 37: (0, 3), 38: (0, 3), 39: (0, 2), 40: (0, 2), 41: (0, 3), 42: (0, 2),
        43: (0, 2), 44: (0, 1), 45: (0, 0), 46: (0, 0), 47: (0, 0), 48: (0, 1), 49: (0, 1),
        50: (0, 0), 51: (0, 0), 56: (0, 3), 57: (0, 1), 58: (0, 0), 60: (0, 1), 61: (0, 0),
        65: (0, 0), 66: (0, 1), 67: (0, 0), 68: (0, 0), 69: (0, 0),
    },
    "3.9": {
        0: (0, 11), 1: (0, 17), 2: (0, 9), 3: (0, 12), 4: (0, 7), 5: (0, 4), 6: (0, 8), 7: (0, 3),
        8: (0, 9), 9: (0, 9), 10: (0, 6), 11: (0, 9), 12: (0, 4), 13: (0, 5), 14: (0, 5),
        15: (0, 5), 16: (0, 5), 17: (0, 1), 18: (0, 4), 19: (0, 7), 20: (0, 6), 21: (0, 2),
        22: (0, 5), 23: (0, 4), 24: (0, 5), 25: (0, 4), 26: (0, 4), 27: (0, 1), 28: (0, 4),
        29: (0, 3), 30: (0, 3), 31: (0, 3), 32: (0, 4), 33: (0, 2), 34: (0, 2), 35: (0, 4),
        36: (0, 2), 37: (0, 3), 38: (0, 3), 39: (0, 2), 40: (0, 2), 41: (0, 3), 42: (0, 2),
        43: (0, 2), 44: (0, 1), 45: (0, 0), 46: (0, 0), 47: (0, 0), 48: (0, 1), 49: (0, 1),
        50: (0, 0), 51: (0, 0), 56: (0, 3), 57: (0, 1), 58: (0, 0), 60: (0, 1), 61: (0, 0),
        65: (0, 0), 66: (0, 1), 67: (0, 0), 68: (0, 0), 69: (0, 0),
    },
}
_KRAFT: Final[dict[str, dict[int, tuple[int, int]]]] = {
    "2.8": {
        0: (0, 9), 1: (0, 12), 2: (0, 6), 3: (0, 11), 8: (0, 8), 9: (0, 7), 10: (0, 3), 11: (0, 7),
        12: (0, 4), 13: (0, 4), 14: (0, 5), 15: (0, 5), 16: (0, 4), 17: (0, 1), 18: (0, 3),
        19: (0, 7), 20: (0, 6), 21: (0, 2), 23: (0, 4), 27: (0, 1), 32: (0, 4), 34: (0, 2),
        35: (0, 2), 36: (0, 2), 42: (0, 2), 44: (0, 1), 47: (0, 0), 49: (0, 1), 55: (0, 0),
        58: (0, 0), 60: (0, 0), 61: (0, 0),
    },
    "3.0": {
        0: (0, 9), 1: (0, 12), 2: (0, 7), 3: (0, 11), 8: (0, 8), 9: (0, 8), 10: (0, 4), 11: (0, 7),
        12: (0, 4), 13: (0, 4), 14: (0, 5), 15: (0, 5), 16: (0, 4), 17: (0, 1), 18: (0, 3),
        19: (0, 7), 20: (0, 6), 21: (0, 2), 22: (0, 4), 23: (0, 4), 24: (0, 3), 25: (0, 3),
        26: (0, 3), 27: (0, 1), 28: (0, 3), 29: (0, 2), 30: (0, 2), 31: (0, 2), 32: (0, 4),
        33: (0, 2), 34: (0, 2), 35: (0, 2), 36: (0, 2), 37: (0, 3), 42: (0, 2), 43: (0, 2),
        44: (0, 1), 45: (0, 0), 46: (0, 0), 47: (0, 0), 48: (0, 1), 49: (0, 1), 57: (0, 0),
        58: (0, 0), 60: (0, 0), 61: (0, 0), 65: (0, 0), 66: (0, 0),
    },
    "3.1": {
        0: (0, 9), 1: (0, 13), 2: (0, 7), 3: (0, 12), 8: (0, 8), 9: (0, 8), 10: (0, 4), 11: (0, 7),
        12: (0, 4), 13: (0, 4), 14: (0, 5), 15: (0, 5), 16: (0, 4), 17: (0, 1), 18: (0, 3),
        19: (0, 7), 20: (0, 6), 21: (0, 2), 22: (0, 4), 23: (0, 4), 24: (0, 3), 25: (0, 3),
        26: (0, 3), 27: (0, 1), 28: (0, 3), 29: (0, 2), 30: (0, 2), 31: (0, 2), 32: (0, 4),
        33: (0, 2), 34: (0, 2), 35: (0, 2), 36: (0, 2), 37: (0, 3), 42: (0, 2), 43: (0, 2),
        44: (0, 1), 45: (0, 0), 46: (0, 0), 47: (0, 0), 48: (0, 1), 49: (0, 1), 57: (0, 0),
        58: (0, 0), 60: (0, 0), 61: (0, 0), 65: (0, 0), 66: (0, 0),
    },
    "3.2": {
        0: (0, 9), 1: (0, 13), 2: (0, 7), 3: (0, 12), 8: (0, 8), 9: (0, 8), 10: (0, 4), 11: (0, 9),
        12: (0, 4), 13: (0, 5), 14: (0, 5), 15: (0, 5), 16: (0, 4), 17: (0, 1), 18: (0, 3),
        19: (0, 7), 20: (0, 6), 21: (0, 2), 22: (0, 4), 23: (0, 4), 24: (0, 3), 25: (0, 3),
        26: (0, 3), 27: (0, 1), 28: (0, 3), 29: (0, 2), 30: (0, 2), 31: (0, 2), 32: (0, 4),
        33: (0, 2), 34: (0, 2), 35: (0, 3), 36: (0, 2), 37: (0, 3), 42: (0, 2), 43: (0, 2),
        44: (0, 1), 45: (0, 0), 46: (0, 0), 47: (0, 0), 48: (0, 1), 49: (0, 1), 57: (0, 0),
        60: (0, 0), 61: (0, 0), 65: (0, 0), 66: (0, 0),
    },
    "3.3": {
        0: (0, 9), 1: (0, 13), 2: (0, 7), 3: (0, 12), 8: (0, 8), 9: (0, 8), 10: (0, 4), 11: (0, 9),
        12: (0, 4), 13: (0, 5), 14: (0, 5), 15: (0, 5), 16: (0, 4), 17: (0, 1), 18: (0, 3),
        19: (0, 7), 20: (0, 6), 21: (0, 2), 22: (0, 4), 23: (0, 4), 24: (0, 3), 25: (0, 3),
        26: (0, 3), 27: (0, 1), 28: (0, 3), 29: (0, 3), 30: (0, 3), 31: (0, 3), 32: (0, 4),
        33: (0, 2), 34: (0, 2), 35: (0, 4), 36: (0, 2), 37: (0, 3), 42: (0, 2), 43: (0, 2),
        44: (0, 1), 45: (0, 0), 46: (0, 0), 47: (0, 0), 48: (0, 1), 49: (0, 1), 55: (0, 1),
        57: (0, 1), 60: (0, 0), 61: (0, 0), 64: (0, 0), 65: (0, 0), 66: (0, 0),
    },
    "3.4": {
        0: (0, 9), 1: (0, 13), 2: (0, 7), 3: (0, 12), 8: (0, 8), 9: (0, 8), 10: (0, 4), 11: (0, 9),
        12: (0, 4), 13: (0, 5), 14: (0, 5), 15: (0, 5), 16: (0, 4), 17: (0, 1), 18: (0, 3),
        19: (0, 7), 20: (0, 6), 21: (0, 2), 22: (0, 4), 23: (0, 4), 24: (0, 3), 25: (0, 3),
        26: (0, 3), 27: (0, 1), 28: (0, 3), 29: (0, 3), 30: (0, 3), 31: (0, 3), 32: (0, 4),
        33: (0, 2), 34: (0, 2), 35: (0, 4), 36: (0, 2), 37: (0, 3), 42: (0, 2), 43: (0, 2),
        44: (0, 1), 45: (0, 0), 46: (0, 0), 47: (0, 0), 48: (0, 1), 49: (0, 1), 55: (0, 1),
        57: (0, 1), 60: (0, 0), 61: (0, 0), 64: (0, 0), 65: (0, 0), 66: (0, 0),
    },
    "3.5": {
        0: (0, 9), 1: (0, 15), 2: (0, 8), 3: (0, 12), 8: (0, 8), 9: (0, 8), 10: (0, 4), 11: (0, 9),
        12: (0, 4), 13: (0, 5), 14: (0, 5), 15: (0, 5), 16: (0, 4), 17: (0, 1), 18: (0, 3),
        19: (0, 7), 20: (0, 6), 21: (0, 2), 22: (0, 4), 23: (0, 4), 24: (0, 3), 25: (0, 3),
        26: (0, 3), 27: (0, 1), 28: (0, 3), 29: (0, 3), 30: (0, 3), 31: (0, 3), 32: (0, 4),
        33: (0, 2), 34: (0, 2), 35: (0, 4), 36: (0, 2), 37: (0, 3), 42: (0, 2), 43: (0, 2),
        44: (0, 1), 45: (0, 0), 46: (0, 0), 47: (0, 0), 48: (0, 1), 49: (0, 1), 50: (0, 0),
        51: (0, 0), 55: (0, 1), 57: (0, 1), 60: (0, 0), 61: (0, 0), 64: (0, 0), 65: (0, 0),
        66: (0, 0),
    },
    "3.6": {
        0: (0, 9), 1: (0, 15), 2: (0, 8), 3: (0, 12), 8: (0, 8), 9: (0, 8), 10: (0, 4), 11: (0, 9),
        12: (0, 4), 13: (0, 5), 14: (0, 5), 15: (0, 5), 16: (0, 4), 17: (0, 1), 18: (0, 3),
        19: (0, 7), 20: (0, 6), 21: (0, 2), 22: (0, 4), 23: (0, 4), 24: (0, 4), 25: (0, 3),
        26: (0, 3), 27: (0, 1), 28: (0, 3), 29: (0, 3), 30: (0, 3), 31: (0, 3), 32: (0, 4),
        33: (0, 2), 34: (0, 2), 35: (0, 4), 36: (0, 2), 37: (0, 3), 38: (0, 3), 39: (0, 2),
        40: (0, 2), 41: (0, 3), 42: (0, 2), 43: (0, 2), 44: (0, 1), 45: (0, 0), 46: (0, 0),
        47: (0, 0), 48: (0, 1), 49: (0, 1), 50: (0, 0), 51: (0, 0), 55: (0, 1), 57: (0, 1),
        60: (0, 0), 61: (0, 0), 64: (0, 0), 65: (0, 0), 66: (0, 0),
    },
    "3.7": {
        0: (0, 10), 1: (0, 16), 2: (0, 8), 3: (0, 12), 8: (0, 9), 9: (0, 9), 10: (0, 4),
        11: (0, 9), 12: (0, 4), 13: (0, 5), 14: (0, 5), 15: (0, 5), 16: (0, 4), 17: (0, 1),
        18: (0, 3), 19: (0, 7), 20: (0, 6), 21: (0, 2), 22: (0, 4), 23: (0, 4), 24: (0, 4),
        25: (0, 3), 26: (0, 3), 27: (0, 1), 28: (0, 3), 29: (0, 3), 30: (0, 3), 31: (0, 3),
        32: (0, 4), 33: (0, 2), 34: (0, 2), 35: (0, 4), 36: (0, 2), 37: (0, 3), 38: (0, 3),
        39: (0, 2), 40: (0, 2), 41: (0, 3), 42: (0, 2), 43: (0, 2), 44: (0, 1), 45: (0, 0),
        46: (0, 0), 47: (0, 0), 48: (0, 1), 49: (0, 1), 50: (0, 0), 51: (0, 0), 55: (0, 1),
        57: (0, 1), 60: (0, 1), 61: (0, 0), 64: (0, 0), 65: (0, 0), 66: (0, 0), 68: (0, 0),
        74: (0, 0),
    },
    "3.8": {
        0: (0, 11), 1: (0, 16), 2: (0, 8), 3: (0, 12), 8: (0, 9), 9: (0, 9), 10: (0, 5),
        11: (0, 9), 12: (0, 4), 13: (0, 5), 14: (0, 5), 15: (0, 5), 16: (0, 5), 17: (0, 1),
        18: (0, 3), 19: (0, 7), 20: (0, 6), 21: (0, 2), 22: (0, 5), 23: (0, 4), 24: (0, 5),
        25: (0, 4), 26: (0, 4), 27: (0, 1), 28: (0, 4), 29: (0, 3), 30: (0, 3), 31: (0, 3),
        32: (0, 4), 33: (0, 2), 34: (0, 2), 35: (0, 4), 36: (0, 2), 37: (0, 3), 38: (0, 3),
        39: (0, 2), 40: (0, 2), 41: (0, 3), 42: (0, 2), 43: (0, 2), 44: (0, 1), 45: (0, 0),
        46: (0, 0), 47: (0, 0), 48: (0, 1), 49: (0, 1), 50: (0, 0), 51: (0, 0), 55: (0, 1),
        57: (0, 1), 60: (0, 1), 61: (0, 0), 64: (0, 0), 65: (0, 0), 66: (0, 1), 68: (0, 0),
        69: (0, 0), 74: (0, 0), 75: (0, 0),
    },
    "3.9": {
        0: (0, 11), 1: (0, 17), 2: (0, 9), 3: (0, 12), 8: (0, 9), 9: (0, 9), 10: (0, 6),
        11: (0, 9), 12: (0, 4), 13: (0, 5), 14: (0, 5), 15: (0, 5), 16: (0, 5), 17: (0, 1),
        18: (0, 4), 19: (0, 7), 20: (0, 6), 21: (0, 2), 22: (0, 5), 23: (0, 4), 24: (0, 5),
        25: (0, 4), 26: (0, 4), 27: (0, 1), 28: (0, 4), 29: (0, 3), 30: (0, 3), 31: (0, 3),
        32: (0, 4), 33: (0, 2), 34: (0, 2), 35: (0, 4), 36: (0, 2), 37: (0, 3), 38: (0, 3),
        39: (0, 2), 40: (0, 2), 41: (0, 3), 42: (0, 2), 43: (0, 2), 44: (0, 1), 45: (0, 0),
        46: (0, 0), 47: (0, 0), 48: (0, 1), 49: (0, 1), 50: (0, 0), 51: (0, 0), 55: (0, 2),
        57: (0, 1), 60: (0, 1), 61: (0, 0), 64: (0, 0), 65: (0, 0), 66: (0, 1), 68: (0, 0),
        69: (0, 0), 74: (0, 0), 75: (0, 0), 80: (0, 0), 81: (0, 0),
    },
    "4.0": {
        0: (0, 12), 1: (4, 17), 2: (1, 10), 3: (0, 13), 8: (2, 9), 9: (1, 9), 10: (0, 6),
        11: (2, 9), 12: (0, 4), 13: (0, 5), 14: (0, 5), 15: (0, 6), 16: (0, 5), 17: (0, 1),
        18: (0, 4), 19: (2, 7), 20: (1, 6), 21: (0, 2), 22: (0, 5), 23: (2, 4), 24: (0, 5),
        25: (0, 4), 26: (0, 5), 27: (1, 1), 28: (0, 5), 29: (1, 3), 30: (1, 3), 31: (1, 3),
        32: (1, 4), 33: (0, 2), 34: (1, 2), 35: (1, 4), 36: (0, 2), 37: (0, 3), 38: (1, 3),
        39: (1, 2), 40: (1, 2), 41: (1, 3), 42: (0, 2), 43: (0, 2), 44: (0, 1), 45: (0, 0),
        46: (0, 0), 47: (0, 0), 48: (0, 1), 49: (0, 1), 50: (0, 0), 51: (0, 0), 55: (0, 2),
        57: (0, 2), 60: (0, 2), 61: (0, 0), 64: (0, 0), 65: (0, 0), 66: (0, 1), 68: (0, 1),
        69: (0, 1), 74: (0, 0), 75: (0, 0), 80: (0, 0), 81: (0, 0),
    },
    "4.1": {
        0: (0, 13), 1: (4, 18), 2: (1, 10), 3: (0, 13), 8: (2, 9), 9: (1, 9), 10: (0, 6),
        11: (0, 9), 12: (0, 4), 13: (0, 5), 14: (0, 5), 15: (0, 6), 16: (0, 5), 17: (0, 1),
        18: (0, 4), 19: (2, 7), 20: (1, 6), 21: (0, 2), 22: (0, 5), 23: (2, 4), 24: (0, 5),
        25: (0, 4), 26: (0, 5), 27: (1, 1), 28: (0, 5), 29: (1, 3), 30: (1, 3), 31: (1, 3),
        32: (1, 4), 33: (0, 2), 34: (1, 2), 35: (1, 4), 36: (0, 2), 37: (0, 3), 38: (1, 3),
        39: (1, 2), 40: (1, 2), 41: (1, 3), 42: (0, 2), 43: (0, 2), 44: (0, 1), 45: (0, 1),
        46: (0, 0), 47: (0, 0), 48: (0, 1), 49: (0, 1), 50: (0, 0), 51: (0, 0), 55: (0, 2),
        57: (0, 2), 60: (0, 2), 61: (0, 0), 64: (0, 0), 65: (0, 0), 66: (0, 2), 68: (0, 1),
        69: (0, 1), 74: (0, 1), 75: (0, 0), 76: (1, 1), 77: (1, 1), 78: (1, 1), 79: (1, 1),
        80: (0, 0), 81: (0, 0), 83: (0, 0), 84: (0, 0), 85: (0, 0), 86: (0, 0), 87: (0, 0),
        90: (0, 0), 91: (0, 0), 92: (0, 0),
    },
    "4.2": {
        0: (0, 13), 1: (4, 18), 2: (1, 11), 3: (0, 13), 8: (2, 10), 9: (1, 10), 10: (0, 6),
        11: (0, 9), 12: (0, 4), 13: (0, 5), 14: (0, 5), 15: (0, 6), 16: (0, 5), 17: (0, 1),
        18: (0, 4), 19: (2, 7), 20: (1, 6), 21: (0, 2), 22: (0, 5), 23: (2, 4), 24: (0, 5),
        25: (0, 4), 26: (0, 5), 27: (1, 2), 28: (0, 5), 29: (1, 3), 30: (1, 3), 31: (1, 3),
        32: (1, 4), 33: (0, 2), 34: (1, 2), 35: (1, 4), 36: (0, 2), 37: (0, 3), 38: (1, 3),
        39: (1, 2), 40: (1, 2), 41: (1, 3), 42: (0, 2), 43: (0, 2), 44: (0, 1), 45: (0, 1),
        46: (0, 0), 47: (0, 0), 48: (0, 1), 49: (0, 1), 50: (0, 0), 51: (0, 0), 55: (0, 2),
        57: (0, 2), 60: (0, 2), 61: (0, 0), 64: (0, 0), 65: (0, 0), 66: (0, 2), 68: (0, 1),
        69: (0, 1), 74: (0, 1), 75: (0, 0), 76: (1, 1), 77: (1, 1), 78: (1, 2), 79: (1, 2),
        80: (0, 1), 81: (0, 0), 83: (0, 0), 84: (0, 0), 85: (0, 1), 86: (0, 0), 87: (0, 1),
        88: (0, 0), 89: (0, 0), 90: (0, 1), 91: (0, 0), 92: (0, 0),
    },
}
# fmt: on
# Kafka 4.3.1's spec files add, on the broker listener, InitProducerId 6 and DescribeLogDirs 5.
_KRAFT["4.3"] = {**_KRAFT["4.2"], 22: (0, 6), 35: (1, 5)}

#: The first release whose brokers default to KRaft here (KRaft production-ready, KIP-833).
_KRAFT_DEFAULT_FROM: Final[str] = "3.3"
#: Advertised only when a client telemetry receiver is configured (KIP-714), KRaft 3.7+.
_TELEMETRY: Final[dict[int, tuple[int, int]]] = {71: (0, 0), 72: (0, 0)}
#: Produce versions a 4.x broker advertises (KAFKA-18659) but rejects with UNSUPPORTED_VERSION.
_PRODUCE_ACCEPTED_MIN_4X: Final[int] = 3

# metadata.version (KIP-778) levels a KRaft broker supports: minimum 1 (3.0-IV1) and the release's
# latest production level; 3.9 adds kraft.version 0-1 (KIP-853). Kafka's BrokerFeatures.
_KRAFT_FEATURES: Final[dict[str, dict[str, tuple[int, int]]]] = {
    "3.3": {"metadata.version": (1, 7)},
    "3.4": {"metadata.version": (1, 8)},
    "3.5": {"metadata.version": (1, 11)},
    "3.6": {"metadata.version": (1, 14)},
    "3.7": {"metadata.version": (1, 19)},
    "3.8": {"metadata.version": (1, 20)},
    "3.9": {"metadata.version": (1, 21), "kraft.version": (0, 1)},
}
_4X_COMMON: Final[dict[str, tuple[int, int]]] = {
    "metadata.version": (7, 21),
    "kraft.version": (0, 1),
    "transaction.version": (0, 2),  # TV_2: KIP-890 part 2, default from 4.0-IV2
    "group.version": (0, 1),  # GV_1: KIP-848, default from 4.0-IV0
    "eligible.leader.replicas.version": (0, 1),  # ELRV_1: KIP-966, default from 4.1-IV0
}
# 4.1 ships share.version and streams.version as preview/early access (latest production 0: not
# advertised); 4.2 makes both production (SV_1 defaults from 4.2-IV0/4.2-IV1).
_4X_GA: Final[dict[str, tuple[int, int]]] = {"share.version": (0, 1), "streams.version": (0, 1)}
_KRAFT_FEATURES.update(
    {
        "4.0": dict(_4X_COMMON),
        "4.1": dict(_4X_COMMON),
        "4.2": {**_4X_COMMON, **_4X_GA},
        "4.3": {**_4X_COMMON, **_4X_GA},
    }
)

#: Finalized levels of a new 4.x cluster beyond metadata.version (``Feature.defaultLevel`` of the
#: release's latest production metadata.version; level 0 omitted). kraft.version stays 0: kwire's
#: quorum is static (KIP-853's kraft.version 1 is for dynamic quorums).
_4X_DEFAULTS: Final[dict[str, dict[str, int]]] = {
    "4.0": {"transaction.version": 2, "group.version": 1},
    "4.1": {"transaction.version": 2, "group.version": 1, "eligible.leader.replicas.version": 1},
    "4.2": {
        "transaction.version": 2,
        "group.version": 1,
        "eligible.leader.replicas.version": 1,
        "share.version": 1,
        "streams.version": 1,
    },
}
_4X_DEFAULTS["4.3"] = dict(_4X_DEFAULTS["4.2"])


def _rkey(release: str) -> tuple[int, ...]:
    return tuple(int(p) for p in release.split("."))


def parse_release(text: str) -> str:
    """The personality name of a Kafka release: ``"3.9.1"`` -> ``"3.9"``, ``"0.10.2.1"`` ->
    ``"0.10.2"``, ``"v2.8.0"`` -> ``"2.8"``, ``"0.10"`` -> ``"0.10.2"`` (the newest of that
    line); ``ValueError`` (listing the known ones) otherwise."""
    parts = text.strip().removeprefix("v").split(".")
    if all(p.isdigit() for p in parts) and len(parts) >= 2:
        width = 3 if parts[0] == "0" else 2
        if len(parts) <= width + 1:
            name = ".".join(str(int(p)) for p in parts[:width])
            if name in BROKER_RELEASES:
                return name
            if len(parts) == 2 and parts[0] == "0":
                # "0.9", "0.10": the newest patch line of that release (0.9.0, 0.10.2)
                line = [r for r in BROKER_RELEASES if r.startswith(f"{name}.")]
                if line:
                    return line[-1]
    raise ValueError(
        f"unknown Kafka release {text!r}; known: {', '.join(BROKER_RELEASES)} "
        "(patch versions such as 3.9.1 or 0.10.2.1 are accepted)"
    )


def _mode(release: str, kraft: bool | None) -> bool:
    if kraft is None:
        kraft = _rkey(release) >= _rkey(_KRAFT_DEFAULT_FROM)
    if kraft and release not in _KRAFT:
        raise ValueError(f"Kafka {release} has no KRaft mode (KRaft: 2.8 and later)")
    if not kraft and release not in _ZK:
        raise ValueError(f"Kafka {release} has no ZooKeeper mode (ZooKeeper: up to 3.9)")
    return kraft


def broker_api_versions(release: str, *, kraft: bool | None = None) -> dict[int, tuple[int, int]]:
    """API key -> (min, max) a broker of ``release`` advertises in its ApiVersionsResponse.

    ``kraft`` picks the mode where a release has both (2.8-3.9); by default a ZooKeeper broker up
    to 3.2 and a KRaft broker from 3.3 (4.x is KRaft only). Config-dependent APIs (telemetry) are
    left out: see ``BrokerPersonality.conditional_api_versions``."""
    release = parse_release(release)
    return dict((_KRAFT if _mode(release, kraft) else _ZK)[release])


@lazy_dataclass(frozen=True)
class BrokerPersonality:
    """What a broker of one Kafka release looks like to a client."""

    #: Release name (``"3.9"``).
    release: str
    #: A KRaft broker (else ZooKeeper mode).
    kraft: bool
    #: API key -> (min, max) advertised in ApiVersionsResponse.
    api_versions: dict[int, tuple[int, int]]
    #: API key -> (min, max) the broker really serves: differs from ``api_versions`` only for
    #: Produce on 4.x (advertised from 0, versions 0-2 rejected with UNSUPPORTED_VERSION).
    accepted_versions: dict[int, tuple[int, int]]
    #: Advertised as well only under a non-default configuration (telemetry receiver, KIP-714).
    conditional_api_versions: dict[int, tuple[int, int]]
    #: Record batch magic the broker writes by default: 0 (0.8-0.9), 1 (0.10.x), 2 (0.11+).
    default_message_format: int
    #: ``log.message.format.version`` can make it write an older magic: ZooKeeper brokers
    #: 0.10.0-3.9 (ignored from inter.broker.protocol.version 3.0 on, KIP-724); never KRaft or 4.x.
    message_format_configurable: bool
    #: KIP-511 (2.4+): an ApiVersions request of a version the broker does not know is answered
    #: with a v0 response, error 35 UNSUPPORTED_VERSION, carrying the broker's ApiVersions range.
    #: ``False`` before: 0.10.0-2.3 answer the same v0 error with an empty API list, and 0.8-0.9
    #: have no ApiVersions API at all (key 18 is absent from ``api_versions``).
    api_versions_v0_fallback: bool
    #: Supported feature ranges in ApiVersions v3+ (``{}``: none advertised; ``None``: unknown).
    supported_features: dict[str, tuple[int, int]] | None
    #: Finalized feature levels of a freshly formatted cluster (``None``: unknown).
    finalized_features: dict[str, int] | None


def broker_personality(release: str, *, kraft: bool | None = None) -> BrokerPersonality:
    """The ``BrokerPersonality`` of a release (patch versions accepted; ``kraft`` as in
    ``broker_api_versions``)."""
    name = parse_release(release)
    is_kraft = _mode(name, kraft)
    advertised = broker_api_versions(name, kraft=is_kraft)
    accepted = dict(advertised)
    v = _rkey(name)
    if v >= (4, 0):
        accepted[0] = (_PRODUCE_ACCEPTED_MIN_4X, advertised[0][1])
    conditional = dict(_TELEMETRY) if is_kraft and v >= (3, 7) else {}
    magic = 0 if v < (0, 10) else 1 if v < (0, 11) else 2
    supported: dict[str, tuple[int, int]] | None
    finalized: dict[str, int] | None
    if v < (2, 4):
        supported, finalized = {}, {}  # no ApiVersions v3, no feature fields
    elif is_kraft and name in _KRAFT_FEATURES:
        supported = dict(_KRAFT_FEATURES[name])
        finalized = {"metadata.version": supported["metadata.version"][1]}
        finalized.update(_4X_DEFAULTS.get(name, {}))
    else:
        supported = finalized = None
    return BrokerPersonality(
        release=name,
        kraft=is_kraft,
        api_versions=advertised,
        accepted_versions=accepted,
        conditional_api_versions=conditional,
        default_message_format=magic,
        message_format_configurable=not is_kraft and (0, 10) <= v < (4, 0),
        api_versions_v0_fallback=v >= (2, 4),
        supported_features=supported,
        finalized_features=finalized,
    )
