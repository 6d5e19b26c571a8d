"""What a new user meets first of ``kwire``, run as a subprocess: ``kwire --version``, and a
command whose extra is not installed saying so in one line (exit status 1) that names the module
and the extra to install, instead of a traceback. A plain ``pip install kwire`` has the codecs
only; ``kwire run`` and ``kwire pipeline`` need the spark extra. The extra's modules are made
unimportable in the subprocess (``sys.modules[name] = None``), as where they are not installed;
a module of several extras names the largest (numpy: arrow and spark, so spark)."""

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


def test_version() -> None:
    # what a bug report starts with
    import kwire

    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), env.get("PYTHONPATH", "")])
    done = subprocess.run(
        [sys.executable, "-m", "kwire", "--version"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"kwire {kwire.__version__}\n"
