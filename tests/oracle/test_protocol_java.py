"""The protocol oracle itself: ProtocolOracle.java must expose Kafka's code faithfully before it judges kwire.

These tests use no kwire code (except the last, on float64 bit patterns). They check the jar inventory the issue relies on (every message and
message-version of Kafka 3.9.1), that the schema dump is internally consistent, and that the server
round-trips Kafka's own defaults JSON for every message-version and reports bad requests as errors.
"""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING, Any

import pytest

from kwire.protocol import message_class

if TYPE_CHECKING:  # only for annotations: "conftest" names several modules in a full run
    from conftest import JavaProcess

pytestmark = pytest.mark.oracle

PRIMITIVES = {
    "INT8",
    "INT16",
    "UINT16",
    "INT32",
    "UNSIGNED_INT32",
    "INT64",
    "FLOAT64",
    "BOOLEAN",
    "UUID",
    "STRING",
    "COMPACT_STRING",
    "NULLABLE_STRING",
    "COMPACT_NULLABLE_STRING",
    "BYTES",
    "COMPACT_BYTES",
    "NULLABLE_BYTES",
    "COMPACT_NULLABLE_BYTES",
    "RECORDS",
    "COMPACT_RECORDS",
}


def message_versions(schemas: dict[str, Any]) -> list[tuple[str, int]]:
    return [
        (name, int(v))
        for name, entry in sorted(schemas["messages"].items())
        for v in entry["versions"]
    ]


def test_jar_inventory_is_kafka_3_9_1(kafka_schemas: dict[str, Any]) -> None:
    assert kafka_schemas["kafkaVersion"] == "3.9.1"
    messages = kafka_schemas["messages"]
    # 186 generated message classes with 666 versions; of those, the 179 classes named *Data
    # (requests, responses, headers, DefaultPrincipalData) have the 652 versions the issue counts.
    assert kafka_schemas["messageCount"] == len(messages) == 186
    assert kafka_schemas["messageVersionCount"] == len(message_versions(kafka_schemas)) == 666
    data = {n: e for n, e in messages.items() if e["class"].endswith("Data")}
    assert kafka_schemas["dataClassCount"] == len(data) == 179
    assert kafka_schemas["dataClassVersionCount"] == 652
    assert sum(e["highestVersion"] - e["lowestVersion"] + 1 for e in data.values()) == 652
    assert messages["LeaderChangeMessage"]["class"] == "LeaderChangeMessage"
    assert messages["DefaultPrincipalData"]["class"] == "DefaultPrincipalData"
    for name, entry in messages.items():
        versions = [int(v) for v in entry["versions"]]
        assert versions == list(range(entry["lowestVersion"], entry["highestVersion"] + 1)), name
    assert messages["MetadataResponse"]["apiKey"] == 3
    assert messages["MetadataResponse"]["highestVersion"] == 12
    assert messages["RequestHeader"]["apiKey"] == -1  # headers are not APIs


def _check_type(where: str, t: dict[str, Any], flexible: bool) -> None:
    kind = t["type"]
    if kind == "STRUCT":
        _check_struct(where, t["struct"])
    elif kind in ("ARRAY", "COMPACT_ARRAY"):
        assert (kind == "COMPACT_ARRAY") == flexible, where
        _check_type(where + "[]", t["items"], flexible)
    else:
        assert kind in PRIMITIVES, where
        if kind.startswith("COMPACT_"):
            assert flexible, where


def _check_struct(where: str, struct: dict[str, Any]) -> None:
    flexible = struct["flexible"]
    if not flexible:
        assert struct["taggedFields"] == [], where
    tags = [f["tag"] for f in struct["taggedFields"]]
    assert tags == sorted(set(tags)), where
    assert all(tag >= 0 for tag in tags), where
    for field in struct["fields"] + struct["taggedFields"]:
        _check_type(f"{where}.{field['json']}", field["type"], flexible)


@pytest.mark.parametrize("name", ["MetadataResponse", "FetchRequest", "RequestHeader"])
def test_dump_is_consistent(kafka_schemas: dict[str, Any], name: str) -> None:
    # Compact forms exactly in flexible versions, sorted unique tags; the RequestHeader's ClientId
    # keeps its non-compact form in flexible v2 (its field-level flexibleVersions is "none").
    for version, struct in kafka_schemas["messages"][name]["versions"].items():
        if name == "RequestHeader":
            if version == "0":
                assert [f["json"] for f in struct["fields"]][-1] == "correlationId"
                continue
            client_id = struct["fields"][3]
            assert client_id["type"] == {"type": "NULLABLE_STRING", "nullable": True}
            assert struct["flexible"] == (version == "2")
            continue
        _check_struct(f"{name} v{version}", struct)


def test_metadata_response_v12_schema(kafka_schemas: dict[str, Any]) -> None:
    v12 = kafka_schemas["messages"]["MetadataResponse"]["versions"]["12"]
    assert [f["json"] for f in v12["fields"]] == [
        "throttleTimeMs",
        "brokers",
        "clusterId",
        "controllerId",
        "topics",
    ]
    topic = v12["fields"][4]["type"]
    assert topic["type"] == "COMPACT_ARRAY" and not topic["nullable"]
    topic_fields = {f["json"]: f for f in topic["items"]["struct"]["fields"]}
    assert topic_fields["name"]["type"] == {"type": "COMPACT_NULLABLE_STRING", "nullable": True}
    assert topic_fields["topicId"]["name"] == "topic_id"
    assert topic_fields["topicId"]["type"]["type"] == "UUID"


def test_nullable_structs_and_records_are_probed(kafka_schemas: dict[str, Any]) -> None:
    messages = kafka_schemas["messages"]
    assignment = messages["ConsumerGroupHeartbeatResponse"]["versions"]["0"]["fields"][-1]
    assert assignment["json"] == "assignment"
    assert assignment["type"]["type"] == "STRUCT" and assignment["type"]["nullable"]
    snapshot = messages["FetchSnapshotResponse"]["versions"]["0"]
    partitions = snapshot["fields"][2]["type"]["items"]["struct"]["fields"][1]
    unaligned = partitions["type"]["items"]["struct"]["fields"][-1]
    assert unaligned["json"] == "unalignedRecords"
    assert unaligned["type"] == {"type": "COMPACT_RECORDS", "nullable": False}


def test_defaults_round_trip_through_kafka_for_every_message_version(
    protocol_oracle: JavaProcess, kafka_schemas: dict[str, Any]
) -> None:
    cases = message_versions(kafka_schemas)
    messages = kafka_schemas["messages"]
    replies = protocol_oracle.batch(
        [
            {
                "op": "encode",
                "message": m,
                "version": v,
                "json": messages[m]["versions"][str(v)]["default"],
            }
            for m, v in cases
        ]
    )
    failures = []
    decode_requests = []
    for (m, v), reply in zip(cases, replies, strict=True):
        default = messages[m]["versions"][str(v)]["default"]
        if "error" in reply:
            failures.append(f"{m} v{v}: {reply['error']}")
        elif reply["json"] != default or reply["redecoded"] != default:
            failures.append(f"{m} v{v}: defaults changed: {reply}")
        decode_requests.append(
            {"op": "decode", "message": m, "version": v, "bytes": reply.get("bytes", "")}
        )
    decoded = protocol_oracle.batch(decode_requests)
    for (m, v), reply in zip(cases, decoded, strict=True):
        if reply.get("json") != messages[m]["versions"][str(v)]["default"]:
            failures.append(f"{m} v{v}: decode gave {reply}")
    assert not failures, "\n".join(failures[:20])


def test_known_bytes(protocol_oracle: JavaProcess) -> None:
    # ApiVersionsRequest v3: two empty compact strings (length+1 = 1) and an empty tag section.
    reply = protocol_oracle.request(
        {
            "op": "encode",
            "message": "ApiVersionsRequest",
            "version": 3,
            "json": {"clientSoftwareName": "kwire", "clientSoftwareVersion": ""},
        }
    )
    assert base64.b64decode(reply["bytes"]) == b"\x06kwire\x01\x00"
    # Non-ASCII strings travel through the JSON lines as UTF-8 and are written as UTF-8.
    reply = protocol_oracle.request(
        {
            "op": "encode",
            "message": "ApiVersionsRequest",
            "version": 3,
            "json": {"clientSoftwareName": "ké🦀", "clientSoftwareVersion": ""},
        }
    )
    assert base64.b64decode(reply["bytes"]) == b"\x08" + "ké🦀".encode() + b"\x01\x00"
    assert reply["redecoded"]["clientSoftwareName"] == "ké🦀"


@pytest.mark.parametrize(
    ("request_", "expected"),
    [
        ({"op": "encode", "message": "NoSuchRequest", "version": 0, "json": {}}, "unknown message"),
        (
            {"op": "encode", "message": "MetadataRequest", "version": 99, "json": {}},
            "no version 99",
        ),
        (
            {"op": "decode", "message": "ApiVersionsRequest", "version": 3, "bytes": "AQEAAA=="},
            "trailing",
        ),
        (
            {"op": "decode", "message": "ApiVersionsRequest", "version": 3, "bytes": "AQ=="},
            "Exception",
        ),
        ({"op": "encode", "message": "MetadataRequest", "version": 0, "json": {}}, "mandatory"),
        ({"op": "frobnicate"}, "unknown op"),
    ],
)
def test_bad_requests_are_errors(
    protocol_oracle: JavaProcess, request_: dict[str, Any], expected: str
) -> None:
    reply = protocol_oracle.request(request_)
    assert expected in reply["error"]
    # The server is still alive and well afterwards.
    ok = protocol_oracle.request(
        {"op": "decode", "message": "ApiVersionsRequest", "version": 3, "bytes": "AQEA"}
    )
    assert ok == {"json": {"clientSoftwareName": "", "clientSoftwareVersion": ""}}


def test_reencode_keeps_unknown_tags_in_tag_order(protocol_oracle: JavaProcess) -> None:
    # ApiVersionsResponse v3: errorCode 0, no apiKeys, throttleTimeMs 0, then a tag section with the
    # known tag 1 (finalizedFeaturesEpoch = 5, an int64) and the unknown tags 4 and 9.
    body = b"\x00\x00" + b"\x01" + b"\x00\x00\x00\x00"
    tags = b"\x03" + b"\x01\x08" + (5).to_bytes(8, "big") + b"\x04\x01x" + b"\x09\x02yz"
    data = body + tags
    reply = protocol_oracle.request(
        {
            "op": "reencode",
            "message": "ApiVersionsResponse",
            "version": 3,
            "bytes": base64.b64encode(data).decode(),
        }
    )
    assert base64.b64decode(reply["bytes"]) == data
    assert reply["json"]["finalizedFeaturesEpoch"] == 5
    assert "4" not in reply["json"] and "9" not in reply["json"]


FLOAT_BITS = (
    "7ff8000000000000",  # the canonical quiet NaN
    "7ff0000000000001",  # a signalling NaN
    "fff8000000000bad",  # a negative NaN with a payload
    "7ff0000000000000",  # +infinity
    "fff0000000000000",  # -infinity
    "8000000000000000",  # -0.0
    "0000000000000001",  # the smallest subnormal
)


@pytest.mark.parametrize("bits", FLOAT_BITS)
def test_float64_bits_survive_kafka_and_kwire(protocol_oracle: JavaProcess, bits: str) -> None:
    """Values JSON cannot carry (NaN payloads, infinities) and -0.0, at the byte level: Kafka and
    kwire both read them and write back the very same eight bytes."""
    sample = {"errorCode": 0, "errorMessage": None, "throttleTimeMs": 0}
    sample["entries"] = [{"entity": [], "values": [{"key": "k", "value": 1.5}]}]
    made = protocol_oracle.request(
        {"op": "encode", "message": "DescribeClientQuotasResponse", "version": 1, "json": sample}
    )
    data = base64.b64decode(made["bytes"])
    assert data.count(bytes.fromhex("3ff8000000000000")) == 1  # 1.5
    patched = data.replace(bytes.fromhex("3ff8000000000000"), bytes.fromhex(bits))
    again = protocol_oracle.request(
        {
            "op": "reencode",
            "message": "DescribeClientQuotasResponse",
            "version": 1,
            "bytes": base64.b64encode(patched).decode(),
        }
    )
    assert base64.b64decode(again["bytes"]) == patched
    cls = message_class("DescribeClientQuotasResponse")
    assert cls.decode(patched, 1).encode(1) == patched
