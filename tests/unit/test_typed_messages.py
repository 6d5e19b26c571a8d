"""kwire builds and reads messages through their generated classes (issue 18): names mypy checks
(``from kwire.protocol.messages import GroupMetadataValue``,
``GroupMetadataValue.MemberMetadata``), not classes looked up by a string
(``message_class("GroupMetadataValue")``, ``struct_class(cls, "members")``,
``new_record("TopicRecord", ...)``), whose fields mypy cannot see. Checked in every layer above
the protocol (which defines the lookups). ``message_class(api_key=..., kind=...)`` is not a lookup
by name: the broker's dispatch by API key (``_routing``) stays dynamic. (No API's name appears
here: ``tools/api_table.py`` counts the test files that name an API.)
"""

from __future__ import annotations

import ast
from pathlib import Path

import kwire

ROOT = Path(kwire.__file__).parent

#: The layers checked (``kwire.protocol`` is where the lookups live).
LAYERS = ("broker", "client", "cli", "spark", "log", "records")

#: Files that still look classes up by name, each with why; the test fails on any other file, and
#: when one of these has none left (then remove it here).
ALLOWED = {
    # snapshot header/footer and LeaderChangeMessage records by name (new_record)
    "broker/_metadata_log.py": "snapshot and control records",
    # the test helpers take an API's name from their caller and build its request from it
    "broker/testing.py": "named by the caller",
    # the name of the request whose versions are negotiated (``pick("...Request")``)
    "client/_versions.py": "named by the caller",
    # ``kwire size-report --response NAME:VERSION``: the user names it
    "cli/_size_report.py": "named by the user",
    # coordinator record types and metadata records: Kafka's tables map type ids to names
    "log/internal_topics.py": "record type table",
    "log/_metadata_records.py": "record type table",
    # KRaft control values: a table of control types to message names
    "records/_control.py": "control type table",
}

#: Calls that look a class up by its name (a string argument); struct_class always does.
BY_NAME = {"message_class", "struct_class", "new_record", "new_metadata_record"}


def lookups_by_name(source: str) -> list[int]:
    """The lines of ``source`` that call one of ``BY_NAME`` with a name."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        called = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
        if called not in BY_NAME:
            continue
        named = bool(node.args) or any(k.arg == "name" for k in node.keywords)
        if called == "struct_class" or named:
            lines.append(node.lineno)
    return sorted(lines)


def test_the_scan_sees_each_form_of_lookup_by_name() -> None:
    source = "\n".join(
        [
            'A = message_class("GroupMetadataValue")',
            'B = protocol.struct_class(A, "members")',
            'C = mlog.new_record("TopicRecord", name="t")',
            "D = message_class(api_key=0, kind='response')",  # by key: not by name
            "E = GroupMetadataValue.MemberMetadata",
        ]
    )
    assert lookups_by_name(source) == [1, 2, 3]


def test_messages_are_typed_classes_not_lookups_by_name() -> None:
    found: dict[str, list[int]] = {}
    for layer in LAYERS:
        for path in sorted((ROOT / layer).rglob("*.py")):
            lines = lookups_by_name(path.read_text())
            if lines:
                found[path.relative_to(ROOT).as_posix()] = lines
    unexpected = {name: lines for name, lines in found.items() if name not in ALLOWED}
    assert unexpected == {}, "use the classes of kwire.protocol.messages"
    assert sorted(set(ALLOWED) - set(found)) == [], "no lookups left: remove it from ALLOWED"
