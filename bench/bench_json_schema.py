"""JSON Schema decoding benchmark: Confluent-framed JSON values to a typed Arrow column.

Contenders, in one run on the same bytes, each giving the same Arrow column (checked equal):

* **kwire** — what the kafka-log source does with ``valueFormat=json``
  (``kwire.spark._registry._Json.decode``): ``json.loads`` per value, the check against the
  writer's schema with ``jsonschema-rs``, one ``pa.array`` of the typed struct column;
* **kwire with jsonschema** — the same with the check of the ``jsonschema`` package (what kwire
  uses where jsonschema-rs is missing), the path before jsonschema-rs.

Values: an ``Order`` document (integer id, string, number, array of strings, a nullable nested
object), seeded, ``--records`` of them in one batch. Best of ``--repeat`` runs.

    .venv/bin/python bench/bench_json_schema.py [--records 20000] [--repeat 5]

docs/benchmarks.md ("JSON Schema decoding") records a run.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any
from unittest import mock

import pyarrow as pa

from kwire.spark import _registry
from kwire.spark._registry import SchemaEntry, SchemaStore, _Json

SCHEMA = {
    "type": "object",
    "properties": {
        "id": {"type": "integer"},
        "customer": {"type": "string"},
        "amount": {"type": "number"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "address": {
            "type": ["object", "null"],
            "properties": {"city": {"type": "string"}, "zip": {"type": ["string", "null"]}},
        },
    },
    "required": ["id"],
}


def values(n: int) -> pa.Array:
    docs = []
    for i in range(n):
        doc = {
            "id": i,
            "customer": f"customer-{i % 7}",
            "amount": i * 1.5,
            "tags": ["a", "b"][: i % 3],
            "address": None if i % 5 == 0 else {"city": f"city-{i}", "zip": None},
        }
        docs.append(b"\x00\x00\x00\x00\x01" + json.dumps(doc).encode())
    return pa.array(docs, pa.binary())


def best(fn: Any, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--records", type=int, default=20_000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    column = values(args.records)
    size = sum(len(v) for v in column.to_pylist())
    store = SchemaStore()
    entry = SchemaEntry(1, "JSON", json.dumps(SCHEMA), subject="orders-value", version=1)
    store.add(entry)
    fast = _Json(store, entry)
    with mock.patch.object(_registry, "_fast_json_check", lambda doc, docs: None):
        reference = _Json(store, entry)
        reference.validator(entry)  # built without jsonschema-rs
    out_fast, _, errors_fast = fast.decode(column, None)
    out_ref, _, errors_ref = reference.decode(column, None)
    assert out_fast.equals(out_ref) and not errors_fast and not errors_ref
    rows = []
    for name, decoder in (("kwire (jsonschema-rs)", fast), ("kwire with jsonschema", reference)):
        seconds = best(lambda d=decoder: d.decode(column, None), args.repeat)
        rows.append((name, seconds))
    base = rows[-1][1]
    print(f"{args.records:,} JSON values ({size / 1e6:.1f} MB), best of {args.repeat}\n")
    print("| decoder | time | values/s | MB/s | vs jsonschema |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for name, seconds in rows:
        print(
            f"| {name} | {seconds * 1000:,.0f} ms | {args.records / seconds:,.0f} | "
            f"{size / 1e6 / seconds:.1f} | {base / seconds:.1f}x |"
        )


if __name__ == "__main__":
    main()
