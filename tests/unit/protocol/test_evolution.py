"""``kwire spec-check``: one hand-made violating or compliant spec pair per evolution rule."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from kwire.cli import main
from kwire.protocol.evolution import check_evolution

BASE: dict[str, Any] = {
    "apiKey": 90,
    "type": "request",
    "name": "WidgetRequest",
    "validVersions": "0-2",
    "flexibleVersions": "1+",
    "fields": [
        {"name": "Name", "type": "string", "versions": "0+"},
        {"name": "Count", "type": "int32", "versions": "0+"},
        {
            "name": "Parts",
            "type": "[]WidgetPart",
            "versions": "0+",
            "fields": [
                {"name": "Id", "type": "int64", "versions": "0+"},
                {
                    "name": "Label",
                    "type": "string",
                    "versions": "1+",
                    "nullableVersions": "1+",
                    "taggedVersions": "1+",
                    "tag": 0,
                },
            ],
        },
        {
            "name": "Owner",
            "type": "string",
            "versions": "1+",
            "nullableVersions": "1+",
            "taggedVersions": "1+",
            "tag": 0,
        },
    ],
}


def write(tmp: Path, name: str, spec: dict[str, Any]) -> Path:
    d = tmp / name
    d.mkdir()
    (d / "WidgetRequest.json").write_text(
        "// a comment, as Kafka's files have\n" + json.dumps(spec)
    )
    return d


def check(tmp_path: Path, new: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    report = check_evolution(write(tmp_path, "old", BASE), write(tmp_path, "new", new))
    return [(f.kind, f.rule, f.field, f.versions) for f in report.findings]


def edited(**changes: Any) -> dict[str, Any]:
    spec = copy.deepcopy(BASE)
    spec.update(changes)
    return spec


def test_identical_specs_have_no_findings(tmp_path: Path) -> None:
    assert check(tmp_path, copy.deepcopy(BASE)) == []


def test_new_tagged_field_in_flexible_version_is_compatible_without_a_bump(tmp_path: Path) -> None:
    new = copy.deepcopy(BASE)
    new["fields"].append(
        {"name": "Note", "type": "string", "versions": "1+", "taggedVersions": "1+", "tag": 1}
    )
    assert check(tmp_path, new) == [("change", "new-tagged-field", "Note", "1-2")]


def test_untagged_field_added_to_existing_version_is_a_violation(tmp_path: Path) -> None:
    new = copy.deepcopy(BASE)
    new["fields"].insert(2, {"name": "Extra", "type": "int8", "versions": "2+"})
    findings = check(tmp_path, new)
    assert ("violation", "untagged-field-added", "Parts", "2") in findings or any(
        f[0] == "violation" and f[3] == "2" for f in findings
    )
    assert all(f[3] == "2" for f in findings if f[0] == "violation")


def test_untagged_field_added_in_a_new_version_is_compatible(tmp_path: Path) -> None:
    new = edited(validVersions="0-3")
    new["fields"].insert(2, {"name": "Extra", "type": "int8", "versions": "3+"})
    assert check(tmp_path, new) == [("change", "new-versions", "", "")]


def test_tag_reused_by_another_field(tmp_path: Path) -> None:
    new = copy.deepcopy(BASE)
    new["fields"][3] = {
        "name": "Manager",
        "type": "string",
        "versions": "1+",
        "nullableVersions": "1+",
        "taggedVersions": "1+",
        "tag": 0,
    }
    findings = check(tmp_path, new)
    assert ("violation", "tag-reused", "Manager", "") in findings


def test_tag_reused_after_its_field_was_removed(tmp_path: Path) -> None:
    # The old field's versions ended; a new field takes its tag in a later version.
    old = copy.deepcopy(BASE)
    old["fields"][3]["versions"] = "1"
    old["fields"][3]["taggedVersions"] = "1+"
    new = edited(validVersions="0-3")
    new["fields"][3] = {
        "name": "Budget",
        "type": "int32",
        "versions": "3+",
        "taggedVersions": "3+",
        "tag": 0,
    }
    report = check_evolution(write(tmp_path, "old", BASE), write(tmp_path, "new", new))
    assert any(f.rule == "tag-reused" and f.kind == "violation" for f in report.findings)


def test_tagged_field_type_change(tmp_path: Path) -> None:
    new = copy.deepcopy(BASE)
    new["fields"][2]["fields"][1] = {
        "name": "Label",
        "type": "bytes",
        "versions": "1+",
        "nullableVersions": "1+",
        "taggedVersions": "1+",
        "tag": 0,
    }
    assert ("violation", "tagged-type-changed", "Parts.Label", "1-2") in check(tmp_path, new)


def test_tagged_field_nullability_change(tmp_path: Path) -> None:
    new = copy.deepcopy(BASE)
    del new["fields"][3]["nullableVersions"]
    assert ("violation", "tagged-nullability-changed", "Owner", "1-2") in check(tmp_path, new)


def test_tagged_field_in_inflexible_version(tmp_path: Path) -> None:
    new = copy.deepcopy(BASE)
    new["fields"][3]["versions"] = "0+"
    new["fields"][3]["taggedVersions"] = "0+"
    new["fields"][3]["nullableVersions"] = "0+"
    findings = check(tmp_path, new)
    assert [f[:2] for f in findings] == [("violation", "tagged-field-in-inflexible-version")]


def test_tagged_versions_outside_versions(tmp_path: Path) -> None:
    new = copy.deepcopy(BASE)
    new["fields"][3]["versions"] = "2+"
    findings = check(tmp_path, new)
    assert [f[:2] for f in findings] == [("violation", "tagged-versions-outside-versions")]


def test_inflexible_version_turned_flexible(tmp_path: Path) -> None:
    assert check(tmp_path, edited(flexibleVersions="0+")) == [
        ("violation", "flexibility-changed", "", "0")
    ]


def test_untagged_field_type_change(tmp_path: Path) -> None:
    new = copy.deepcopy(BASE)
    new["fields"][1]["type"] = "int64"
    assert check(tmp_path, new) == [("violation", "layout-changed", "Count", "0-2")]


def test_nullability_change_of_untagged_field(tmp_path: Path) -> None:
    new = copy.deepcopy(BASE)
    new["fields"][0]["nullableVersions"] = "2+"
    assert check(tmp_path, new) == [("violation", "layout-changed", "Name", "2")]


def test_rename_is_compatible_on_the_wire(tmp_path: Path) -> None:
    new = copy.deepcopy(BASE)
    new["fields"][1]["name"] = "Total"
    assert check(tmp_path, new) == [("change", "field-renamed", "Total", "0-2")]


def test_removed_versions_and_messages_are_removals(tmp_path: Path) -> None:
    assert check(tmp_path, edited(validVersions="1-2")) == [("removal", "versions-removed", "", "")]


def test_changes_to_an_unstable_latest_version_are_allowed(tmp_path: Path) -> None:
    old = edited(latestVersionUnstable=True)
    new = edited(latestVersionUnstable=True)
    new["fields"][1]["versions"] = "0-1"
    new["fields"].insert(2, {"name": "Count64", "type": "int64", "versions": "2+"})
    report = check_evolution(write(tmp_path, "old", old), write(tmp_path, "new", new))
    assert report.violations == []
    assert any(f.kind == "change" and f.versions == "2" for f in report.findings)


def test_new_message_is_listed(tmp_path: Path) -> None:
    old, new = write(tmp_path, "old", BASE), write(tmp_path, "new", BASE)
    other = edited(apiKey=91, name="GadgetRequest")
    (new / "GadgetRequest.json").write_text(json.dumps(other))
    report = check_evolution(old, new)
    assert [(f.kind, f.rule, f.message) for f in report.findings] == [
        ("change", "new-message", "GadgetRequest")
    ]


def test_cli_exit_codes_and_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old = write(tmp_path, "old", BASE)
    good = write(tmp_path, "good", edited(validVersions="0-3"))
    bad = write(tmp_path, "bad", edited(flexibleVersions="0+"))
    assert main(["spec-check", str(old), str(good)]) == 0
    assert main(["spec-check", str(old), str(bad), "--json"]) == 1
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines() if x.startswith("{")]
    assert {
        "kind": "violation",
        "rule": "flexibility-changed",
        "file": "WidgetRequest.json",
        "message": "WidgetRequest",
        "field": "",
        "versions": "0",
        "detail": "inflexible version turned flexible",
    } in lines
    assert main(["spec-check", str(old), str(tmp_path / "missing")]) == 2
    assert main(["spec-check", str(old), str(old / "WidgetRequest.json")]) == 2
    assert main(["spec-check", str(old), str(old), "--strict"]) == 0


def test_bundled_specs_are_a_compatible_evolution_of_themselves() -> None:
    from kwire.protocol._bundled import SPEC_DIR

    report = check_evolution(SPEC_DIR, SPEC_DIR)
    assert report.findings == []
