"""The byte-walking kernels of the columnar decoder (kwire.records._columnar).

Approach: every function here is plain Python over numpy ``uint8`` arrays and ``int64`` scalars,
written in the subset numba compiles. When numba imports, the module replaces each function with
``numba.njit(cache=True)`` of itself (machine code, cached on disk); when it does not, the same
functions run as ordinary Python (slow, but the same logic: style item 16's fallback).

Safety: numba does not bounds-check array indexing, so every read is checked against the end of
the region being parsed *before* it happens and every write against the size of the output it
goes to. Kernels never raise: they return an error code and the byte position it refers to, and
the Python layer turns that into ``CorruptRecordError``. Output sizes come from a first pass that
walks the real bytes (``fill=False``), never from counts the input claims.

Varints follow Kafka's ``ByteUtils``: zigzag, at most 5 bytes for 32-bit values and 10 bytes for
64-bit ones; bits that do not fit the width are an error (as in ``kwire._wire``).
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Any, Final

import numpy as np

__all__ = [
    "BT_ATTRS",
    "BT_BASE_OFFSET",
    "BT_BASE_SEQ",
    "BT_BASE_TS",
    "BT_COUNT",
    "BT_CRC",
    "BT_LAST_DELTA",
    "BT_LEADER_EPOCH",
    "BT_MAGIC",
    "BT_MAX_TS",
    "BT_NFIELDS",
    "BT_PID",
    "BT_POS",
    "BT_PRODUCER_EPOCH",
    "BT_SIZE",
    "ENGINE",
    "ERROR_MESSAGES",
    "KIND_LEGACY",
    "KIND_V2",
    "PY_LEGACY_CRC_RANGES",
    "PY_SCAN_BATCHES",
    "PY_WALK_RECORDS",
    "SC_BASE_OFFSET",
    "SC_BASE_TS",
    "SC_COUNT",
    "SC_END",
    "SC_INNER",
    "SC_KIND",
    "SC_LOG_APPEND",
    "SC_MAX_TS",
    "SC_NFIELDS",
    "SC_RELATIVE",
    "SC_SRC",
    "SC_START",
    "TS_NULL",
    "T_HDR_KEY_BYTES",
    "T_HDR_VALUE_BYTES",
    "T_HEADERS",
    "T_KEY_BYTES",
    "T_NFIELDS",
    "T_RECORDS",
    "T_VALUE_BYTES",
    "legacy_crc_ranges",
    "numba_cache_dir",
    "scan_batches",
    "walk_records",
]

# --- error codes (kernels return these; ERROR_MESSAGES turns them into words) ------------------
E_OK: Final = 0
E_TRUNCATED: Final = 1  # batch framing runs past the end of the buffer
E_BATCH_SIZE: Final = 2  # batch length below the minimum for its magic
E_MAGIC: Final = 3  # magic byte not 0, 1 or 2
E_VARINT_TRUNC: Final = 4
E_VARINT_LONG: Final = 5
E_RECORD_LENGTH: Final = 6
E_RECORD_OVERRUN: Final = 7  # a field runs past the record's declared length
E_RECORD_SIZE: Final = 8  # fields do not fill the record's declared length exactly
E_KEY_LENGTH: Final = 9
E_VALUE_LENGTH: Final = 10
E_HEADER_COUNT: Final = 11
E_HEADER_KEY_LENGTH: Final = 12
E_HEADER_VALUE_LENGTH: Final = 13
E_TOO_FEW_RECORDS: Final = 14
E_TRAILING_BYTES: Final = 15
E_RECORD_COUNT: Final = 17  # negative record count in the header
E_OUTPUT: Final = 18  # second pass disagrees with the first (the buffer changed under us)
E_LEGACY_TRUNCATED: Final = 19
E_LEGACY_SIZE: Final = 20
E_LEGACY_NESTED: Final = 21
E_LEGACY_EMPTY: Final = 22
E_LEGACY_WRAPPER_OFFSET: Final = 23

ERROR_MESSAGES: Final[dict[int, str]] = {
    E_TRUNCATED: "truncated batch: its length runs past the end of the buffer",
    E_BATCH_SIZE: "batch length is smaller than the minimum for its magic",
    E_MAGIC: "unknown magic byte",
    E_VARINT_TRUNC: "truncated varint",
    E_VARINT_LONG: "varint too long or out of range",
    E_RECORD_LENGTH: "record length is negative or runs past the records section",
    E_RECORD_OVERRUN: "record fields run past the record length",
    E_RECORD_SIZE: "record fields do not fill the record length exactly",
    E_KEY_LENGTH: "invalid record key length",
    E_VALUE_LENGTH: "invalid record value length",
    E_HEADER_COUNT: "invalid record header count",
    E_HEADER_KEY_LENGTH: "invalid header key length",
    E_HEADER_VALUE_LENGTH: "invalid header value length",
    E_TOO_FEW_RECORDS: "records section ends before the declared record count",
    E_TRAILING_BYTES: "bytes left after the declared number of records",
    E_RECORD_COUNT: "negative record count",
    E_OUTPUT: "buffer changed while it was being decoded",
    E_LEGACY_TRUNCATED: "truncated inner message header",
    E_LEGACY_SIZE: "message size out of range",
    E_LEGACY_NESTED: "inner messages must not be compressed",
    E_LEGACY_EMPTY: "compressed message set with no inner messages",
    E_LEGACY_WRAPPER_OFFSET: "wrapper offset is less than the last inner offset and is not zero",
}

# --- batch table columns (scan_batches fills an int64 [n, BT_NFIELDS] table) --------------------
BT_POS: Final = 0  # byte position of the batch in the buffer
BT_SIZE: Final = 1  # bytes including the 12-byte offset+length prefix
BT_MAGIC: Final = 2
BT_ATTRS: Final = 3
BT_CRC: Final = 4  # stored CRC (unsigned)
BT_BASE_OFFSET: Final = 5
BT_LAST_DELTA: Final = 6
BT_BASE_TS: Final = 7
BT_MAX_TS: Final = 8
BT_PID: Final = 9
BT_PRODUCER_EPOCH: Final = 10
BT_BASE_SEQ: Final = 11
BT_LEADER_EPOCH: Final = 12
BT_COUNT: Final = 13
BT_NFIELDS: Final = 14

# --- section table columns (one row per records section handed to walk_records) ----------------
SC_SRC: Final = 0  # 0: the caller's buffer, 1: the arena of decompressed/converted sections
SC_START: Final = 1
SC_END: Final = 2
SC_COUNT: Final = 3  # declared record count (checked against the bytes)
SC_BASE_OFFSET: Final = 4
SC_BASE_TS: Final = 5
SC_MAX_TS: Final = 6
SC_LOG_APPEND: Final = 7  # 1: every record takes SC_MAX_TS (v2 / magic 1 LogAppendTime)
SC_KIND: Final = 8  # KIND_V2 or KIND_LEGACY
SC_INNER: Final = 9  # legacy: 1 for the decompressed message set of a wrapper
SC_RELATIVE: Final = 10  # legacy: 1 for magic 1 relative inner offsets (KIP-31)
SC_NFIELDS: Final = 11

KIND_V2: Final = 0  # v2 records (length-prefixed varint records), SC_COUNT of them
KIND_LEGACY: Final = 1  # magic 0/1 entries (offset, size, crc, magic, attributes, ...) to the end

# --- totals (walk_records sums these in its counting pass) ---------------------------------------
T_RECORDS: Final = 0
T_KEY_BYTES: Final = 1
T_VALUE_BYTES: Final = 2
T_HEADERS: Final = 3
T_HDR_KEY_BYTES: Final = 4
T_HDR_VALUE_BYTES: Final = 5
T_NFIELDS: Final = 6

_V2_HEADER: Final = 61
_LOG_OVERHEAD: Final = 12
_MAX_TS_MS: Final = 9_223_372_036_854_775  # largest |ms| whose microseconds fit in int64
TS_NULL: Final = -(2**63)  # written for such timestamps; the Python layer turns it into a null


def _be_int(buf: Any, p: int, n: int) -> int:
    """Big-endian signed integer of ``n`` bytes at ``p`` (caller checked the bytes exist)."""
    v = int(buf[p])
    if v >= 0x80:  # the sign comes from the first byte; shifting keeps it (Python and int64 alike)
        v -= 0x100
    for i in range(1, n):
        v = (v << 8) | int(buf[p + i])
    return v


_INT64_MAX: Final = 2**63 - 1
_INT64_MIN: Final = -(2**63)


def _add64(a: int, b: int) -> int:
    """``a + b`` wrapping like Java's ``long`` (numba's int64 does; Python's int must be told)."""
    if b > 0 and a > _INT64_MAX - b:
        return (a + _INT64_MIN) + (b + _INT64_MIN)
    if b < 0 and a < _INT64_MIN - b:
        return (a - _INT64_MIN) + (b - _INT64_MIN)
    return a + b


def _neg64(a: int) -> int:
    """``-a`` wrapping like Java's ``long`` (the negation of the minimum is itself)."""
    return a if a == _INT64_MIN else -a


def _be_uint32(buf: Any, p: int) -> int:
    v = 0
    for i in range(4):
        v = (v << 8) | int(buf[p + i])
    return v


def _copy(dst: Any, dpos: int, src: Any, spos: int, n: int) -> None:
    """``dst[dpos:dpos + n] = src[spos:spos + n]`` (the caller checked both ranges).

    Under numba this becomes one ``memcpy`` (``_jit_copy``): numba's slice assignment costs more
    than the copy itself for the 10-100 byte runs of keys and values.
    """
    dst[dpos : dpos + n] = src[spos : spos + n]


def _varint(buf: Any, p: int, end: int) -> tuple[int, int]:
    """Zigzag 32-bit varint at ``p``; returns (value, new_pos) or (error code, -1)."""
    raw = 0
    shift = 0
    while True:
        if p >= end:
            return E_VARINT_TRUNC, -1
        b = int(buf[p])
        p += 1
        if shift == 28:
            if b > 0x0F:
                return E_VARINT_LONG, -1
            raw |= b << 28
            break
        raw |= (b & 0x7F) << shift
        if b < 0x80:
            break
        shift += 7
    return (raw >> 1) ^ -(raw & 1), p


def _varlong(buf: Any, p: int, end: int) -> tuple[int, int]:
    """Zigzag 64-bit varint at ``p``; returns (value, new_pos) or (error code, -1)."""
    raw = 0
    shift = 0
    while True:
        if p >= end:
            return E_VARINT_TRUNC, -1
        b = int(buf[p])
        p += 1
        if shift == 63:
            if b > 1:
                return E_VARINT_LONG, -1
            raw |= b << 63
            break
        raw |= (b & 0x7F) << shift
        if b < 0x80:
            break
        shift += 7
    # logical shift right: mask the sign bit numba's int64 would smear in
    return ((raw >> 1) & 0x7FFFFFFFFFFFFFFF) ^ -(raw & 1), p


def scan_batches(buf: Any, start: int, end: int, fill: bool, table: Any) -> tuple[int, int, int]:
    """Walk the batch framing of ``buf[start:end]``.

    Returns ``(batches, position, status)``: the number of whole batches, the position where the
    walk stopped and ``E_OK`` (clean end), ``E_TRUNCATED`` or another error at ``position``. With
    ``fill`` the header fields of each batch go to ``table`` (allocated from a counting call).
    """
    p = start
    n = 0
    while True:
        remaining = end - p
        if remaining == 0:
            return n, p, E_OK
        if remaining < _LOG_OVERHEAD:
            return n, p, E_TRUNCATED
        size = _be_int(buf, p + 8, 4)
        if size < 14:  # Kafka's LegacyRecord.RECORD_OVERHEAD_V0, checked before the magic
            return n, p, E_BATCH_SIZE
        if remaining < 17:
            return n, p, E_TRUNCATED
        magic = int(buf[p + 16])
        if magic > 2 or magic < 0:
            return n, p, E_MAGIC
        if magic == 2 and size < _V2_HEADER - _LOG_OVERHEAD:
            return n, p, E_BATCH_SIZE
        if magic == 1 and size < 22:
            return n, p, E_BATCH_SIZE
        if remaining - _LOG_OVERHEAD < size:
            return n, p, E_TRUNCATED
        if fill:
            if n >= table.shape[0]:
                return n, p, E_OUTPUT
            table[n, BT_POS] = p
            table[n, BT_SIZE] = size + _LOG_OVERHEAD
            table[n, BT_MAGIC] = magic
            table[n, BT_BASE_OFFSET] = _be_int(buf, p, 8)
            if magic == 2:
                table[n, BT_LEADER_EPOCH] = _be_int(buf, p + 12, 4)
                table[n, BT_CRC] = _be_uint32(buf, p + 17)
                table[n, BT_ATTRS] = _be_int(buf, p + 21, 2)
                table[n, BT_LAST_DELTA] = _be_int(buf, p + 23, 4)
                table[n, BT_BASE_TS] = _be_int(buf, p + 27, 8)
                table[n, BT_MAX_TS] = _be_int(buf, p + 35, 8)
                table[n, BT_PID] = _be_int(buf, p + 43, 8)
                table[n, BT_PRODUCER_EPOCH] = _be_int(buf, p + 51, 2)
                table[n, BT_BASE_SEQ] = _be_int(buf, p + 53, 4)
                table[n, BT_COUNT] = _be_int(buf, p + 57, 4)
            else:
                table[n, BT_LEADER_EPOCH] = -1
                table[n, BT_CRC] = _be_uint32(buf, p + 12)
                table[n, BT_ATTRS] = int(buf[p + 17])
                table[n, BT_LAST_DELTA] = 0
                table[n, BT_BASE_TS] = -1
                table[n, BT_MAX_TS] = -1
                table[n, BT_PID] = -1
                table[n, BT_PRODUCER_EPOCH] = -1
                table[n, BT_BASE_SEQ] = -1
                table[n, BT_COUNT] = -1
        n += 1
        p += size + _LOG_OVERHEAD


def walk_records(
    main: Any,
    arena: Any,
    sections: Any,
    fill: bool,
    stop_on_error: bool,
    want_key: bool,
    want_value: bool,
    want_headers: bool,
    totals: Any,
    errors: Any,
    off_out: Any,
    ts_out: Any,
    key_offs: Any,
    key_data: Any,
    key_valid: Any,
    val_offs: Any,
    val_data: Any,
    val_valid: Any,
    hdr_offs: Any,
    hdr_valid: Any,
    hk_offs: Any,
    hk_data: Any,
    hv_offs: Any,
    hv_data: Any,
    hv_valid: Any,
    sec_info: Any,
) -> int:
    """Walk the records of every section (v2 records or legacy entries); count (``fill=False``) or write the columns.

    Counting sums the sizes each column needs into ``totals`` and records per-section failures in
    ``errors[i] = (code, position)``; with ``stop_on_error`` it stops at the first. Filling writes
    offsets (int64), timestamps (int64 microseconds) and the Arrow offsets/data/validity of the
    requested binary columns; ``sec_info[i]`` gets the first offset and the record count of section ``i``. Returns
    the number of sections that failed.
    """
    r = 0  # record index
    kp = 0  # write positions in the data buffers
    vp = 0
    h = 0
    hkp = 0
    hvp = 0
    failed = 0
    if fill:
        if want_key:
            key_offs[0] = 0
        if want_value:
            val_offs[0] = 0
        if want_headers:
            hdr_offs[0] = 0
            hk_offs[0] = 0
            hv_offs[0] = 0
    for si in range(sections.shape[0]):
        buf = arena if sections[si, SC_SRC] == 1 else main
        p = sections[si, SC_START]
        end = sections[si, SC_END]
        declared = sections[si, SC_COUNT]
        base_off = sections[si, SC_BASE_OFFSET]
        base_ts = sections[si, SC_BASE_TS]
        log_append = sections[si, SC_LOG_APPEND] == 1
        max_ts = sections[si, SC_MAX_TS]
        kind = sections[si, SC_KIND]
        err = E_OK
        err_pos = p
        # counts of this section, committed to the totals only when it decodes cleanly
        n = 0
        nk = 0
        nv = 0
        nh = 0
        nhk = 0
        nhv = 0
        if kind == KIND_V2 and declared < 0:
            err = E_RECORD_COUNT
        if end > len(buf) or p > end or p < 0:
            err = E_OUTPUT
        sec_info[si, 0] = base_off
        while kind == KIND_V2 and err == E_OK and n < declared:
            rec_start = p
            err_pos = p
            if p >= end:
                err = E_TOO_FEW_RECORDS
                break
            length, q = _varint(buf, p, end)
            if q < 0:
                err = length
                break
            if length < 0 or length > end - q:
                err = E_RECORD_LENGTH
                break
            rend = q + length
            p = q
            if p >= rend:  # attributes byte
                err = E_RECORD_OVERRUN
                break
            p += 1
            ts_delta, q = _varlong(buf, p, rend)
            if q < 0:
                err = E_RECORD_OVERRUN if ts_delta == E_VARINT_TRUNC else ts_delta
                err_pos = p
                break
            p = q
            off_delta, q = _varint(buf, p, rend)
            if q < 0:
                err = E_RECORD_OVERRUN if off_delta == E_VARINT_TRUNC else off_delta
                err_pos = p
                break
            p = q
            ts = max_ts if log_append else _add64(base_ts, ts_delta)
            # key
            klen, q = _varint(buf, p, rend)
            if q < 0:
                err = E_RECORD_OVERRUN if klen == E_VARINT_TRUNC else klen
                err_pos = p
                break
            if klen < -1 or klen > rend - q:
                err = E_KEY_LENGTH
                err_pos = p
                break
            kstart = q
            p = q + (klen if klen > 0 else 0)
            # value
            vlen, q = _varint(buf, p, rend)
            if q < 0:
                err = E_RECORD_OVERRUN if vlen == E_VARINT_TRUNC else vlen
                err_pos = p
                break
            if vlen < -1 or vlen > rend - q:
                err = E_VALUE_LENGTH
                err_pos = p
                break
            vstart = q
            p = q + (vlen if vlen > 0 else 0)
            # headers
            hcount, q = _varint(buf, p, rend)
            if q < 0:
                err = E_RECORD_OVERRUN if hcount == E_VARINT_TRUNC else hcount
                err_pos = p
                break
            if hcount < 0 or hcount > rend - q:  # each header takes at least one byte
                err = E_HEADER_COUNT
                err_pos = p
                break
            p = q
            if fill:
                if r >= off_out.shape[0]:
                    err = E_OUTPUT
                    break
                off_out[r] = _add64(base_off, off_delta)
                if n == 0:
                    sec_info[si, 0] = _add64(base_off, off_delta)
                # microseconds for Arrow/Spark; a timestamp they cannot hold becomes null
                ts_out[r] = ts * 1000 if -_MAX_TS_MS <= ts <= _MAX_TS_MS else TS_NULL
                # Key and value are written inline, here and for legacy entries below: the same
                # steps as one helper (njit, inlined or not) made the compiled decode ~1.8x slower
                # (0.8 -> 1.45 ms for 10,000 records), so the repetition stays.
                if want_key:
                    if klen >= 0:
                        if kp + klen > key_data.shape[0]:
                            err = E_OUTPUT
                            break
                        _copy(key_data, kp, buf, kstart, klen)
                        kp += klen
                        key_valid[r] = 1
                    else:
                        key_valid[r] = 0
                    key_offs[r + 1] = kp
                if want_value:
                    if vlen >= 0:
                        if vp + vlen > val_data.shape[0]:
                            err = E_OUTPUT
                            break
                        _copy(val_data, vp, buf, vstart, vlen)
                        vp += vlen
                        val_valid[r] = 1
                    else:
                        val_valid[r] = 0
                if want_value:
                    val_offs[r + 1] = vp
            for _ in range(hcount):
                hklen, q = _varint(buf, p, rend)
                if q < 0:
                    err = E_RECORD_OVERRUN if hklen == E_VARINT_TRUNC else hklen
                    err_pos = p
                    break
                if hklen < 0 or hklen > rend - q:
                    err = E_HEADER_KEY_LENGTH
                    err_pos = p
                    break
                hkstart = q
                p = q + hklen
                hvlen, q = _varint(buf, p, rend)
                if q < 0:
                    err = E_RECORD_OVERRUN if hvlen == E_VARINT_TRUNC else hvlen
                    err_pos = p
                    break
                if hvlen < -1 or hvlen > rend - q:
                    err = E_HEADER_VALUE_LENGTH
                    err_pos = p
                    break
                hvstart = q
                p = q + (hvlen if hvlen > 0 else 0)
                nhk += hklen
                if hvlen > 0:
                    nhv += hvlen
                if fill and want_headers:
                    if (
                        h >= hv_valid.shape[0]
                        or hkp + hklen > hk_data.shape[0]
                        or hvp + (hvlen if hvlen > 0 else 0) > hv_data.shape[0]
                    ):
                        err = E_OUTPUT
                        break
                    _copy(hk_data, hkp, buf, hkstart, hklen)
                    hkp += hklen
                    hk_offs[h + 1] = hkp
                    if hvlen >= 0:
                        _copy(hv_data, hvp, buf, hvstart, hvlen)
                        hvp += hvlen
                        hv_valid[h] = 1
                    else:
                        hv_valid[h] = 0
                    hv_offs[h + 1] = hvp
                    h += 1
            if err != E_OK:
                break
            if p != rend:
                err = E_RECORD_SIZE
                err_pos = rec_start
                break
            if fill and want_headers:
                hdr_offs[r + 1] = h
                hdr_valid[r] = 1 if hcount > 0 else 0
            n += 1
            nh += hcount
            if klen > 0:
                nk += klen
            if vlen > 0:
                nv += vlen
            if fill:
                r += 1
        if kind == KIND_V2 and err == E_OK and n == declared and p != end and declared > 0:
            err = E_TRAILING_BYTES
            err_pos = p
        if kind == KIND_LEGACY and err == E_OK:
            inner = sections[si, SC_INNER] == 1
            adjust = 0
            if sections[si, SC_RELATIVE] == 1:
                # KIP-31: absolute = wrapper offset - last inner offset + inner offset. Find the
                # last inner offset by hopping over the framing (the walk below checks it).
                last = -1
                pp = p
                whole = True
                while pp < end:
                    if end - pp < _LOG_OVERHEAD:
                        whole = False
                        break
                    size = _be_int(buf, pp + 8, 4)
                    if size < 14 or size > end - pp - _LOG_OVERHEAD:
                        whole = False
                        break
                    last = _be_int(buf, pp, 8)
                    pp += _LOG_OVERHEAD + size
                if whole and last >= 0 and base_off < last:
                    err = E_LEGACY_WRAPPER_OFFSET
                    err_pos = p
                adjust = _add64(base_off, _neg64(last)) if whole else 0
            while err == E_OK and p < end:
                err_pos = p
                if end - p < _LOG_OVERHEAD:
                    err = E_LEGACY_TRUNCATED
                    break
                size = _be_int(buf, p + 8, 4)
                if size < 14 or size > end - p - _LOG_OVERHEAD:
                    err = E_LEGACY_SIZE
                    break
                mend = p + _LOG_OVERHEAD + size
                m = int(buf[p + 16])
                q = p + 18
                ts = -1
                if m == 1:
                    if size < 22:
                        err = E_LEGACY_SIZE
                        break
                    ts = max_ts if log_append else _be_int(buf, q, 8)
                    q += 8
                elif m != 0:
                    err = E_MAGIC
                    break
                if inner and (int(buf[p + 17]) & 7) != 0:
                    err = E_LEGACY_NESTED
                    break
                klen = _be_int(buf, q, 4)
                q += 4
                kstart = q
                if klen >= 0:
                    if klen > mend - 4 - q:
                        err = E_KEY_LENGTH
                        err_pos = q - 4
                        break
                    q += klen
                elif klen != -1:
                    err = E_KEY_LENGTH
                    err_pos = q - 4
                    break
                vlen = _be_int(buf, q, 4)
                q += 4
                vstart = q
                if (vlen >= 0 and vlen != mend - q) or (vlen == -1 and q != mend) or vlen < -1:
                    err = E_VALUE_LENGTH
                    err_pos = q - 4
                    break
                offset = _add64(_be_int(buf, p, 8), adjust)
                if fill:
                    if r >= off_out.shape[0]:
                        err = E_OUTPUT
                        break
                    off_out[r] = offset
                    ts_out[r] = ts * 1000 if -_MAX_TS_MS <= ts <= _MAX_TS_MS else TS_NULL
                    # (inline on purpose: see the note in the v2 branch above)
                    if want_key:
                        if klen >= 0:
                            if kp + klen > key_data.shape[0]:
                                err = E_OUTPUT
                                break
                            _copy(key_data, kp, buf, kstart, klen)
                            kp += klen
                            key_valid[r] = 1
                        else:
                            key_valid[r] = 0
                        key_offs[r + 1] = kp
                    if want_value:
                        if vlen >= 0:
                            if vp + vlen > val_data.shape[0]:
                                err = E_OUTPUT
                                break
                            _copy(val_data, vp, buf, vstart, vlen)
                            vp += vlen
                            val_valid[r] = 1
                        else:
                            val_valid[r] = 0
                        val_offs[r + 1] = vp
                    if want_headers:
                        hdr_offs[r + 1] = h
                        hdr_valid[r] = 0
                    r += 1
                if n == 0:
                    sec_info[si, 0] = offset
                n += 1
                if klen > 0:
                    nk += klen
                if vlen > 0:
                    nv += vlen
                p = mend
            if err == E_OK and inner and n == 0:
                err = E_LEGACY_EMPTY
                err_pos = p
        if err != E_OK:
            failed += 1
            errors[si, 0] = err
            errors[si, 1] = err_pos
            if fill or stop_on_error:
                return failed
            continue
        errors[si, 0] = E_OK
        errors[si, 1] = 0
        sec_info[si, 1] = n
        totals[T_RECORDS] += n
        totals[T_KEY_BYTES] += nk
        totals[T_VALUE_BYTES] += nv
        totals[T_HEADERS] += nh
        totals[T_HDR_KEY_BYTES] += nhk
        totals[T_HDR_VALUE_BYTES] += nhv
    return failed


def legacy_crc_ranges(buf: Any, start: int, end: int, out: Any) -> int:
    """(crc start, crc end, stored CRC32) of each legacy entry in ``buf[start:end]`` into ``out``.

    Returns the number of entries written; stops early at broken framing (``walk_records``
    reports it) or when ``out`` is full.
    """
    p = start
    n = 0
    while p < end and n < out.shape[0]:
        if end - p < _LOG_OVERHEAD + 5:
            break
        size = _be_int(buf, p + 8, 4)
        if size < 14 or size > end - p - _LOG_OVERHEAD:
            break
        out[n, 0] = p + 16
        out[n, 1] = p + _LOG_OVERHEAD + size
        out[n, 2] = _be_uint32(buf, p + 12)
        n += 1
        p += _LOG_OVERHEAD + size
    return n


# --- engine selection ----------------------------------------------------------------------------

_KERNELS: Final = (
    "_add64",
    "_neg64",
    "_be_int",
    "_be_uint32",
    "_varint",
    "_varlong",
    "scan_batches",
    "walk_records",
    "legacy_crc_ranges",
)


def numba_cache_dir() -> str:
    """Where compiled kernels are cached: ``NUMBA_CACHE_DIR`` or ``<user cache>/kwire/numba``."""
    configured = os.environ.get("NUMBA_CACHE_DIR")
    if configured:
        return configured
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return str(Path(base) / "kwire" / "numba")


def _jit_copy(numba: Any) -> Any:
    """``_copy`` for numba: an intrinsic that emits LLVM's memcpy between two uint8 arrays."""
    import importlib

    # through importlib so the (partly typed) numba internals stay ``Any`` for mypy
    types: Any = importlib.import_module("numba.core.types")
    cgutils: Any = importlib.import_module("numba.core.cgutils")
    intrinsic: Any = importlib.import_module("numba.extending").intrinsic

    @intrinsic  # type: ignore[untyped-decorator,unused-ignore]
    def memcpy(typingctx: Any, dst: Any, dpos: Any, src: Any, spos: Any, n: Any) -> Any:
        sig = types.void(dst, dpos, src, spos, n)

        def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
            dst_v, dpos_v, src_v, spos_v, n_v = args
            d = context.make_array(signature.args[0])(context, builder, dst_v)
            s = context.make_array(signature.args[2])(context, builder, src_v)
            cgutils.raw_memcpy(
                builder, builder.gep(d.data, [dpos_v]), builder.gep(s.data, [spos_v]), n_v, 1
            )
            return context.get_dummy_value()

        return sig, codegen

    def copy(dst: Any, dpos: int, src: Any, spos: int, n: int) -> None:
        memcpy(dst, dpos, src, spos, n)

    return _njit(numba, copy, inline="always")


def _jit_kernels() -> str:
    if os.environ.get("KWIRE_DISABLE_NUMBA"):
        return "python"
    try:
        import numba
    except ImportError:
        warnings.warn(
            "numba is not installed: kwire's columnar decoder runs its pure-Python kernels, "
            "which are much slower (install kwire[arrow] for the compiled ones)",
            RuntimeWarning,
            stacklevel=3,
        )
        return "python"
    # numba reads NUMBA_CACHE_DIR once, when it is first imported (perhaps by someone else, before
    # the caller set the variable); set its config now so the cache lands in NUMBA_CACHE_DIR or,
    # if unset, in the user's cache dir: writable even where site-packages is read-only (Spark
    # executors, containers).
    cache_dir = numba_cache_dir()
    try:
        Path(cache_dir).mkdir(parents=True, exist_ok=True)
        setattr(numba.config, "CACHE_DIR", cache_dir)  # noqa: B010
    except OSError:
        pass  # numba falls back to its own locators (or compiles without caching)
    g = globals()
    g["_copy"] = _jit_copy(numba)
    for name in _KERNELS:
        g[name] = _njit(numba, g[name])
    return "numba"


def _njit(numba: Any, fn: Any, **options: Any) -> Any:
    """``numba.njit(cache=True, nogil=True)``, or uncached where numba finds no cache location."""
    try:
        return numba.njit(cache=True, nogil=True, **options)(fn)
    except RuntimeError:  # "cannot cache function ...: no locator available for file ..."
        return numba.njit(nogil=True, **options)(fn)  # compiles in every process instead


ENGINE: Final[str] = _jit_kernels()
"""``"numba"`` when the kernels are compiled, ``"python"`` when they run interpreted."""

# The interpreted versions, kept for tests that compare both engines in one process.
PY_SCAN_BATCHES: Final = getattr(scan_batches, "py_func", scan_batches)
PY_WALK_RECORDS: Final = getattr(walk_records, "py_func", walk_records)
PY_LEGACY_CRC_RANGES: Final = getattr(legacy_crc_ranges, "py_func", legacy_crc_ranges)

_ = np  # numpy is what callers pass in; imported here so a missing numpy fails at import
