"""A command whose extra is not installed says so in one line, naming the module and the extra
to install (exit status 1), instead of a traceback: a plain ``pip install kwire`` has the codecs
only, and ``kwire run`` / ``kwire pipeline`` need the spark extra. The extra's modules are made
unimportable in the subprocess; a module of several extras names the largest (numpy: arrow
and spark, spark) (``sys.modules[name] = None``), as where they are not installed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[3] / "src"


def kwire_without(module: str, *args: str) -> subprocess.CompletedProcess[str]:
    code = (
        f"import sys; sys.modules[{module!r}] = None; from kwire.cli import main; sys.exit(main())"
    )
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), env.get("PYTHONPATH", "")])
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
        check=False,
    )


@pytest.mark.parametrize(
    ("module", "args", "extra"),
    [
        ("rich", ["run"], "spark"),
        ("numpy", ["pipeline", "export", "--input", "{in}", "--output", "{out}"], "spark"),
    ],
)
def test_a_missing_extra_is_one_line(
    tmp_path: Path, module: str, args: list[str], extra: str
) -> None:
    (tmp_path / "in").mkdir()
    argv = [a.format(**{"in": tmp_path / "in", "out": tmp_path / "out"}) for a in args]
    done = kwire_without(module, *argv)
    assert done.returncode == 1, done.stderr
    assert done.stderr.splitlines() == [
        f"kwire {args[0]}: needs the Python module {module!r}, which kwire's {extra} extra "
        f"installs: pip install 'kwire[{extra}]'"
    ]


def test_a_missing_module_of_no_extra_is_not_hidden(tmp_path: Path) -> None:
    # a module kwire does not list is a bug to see whole, not advice to install something
    done = kwire_without("kwire.cli._demo", "demo")
    assert done.returncode == 1
    assert "Traceback" in done.stderr
