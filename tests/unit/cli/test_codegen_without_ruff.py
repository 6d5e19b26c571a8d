"""``kwire codegen --check`` (and ``--write``) format the generated code with ruff: where ruff is
not installed (a plain ``pip install kwire``), the command says so in one line naming what is
missing and how to get it (exit status 1), instead of a traceback. Run as a subprocess whose
PATH is an empty folder and whose ``sys.executable`` lies in one, so no ruff is found."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[3] / "src"


@pytest.mark.parametrize("mode", ["--check", "--write"])
def test_codegen_without_ruff_is_one_line(tmp_path: Path, mode: str) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    code = (
        f"import sys; sys.executable = {str(empty / 'python')!r}; "
        "from kwire.cli import main; sys.exit(main())"
    )
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), env.get("PYTHONPATH", "")])
    env["PATH"] = str(empty)
    done = subprocess.run(
        [sys.executable, "-c", code, "codegen", mode],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("kwire codegen: "), lines
    assert "ruff" in lines[0] and "pip install ruff" in lines[0], lines
    assert "Traceback" not in done.stderr
