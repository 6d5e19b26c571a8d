"""The server encodes a response in one piece unless its API may hold ``FileRecords``
(``_server._FILE_RECORDS_APIS``): a handler module of any other API that made them would send a
frame without its records. This finds every module that makes them and checks each is the
handler module of an API in that set."""

from __future__ import annotations

import ast
from pathlib import Path

import kwire.broker
from kwire.broker import _apis, _server

BROKER = Path(kwire.broker.__file__).parent
MADE_BY = {"FileRecords", "ConvertedRecords"}


def _makers() -> set[str]:
    found = set()
    for path in BROKER.rglob("*.py"):
        if path.name == "_file_records.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in MADE_BY
            ):
                relative = path.relative_to(BROKER.parent).with_suffix("")
                found.add("kwire." + ".".join(relative.parts))
    return found


def test_only_the_file_records_apis_make_file_records() -> None:
    makers = _makers()
    assert makers, "the scan finds Fetch's handler module at least"
    allowed = {_apis.TABLE[key].module for key in _server._FILE_RECORDS_APIS}
    assert makers <= allowed, sorted(makers - allowed)
