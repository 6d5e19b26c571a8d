"""The spec model: version ranges, naming, and the loader's enforcement of Kafka's rules."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kwire.protocol._spec import (
    NONE,
    SpecError,
    VersionRange,
    load_spec_dir,
    parse_spec,
    snake_case,
    strip_comments,
)

SPEC_DIR = Path(__file__).resolve().parents[3] / "src" / "kwire" / "protocol" / "specs"


@pytest.mark.parametrize(
    ("text", "lo", "hi", "back"),
    [("3", 3, 3, "3"), ("1-4", 1, 4, "1-4"), ("5+", 5, 0x7FFF, "5+"), ("none", 0, -1, "none")],
)
def test_version_range_parse_and_str(text: str, lo: int, hi: int, back: str) -> None:
    vr = VersionRange.parse(text)
    assert (vr.lowest, vr.highest) == (lo, hi)
    assert str(vr) == back


@pytest.mark.parametrize("text", ["", "x", "4-1", "-1", "1-", "+", "40000"])
def test_version_range_rejects_junk(text: str) -> None:
    with pytest.raises(ValueError):
        VersionRange.parse(text)


def test_version_range_algebra() -> None:
    r = VersionRange.parse("2-9")
    assert 2 in r and 9 in r and 10 not in r and 1 not in r
    assert r.contains(VersionRange.parse("3-4")) and not r.contains(VersionRange.parse("3+"))
    assert r.contains(NONE)
    assert r.intersect(VersionRange.parse("5+")) == VersionRange(5, 9)
    assert r.intersect(VersionRange.parse("10+")).empty
    assert r.subtract(VersionRange.parse("0-4")) == VersionRange(5, 9)
    assert r.subtract(VersionRange.parse("7+")) == VersionRange(2, 6)
    assert r.subtract(VersionRange.parse("20+")) == r
    assert r.subtract(VersionRange.parse("0+")).empty
    with pytest.raises(ValueError):
        r.subtract(VersionRange.parse("4-5"))
    assert list(VersionRange.parse("3-5")) == [3, 4, 5]
    assert list(VersionRange.parse("3+").versions(limit=4)) == [3, 4]


@pytest.mark.parametrize(
    ("name", "snake"),
    [
        ("ThrottleTimeMs", "throttle_time_ms"),
        ("IsKRaftController", "is_kraft_controller"),
        ("TopicId", "topic_id"),
        ("ClusterAuthorizedOperations", "cluster_authorized_operations"),
        ("ReplicaNodes", "replica_nodes"),
        ("SASLHandshake", "saslhandshake"),
        ("V2", "v2"),
    ],
)
def test_snake_case_mirrors_kafka(name: str, snake: str) -> None:
    assert snake_case(name) == snake


def test_strip_comments_keeps_slashes_in_strings() -> None:
    text = '{"a": "http://x", // comment "b"\n "b": "\\"//\\""}'
    assert json.loads(strip_comments(text)) == {"a": "http://x", "b": '"//"'}


def test_bundled_specs_all_load() -> None:
    specs = load_spec_dir(SPEC_DIR)
    assert len(specs) == len(list(SPEC_DIR.glob("*.json")))
    meta = specs["MetadataResponse"]
    assert meta.api_key == 3 and meta.type == "response"
    assert str(meta.valid_versions) == "0-13" and str(meta.flexible_versions) == "9+"
    topics = next(f for f in meta.fields if f.name == "Topics")
    assert topics.struct is not None and topics.struct.name == "MetadataResponseTopic"
    header = specs["RequestHeader"]
    client_id = header.fields[-1]
    assert client_id.flexible_versions == NONE and client_id.attr == "client_id"
    # a common struct referenced by name is resolved
    hb = specs["ConsumerGroupHeartbeatResponse"]
    assignment = next(f for f in hb.fields if f.name == "Assignment")
    assert assignment.struct is not None
    assert assignment.struct.fields[0].struct is not None
    assert assignment.struct.fields[0].struct.is_common
    names = [s.name for s in meta.iter_structs()]
    assert names == [
        "MetadataResponse",
        "MetadataResponseBroker",
        "MetadataResponseTopic",
        "MetadataResponsePartition",
    ]


def _spec(fields: list[dict[str, object]], **top: object) -> str:
    base: dict[str, object] = {
        "apiKey": 9000,
        "type": "request",
        "name": "FooRequest",
        "validVersions": "0-9",
        "flexibleVersions": "9+",
        "fields": fields,
    }
    base.update(top)
    return "// a comment\n" + json.dumps(base)


def _field(**kw: object) -> dict[str, object]:
    out: dict[str, object] = {"name": "Bar", "type": "string", "versions": "0+"}
    out.update(kw)
    return out


@pytest.mark.parametrize(
    ("fields", "top", "message"),
    [
        ([_field(tag=0, taggedVersions="9")], {}, "not open-ended"),
        ([_field(tag=-1, taggedVersions="9+")], {}, "cannot be negative"),
        ([_field(tag=0)], {}, "no tagged versions"),
        ([_field(taggedVersions="9+")], {}, "does not specify a tag"),
        ([_field(tag=0, taggedVersions="8+")], {}, "flexible versions"),
        ([_field(tag=0, taggedVersions="9+", mapKey=True)], {}, "cannot be used as keys"),
        ([_field(default="null")], {}, "null cannot be the default"),
        ([_field(default="null", nullableVersions="3+")], {}, "null cannot be the default"),
        ([_field(type="int32", default="abc")], {}, "invalid default"),
        ([_field(type="int8", default="200")], {}, "out of range"),
        ([_field(type="bool", default="yes")], {}, "invalid default"),
        ([_field(type="int32", nullableVersions="0+")], {}, "cannot be nullable"),
        ([_field(type="int32", flexibleVersions="none")], {}, "flexibleVersions override"),
        ([_field(type="int32", zeroCopy=True)], {}, "zeroCopy"),
        (
            [_field(tag=0, taggedVersions="9+"), _field(name="Baz", tag=0, taggedVersions="9+")],
            {},
            "duplicate tag",
        ),
        ([_field(tag=1, taggedVersions="9+")], {}, "not contiguous"),
        ([_field(), _field()], {}, "duplicate name"),
        ([_field(name="bad_name")], {}, "invalid field name"),
        ([_field(versions="3-1")], {}, "invalid version range"),
        ([_field(type="[]Missing")], {}, "unable to locate"),
        ([_field(color="red")], {}, "unknown keys"),
        ([_field(type="int64", entityType="brokerId")], {}, "entityType"),
        ([], {"flexibleVersions": "9"}, "not open-ended"),
        ([], {"type": "response", "latestVersionUnstable": True}, "latestVersionUnstable"),
    ],
)
def test_loader_rejects_rule_breakers_naming_file_and_field(
    fields: list[dict[str, object]], top: dict[str, object], message: str
) -> None:
    with pytest.raises(SpecError, match=message) as info:
        parse_spec(_spec(fields, **top), "FooRequest.json")
    assert "FooRequest.json" in str(info.value)
    if fields:  # names the field, or the struct for struct-wide rules
        assert "field" in str(info.value) or "in FooRequest" in str(info.value)


def test_loader_accepts_kip482_example_and_defaults() -> None:
    spec = parse_spec(
        _spec(
            [
                {
                    "name": "UserAgent",
                    "type": "string",
                    "tag": 0,
                    "taggedVersions": "9+",
                    "nullableVersions": "9+",
                    "default": "null",
                },
                {
                    "name": "Foos",
                    "type": "[]Foo",
                    "versions": "0+",
                    "fields": [
                        _field(tag=0, taggedVersions="9+", default="hello world"),
                        {"name": "Baz", "type": "int16", "versions": "0+", "default": "0x7f"},
                        {"name": "On", "type": "bool", "versions": "0+", "default": True},
                    ],
                },
            ]
        ),
        "FooRequest.json",
    )
    user_agent, foos = spec.fields
    assert user_agent.versions == VersionRange.parse("9+") and user_agent.default_value() is None
    assert foos.struct is not None
    bar, baz, on = foos.struct.fields
    assert bar.default_value() == "hello world"
    assert baz.default_value() == 0x7F
    assert on.default_value() is True
