"""The log cleaner (``kwire.log.LogCleaner``) against Kafka 3.9's ``LogCleaner`` rules."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kwire.log import (
    LogWriter,
    TopicPartition,
    list_log_dir,
    read_txn_index,
    walk_offset_index,
    walk_time_index,
)
from kwire.log._cleaner import group_segments_by_size, log_to_clean
from kwire.log.storage import (
    CleanedTransactionMetadata,
    CleaningRound,
    DataDir,
    LastRecord,
    LiveLog,
    LogCleaner,
    LogConfig,
    OffsetMap,
    build_offset_map,
    clean_batches,
)
from kwire.records import (
    LOG_APPEND_TIME,
    AppendOrigin,
    Batch,
    BatchBuilder,
    Compression,
    LegacyBatch,
    build_end_txn_marker,
    read_batches,
)

NOW = 1_700_000_000_000
DAY = 86_400_000

Rec = tuple[int, bytes | None, bytes | None]  # offset, key, value


def compact_config(**kw: Any) -> LogConfig:
    base: dict[str, Any] = {
        "segment_bytes": 1200,
        "index_interval_bytes": 100,
        "cleanup_policy": "compact",
        "min_cleanable_dirty_ratio": 0.0,
    }
    base.update(kw)
    return LogConfig(**base)


def open_log(path: Path, config: LogConfig | None = None, **kw: Any) -> LiveLog:
    return LiveLog.open(path / "t-0", config or compact_config(), now_ms=NOW, **kw)


def one(key: bytes | None, value: bytes | None, ts: int = NOW, **kw: Any) -> bytes:
    b = BatchBuilder(**kw)
    b.append(timestamp=ts, key=key, value=value)
    return b.build()


def append(log: LiveLog, data: bytes, **kw: Any) -> None:
    kw.setdefault("now_ms", NOW)
    log.append_as_leader(data, **kw)
    log.high_watermark = log.log_end_offset


def seal(log: LiveLog) -> None:
    """Roll, so everything appended is below the active segment (and so cleanable)."""
    log.roll()
    log.high_watermark = log.log_end_offset


def stored_batches(log: LiveLog) -> Iterator[Batch]:
    for seg in log._segments:
        data = os.pread(seg.fd, seg.size, 0)
        yield from read_batches(data)


def records(log: LiveLog) -> list[Rec]:
    out = []
    for b in stored_batches(log):
        if b.is_control:
            continue
        for r in b:
            out.append(
                (
                    r.offset,
                    None if r.key is None else bytes(r.key),
                    None if r.value is None else bytes(r.value),
                )
            )
    return out


def fetched(log: LiveLog) -> list[Rec]:
    """What a consumer reading from offset 0 gets through ``LiveLog.read``."""
    out: list[Rec] = []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        info = log.read(offset, 1 << 20)
        data = info.read_bytes()
        if not data:
            break
        for b in read_batches(data):
            if not b.is_control:
                out += [
                    (
                        r.offset,
                        None if r.key is None else bytes(r.key),
                        None if r.value is None else bytes(r.value),
                    )
                    for r in b
                    if r.offset >= offset
                ]
            offset = b.last_offset + 1
    return out


def check_indexes(log_dir: Path) -> None:
    """Every segment's indexes match its log, as Kafka's DumpLogSegments checks them, and equal
    what recovery (the rules LogWriter shares) rebuilds from the log alone."""
    [part] = list_log_dir(log_dir)
    for seg in part.segments:
        data = Path(seg.log).read_bytes()
        index = Path(seg.index).read_bytes() if seg.index else b""
        timeindex = Path(seg.timeindex).read_bytes() if seg.timeindex else b""
        assert all(c.matches for c in walk_offset_index(index, data, seg.base_offset))
        for c in walk_time_index(timeindex, index, data, seg.base_offset):
            assert c.log_offset == c.entry.offset and c.log_max_timestamp == c.entry.timestamp
        for b in read_batches(data):  # CRCs checked
            assert b.base_offset >= seg.base_offset


def indexes_equal_rebuilt(path: Path, config: LogConfig) -> None:
    part = path / "t-0"
    before = {n: (part / n).read_bytes() for n in os.listdir(part) if n.endswith("index")}
    for n in before:
        if not n.endswith(".txnindex"):
            (part / n).unlink()
    again = LiveLog.open(part, config, now_ms=NOW)
    again.close()
    after = {n: (part / n).read_bytes() for n in os.listdir(part) if n.endswith("index")}
    assert {n: v for n, v in after.items() if not n.endswith(".txnindex")} == {
        n: v for n, v in before.items() if not n.endswith(".txnindex")
    }


# -- the offset map and the filter, over bytes -------------------------------------------------


def test_offset_map_and_filter_are_pure() -> None:
    data = b"".join(
        one(k, v, base_offset=o)
        for o, (k, v) in enumerate([(b"a", b"1"), (b"b", b"2"), (b"a", b"3"), (None, b"x")])
    )
    m = OffsetMap()
    assert not build_offset_map(data, m, start_offset=0, txn=CleanedTransactionMetadata())
    assert (m.get(b"a"), m.get(b"b"), m.get(b"zz"), m.latest_offset) == (2, 1, -1, 3)
    out = bytearray()
    rules = CleaningRound(m, CleanedTransactionMetadata(), NOW, DAY, upper_bound_offset=10)
    clean_batches(data, rules, out)
    assert [(r.offset, bytes(r.key or b"")) for b in read_batches(out) for r in b] == [
        (1, b"b"),
        (2, b"a"),
    ]
    assert rules.stats.invalid_messages == 1  # the keyless record
    full = OffsetMap(max_entries=1)
    assert build_offset_map(data, full, start_offset=0, txn=CleanedTransactionMetadata())
    assert full.latest_offset == 0


def test_last_batch_of_a_producer_is_kept_empty() -> None:
    data = one(b"a", b"1", producer_id=9, producer_epoch=0, base_sequence=0) + one(
        b"a", b"2", base_offset=1
    )
    m = OffsetMap()
    build_offset_map(data, m, start_offset=0, txn=CleanedTransactionMetadata())
    out = bytearray()
    rules = CleaningRound(
        m,
        CleanedTransactionMetadata(),
        NOW,
        DAY,
        upper_bound_offset=10,
        last_records={9: LastRecord(0, 0)},
    )
    clean_batches(data, rules, out)
    first, second = read_batches(out)
    assert (first.producer_id, first.record_count, first.base_sequence) == (9, 0, 0)
    assert (first.base_offset, first.last_offset) == (0, 0) and first.is_valid()
    assert [bytes(r.value or b"") for r in second] == [b"2"]


# -- LiveLog compaction ----------------------------------------------------------------------


def test_keeps_the_last_value_of_every_key(tmp_path: Path) -> None:
    cfg = compact_config()
    log = open_log(tmp_path, cfg)
    for i in range(300):
        append(log, one(b"k%d" % (i % 7), b"v%d" % i, NOW + i))
    seal(log)
    segments = len(log.segment_base_offsets)
    before = records(log)
    cleaner = LogCleaner()
    result = cleaner.clean_one([log], NOW + 1000)
    assert result is not None and result.end_offset == 300
    assert cleaner.checkpoints == {TopicPartition("t", 0): 300}
    latest = {k: (o, k, v) for o, k, v in before}
    assert records(log) == sorted(latest.values())
    assert fetched(log) == sorted(latest.values())
    assert log.log_end_offset == 300 and log.log_start_offset == 0
    assert len(log.segment_base_offsets) <= segments
    # nothing left to do until more is written
    assert cleaner.clean_one([log], NOW + 2000) is None
    # a second round merges the segments the first one emptied
    for i in range(300, 320):
        append(log, one(b"k%d" % (i % 7), b"v%d" % i, NOW + i))
    seal(log)
    assert cleaner.clean_one([log], NOW + 3000) is not None
    assert len(log.segment_base_offsets) < segments
    latest.update({k: (o, k, v) for o, k, v in records(log)})
    assert records(log) == sorted(latest.values())
    log.close()
    check_indexes(tmp_path)
    indexes_equal_rebuilt(tmp_path, cfg)
    again = open_log(tmp_path, cfg)
    assert records(again) == sorted(latest.values()) and again.log_end_offset == 320
    again.close()


def test_offset_holes_and_batches_keep_their_offsets(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    b = BatchBuilder(producer_id=4, producer_epoch=0, base_sequence=0)
    for i in range(6):
        b.append(timestamp=NOW + i, key=b"k%d" % (i % 3), value=b"v%d" % i)
    append(log, b.build())
    append(log, one(b"k0", b"new"))  # offset 6
    append(log, one(b"other", b"x"))  # 7: the producer's batch is no longer its last... it is
    seal(log)
    LogCleaner().clean_one([log], NOW + 1)
    [first, *_rest] = list(stored_batches(log))
    # offsets 0 and 3 (k0) are gone, the batch keeps base 0, last 5 and its base sequence
    assert (first.base_offset, first.last_offset, first.base_sequence) == (0, 5, 0)
    assert [r.offset for r in first] == [4, 5]
    assert [o for o, _k, _v in records(log)] == [4, 5, 6, 7]
    log.close()
    check_indexes(tmp_path)


def test_lso_active_segment_and_min_compaction_lag(tmp_path: Path) -> None:
    log = open_log(tmp_path, compact_config(min_compaction_lag_ms=10_000))
    for i in range(60):
        append(log, one(b"k", b"v%d" % i, NOW + i))
    seal(log)
    cleaner = LogCleaner()
    assert cleaner.clean_one([log], NOW + 5_000) is None  # too recent
    assert cleaner.clean_one([log], NOW + 20_000) is not None
    assert len(records(log)) == 1
    # an open transaction stops the cleaning at its first offset's segment
    append(log, one(b"t", b"open", producer_id=3, producer_epoch=0, base_sequence=0,
                    is_transactional=True))  # fmt: skip
    for i in range(60):
        append(log, one(b"k", b"w%d" % i, NOW + 30_000))
    seal(log)
    ltc = log_to_clean(log, cleaner.checkpoints[TopicPartition("t", 0)], NOW + 60_000)
    assert ltc.first_uncleanable_offset <= 60
    log.close()


def test_max_compaction_lag_forces_a_clean(tmp_path: Path) -> None:
    cfg = compact_config(min_cleanable_dirty_ratio=1.0, max_compaction_lag_ms=60_000)
    log = open_log(tmp_path, cfg)
    for i in range(40):
        append(log, one(b"k", b"v%d" % i, NOW + i))
    seal(log)
    cleaner = LogCleaner()
    assert cleaner.clean_one([log], NOW + 1_000) is None  # the ratio can never exceed 1.0
    assert cleaner.clean_one([log], NOW + 120_000) is not None
    assert len(records(log)) == 1
    log.close()


def test_delete_policy_logs_are_not_compacted(tmp_path: Path) -> None:
    log = open_log(tmp_path, compact_config(cleanup_policy="delete"))
    for i in range(40):
        append(log, one(b"k", b"v%d" % i))
    seal(log)
    assert LogCleaner().clean_one([log], NOW) is None
    log.close()


def test_tombstones_expire_after_delete_retention(tmp_path: Path) -> None:
    cfg = compact_config(delete_retention_ms=DAY)
    log = open_log(tmp_path, cfg)
    append(log, one(b"gone", b"value"))
    append(log, one(b"gone", None))  # the tombstone, offset 1
    append(log, one(b"kept", b"1"))
    seal(log)
    cleaner = LogCleaner()
    cleaner.clean_one([log], NOW + 10)
    assert records(log) == [(1, b"gone", None), (2, b"kept", b"1")]
    [tomb] = [b for b in stored_batches(log) if b.base_offset == 1]
    assert tomb.has_delete_horizon and tomb.base_timestamp == NOW + 10 + DAY
    assert [r.timestamp for r in tomb] == [NOW]  # the record keeps its timestamp
    # before the horizon: still there
    append(log, one(b"kept", b"2"))
    seal(log)
    cleaner.clean_one([log], NOW + DAY)
    assert (1, b"gone", None) in records(log)
    # past it: gone
    append(log, one(b"kept", b"3"))
    seal(log)
    cleaner.clean_one([log], NOW + 10 + DAY)
    assert records(log) == [(4, b"kept", b"3")]
    log.close()
    check_indexes(tmp_path)


def marker(commit: bool, pid: int, offset: int = 0) -> bytes:
    return build_end_txn_marker(
        commit, coordinator_epoch=0, producer_id=pid, producer_epoch=0, timestamp=NOW
    )


def txn_batch(pid: int, seq: int, *kv: tuple[bytes, bytes], txn: bool = True) -> bytes:
    b = BatchBuilder(producer_id=pid, producer_epoch=0, base_sequence=seq, is_transactional=txn)
    for k, v in kv:
        b.append(timestamp=NOW, key=k, value=v)
    return b.build()


def markers(log: LiveLog) -> list[tuple[int, int, bool]]:
    return [(b.producer_id, b.base_offset, b.has_delete_horizon) for b in stored_batches(log)
            if b.is_control and b.record_count]  # fmt: skip


def test_transactions_as_kafka_cleans_them(tmp_path: Path) -> None:
    log = open_log(tmp_path, compact_config(delete_retention_ms=DAY))
    coordinator = {"origin": AppendOrigin.COORDINATOR}
    append(log, txn_batch(7, 0, (b"a", b"aborted"), (b"b", b"aborted")))  # 0-1
    append(log, txn_batch(8, 0, (b"c", b"committed")))  # 2
    append(log, marker(False, 7), **coordinator)  # 3: ABORT
    append(log, marker(True, 8), **coordinator)  # 4: COMMIT
    append(log, txn_batch(7, 2, (b"d", b"after"), txn=False))  # 5
    append(log, txn_batch(8, 1, (b"e", b"after"), txn=False))  # 6
    append(log, one(b"c", b"overwritten"))  # 7
    append(log, one(b"z", b"end"))  # 8
    seal(log)
    cleaner = LogCleaner()
    cleaner.clean_one([log], NOW)
    # aborted records gone, the superseded committed one too; both markers kept this time
    assert records(log) == [(5, b"d", b"after"), (6, b"e", b"after"),
                            (7, b"c", b"overwritten"), (8, b"z", b"end")]  # fmt: skip
    assert markers(log) == [(7, 3, False), (8, 4, False)]
    [seg] = [Path(log.path) / n for n in os.listdir(log.path) if n.endswith(".txnindex")]
    [entry] = read_txn_index(seg.read_bytes())
    assert (entry.producer_id, entry.first_offset, entry.last_offset) == (7, 0, 3)
    assert [(t.producer_id, t.first_offset) for t in log.collect_aborted_transactions(0, 9)] == [
        (7, 0)
    ]
    # next round: no batch of either transaction is left, the markers get a delete horizon
    append(log, one(b"z", b"again"))
    seal(log)
    cleaner.clean_one([log], NOW + 5)
    assert markers(log) == [(7, 3, True), (8, 4, True)]
    # after delete.retention.ms they go
    append(log, one(b"z", b"third"))
    seal(log)
    cleaner.clean_one([log], NOW + 5 + DAY)
    assert markers(log) == []
    assert [o for o, _k, _v in records(log)] == [5, 6, 7, 10]
    # the producers' state is intact (their last batches are kept) and survives a reopen
    state = log.producer_state()
    assert state[7].last_seq == 2 and state[8].last_seq == 1
    log.close()
    check_indexes(tmp_path)
    again = open_log(tmp_path)
    assert again.producer_state()[7].last_seq == 2
    again.close()


# -- formats -----------------------------------------------------------------------------------


def legacy(
    magic: int, codec: int, recs: list[tuple[int, bytes, bytes]], lat: bool = False
) -> bytes:
    b = BatchBuilder(
        magic,
        codec,
        base_offset=recs[0][0],
        timestamp_type=LOG_APPEND_TIME if lat else 0,
        log_append_time=NOW + 99 if lat else None,
    )
    for o, k, v in recs:
        b.append(o, NOW + o, k, v)
    return b.build()


def test_magic_0_1_2_and_codecs(tmp_path: Path) -> None:
    parts = [
        legacy(0, 0, [(0, b"a", b"m0-plain")]),
        legacy(0, Compression.GZIP, [(1, b"a", b"x"), (2, b"b", b"m0-gzip"), (3, b"a", b"y")]),
        legacy(1, Compression.SNAPPY, [(4, b"c", b"m1"), (5, b"a", b"z"), (6, b"d", b"m1-snappy")]),
        legacy(1, Compression.LZ4, [(7, b"h", b"m1-lat"), (8, b"c", b"w")], lat=True),
    ]
    v2 = BatchBuilder(2, Compression.ZSTD, base_offset=9)
    for o, k in ((9, b"f"), (10, b"e"), (11, b"g")):
        v2.append(o, NOW + o, k, b"v2-" + k)
    parts.append(v2.build())
    parts.append(legacy(1, 0, [(12, b"c", b"last-c")]))
    parts.append(one(b"e", b"last-e", base_offset=13))
    with LogWriter(tmp_path, "t", 0, segment_bytes=1 << 20) as w:
        for p in parts:
            w.append(p)
    cfg = compact_config(segment_bytes=1 << 20)
    log = open_log(tmp_path, cfg)
    seal(log)
    assert LogCleaner().clean_one([log], NOW) is not None
    got = list(stored_batches(log))
    assert [(b.magic, b.compression, b.base_offset, b.last_offset) for b in got] == [
        (0, Compression.GZIP, 2, 2),
        (1, Compression.SNAPPY, 5, 6),  # wrapper offset: its last inner offset
        (1, Compression.LZ4, 7, 7),
        (2, Compression.ZSTD, 9, 11),
        (1, 0, 12, 12),
        (2, 0, 13, 13),
    ]
    assert records(log) == [
        (2, b"b", b"m0-gzip"), (5, b"a", b"z"), (6, b"d", b"m1-snappy"),
        (7, b"h", b"m1-lat"), (9, b"f", b"v2-f"), (11, b"g", b"v2-g"), (12, b"c", b"last-c"),
        (13, b"e", b"last-e"),
    ]  # fmt: skip
    m1 = got[1]
    assert isinstance(m1, LegacyBatch)
    assert [e.offset for e in m1.inner_entries()] == [0, 1]  # relative to the first kept
    lat = got[2]
    assert lat.timestamp_type == LOG_APPEND_TIME and [r.timestamp for r in lat] == [NOW + 99]
    m0 = got[0]
    assert isinstance(m0, LegacyBatch) and [e.offset for e in m0.inner_entries()] == [2]
    log.close()
    check_indexes(tmp_path)


# -- crash safety ------------------------------------------------------------------------------


class Crash(Exception):
    pass


def _swap_renames(monkeypatch: pytest.MonkeyPatch, crash_at: int) -> list[str]:
    real = os.replace
    seen: list[str] = []

    def replace(src: Any, dst: Any) -> None:
        s, d = os.fspath(src), os.fspath(dst)
        if s.endswith((".cleaned", ".swap")) or d.endswith(".deleted"):
            if len(seen) == crash_at:
                raise Crash(s)
            seen.append(s)
        real(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    return seen


def _fill(log: LiveLog) -> list[Rec]:
    """A first round empties most segments, so the second one (which crashes) merges groups of
    several segments into one."""
    for i in range(200):
        append(log, one(b"k%d" % (i % 5), b"v%d" % i, NOW + i))
    seal(log)
    LogCleaner().clean_one([log], NOW + 500)
    for i in range(200, 300):
        append(log, one(b"k%d" % (i % 5), b"v%d" % i, NOW + i))
    seal(log)
    return records(log)


@pytest.mark.parametrize("crash_at", range(0, 36, 2))
def test_crash_mid_swap_recovers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, crash_at: int
) -> None:
    cfg = compact_config(segment_bytes=3000)
    log = open_log(tmp_path, cfg)
    before = _fill(log)
    latest = sorted({k: (o, k, v) for o, k, v in before}.values())
    groups = len(log.segment_base_offsets)
    seen = _swap_renames(monkeypatch, crash_at)
    try:
        LogCleaner().clean_one([log], NOW + 1000)
        crashed = False
    except Crash:
        crashed = True
    monkeypatch.undo()
    for seg in log._segments:  # the process dies: descriptors go, nothing is flushed
        seg.close()
    for _due, seg, _files in log._pending_deletes:
        seg.close()
    again = open_log(tmp_path, cfg, recovery_point=300, clean_shutdown=True)
    names = os.listdir(again.path)
    assert not [n for n in names if n.endswith((".cleaned", ".swap", ".deleted"))]
    got = records(again)
    # every key keeps its latest value, no record appears twice, offsets only from the log
    assert {k: v for _o, k, v in got} == {k: v for _o, k, v in latest}
    assert [o for o, _k, _v in got] == sorted({o for o, _k, _v in got})
    assert set(got) <= set(before)
    assert again.log_end_offset == 300
    if not crashed:
        assert got == latest and len(seen) < crash_at
        assert len(again.segment_base_offsets) < groups  # segments were merged
    again.close()
    check_indexes(tmp_path)


# -- config, checkpoint, grouping --------------------------------------------------------------


def test_log_config_from_properties() -> None:
    cfg = LogConfig.from_properties(
        {
            "cleanup.policy": "compact,delete",
            "delete.retention.ms": "1000",
            "min.compaction.lag.ms": "5",
            "max.compaction.lag.ms": "60000",
            "min.cleanable.dirty.ratio": "0.01",
        }
    )
    assert cfg.compact and cfg.delete_retention
    assert (cfg.delete_retention_ms, cfg.min_compaction_lag_ms, cfg.max_compaction_lag_ms) == (
        1000,
        5,
        60000,
    )
    assert cfg.min_cleanable_dirty_ratio == 0.01
    assert not LogConfig().compact
    with pytest.raises(ValueError):
        LogConfig(min_cleanable_dirty_ratio=1.5)


def test_cleaner_offset_checkpoint(tmp_path: Path) -> None:
    d = DataDir.open(tmp_path, cluster_id=None, node_id=1)
    assert d.read_cleaner_checkpoint() == {}
    d.write_cleaner_checkpoint({TopicPartition("b", 1): 7, TopicPartition("a", 0): 3})
    assert (tmp_path / "cleaner-offset-checkpoint").read_text() == "0\n2\na 0 3\nb 1 7\n"
    assert d.read_cleaner_checkpoint() == {TopicPartition("a", 0): 3, TopicPartition("b", 1): 7}


def test_checkpoint_below_log_start_is_reset(tmp_path: Path) -> None:
    log = open_log(tmp_path, compact_config(cleanup_policy="compact,delete"))
    for i in range(60):
        append(log, one(b"k%d" % (i % 3), b"v%d" % i))
    seal(log)
    log.delete_records_before(30)
    cleaner = LogCleaner({TopicPartition("t", 0): 5})
    ltc = cleaner.grab_filthiest_compacted_log([log], NOW)
    assert ltc is not None and ltc.first_dirty_offset == log.log_start_offset
    assert cleaner.checkpoints[TopicPartition("t", 0)] == log.log_start_offset
    log.close()


def test_groups_fit_one_segment(tmp_path: Path) -> None:
    log = open_log(tmp_path, compact_config(segment_bytes=500))
    for i in range(40):
        append(log, one(b"k%d" % i, b"v" * 20))
    seal(log)
    segs = log._segments[:-1]
    groups = group_segments_by_size(segs, 1000, 1 << 20, log.log_end_offset)
    assert [s for g in groups for s in g] == segs
    assert all(sum(s.size for s in g) <= 1000 for g in groups)
    assert all(len(g) == 1 for g in group_segments_by_size(segs, 1, 1 << 20, 40))
    log.close()


# -- the broker's ticker -----------------------------------------------------------------------


def test_broker_cleans_compacted_topics(tmp_path: Path) -> None:
    from kwire.broker import BrokerState, ManualClock, implemented_versions, personality
    from kwire.broker._cleaner import BrokerLogCleaner

    def make() -> BrokerState:
        state = BrokerState(
            tmp_path / "data",
            personality=personality("3.9", implemented_versions()),
            clock=ManualClock(NOW),
            static_config={"log.cleaner.backoff.ms": "500"},
        )
        from kwire.broker._apis import start

        start(state)
        return state

    state = make()
    topic = state.create_topic(
        "compacted",
        1,
        {"cleanup.policy": "compact", "segment.bytes": "1000", "min.cleanable.dirty.ratio": "0.01"},
    )
    plain = state.create_topic("plain", 1, {"segment.bytes": "1000"})
    for t in (topic, plain):
        lg = t.partitions[0].log
        for i in range(100):
            lg.append_as_leader(one(b"k%d" % (i % 4), b"v%d" % i), now_ms=NOW)
        lg.roll()
        lg.high_watermark = lg.log_end_offset
    service = state.services.log_cleaner
    assert isinstance(service, BrokerLogCleaner)
    state.run_tickers()
    assert service.rounds == 1
    assert len(records(topic.partitions[0].log)) == 4
    assert len(records(plain.partitions[0].log)) == 100
    state.run_tickers()  # spaced: nothing more this tick
    assert service.rounds == 1
    checkpoint = (tmp_path / "data" / "cleaner-offset-checkpoint").read_text()
    assert checkpoint == "0\n1\ncompacted 0 100\n"
    state.close()
    state = make()
    assert isinstance(state.services.log_cleaner, BrokerLogCleaner)
    assert state.services.log_cleaner.cleaner.checkpoints == {TopicPartition("compacted", 0): 100}
    state.close()
    disabled = BrokerState(
        tmp_path / "data",
        personality=personality("3.9", implemented_versions()),
        clock=ManualClock(NOW),
        static_config={"log.cleaner.enable": "false"},
    )
    from kwire.broker._cleaner import start_log_cleaner

    assert start_log_cleaner(disabled) is None
    disabled.close()


def test_broker_cleaner_idle_until_a_compacted_topic_then_cleans_it(tmp_path: Path) -> None:
    """Ticks of a broker with no compacted log find nothing (its cleaner is not even made); a
    compacted topic created later is cleaned as on a broker that had one from the start, and a
    checkpoint of a partition that is gone is forgotten at the next start's first tick."""
    from kwire.broker import BrokerState, ManualClock, implemented_versions, personality
    from kwire.broker._apis import start
    from kwire.broker._cleaner import BrokerLogCleaner

    def make() -> BrokerState:
        state = BrokerState(
            tmp_path / "data",
            personality=personality("3.9", implemented_versions()),
            clock=ManualClock(NOW),
            static_config={"log.cleaner.backoff.ms": "0"},
        )
        start(state)
        return state

    state = make()
    service = state.services.log_cleaner
    assert isinstance(service, BrokerLogCleaner)
    plain = state.create_topic("plain", 1, {"segment.bytes": "1000"})
    state.run_tickers()
    assert service.rounds == 0
    topic = state.create_topic(
        "compacted",
        1,
        {"cleanup.policy": "compact", "segment.bytes": "1000", "min.cleanable.dirty.ratio": "0.01"},
    )
    for t in (topic, plain):
        lg = t.partitions[0].log
        for i in range(100):
            lg.append_as_leader(one(b"k%d" % (i % 4), b"v%d" % i), now_ms=NOW)
        lg.roll()
        lg.high_watermark = lg.log_end_offset
    state.run_tickers()
    assert service.rounds == 1
    assert len(records(topic.partitions[0].log)) == 4
    assert len(records(plain.partitions[0].log)) == 100
    state.delete_topic("compacted")
    state.close()
    checkpoint = tmp_path / "data" / "cleaner-offset-checkpoint"
    assert checkpoint.read_text() == "0\n1\ncompacted 0 100\n"
    state = make()
    state.run_tickers()  # no compacted log left, but a checkpoint to forget
    assert checkpoint.read_text() == "0\n0\n"
    state.close()
