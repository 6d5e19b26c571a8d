"""The fast record walks of the append path agree with the per-record reference walk.

``validate_and_assign(..., compiled=False)`` is the reference (one ``Record`` per record). The
compiled walk and the same walk interpreted (``compiled="python"``, ``walk_v2_records``; both in
``kwire.records._append_scan``) may only *accept* what the reference accepts, with the same
result; when they decline, the reference decides. Hypothesis drives them over batches with null
keys, headers, timestamps on both sides of the bounds and offset gaps, and over bit flips.
"""

from __future__ import annotations

import os
import struct

import crc32c
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kwire.errors import AppendError
from kwire.records import (
    AppendResult,
    BatchBuilder,
    Compression,
    TopicConfig,
    read_batches,
    validate_and_assign,
)
from kwire.records._append_scan import OK, scan_v2_records, scanner, walk_v2_records

NOW = 1_700_000_000_000

record_st = st.tuples(
    st.integers(-3, 3),  # timestamp offset from NOW, in thousands of ms
    st.one_of(st.none(), st.binary(max_size=6)),
    st.one_of(st.none(), st.binary(max_size=6)),
    st.lists(
        st.tuples(st.text(max_size=3), st.one_of(st.none(), st.binary(max_size=3))), max_size=2
    ),
)


def outcome(data: bytes, cfg: TopicConfig, compiled: bool | str) -> tuple[object, ...]:
    try:
        r: AppendResult = validate_and_assign(
            data,
            next_offset=77,
            now_ms=NOW,
            config=cfg,
            compiled=compiled,  # type: ignore[arg-type]
        )
    except AppendError as exc:
        return ("error", exc.error_name, tuple((e.index, e.message) for e in exc.record_errors))
    return (
        "ok",
        bytes(r.records),
        r.first_offset,
        r.last_offset,
        r.max_timestamp,
        r.shallow_offset_of_max_timestamp,
        r.in_place,
        r.rebuild_reason,
    )


def test_the_compiled_walk_is_available() -> None:
    # numba is part of the dev environment: the fast path must really be exercised here
    # (unless a developer switched it off, as for the columnar decoder).
    if os.environ.get("KWIRE_DISABLE_NUMBA"):
        assert scanner() is None
    else:
        assert scanner() is not None


@given(
    st.lists(record_st, min_size=1, max_size=12),
    st.sampled_from([0, 1, 3, 4]),
    st.booleans(),
    st.sampled_from([(2**62, 2**62), (1500, 500), (0, 0)]),
    st.booleans(),
)
@settings(max_examples=120, deadline=None)
def test_compiled_and_reference_walks_agree(
    recs: list[tuple[int, bytes | None, bytes | None, list[tuple[str, bytes | None]]]],
    codec: int,
    compacted: bool,
    bounds: tuple[int, int],
    log_append: bool,
) -> None:
    b = BatchBuilder(2, codec)
    for ts, key, value, headers in recs:
        b.append(timestamp=NOW + 1000 * ts, key=key, value=value, headers=headers)
    data = b.build()
    cfg = TopicConfig(
        compacted=compacted,
        timestamp_before_max_ms=bounds[0],
        timestamp_after_max_ms=bounds[1],
        timestamp_type=int(log_append),
    )
    reference = outcome(data, cfg, False)
    assert outcome(data, cfg, True) == reference
    assert outcome(data, cfg, "python") == reference


@given(st.data())
@settings(max_examples=150, deadline=None)
def test_bit_flips_in_records_give_the_same_verdict(data: st.DataObject) -> None:
    b = BatchBuilder(2)
    for i in range(4):
        b.append(
            timestamp=NOW + i,
            key=b"k%d" % i if i != 2 else None,
            value=b"v" * i,
            headers=[("h", b"x")] if i % 2 else (),
        )
    raw = bytearray(b.build())
    bit = data.draw(st.integers(61 * 8, len(raw) * 8 - 1))
    raw[bit // 8] ^= 1 << (bit % 8)
    struct.pack_into(">I", raw, 17, crc32c.crc32c(bytes(raw[21:])))  # a producer's own CRC
    cfg = TopicConfig(compacted=data.draw(st.booleans()))
    reference = outcome(bytes(raw), cfg, False)
    assert outcome(bytes(raw), cfg, True) == reference
    assert outcome(bytes(raw), cfg, "python") == reference


def _records_bytes(codec: int = 0) -> tuple[bytes, int]:
    """The (decompressed) record bytes of a small batch with keys, null keys, headers and a
    large value (two-byte varints), and its base timestamp."""
    b = BatchBuilder(2, codec)
    for i in range(5):
        b.append(
            timestamp=NOW + 7 * i - 3,
            key=b"k%d" % i if i != 2 else None,
            value=b"v" * (i * 60),
            headers=[("h", b"x"), ("g", None)] if i % 2 else (),
        )
    (batch,) = read_batches(b.build())
    view, _ = batch.records_view()
    return bytes(view), batch.base_timestamp


@given(st.data())
@settings(max_examples=300, deadline=None)
def test_interpreted_walk_gives_the_kernels_verdict_on_mutated_records(
    data: st.DataObject,
) -> None:
    """``walk_v2_records`` against ``scan_v2_records`` (the kernel's own source) on record bytes
    with bytes changed, cut or inserted, under every check the callers ask for."""
    raw, base_ts = _records_bytes()
    buf = bytearray(raw)
    for _ in range(data.draw(st.integers(1, 3))):
        kind = data.draw(st.sampled_from(["set", "cut", "insert"]))
        at = data.draw(st.integers(0, len(buf) - 1))
        if kind == "set":
            buf[at] = data.draw(st.sampled_from([0, 1, 2, 0x7F, 0x80, 0xFF, 0xFE, 12]))
        elif kind == "cut":
            del buf[at : at + data.draw(st.integers(1, 4))]
        else:
            buf[at:at] = bytes(data.draw(st.lists(st.integers(0, 255), min_size=1, max_size=3)))
    count = data.draw(st.sampled_from([5, 5, 4, 6, 0]))
    check_ts = data.draw(st.booleans())
    low, high = data.draw(st.sampled_from([(NOW - 3, NOW + 25), (NOW, NOW + 10), (0, 0)]))
    need_key = data.draw(st.booleans())
    args = (0, len(buf), count, base_ts, check_ts, low, high, need_key)
    want = scan_v2_records(np.frombuffer(bytes(buf), np.uint8), *args)
    got = walk_v2_records(bytes(buf), *args)
    assert got[0] == want[0]
    if want[0] == OK:
        assert got == want


def test_interpreted_walk_on_garbage_and_known_records() -> None:
    raw, base_ts = _records_bytes()
    args = (0, len(raw), 5, base_ts, True, NOW - 3, NOW + 25, False)
    assert walk_v2_records(raw, *args) == (OK, NOW + 25, True)
    assert walk_v2_records(memoryview(raw), *args) == (OK, NOW + 25, True)
    assert walk_v2_records(raw, *args[:-1], True)[0] != OK  # record 2 has no key
    rng = np.random.default_rng(9)
    for size in (0, 1, 7, 40, 300):
        for _ in range(40):
            buf = rng.integers(0, 256, size, dtype=np.uint8)
            count = int(rng.integers(0, 5))
            gargs = (0, size, count, NOW, True, NOW - 10, NOW + 10, bool(rng.integers(0, 2)))
            want = scan_v2_records(buf, *gargs)
            got = walk_v2_records(buf.tobytes(), *gargs)
            assert got[0] == want[0] and (want[0] != OK or got == want)


@pytest.mark.skipif(bool(os.environ.get("KWIRE_DISABLE_NUMBA")), reason="numba switched off")
def test_interpreted_and_compiled_kernels_agree_on_garbage() -> None:
    compiled = scanner()
    assert compiled is not None
    kernel, _ = compiled
    rng = np.random.default_rng(5)
    for size in (0, 1, 7, 40, 300):
        for _ in range(30):
            buf = rng.integers(0, 256, size, dtype=np.uint8)
            count = int(rng.integers(0, 5))
            args = (buf, 0, size, count, NOW, True, NOW - 10, NOW + 10, bool(rng.integers(0, 2)))
            assert kernel(*args) == scan_v2_records(*args)


@pytest.mark.skipif(bool(os.environ.get("KWIRE_DISABLE_NUMBA")), reason="numba switched off")
def test_compiled_kernel_reads_timestamp_deltas_past_2_to_the_62() -> None:
    """A 10-byte zigzag varlong has bit 63 set: the compiled kernel (int64) must shift it as an
    unsigned value, as Python's unbounded ints do."""
    compiled = scanner()
    assert compiled is not None
    kernel, _ = compiled
    for delta in (2**62 + 7, -(2**62) - 9, 2**63 - 1, -(2**63)):
        b = BatchBuilder(2)
        b.append(offset=0, timestamp=0, key=b"k", value=b"v")
        (batch,) = read_batches(b.build())
        view, _ = batch.records_view()
        record = bytearray(view)
        # rewrite the record's timestamp delta (after length, attributes) as ``delta``
        raw = (delta << 1) ^ (delta >> 63)
        varlong = bytearray()
        while True:
            if raw < 0x80:
                varlong.append(raw)
                break
            varlong.append((raw & 0x7F) | 0x80)
            raw >>= 7
        body = bytes(record[1:2]) + bytes(varlong) + bytes(record[3:])
        arr = np.frombuffer(bytes([len(body) << 1]) + body, dtype=np.uint8)
        args = (arr, 0, len(arr), 1, 0, False, 0, 0, True)
        assert kernel(*args) == scan_v2_records(*args)
        assert scan_v2_records(*args)[:2] == (OK, max(delta, -1))  # max timestamp starts at -1


def test_kernel_facts_on_a_known_batch() -> None:
    b = BatchBuilder(2)
    for off, ts in ((0, NOW - 5), (1, NOW + 3), (3, NOW)):
        b.append(offset=off, timestamp=ts, key=b"k", value=b"v")
    (batch,) = read_batches(b.build())
    view, _ = batch.records_view()
    arr = np.frombuffer(view, dtype=np.uint8)
    status, max_ts, contiguous = scan_v2_records(
        arr, 0, len(arr), 3, batch.base_timestamp, False, 0, 0, True
    )
    assert (status, max_ts, contiguous) == (OK, NOW + 3, False)
    assert scan_v2_records(arr, 0, len(arr), 2, batch.base_timestamp, False, 0, 0, True)[0] != OK
    assert (
        scan_v2_records(arr, 0, len(arr), 3, batch.base_timestamp, True, NOW - 4, NOW + 9, False)[0]
        != OK
    )


@pytest.mark.parametrize("codec", [Compression.GZIP, Compression.LZ4])
def test_compiled_path_keeps_the_producer_bytes(codec: int) -> None:
    b = BatchBuilder(2, codec)
    for i in range(50):
        b.append(timestamp=NOW - i, key=b"key", value=b"value %d" % i)
    data = b.build()
    fast = validate_and_assign(data, next_offset=1, now_ms=NOW)
    assert fast.in_place and bytes(fast.records)[61:] == data[61:]
    assert fast.max_timestamp == NOW


@pytest.mark.skipif(bool(os.environ.get("KWIRE_DISABLE_NUMBA")), reason="numba switched off")
def test_auto_mode_never_waits_for_the_compiled_walk(monkeypatch: pytest.MonkeyPatch) -> None:
    """``compiled="auto"`` (the live log's choice): small batches never load numba; the first
    batch of many records starts loading it in the background and is validated by the reference
    walk meanwhile; once loaded, such batches take the compiled walk; every result is the same."""
    import threading

    from kwire.records import _append_scan as scan
    from kwire.records._append_rules import AUTO_COMPILED_MIN_RECORDS

    real = scanner()
    assert real is not None
    kernel_calls: list[int] = []

    def counting_kernel(*args: object) -> object:
        kernel_calls.append(1)
        return real[0](*args)

    release = threading.Event()

    def slow_scanner() -> object:  # the load, held until the test lets it finish
        assert release.wait(30)
        scan._SCANNER = (counting_kernel, real[1])
        scan._TRIED = True
        return scan._SCANNER

    monkeypatch.setattr(scan, "_SCANNER", None)
    monkeypatch.setattr(scan, "_TRIED", False)
    monkeypatch.setattr(scan, "_BACKGROUND", None)
    monkeypatch.setattr(scan, "scanner", slow_scanner)

    def batch(records: int) -> bytes:
        b = BatchBuilder(2, Compression.LZ4)
        for i in range(records):
            b.append(timestamp=NOW - i, key=b"k", value=b"v" * 100)
        return b.build()

    small, big = batch(AUTO_COMPILED_MIN_RECORDS - 1), batch(AUTO_COMPILED_MIN_RECORDS * 2)
    for data in (small, big):
        reference = validate_and_assign(data, next_offset=5, now_ms=NOW, compiled=False)
        got = validate_and_assign(data, next_offset=5, now_ms=NOW, compiled="auto")
        assert bytes(got.records) == bytes(reference.records)
        assert got.max_timestamp == reference.max_timestamp == NOW
        if data is small:
            assert scan._BACKGROUND is None  # nothing started for a small batch
    loader = scan._BACKGROUND
    assert loader is not None and loader.is_alive()  # started, and not waited for
    assert kernel_calls == []
    release.set()
    loader.join(30)
    again = validate_and_assign(big, next_offset=5, now_ms=NOW, compiled="auto")
    assert kernel_calls == [1]  # the compiled walk, now that it is loaded
    assert bytes(again.records) == bytes(
        validate_and_assign(big, next_offset=5, now_ms=NOW, compiled=False).records
    )
    validate_and_assign(small, next_offset=5, now_ms=NOW, compiled="auto")
    assert kernel_calls == [1]  # small batches keep to the reference walk


@pytest.mark.parametrize(
    ("stamps", "ok"),
    [
        ((NOW, -1, NOW + 5), True),  # -1 (no timestamp) is exempt from the bounds
        ((NOW, 0, NOW + 5), False),
        ((NOW, NOW + 11), False),
        ((NOW - 11, NOW), False),
        ((-1, -1), True),
    ],
)
def test_interpreted_walk_checks_timestamps_as_the_kernel(
    stamps: tuple[int, ...], ok: bool
) -> None:
    b = BatchBuilder(2)
    for ts in stamps:
        b.append(timestamp=ts, key=b"k", value=b"v")
    (batch,) = read_batches(b.build())
    view, _ = batch.records_view()
    raw = bytes(view)
    for check_ts in (True, False):
        args = (0, len(raw), len(stamps), batch.base_timestamp, check_ts, NOW - 10, NOW + 10, True)
        want = scan_v2_records(np.frombuffer(raw, np.uint8), *args)
        assert walk_v2_records(raw, *args) == want
        assert (want[0] == OK) == (ok or not check_ts)


def test_python_mode_takes_the_interpreted_walk(monkeypatch: pytest.MonkeyPatch) -> None:
    """``compiled="python"`` (the live log's default) vouches for a valid batch with
    ``walk_v2_records`` and gives the reference's result; a refused batch still gets the
    reference's errors."""
    from kwire.records import _append_rules

    calls: list[int] = []

    def counting(*args: object) -> tuple[int, int, bool]:
        calls.append(1)
        return walk_v2_records(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(_append_rules, "walk_v2_records", counting)
    b = BatchBuilder(2, Compression.LZ4)
    for i in range(20):
        b.append(timestamp=NOW - i, key=b"k", value=b"v" * 300)
    data = b.build()
    cfg = TopicConfig(compacted=True)
    assert outcome(data, cfg, "python") == outcome(data, cfg, False)
    assert calls == [1]
    keyless = BatchBuilder(2, Compression.LZ4)
    keyless.append(timestamp=NOW, key=None, value=b"v")
    got = outcome(keyless.build(), cfg, "python")
    assert got == outcome(keyless.build(), cfg, False)
    assert got[:2] == ("error", "INVALID_RECORD")


def test_python_mode_never_imports_numba() -> None:
    """The live log's walk costs no numba import (~110 MB): checked in a fresh interpreter."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from kwire.records import BatchBuilder, Compression, validate_and_assign\n"
        "b = BatchBuilder(2, Compression.LZ4)\n"
        "for i in range(50):\n"
        "    b.append(timestamp=1, key=b'k', value=b'v')\n"
        "r = validate_and_assign(b.build(), next_offset=0, now_ms=1, compiled='python')\n"
        "assert r.in_place and r.last_offset == 49\n"
        "assert 'numba' not in sys.modules, 'numba was imported'\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
