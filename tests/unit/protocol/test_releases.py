"""kwire.protocol.releases: which Kafka release speaks which API versions."""

from __future__ import annotations

import merge_specs
import pytest

from kwire.protocol import VersionRange
from kwire.protocol.releases import (
    _TABLES,
    DIFFERS_FROM_3_9_1,
    RELEASES,
    api_key,
    api_name,
    match_releases,
    release_info,
    releases_speaking,
    supported_versions,
    supported_versions_by_key,
)


def test_tables_match_their_sources() -> None:
    # 3.9 from the 3.9.1 jar's spec files, 4.3 from kio 0.6.5 (Kafka 4.3.1), recomputed now.
    assert merge_specs.release_tables() == _TABLES


def test_generated_block_is_up_to_date() -> None:
    assert merge_specs.write_releases(check_only=True) == 0
    assert set(merge_specs.differs_from_old()) == DIFFERS_FROM_3_9_1


def test_what_differs_from_3_9_1() -> None:
    # Renamed fields (Vote v0-1), the renamed key 74 (v0) and the one layout change.
    assert {
        ("ListConfigResourcesRequest", 0),
        ("ListConfigResourcesResponse", 0),
        ("ReadShareGroupStateSummaryResponse", 0),
        ("VoteRequest", 0),
        ("VoteRequest", 1),
    } == DIFFERS_FROM_3_9_1


def test_known_releases() -> None:
    assert RELEASES == ("3.9", "4.3")
    assert release_info("3.9.1")["kafka_version"] == "3.9.1"
    assert release_info("v4.3")["kafka_version"] == "4.3.1"


@pytest.mark.parametrize("release", ["4.0", "4.1", "4.2", "3.8", "4.3.0", "nonsense"])
def test_unknown_release_is_a_key_error(release: str) -> None:
    with pytest.raises(KeyError, match="unknown Kafka release"):
        supported_versions(release)


def test_issue_examples() -> None:
    # The versions the issue names as new in 4.x are in 4.3 and not in 3.9.
    new_in_4x = {
        "Produce": (12, 13),
        "Fetch": (18,),
        "ListOffsets": (10, 11),
        "Metadata": (13,),
        "OffsetCommit": (10,),
        "OffsetFetch": (10,),
        "DescribeGroups": (6,),
        "InitProducerId": (6,),
        "EndTxn": (5,),
        "TxnOffsetCommit": (5,),
    }
    v39, v43 = supported_versions("3.9"), supported_versions("4.3")
    for api, versions in new_in_4x.items():
        for v in versions:
            assert v in v43[api], (api, v)
            assert v not in v39[api], (api, v)
            assert releases_speaking(api, v) == ("4.3",)
    for api in (
        "StreamsGroupHeartbeat",
        "StreamsGroupDescribe",
        "DescribeShareGroupOffsets",
        "AlterShareGroupOffsets",
        "DeleteShareGroupOffsets",
        "ListConfigResources",
    ):
        assert api in v43 and api not in v39
    assert v43["ListConfigResources"] == VersionRange(0, 1)


def test_versions_removed_by_kafka_4() -> None:
    # KIP-896: 4.x dropped Produce v0-2 and Fetch v0-3; a 3.9 broker still speaks them.
    assert supported_versions("3.9")["Produce"] == VersionRange(0, 11)
    assert supported_versions("4.3")["Produce"] == VersionRange(3, 13)
    assert releases_speaking("Produce", 2) == ("3.9",)
    assert releases_speaking("ProduceRequest", 3) == ("3.9", "4.3")
    assert releases_speaking("Fetch", 3) == ("3.9",)
    # ZooKeeper-era APIs exist only in 3.9.
    assert "LeaderAndIsr" in supported_versions("3.9")
    assert "LeaderAndIsr" not in supported_versions("4.3")
    assert releases_speaking("LeaderAndIsr", 0) == ("3.9",)


def test_unstable_versions_are_not_advertised_by_3_9() -> None:
    # 3.9.1's share-group APIs are v0 with latestVersionUnstable: no stable version at all.
    assert "ShareFetch" not in supported_versions("3.9")
    assert supported_versions("4.3")["ShareFetch"].lowest >= 1


def test_lookup_by_key_and_name_agree() -> None:
    for release in RELEASES:
        by_key = supported_versions_by_key(release)
        by_name = supported_versions(release)
        assert len(by_key) == len(by_name)
        for key, rng in by_key.items():
            assert by_name[_TABLES[release][key][0]] == rng
    assert api_key("Metadata") == 3
    assert api_key("MetadataResponse") == 3
    assert api_name(3) == "Metadata"
    assert api_key("ListConfigResources") == api_key("ListClientMetricsResources") == 74
    with pytest.raises(KeyError):
        api_key("NoSuchApi")
    with pytest.raises(KeyError):
        api_name(9999)


def test_renamed_api_is_the_same_key() -> None:
    # Kafka 4.1 renamed key 74 ListClientMetricsResources -> ListConfigResources (same v0).
    assert releases_speaking("ListClientMetricsResources", 0) == ("3.9", "4.3")
    assert releases_speaking("ListConfigResources", 1) == ("4.3",)


def test_match_releases() -> None:
    assert match_releases({"Produce": 9, "Fetch": 12}) == ("3.9", "4.3")
    assert match_releases({"Produce": 13}) == ("4.3",)
    assert match_releases({"Produce": 2, "Metadata": 13}) == ()
    assert match_releases({0: VersionRange(3, 11)}) == ("3.9", "4.3")
    assert match_releases({0: VersionRange(0, 11)}) == ("3.9",)
    assert match_releases({"StreamsGroupHeartbeat": 0}) == ("4.3",)
    assert match_releases({}) == RELEASES
