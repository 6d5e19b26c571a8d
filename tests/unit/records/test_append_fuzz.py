"""Hostile input to the append path and to conversion: only typed errors come out.

``validate_and_assign`` must answer every input with a result or an ``AppendError`` (the error a
broker returns); ``convert`` with a result or a ``KwireError``. Random bytes, bit flips anywhere
in valid producer batches of every magic and codec, and truncations are tried.
"""

from __future__ import annotations

import contextlib

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kwire.errors import AppendError, KwireError
from kwire.records import BatchBuilder, Compression, TopicConfig, read_batches, validate_and_assign
from kwire.records._convert import convert

NOW = 1_700_000_000_000

SEEDS: list[tuple[int, bytes]] = []
for _magic, _codecs in ((0, (0, 1, 2, 3)), (1, (0, 1, 2, 3)), (2, (0, 1, 2, 3, 4))):
    for _codec in _codecs:
        _b = BatchBuilder(_magic, _codec)
        for _i in range(4):
            _b.append(
                timestamp=NOW + _i if _magic else -1,
                key=None if _i == 1 else b"key%d" % _i,
                value=b"value" * _i,
                headers=[("h", b"x")] if _magic == 2 and _i % 2 else (),
            )
        SEEDS.append((_magic, _b.build()))

CONFIGS = [
    TopicConfig(),
    TopicConfig(message_format=1),
    TopicConfig(message_format=0, compression_type="gzip"),
    TopicConfig(compacted=True, timestamp_type=1),
    TopicConfig(compression_type="lz4", timestamp_before_max_ms=10, timestamp_after_max_ms=10),
]


def append_only_typed(data: bytes, cfg: TopicConfig) -> None:
    try:
        result = validate_and_assign(data, next_offset=9, now_ms=NOW, config=cfg)
    except AppendError:
        return
    # Whatever is accepted must read back cleanly (CRCs included).
    for batch in read_batches(result.records):
        for _ in batch.records():
            pass


@given(st.binary(max_size=300), st.sampled_from(CONFIGS))
@settings(max_examples=300, deadline=None)
def test_random_bytes(data: bytes, cfg: TopicConfig) -> None:
    append_only_typed(data, cfg)


@given(st.data(), st.sampled_from(CONFIGS))
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_bit_flips_and_truncations(data: st.DataObject, cfg: TopicConfig) -> None:
    _, seed = data.draw(st.sampled_from(SEEDS))
    raw = bytearray(seed)
    for _ in range(data.draw(st.integers(1, 3))):
        bit = data.draw(st.integers(0, len(raw) * 8 - 1))
        raw[bit // 8] ^= 1 << (bit % 8)
    cut = data.draw(st.integers(0, len(raw)))
    append_only_typed(bytes(raw[:cut]), cfg)
    append_only_typed(bytes(raw), cfg)


@given(st.data())
@settings(max_examples=300, deadline=None)
def test_convert_only_raises_typed_errors(data: st.DataObject) -> None:
    _, seed = data.draw(st.sampled_from(SEEDS))
    raw = bytearray(seed)
    bit = data.draw(st.integers(0, len(raw) * 8 - 1))
    raw[bit // 8] ^= 1 << (bit % 8)
    to_magic = data.draw(st.sampled_from([0, 1, 2]))
    codec = data.draw(st.sampled_from([None, Compression.GZIP]))
    with contextlib.suppress(KwireError):
        convert(bytes(raw), to_magic, compression=codec)


def test_every_seed_is_accepted_somewhere() -> None:
    # The fuzz seeds are valid producer batches: each is accepted by a topic of its own magic.
    for magic, seed in SEEDS:
        cfg = TopicConfig(message_format=magic)
        result = validate_and_assign(seed, next_offset=9, now_ms=NOW, config=cfg)
        assert result.first_offset == 9 and result.record_count == 4
