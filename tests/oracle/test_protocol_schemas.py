"""kwire's bundled specs give exactly the jar's wire schema and defaults, for every message-version
Kafka 3.9.1's jar can judge (its own, less ``DIFFERS_FROM_3_9_1``: see test_protocol_kafka_roundtrip).

The comparison is tools/check_specs.py's (the same code the developer tool runs): kwire's spec model
against the schema dump of Kafka's generated classes (tools/java/ProtocolOracle.java), defaults
included. Then the codec itself: a freshly constructed kwire message writes the same JSON as a
fresh Java one, for every message-version. The mutation tests show that the comparison notices
each kind of difference it claims to check.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import check_specs
import merge_specs
import pytest
from test_protocol_kafka_roundtrip import MESSAGE_VERSIONS

from kwire.protocol import bundled_specs, message_class
from kwire.protocol._bundled import SPEC_DIR
from kwire.protocol._spec import load_spec_dir, strip_comments

pytestmark = pytest.mark.oracle


def test_bundled_specs_give_the_jars_wire_schema_and_defaults(
    kafka_schemas: dict[str, Any],
) -> None:
    specs = bundled_specs()
    differences = check_specs.compare(kafka_schemas, specs, judged=True)
    assert not differences, f"{len(differences)} differences:\n" + "\n".join(differences[:50])
    # What was compared: the jar's 666 message-versions less the five kwire takes from 4.x, all
    # of them bundled; the bundled corpus has more (Kafka 4.x's), which the jar cannot judge.
    judged = check_specs.judged_pairs(kafka_schemas)
    assert kafka_schemas["messageVersionCount"] == 666 and len(judged) == 661
    assert judged == set(MESSAGE_VERSIONS)
    assert judged < {(n, v) for n, s in specs.items() for v in s.versions()}
    # compared exactly, the bundled corpus differs from the jar (4.x versions and renames)
    exact = check_specs.compare(kafka_schemas, specs)
    assert "MetadataResponse: versions kwire 0-13, jar 0-12" in exact
    assert "ListConfigResourcesRequest: in kwire's specs but not in the jar" in exact


def _struct_defaults(
    cls: Any, struct: dict[str, Any], version: int, path: str
) -> tuple[int, list[str]]:
    """Compares ``cls()`` with the jar's defaults for ``struct``, then every nested struct class."""
    count = 1
    try:
        differences = check_specs.json_diff(path, cls().to_json(version), struct["default"])
    except Exception as exc:  # reported with the others
        differences = [
            f"{path}: {cls.__name__}().to_json({version}) raised {type(exc).__name__}: {exc}"
        ]
    by_json = {f.json_name: f for f in cls.__kafka_fields__}
    for field in struct["fields"] + struct["taggedFields"]:
        t = field["type"]
        while t["type"] in ("ARRAY", "COMPACT_ARRAY"):
            t = t["items"]
        if t["type"] == "STRUCT":
            nested = by_json[field["json"]].struct
            n, d = _struct_defaults(nested, t["struct"], version, f"{path}.{field['json']}")
            count += n
            differences += d
    return count, differences


def test_fresh_kwire_messages_write_the_jars_defaults(kafka_schemas: dict[str, Any]) -> None:
    """``X()`` of every message class and every nested struct class, at every version, writes the
    JSON that Kafka's converter writes for a fresh Java instance (a records field that the fresh
    instance leaves null is null, also where the field is not nullable: FetchSnapshotResponse's
    unalignedRecords)."""
    failures = _all_default_differences(kafka_schemas)
    assert not failures, f"{len(failures)} differences:\n" + "\n".join(failures[:50])


def _all_default_differences(kafka_schemas: dict[str, Any]) -> list[str]:
    failures: list[str] = []
    versions = structs = 0
    judged = check_specs.judged_pairs(kafka_schemas)
    for name, entry in sorted(kafka_schemas["messages"].items()):
        mine = check_specs.RENAMED.get(name, name)
        for version, struct in entry["versions"].items():
            if (mine, int(version)) not in judged:
                continue
            cls = message_class(mine)
            versions += 1
            n, differences = _struct_defaults(cls, struct, int(version), f"{name} v{version}")
            structs += n
            failures += differences
    assert versions == len(judged) == 661
    assert structs > 2 * versions  # nested structs were compared too (1636 structs)
    return failures


# -- the comparison can fail ------------------------------------------------------------------


def _mutated_spec_dir(tmp_path: Path, edits: dict[str, Any]) -> Path:
    """A copy of the bundled specs where ``edits[file](spec_dict)`` has changed some files."""
    target = tmp_path / "specs"
    shutil.copytree(SPEC_DIR, target)
    for file_name, edit in edits.items():
        path = target / file_name
        spec = json.loads(strip_comments(path.read_text(encoding="utf-8")))
        edit(spec)
        path.write_text(json.dumps(spec, indent=1), encoding="utf-8")
    return target


def _field(fields: list[dict[str, Any]], *names: str) -> dict[str, Any]:
    for name in names[:-1]:
        fields = next(f for f in fields if f["name"] == name)["fields"]
    return next(f for f in fields if f["name"] == names[-1])


def _set(*names: str, **changes: Any) -> Any:
    def edit(spec: dict[str, Any]) -> None:
        _field(spec["fields"], *names).update(changes)

    return edit


def _both(*edits: Any) -> Any:
    def edit(spec: dict[str, Any]) -> None:
        for e in edits:
            e(spec)

    return edit


@pytest.mark.parametrize(
    ("file_name", "edit", "expected"),
    [
        (
            "MetadataResponse.json",
            _set("ThrottleTimeMs", type="int64"),
            "MetadataResponse v3.throttleTimeMs: type kwire INT64, jar INT32",
        ),
        (
            "MetadataResponse.json",
            _set("Topics", "Name", nullableVersions="8+"),
            "MetadataResponse v8.topics[].name: type kwire NULLABLE_STRING (nullable), jar STRING",
        ),
        (
            "ApiVersionsResponse.json",
            _both(_set("FinalizedFeaturesEpoch", tag=2), _set("FinalizedFeatures", tag=1)),
            "ApiVersionsResponse v3.finalizedFeaturesEpoch: tag kwire 2, jar 1",
        ),
        (
            "MetadataRequest.json",
            _set("AllowAutoTopicCreation", default="false"),
            "MetadataRequest v4 default.allowAutoTopicCreation: kwire False, jar True",
        ),
        (
            "ApiVersionsRequest.json",
            _set("ClientSoftwareName", versions="4+"),
            "ApiVersionsRequest v3: fields kwire ['client_software_version'], "
            "jar ['client_software_name', 'client_software_version']",
        ),
        (
            "FetchSnapshotResponse.json",
            _set("Topics", "Partitions", "UnalignedRecords", nullableVersions="0+"),
            "FetchSnapshotResponse v0.topics[].partitions[].unalignedRecords: "
            "type kwire COMPACT_RECORDS (nullable), jar COMPACT_RECORDS",
        ),
        (
            "ProduceRequest.json",
            _set("TopicData", "PartitionData", "Index", type="int16"),
            "ProduceRequest v0.topicData[].partitionData[].index: type kwire INT16, jar INT32",
        ),
        (
            "ConsumerGroupHeartbeatResponse.json",
            _set("Assignment", nullableVersions="none", default=""),
            "ConsumerGroupHeartbeatResponse v0.assignment: type kwire STRUCT, jar STRUCT (nullable)",
        ),
    ],
)
def test_check_specs_notices_each_kind_of_difference(
    kafka_schemas: dict[str, Any], tmp_path: Path, file_name: str, edit: Any, expected: str
) -> None:
    specs = load_spec_dir(_mutated_spec_dir(tmp_path, {file_name: edit}))
    differences = check_specs.compare(kafka_schemas, specs, judged=True)
    assert expected in differences, "\n".join(differences[:20])


def test_check_specs_command(kafka_schemas: dict[str, Any], tmp_path: Path, capsys: Any) -> None:
    dump = tmp_path / "dump.json"
    dump.write_text(json.dumps(kafka_schemas), encoding="utf-8")
    assert check_specs.main(["--dump", str(dump)]) == 0
    assert "661 judged; 0 differences" in capsys.readouterr().err
    # Kafka 3.9.1's own files (the staged copy the merge reads) match the jar exactly
    assert check_specs.main(["--dump", str(dump), "--spec-dir", str(merge_specs.OLD_DIR)]) == 0
    assert "666 message-versions; 0 differences" in capsys.readouterr().err
    # the bundled corpus, compared exactly, does not (Kafka 4.x's versions)
    assert check_specs.main(["--dump", str(dump), "--spec-dir", str(SPEC_DIR)]) == 1
    capsys.readouterr()
    mutated = _mutated_spec_dir(
        tmp_path, {"MetadataResponse.json": _set("ThrottleTimeMs", type="int16")}
    )
    assert check_specs.main(["--dump", str(dump), "--spec-dir", str(mutated), "--judged"]) == 1
    out = capsys.readouterr().out
    assert "MetadataResponse v3.throttleTimeMs: type kwire INT16, jar INT32" in out
