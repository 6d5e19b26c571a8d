"""Kafka 3.9.1's staged specs and ErrorCode are exactly what tools/sync_specs.py derives from the jar.

kwire bundles the merged 3.9.1 + 4.x corpus (tools/merge_specs.py), so the bundled directory differs
from the jar by design; the jar's own files are kept verbatim in tools/specs/kafka-3.9.1, which the
merge reads, and that copy is what must match the jar.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

pytestmark = pytest.mark.oracle


def test_staged_3_9_1_specs_match_the_jar() -> None:
    import merge_specs
    import sync_specs

    assert merge_specs.OLD_DIR.name == "kafka-3.9.1"
    assert sync_specs.main(["--check", "--dest", str(merge_specs.OLD_DIR)]) == 0


def test_bundled_specs_are_not_the_jar_s() -> None:
    import sync_specs

    # the bundled corpus is the merged one; --check against it must notice the difference
    assert sync_specs.main(["--check"]) == 1


def test_check_detects_a_changed_spec(tmp_path: Path) -> None:
    import merge_specs
    import sync_specs

    copy = tmp_path / "specs"
    shutil.copytree(merge_specs.OLD_DIR, copy)
    (copy / "MetadataRequest.json").write_text("{}")
    (copy / "Extra.json").write_text("{}")
    assert sync_specs.main(["--check", "--dest", str(copy)]) == 1
    assert sync_specs.main(["--dest", str(copy)]) == 0  # rewrites from the jar
    assert sync_specs.main(["--check", "--dest", str(copy)]) == 0
    assert not (copy / "Extra.json").exists()
