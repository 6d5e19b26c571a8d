"""Avro decoding benchmark: Confluent-framed Avro values to Arrow columns.

Contenders, same bytes, same Arrow result (checked equal before timing):

* **kwire** — what the kafka-log source does with ``valueFormat=avro``
  (``kwire.spark._registry``): schema ids read for the whole column with numpy, then the compiled
  Avro decoder (``kwire.spark._avro.AvroDecoder``, one numba kernel interpreting the schema) fills
  Arrow buffers; no Python object per record.
* **fastavro loop** — the per-record baseline: for each value, strip the 5-byte prefix,
  ``fastavro.schemaless_reader`` into a dict, then ``pa.array(dicts, type)`` builds the same
  Arrow struct column.

Records: an ``Order`` record of 9 fields (long, string, double, nullable int, array of strings,
map of longs, enum, timestamp-millis, a nullable nested record), seeded generator, 200,000 values
in batches of 20,000 (one Arrow batch each, as the reader yields). Best of ``--repeat`` runs.

    .venv/bin/python bench/bench_avro.py [--records 200000] [--batch 20000] [--repeat 5]

Prints a markdown table; docs/benchmarks.md ("Avro decoding") records a run.
"""

from __future__ import annotations

import argparse
import datetime as dt
import io
import json
import platform
import random
import time
from typing import Any

import fastavro
import numpy as np
import pyarrow as pa

from kwire.spark._avro import avro_arrow_type, parse_avro
from kwire.spark._registry import SchemaEntry, SchemaStore, _Avro

SCHEMA = {
    "type": "record",
    "name": "Order",
    "namespace": "bench",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "customer", "type": "string"},
        {"name": "amount", "type": "double"},
        {"name": "quantity", "type": ["null", "int"], "default": None},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "attributes", "type": {"type": "map", "values": "long"}},
        {
            "name": "status",
            "type": {"type": "enum", "name": "Status", "symbols": ["NEW", "PAID", "SHIPPED"]},
        },
        {"name": "created", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {
            "name": "address",
            "type": [
                "null",
                {
                    "type": "record",
                    "name": "Address",
                    "fields": [
                        {"name": "city", "type": "string"},
                        {"name": "zip", "type": ["null", "string"], "default": None},
                    ],
                },
            ],
            "default": None,
        },
    ],
}


def make_values(n: int, parsed: Any, seed: int = 7) -> list[bytes]:
    rng = random.Random(seed)
    base = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
    out = []
    for i in range(n):
        order = {
            "id": i,
            "customer": f"customer-{rng.randrange(10_000)}",
            "amount": rng.random() * 1000,
            "quantity": None if rng.random() < 0.2 else rng.randrange(100),
            "tags": [f"tag{rng.randrange(50)}" for _ in range(rng.randrange(4))],
            "attributes": {f"a{j}": rng.randrange(1 << 40) for j in range(rng.randrange(3))},
            "status": rng.choice(["NEW", "PAID", "SHIPPED"]),
            "created": base + dt.timedelta(milliseconds=rng.randrange(1 << 34)),
            "address": None
            if rng.random() < 0.3
            else {
                "city": f"city{rng.randrange(500)}",
                "zip": None if rng.random() < 0.5 else "75001",
            },
        }
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, parsed, order)
        out.append(b"\x00" + (1).to_bytes(4, "big") + buf.getvalue())
    return out


#: The reader schema of the resolution rows: the subject's next version, one field added.
SCHEMA_V2 = {
    **SCHEMA,
    "fields": [*SCHEMA["fields"], {"name": "channel", "type": "string", "default": "web"}],
}


def fastavro_loop(
    column: pa.Array, parsed: Any, arrow_type: pa.DataType, reader: Any = None
) -> pa.Array:
    values = []
    for raw in column.to_pylist():
        value = fastavro.schemaless_reader(io.BytesIO(raw[5:]), parsed, reader or parsed)
        values.append(value)
    return pa.array(values, type=arrow_type)


def best(fn: Any, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--batch", type=int, default=20_000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()

    parsed = parse_avro(json.dumps(SCHEMA))
    entry = SchemaEntry(1, "AVRO", json.dumps(SCHEMA), subject="orders-value", version=1)
    store = SchemaStore()
    store.add(entry)
    kwire_avro = _Avro(store, entry)
    arrow_type = avro_arrow_type(kwire_avro.expanded)
    values = make_values(args.records, parsed)
    batches = [
        pa.array(values[i : i + args.batch], pa.binary()) for i in range(0, len(values), args.batch)
    ]
    nbytes = sum(len(v) for v in values)

    t0 = time.perf_counter()
    kwire_avro.decode(batches[0], None)  # numba: compile (or load the disk cache) once
    warmup = time.perf_counter() - t0
    for batch in batches:  # the same result, checked
        ours, _, errors = kwire_avro.decode(batch, None)
        assert not errors
        theirs = fastavro_loop(batch, parsed, arrow_type)
        assert ours.equals(theirs), "kwire and the fastavro loop disagree"

    def run_kwire() -> None:
        for batch in batches:
            kwire_avro.decode(batch, None)

    def run_loop() -> None:
        for batch in batches:
            fastavro_loop(batch, parsed, arrow_type)

    # the same values read as the subject's next version (Avro schema resolution)
    store.add(SchemaEntry(2, "AVRO", json.dumps(SCHEMA_V2), subject="orders-value", version=2))
    kwire_v2 = _Avro(store, store.latest("orders-value"))
    parsed_v2 = parse_avro(json.dumps(SCHEMA_V2))
    arrow_v2 = avro_arrow_type(kwire_v2.expanded)
    for batch in batches:
        ours, _, errors = kwire_v2.decode(batch, None)
        assert not errors
        assert ours.equals(fastavro_loop(batch, parsed, arrow_v2, parsed_v2)), "v2 disagrees"

    def run_kwire_v2() -> None:
        for batch in batches:
            kwire_v2.decode(batch, None)

    def run_loop_v2() -> None:
        for batch in batches:
            fastavro_loop(batch, parsed, arrow_v2, parsed_v2)

    t_kwire = best(run_kwire, args.repeat)
    t_loop = best(run_loop, args.repeat)
    t_kwire_v2 = best(run_kwire_v2, args.repeat)
    t_loop_v2 = best(run_loop_v2, args.repeat)
    print(
        f"{args.records:,} Avro values ({nbytes / 1e6:.1f} MB), batches of {args.batch:,}, "
        f"best of {args.repeat}; Python {platform.python_version()}, fastavro "
        f"{fastavro.__version__}, pyarrow {pa.__version__}, numpy {np.__version__}\n"
    )
    print("| decoder | time | values/s | MB/s | vs fastavro loop |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for name, t, base in (
        ("kwire (compiled, Arrow buffers)", t_kwire, t_loop),
        ("fastavro loop + pa.array", t_loop, t_loop),
        (
            "kwire, read as version 2 (compiled, then resolved on the columns)",
            t_kwire_v2,
            t_loop_v2,
        ),
        ("fastavro loop (writer and reader schema) + pa.array, version 2", t_loop_v2, t_loop_v2),
    ):
        print(
            f"| {name} | {t * 1000:,.0f} ms | {args.records / t:,.0f} | {nbytes / 1e6 / t:,.1f} "
            f"| {base / t:.1f}x |"
        )
    print(f"\nnumba first call (compile or disk-cache load): {warmup:.2f} s")


if __name__ == "__main__":
    main()
