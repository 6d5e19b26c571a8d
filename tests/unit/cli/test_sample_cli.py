"""``kwire sample DIR`` as a new user meets it, run as a subprocess: it works on a plain
``pip install kwire`` (no extras: rich comes with the spark extra only), and a directory that
already holds a sample is refused with one line, exit status 1, and left as it was."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[3] / "src"

#: ``kwire`` with rich made unimportable, as in an environment without the spark extra
WITHOUT_RICH = (
    "import sys; sys.modules['rich'] = None; from kwire.cli import main; sys.exit(main())"
)


def run(*args: str, code: str | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), env.get("PYTHONPATH", "")])
    head = (
        [sys.executable, "-c", code, "sample"]
        if code
        else [sys.executable, "-m", "kwire", "sample"]
    )
    return subprocess.run(
        [*head, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
        check=False,
    )


def test_sample_without_rich_prints_a_plain_table(tmp_path: Path) -> None:
    done = run(str(tmp_path / "s"), "--records", "20", code=WITHOUT_RICH)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    lines = done.stdout.splitlines()
    assert lines[0] == f"sample log directory {tmp_path / 's'}"
    assert lines[1].split() == [
        "partition",
        "records",
        "aborted",
        "control",
        "batches",
        "segments",
        "bytes",
        "magics",
        "/",
        "codecs",
    ]
    rows = {line.split()[0]: line.split() for line in lines[2:]}
    assert set(rows) == {*(p.name for p in (tmp_path / "s").iterdir() if p.is_dir()), "total"}
    assert rows["orders-0"][1] == "20"


def test_sample_into_a_sample_is_one_line(tmp_path: Path) -> None:
    target = tmp_path / "s"
    assert run(str(target), "--records", "20", "--json").returncode == 0
    before = sorted((p.relative_to(target), p.stat().st_size) for p in target.rglob("*"))
    done = run(str(target), "--records", "20")
    assert done.returncode == 1
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"kwire sample: {target / 'orders-0'} already holds log segments"), line
    assert sorted((p.relative_to(target), p.stat().st_size) for p in target.rglob("*")) == before
