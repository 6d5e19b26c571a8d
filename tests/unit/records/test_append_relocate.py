"""``AppendResult.relocated``: a validation done ahead (off the broker's event loop) moved to the
log end another append reached first. v2 keeps the base offset outside the CRC, so only bytes 0-8
of each batch change; magic 0/1 cannot move (compressed wrappers hold absolute inner offsets)."""

from __future__ import annotations

from kwire.records import Compression, build_batch, read_batches, validate_and_assign

NOW = 1_700_000_000_000


def test_v2_result_moves_to_a_new_log_end_with_valid_crcs() -> None:
    records = build_batch([(None, NOW, b"k", b"v%d" % i) for i in range(5)])
    ahead = validate_and_assign(records, next_offset=5, now_ms=NOW)
    moved = ahead.relocated(12)
    assert moved is not None
    direct = validate_and_assign(records, next_offset=12, now_ms=NOW)
    assert bytes(moved.records) == bytes(direct.records)
    assert (moved.first_offset, moved.last_offset) == (12, 16)
    assert moved.shallow_offset_of_max_timestamp == direct.shallow_offset_of_max_timestamp
    assert [b.base_offset for b in read_batches(moved.records)] == [12]  # CRC verified
    assert [bytes(b[:8]) for b in moved.batches] == [bytes(b[:8]) for b in direct.batches]
    assert ahead.relocated(5) is ahead  # nothing to move


def test_magic_1_results_are_validated_again() -> None:
    from kwire.records import TopicConfig

    records = build_batch([(None, NOW, None, b"v")] * 2, 1, Compression.GZIP)
    config = TopicConfig(message_format=1)
    ahead = validate_and_assign(records, next_offset=0, now_ms=NOW, config=config)
    assert ahead.relocated(3) is None


def test_a_compressed_v2_result_moves_too() -> None:
    records = build_batch([(None, NOW, None, b"x" * 100)] * 4, 2, Compression.GZIP)
    moved = validate_and_assign(records, next_offset=0, now_ms=NOW).relocated(7)
    assert moved is not None
    assert [(b.base_offset, b.last_offset) for b in read_batches(moved.records)] == [(7, 10)]
