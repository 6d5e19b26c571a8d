"""Protocol benchmark: MetadataResponse encode/decode, kwire vs kafka-python 3.0.12 vs kio 0.6.5.

Same inputs, same run: the response bytes are made once (by kafka-python), every library decodes
those bytes and re-encodes its own decoded object, and the three encodings are checked to be
identical before anything is timed. Also measures import time and first-use time (a fresh
interpreter that imports the library and decodes one response), which is where code generation
and class creation costs show up.

    .venv/bin/python bench/bench_protocol.py [--quick]

Prints a markdown table; docs/benchmarks.md records a run with the machine and versions.
"""

from __future__ import annotations

import argparse
import functools
import io
import platform
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from importlib.metadata import version as pkg_version

CASES = [(100, 10, 5), (100, 10, 12), (1000, 12, 12)]  # (topics, partitions per topic, version)


def make_bytes(topics: int, partitions: int, version: int) -> bytes:
    from kafka.protocol.metadata import MetadataResponse

    broker = MetadataResponse.MetadataResponseBroker
    topic = MetadataResponse.MetadataResponseTopic
    partition = topic.MetadataResponsePartition
    msg = MetadataResponse[version](
        throttle_time_ms=0,
        brokers=[
            broker(node_id=i, host=f"broker-{i}.kafka.internal", port=9092, rack=f"rack-{i % 3}")
            for i in range(6)
        ],
        cluster_id="Ck3bZ2cQSeqVbX6vB0pPqA",
        controller_id=1,
        topics=[
            topic(
                error_code=0,
                name=f"events.orders.{t:05d}",
                topic_id=uuid.UUID(int=(t * 2654435761) % (1 << 128) or 1),
                is_internal=False,
                partitions=[
                    partition(
                        error_code=0,
                        partition_index=p,
                        leader_id=p % 6,
                        leader_epoch=7 + p,
                        replica_nodes=[p % 6, (p + 1) % 6, (p + 2) % 6],
                        isr_nodes=[p % 6, (p + 1) % 6, (p + 2) % 6],
                        offline_replicas=[],
                    )
                    for p in range(partitions)
                ],
                authorized_operations=set(),
            )
            for t in range(topics)
        ],
    )
    return bytes(msg.encode(version=version))


def best_of(fn: Callable[[], object], budget: float) -> float:
    """Median seconds per call over rounds filling ``budget`` seconds (after one warm-up)."""
    fn()
    per_round: list[float] = []
    deadline = time.perf_counter() + budget
    while time.perf_counter() < deadline or len(per_round) < 5:
        start = time.perf_counter()
        fn()
        per_round.append(time.perf_counter() - start)
    return statistics.median(per_round)


def libraries(
    version: int,
) -> dict[str, tuple[Callable[[bytes], object], Callable[[object], bytes]]]:
    from kafka.protocol.metadata import MetadataResponse as KpMetadata

    from kwire.protocol import message_class

    kw = message_class("MetadataResponse")
    libs: dict[str, tuple[Callable[[bytes], object], Callable[[object], bytes]]] = {
        "kwire": (lambda b: kw.decode(b, version), lambda m: m.encode(version)),  # type: ignore[attr-defined]
        "kafka-python": (
            # The versioned class decodes into an object that can be encoded again.
            lambda b: KpMetadata[version].decode(b),
            lambda m: bytes(m.encode()),  # type: ignore[attr-defined]
        ),
    }
    try:
        import importlib

        from kio.serial import entity_reader, entity_writer

        mod = importlib.import_module(f"kio.schema.metadata.v{version}.response")
        entity = mod.MetadataResponse
        reader, writer = entity_reader(entity), entity_writer(entity)

        def kio_encode(m: object) -> bytes:
            buf = io.BytesIO()
            writer(buf, m)
            return buf.getvalue()

        libs["kio"] = (lambda b: reader(b, 0)[0], kio_encode)
    except ImportError:  # kio has no such version
        pass
    return libs


FRESH = {
    "kwire": "from kwire.protocol import message_class; c = message_class('MetadataResponse')",
    "kafka-python": "from kafka.protocol.metadata import MetadataResponse as c",
    "kio": "from kio.schema.metadata.v12.response import MetadataResponse; "
    "from kio.serial import entity_reader; r = entity_reader(MetadataResponse)",
}
FIRST_USE = {
    "kwire": "c.decode(data, 12)",
    "kafka-python": "c[12].decode(data)",
    "kio": "r(data, 0)",
}


def fresh_process_ms(setup: str, use: str, data_path: str) -> tuple[float, float]:
    """(import ms, first decode ms) measured inside a fresh interpreter."""
    code = (
        "import time; t0 = time.perf_counter()\n"
        f"{setup}\n"
        "t1 = time.perf_counter()\n"
        f"data = open({data_path!r}, 'rb').read()\n"
        "t2 = time.perf_counter()\n"
        f"{use}\n"
        "t3 = time.perf_counter()\n"
        "print((t1 - t0) * 1e3, (t3 - t2) * 1e3)\n"
    )
    runs = []
    for _ in range(5):
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        )
        a, b = out.stdout.split()
        runs.append((float(a), float(b)))
    return statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="shorter timing budget")
    args = parser.parse_args()
    budget = 0.5 if args.quick else 2.0

    print(
        f"Python {platform.python_version()} on {platform.machine()}, {platform.processor() or '?'}"
    )
    print(
        "kwire "
        + pkg_version("kwire")
        + f", kafka-python {pkg_version('kafka-python')}, kio {pkg_version('kio')}\n"
    )
    print(
        "| case | library | decode ms | encode ms | decode vs kafka-python | encode vs kafka-python | decode vs kio | encode vs kio |"
    )
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for topics, partitions, version in CASES:
        data = make_bytes(topics, partitions, version)
        results: dict[str, tuple[float, float]] = {}
        for name, (decode, encode) in libraries(version).items():
            obj = decode(data)
            again = encode(obj)
            if again != data:
                raise SystemExit(
                    f"{name} re-encoded v{version} differently: the comparison is void"
                )
            dec_t = best_of(functools.partial(decode, data), budget)
            enc_t = best_of(functools.partial(encode, obj), budget)
            results[name] = (dec_t, enc_t)
        kp, kio_r = results["kafka-python"], results.get("kio")
        for name, (dec, enc) in results.items():
            vs_kio = (
                (f"{kio_r[0] / dec:.2f}x", f"{kio_r[1] / enc:.2f}x") if kio_r else ("n/a", "n/a")
            )
            print(
                f"| {topics}x{partitions} v{version} ({len(data) // 1024} KiB) | {name} | {dec * 1e3:.3f} | "
                f"{enc * 1e3:.3f} | {kp[0] / dec:.2f}x | {kp[1] / enc:.2f}x | {vs_kio[0]} | {vs_kio[1]} |"
            )
    print("\nRatios are speed-ups of the row's library over the peer (higher is faster).\n")

    import tempfile

    with tempfile.NamedTemporaryFile(suffix=".bin", delete=False) as fh:
        fh.write(make_bytes(100, 10, 12))
    print("| library | import ms | first decode ms (100x10 v12, fresh process) |")
    print("| --- | ---: | ---: |")
    for name, setup in FRESH.items():
        imp, first = fresh_process_ms(setup, FIRST_USE[name], fh.name)
        print(f"| {name} | {imp:.1f} | {first:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
