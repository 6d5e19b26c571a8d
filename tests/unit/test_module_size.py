"""No hand-written module of kwire over 1,000 lines (issue 18): a module that grows past it is
split where Kafka splits the same code (as ``LiveLog``'s timestamp lookups and segment swap went
to ``_timestamp_lookup`` and ``_segment_swap``). Generated code (``protocol/_generated``) is
exempt: one spec, one module."""

from __future__ import annotations

from pathlib import Path

import kwire

ROOT = Path(kwire.__file__).parent
LIMIT = 1000


def test_no_hand_written_module_over_the_limit() -> None:
    sizes = {
        path.relative_to(ROOT).as_posix(): len(path.read_text().splitlines())
        for path in ROOT.rglob("*.py")
        if "_generated" not in path.parts
    }
    assert len(sizes) > 100, "the scan reads kwire's modules"
    over = {name: n for name, n in sizes.items() if n > LIMIT}
    assert over == {}, over
