"""The columnar decoder against the row API (``read_batches``), on many generated batches."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import crc32c
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kwire.records import (
    BatchBuilder,
    Compression,
    build_control_batch,
    build_end_txn_marker,
    read_batches,
)
from kwire.records._columnar import (
    RECORD_COLUMNS,
    columnar_engine,
    constant_array,
    decode_columnar,
    decode_to_arrow,
    records_arrow_schema,
    records_spark_ddl,
    warm_up,
)
from kwire.records._columnar_kernels import numba_cache_dir

CODEC_NAMES = ("none", "gzip", "snappy", "lz4", "zstd")
INT32_MAX = 2**31 - 1

# -- helpers shared with test_columnar_errors.py ---------------------------------------------------


def fix_crc(batch: bytearray) -> bytearray:
    """Recompute a v2 batch's CRC32C after editing it."""
    batch[17:21] = crc32c.crc32c(bytes(batch[21:])).to_bytes(4, "big")
    return batch


def reference_rows(buf: bytes, **kwargs: Any) -> list[dict[str, Any]]:
    """Rows as the row API sees them, in the columnar decoder's column names and types."""
    rows = []
    for batch in read_batches(buf, **kwargs):
        for r in batch:
            rows.append(
                {
                    "key": None if r.key is None else bytes(r.key),
                    "value": None if r.value is None else bytes(r.value),
                    "offset": r.offset,
                    "timestamp": r.timestamp,
                    "timestampType": r.timestamp_type,
                    "headers": [
                        {"key": k, "value": None if v is None else bytes(v)} for k, v in r.headers
                    ]
                    or None,
                    "magic": batch.magic,
                    "compression": CODEC_NAMES[batch.compression],
                    "producerId": batch.producer_id,
                    "producerEpoch": batch.producer_epoch,
                    "sequence": r.sequence,
                    "isTransactional": batch.is_transactional,
                    "isControl": batch.is_control,
                    "leaderEpoch": batch.partition_leader_epoch,
                    "batchOffset": batch.base_offset,
                }
            )
    return rows


MAX_TS_MS = (2**63 - 1) // 1000


def wrap64(x: int) -> int:
    return ((x + 2**63) % 2**64) - 2**63


def as_columnar_sees_it(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The row API's rows with the columnar decoder's two documented differences applied.

    A timestamp that timestamp[us] cannot hold is null; a header key that is not UTF-8 has U+FFFD
    for each bad byte (Java's ``new String(bytes, UTF_8)``; the row API keeps them as surrogates).
    """
    out = []
    for row in rows:
        row = dict(row)
        # crafted offsets/timestamps beyond int64: Java's long arithmetic wraps, and so do we
        for name in ("offset", "batchOffset", "timestamp"):
            row[name] = wrap64(row[name])
        if abs(row["timestamp"]) > MAX_TS_MS:
            row["timestamp"] = None
        if row["headers"]:
            row["headers"] = [
                {**h, "key": h["key"].encode("utf-8", "surrogateescape").decode("utf-8", "replace")}
                for h in row["headers"]
            ]
        out.append(row)
    return out


def columnar_rows(rb: pa.RecordBatch) -> list[dict[str, Any]]:
    """Rows of a decoded Arrow batch, timestamps back in Kafka's milliseconds."""
    if "timestamp" in rb.schema.names:
        i = rb.schema.get_field_index("timestamp")
        ms = pa.compute.divide(rb.column(i).cast(pa.int64()), 1000)
        rb = rb.set_column(i, "timestamp", ms)
    return rb.to_pylist()


def assert_matches_row_api(buf: bytes, **kwargs: Any) -> pa.RecordBatch:
    rb = decode_to_arrow(buf, **kwargs)
    rb.validate(full=True)
    assert rb.schema.equals(records_arrow_schema(kwargs.get("columns")))
    expected = as_columnar_sees_it(reference_rows(buf))
    got = columnar_rows(rb)
    assert len(got) == len(expected)
    names = rb.schema.names
    for g, e in zip(got, expected, strict=True):
        assert {k: v for k, v in g.items() if k in e} == {k: e[k] for k in names if k in e}
    return rb


# -- generated input ------------------------------------------------------------------------------

blobs = st.one_of(st.none(), st.binary(max_size=40))
header_keys = st.text(max_size=8)
headers = st.lists(st.tuples(header_keys, blobs), max_size=3)
timestamps = st.integers(0, 2**41)


@st.composite
def batch_bytes(draw: st.DrawFn, base_offset: int) -> tuple[bytes, int]:
    """One batch (any magic, codec, flags) starting at ``base_offset``; returns (bytes, next)."""
    kind = draw(st.sampled_from(["v2", "v2", "v2", "control", "legacy0", "legacy1"]))
    if kind == "control":
        if draw(st.booleans()):
            data = build_end_txn_marker(
                commit=draw(st.booleans()),
                coordinator_epoch=draw(st.integers(0, 100)),
                offset=base_offset,
                timestamp=draw(timestamps),
                producer_id=draw(st.integers(0, 2**40)),
                producer_epoch=draw(st.integers(0, 2**15 - 1)),
            )
        else:
            data = build_control_batch(5, b"\x00\x01", offset=base_offset)
        return data, base_offset + 1
    magic = 2 if kind == "v2" else int(kind[-1])
    codec = draw(st.sampled_from(list(Compression)[: 5 if magic == 2 else 4]))
    log_append = draw(st.booleans()) if magic > 0 else False
    options: dict[str, Any] = {}
    if magic == 2:
        transactional = draw(st.booleans())
        pid = draw(st.integers(0, 2**50)) if transactional or draw(st.booleans()) else -1
        options = {
            "producer_id": pid,
            "producer_epoch": draw(st.integers(0, 2**15 - 1)) if pid >= 0 else -1,
            "base_sequence": draw(st.sampled_from([0, 7, INT32_MAX - 2])) if pid >= 0 else -1,
            "is_transactional": transactional,
            "partition_leader_epoch": draw(st.integers(-1, 2**31 - 1)),
        }
    builder = BatchBuilder(
        magic,
        codec,
        base_offset=base_offset,
        timestamp_type=1 if log_append else 0,
        log_append_time=draw(timestamps) if log_append else None,
        **options,
    )
    offset = base_offset
    for _ in range(draw(st.integers(1, 6))):
        offset += draw(st.sampled_from([0, 0, 0, 1, 5]))  # compaction holes
        builder.append(
            offset,
            draw(timestamps) if magic > 0 else -1,
            draw(blobs),
            draw(blobs),
            draw(headers) if magic == 2 else (),
        )
        offset += 1
    return builder.build(), offset


@st.composite
def log_bytes(draw: st.DrawFn) -> bytes:
    out = bytearray()
    offset = draw(st.integers(0, 2**40))
    for _ in range(draw(st.integers(1, 4))):
        data, offset = draw(batch_bytes(offset))
        out += data
    return bytes(out)


@given(log_bytes())
@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_generated_batches_match_row_api(buf: bytes) -> None:
    assert_matches_row_api(buf)


@given(log_bytes(), st.lists(st.sampled_from(RECORD_COLUMNS), unique=True, min_size=1))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_column_subsets_equal_the_full_decode(buf: bytes, columns: list[str]) -> None:
    full = decode_to_arrow(buf, topic="t", partition=3, segment="00000000000000000000.log")
    part = decode_to_arrow(
        buf, columns=columns, topic="t", partition=3, segment="00000000000000000000.log"
    )
    part.validate(full=True)
    assert part.schema.names == columns
    assert part.equals(full.select(columns))


@given(log_bytes())
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_python_engine_equals_numba_engine(buf: bytes) -> None:
    fast = decode_to_arrow(buf)
    slow = decode_to_arrow(buf, engine="python")
    assert slow.equals(fast)


# -- every codec, explicitly, with a foreign builder too ------------------------------------------


@pytest.mark.parametrize("codec", list(Compression))
def test_each_codec_kwire_builder(codec: Compression) -> None:
    builder = BatchBuilder(2, codec, base_offset=100, producer_id=9, producer_epoch=2,
                           base_sequence=40)  # fmt: skip
    for i in range(300):
        builder.append(
            None,
            1_700_000_000_000 + i,
            None if i % 7 == 0 else b"key-%d" % i,
            None if i % 11 == 0 else bytes([i % 256]) * (i % 50),
            [(f"h{j}", None if j == 1 else b"v" * j) for j in range(i % 3)],
        )
    rb = assert_matches_row_api(builder.build())
    assert rb.num_rows == 300
    assert set(rb.column("compression").to_pylist()) == {CODEC_NAMES[codec]}
    assert rb.column("offset").to_pylist() == list(range(100, 400))
    assert rb.column("sequence").to_pylist() == list(range(40, 340))


@pytest.mark.parametrize("codec", [0, 1, 2, 3, 4])
def test_each_codec_aiokafka_builder(codec: int) -> None:
    from aiokafka.record.default_records import DefaultRecordBatchBuilder

    b = DefaultRecordBatchBuilder(
        magic=2, compression_type=codec, is_transactional=1, producer_id=77,
        producer_epoch=3, base_sequence=INT32_MAX - 5, batch_size=2**24,
    )  # fmt: skip
    for i in range(50):
        b.append(i, timestamp=1_600_000_000_000 + 3 * i, key=b"k%d" % i,
                 value=None if i == 3 else b"x" * i, headers=[("a", b"1"), ("b", None)])  # fmt: skip
    buf = bytes(b.build())
    rb = assert_matches_row_api(buf)
    seq = rb.column("sequence").to_pylist()
    assert seq[:6] == [INT32_MAX - 5 + i for i in range(6)]
    assert seq[6:8] == [0, 1]  # wraps like Kafka's DefaultRecordBatch.incrementSequence
    assert all(rb.column("isTransactional").to_pylist())


def test_legacy_and_v2_mixed_in_one_buffer() -> None:
    parts = []
    offset = 0
    for magic, codec, ts_type in [(0, 0, 0), (0, 1, 0), (1, 0, 0), (1, 2, 1), (1, 3, 0), (2, 4, 1)]:
        b = BatchBuilder(magic, codec, base_offset=offset, timestamp_type=ts_type,
                         log_append_time=123_456 if ts_type else None)  # fmt: skip
        for i in range(4):
            b.append(None, -1 if magic == 0 else 1000 + i, b"k%d" % i, b"v" * i)
        offset = b.next_offset + 3
        parts.append(b.build())
    buf = b"".join(parts)
    rb = assert_matches_row_api(buf)
    assert rb.column("magic").to_pylist() == [0] * 8 + [1] * 12 + [2] * 4
    assert rb.column("timestampType").to_pylist()[:8] == [-1] * 8
    assert rb.column("timestampType").to_pylist()[12:16] == [1] * 4
    assert rb.column("timestamp").cast(pa.int64()).to_pylist()[12:16] == [123_456_000] * 4


def test_log_append_time_and_leader_epoch() -> None:
    b = BatchBuilder(2, 0, base_offset=5, timestamp_type=1, log_append_time=99_000,
                     partition_leader_epoch=12)  # fmt: skip
    for i in range(3):
        b.append(None, 10 + i, None, b"x")
    rb = assert_matches_row_api(b.build())
    assert rb.column("timestamp").cast(pa.int64()).to_pylist() == [99_000_000] * 3
    assert rb.column("leaderEpoch").to_pylist() == [12] * 3
    assert rb.column("key").null_count == 3


def test_empty_buffer_and_empty_batch() -> None:
    rb = decode_to_arrow(b"")
    assert rb.num_rows == 0
    assert rb.schema.equals(records_arrow_schema())
    # an empty v2 batch, as compaction leaves: header only, record count 0
    b = BatchBuilder(2, 0, base_offset=10)
    b.append(None, 1, b"k", b"v")
    one = bytearray(b.build())
    empty = bytearray(one[:61])
    empty[8:12] = (61 - 12).to_bytes(4, "big")
    empty[57:61] = bytes(4)
    fix_crc(empty)
    result = decode_columnar(bytes(empty) + bytes(one))
    assert result.batch_count == 2
    assert result.batch.column("offset").to_pylist() == [10]


def test_headers_null_when_absent_and_null_values_kept() -> None:
    b = BatchBuilder(2, 0)
    b.append(None, 1, b"k", b"v", [])
    b.append(None, 2, b"k", b"v", [("", None), ("é", b"")])
    rb = decode_to_arrow(b.build(), columns=["headers"])
    assert rb.column("headers").to_pylist() == [
        None,
        [{"key": "", "value": None}, {"key": "é", "value": b""}],
    ]
    assert rb.column("headers").null_count == 1


def test_invalid_utf8_header_key_is_replaced_like_java() -> None:
    b = BatchBuilder(2, 0)
    b.append(None, 1, b"k", b"v", [("ab", b"1")])
    batch = bytearray(b.build())
    i = bytes(batch).index(b"ab")
    batch[i] = 0xFF
    fix_crc(batch)
    rb = decode_to_arrow(bytes(batch), columns=["headers"])
    rb.validate(full=True)
    assert rb.column("headers").to_pylist() == [[{"key": "\ufffdb", "value": b"1"}]]


def test_constant_columns_and_helper() -> None:
    b = BatchBuilder(2, 0)
    for i in range(5):
        b.append(None, i, None, b"v")
    rb = decode_to_arrow(b.build(), topic="orders-eu", partition=7, segment="seg.log",
                         columns=["topic", "partition", "segment", "offset"])  # fmt: skip
    assert rb.column("topic").to_pylist() == ["orders-eu"] * 5
    assert rb.column("partition").to_pylist() == [7] * 5
    assert rb.column("segment").to_pylist() == ["seg.log"] * 5
    assert decode_to_arrow(b.build(), columns=["topic"]).column("topic").null_count == 5
    assert constant_array("", 3, pa.string()).to_pylist() == ["", "", ""]
    assert constant_array(True, 2, pa.bool_()).to_pylist() == [True, True]
    assert constant_array(-4, 2, pa.int16()).to_pylist() == [-4, -4]


def test_schema_is_what_pyspark_expects() -> None:
    types = pytest.importorskip("pyspark.sql.types")
    from pyspark.sql.pandas.types import to_arrow_schema

    t = types
    header = t.StructType([t.StructField("key", t.StringType()),
                           t.StructField("value", t.BinaryType())])  # fmt: skip
    spark = {
        "key": t.BinaryType(), "value": t.BinaryType(), "topic": t.StringType(),
        "partition": t.IntegerType(), "offset": t.LongType(), "timestamp": t.TimestampType(),
        "timestampType": t.IntegerType(), "headers": t.ArrayType(header),
        "magic": t.ByteType(), "compression": t.StringType(), "producerId": t.LongType(),
        "producerEpoch": t.ShortType(), "sequence": t.IntegerType(),
        "isTransactional": t.BooleanType(), "isControl": t.BooleanType(),
        "leaderEpoch": t.IntegerType(), "batchOffset": t.LongType(), "segment": t.StringType(),
    }  # fmt: skip
    schema = t.StructType([t.StructField(name, spark[name]) for name in RECORD_COLUMNS])
    assert to_arrow_schema(schema, timezone="UTC").equals(records_arrow_schema())
    ddl = records_spark_ddl()
    assert ddl.startswith("`key` binary, `value` binary, `topic` string, `partition` int")
    assert ddl == ", ".join(f"`{name}` {spark[name].simpleString()}" for name in RECORD_COLUMNS)
    assert records_spark_ddl(["offset", "key"]) == "`offset` bigint, `key` binary"


def test_unknown_columns_are_rejected() -> None:
    with pytest.raises(ValueError, match="unknown column"):
        records_arrow_schema(["key", "nope"])
    with pytest.raises(TypeError):
        decode_to_arrow(b"", columns="key")


def test_result_owns_its_memory() -> None:
    b = BatchBuilder(2, 0)
    b.append(None, 1, b"key", b"value")
    buf = bytearray(b.build())
    rb = decode_to_arrow(buf)
    buf[:] = bytes(len(buf))  # the caller reuses its buffer
    assert rb.column("key").to_pylist() == [b"key"]
    assert rb.column("value").to_pylist() == [b"value"]


def test_accepts_any_bytes_like() -> None:
    b = BatchBuilder(2, 0)
    b.append(None, 1, b"key", b"value")
    data = b.build()
    expected = decode_to_arrow(data)
    for buf in (bytearray(data), memoryview(data), np.frombuffer(data, np.uint8),
                memoryview(data + b"\0\0\0\0").cast("I")[: len(data) // 4 * 4 // 4]):  # fmt: skip
        if len(memoryview(buf).cast("B")) != len(data):
            continue
        assert decode_to_arrow(buf).equals(expected)


# -- engine, cache, fallback ----------------------------------------------------------------------


def test_engine_and_warm_up() -> None:
    assert columnar_engine() in ("numba", "python")
    assert warm_up() >= 0.0
    assert warm_up(engine="python") >= 0.0
    with pytest.raises(ValueError, match="not available"):
        decode_to_arrow(b"", engine="cuda")


def test_numba_cache_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "n"))
    assert numba_cache_dir() == str(tmp_path / "n")
    monkeypatch.delenv("NUMBA_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert numba_cache_dir() == str(tmp_path / "kwire" / "numba")


_FALLBACK_SCRIPT = """
import json, sys, warnings
sys.modules["numba"] = None  # as if numba were not installed
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    from kwire.records._columnar import columnar_engine, decode_to_arrow
    data = bytes.fromhex(sys.stdin.read())
    rb = decode_to_arrow(data)
print(json.dumps({
    "engine": columnar_engine(),
    "warnings": [str(w.message) for w in caught],
    "ipc": rb.serialize().to_pybytes().hex(),
}))
"""


def test_without_numba_falls_back_with_a_warning() -> None:
    parts = []
    b = BatchBuilder(2, Compression.GZIP, base_offset=3, producer_id=1, producer_epoch=0,
                     base_sequence=0)  # fmt: skip
    for i in range(20):
        b.append(None, 1000 + i, b"k%d" % i, None if i == 4 else b"v" * i, [("h", b"%d" % i)])
    parts.append(b.build())
    b = BatchBuilder(2, base_offset=23, timestamp_type=1, log_append_time=5)  # producer id -1
    b.append(None, 1, None, b"x", [("é", None)])
    parts.append(b.build())
    parts.append(build_end_txn_marker(False, coordinator_epoch=3, producer_id=2**40,
                                      producer_epoch=1, offset=24))  # fmt: skip
    b = BatchBuilder(1, Compression.LZ4, base_offset=25)
    for i in range(3):
        b.append(None, 7 + i, b"legacy", b"v%d" % i)
    parts.append(b.build())
    data = b"".join(parts)
    env = {**os.environ, "PYTHONWARNINGS": "default"}
    out = subprocess.run(
        [sys.executable, "-c", _FALLBACK_SCRIPT], input=data.hex(), capture_output=True,
        text=True, check=True, env=env,
    )  # fmt: skip
    report = json.loads(out.stdout)
    assert report["engine"] == "python"
    assert any("numba is not installed" in w for w in report["warnings"])
    rb = pa.ipc.read_record_batch(
        pa.py_buffer(bytes.fromhex(report["ipc"])), records_arrow_schema()
    )
    assert rb.equals(decode_to_arrow(data))


def test_timestamps_beyond_microsecond_range_are_null() -> None:
    b = BatchBuilder(2, 0)
    b.append(None, 2**62, b"k", b"v")
    b.append(None, MAX_TS_MS, b"k", b"v")
    rb = assert_matches_row_api(b.build())
    ts = rb.column("timestamp")
    assert ts.null_count == 1
    assert ts.cast(pa.int64()).to_pylist() == [None, MAX_TS_MS * 1000]


def test_count_zero_batch_has_no_records_like_kafka() -> None:
    # Kafka's DefaultRecordBatch.iterator() returns nothing for a count of 0, whatever follows.
    for codec in (Compression.NONE, Compression.ZSTD):
        b = BatchBuilder(2, codec, base_offset=3)
        b.append(None, 1, b"k", b"v")
        batch = bytearray(b.build())
        batch[57:61] = bytes(4)
        if codec:
            batch[61:] = b"\x00" * (len(batch) - 61)  # not even valid zstd any more
        fix_crc(batch)
        result = decode_columnar(bytes(batch))
        assert result.batch.num_rows == 0
        assert result.batch_count == 1


def test_delete_horizon_batches() -> None:
    b = BatchBuilder(2, Compression.LZ4, base_offset=8, delete_horizon_ms=1_000_000)
    for i in range(4):
        b.append(None, 1_000_500 + i, b"k", None if i % 2 else b"v")
    rb = assert_matches_row_api(b.build())
    assert rb.column("timestamp").cast(pa.int64()).to_pylist() == [
        (1_000_500 + i) * 1000 for i in range(4)
    ]


@pytest.mark.slow
def test_kernels_cache_in_numba_cache_dir_even_if_set_after_numba_import(tmp_path: Any) -> None:
    script = (
        "import os, numba\n"  # numba imported (and its config read) before the variable is set
        f"os.environ['NUMBA_CACHE_DIR'] = {str(tmp_path)!r}\n"
        "from kwire.records._columnar import warm_up\n"
        "warm_up()\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    subprocess.run([sys.executable, "-c", script], check=True, env=env)
    cached = [p.name for p in tmp_path.rglob("*.nbi")]
    assert any("walk_records" in name for name in cached), cached


def test_mmap_can_be_closed_after_decoding(tmp_path: Any) -> None:
    import mmap

    b = BatchBuilder(2, Compression.SNAPPY)
    for i in range(50):
        b.append(None, i, b"k", b"v" * i)
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(b.build() + bytes(64))  # a preallocated, zero-filled tail
    with path.open("rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
        result = decode_columnar(m, allow_truncated_tail=True)
        m.close()  # no view of the mapping outlives the call (BufferError otherwise)
    assert result.batch.num_rows == 50
    assert result.truncated_bytes == 64
    assert result.batch.column("value")[49].as_py() == b"v" * 49


def test_no_columns_still_counts_rows() -> None:
    b = BatchBuilder(2, Compression.GZIP)
    for i in range(7):
        b.append(None, i, None, b"v")
    rb = decode_to_arrow(b.build(), columns=[])
    assert rb.num_columns == 0
    assert rb.num_rows == 7
