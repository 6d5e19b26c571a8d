"""Files belong to ``kwire.log`` (issue 18, style rule 29): the broker asks the storage boundary
(``kwire.log.storage``) for everything on disk and touches no file itself. This scan of
``src/kwire/broker`` finds the calls that read, write, list or test files; the allow-list names the
few that are the process's edge, each with its reason."""

from __future__ import annotations

import ast
from pathlib import Path

import kwire

BROKER = Path(kwire.__file__).parent / "broker"

#: ``os`` functions that touch a file, a directory or a descriptor of one (``os.path.join`` and
#: friends only compute names: they are not here).
OS_IO = {
    "open", "read", "pread", "write", "pwrite", "fdopen", "dup", "close", "fsync", "fdatasync",
    "replace", "rename", "remove", "unlink", "makedirs", "mkdir", "rmdir", "removedirs",
    "listdir", "scandir", "walk", "stat", "lstat", "statvfs", "truncate", "ftruncate",
    "sendfile", "access", "link", "symlink", "chmod", "utime",
}  # fmt: skip
OS_PATH_IO = {"exists", "lexists", "isdir", "isfile", "islink", "getsize", "getmtime", "samefile"}
#: ``pathlib.Path`` methods that touch the file system (``read_bytes`` is left out: it is also
#: ``FetchDataInfo.read_bytes``, the log's own answer).
PATH_IO = {
    "read_text", "write_text", "write_bytes", "iterdir", "mkdir", "touch", "unlink", "rmdir",
    "is_dir", "is_file", "exists", "glob", "rglob",
}  # fmt: skip
#: Modules whose only use is files.
FILE_MODULES = {"shutil", "tempfile", "mmap", "io", "glob", "fcntl"}

#: (module, call) -> why it may stay in the broker.
ALLOWED = {
    # The server's edge (style rule 28): the segment bytes of a ``FileSlice`` the log handed out
    # are sent to the socket, with ``sendfile`` on a duplicate of its descriptor, or read in
    # chunks for TLS (encrypted in user space).
    ("_server.py", "os.pread"): "TLS copy of a FileSlice to the socket",
    ("_server.py", "os.fdopen"): "file object loop.sendfile needs",
    ("_server.py", "os.dup"): "the file object's own descriptor",
}


def _file_calls(path: Path) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = [node.module] if isinstance(node, ast.ImportFrom) else []
            names += [alias.name for alias in node.names]
            found += [(node.lineno, f"import {n}") for n in names if n in FILE_MODULES]
            continue
        if not isinstance(node, ast.Call):
            continue
        call = ast.unparse(node.func)
        parts = call.split(".")
        if (
            call in ("open", "io.open")
            or (len(parts) == 2 and parts[0] == "os" and parts[1] in OS_IO)
            or (parts[:2] == ["os", "path"] and parts[-1] in OS_PATH_IO)
            or (parts[0] in FILE_MODULES and len(parts) > 1)
            or (len(parts) > 1 and parts[0] != "os" and parts[-1] in PATH_IO)
        ):
            found.append((node.lineno, call))
    return found


def test_the_broker_touches_no_file() -> None:
    found = []
    for path in sorted(BROKER.rglob("*.py")):
        name = str(path.relative_to(BROKER))
        for line, call in _file_calls(path):
            if (name, call) not in ALLOWED:
                found.append(f"broker/{name}:{line}: {call} (ask kwire.log.storage)")
    assert found == [], "\n".join(found)


def test_the_scan_sees_file_calls(tmp_path: Path) -> None:
    """The scan itself: each kind of call it must find is found."""
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import shutil\n"
        "open('x')\n"
        "os.replace(a, b)\n"
        "os.path.exists(p)\n"
        "Path(p).read_text()\n"
        "os.path.join(a, b)\n"  # a name, not a file access
    )
    assert [call for _, call in _file_calls(sample)] == [
        "import shutil",
        "open",
        "os.replace",
        "os.path.exists",
        "Path(p).read_text",
    ]
