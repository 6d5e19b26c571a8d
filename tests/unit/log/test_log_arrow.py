"""``to_arrow_batch_reader``: a log directory as Arrow batches, equal to the row API's records."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from kwire.log import LogWriter, SkippedBytes, list_log_dir, open_segment, to_arrow_batch_reader
from kwire.records import BatchBuilder, Compression, records_arrow_schema


def write(root: Path) -> None:
    for partition in (0, 1):
        with LogWriter(root, "events", partition, segment_bytes=3000, fsync=False) as w:
            for i in range(30):
                b = BatchBuilder(2, list(Compression)[i % 5], base_offset=w.next_offset)
                for j in range(4):
                    b.append(
                        timestamp=1_700_000_000_000 + i * 10 + j,
                        key=None if j == 0 else b"key-%d" % j,
                        value=b"p%d-%d-%d" % (partition, i, j),
                        headers=[("h", b"x")] if j == 1 else (),
                    )
                w.append(b.build())


def rows_by_row_api(root: Path) -> list[tuple[str, int, int, bytes | None, bytes | None]]:
    rows = []
    for part in list_log_dir(root):
        for files in part.segments:
            with open_segment(files) as seg:
                for batch in seg.batches():
                    for r in batch:
                        key = None if r.key is None else bytes(r.key)
                        value = None if r.value is None else bytes(r.value)
                        rows.append((part.topic, part.partition, r.offset, key, value))
    return rows


def test_arrow_rows_equal_the_row_api(tmp_path: Path) -> None:
    write(tmp_path)
    skipped: list[SkippedBytes] = []
    reader = to_arrow_batch_reader(tmp_path, skipped=skipped)
    assert reader.schema == records_arrow_schema()
    table = reader.read_all()
    got = list(
        zip(
            table.column("topic").to_pylist(),
            table.column("partition").to_pylist(),
            table.column("offset").to_pylist(),
            table.column("key").to_pylist(),
            table.column("value").to_pylist(),
            strict=True,
        )
    )
    assert got == rows_by_row_api(tmp_path)
    assert len(got) == 2 * 30 * 4 and skipped == []
    assert set(table.column("segment").to_pylist()) == {
        s.log for p in list_log_dir(tmp_path) for s in p.segments
    }


def test_selected_columns_and_damaged_segments(tmp_path: Path) -> None:
    write(tmp_path)
    part = list_log_dir(tmp_path)[0]
    first = Path(part.segments[0].log)
    data = bytearray(first.read_bytes())
    data[70] ^= 0xFF  # inside the first batch (past its 61-byte header)
    first.write_bytes(bytes(data) + bytes(500))  # and a zero-filled tail
    skipped: list[SkippedBytes] = []
    table = to_arrow_batch_reader(
        part, columns=["offset", "value"], skipped=skipped, split_bytes=500
    ).read_all()
    assert table.schema.names == ["offset", "value"]
    offsets = table.column("offset").to_pylist()
    assert 0 not in offsets and 4 in offsets  # the damaged first batch (offsets 0-3) is left out
    assert offsets == sorted(offsets)
    assert [s.reason.split(":")[0] for s in skipped] == ["corrupt batch", "zero-filled tail"]
    assert all(s.source == str(first) for s in skipped)
    assert isinstance(table, pa.Table)
