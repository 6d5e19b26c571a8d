"""tools/merge_specs.py's merge rules on small hand-written specs (old = "3.9.1", new = "4.x")."""

from __future__ import annotations

from typing import Any

import merge_specs
import pytest
import spec_layout as sl


def _spec(valid: str, fields: list[dict[str, Any]], flexible: str = "none") -> dict[str, Any]:
    return {
        "apiKey": 99,
        "type": "request",
        "name": "DemoRequest",
        "validVersions": valid,
        "flexibleVersions": flexible,
        "fields": fields,
    }


def _f(name: str, type_: str, versions: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "type": type_, "versions": versions, **extra}


OLD = _spec(
    "0-4",
    [
        _f("GroupId", "string", "0+"),
        _f("Legacy", "int32", "0-1", default="-1"),
        _f(
            "Topics",
            "[]Topic",
            "0+",
            fields=[
                _f("Name", "string", "0+"),
                _f("OldOnly", "int64", "0-2"),
            ],
        ),
        _f("Tagged", "int32", "4+", taggedVersions="4+", tag=0),
    ],
    flexible="4+",
)
NEW = _spec(
    "2-6",
    [
        _f("GroupId", "string", "2+"),
        _f(
            "Topics",
            "[]Topic",
            "2+",
            fields=[
                _f("Name", "string", "2-5", nullableVersions="5"),
                _f("TopicId", "uuid", "6+"),
                _f("OldOnly", "int64", "2"),
            ],
        ),
        _f("NewField", "bool", "5+"),
        _f("Tagged", "int32", "4+", taggedVersions="4+", tag=0),
    ],
    flexible="4+",
)


def _field(fields: list[dict[str, Any]], *path: str) -> dict[str, Any]:
    node: dict[str, Any] = {"fields": fields}
    for p in path:
        node = next(f for f in node["fields"] if f["name"] == p)
    return node


def test_union_of_versions_with_old_only_fields_restored() -> None:
    report: list[str] = []
    merged = merge_specs.merge_spec(OLD, NEW, report)
    assert merged["validVersions"] == "0-6"
    assert merged["flexibleVersions"] == "4+"
    fields = merged["fields"]
    assert [f["name"] for f in fields] == ["GroupId", "Legacy", "Topics", "NewField", "Tagged"]
    assert _field(fields, "GroupId")["versions"] == "0+"
    # exists only in versions the new release removed: restored with its old range
    assert _field(fields, "Legacy") == {
        "name": "Legacy",
        "type": "int32",
        "versions": "0-1",
        "default": "-1",
    }
    assert any("restored DemoRequest.Legacy" in r for r in report)
    assert _field(fields, "Topics", "Name")["versions"] == "0-5"
    name = _field(fields, "Topics", "Name")
    assert merge_specs.vset(name["nullableVersions"]) & merge_specs.vset(name["versions"]) == {5}
    assert _field(fields, "Topics", "TopicId")["versions"] == "6+"
    assert _field(fields, "Topics", "OldOnly")["versions"] == "0-2"
    assert _field(fields, "NewField")["versions"] == "5+"
    assert _field(fields, "Tagged")["taggedVersions"] == "4+"


def test_merged_layouts_equal_each_side() -> None:
    merged = merge_specs.merge_spec(OLD, NEW, [])
    for v in (0, 1):
        assert sl.layout(merged, v) == sl.layout(OLD, v)
    for v in range(2, 7):
        assert sl.layout(merged, v) == sl.layout(NEW, v)


def test_a_shared_version_follows_the_new_release() -> None:
    # Version 3 exists in both; the new release added a field to it: the new layout wins.
    new = _spec("2-6", [*NEW["fields"], _f("Added", "int8", "3+")], flexible="4+")
    merged = merge_specs.merge_spec(OLD, new, [])
    assert sl.layout(merged, 3) == sl.layout(new, 3)
    assert sl.layout(merged, 3) != sl.layout(OLD, 3)
    assert sl.layout(merged, 1) == sl.layout(OLD, 1)


def test_one_side_only() -> None:
    assert merge_specs.merge_spec(OLD, None, []) == OLD
    assert merge_specs.merge_spec(None, NEW, []) == NEW


def test_incompatible_types_are_refused() -> None:
    new = _spec("2-6", [_f("GroupId", "int32", "2+")])
    with pytest.raises(ValueError, match="type differs"):
        merge_specs.merge_spec(OLD, new, [])


def test_range_helpers() -> None:
    assert merge_specs.range_text({3, 4, 5}, 5) == "3+"
    assert merge_specs.range_text({3, 4}, 5) == "3-4"
    assert merge_specs.range_text({3, 4, 5}, 5, open_ended=False) == "3-5"
    with pytest.raises(ValueError, match="contiguous"):
        merge_specs.range_text({1, 3}, 5)
    # a range may cover versions where the field is absent, as long as it selects exactly
    assert merge_specs.cover_text({2, 3}, {2, 3}, 6) == "2+"
    with pytest.raises(ValueError):
        merge_specs.cover_text({1, 3}, {1, 2, 3}, 6)
