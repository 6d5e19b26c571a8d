"""``LiveLog`` over both segment stores, files (the broker's) and memory (issue 18: the core
property tests need no disk), with the same assertions: random appends as leader (plain and
idempotent), rolls, resends of the producer's last batch, DeleteRecords, ``retention.bytes`` and
``retention.ms``,
reopens (recovering, or clean from the recovery point) and torn writes (the start of a batch
left at the end of the active segment, truncated by the recovery at the next open), then every
offset from the log start reads back with the bytes appended, against a model of the records."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kwire.log._errors import OffsetOutOfRangeError
from kwire.log._store import MemorySegmentStore, SegmentStore
from kwire.log.storage import LiveLog, LogConfig
from kwire.records import BatchBuilder, read_batches

NOW = 1_700_000_000_000
PID = 7
# Small segments and index interval: most examples roll by size and use the sparse index.
CONFIG = LogConfig(segment_bytes=700, index_interval_bytes=150)

APPENDS = st.one_of(
    st.tuples(st.just("append"), st.integers(1, 8)),
    st.tuples(st.just("produce"), st.integers(1, 4)),
)
# Appends weigh as much as every other action together: logs several segments deep.
ACTIONS = st.lists(
    st.one_of(
        APPENDS,
        APPENDS,
        st.tuples(st.just("resend"), st.just(0)),
        st.tuples(st.just("roll"), st.just(0)),
        st.tuples(st.just("delete_records"), st.integers(0, 100)),
        st.tuples(st.just("retain_bytes"), st.integers(0, 6)),
        st.tuples(st.just("retain_ms"), st.integers(0, 20)),
        st.tuples(st.just("reopen"), st.integers(0, 1)),
        st.tuples(st.just("tear"), st.integers(1, 60)),
    ),
    min_size=10,
    max_size=40,
)


def value_of(offset: int) -> bytes:
    """The value appended at ``offset`` (lengths vary, so batches straddle index entries)."""
    return b"v%d-" % offset * (4 + 3 * (offset % 7))


def build(first: int, count: int, ts: int, *, seq: int = -1) -> bytes:
    idempotent = seq >= 0
    b = BatchBuilder(
        producer_id=PID if idempotent else -1,
        producer_epoch=0 if idempotent else -1,
        base_sequence=seq,
    )
    for i in range(count):
        b.append(timestamp=ts, key=None, value=value_of(first + i))
    return b.build()


@dataclass
class Model:
    """What the log must hold: a value per offset from ``start`` to ``end``."""

    values: dict[int, bytes] = field(default_factory=dict)
    start: int = 0
    end: int = 0
    next_seq: int = 0
    #: The producer's last batch: (bytes, first offset, last offset).
    last_produced: tuple[bytes, int, int] | None = None


class Harness:
    """One partition log over ``store`` (None: the default file store of the folder)."""

    def __init__(self, folder: str, store: SegmentStore | None) -> None:
        self.folder = folder
        self.store = store
        self.now = NOW
        self.model = Model()
        self.log = self._open(recovery_point=0, clean=False)

    def _open(self, *, recovery_point: int, clean: bool) -> LiveLog:
        return LiveLog.open(
            self.folder,
            CONFIG,
            now_ms=self.now,
            log_start_offset=self.model.start,
            recovery_point=recovery_point,
            clean_shutdown=clean,
            store=self.store,
        )

    def _append(self, data: bytes) -> tuple[int, int, bool]:
        info = self.log.append_as_leader(data, now_ms=self.now)
        self.log.high_watermark = self.log.log_end_offset
        return info.first_offset, info.last_offset, info.duplicate

    def run(self, action: str, arg: int) -> None:
        m, log = self.model, self.log
        self.now += 1
        if action == "append":
            first, last, dup = self._append(build(m.end, arg, self.now))
            assert (first, last, dup) == (m.end, m.end + arg - 1, False)
            m.values.update((o, value_of(o)) for o in range(first, last + 1))
            m.end = last + 1
        elif action == "produce":
            data = build(m.end, arg, self.now, seq=m.next_seq)
            first, last, dup = self._append(data)
            assert (first, last, dup) == (m.end, m.end + arg - 1, False)
            m.values.update((o, value_of(o)) for o in range(first, last + 1))
            m.end = last + 1
            m.next_seq += arg
            m.last_produced = (data, first, last)
        elif action == "resend":
            # The producer state (a snapshot, or the batches replayed) knows the last batch as
            # long as it is in the log: a resend answers its offsets and appends nothing.
            if m.last_produced is not None and m.last_produced[1] >= m.start:
                data, first, last = m.last_produced
                assert self._append(data) == (first, last, True)
                assert log.log_end_offset == m.end
        elif action == "roll":
            log.roll(self.now)
            assert log.segment_base_offsets[-1] == m.end
        elif action == "delete_records":
            target = m.start + (m.end - m.start) * arg // 100
            assert log.delete_records_before(target) == max(target, m.start)
            m.start = max(target, m.start)
        elif action in ("retain_bytes", "retain_ms"):
            # Each step is a millisecond: retention.ms = arg drops the segments whose newest
            # record is more than arg steps old.
            if action == "retain_bytes":
                log.update_config(replace(CONFIG, retention_bytes=arg * 200))
            else:
                log.update_config(replace(CONFIG, retention_ms=arg))
            before = log.segment_base_offsets
            deleted = log.enforce_retention(self.now)
            log.update_config(CONFIG)
            kept = log.segment_base_offsets
            assert before[deleted:] == kept or (deleted == len(before) and kept == [m.end])
            assert log.log_start_offset >= m.start
            m.start = log.log_start_offset
        elif action == "reopen":
            clean = arg == 1
            log.close()
            self.log = self._open(recovery_point=m.end if clean else 0, clean=clean)
        elif action == "tear":
            base, size = log.segment_base_offsets[-1], log._segments[-1].size
            log.close()
            torn = build(m.end, 3, self.now)[:arg]  # a write cut short by a crash
            if self.store is None:
                with open(os.path.join(self.folder, f"{base:020d}.log"), "ab") as f:
                    f.write(torn)
            else:
                self.store.open(base).append(torn)
            self.log = self._open(recovery_point=0, clean=False)
            assert self.log._segments[-1].size == size  # LogSegment.recover cut it off
        for o in [o for o in m.values if o < m.start]:
            del m.values[o]
        self.check()

    def check(self) -> None:
        m, log = self.model, self.log
        assert (log.log_start_offset, log.log_end_offset) == (m.start, m.end)
        assert log.segment_base_offsets[0] <= m.start
        # Every offset reads back: the first batch of a one-byte read holds it (min one message).
        for offset in range(m.start, m.end):
            data = log.read(offset, 1, max_offset=m.end)
            batches = list(read_batches(data.read_bytes()))
            assert len(batches) == 1 and batches[0].base_offset <= offset <= batches[0].last_offset
            found = {r.offset: r.value for r in batches[0]}
            assert bytes(found[offset] or b"") == m.values[offset]
        # The whole log, batch by batch, holds the same bytes.
        read = {
            r.offset: bytes(r.value or b"")
            for b in log.iter_batches(m.start, chunk_bytes=256)
            for r in b
            if r.offset >= m.start
        }
        assert read == m.values
        if m.start > 0:
            with pytest.raises(OffsetOutOfRangeError):
                log.read(m.start - 1, 1 << 20)
        assert log.read(m.end, 1 << 20).size == 0


@contextmanager
def harness(kind: str) -> Iterator[Harness]:
    with tempfile.TemporaryDirectory() as tmp:
        folder = os.path.join(tmp, "t-0")
        h = Harness(folder, None if kind == "files" else MemorySegmentStore())
        try:
            yield h
        finally:
            h.log.close()
        if kind == "memory":
            assert not os.path.exists(folder)  # a memory log touches no disk


@pytest.mark.parametrize("kind", ["files", "memory"])
@settings(max_examples=60, deadline=None, derandomize=True)
@given(actions=ACTIONS)
def test_live_log_reads_back_what_it_appended(kind: str, actions: list[tuple[str, int]]) -> None:
    with harness(kind) as h:
        for action, arg in actions:
            h.run(action, arg)


@pytest.mark.parametrize("kind", ["files", "memory"])
def test_a_long_run_over_every_operation(kind: str) -> None:
    """A fixed sequence through every operation, several segments deep (the random examples
    are short): the same state at the end over both stores."""
    steps = [("append", 5), ("produce", 3)] * 6 + [
        ("reopen", 0),
        ("resend", 0),
        ("retain_bytes", 3),
        ("produce", 2),
        ("reopen", 1),
        ("resend", 0),
        ("delete_records", 50),
        ("roll", 0),
        ("retain_bytes", 0),
        ("reopen", 0),
        ("tear", 30),
        ("append", 4),
    ]
    with harness(kind) as h:
        for action, arg in steps:
            h.run(action, arg)
        assert h.log.segment_base_offsets == [50]
        assert (h.model.start, h.model.end) == (50, 54)
