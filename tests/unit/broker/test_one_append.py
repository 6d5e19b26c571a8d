"""Records reach a partition one way: ``BrokerState.append`` (``Partition.append``: the append
as leader and the high-watermark rule, then the parked fetches wake). A second copy of that
rule elsewhere in the broker is what this test finds."""

from __future__ import annotations

import ast
from pathlib import Path

import kwire

BROKER = Path(kwire.__file__).parent / "broker"
#: _state.py is the home; the metadata log is a Raft log, not a partition (its high watermark
#: follows the fsync of a single voter).
ALLOWED = {"_state.py", "_metadata_log.py"}


def test_only_partition_append_appends_and_moves_the_high_watermark() -> None:
    found = []
    for path in sorted(BROKER.rglob("*.py")):
        if path.name in ALLOWED:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Attribute) and node.attr == "append_as_leader":
                found.append(f"{path.name}:{node.lineno}: append_as_leader")
            elif (
                isinstance(node, ast.Assign)
                and any(
                    isinstance(t, ast.Attribute) and t.attr == "high_watermark"
                    for t in node.targets
                )
                and "log_end_offset" in ast.unparse(node.value)
            ):
                found.append(f"{path.name}:{node.lineno}: high watermark to the log end")
    assert found == [], "use BrokerState.append:\n" + "\n".join(found)
