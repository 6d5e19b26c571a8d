"""A fast verdict on the records of one v2 batch, for the append path's in-place case.

Approach: ``LogValidator`` walks every record of a producer batch even when it keeps the batch's
bytes (count, offsets, timestamps, keys). Doing that with one Python ``Record`` per record costs
far more than patching the header, so this module walks the (decompressed) record bytes in one
compiled loop (numba over a numpy view, no copy) and answers one question: is every record well
formed, with offset deltas 0, 1, 2, ..., timestamps inside the bounds and keys where required? If
yes it also returns the largest timestamp. Any other answer (including "numba is not installed")
sends the caller to the reference path, the per-record walk in ``_append``, which then says
exactly what is wrong. The walk accepts a subset of what the reference decoder accepts, so the
fast path never accepts bytes the reference would reject.

The kernel is plain Python in the subset numba compiles; it is compiled on first use (and cached
on disk). Tests run the same function interpreted to compare it with the reference path.
``walk_v2_records`` is the same walk written for the interpreter (what a process without numba
uses): the kernel's answer, several times faster than interpreting the kernel or building the
reference path's ``Record`` objects; tests compare it with the kernel's source.
"""

from __future__ import annotations

import os
import threading
from typing import Any, Final

__all__ = ["OK", "scan_v2_records", "scanner", "walk_v2_records"]

OK: Final = 0
_BAD: Final = 1  # any malformed or out-of-rule record: the reference path will say which
_INT64_MAX: Final = (1 << 63) - 1
_INT64_MIN: Final = -(1 << 63)


def _varint(buf: Any, p: int, end: int, max_bytes: int) -> tuple[int, int, bool]:
    """Zigzag varint at ``p``: (value, next position, ok)."""
    raw = 0
    shift = 0
    i = 0
    while True:
        if p >= end or i >= max_bytes:
            return 0, p, False
        b = int(buf[p])
        p += 1
        i += 1
        raw |= (b & 0x7F) << shift
        if b < 0x80:
            break
        shift += 7
    if max_bytes == 5 and raw > 0xFFFFFFFF:
        return 0, p, False
    # logical shift right: under numba raw is an int64, and an arithmetic shift would smear the
    # sign bit of a 10-byte varlong into the value
    return ((raw >> 1) & 0x7FFFFFFFFFFFFFFF) ^ -(raw & 1), p, True


def scan_v2_records(
    buf: Any,
    start: int,
    end: int,
    count: int,
    base_ts: int,
    check_ts: bool,
    ts_low: int,
    ts_high: int,
    need_key: bool,
) -> tuple[int, int, bool]:
    """Walk ``count`` records in ``buf[start:end]``: (status, max timestamp, offsets contiguous).

    ``status`` is ``OK`` when every record is well formed (and, with ``check_ts``, has a timestamp
    of -1 or inside ``[ts_low, ts_high]``; with ``need_key``, a key), with nothing left over.
    """
    p = start
    max_ts = -1
    contiguous = True
    for i in range(count):
        length, p, ok = _varint(buf, p, end, 5)
        if not ok or length < 6 or length > end - p:
            return _BAD, max_ts, contiguous
        rec_end = p + length
        p += 1  # attributes (unused)
        ts_delta, p, ok = _varint(buf, p, rec_end, 10)
        if not ok:
            return _BAD, max_ts, contiguous
        off_delta, p, ok = _varint(buf, p, rec_end, 5)
        if not ok:
            return _BAD, max_ts, contiguous
        if off_delta != i:
            contiguous = False
        key_len, p, ok = _varint(buf, p, rec_end, 5)
        if not ok or key_len < -1 or key_len > rec_end - p:
            return _BAD, max_ts, contiguous
        if key_len == -1 and need_key:
            return _BAD, max_ts, contiguous
        if key_len > 0:
            p += key_len
        value_len, p, ok = _varint(buf, p, rec_end, 5)
        if not ok or value_len < -1 or value_len > rec_end - p:
            return _BAD, max_ts, contiguous
        if value_len > 0:
            p += value_len
        n_headers, p, ok = _varint(buf, p, rec_end, 5)
        if not ok or n_headers < 0 or n_headers > rec_end - p:
            return _BAD, max_ts, contiguous
        for _ in range(n_headers):
            hk, p, ok = _varint(buf, p, rec_end, 5)
            if not ok or hk < 0 or hk > rec_end - p:
                return _BAD, max_ts, contiguous
            p += hk
            hv, p, ok = _varint(buf, p, rec_end, 5)
            if not ok or hv < -1 or hv > rec_end - p:
                return _BAD, max_ts, contiguous
            if hv > 0:
                p += hv
        if p != rec_end:
            return _BAD, max_ts, contiguous
        if (ts_delta > 0 and base_ts > _INT64_MAX - ts_delta) or (
            ts_delta < 0 and base_ts < _INT64_MIN - ts_delta
        ):
            return _BAD, max_ts, contiguous
        ts = base_ts + ts_delta
        if check_ts and ts != -1 and (ts < ts_low or ts > ts_high):
            return _BAD, max_ts, contiguous
        if ts > max_ts:
            max_ts = ts
    if p != end:
        return _BAD, max_ts, contiguous
    return OK, max_ts, contiguous


#: ``_varint`` as plain Python, for ``walk_v2_records`` (loading numba rebinds ``_varint``).
_py_varint: Final = _varint

#: Zigzag decoding of every raw value of a one- or two-byte varint (below 2**14), by lookup.
_UNZIGZAG: Final = [(raw >> 1) ^ -(raw & 1) for raw in range(1 << 14)]


def walk_v2_records(
    data: bytes | bytearray | memoryview,
    start: int,
    end: int,
    count: int,
    base_ts: int,
    check_ts: bool,
    ts_low: int,
    ts_high: int,
    need_key: bool,
) -> tuple[int, int, bool]:
    """``scan_v2_records`` for the interpreter: the same answer, several times faster there.

    The records are walked without a ``Record`` object or a slice per field: one- and two-byte
    varints (almost every field) are decoded inline through a lookup table, longer ones by
    ``_varint`` with the same limits as the kernel. A field read past its record (or a key or
    value running past it) leaves the position past the record's end, which the final check of
    each record turns into ``_BAD``, as the kernel's per-field bounds do; a read past ``data``
    (IndexError) is ``_BAD`` too. Tests compare it with ``scan_v2_records`` and the reference.
    """
    p = start
    max_ts = -1
    contiguous = True
    unzz = _UNZIGZAG
    varint = _py_varint
    lo = _INT64_MAX  # the smallest and largest timestamp deltas
    hi = _INT64_MIN
    try:
        for i in range(count):
            b = data[p]
            if b < 0x80:
                length = unzz[b]
                p += 1
            else:
                c = data[p + 1]
                if c < 0x80:
                    length = unzz[(b & 0x7F) | (c << 7)]
                    p += 2
                else:
                    length, p, ok = varint(data, p, end, 5)
                    if not ok:
                        return _BAD, max_ts, contiguous
            rec_end = p + length
            if length < 6 or rec_end > end:
                return _BAD, max_ts, contiguous
            # timestamp delta (after the unused attributes byte): up to 10 bytes
            b = data[p + 1]
            if b < 0x80:
                ts_delta = unzz[b]
                p += 2
            else:
                c = data[p + 2]
                if c < 0x80:
                    ts_delta = unzz[(b & 0x7F) | (c << 7)]
                    p += 3
                else:
                    ts_delta, p, ok = varint(data, p + 1, rec_end, 10)
                    if not ok:
                        return _BAD, max_ts, contiguous
            # offset delta: i is the one-byte varint 2i (no decoding needed to compare)
            b = data[p]
            if b < 0x80:
                if b != i + i:
                    contiguous = False
                p += 1
            else:
                off_delta, p, ok = varint(data, p, rec_end, 5)
                if not ok:
                    return _BAD, max_ts, contiguous
                if off_delta != i:
                    contiguous = False
            # key
            b = data[p]
            if b < 0x80:
                n = unzz[b]
                p += 1
            else:
                n, p, ok = varint(data, p, rec_end, 5)
                if not ok:
                    return _BAD, max_ts, contiguous
            if n > 0:
                p += n
            elif n == -1:
                if need_key:
                    return _BAD, max_ts, contiguous
            elif n < -1:
                return _BAD, max_ts, contiguous
            # value
            b = data[p]
            if b < 0x80:
                n = unzz[b]
                p += 1
            else:
                c = data[p + 1]
                if c < 0x80:
                    n = unzz[(b & 0x7F) | (c << 7)]
                    p += 2
                else:
                    n, p, ok = varint(data, p, rec_end, 5)
                    if not ok:
                        return _BAD, max_ts, contiguous
            if n > 0:
                p += n
            elif n < -1:
                return _BAD, max_ts, contiguous
            # headers: usually none (one zero byte)
            if data[p] == 0:
                p += 1
            else:
                n, p, ok = varint(data, p, rec_end, 5)
                if not ok or n < 0 or n > rec_end - p:
                    return _BAD, max_ts, contiguous
                for _ in range(n):
                    hk, p, ok = varint(data, p, rec_end, 5)
                    if not ok or hk < 0 or hk > rec_end - p:
                        return _BAD, max_ts, contiguous
                    p += hk
                    hv, p, ok = varint(data, p, rec_end, 5)
                    if not ok or hv < -1 or hv > rec_end - p:
                        return _BAD, max_ts, contiguous
                    if hv > 0:
                        p += hv
            if p != rec_end:
                return _BAD, max_ts, contiguous
            if ts_delta > hi:
                hi = ts_delta
            if ts_delta < lo:
                lo = ts_delta
    except IndexError:
        return _BAD, max_ts, contiguous
    if p != end:
        return _BAD, max_ts, contiguous
    if not count:
        return OK, max_ts, contiguous
    # The timestamps, checked once from the extreme deltas (a timestamp grows with its delta):
    # overflow, the bounds, and the max. Only a timestamp of -1 (none) is exempt from the bounds:
    # when the extremes miss them, the kernel's record-by-record rule decides.
    low_ts, high_ts = base_ts + lo, base_ts + hi
    if low_ts < _INT64_MIN or high_ts > _INT64_MAX:
        return _BAD, max_ts, contiguous
    if check_ts and (low_ts < ts_low or high_ts > ts_high):
        return _timestamps_by_record(data, start, count, base_ts, ts_low, ts_high, contiguous)
    return OK, max(high_ts, max_ts), contiguous


def _timestamps_by_record(
    data: bytes | bytearray | memoryview,
    start: int,
    count: int,
    base_ts: int,
    ts_low: int,
    ts_high: int,
    contiguous: bool,
) -> tuple[int, int, bool]:
    """``scan_v2_records``'s timestamp rule, record by record, over records already found well
    formed: every timestamp -1 or inside ``[ts_low, ts_high]``; the max timestamp."""
    p = start
    max_ts = -1
    varint = _py_varint
    end = len(data)
    for _ in range(count):
        length, p, _ok = varint(data, p, end, 5)
        rec_end = p + length
        ts_delta, _q, _ok = varint(data, p + 1, rec_end, 10)
        ts = base_ts + ts_delta
        if ts != -1 and (ts < ts_low or ts > ts_high):
            return _BAD, max_ts, contiguous
        if ts > max_ts:
            max_ts = ts
        p = rec_end
    return OK, max_ts, contiguous


_SCANNER: Any = None
_TRIED = False
_LOADING = threading.Lock()
_BACKGROUND: threading.Thread | None = None


def scanner_if_ready() -> Any:
    """The compiled pair if it is loaded, else None after starting to load it in a background
    thread (once): a caller that must not stall (an event loop serving other connections) keeps
    to the reference walk meanwhile."""
    global _BACKGROUND
    if _TRIED:
        return _SCANNER
    with _LOADING:
        if _BACKGROUND is None:
            _BACKGROUND = threading.Thread(target=scanner, name="kwire-numba-load", daemon=True)
            _BACKGROUND.start()
    return None


def scanner() -> Any:
    """The compiled ``(kernel, numpy)`` pair, or ``None`` (no numba/numpy, or disabled).

    ``KWIRE_DISABLE_NUMBA`` set in the environment disables it, as for the columnar decoder.
    Compiling replaces this module's ``_varint`` by its compiled self (numba code can only call
    compiled code); the interpreted ``scan_v2_records`` keeps working on top of it.
    """
    global _SCANNER, _TRIED
    if _TRIED:
        return _SCANNER
    with _LOADING_SCANNER:
        if not _TRIED:
            _SCANNER = _load_scanner()
            _TRIED = True
    return _SCANNER


_LOADING_SCANNER = threading.Lock()


def _load_scanner() -> Any:
    global _varint
    if os.environ.get("KWIRE_DISABLE_NUMBA"):
        return None
    try:
        import numba
        import numpy as np
    except ImportError:
        return None  # the reference path is complete on its own; nothing to warn about
    if not os.environ.get("NUMBA_CACHE_DIR"):
        # The columnar decoder's cache location (writable even when site-packages is not).
        from kwire.records._columnar_kernels import numba_cache_dir

        try:
            os.makedirs(numba_cache_dir(), exist_ok=True)
            setattr(numba.config, "CACHE_DIR", numba_cache_dir())  # noqa: B010 (untyped module)
        except OSError:
            pass
    compiled_varint = numba.njit(cache=True, nogil=True)(_varint)
    _varint = compiled_varint
    kernel = numba.njit(cache=True, nogil=True)(scan_v2_records)
    # compile (or load from the disk cache) now, not in the first caller's request
    kernel(np.frombuffer(b"", np.uint8), 0, 0, 0, 0, False, 0, 0, False)  # as batches come
    return kernel, np
