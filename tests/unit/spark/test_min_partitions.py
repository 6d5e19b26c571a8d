"""kafka-wire's minPartitions: Spark's KafkaOffsetRangeCalculator.getRanges rules; no JVM, no broker.

Each split covers its topic-partition's range exactly once, in contiguous pieces; there are at
least minPartitions pieces whenever the ranges hold that many offsets; big ranges take most.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kwire.errors import OptionError
from kwire.spark._options import parse_min_partitions
from kwire.spark._wire_source import WireRange, split_ranges


def _covered(pieces: list[WireRange]) -> dict[tuple[str, int], list[int]]:
    seen: dict[tuple[str, int], list[int]] = {}
    for r in pieces:
        seen.setdefault((r.topic, r.partition), []).extend(range(r.start, r.end))
    return seen


ranges_st = st.lists(
    st.tuples(st.integers(0, 1000), st.integers(0, 5000)), min_size=1, max_size=6
).map(lambda xs: [WireRange("t", p, s, s + n) for p, (s, n) in enumerate(xs)])


@settings(suppress_health_check=[HealthCheck.too_slow], deadline=None)  # a loaded machine
@given(ranges_st, st.integers(1, 64))
def test_split_ranges_cover_each_offset_once(ranges: list[WireRange], wanted: int) -> None:
    pieces = split_ranges(ranges, wanted)
    assert all(r.end > r.start for r in pieces)
    assert _covered(pieces) == {
        (r.topic, r.partition): list(range(r.start, r.end)) for r in ranges if r.end > r.start
    }
    total = sum(r.end - r.start for r in ranges)
    non_empty = sum(1 for r in ranges if r.end > r.start)
    if total >= wanted:
        # Spark's rounding can leave a piece or two short of the wish; never fewer than the
        # ranges themselves
        assert len(pieces) >= min(wanted, non_empty) and len(pieces) >= wanted - non_empty


def test_spark_examples() -> None:
    # KafkaOffsetRangeCalculatorSuite's cases, by their arithmetic
    one = [WireRange("t", 0, 1, 5)]
    assert split_ranges(one, None) == one
    assert split_ranges(one, 1) == one
    assert split_ranges(one, 3) == [
        WireRange("t", 0, 1, 2),
        WireRange("t", 0, 2, 3),
        WireRange("t", 0, 3, 5),
    ]
    # a small range stays whole; the big one takes the rest of the pieces
    skewed = [WireRange("t", 0, 1, 5), WireRange("t", 1, 1, 101)]
    assert split_ranges(skewed, 4) == [
        WireRange("t", 0, 1, 5),
        WireRange("t", 1, 1, 34),
        WireRange("t", 1, 34, 67),
        WireRange("t", 1, 67, 101),
    ]
    # empty ranges are dropped, with or without the option
    assert split_ranges([WireRange("t", 0, 7, 7)], 3) == []
    assert split_ranges([WireRange("t", 0, 7, 7), *one], None) == one


def test_min_partitions_must_be_positive() -> None:
    assert parse_min_partitions({}) is None
    assert parse_min_partitions({"minpartitions": "8"}) == 8
    with pytest.raises(OptionError, match="minPartitions"):
        parse_min_partitions({"minPartitions": "0"})
    with pytest.raises(OptionError, match="minPartitions"):
        parse_min_partitions({"minPartitions": "many"})
