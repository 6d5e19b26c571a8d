"""`kwire sample`: the generated log directory holds what its summary says (read by kwire.log)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kwire.cli import main
from kwire.log import TransactionIndex, list_log_dir
from kwire.records import read_batches


def test_sample_is_what_it_claims(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sample", str(tmp_path / "log"), "--records", "120", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["records"] == 7 * 120
    data = control = 0
    magics: set[tuple[int, int]] = set()
    holes = aborted_entries = 0
    for pdir in list_log_dir(tmp_path / "log"):
        info = doc["partitions"][f"{pdir.topic}-{pdir.partition}"]
        assert len(pdir.segments) == info["segments"]
        offsets = []
        for seg in pdir.segments:
            assert seg.index and seg.timeindex
            for batch in read_batches(Path(seg.log).read_bytes()):
                magics.add((batch.magic, int(batch.compression)))
                if batch.is_control:
                    control += 1
                    continue
                offsets.extend(r.offset for r in batch.records())
            if seg.txnindex:
                aborted_entries += len(TransactionIndex(Path(seg.txnindex).read_bytes()))
        data += len(offsets)
        assert offsets == sorted(offsets) and len(offsets) == info["records"]
        holes += offsets[-1] + 1 - len(offsets) if pdir.topic == "users-compacted" else 0
    assert data == doc["records"] and control == doc["control_records"]
    assert {m for m, _ in magics} == {0, 1, 2}
    assert {c for m, c in magics if m == 2} == {0, 1, 2, 3, 4}
    assert {c for m, c in magics if m < 2} == {0, 1, 2, 3}
    assert holes > 0 and aborted_entries > 0
    assert doc["committed_records"] < doc["records"]


def test_sample_refuses_tiny_segments(tmp_path: Path) -> None:
    assert main(["sample", str(tmp_path / "x"), "--segment-bytes", "100"]) == 2
