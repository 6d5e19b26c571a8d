"""kafka-log options and driver-side planning: pure functions, no JVM."""

from __future__ import annotations

import itertools
import os
from pathlib import Path

import pytest

from kwire.client import default_partition, murmur2
from kwire.errors import OffsetOutOfRangeError, OptionError
from kwire.log import LogWriter, ReadCommittedFilter
from kwire.records import BatchBuilder, build_end_txn_marker
from kwire.spark._fs import list_files, read_bytes, resolve
from kwire.spark._options import (
    EARLIEST,
    LATEST,
    parse_read_options,
    parse_write_options,
)
from kwire.spark._plan import SegmentSplit, plan_splits
from kwire.spark._read import frame_cut, read_split
from kwire.spark._schema import arrow_schema

T0 = 1_700_000_000_000


def test_murmur2_matches_kafka_utils_test_vectors() -> None:
    # Kafka's UtilsTest.testMurmur2
    cases = {
        b"21": -973932308,
        b"foobar": -790332482,
        b"a-little-bit-long-string": -985981536,
        b"a-little-bit-longer-string": -1486304829,
        b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
        b"abc": 479470107,
    }
    for data, expected in cases.items():
        assert murmur2(data) == expected
    assert default_partition(b"21", 4, 0) == (-973932308 & 0x7FFFFFFF) % 4
    assert [default_partition(None, 3, i) for i in range(4)] == [0, 1, 2, 0]


def test_read_options_defaults_and_spark_spellings() -> None:
    opts = parse_read_options({})
    assert opts.starting_offsets == {None: EARLIEST}
    assert opts.ending_offsets == {None: LATEST}
    assert opts.mode == "PERMISSIVE" and not opts.read_committed
    opts = parse_read_options(
        {
            "STARTINGOFFSETS": '{"t": {"0": 5, "1": -2}}',
            "endingOffsets": '{"t": {"0": -1}}',
            "startingTimestamp": "123",
            "isolationLevel": "READ_COMMITTED",
            "mode": "failfast",
            "subscribe": "a, b",
        }
    )
    assert opts.starting_offsets == {("t", 0): 5, ("t", 1): EARLIEST}
    assert opts.ending_offsets == {("t", 0): LATEST}
    assert opts.starting_timestamps == {None: 123}
    assert opts.read_committed and opts.mode == "FAILFAST"
    assert opts.wants("a", 3) and not opts.wants("c", 0)
    assert parse_read_options({"assign": '{"x": [1]}'}).wants("x", 1)
    assert not parse_read_options({"assign": '{"x": [1]}'}).wants("x", 0)
    assert parse_read_options({"subscribePattern": "ord.*"}).wants("orders", 0)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"mode": "LENIENT"}, "mode"),
        ({"startingOffsets": "latest"}, "startingOffsets"),
        ({"endingOffsets": '{"t": {"0": -2}}'}, "endingOffsets"),
        ({"startingOffsets": "{not json"}, "startingOffsets"),
        ({"startingOffsets": '{"t": {"x": 1}}'}, "partition"),
        ({"isolationLevel": "serializable"}, "isolationLevel"),
        ({"maxSplitBytes": "0"}, "maxSplitBytes"),
        ({"startingTimestamp": "yesterday"}, "startingTimestamp"),
    ],
)
def test_bad_read_options_say_which(options: dict[str, str], message: str) -> None:
    with pytest.raises(OptionError, match=message):
        parse_read_options(options)


def test_the_metadata_log_is_read_only_when_named() -> None:
    """``__cluster_metadata`` is no topic to clients: a read of every topic or a pattern leaves it
    out; subscribe or assign naming it reads it."""
    assert parse_read_options({}).wants("orders", 0)
    assert not parse_read_options({}).wants("__cluster_metadata", 0)
    assert not parse_read_options({"subscribePattern": ".*"}).wants("__cluster_metadata", 0)
    # Kafka's other internal topics too, as a consumer's pattern subscription
    # (exclude.internal.topics) leaves them out
    assert not parse_read_options({"subscribePattern": ".*"}).wants("__consumer_offsets", 3)
    assert parse_read_options({"subscribe": "__consumer_offsets"}).wants("__consumer_offsets", 3)
    assert parse_read_options({"subscribe": "__cluster_metadata"}).wants("__cluster_metadata", 0)
    assigned = parse_read_options({"assign": '{"__cluster_metadata": [0]}'})
    assert assigned.wants("__cluster_metadata", 0)


def test_write_options() -> None:
    opts = parse_write_options({"compression": "ZSTD", "recordsPerBatch": "10"})
    assert (opts.magic, opts.compression, opts.records_per_batch) == (2, "zstd", 10)
    with pytest.raises(OptionError, match="zstd"):
        parse_write_options({"compression": "zstd", "magic": "1"})
    with pytest.raises(OptionError, match="magic"):
        parse_write_options({"magic": "3"})


def _write_partition(root: Path, topic: str, partition: int, batches: int, per_batch: int) -> None:
    """Batches of ~1 KiB with timestamps T0 + offset; segments roll every ~8 KiB."""
    with LogWriter(
        root, topic, partition, segment_bytes=8192, index_interval_bytes=1024, fsync=False
    ) as w:
        for _ in range(batches):
            b = BatchBuilder(2, base_offset=w.next_offset)
            for _ in range(per_batch):
                off = b.next_offset
                b.append(timestamp=T0 + off, key=b"k", value=bytes(100))
            w.append(b.build())


def _plan(root: Path, **options: str) -> list[SegmentSplit]:
    fs, path = resolve(str(root))
    files = list_files(fs, path)
    return plan_splits(files, parse_read_options(options), lambda p: read_bytes(fs, p))


def test_plan_one_split_per_segment_and_byte_splits(tmp_path: Path) -> None:
    _write_partition(tmp_path, "my-topic", 0, 40, 8)  # 320 records, several segments
    _write_partition(tmp_path, "other", 1, 2, 8)
    splits = _plan(tmp_path)
    logs = sorted(str(p) for p in tmp_path.rglob("*.log"))
    assert sorted({s.uri for s in splits}) == logs
    assert {(s.topic, s.partition) for s in splits} == {("my-topic", 0), ("other", 1)}
    for s in splits:
        assert s.start == 0 and s.end == os.path.getsize(s.uri)
    # small maxSplitBytes: splits cut at index positions, covering each segment exactly
    small = _plan(tmp_path, maxSplitBytes="2000")
    assert len(small) > len(splits)
    by_log: dict[str, list[SegmentSplit]] = {}
    for s in small:
        by_log.setdefault(s.uri, []).append(s)
    for uri, parts in by_log.items():
        parts.sort(key=lambda s: s.start)
        assert parts[0].start == 0 and parts[-1].end == os.path.getsize(uri)
        assert all(a.end == b.start for a, b in itertools.pairwise(parts))
        data = Path(uri).read_bytes()
        for p in parts:  # every cut is a batch boundary
            assert frame_cut(memoryview(data)[p.start : p.end], p.end - p.start) == p.end - p.start


def test_plan_offsets_skip_unread_segments(tmp_path: Path) -> None:
    _write_partition(tmp_path, "t", 0, 40, 8)
    all_splits = _plan(tmp_path)
    some = _plan(
        tmp_path,
        startingOffsets='{"t": {"0": 150}}',
        endingOffsets='{"t": {"0": 170}}',
    )
    assert 0 < len(some) < len(all_splits)
    first = min(some, key=lambda s: (s.base_offset, s.start))
    assert first.base_offset <= 150 and first.start_offset == 150
    assert all(s.base_offset < 170 for s in some)
    last = max(some, key=lambda s: (s.base_offset, s.start))
    assert last.end_offset == 170
    assert _plan(tmp_path, startingOffsets='{"t": {"0": 400}}') == [] or all(
        s.start_offset == 400 for s in _plan(tmp_path, startingOffsets='{"t": {"0": 400}}')
    )
    assert _plan(tmp_path, endingOffsets='{"t": {"0": 0}}') == []


def test_plan_timestamps_pick_the_segment_with_the_first_match(tmp_path: Path) -> None:
    _write_partition(tmp_path, "t", 0, 40, 8)
    some = _plan(tmp_path, startingTimestamp=str(T0 + 200), endingTimestamp=str(T0 + 230))
    assert some
    assert all(s.base_offset <= 230 for s in some)
    first = min(some, key=lambda s: s.base_offset)
    assert first.start_timestamp == T0 + 200 and first.base_offset <= 200
    # past every timestamp: only the last (possibly active) segment is looked at, and it has none
    late = _plan(tmp_path, startingTimestamp=str(T0 + 10_000))
    last_base = max(s.base_offset for s in _plan(tmp_path))
    assert [s.base_offset for s in late] == [last_base]
    opts = parse_read_options(
        {"startingTimestamp": str(T0 + 10_000), "startingOffsetsByTimestampStrategy": "latest"}
    )
    assert [b for b in read_split(late[0], opts, arrow_schema(["offset"])) if b.num_rows] == []
    # Spark's default strategy, error: no record at or after the timestamp fails, naming it
    opts = parse_read_options({"startingTimestamp": str(T0 + 10_000)})
    with pytest.raises(OffsetOutOfRangeError, match=r"No offset matched .* t-0 and timestamp"):
        list(read_split(late[0], opts, arrow_schema(["offset"])))


def test_plan_read_committed_carries_aborted_transactions(tmp_path: Path) -> None:
    with LogWriter(tmp_path, "p", 0, segment_bytes=1 << 20, fsync=False) as w:
        b = BatchBuilder(2, base_offset=0, producer_id=7, producer_epoch=0, is_transactional=True)
        b.append(timestamp=T0, value=b"x")
        w.append(b.build())
        w.append(
            build_end_txn_marker(
                False, coordinator_epoch=0, producer_id=7, producer_epoch=0, offset=1
            )
        )
        w.append_aborted_txn(7, 0, 1, 2)
    (split,) = _plan(tmp_path, isolationLevel="read_committed")
    assert split.aborted == ((7, 0, 1),)
    (split,) = _plan(tmp_path)
    assert split.aborted is None


def test_read_committed_state_machine_as_kafka_consumer() -> None:
    state = ReadCommittedFilter([(7, 10, 20)])
    kw = {"is_control": False, "is_abort": False}
    # producer 7's transactional batch inside the aborted range: dropped
    assert not state.keep_header(
        base_offset=10, last_offset=12, producer_id=7, is_transactional=True, **kw
    )
    # another producer's batch is kept
    assert state.keep_header(
        base_offset=13, last_offset=13, producer_id=8, is_transactional=True, **kw
    )
    # the ABORT marker is dropped and closes the aborted transaction
    assert not state.keep_header(
        base_offset=20,
        last_offset=20,
        producer_id=7,
        is_transactional=True,
        is_control=True,
        is_abort=True,
    )
    # producer 7's next (committed) transaction is kept
    assert state.keep_header(
        base_offset=21, last_offset=22, producer_id=7, is_transactional=True, **kw
    )


def test_read_committed_ignores_transactions_aborted_before_the_split() -> None:
    state = ReadCommittedFilter([(7, 0, 5)])
    assert state.keep_header(
        base_offset=10,
        last_offset=10,
        producer_id=7,
        is_transactional=True,
        is_control=False,
        is_abort=False,
    )
