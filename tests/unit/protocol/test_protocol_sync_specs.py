"""The bundled specs and ErrorCode are exactly what tools/sync_specs.py derives from the jar."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

pytestmark = pytest.mark.oracle


def test_bundled_specs_match_the_jar() -> None:
    import sync_specs

    assert sync_specs.main(["--check"]) == 0


def test_check_detects_a_changed_spec(tmp_path: Path) -> None:
    import sync_specs

    copy = tmp_path / "specs"
    shutil.copytree(sync_specs.SPEC_DIR, copy)
    (copy / "MetadataRequest.json").write_text("{}")
    (copy / "Extra.json").write_text("{}")
    assert sync_specs.main(["--check", "--dest", str(copy)]) == 1
    assert sync_specs.main(["--dest", str(copy)]) == 0  # rewrites from the jar
    assert sync_specs.main(["--check", "--dest", str(copy)]) == 0
    assert not (copy / "Extra.json").exists()
