"""kwire size-report: variant specs, suggestions, sizes (checked independently), the CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kwire._wire import uvarint_size, varint_size
from kwire.cli._main import main
from kwire.protocol import encode_request_frame, encode_response_frame, message_class
from kwire.protocol._bundled import message_spec
from kwire.protocol._sizereport import (
    SEED_002_FIELDS,
    convert,
    generate,
    report_case,
    spec_json,
    suggest_varints,
    tag_header_variant,
    varint_variant,
)
from kwire.protocol._spec import SpecError, parse_spec

LATEST = message_spec("MetadataResponse").valid_versions.highest
NONFLEX = max(
    v
    for v in message_spec("MetadataResponse").versions()
    if not message_spec("MetadataResponse").flexible(v)
)


def test_varint_variant_adds_a_version_with_form_b_encodings() -> None:
    obj = varint_variant(spec_json("MetadataResponse"), SEED_002_FIELDS["MetadataResponse"])
    spec = parse_spec(json.dumps(obj), "MetadataResponse.json")
    assert spec.valid_versions.highest == LATEST + 1
    assert spec.flexible(LATEST + 1)
    part = spec.structs["MetadataResponsePartition"]
    fields = {f.name: f for f in part.fields}
    assert fields["LeaderId"].encoding_form == "encoding"
    assert fields["LeaderId"].wire_type(LATEST) == "int32"
    assert fields["LeaderId"].wire_type(LATEST + 1) == "varint32"
    assert fields["LeaderEpoch"].wire_type(LATEST + 1) == "varint32"
    assert fields["ReplicaNodes"].wire_type(LATEST + 1) == "[]unsigned_varint32"
    assert fields["ErrorCode"].wire_type(LATEST + 1) == "int16"  # not chosen
    # the new version has every field the latest has
    for s in spec.iter_structs():
        for f in s.fields:
            assert (LATEST in f.versions) == (LATEST + 1 in f.versions), f.name
    # the untouched original still parses as before
    assert "encoding" not in json.dumps(spec_json("MetadataResponse"))


def test_varint_variant_rejects_bad_choices() -> None:
    obj = spec_json("MetadataResponse")
    with pytest.raises(KeyError, match="Nope"):
        varint_variant(obj, {"Topics.Nope": "varint"})
    with pytest.raises(SpecError, match="not an int16/32/64 field"):
        varint_variant(obj, {"Topics.Name": "varint"})
    with pytest.raises(SpecError, match="not in the new version"):
        varint_variant(obj, {"ClusterAuthorizedOperations": "varint"})  # versions 8-10


def test_tag_header_variant_is_loaded_interleaved() -> None:
    spec = parse_spec(json.dumps(tag_header_variant(spec_json("FetchResponse"))), "F.json")
    assert spec.tag_header == "interleaved"


def _metadata_sample() -> Any:
    _, msgs = generate("metadata", 40, seed=7)
    return msgs


def test_sizes_match_an_independent_count() -> None:
    msgs = _metadata_sample()
    case = report_case("m", "MetadataResponse", msgs, repeat=0, suggest=False)
    rows = {m.key: m for m in case.measurements}
    msg = msgs[0]
    assert rows["shipped"].size == len(msg.encode(LATEST))
    assert rows["nonflex"].size == len(msg.encode(NONFLEX))
    assert rows["nonflex"].version == NONFLEX
    # no tagged field is set: the tag header changes nothing
    assert rows["tagheader"].size == rows["shipped"].size
    # varints: every chosen value's fixed 4 bytes become its varint
    saved = 0
    for topic in msg.topics:
        for p in topic.partitions:
            saved += 4 - varint_size(p.leader_id)
            saved += 4 - varint_size(p.leader_epoch)
            for ids in (p.replica_nodes, p.isr_nodes, p.offline_replicas):
                saved += sum(4 - uvarint_size(x) for x in ids)
    assert rows["varints"].size == rows["shipped"].size - saved
    assert rows["varints"].version == LATEST + 1
    assert rows["varints"].encode_s is None  # repeat=0: sizes only


def test_timings_are_reported_relative_to_shipped() -> None:
    case = report_case("m", "MetadataResponse", _metadata_sample(), repeat=3, suggest=False)
    out = case.to_json()
    base = next(r for r in out["variants"] if r["variant"] == "shipped")
    assert base["encode_vs_shipped"] == 1.0 and base["decode_vs_shipped"] == 1.0
    rounds = {m.key: m for m in case.measurements}
    for row in out["variants"]:
        m = rounds[row["variant"]]
        assert len(m.encode_rounds) == len(m.decode_rounds) == 3
        assert row["encode_seconds"] == min(m.encode_rounds) > 0
        assert row["decode_seconds"] == min(m.decode_rounds) > 0
        pairs = sorted(
            v / b for v, b in zip(m.encode_rounds, rounds["shipped"].encode_rounds, strict=True)
        )
        assert row["encode_vs_shipped"] == pytest.approx(pairs[1])  # the median of 3


def test_tag_header_saves_a_byte_per_small_tagged_field() -> None:
    cls: Any = message_class("FetchResponse")
    part = cls.PartitionData(partition_index=0, high_watermark=10, records=b"")
    part.current_leader = cls.LeaderIdAndEpoch(leader_id=1, leader_epoch=2)
    msg = cls(responses=[cls.FetchableTopicResponse(topic="t", partitions=[part])])
    case = report_case("f", "FetchResponse", [msg], repeat=0, suggest=False)
    rows = {m.key: m for m in case.measurements}
    # tag 1, size 9 (int32, int32, empty tag section): two one-byte varints vs one byte 0b1000011
    shipped = rows["shipped"].size
    assert shipped is not None and rows["tagheader"].size == shipped - 1
    assert "varints" not in rows  # no seed set for FetchResponse, none given


def test_suggestions_follow_the_values() -> None:
    cls: Any = message_class("MetadataResponse")
    part = cls.MetadataResponsePartition
    msg = cls(
        topics=[
            cls.MetadataResponseTopic(
                name="t",
                partitions=[
                    part(partition_index=i, leader_id=-1 if i == 0 else 5, replica_nodes=[5, 6, 7])
                    for i in range(10)
                ],
                topic_authorized_operations=-(2**31),
            )
        ]
    )
    got = suggest_varints([msg], LATEST)
    assert got["Topics.Partitions.LeaderId"] == "varint"  # a -1 was seen
    assert got["Topics.Partitions.PartitionIndex"] == "varint"  # ties go to zigzag (safe)
    assert got["Topics.Partitions.LeaderEpoch"] == "varint"  # default -1
    assert "Topics.TopicAuthorizedOperations" not in got  # -2**31: five bytes as a varint
    msg.topics[0].partitions[0].replica_nodes = [100, 101, 102]  # unsigned: 1 byte, zigzag: 2
    assert suggest_varints([msg], LATEST)["Topics.Partitions.ReplicaNodes"] == "unsigned"


def test_convert_keeps_every_value() -> None:
    msgs = _metadata_sample()
    obj = varint_variant(spec_json("MetadataResponse"), SEED_002_FIELDS["MetadataResponse"])
    from kwire.protocol import load_specs

    spec = parse_spec(json.dumps(obj), "MetadataResponse.json")
    cls = load_specs({spec.name: spec}).message_class("MetadataResponse")
    copy = convert(msgs[0], cls)
    assert type(copy) is cls
    assert copy.to_json(LATEST) == msgs[0].to_json(LATEST)
    assert cls.decode(copy.encode(LATEST + 1), LATEST + 1) == copy


# ------------------------------------------------------------------------------------------------
# CLI


def test_cli_json_for_a_generator(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["size-report", "-g", "metadata:10", "--repeat", "0", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    (case,) = out["cases"]
    assert case["case"] == "MetadataResponse, 10 partitions"
    keys = [r["variant"] for r in case["variants"]]
    assert keys == ["nonflex", "shipped", "varints", "suggested", "tagheader", "both"]


def test_cli_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["size-report", "-g", "apiversions", "--repeat", "0"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("### ApiVersionsResponse x 1")
    assert "| flexible (shipped) |" in out and "| interleaved tag header |" in out


def test_cli_request_frames(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    req: Any = message_class("MetadataRequest")
    frames = b"".join(
        encode_request_frame(
            req(topics=[req.MetadataRequestTopic(name=f"topic-{i}")]), 12, correlation_id=i
        )
        for i in range(3)
    )
    (tmp_path / "capture.bin").write_bytes(frames)
    argv = ["size-report", "--frames", str(tmp_path), "--repeat", "0", "--json"]
    assert main(argv) == 0
    (case,) = json.loads(capsys.readouterr().out)["cases"]
    assert case["message"] == "MetadataRequest" and case["messages"] == 3
    shipped = next(r for r in case["variants"] if r["variant"] == "shipped")
    latest = message_spec("MetadataRequest").valid_versions.highest
    assert shipped["version"] == latest
    # garbage after the last frame is a decode error
    (tmp_path / "capture.bin").write_bytes(frames + b"\x00\x00")
    assert main(argv) == 1


def test_cli_response_frames(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    msgs = _metadata_sample()
    path = tmp_path / "responses.bin"
    path.write_bytes(encode_response_frame(msgs[0], 12, correlation_id=1))
    argv = ["size-report", "--frames", str(path), "--response", "MetadataResponse:12"]
    assert main([*argv, "--repeat", "0", "--json", "--no-suggest"]) == 0
    (case,) = json.loads(capsys.readouterr().out)["cases"]
    keys = [r["variant"] for r in case["variants"]]
    assert keys == ["nonflex", "shipped", "varints", "tagheader", "both"]


@pytest.mark.parametrize(
    "argv",
    [
        ["-g", "nope"],
        ["-g", "metadata:x"],
        ["-g", "metadata:0"],
        ["--varint", "LeaderId"],
        ["--repeat", "-1"],
        ["--frames", "/no/such/dir"],
        ["--frames", ".", "--response", "MetadataRequest:1"],
    ],
)
def test_cli_usage_errors(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["size-report", *argv]) == 2
    assert "kwire size-report:" in capsys.readouterr().err
