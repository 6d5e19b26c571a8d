"""The merged Kafka 3.9.1 + 4.3.1 spec corpus (tools/specs/merged, tools/merge_specs.py).

Checked with tools/spec_layout, a reading of the spec language independent of kwire's loader: every
4.3 version has 4.3.1's wire layout, every version only 3.9.1 has keeps 3.9.1's layout, the staged
4.3.1 specs equal kio 0.6.5's schemas, and kwire's own spec loader accepts the result.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import merge_specs
import pytest
import spec_layout as sl

from kwire.protocol._spec import load_spec_dir
from kwire.protocol.releases import RELEASES, supported_versions

MERGED = merge_specs.MERGED_DIR


@pytest.fixture(scope="module")
def merged() -> dict[str, dict[str, Any]]:
    return merge_specs.load_dir(MERGED)


def test_merged_files_are_up_to_date() -> None:
    want = merge_specs.merged_files()
    have = {p.name: p.read_text(encoding="utf-8") for p in MERGED.iterdir()}
    assert sorted(have) == sorted(want)
    stale = [name for name, text in want.items() if have[name] != text]
    assert stale == []


def test_the_bundled_specs_are_the_merged_corpus() -> None:
    """kwire bundles the merged corpus and the coordinator records (``merge_specs.py install``),
    SOURCE included."""
    want = merge_specs.bundled_files()
    have = {p.name: p.read_text(encoding="utf-8") for p in merge_specs.BUNDLED_DIR.iterdir()}
    assert sorted(have) == sorted(want)
    assert [name for name, text in want.items() if have[name] != text] == []
    assert have["SOURCE"].startswith("kafka_version: 3.9.1+4.3.1\n")


def test_merged_layouts_match_both_releases(merged: dict[str, dict[str, Any]]) -> None:
    problems, notes = merge_specs.verify(merged)
    assert problems == []
    # The only shared version whose wire layout 4.x changed (a field added to an existing version).
    changed = {n.split(":")[0] for n in notes if "layout changed" in n}
    assert changed == {"ReadShareGroupStateSummaryResponse v0"}


def test_staged_4_3_specs_equal_kio() -> None:
    assert merge_specs.verify_staged_against_kio() == []


def test_verify_catches_a_changed_old_version(merged: dict[str, dict[str, Any]]) -> None:
    # Mutation check: a field shared by Produce v2 (3.9.1 only) and v13 (4.3.1) changes type.
    broken = copy.deepcopy(merged)
    ts = _find(broken["ProduceResponse"]["fields"], "Responses", "PartitionResponses")
    ts = next(f for f in ts["fields"] if f["name"] == "LogAppendTimeMs")
    ts["type"] = "int32"
    problems, _ = merge_specs.verify(broken)
    assert any("ProduceResponse v2: differs from 3.9.1" in p for p in problems)
    assert any("ProduceResponse v13: differs from 4.3.1" in p for p in problems)


def _find(fields: list[dict[str, Any]], *names: str) -> dict[str, Any]:
    node: dict[str, Any] = {"fields": fields}
    for n in names:
        node = next(f for f in node["fields"] if f["name"] == n)
    return node


def test_verify_catches_a_lost_version(merged: dict[str, dict[str, Any]]) -> None:
    broken = copy.deepcopy(merged)
    broken["FetchRequest"]["validVersions"] = "4-18"
    problems, _ = merge_specs.verify(broken)
    assert any(p.startswith("FetchRequest: versions") for p in problems)


def _versions(specs: dict[str, dict[str, Any]]) -> int:
    return sum(len(sl.valid_versions(s)) for s in specs.values())


def _keys(specs: dict[str, dict[str, Any]]) -> int:
    return len({s["apiKey"] for s in specs.values() if s.get("type") == "request"})


def test_counts_in_docs(merged: dict[str, dict[str, Any]]) -> None:
    # The numbers docs/versions.md states, recomputed.
    old = merge_specs.load_dir(merge_specs.OLD_DIR)
    new = merge_specs.load_dir(merge_specs.NEW_DIR)
    assert (len(old), len(new), len(merged)) == (186, 190, 198)
    assert (_versions(old), _versions(new), _versions(merged)) == (666, 625, 744)
    assert (_keys(old), _keys(new), _keys(merged)) == (88, 89, 93)
    # No 3.9.1 version is lost (ListClientMetricsResources v0 lives on as ListConfigResources v0).
    assert "ListClientMetricsResourcesRequest" not in merged
    assert _versions(merged) - _versions(old) == 78
    doc = (merge_specs.ROOT / "docs" / "versions.md").read_text(encoding="utf-8")
    for text in ("| 186 | 190 | 198 |", "| 666 | 625 | 744 |", "| 88 | 89 | 93 |", "adds 78"):
        assert text in doc


def test_docs_table_is_up_to_date() -> None:
    assert merge_specs.write_docs(check_only=True) == 0


def test_kwire_loader_accepts_the_merged_corpus() -> None:
    specs = load_spec_dir(Path(MERGED))
    assert specs["ProduceRequest"].versions() == range(0, 14)
    assert specs["FetchRequest"].versions() == range(0, 19)
    assert specs["StreamsGroupHeartbeatRequest"].versions() == range(0, 1)


def test_every_release_version_is_in_the_merged_corpus(merged: dict[str, dict[str, Any]]) -> None:
    by_key: dict[int, set[int]] = {}
    for spec in merged.values():
        if spec.get("type") == "request":
            by_key[int(spec["apiKey"])] = set(sl.valid_versions(spec))
    from kwire.protocol.releases import supported_versions_by_key

    for release in RELEASES:
        for key, rng in supported_versions_by_key(release).items():
            assert set(rng.versions()) <= by_key[key], (release, key)
    assert supported_versions("4.3")["Produce"].highest == 13


def test_what_the_3_9_1_oracle_can_still_check(merged: dict[str, dict[str, Any]]) -> None:
    # Every 3.9.1 message-version stays in the corpus; all but the five documented 4.x changes
    # (renamed fields or messages, one layout change) keep 3.9.1's exact layout and names, so the
    # Java 3.9.1 oracle keeps checking 661 of 666.
    shared = merge_specs.shared_with_old(merged)
    old = merge_specs.load_dir(merge_specs.OLD_DIR)
    every_old = {(n, v) for n, s in old.items() for v in sl.valid_versions(s)}
    assert len(every_old) == 666 and len(shared) == 661
    assert every_old - shared == {
        ("ListClientMetricsResourcesRequest", 0),
        ("ListClientMetricsResourcesResponse", 0),
        ("ReadShareGroupStateSummaryResponse", 0),
        ("VoteRequest", 0),
        ("VoteRequest", 1),
    }
