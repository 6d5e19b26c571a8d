"""``kwire.log.internal_topics``: the rules of Kafka's internal topics, and that each is written
once in src (the broker, ``kwire dump`` and the Spark views all use this module)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import kwire
from kwire.log import internal_topics as it
from kwire.protocol import message_class

SRC = Path(kwire.__file__).parent
HOME = SRC / "log" / "internal_topics.py"


def test_partition_for_is_kafkas_abs_hash_code_modulo() -> None:
    # "polygenelubricants".hashCode() is Integer.MIN_VALUE: Kafka's Utils.abs maps it to 0
    assert it.partition_for("polygenelubricants", 50) == 0
    # "group".hashCode() = 98629247 (Java), 98629247 % 50 = 47
    assert it.partition_for("group", 50) == 47
    assert it.partition_for("a", 50) == 97 % 50


def test_versioned_frames_and_reads_back() -> None:
    key = message_class("OffsetCommitKey")(group="g", topic="t", partition=3)
    data = it.versioned(key, 1)
    assert data[:2] == b"\x00\x01"
    version, decoded = it.read_versioned("OffsetCommitKey", data, "key")
    assert version == 1 and (decoded.group, decoded.topic, decoded.partition) == ("g", "t", 3)
    with pytest.raises(ValueError, match="Could not read version from key's buffer"):
        it.read_version(b"\x00", "key")
    with pytest.raises(ValueError, match="Can't read version 99 of OffsetCommitKey"):
        it.read_versioned("OffsetCommitKey", b"\x00\x63" + data[2:], "key")


def test_coordinator_record_json() -> None:
    key = it.versioned(message_class("OffsetCommitKey")(group="g", topic="t", partition=0), 1)
    value = it.versioned(
        message_class("OffsetCommitValue")(offset=7, metadata="", commit_timestamp=5), 3
    )
    decoded = it.coordinator_record_json(it.OFFSETS_RECORD_TYPES, key, value)
    assert decoded is not None
    record_type, name, key_doc, value_doc = decoded
    assert (record_type, name) == (1, "OffsetCommit")
    assert key_doc == {"type": "1", "data": {"group": "g", "topic": "t", "partition": 0}}
    assert value_doc is not None and value_doc["version"] == "3"
    assert value_doc["data"]["offset"] == 7
    assert it.coordinator_record_json(it.OFFSETS_RECORD_TYPES, key, None) == (
        1,
        "OffsetCommit",
        key_doc,
        None,
    )
    assert it.coordinator_record_json(it.OFFSETS_RECORD_TYPES, b"\x00\x63", None) is None


def test_transaction_state_names() -> None:
    assert [s.kafka_name for s in it.TransactionState] == [
        "Empty",
        "Ongoing",
        "PrepareCommit",
        "PrepareAbort",
        "CompleteCommit",
        "CompleteAbort",
        "Dead",
        "PrepareEpochFence",
    ]
    assert it.TransactionState.from_name("Ongoing") is it.TransactionState.ONGOING
    assert it.transaction_state_name(8) is None


# -- one home per rule ----------------------------------------------------------------------------

#: String constants that belong to one rule each: the topic names, the record-type tables, the
#: transaction state names. Anywhere else in src they are a second copy of that rule.
RULE_STRINGS = {
    it.CONSUMER_OFFSETS,
    it.TRANSACTION_STATE,
    it.SHARE_GROUP_STATE,
    it.CLUSTER_METADATA,
    *it.OFFSETS_RECORD_TYPES.values(),
    *it.SHARE_STATE_RECORD_TYPES.values(),
    *(s.kafka_name for s in it.TransactionState),
} - {"Empty", "Dead"}  # also the names of group states (another rule)
#: Functions only the home defines (at module level).
RULE_FUNCTIONS = {"partition_for", "versioned", "_versioned", "_version_prefix"}
#: Layers that read or write internal-topic records; protocol and records have their own int16s.
USERS = ("broker", "cli", "spark", "client", "log")


def _sources() -> list[Path]:
    return sorted(
        p
        for layer in USERS
        for p in (SRC / layer).rglob("*.py")
        if p != HOME and "_generated" not in p.parts
    )


def test_internal_topic_rules_are_defined_once() -> None:
    found: list[str] = []
    for path in _sources():
        tree = ast.parse(path.read_text(), str(path))
        where = path.relative_to(SRC)
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and node.value in RULE_STRINGS:
                found.append(f"{where}:{node.lineno}: {node.value!r}")
            elif isinstance(node, ast.Call):
                call = ast.unparse(node)
                if call.startswith(("struct.Struct('>h')", "Struct('>h')")):
                    found.append(f"{where}:{node.lineno}: an int16 framing struct")
                elif ".from_bytes(" in call and "[:2]" in call:
                    found.append(f"{where}:{node.lineno}: an int16 version read")
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name in RULE_FUNCTIONS:
                found.append(f"{where}:{node.lineno}: def {node.name}")
    assert found == [], "use kwire.log.internal_topics:\n" + "\n".join(found)
