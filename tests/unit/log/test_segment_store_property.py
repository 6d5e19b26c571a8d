"""The segment rules of the live log (``LogSegment``: batch headers, ``translateOffset``, reads;
``SegmentIndexer``: the sparse index) over both segment stores, files and bytearrays, with the same
assertions: random appends, rolls, truncations, deletions of the oldest segment and reopens from
the store, then every offset read back, against a model of the batches; and walks over damaged
bytes, which end."""

from __future__ import annotations

import contextlib
import itertools
import os
import struct
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kwire.errors import DecodeError
from kwire.log._log_segment import LogSegment
from kwire.log._rules import SegmentIndexer
from kwire.log._store import FileSegmentStore, MemorySegmentStore, SegmentRecords, SegmentStore
from kwire.records import build_batch

INDEX_INTERVAL = 150  # small: most segments get index entries

Action = tuple[str, int]
ACTIONS = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.integers(1, 4)),
        st.tuples(st.just("roll"), st.just(0)),
        st.tuples(st.just("truncate"), st.integers(1, 3)),
        st.tuples(st.just("delete_oldest"), st.just(0)),
        st.tuples(st.just("reopen"), st.just(0)),
    ),
    max_size=30,
)


class SegmentLog:
    """The segments of one partition over ``store``, as ``LiveLog`` keeps them (test harness)."""

    def __init__(self, store: SegmentStore) -> None:
        self.store = store
        self.segments = [self._segment(0, store.roll(0))]
        self.next_offset = 0

    def _segment(self, base: int, records: SegmentRecords) -> LogSegment:
        return LogSegment(f"seg-{base}", records, SegmentIndexer(base, INDEX_INTERVAL), 0)

    def append(self, values: list[bytes], timestamp: int) -> None:
        first = self.next_offset
        data = build_batch([(first + i, timestamp, None, v) for i, v in enumerate(values)])
        seg = self.segments[-1]
        seg.append(data)
        seg.indexer.append_batch(len(data), first + len(values) - 1, timestamp)
        self.next_offset += len(values)

    def roll(self) -> None:
        if self.segments[-1].size:
            self.segments.append(self._segment(self.next_offset, self.store.roll(self.next_offset)))

    def truncate_to(self, offset: int) -> None:
        """``LocalLog.truncateTo``: segments above ``offset`` deleted, the one holding it cut at
        the batch that reaches it (whole batches: ``offset`` is a batch's base offset)."""
        while len(self.segments) > 1 and self.segments[-1].base_offset >= offset:
            self._delete(self.segments.pop())
        seg = self.segments[-1]
        found = seg.translate_offset(offset)
        if found is not None:
            position = found[0]
            seg.records.truncate_to(position)
            # The indexer again from the batches that stay (LogSegment.truncateTo).
            kept = list(seg.batches_from(0))
            seg.indexer = SegmentIndexer(seg.base_offset, INDEX_INTERVAL)
            for _pos, _base, last, size in kept:
                seg.indexer.append_batch(size, last, 0)
        self.next_offset = offset

    def reopen(self) -> None:
        """Close every segment and open it again from the store, its index rebuilt from its
        batches (what ``LogLoader`` does for a segment it recovers)."""
        reopened = []
        for seg in self.segments:
            seg.close()
            records = self.store.open(seg.base_offset)
            walker = LogSegment(
                seg.stem, records, SegmentIndexer(seg.base_offset, 0, size=records.size()), 0
            )
            again = self._segment(seg.base_offset, records)
            for _pos, _base, last, size in walker.batches_from(0):
                again.indexer.append_batch(size, last, 0)
            reopened.append(again)
        self.segments = reopened

    def delete_oldest(self) -> None:
        if len(self.segments) > 1:
            self._delete(self.segments.pop(0))

    def _delete(self, seg: LogSegment) -> None:
        seg.close()
        self.store.delete(seg.base_offset)

    def read(self, offset: int) -> list[tuple[int, bytes]]:
        """The records of the batch holding ``offset`` (``LocalLog.read`` of one batch)."""
        seg = next(s for s in reversed(self.segments) if s.base_offset <= offset)
        found = seg.translate_offset(offset)
        assert found is not None, offset
        position, size, _last = found
        return [(r.offset, bytes(r.value or b"")) for r in seg.read_batch(position, size)]


@pytest.fixture(params=["file", "memory"])
def new_store(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Callable[[], SegmentStore]]:
    counter = itertools.count()

    def make() -> SegmentStore:
        if request.param == "memory":
            return MemorySegmentStore()
        return FileSegmentStore(tmp_path_factory.mktemp("store") / f"t-{next(counter)}")

    yield make


@settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(actions=ACTIONS)
def test_every_offset_reads_back_over_both_stores(
    new_store: Callable[[], SegmentStore], actions: list[Action]
) -> None:
    log = SegmentLog(new_store())
    model: list[tuple[int, list[bytes]]] = []  # (base offset, values) of each batch
    for name, n in actions:
        if name == "append":
            values = [
                f"v{log.next_offset + i}".encode() * (1 + (log.next_offset + i) % 7)
                for i in range(n)
            ]
            log.append(values, 1_000 + log.next_offset)
            model.append((log.next_offset - n, values))
        elif name == "roll":
            log.roll()
        elif name == "truncate" and model:
            keep = max(len(model) - n, 0)
            start = model[keep][0] if keep < len(model) else log.next_offset
            if start >= log.segments[0].base_offset:
                log.truncate_to(start)
                del model[keep:]
        elif name == "delete_oldest":
            log.delete_oldest()
        elif name == "reopen":
            log.reopen()
    start = log.segments[0].base_offset
    assert log.store.base_offsets() == [s.base_offset for s in log.segments]
    for base, values in model:
        if base < start:
            continue
        expected = [(base + i, v) for i, v in enumerate(values)]
        for offset in range(base, base + len(values)):
            assert log.read(offset) == expected
    # Each segment holds exactly its batches' bytes, in order.
    for seg in log.segments:
        assert seg.records.size() == seg.size == sum(size for *_, size in seg.batches_from(0))


DAMAGE = st.tuples(
    st.lists(st.integers(1, 3), min_size=1, max_size=6),  # records per good batch
    st.integers(0, 5),  # how many good batches precede the damage
    st.integers(-(2**31), 200),  # the damaged batch's length field
    st.binary(max_size=80),  # what follows it
)


@settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(damage=DAMAGE)
def test_lookups_on_a_damaged_segment_end_over_both_stores(
    new_store: Callable[[], SegmentStore], damage: tuple[list[int], int, int, bytes]
) -> None:
    """A segment whose bytes went bad (a clean shutdown skips recovery, so fetches and the
    loader's ``last_batch_offset`` walk them): every walk moves forward and ends, and the only
    error is a ``DecodeError`` (Kafka's ``FileLogInputStream.nextBatch`` throws
    ``CorruptRecordException`` for a length below ``LegacyRecord.RECORD_OVERHEAD_V0``)."""
    counts, good, length, tail = damage
    good = min(good, len(counts))
    store = new_store()
    records = store.roll(0)
    offset = 0
    for n in counts[:good]:
        records.append(build_batch([(offset + i, 1_000, None, b"v") for i in range(n)]))
        offset += n
    records.append(struct.pack(">qi", offset, length) + tail)
    seg = LogSegment("s", records, SegmentIndexer(0, INDEX_INTERVAL, size=records.size()), 0)
    positions: list[int] = []
    try:
        # Bounded: a walk that stops moving forward would otherwise never end.
        for position, _base, _last, _size in itertools.islice(seg.batches_from(0), seg.size + 1):
            assert not positions or position > positions[-1]
            positions.append(position)
    except DecodeError:
        pass
    assert len(positions) <= seg.size
    for target in range(offset + 2):
        with contextlib.suppress(DecodeError):
            seg.translate_offset(target, end=seg.size)


def test_a_memory_segment_has_no_descriptor() -> None:
    seg = LogSegment("s", MemorySegmentStore().roll(0), SegmentIndexer(0, INDEX_INTERVAL), 0)
    with pytest.raises(TypeError):
        seg.fd  # noqa: B018


def test_the_file_store_keeps_kafkas_names(tmp_path: Path) -> None:
    store = FileSegmentStore(tmp_path / "t-0")
    store.roll(0).close()
    store.roll(42).close()
    assert sorted(os.listdir(tmp_path / "t-0")) == [
        "00000000000000000000.log",
        "00000000000000000042.log",
    ]
    assert store.base_offsets() == [0, 42]
