"""Records benchmark: one v2 batch of 10,000 records, every codec, encode and decode.

Contenders, same run, same bytes: kwire's row API (``BatchBuilder`` / ``read_batches``), kwire's
columnar decoder (``decode_to_arrow``), kafka-python 3.0.12 (pure Python,
``kafka.record.default_records``) and aiokafka 0.14.0 (its Cython extension,
``aiokafka.record._crecords``; the script refuses to run if aiokafka fell back to pure Python).

Records: 10-byte key, 100-byte value (letters and digits from a seeded generator, so codecs have
something to do but not everything), increasing timestamps, no headers. Before timing, every
library's encoding is decoded by kwire and every library decodes kwire's encoding, and the records
are checked to be equal.

"Decode touching every field": every library verifies the batch CRC (kafka-python and aiokafka
through ``validate_crc()``, as their consumers do with ``check_crcs=True``; kwire always), then
reads offset, timestamp, timestamp type, key, value and headers of every record (``len()`` of key
and value). kwire's row API hands out ``memoryview`` slices (zero-copy) where the others build
``bytes``. The columnar decoder produces every column of ``records_arrow_schema()`` (Arrow arrays
that own their memory) and no Python object per record.

Also: the in-place offset assignment of a ~1 MiB compressed batch (kwire.records._append, helper
H5) against rebuilding it, and the numba cold/warm start of the columnar decoder.

    .venv/bin/python bench/bench_records.py [--quick]

Prints markdown tables; docs/benchmarks.md records a run with the machine and versions.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from importlib.metadata import version as pkg_version
from typing import Any

N_RECORDS = 10_000
KEY_SIZE = 10
VALUE_SIZE = 100
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
BASE_TS = 1_700_000_000_000


def make_records(n: int = N_RECORDS, seed: int = 42) -> list[tuple[int, int, bytes, bytes]]:
    rnd = random.Random(seed)
    alphabet = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
    out = []
    for i in range(n):
        key = b"key%07d" % i
        value = bytes(rnd.choice(alphabet) for _ in range(VALUE_SIZE))
        out.append((i, BASE_TS + i, key, value))
    assert all(len(k) == KEY_SIZE and len(v) == VALUE_SIZE for _, _, k, v in out)
    return out


def median_time(fn: Callable[[], object], budget: float) -> float:
    """Median CPU seconds per call (see ``interleaved``)."""
    return interleaved({"fn": fn}, budget)["fn"]


def interleaved(fns: dict[str, Callable[[], object]], budget: float) -> dict[str, float]:
    """Median CPU seconds per call of each function, timed round-robin.

    The machine is shared with other jobs (load well above its 2 cores at times), so wall-clock
    time of a millisecond-long call mostly measures the scheduler. The process's CPU time
    (``time.process_time``: this process only, all its threads) does not count time spent
    waiting for a core. Rounds alternate between the contenders, in a shuffled order (after one
    warm-up call each), so that what contention remains (caches, memory bandwidth, what the
    previous contender left in the allocator) falls on all of them alike, until ``budget`` wall
    seconds per function are spent (at least 5 rounds).
    """
    for fn in fns.values():
        fn()
    rounds: dict[str, list[float]] = {name: [] for name in fns}
    deadline = time.perf_counter() + budget * len(fns)
    order = list(fns.items())
    shuffle = random.Random(0).shuffle
    while time.perf_counter() < deadline or len(rounds[order[0][0]]) < 5:
        shuffle(order)  # no contender always runs right after the same other one
        for name, fn in order:
            start = time.process_time()
            fn()
            rounds[name].append(time.process_time() - start)
    return {name: statistics.median(times) for name, times in rounds.items()}


# -- encoders --------------------------------------------------------------------------------------


def encode_kwire(records: list[tuple[int, int, bytes, bytes]], codec: int) -> bytes:
    from kwire.records import BatchBuilder

    b = BatchBuilder(2, codec)
    append = b.append
    for offset, ts, key, value in records:
        append(offset, ts, key, value)
    return b.build()


def _encode_foreign(module: Any, records: list[tuple[int, int, bytes, bytes]], codec: int) -> bytes:
    b = module.DefaultRecordBatchBuilder(
        magic=2, compression_type=codec, is_transactional=0, producer_id=-1,
        producer_epoch=-1, base_sequence=-1, batch_size=2**30,
    )  # fmt: skip
    append = b.append
    for offset, ts, key, value in records:
        append(offset, timestamp=ts, key=key, value=value, headers=[])
    return bytes(b.build())


def encode_kafka_python(records: list[tuple[int, int, bytes, bytes]], codec: int) -> bytes:
    import kafka.record.default_records as m

    return _encode_foreign(m, records, codec)


def encode_kafka_python_level6(records: list[tuple[int, int, bytes, bytes]], codec: int) -> bytes:
    """kafka-python with gzip at Kafka's default level 6 (its own default is 9)."""
    import kafka.codec
    import kafka.record.default_records as m

    default = m.gzip_encode
    m.gzip_encode = lambda data: kafka.codec.gzip_encode(data, compresslevel=6)
    try:
        return _encode_foreign(m, records, codec)
    finally:
        m.gzip_encode = default


def with_stdlib_zlib(fn: Callable[[], object]) -> Callable[[], object]:
    """``fn`` run with kwire's gzip codec on the standard library's zlib instead of zlib-ng."""
    import zlib

    from kwire.records import _codecs

    def run() -> object:
        default = _codecs._zlib
        _codecs._zlib = zlib
        try:
            return fn()
        finally:
            _codecs._zlib = default

    return run


def encode_aiokafka(records: list[tuple[int, int, bytes, bytes]], codec: int) -> bytes:
    import aiokafka.record.default_records as m

    return _encode_foreign(m, records, codec)


# -- decoders --------------------------------------------------------------------------------------


def decode_kwire_rows(buf: bytes) -> int:
    from kwire.records import read_batches

    n = 0
    for batch in read_batches(buf):
        for r in batch:
            _ = (r.offset, r.timestamp, r.timestamp_type, len(r.key), len(r.value), r.headers)  # type: ignore[arg-type]
            n += 1
    return n


def decode_kwire_columnar(buf: bytes) -> int:
    from kwire.records._columnar import decode_to_arrow

    return int(decode_to_arrow(buf).num_rows)


def decode_kwire_columnar_spark(buf: bytes) -> int:
    from kwire.records._columnar import decode_to_arrow

    cols = ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType", "headers"]
    return int(decode_to_arrow(buf, columns=cols, topic="t", partition=0).num_rows)


def _decode_foreign(cls: Any, buf: bytes) -> int:
    batch = cls(buf)
    if not batch.validate_crc():
        raise RuntimeError("CRC mismatch")
    n = 0
    for r in batch:
        _ = (r.offset, r.timestamp, r.timestamp_type, len(r.key), len(r.value), r.headers)
        n += 1
    return n


def decode_kafka_python(buf: bytes) -> int:
    from kafka.record.default_records import DefaultRecordBatch

    return _decode_foreign(DefaultRecordBatch, buf)


def decode_aiokafka(buf: bytes) -> int:
    from aiokafka.record.default_records import DefaultRecordBatch

    return _decode_foreign(DefaultRecordBatch, buf)


def check_aiokafka_is_cython() -> str:
    import aiokafka.record.default_records as m

    cls = m.DefaultRecordBatch
    mod = sys.modules[cls.__module__]
    path = getattr(mod, "__file__", "") or ""
    if not cls.__module__.startswith("aiokafka.record._crecords") or not path.endswith(".so"):
        raise SystemExit(f"aiokafka is not using its C extension ({cls.__module__}, {path})")
    return os.path.basename(path)


def rows_of(buf: bytes) -> list[tuple[int, int, bytes, bytes]]:
    from kwire.records import read_batches

    return [
        (r.offset, r.timestamp, bytes(r.key), bytes(r.value))  # type: ignore[arg-type]
        for batch in read_batches(buf)
        for r in batch
    ]


def foreign_rows(cls: Any, buf: bytes) -> list[tuple[int, int, bytes, bytes]]:
    return [(r.offset, r.timestamp, r.key, r.value) for r in cls(buf)]


# -- the runs --------------------------------------------------------------------------------------


def run_codecs(budget: float) -> list[dict[str, Any]]:
    import aiokafka.record.default_records as aio
    import kafka.record.default_records as kp
    import pyarrow as pa

    from kwire.records._columnar import decode_to_arrow, warm_up

    warm_up()
    records = make_records()
    results = []
    for codec, name in enumerate(CODECS):
        ours = encode_kwire(records, codec)
        theirs = {
            "kafka-python": encode_kafka_python(records, codec),
            "aiokafka": encode_aiokafka(records, codec),
        }
        # same records everywhere before anything is timed
        assert rows_of(ours) == records
        for buf in theirs.values():
            assert rows_of(buf) == records
        assert foreign_rows(kp.DefaultRecordBatch, ours) == records
        assert foreign_rows(aio.DefaultRecordBatch, ours) == records
        rb = decode_to_arrow(ours)
        assert rb.column("value").to_pylist() == [r[3] for r in records]
        assert rb.column("timestamp").cast(pa.int64()).to_pylist() == [r[1] * 1000 for r in records]

        row: dict[str, Any] = {"codec": name, "bytes": len(ours)}
        encoders: dict[str, Callable[[], object]] = {
            "enc kwire": lambda c=codec: encode_kwire(records, c),
            "enc kafka-python": lambda c=codec: encode_kafka_python(records, c),
            "enc aiokafka": lambda c=codec: encode_aiokafka(records, c),
        }
        decoders: dict[str, Callable[[], object]] = {
            "dec kwire rows": lambda b=ours: decode_kwire_rows(b),
            "dec kwire columnar": lambda b=ours: decode_kwire_columnar(b),
            "dec kwire columnar (spark cols)": lambda b=ours: decode_kwire_columnar_spark(b),
            "dec kafka-python": lambda b=ours: decode_kafka_python(b),
            "dec aiokafka": lambda b=ours: decode_aiokafka(b),
        }
        if codec == 1:  # gzip, apples to apples: same level, same zlib
            level6 = encode_kafka_python_level6(records, codec)
            assert rows_of(level6) == records and level6 != theirs["kafka-python"]
            encoders["enc kafka-python level 6"] = lambda: encode_kafka_python_level6(records, 1)
            encoders["enc kwire stdlib zlib"] = with_stdlib_zlib(lambda: encode_kwire(records, 1))
            decoders["dec kwire rows stdlib zlib"] = with_stdlib_zlib(
                lambda b=ours: decode_kwire_rows(b)
            )
        row.update(interleaved(encoders, budget))
        row.update(interleaved(decoders, budget))
        results.append(row)
        print(f"  {name}: done", file=sys.stderr)
    return results


def run_append(budget: float) -> dict[str, Any] | None:
    """In-place offset assignment of a ~1 MiB compressed batch vs rebuilding it."""
    try:
        from kwire.records._append import TopicConfig, validate_and_assign
    except ImportError:
        return None
    from kwire.records import BatchBuilder, Compression, read_batches

    codec = Compression.LZ4
    records = make_records(9_000, seed=7)
    b = BatchBuilder(2, codec)
    for offset, ts, key, value in records:
        b.append(offset, ts, key, value)
    batch = b.build()
    limit = 4 * 1024 * 1024
    now = BASE_TS + 10**6
    same = TopicConfig(compression_type="producer", max_message_bytes=limit)
    other = TopicConfig(compression_type="zstd", max_message_bytes=limit)

    def in_place() -> Any:
        return validate_and_assign(batch, next_offset=1_000_000, now_ms=now, config=same)

    def in_place_mutate() -> Any:
        buf = bytearray(batch)  # the copy is charged: mutate=True needs a writable buffer
        return validate_and_assign(buf, next_offset=1_000_000, now_ms=now, config=same, mutate=True)

    def rebuild_codec_change() -> Any:
        return validate_and_assign(batch, next_offset=1_000_000, now_ms=now, config=other)

    def rebuild_same_codec() -> bytes:
        # what a broker without KIP-31 does: decode, re-encode with new offsets, recompress
        out = BatchBuilder(2, codec, base_offset=1_000_000)
        for batch_ in read_batches(batch):
            for r in batch_:
                out.append(None, r.timestamp, r.key, r.value, r.headers)
        return out.build()

    def header_patch_only() -> bytearray:
        # the offset assignment itself: base offset and leader epoch lie outside the CRC
        buf = bytearray(batch)
        buf[0:8] = (1_000_000).to_bytes(8, "big")
        buf[12:16] = (5).to_bytes(4, "big")
        return buf

    r = in_place()
    assert r.in_place and r.first_offset == 1_000_000, r
    assert not rebuild_codec_change().in_place
    rebuilt = rebuild_same_codec()
    assert [x.offset for b_ in read_batches(rebuilt) for x in b_][:2] == [1_000_000, 1_000_001]
    timings = interleaved(
        {
            "in place (validate_and_assign)": in_place,
            "in place, mutate=True (incl. copy)": in_place_mutate,
            "header patch only (bytearray copy + 2 fields)": header_patch_only,
            "rebuild: codec change lz4->zstd (validate_and_assign)": rebuild_codec_change,
            "rebuild: same codec (row API decode + BatchBuilder)": rebuild_same_codec,
        },
        budget,
    )
    return {
        "compressed bytes": len(batch),
        "records": len(records),
        "codec": codec.name.lower(),
        **timings,
    }


def run_small_batches(budget: float) -> list[dict[str, Any]]:
    """The same 10,000 records in many small batches (a segment as producers write it)."""
    from aiokafka.record.default_records import DefaultRecordBatch

    from kwire.records._columnar import decode_to_arrow

    records = make_records()
    out = []
    for per_batch in (10, 100):
        for codec in range(len(CODECS)):
            parts = [
                encode_kwire(records[i : i + per_batch], codec)
                for i in range(0, len(records), per_batch)
            ]
            buf = b"".join(parts)
            pieces = parts  # aiokafka reads one batch per object, from its own bytes

            def aio(pieces: list[bytes] = pieces) -> int:
                return sum(_decode_foreign(DefaultRecordBatch, p) for p in pieces)

            assert decode_to_arrow(buf).num_rows == aio() == len(records)
            t = interleaved({"columnar": lambda b=buf: decode_to_arrow(b), "aiokafka": aio}, budget)
            out.append({"records per batch": per_batch, "codec": CODECS[codec], **t})
    return out


SEGMENT_RECORDS = 400_000
SEGMENT_BATCH = 200
SPARK_COLUMNS = ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType",
                 "headers"]  # fmt: skip


def run_segment(budget: float) -> list[dict[str, Any]]:
    """Throughput on a segment-sized buffer: 400,000 records in batches of 200, Spark's columns."""
    from aiokafka.record.default_records import DefaultRecordBatch

    from kwire.records._columnar import decode_to_arrow

    records = make_records(SEGMENT_RECORDS // 4, seed=3)
    payload = sum(len(k) + len(v) for _, _, k, v in records) * 4
    out = []
    for codec, name in enumerate(CODECS):
        parts = [
            encode_kwire(records[i : i + SEGMENT_BATCH], codec)
            for i in range(0, len(records), SEGMENT_BATCH)
        ] * 4
        buf = b"".join(parts)

        def columnar(b: bytes = buf) -> int:
            return int(decode_to_arrow(b, columns=SPARK_COLUMNS, topic="t", partition=0).num_rows)

        def aio(pieces: list[bytes] = parts) -> int:
            return sum(_decode_foreign(DefaultRecordBatch, p) for p in pieces)

        assert columnar() == aio() == SEGMENT_RECORDS
        t = interleaved({"columnar": columnar, "aiokafka": aio}, budget)
        out.append({"codec": name, "bytes": len(buf), "payload": payload, **t})
    return out


_COLD_SCRIPT = """
import time
t0 = time.perf_counter()
from kwire.records._columnar import decode_to_arrow
from kwire.records import BatchBuilder
t1 = time.perf_counter()
b = BatchBuilder(2, 0)
b.append(None, 1, b"k", b"v", [("h", b"x")])
data = b.build()
t2 = time.perf_counter()
decode_to_arrow(data)
t3 = time.perf_counter()
decode_to_arrow(data)
t4 = time.perf_counter()
print(t1 - t0, t3 - t2, t4 - t3)
"""


def run_cold_start() -> dict[str, Any]:
    """First decode in a fresh interpreter: empty numba cache (compile) vs populated cache."""
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "NUMBA_CACHE_DIR": cache}
        for label in ("cold (empty cache)", "warm (cache populated)"):
            res = subprocess.run(
                [sys.executable, "-c", _COLD_SCRIPT], env=env, capture_output=True, text=True,
                check=True,
            )  # fmt: skip
            imp, first, second = (float(x) for x in res.stdout.split())
            out[label] = {"import": imp, "first decode": first, "second decode": second}
    return out


def versions() -> dict[str, str]:
    names = ["kwire", "kafka-python", "aiokafka", "numba", "numpy", "pyarrow", "cramjam", "crc32c"]
    out = {"python": platform.python_version(), "machine": platform.machine()}
    for name in names:
        try:
            out[name] = pkg_version(name)
        except Exception:
            out[name] = "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    out["cpu"] = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    out["cpus"] = str(os.cpu_count())
    return out


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f}"


def render(
    codec_rows: list[dict[str, Any]],
    append: dict[str, Any] | None,
    cold: dict[str, Any],
    small: list[dict[str, Any]],
    segment: list[dict[str, Any]],
) -> str:
    lines = []
    lines.append(
        f"Decode (CPU ms per batch of {N_RECORDS:,} records; lower is better; "
        "ratio = other / kwire)\n"
    )
    lines.append(
        "| codec | batch bytes | kwire rows | kwire columnar | columnar (Spark cols) "
        "| kafka-python | aiokafka (Cython) | kafka-python / rows | aiokafka / columnar |"
    )
    lines.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in codec_rows:
        lines.append(
            f"| {r['codec']} | {r['bytes']:,} | {ms(r['dec kwire rows'])} "
            f"| {ms(r['dec kwire columnar'])} | {ms(r['dec kwire columnar (spark cols)'])} "
            f"| {ms(r['dec kafka-python'])} | {ms(r['dec aiokafka'])} "
            f"| {r['dec kafka-python'] / r['dec kwire rows']:.1f}x "
            f"| {r['dec aiokafka'] / r['dec kwire columnar']:.2f}x |"
        )
    lines.append("")
    lines.append(f"Encode (CPU ms per batch of {N_RECORDS:,} records)\n")
    lines.append(
        "| codec | kwire BatchBuilder | kafka-python | aiokafka (Cython) "
        "| kafka-python / kwire | aiokafka / kwire |"
    )
    lines.append("|---|---:|---:|---:|---:|---:|")
    for r in codec_rows:
        lines.append(
            f"| {r['codec']} | {ms(r['enc kwire'])} | {ms(r['enc kafka-python'])} "
            f"| {ms(r['enc aiokafka'])} | {r['enc kafka-python'] / r['enc kwire']:.1f}x "
            f"| {r['enc aiokafka'] / r['enc kwire']:.2f}x |"
        )
    lines.append("")
    for r in codec_rows:
        if "enc kafka-python level 6" not in r:
            continue
        lines.append(
            "gzip, like for like (CPU ms; kafka-python's own default level is 9, Kafka's is 6; "
            "kwire uses zlib-ng when installed, kafka-python the standard library's zlib)\n"
        )
        lines.append("| contender | encode | decode | encode / kwire's | decode / kwire's |")
        lines.append("|---|---:|---:|---:|---:|")
        enc, dec = r["enc kwire"], r["dec kwire rows"]
        for label, e, d in (
            ("kwire rows, zlib-ng (default)", enc, dec),
            ("kwire rows, standard zlib", r["enc kwire stdlib zlib"],
             r["dec kwire rows stdlib zlib"]),
            ("kafka-python, level 6", r["enc kafka-python level 6"], r["dec kafka-python"]),
            ("kafka-python, level 9 (its default)", r["enc kafka-python"],
             r["dec kafka-python"]),
        ):  # fmt: skip
            lines.append(f"| {label} | {ms(e)} | {ms(d)} | {e / enc:.1f}x | {d / dec:.1f}x |")
        lines.append("")
    lines.append(
        f"Decode of the same {N_RECORDS:,} records in many small batches "
        "(CPU ms for all of them; aiokafka: one DefaultRecordBatch per batch)\n"
    )
    lines.append(
        "| records per batch | codec | kwire columnar | aiokafka (Cython) | aiokafka / columnar |"
    )
    lines.append("|---:|---|---:|---:|---:|")
    for r in small:
        lines.append(
            f"| {r['records per batch']} | {r['codec']} | {ms(r['columnar'])} "
            f"| {ms(r['aiokafka'])} | {r['aiokafka'] / r['columnar']:.2f}x |"
        )
    lines.append("")
    lines.append(
        f"Segment-sized buffer: {SEGMENT_RECORDS:,} records in batches of {SEGMENT_BATCH}, "
        "Spark's 8 columns (CPU time; MB/s of batch bytes in the buffer)\n"
    )
    lines.append(
        "| codec | buffer MB | kwire columnar ms | MB/s | M records/s "
        "| aiokafka (Cython) ms | aiokafka / columnar |"
    )
    lines.append("|---|---:|---:|---:|---:|---:|---:|")
    for r in segment:
        lines.append(
            f"| {r['codec']} | {r['bytes'] / 1e6:.1f} | {ms(r['columnar'])} "
            f"| {r['bytes'] / 1e6 / r['columnar']:,.0f} "
            f"| {SEGMENT_RECORDS / 1e6 / r['columnar']:.1f} | {ms(r['aiokafka'])} "
            f"| {r['aiokafka'] / r['columnar']:.1f}x |"
        )
    lines.append("")
    if append is None:
        lines.append("In-place offset assignment: kwire.records._append not available.\n")
    else:
        lines.append(
            f"Offset assignment of one {append['codec']} batch of {append['compressed bytes']:,} "
            f"compressed bytes ({append['records']:,} records), CPU ms\n"
        )
        lines.append("| path | ms | rebuild (same codec) / this |")
        lines.append("|---|---:|---:|")
        base = append["rebuild: same codec (row API decode + BatchBuilder)"]
        for key, value in append.items():
            if isinstance(value, float):
                lines.append(f"| {key} | {ms(value)} | {base / value:.1f}x |")
        lines.append("")
    lines.append("Columnar decoder start-up in a fresh interpreter (wall seconds)\n")
    lines.append("| numba cache | import | first decode | second decode |")
    lines.append("|---|---:|---:|---:|")
    for label, t in cold.items():
        lines.append(
            f"| {label} | {t['import']:.3f} | {t['first decode']:.3f} | {t['second decode']:.5f} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="short timing budget (smoke run)")
    parser.add_argument("--json", action="store_true", help="also print the raw numbers as JSON")
    args = parser.parse_args()
    budget = 0.3 if args.quick else 2.0
    ext = check_aiokafka_is_cython()
    info = versions()
    print(f"aiokafka extension: {ext}", file=sys.stderr)
    codec_rows = run_codecs(budget)
    small = run_small_batches(budget)
    segment = run_segment(budget)
    append = run_append(budget)
    cold = run_cold_start()
    print("Versions: " + ", ".join(f"{k} {v}" for k, v in info.items()) + "\n")
    print(render(codec_rows, append, cold, small, segment))
    if args.json:
        print(json.dumps({"versions": info, "codecs": codec_rows, "small": small,
                          "segment": segment, "append": append, "cold": cold},
                         indent=1))  # fmt: skip


if __name__ == "__main__":
    main()
