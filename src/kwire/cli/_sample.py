"""``kwire sample DIR``: write a realistic Kafka log directory (see ``kwire.spark.write_sample``).

Several topics and partitions, every magic and codec, headers, keys, committed and aborted
transactions with their control batches, and a compacted topic with offset holes and tombstones.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

EXIT_OK = 0
EXIT_RUNTIME = 1
EXIT_USAGE = 2


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("sample", help="write a realistic Kafka log directory")
    parser.add_argument("dir", help="where to write it (created; must not hold partitions yet)")
    parser.add_argument(
        "--records", type=int, default=500, help="records per partition (default 500)"
    )
    parser.add_argument(
        "--segment-bytes",
        type=int,
        default=16 * 1024,
        help="roll segments at this size (default 16384, so partitions have several)",
    )
    parser.add_argument("--seed", type=int, default=4, help="random seed (default 4)")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    parser.set_defaults(func=_sample)


def _sample(args: argparse.Namespace) -> int:
    from kwire.log import MIN_SEGMENT_BYTES, write_sample

    if args.records < 1 or args.segment_bytes < MIN_SEGMENT_BYTES:
        print(f"kwire sample: --records must be >= 1 and --segment-bytes >= {MIN_SEGMENT_BYTES}")
        return EXIT_USAGE
    try:
        summary = write_sample(
            args.dir,
            records_per_partition=args.records,
            segment_bytes=args.segment_bytes,
            seed=args.seed,
        )
    except OSError as exc:  # a directory that holds a log already, or one it cannot write
        print(f"kwire sample: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_RUNTIME
    if args.json:
        doc = {
            "path": summary.path,
            "records": summary.records,
            "committed_records": summary.committed_records,
            "control_records": summary.control_records,
            "bytes": summary.bytes,
            "partitions": {
                name: {
                    "records": p.records,
                    "aborted": p.aborted,
                    "control": p.control,
                    "batches": p.batches,
                    "bytes": p.bytes,
                    "segments": p.segments,
                    "magics": sorted(p.magics),
                    "codecs": sorted(p.codecs),
                }
                for name, p in summary.partitions.items()
            },
        }
        print(json.dumps(doc))
        return EXIT_OK
    title = f"sample log directory {summary.path}"
    columns = ["partition", "records", "aborted", "control", "batches", "segments", "bytes"]
    columns.append("magics / codecs")
    rows = [
        [
            name,
            f"{p.records:,}",
            f"{p.aborted:,}",
            f"{p.control:,}",
            f"{p.batches:,}",
            f"{p.segments:,}",
            f"{p.bytes:,}",
            f"{','.join(map(str, sorted(p.magics)))} / {','.join(sorted(p.codecs))}",
        ]
        for name, p in summary.partitions.items()
    ]
    total = [
        "total",
        f"{summary.records:,}",
        f"{summary.records - summary.committed_records:,}",
        f"{summary.control_records:,}",
        "",
        f"{summary.segments:,}",
        f"{summary.bytes:,}",
        "",
    ]
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:  # rich comes with the spark extra; a plain install prints plain text
        _print_plain(title, columns, [*rows, total])
        return EXIT_OK
    table = Table(title=title)
    for column in columns:
        table.add_column(column, justify="left" if column[0] in "pm" else "right")
    for row in rows:
        table.add_row(*row)
    table.add_row(*total, style="bold")
    Console(width=None if sys.stdout.isatty() else 120).print(table)
    return EXIT_OK


def _print_plain(title: str, columns: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(r[i]) for r in [columns, *rows]) for i in range(len(columns))]
    print(title)
    for row in [columns, *rows]:
        cells = [
            c.ljust(w) if i in (0, len(row) - 1) else c.rjust(w)
            for i, (c, w) in enumerate(zip(row, widths, strict=True))
        ]
        print("  ".join(cells).rstrip())
