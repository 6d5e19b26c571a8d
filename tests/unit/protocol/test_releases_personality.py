"""kwire.protocol.releases broker personalities: what each Kafka release's broker advertises."""

from __future__ import annotations

import itertools

import pytest

from kwire.protocol import message_class
from kwire.protocol.releases import (
    BROKER_RELEASES,
    NEWEST,
    broker_api_versions,
    broker_personality,
    parse_release,
    supported_versions_by_key,
)


def _modes(release: str) -> list[bool]:
    v = tuple(map(int, release.split(".")))
    return [m for m in (False, True) if (m and v >= (2, 8)) or (not m and v < (4, 0))]


ALL = [(r, m) for r in BROKER_RELEASES for m in _modes(r)]


def test_releases() -> None:
    assert BROKER_RELEASES[0] == "0.8.0" and BROKER_RELEASES[-1] == NEWEST == "4.3"
    assert len(BROKER_RELEASES) == 33
    keys = [tuple(map(int, r.split("."))) for r in BROKER_RELEASES]
    assert keys == sorted(keys)


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("3.9.1", "3.9"),
        ("3.9", "3.9"),
        ("v4.3", "4.3"),
        ("4.3.0", "4.3"),
        ("0.10.2.1", "0.10.2"),
        ("0.10.2", "0.10.2"),
        ("0.8.0", "0.8.0"),
        ("2.8.2", "2.8"),
        ("1.0.0", "1.0"),
        ("0.10", "0.10.2"),  # a 0.x line names its newest patch release
        ("0.9", "0.9.0"),
        ("0.8", "0.8.2"),
    ],
)
def test_parse_release(text: str, want: str) -> None:
    assert parse_release(text) == want


@pytest.mark.parametrize("text", ["0.7.2", "4.4", "0.7", "3", "5.0", "3.9.1.2", "x.y", ""])
def test_parse_release_unknown(text: str) -> None:
    with pytest.raises(ValueError, match=r"unknown Kafka release.*known: 0\.8\.0, "):
        parse_release(text)


@pytest.mark.parametrize(("release", "kraft"), ALL)
def test_every_advertised_version_is_in_the_corpus(release: str, kraft: bool) -> None:
    p = broker_personality(release, kraft=kraft)
    for table in (p.api_versions, p.accepted_versions, p.conditional_api_versions):
        for key, (lo, hi) in table.items():
            cls = message_class(api_key=key, kind="request")
            assert cls.MIN_VERSION <= lo <= hi <= cls.MAX_VERSION, (release, key, lo, hi)


def test_spot_checks() -> None:
    v = broker_api_versions
    assert set(v("0.8.0")) == set(range(8))
    assert v("0.8.2")[8] == (0, 1) and 10 in v("0.8.2")
    assert 18 not in v("0.9.0") and v("0.10.0")[18] == (0, 0)
    r = v("0.10.2")
    assert (r[0], r[1], r[2], r[3], r[18], r[19]) == (
        (0, 2),
        (0, 3),
        (0, 1),
        (0, 2),
        (0, 0),
        (0, 1),
    )
    assert v("0.11.0")[0] == (0, 3) and v("0.11.0")[1] == (0, 5)
    assert v("1.0")[0] == (0, 5) and v("1.1")[1] == (0, 7)
    assert v("2.0")[0] == (0, 6) and v("2.0")[1] == (0, 8)
    assert v("2.1")[0] == (0, 7) and v("2.1")[1] == (0, 10)
    assert v("2.4")[18] == (0, 3) and v("2.8")[0] == (0, 9)
    assert v("3.0")[2] == (0, 7) and v("3.7")[0] == (0, 10)


def test_3_9() -> None:
    kraft = broker_api_versions("3.9")
    assert broker_personality("3.9").kraft
    assert (kraft[0], kraft[1], kraft[2], kraft[3], kraft[18]) == (
        (0, 11),
        (0, 17),
        (0, 9),
        (0, 12),
        (0, 4),
    )
    # A KRaft broker does not advertise the controller or ZooKeeper inter-broker APIs.
    assert not {4, 5, 6, 7, 52, 53, 54, 56, 62, 63, 67, 70, 73, 82} & set(kraft)
    assert {55, 64, 74, 75, 80, 81} <= set(kraft)
    zk = broker_api_versions("3.9.1", kraft=False)
    assert zk[4] == (0, 7) and 74 not in zk and 55 not in zk
    # Every advertised range lies within the 3.9.1 spec files' stable versions.
    spec = supported_versions_by_key("3.9")
    for table in (kraft, zk):
        for key, (lo, hi) in table.items():
            assert spec[key].lowest <= lo and hi <= spec[key].highest, key


def test_4_x_minimums() -> None:
    v40 = broker_api_versions("4.0")
    want = {1: 4, 2: 1, 8: 2, 9: 1, 11: 2, 19: 2, 20: 1, 23: 2, 27: 1, 29: 1, 30: 1, 31: 1}
    want |= {32: 1, 34: 1, 35: 1, 38: 1, 39: 1, 40: 1, 41: 1, 3: 0, 10: 0}
    assert {k: v40[k][0] for k in want} == want
    assert v40[0] == (0, 12) and broker_personality("4.0").accepted_versions[0] == (3, 12)
    assert broker_api_versions("4.1")[11] == (0, 9)  # KAFKA-19444: JoinGroup v0-1 back
    # The 4.3 personality matches the 4.3.1 spec table except Produce's advertised minimum.
    spec = supported_versions_by_key("4.3")
    p = broker_personality("4.3")
    for key, (lo, hi) in p.accepted_versions.items():
        assert (spec[key].lowest, spec[key].highest) == (lo, hi), key
    assert p.api_versions[0] == (0, 13)


def test_monotonic() -> None:
    """A later release never drops an API or lowers a maximum; minimums rise only in 4.0."""
    for kraft in (False, True):
        rels = [r for r in BROKER_RELEASES if kraft in _modes(r)]
        for a, b in itertools.pairwise(rels):
            va, vb = broker_api_versions(a, kraft=kraft), broker_api_versions(b, kraft=kraft)
            # KRaft previews: DescribeQuorum 55 (2.8 only), Envelope 58 (2.8-3.1).
            gone = set(va) - set(vb) - ({55, 58} if kraft and b in ("3.0", "3.2") else set())
            assert not gone, (a, b, gone)
            for key in set(va) & set(vb):
                assert vb[key][1] >= va[key][1], (a, b, key)
                if b != "4.0":
                    assert vb[key][0] <= va[key][0], (a, b, key)


@pytest.mark.parametrize(
    ("release", "magic", "configurable", "fallback"),
    [
        ("0.8.2", 0, False, False),
        ("0.9.0", 0, False, False),
        ("0.10.0", 1, True, False),
        ("0.10.2", 1, True, False),
        ("0.11.0", 2, True, False),
        ("2.3", 2, True, False),
        ("2.4", 2, True, True),
        ("3.2", 2, True, True),
        ("4.0", 2, False, True),
    ],
)
def test_personality_flags(release: str, magic: int, configurable: bool, fallback: bool) -> None:
    p = broker_personality(release)
    assert p.default_message_format == magic
    assert p.message_format_configurable is configurable
    assert p.api_versions_v0_fallback is fallback


def test_modes_and_features() -> None:
    assert not broker_personality("3.2").kraft and broker_personality("3.3").kraft
    assert broker_personality("2.8", kraft=True).kraft
    with pytest.raises(ValueError, match="no KRaft"):
        broker_api_versions("2.7", kraft=True)
    with pytest.raises(ValueError, match="no ZooKeeper"):
        broker_api_versions("4.0", kraft=False)
    assert not broker_personality("3.9", kraft=True).message_format_configurable
    p = broker_personality("3.9")
    assert p.supported_features == {"metadata.version": (1, 21), "kraft.version": (0, 1)}
    assert p.finalized_features == {"metadata.version": 21}
    assert broker_personality("3.3").supported_features == {"metadata.version": (1, 7)}
    # 4.x: Kafka's Feature enum; share/streams production from 4.2 (preview in 4.1)
    p43 = broker_personality("4.3")
    assert p43.supported_features is not None and p43.finalized_features is not None
    assert p43.supported_features["transaction.version"] == (0, 2)
    assert p43.finalized_features["transaction.version"] == 2
    assert p43.finalized_features["share.version"] == 1
    p41 = broker_personality("4.1")
    assert p41.supported_features is not None and "share.version" not in p41.supported_features
    assert broker_personality("4.0").finalized_features == {
        "metadata.version": 21,
        "transaction.version": 2,
        "group.version": 1,
    }
    assert broker_personality("2.0").supported_features == {}
    assert broker_personality("3.7").conditional_api_versions == {71: (0, 0), 72: (0, 0)}
    assert 71 not in broker_api_versions("3.7")
    assert broker_personality("3.7", kraft=False).conditional_api_versions == {}
