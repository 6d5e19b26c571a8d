"""Append-path benchmark: in-place offset assignment of a ~1 MiB compressed v2 batch vs rebuilding it.

KIP-31's point (seed 001) is that a broker assigns offsets to a compressed batch without
recompressing it. kwire's ``validate_and_assign`` does what Kafka 3.9's ``LogValidator`` does in
that case: verify the CRC, decompress, walk every record (count, offset deltas, timestamp bounds,
keys) without building objects, then patch the header (base offset, leader epoch; max timestamp
and CRC only when they change). Rebuilding is what a broker must do otherwise: decode every
record, write a new batch with new offsets, recompress.

For each codec one v2 batch of ~1 MiB *compressed* (10-byte keys, 100-byte values, increasing
timestamps, no headers), with two kinds of values: ``random`` (seeded random letters and digits, as
bench_records.py uses: codecs gain little) and ``text`` (seeded random words from a 2,000-word
vocabulary: codecs gain 2-4x, so the batch holds more records). Then, same process, same bytes:

* ``in place``: ``validate_and_assign`` as a broker calls it (the compiled record walk), and
  ``of which decompression``: the part of it spent decompressing (Kafka decompresses too, to
  validate; it is the floor of the in-place cost);
* ``in place, reference walk``: the same with ``compiled=False`` (one Python object per record);
* ``rebuild, same codec``: decode with the row API, ``BatchBuilder`` with the new offsets, build
  (decompress + recompress with the producer's codec: the cost KIP-31 removes);
* ``rebuild, codec change``: ``validate_and_assign`` on a topic whose compression.type differs
  (the rebuild path of the append code itself).

Each figure is the best (minimum) of repeated runs after a warm-up: the machine this runs on is
shared, and the minimum is the figure least disturbed by other processes (``--stat median`` gives
medians instead). The warm-up also compiles the numba walk, whose one-time cost is reported
separately. The ratio is rebuild (same codec) / in place.

    .venv/bin/python bench/bench_append.py [--repeat N] [--stat min|median] [--data random text] [--json]
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import statistics
import sys
import time
from collections.abc import Callable
from importlib.metadata import version as pkg_version
from typing import Any

from kwire.records import (
    BatchBuilder,
    Compression,
    TopicConfig,
    read_batches,
    validate_and_assign,
)
from kwire.records._append_scan import scanner

TARGET_COMPRESSED = 1_000_000  # bytes; stays under Kafka's default max.message.bytes
BASE_TS = 1_700_000_000_000
NOW = BASE_TS + 3_600_000
NEXT_OFFSET = 1_000_000
CODECS = (Compression.GZIP, Compression.SNAPPY, Compression.LZ4, Compression.ZSTD)
ALPHABET = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"


def make_values(kind: str, n: int, seed: int = 11) -> list[bytes]:
    rnd = random.Random(seed)
    if kind == "random":
        return [bytes(rnd.choice(ALPHABET) for _ in range(100)) for _ in range(n)]
    words = [
        bytes(rnd.choice(ALPHABET[:26]) for _ in range(rnd.randint(2, 9))) for _ in range(2_000)
    ]
    values = []
    for _ in range(n):
        text = b""
        while len(text) < 100:
            text += rnd.choice(words) + b" "
        values.append(text[:100])
    return values


def make_batch(codec: Compression, kind: str, n: int) -> bytes:
    b = BatchBuilder(2, codec, producer_id=7, producer_epoch=0, base_sequence=0)
    for i, value in enumerate(make_values(kind, n)):
        b.append(timestamp=BASE_TS + i, key=b"key%07d" % i, value=value)
    return b.build()


def sized_batch(codec: Compression, kind: str) -> tuple[bytes, int]:
    """A batch whose compressed size is just under TARGET_COMPRESSED."""
    probe = make_batch(codec, kind, 2_000)
    n = int(2_000 * TARGET_COMPRESSED / len(probe))
    data = make_batch(codec, kind, n)
    while len(data) > TARGET_COMPRESSED:
        n = int(n * 0.98)
        data = make_batch(codec, kind, n)
    return data, n


STAT: Callable[[list[float]], float] = min


def timed_ms(fn: Callable[[], object], repeat: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return STAT(times) * 1e3


def run_codec(codec: Compression, kind: str, repeat: int) -> dict[str, Any]:
    data, n = sized_batch(codec, kind)
    same = TopicConfig(max_message_bytes=4 << 20)
    other = TopicConfig(
        max_message_bytes=4 << 20,
        compression_type="zstd" if codec != Compression.ZSTD else "lz4",
    )

    def in_place() -> object:
        return validate_and_assign(data, next_offset=NEXT_OFFSET, now_ms=NOW, config=same)

    def in_place_reference() -> object:
        return validate_and_assign(
            data, next_offset=NEXT_OFFSET, now_ms=NOW, config=same, compiled=False
        )

    def rebuild_same_codec() -> bytes:
        (batch,) = read_batches(data)
        out = BatchBuilder(
            2,
            codec,
            base_offset=NEXT_OFFSET,
            producer_id=batch.producer_id,
            producer_epoch=batch.producer_epoch,
            base_sequence=batch.base_sequence,
        )
        for r in batch.records():
            out.append(None, r.timestamp, r.key, r.value, r.headers)
        return out.build()

    def decompress_only() -> object:
        (b,) = read_batches(data)
        return b.records_view()

    def rebuild_codec_change() -> object:
        return validate_and_assign(data, next_offset=NEXT_OFFSET, now_ms=NOW, config=other)

    # Sanity: all four produce the same records at the new offsets.
    fast = validate_and_assign(data, next_offset=NEXT_OFFSET, now_ms=NOW, config=same)
    slow = validate_and_assign(
        data, next_offset=NEXT_OFFSET, now_ms=NOW, config=same, compiled=False
    )
    assert fast.in_place and bytes(fast.records) == bytes(slow.records)
    rebuilt = rebuild_same_codec()
    changed = rebuild_codec_change()
    expected = [(NEXT_OFFSET + i, BASE_TS + i) for i in range(n)]
    for blob in (fast.records, rebuilt, changed.records):  # type: ignore[attr-defined]
        got = [(r.offset, r.timestamp) for b in read_batches(blob) for r in b.records()]
        assert got == expected

    (batch,) = read_batches(data)
    raw, _ = batch.records_view()
    row: dict[str, Any] = {
        "codec": codec.name.lower(),
        "data": kind,
        "records": n,
        "compressed bytes": len(data),
        "uncompressed bytes": len(raw),
        "in place": timed_ms(in_place, repeat),
        "of which decompression": timed_ms(decompress_only, repeat),
        "in place, reference walk": timed_ms(in_place_reference, max(3, repeat // 2)),
        "rebuild, same codec": timed_ms(rebuild_same_codec, max(3, repeat // 2)),
        "rebuild, codec change": timed_ms(rebuild_codec_change, max(3, repeat // 2)),
    }
    row["ratio"] = row["rebuild, same codec"] / row["in place"]
    return row


def numba_first_call_ms() -> float:
    """The one-time cost of loading (or compiling, on a cold cache) the compiled walk."""
    start = time.perf_counter()
    compiled = scanner()
    if compiled is None:
        return float("nan")
    kernel, np = compiled
    kernel(np.zeros(0, dtype=np.uint8), 0, 0, 0, 0, False, 0, 0, False)
    return (time.perf_counter() - start) * 1e3


def environment() -> dict[str, str]:
    env = {"python": platform.python_version(), "machine": platform.machine()}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    env["cpu"] = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    for pkg in ("cramjam", "crc32c", "numba", "numpy"):
        try:
            env[pkg] = pkg_version(pkg)
        except Exception:
            env[pkg] = "not installed"
    return env


def table(rows: list[dict[str, Any]]) -> str:
    cols = [
        "in place",
        "of which decompression",
        "in place, reference walk",
        "rebuild, same codec",
        "rebuild, codec change",
    ]
    lines = [
        "| codec | data | records | compressed | uncompressed | "
        + " | ".join(f"{c} (ms)" for c in cols)
        + " | rebuild / in place |",
        "|---|---|---:|---:|---:|" + "---:|" * len(cols) + "---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['codec']} | {r['data']} | {r['records']:,} | {r['compressed bytes']:,} | "
            f"{r['uncompressed bytes']:,} | "
            + " | ".join(f"{r[c]:.2f}" for c in cols)
            + f" | {r['ratio']:.0f}x |"
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=21, help="timed runs per figure")
    parser.add_argument("--json", action="store_true", help="print JSON instead of markdown")
    parser.add_argument(
        "--stat", choices=("min", "median"), default="min", help="statistic over the runs"
    )
    parser.add_argument(
        "--data",
        nargs="+",
        choices=("random", "text"),
        default=["random", "text"],
        help="kinds of values to run",
    )
    args = parser.parse_args()
    global STAT
    STAT = min if args.stat == "min" else statistics.median
    first_call = numba_first_call_ms()
    rows = []
    for kind in args.data:
        for codec in CODECS:
            rows.append(run_codec(codec, kind, args.repeat))
            print(f"  {codec.name.lower()} / {kind}: done", file=sys.stderr)
    env = environment()
    if args.json:
        print(json.dumps({"environment": env, "numba first call ms": first_call, "rows": rows}))
        return 0
    print(", ".join(f"{k} {v}" for k, v in env.items()))
    print(f"compiled walk, first call in this process: {first_call:.0f} ms")
    print(f"{args.stat} of {args.repeat} runs (reference walk and rebuilds: of half as many)\n")
    print(table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
