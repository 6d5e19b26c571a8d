"""``kwire run``: kwire's main job on its embedded default (what ``make run`` calls).

The Spark pipeline end to end, on a fresh machine: write a realistic sample log directory
(``kwire sample``), export it to Parquet with Spark (``kwire pipeline export``), read the Parquet
back with Spark and show, per topic-partition, that every record written came back (records in =
records out), and that read_committed leaves out exactly the aborted transactions. Exit code 1 if
anything does not match. ``kwire demo`` is the protocol demonstration.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

EXIT_OK = 0
EXIT_MISMATCH = 1


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "run", help="the Spark pipeline end to end: sample log -> Parquet -> read back, verified"
    )
    parser.add_argument(
        "--workdir", default=None, help="where to write the sample and the export (default: temp)"
    )
    parser.add_argument("--records", type=int, default=2000, help="records per partition")
    parser.add_argument("--master", default=None, help="Spark master URL (default: local[*])")
    parser.add_argument("--keep", action="store_true", help="keep the files written")
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    from kwire.cli._pipeline import print_results, progress_bar
    from kwire.log import write_sample
    from kwire.spark import get_session
    from kwire.spark._pipeline import export, read_log

    console = Console(width=None if sys.stdout.isatty() else 120)
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="kwire-run-"))
    log_dir, parquet = workdir / "log", workdir / "parquet"
    shutil.rmtree(log_dir, ignore_errors=True)
    started = time.perf_counter()
    try:
        console.print(f"[bold]1.[/bold] sample Kafka log directory -> {log_dir}")
        summary = write_sample(log_dir, records_per_partition=args.records)
        console.print(
            f"   {summary.records:,} records ({summary.records - summary.committed_records:,} in "
            f"aborted transactions), {summary.control_records:,} control records, "
            f"{len(summary.partitions)} partitions, {summary.segments} segments, "
            f"{summary.bytes / 1e6:.2f} MB"
        )
        console.print("[bold]2.[/bold] Spark session (embedded unless --master)")
        spark = get_session(args.master, app_name="kwire run", log_level="FATAL")
        console.print(f"   master {spark.sparkContext.master}, Spark {spark.version}")
        console.print(f"[bold]3.[/bold] export to Parquet -> {parquet}")
        with progress_bar("export to parquet", True) as update:
            # its own output: a run with the same --workdir replaces it
            result = export(
                spark, str(log_dir), str(parquet), "parquet", progress=update, mode="overwrite"
            )
        print_results([result])

        console.print("[bold]4.[/bold] read the Parquet back with Spark")
        back = spark.read.parquet(str(parquet))
        counts = {
            f"{row['topic']}-{row['partition']}": int(row["count"])
            for row in back.groupBy("topic", "partition").count().collect()
        }
        committed = read_log(spark, str(log_dir), {"isolationLevel": "read_committed"}).count()
        table = Table(title="records in = records out")
        for column in ("partition", "written", "in Parquet", "read_committed", "ok"):
            table.add_column(column, justify="left" if column == "partition" else "right")
        ok = True
        for name, info in summary.partitions.items():
            out = counts.get(name, 0)
            match = out == info.records
            ok &= match
            table.add_row(
                name,
                f"{info.records:,}",
                f"{out:,}",
                f"{info.records - info.aborted:,}",
                "[green]yes[/green]" if match else "[red]NO[/red]",
            )
        total_out = sum(counts.values())
        committed_ok = committed == summary.committed_records
        ok &= total_out == summary.records and committed_ok
        table.add_row(
            "total",
            f"{summary.records:,}",
            f"{total_out:,}",
            f"{committed:,} read",
            "[green]yes[/green]" if ok else "[red]NO[/red]",
            style="bold",
        )
        console.print(table)
        elapsed = time.perf_counter() - started
        if ok:
            console.print(
                f"[bold green]round trip verified[/bold green]: {summary.records:,} records "
                f"written, {total_out:,} read back from Parquet; read_committed returned "
                f"{committed:,} = {summary.records:,} - "
                f"{summary.records - summary.committed_records:,} aborted ({elapsed:.1f} s)"
            )
            return EXIT_OK
        console.print("[bold red]round trip FAILED[/bold red]: counts differ (see the table)")
        return EXIT_MISMATCH
    finally:
        if not args.keep and args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
