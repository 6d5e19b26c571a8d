"""Rules written once in src (issue 18): Kafka's Uuid text form (``kwire._wire.uuid_text`` /
``uuid_from_text`` / ``random_uuid_text``), the atomic write of a small file
(``kwire.log.storage.write_atomic``) and ``meta.properties`` (``kwire.log.MetaProperties``). A
second copy elsewhere is what this test finds. And a name has one home: the metadata records and
image live in ``kwire.broker._metadata_image``, and ``_metadata_log`` (the files) does not
re-export them, so no caller reaches them through it."""

from __future__ import annotations

import ast
from pathlib import Path

import kwire
from kwire._wire import random_uuid_text, uuid_from_text, uuid_text
from kwire.broker import _metadata_image, _metadata_log

SRC = Path(kwire.__file__).parent
UUID_HOME = SRC / "_wire.py"
WRITE_HOME = SRC / "log" / "_writer.py"
#: base64url that is not a Uuid: SASL OAUTHBEARER tokens (JWT parts)
NOT_UUIDS = {SRC / "broker" / "_sasl.py"}


def test_uuid_text_round_trips() -> None:
    raw = bytes(range(16))
    assert uuid_text(raw) == "AAECAwQFBgcICQoLDA0ODw"
    assert uuid_from_text("AAECAwQFBgcICQoLDA0ODw") == raw
    text = random_uuid_text()
    assert len(text) == 22 and not text.startswith("-")


def test_uuid_text_and_atomic_writes_are_written_once() -> None:
    found = []
    for path in sorted(SRC.rglob("*.py")):
        if "_generated" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.Call):
                continue
            call = ast.unparse(node.func)
            where = f"{path.relative_to(SRC)}:{node.lineno}"
            is_b64url = call.endswith(("urlsafe_b64encode", "urlsafe_b64decode"))
            if is_b64url and path != UUID_HOME and path not in NOT_UUIDS:
                found.append(f"{where}: {call} (use kwire._wire.uuid_text/uuid_from_text)")
            if call == "os.replace" and "tmp" in ast.unparse(node.args[0]) and path != WRITE_HOME:
                found.append(f"{where}: a temporary file renamed (use write_atomic)")
    assert found == [], "\n".join(found)


def test_the_metadata_image_names_are_imported_from_their_home() -> None:
    image = set(_metadata_image.__all__)
    assert image & set(_metadata_log.__all__) == set()
    found = []
    tests = SRC.parents[1] / "tests"
    for path in sorted([*SRC.rglob("*.py"), *tests.rglob("*.py")]):
        if "_generated" in path.parts or path.name == "_metadata_log.py":
            continue
        text = path.read_text()
        if "_metadata_log" not in text:
            continue
        nodes = list(ast.walk(ast.parse(text, str(path))))
        aliases = set()  # names the module gives _metadata_log (``import ... as mlog``)
        for node in nodes:
            if isinstance(node, ast.ImportFrom) and node.module == "kwire.broker":
                aliases |= {a.asname or a.name for a in node.names if a.name == "_metadata_log"}
        for node in nodes:
            where = f"{path}:{getattr(node, 'lineno', 0)}"
            if isinstance(node, ast.ImportFrom) and node.module == "kwire.broker._metadata_log":
                found += [f"{where}: {a.name}" for a in node.names if a.name in image]
            elif (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in aliases
                and node.attr in image
            ):
                found.append(f"{where}: {node.value.id}.{node.attr}")
    assert found == [], "import these from kwire.broker._metadata_image:\n" + "\n".join(found)


#: ``meta.properties`` (Kafka's ``MetaProperties`` / ``MetaPropertiesEnsemble``): its name and keys
#: are spelled in this module only; everyone else reads and writes it through it. ``node.id`` and
#: ``broker.id`` alone are also broker configs: only their ``key=`` lines count.
META_HOME = SRC / "log" / "_meta_properties.py"
META_WORDS = ("meta.properties", "cluster.id", "directory.id", "node.id=", "broker.id=")


def _strings(tree: ast.AST) -> list[ast.Constant]:
    """String constants, docstrings left out (they may name the file)."""
    docs = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs
    ]


def test_meta_properties_is_defined_once() -> None:
    found = []
    for path in sorted(SRC.rglob("*.py")):
        if "_generated" in path.parts or path == META_HOME:
            continue
        for node in _strings(ast.parse(path.read_text(), str(path))):
            words = [w for w in META_WORDS if w in str(node.value)]
            if words:
                where = f"{path.relative_to(SRC)}:{node.lineno}"
                found.append(f"{where}: {words} (use kwire.log.MetaProperties)")
    assert found == [], "\n".join(found)
