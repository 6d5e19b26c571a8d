"""The columnar decoder on bad input: typed errors with positions, tolerant modes, no blow-ups."""

from __future__ import annotations

import contextlib
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_columnar import as_columnar_sees_it, columnar_rows, fix_crc, log_bytes, reference_rows

from kwire.errors import CorruptRecordError, DecodeError
from kwire.records import BatchBuilder, Compression
from kwire.records._columnar import decode_columnar, decode_to_arrow


def v2_batch(n: int = 3, codec: int = 0, base_offset: int = 0) -> bytearray:
    b = BatchBuilder(2, codec, base_offset=base_offset)
    for i in range(n):
        b.append(None, 1000 + i, b"k%d" % i, b"value-%d" % i, [("h", b"x")])
    return bytearray(b.build())


def test_every_truncation_is_an_error_or_a_clean_tail() -> None:
    first, second = v2_batch(2), v2_batch(3, base_offset=2)
    buf = bytes(first + second)
    for cut in range(len(buf)):
        data = buf[:cut]
        if cut in (0, len(first)):
            assert decode_to_arrow(data).num_rows == (0 if cut == 0 else 2)
            continue
        with pytest.raises(CorruptRecordError) as info:
            decode_to_arrow(data)
        assert info.value.offset == (0 if cut < len(first) else len(first))
        tolerant = decode_columnar(data, allow_truncated_tail=True)
        whole = 0 if cut < len(first) else len(first)
        assert tolerant.bytes_consumed == whole
        assert tolerant.truncated_bytes == cut - whole
        assert tolerant.batch.num_rows == (0 if whole == 0 else 2)


def test_zero_filled_tail() -> None:
    buf = bytes(v2_batch(2)) + bytes(4096)
    with pytest.raises(CorruptRecordError, match="smaller than the minimum"):
        decode_to_arrow(buf)
    result = decode_columnar(buf, allow_truncated_tail=True)
    assert result.batch.num_rows == 2
    assert result.truncated_bytes == 4096
    # a non-zero tail that is not a plausible batch stays an error
    with pytest.raises(CorruptRecordError):
        decode_columnar(buf + b"\x01", allow_truncated_tail=True)


def test_every_bit_flip_under_the_crc_is_detected() -> None:
    batch = v2_batch(2)
    for byte in range(21, len(batch)):
        for bit in range(8):
            bad = bytearray(batch)
            bad[byte] ^= 1 << bit
            with pytest.raises(CorruptRecordError) as info:
                decode_to_arrow(bytes(bad), columns=["offset"])
            if "CRC" in info.value.reason:
                assert info.value.offset == 17


def test_crc_can_be_skipped_for_trusted_data() -> None:
    batch = v2_batch(2)
    batch[-1] ^= 0x01  # last byte of the last header value
    with pytest.raises(CorruptRecordError, match="CRC32C mismatch"):
        decode_to_arrow(bytes(batch))
    rb = decode_to_arrow(bytes(batch), verify_crc=False, columns=["headers"])
    assert rb.column("headers").to_pylist()[1] == [{"key": "h", "value": b"y"}]


def _record_start(batch: bytes, index: int) -> int:
    """Byte position of record ``index`` in an uncompressed v2 batch (1-byte length varints)."""
    pos = 61
    for _ in range(index):
        length = batch[pos] >> 1
        pos += 1 + length
    return pos


@pytest.mark.parametrize(
    ("field", "new_value", "reason"),
    [
        ("key_length", 0x09, "invalid record key length"),  # zigzag -5
        ("value_length", 0x7E, "invalid record value length"),  # 63: past the record end
        ("header_count", 0x01, "invalid record header count"),  # -1
        ("record_length", 0x02, "record fields run past the record length"),  # 1
        ("record_length", 0x7E, "record length is negative or runs past"),  # 63
    ],
)
def test_malformed_record_fields(field: str, new_value: int, reason: str) -> None:
    batch = v2_batch(3)
    rec = _record_start(bytes(batch), 1)
    # record layout: length, attributes, ts delta, offset delta, key len, key(2), value len, ...
    where = {"record_length": rec, "key_length": rec + 4, "value_length": rec + 7}
    where["header_count"] = rec + 8 + len(b"value-1")
    pos = where[field]
    batch[pos] = new_value
    fix_crc(batch)
    with pytest.raises(CorruptRecordError, match=reason) as info:
        decode_to_arrow(bytes(batch))
    assert info.value.offset is not None
    assert rec <= info.value.offset <= rec + batch[rec] // 2 + 1
    assert "base offset 0" in str(info.value)
    with pytest.raises(CorruptRecordError):  # the row API agrees that it is corrupt
        reference_rows(bytes(batch))


def test_declared_count_is_checked_against_the_bytes() -> None:
    for count, reason in [
        (2**31 - 1, "ends before the declared record count"),
        (2, "bytes left after the declared number of records"),
        (-3, "negative record count"),
    ]:
        batch = v2_batch(3)
        batch[57:61] = count.to_bytes(4, "big", signed=True)
        fix_crc(batch)
        with pytest.raises(CorruptRecordError, match=reason):
            decode_to_arrow(bytes(batch))


def test_compressed_records_errors_name_the_batch() -> None:
    from kwire.records import compress

    batch = v2_batch(3, codec=Compression.ZSTD, base_offset=40)
    records = bytearray(b"\x06" + b"\x00" * 3)  # one record claiming 3 bytes, then garbage
    body = compress(Compression.ZSTD, bytes(records))
    batch = batch[:61] + bytearray(body)
    batch[8:12] = (len(batch) - 12).to_bytes(4, "big")
    fix_crc(batch)
    with pytest.raises(CorruptRecordError, match="decompressed records") as info:
        decode_to_arrow(bytes(batch))
    assert info.value.offset == 61
    assert "base offset 40" in str(info.value)


def test_compression_bomb_is_capped() -> None:
    b = BatchBuilder(2, Compression.GZIP)
    b.append(None, 1, None, bytes(1_000_000))
    with pytest.raises(CorruptRecordError, match="limit"):
        decode_to_arrow(b.build(), max_decompressed_size=100_000)
    assert decode_to_arrow(b.build()).num_rows == 1


def test_unknown_codec_and_magic() -> None:
    batch = v2_batch(1)
    batch[22] |= 0x07  # attributes low byte: codec id 7
    fix_crc(batch)
    with pytest.raises(CorruptRecordError, match="unknown compression codec id 7"):
        decode_to_arrow(bytes(batch))
    batch = v2_batch(1)
    batch[16] = 3
    with pytest.raises(CorruptRecordError, match="unknown magic") as info:
        decode_to_arrow(bytes(v2_batch(1)) + bytes(batch))
    assert info.value.offset == len(v2_batch(1))


def test_skip_mode_leaves_out_bad_batches_and_says_where() -> None:
    good1, bad, good2 = v2_batch(2), v2_batch(3, base_offset=2), v2_batch(1, base_offset=5)
    bad[-3] ^= 0xFF  # CRC mismatch
    buf = bytes(good1 + bad + good2)
    result = decode_columnar(buf, on_corrupt="skip", position_base=1000)
    assert result.batch.column("offset").to_pylist() == [0, 1, 5]
    assert len(result.skipped) == 1
    assert result.skipped[0].position == 1000 + len(good1)
    assert result.skipped[0].size == len(bad)
    assert "CRC32C" in result.skipped[0].reason
    assert result.skipped_bytes == len(bad)
    # broken framing: the rest of the buffer is skipped in one piece
    broken = bytearray(good2)
    broken[8:12] = (5).to_bytes(4, "big")
    result = decode_columnar(bytes(good1) + bytes(broken), on_corrupt="skip")
    assert result.batch.num_rows == 2
    assert result.skipped[0].position == len(good1)
    assert result.skipped[0].size == len(broken)
    with pytest.raises(ValueError, match="on_corrupt"):
        decode_columnar(buf, on_corrupt="ignore")  # type: ignore[arg-type]


def test_position_base_shifts_error_offsets() -> None:
    batch = v2_batch(1)
    batch[30] ^= 1
    with pytest.raises(CorruptRecordError) as info:
        decode_to_arrow(bytes(batch), position_base=4096)
    assert info.value.offset == 4096 + 17
    assert "batch at byte 4096" in str(info.value)


@given(st.binary(max_size=300))
@settings(max_examples=300, deadline=None)
def test_random_bytes_only_raise_decode_errors(data: bytes) -> None:
    for verify in (True, False):
        with contextlib.suppress(DecodeError):
            decode_to_arrow(data, verify_crc=verify)


@given(log_bytes(), st.data())
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_mutations_agree_with_the_row_api(buf: bytes, data: st.DataObject) -> None:
    """Corrupt bytes (CRC not checked): both decoders fail, or both give the same rows."""
    bad = bytearray(buf)
    for _ in range(data.draw(st.integers(1, 3))):
        pos = data.draw(st.integers(0, len(bad) - 1))
        bad[pos] = data.draw(st.integers(0, 255))
    raw = bytes(bad)
    row_error = ""
    try:
        expected = as_columnar_sees_it(reference_rows(raw, verify_crc=False))
    except DecodeError as exc:
        expected, row_error = None, exc.reason
    try:
        got = columnar_rows(decode_to_arrow(raw, verify_crc=False))
    except DecodeError:
        got = None
    if expected is None or got is None:
        if got is not None and "after the batch's 0 records" in row_error:
            return  # a count of 0 means no records to Kafka (and the columnar decoder)
        assert expected is None and got is None, (expected, got)
        return
    names = set(expected[0]) if expected else set()
    assert [{k: v for k, v in g.items() if k in names} for g in got] == expected


# -- legacy magic 0/1 -----------------------------------------------------------------------------


def _wrapper(
    magic: int, wrapper_offset: int, inner: bytes, codec: int = Compression.GZIP, attrs: int = 0
) -> bytes:
    from kwire.records import compress
    from kwire.records._legacy import encode_message

    out = bytearray()
    encode_message(out, offset=wrapper_offset, magic=magic, attributes=attrs | codec,
                   timestamp=77, key=None, value=compress(codec, inner, magic=magic))  # fmt: skip
    return bytes(out)


def _inner(magic: int, offsets: list[int], attrs: int = 0) -> bytearray:
    from kwire.records._legacy import encode_message

    out = bytearray()
    for o in offsets:
        encode_message(out, offset=o, magic=magic, attributes=attrs, timestamp=5 + o,
                       key=b"k%d" % o, value=b"v%d" % o)  # fmt: skip
    return out


def test_legacy_relative_offsets_and_wrapper_rules() -> None:
    # KIP-31: absolute = wrapper offset - last inner + inner (holes kept)
    rb = decode_to_arrow(_wrapper(1, 100, bytes(_inner(1, [0, 2, 3]))))
    assert rb.column("offset").to_pylist() == [97, 99, 100]
    assert rb.column("batchOffset").to_pylist() == [97] * 3
    assert rb.column("timestamp").cast("int64").to_pylist() == [5000, 7000, 8000]
    # wrapper offset 0: inner offsets used as they are
    assert decode_to_arrow(_wrapper(1, 0, bytes(_inner(1, [0, 1])))).column(
        "offset"
    ).to_pylist() == [0, 1]
    # magic 0 inner offsets are absolute; LogAppendTime wrappers stamp their inner messages
    rb = decode_to_arrow(_wrapper(0, 9, bytes(_inner(0, [7, 9]))))
    assert rb.column("offset").to_pylist() == [7, 9]
    assert rb.column("timestampType").to_pylist() == [-1, -1]
    rb = decode_to_arrow(_wrapper(1, 50, bytes(_inner(1, [0, 1])), attrs=0x08))
    assert rb.column("timestamp").cast("int64").to_pylist() == [77_000, 77_000]
    assert rb.column("timestampType").to_pylist() == [1, 1]
    for bad, reason in [
        (_wrapper(1, 1, bytes(_inner(1, [0, 1, 2]))), "less than the last inner offset"),
        (_wrapper(1, 5, bytes(_inner(1, [0], attrs=Compression.GZIP))), "must not be compressed"),
        (_wrapper(1, 5, b""), "no inner messages"),
        (_wrapper(1, 5, bytes(_inner(1, [0]))[:-1]), "message size out of range"),
    ]:
        with pytest.raises(CorruptRecordError, match=reason):
            decode_to_arrow(bad)
        with pytest.raises(CorruptRecordError):
            reference_rows(bad)


def test_legacy_crcs() -> None:
    inner = _inner(1, [0, 1, 2])
    inner[-1] ^= 0x01  # the last inner message's value, under its CRC32
    wrapper = _wrapper(1, 10, bytes(inner))
    with pytest.raises(CorruptRecordError, match="CRC32 mismatch in inner message 2"):
        decode_to_arrow(wrapper)
    rb = decode_to_arrow(wrapper, verify_crc=False)
    assert rb.column("value").to_pylist()[2] == b"v3"
    plain = bytearray(_inner(0, [4, 5]))
    plain[-1] ^= 0x02
    with pytest.raises(CorruptRecordError, match="CRC32 mismatch") as info:
        decode_to_arrow(bytes(plain))
    assert info.value.offset == len(plain) // 2 + 12
    result = decode_columnar(bytes(plain) + wrapper, on_corrupt="skip")
    assert result.batch.column("offset").to_pylist() == [4]
    assert [s.position for s in result.skipped] == [len(plain) // 2, len(plain)]


@given(log_bytes(), st.data())
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_mutations_python_engine_agrees_with_numba(buf: bytes, data: st.DataObject) -> None:
    bad = bytearray(buf)
    pos = data.draw(st.integers(0, len(bad) - 1))
    bad[pos] = data.draw(st.integers(0, 255))
    outcomes = []
    for engine in ("auto", "python"):
        try:
            result = decode_columnar(bytes(bad), verify_crc=False, on_corrupt="skip", engine=engine)
        except DecodeError as exc:
            outcomes.append(("error", exc.reason, exc.offset))
        else:
            outcomes.append(("ok", result.batch, result.skipped))
    if outcomes[0][0] == "ok" and outcomes[1][0] == "ok":
        assert outcomes[0][1].equals(outcomes[1][1])
        assert outcomes[0][2] == outcomes[1][2]
    else:
        assert outcomes[0] == outcomes[1]


_PURE_SCRIPT = """
import json, sys, warnings
sys.modules["numba"] = None  # the pure-Python kernels, as without numba
warnings.simplefilter("ignore")
from kwire.errors import DecodeError
from kwire.records._columnar import columnar_engine, decode_columnar
assert columnar_engine() == "python"
out = []
for hexed in json.load(sys.stdin):
    try:
        r = decode_columnar(bytes.fromhex(hexed), verify_crc=False, on_corrupt="skip")
    except DecodeError as exc:
        out.append(["error", exc.reason, exc.offset])
    else:
        skipped = [[s.position, s.size, s.reason] for s in r.skipped]
        out.append(["ok", r.batch.serialize().to_pybytes().hex(), skipped])
print(json.dumps(out))
"""


def _random_log(rnd: random.Random) -> bytes:
    out = bytearray()
    offset = rnd.choice([0, 2**40, 2**63 - 100])
    for _ in range(rnd.randint(1, 3)):
        magic = rnd.choice([0, 1, 2, 2, 2])
        codec = rnd.randrange(5 if magic == 2 else 4)
        extra: dict[str, object] = {}
        if magic == 2 and rnd.random() < 0.5:
            extra = {"producer_id": rnd.choice([0, 2**62]), "producer_epoch": 3,
                     "base_sequence": rnd.choice([0, 2**31 - 2]), "is_transactional": True}  # fmt: skip
        b = BatchBuilder(magic, codec, base_offset=offset, **extra)  # type: ignore[arg-type]
        for _ in range(rnd.randint(1, 5)):
            headers = [("h", rnd.choice([None, b"v"]))] if magic == 2 and rnd.random() < 0.5 else []
            key = rnd.choice([None, b"key"])
            b.append(None, -1 if magic == 0 else rnd.randrange(2**45), key, b"x" * rnd.randrange(9),
                     headers)  # fmt: skip
        out += b.build()
        offset = min(b.next_offset + rnd.randrange(3), 2**63 - 100)
    return bytes(out)


@pytest.mark.slow
def test_pure_python_kernels_agree_with_numba_on_mutated_input() -> None:
    """Without numba at all (subprocess), on valid and mutated logs: same rows, same errors."""
    import json
    import subprocess
    import sys

    import pyarrow as pa

    from kwire.records._columnar import records_arrow_schema

    rnd = random.Random(1234)
    buffers = []
    for _ in range(60):
        buf = bytearray(_random_log(rnd))
        if rnd.random() < 0.7:
            for _ in range(rnd.randint(1, 3)):
                buf[rnd.randrange(len(buf))] = rnd.randrange(256)
        buffers.append(bytes(buf))
    res = subprocess.run(
        [sys.executable, "-c", _PURE_SCRIPT], input=json.dumps([b.hex() for b in buffers]),
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    pure = json.loads(res.stdout)
    schema = records_arrow_schema()
    for buf, got in zip(buffers, pure, strict=True):
        try:
            r = decode_columnar(buf, verify_crc=False, on_corrupt="skip")
        except DecodeError as exc:
            assert got == ["error", exc.reason, exc.offset]
            continue
        assert got[0] == "ok", got
        batch = pa.ipc.read_record_batch(pa.py_buffer(bytes.fromhex(got[1])), schema)
        assert batch.equals(r.batch)
        assert got[2] == [[s.position, s.size, s.reason] for s in r.skipped]
