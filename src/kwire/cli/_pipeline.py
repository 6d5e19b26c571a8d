"""``kwire pipeline export|convert``: the Spark pipeline over Kafka log directories.

``export`` writes the records of a log directory to Parquet (built in), Delta (deltalake) or
Iceberg (pyiceberg, local SQLite catalog); ``convert`` rewrites a log directory in another record
format and codec, one Spark task per segment. Spark runs embedded (``local[*]``) unless
``--master`` names a cluster. A progress bar follows the Spark tasks; a closing table gives
records, bytes, rate and anything skipped.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kwire.spark._pipeline import JobResult

EXIT_OK = 0
EXIT_PROBLEMS = 1
EXIT_USAGE = 2


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--input", required=True, help="Kafka log directory (local or URI)")
    parser.add_argument("--output", required=True, help="where to write")
    parser.add_argument(
        "--master", default=None, help="Spark master URL (default: embedded local[*])"
    )
    parser.add_argument("--json", action="store_true", help="print the result as one JSON line")


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "pipeline", help="export or convert Kafka log directories with Spark"
    )
    jobs = parser.add_subparsers(dest="job", metavar="JOB")
    jobs.required = True
    export = jobs.add_parser("export", help="records of a log directory to Parquet/Delta/Iceberg")
    _common(export)
    export.add_argument("--format", choices=("parquet", "delta", "iceberg"), default="parquet")
    export.add_argument(
        "--engine",
        choices=("arrow", "spark"),
        default="arrow",
        help="arrow: Spark tasks write Parquet with pyarrow (default, faster); "
        "spark: the kafka-log DataFrame into Spark's Parquet writer",
    )
    export.add_argument(
        "--incremental",
        action="store_true",
        help="delta/iceberg: add only records not exported yet, exactly once (the table's commits "
        "record the offsets reached)",
    )
    export.add_argument(
        "--read-committed",
        action="store_true",
        help="leave out aborted transactions (isolationLevel=read_committed)",
    )
    export.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a kafka-log read option (startingOffsets, mode, ...); repeatable",
    )
    export.set_defaults(func=_export)
    convert = jobs.add_parser("convert", help="rewrite a log directory in another format")
    _common(convert)
    convert.add_argument("--magic", type=int, choices=(0, 1, 2), default=2)
    convert.add_argument(
        "--compression",
        choices=("none", "gzip", "snappy", "lz4", "zstd"),
        default=None,
        help="codec of the new batches (default: keep each batch's)",
    )
    convert.add_argument("--segment-bytes", type=int, default=1 << 30)
    convert.set_defaults(func=_convert)


@contextmanager
def progress_bar(label: str, enabled: bool) -> Iterator[Callable[[int, int], None] | None]:
    """A rich progress bar fed with (done, total) Spark tasks; None when disabled."""
    if not enabled:
        yield None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    with Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        transient=False,
    ) as bar:
        task = bar.add_task(f"{label} (Spark tasks)", total=None)

        def update(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        yield update


def print_results(results: list[JobResult]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title="kwire pipeline")
    for column in ("job", "records", "input", "output", "time", "records/s", "MB/s", "skipped"):
        table.add_column(column, justify="left" if column == "job" else "right")
    for r in results:
        table.add_row(
            r.name,
            f"{r.records:,}",
            f"{r.input_bytes / 1e6:,.2f} MB",
            f"{r.output_bytes / 1e6:,.2f} MB",
            f"{r.seconds:,.1f} s",
            f"{r.records_per_second:,.0f}",
            f"{r.mb_per_second:,.2f}",
            f"{r.skipped_bytes:,} B",
        )
    console = Console(width=None if sys.stdout.isatty() else 120)
    console.print(table)
    for r in results:
        for note in r.notes:
            console.print(f"  {r.name}: {note}")
        for problem in r.problems[:10]:
            console.print(f"  [yellow]skipped[/yellow] {problem}")


def _as_json(result: JobResult) -> str:
    return json.dumps(
        {
            "job": result.name,
            "records": result.records,
            "input_bytes": result.input_bytes,
            "output_bytes": result.output_bytes,
            "seconds": round(result.seconds, 3),
            "skipped_bytes": result.skipped_bytes,
            "problems": result.problems,
            "notes": result.notes,
        }
    )


def _parse_options(pairs: list[str]) -> dict[str, str] | None:
    options = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            print(f"kwire pipeline: --option expects KEY=VALUE, got {pair!r}", file=sys.stderr)
            return None
        options[key] = value
    return options


def _export(args: argparse.Namespace) -> int:
    options = _parse_options(args.option)
    if options is None:
        return EXIT_USAGE
    if args.read_committed:
        options["isolationLevel"] = "read_committed"
    if args.incremental and args.format == "parquet":
        print("kwire pipeline: --incremental needs --format delta or iceberg", file=sys.stderr)
        return EXIT_USAGE
    from kwire.spark import OptionError, get_session
    from kwire.spark._options import parse_read_options
    from kwire.spark._pipeline import export

    try:
        parse_read_options(options)  # a bad option is a usage error, found before Spark starts
    except OptionError as exc:
        print(f"kwire pipeline: {exc}", file=sys.stderr)
        return EXIT_USAGE
    spark = get_session(args.master, app_name="kwire pipeline export", log_level="FATAL")
    with progress_bar(f"export to {args.format}", not args.json) as update, spark_errors():
        result = export(
            spark,
            args.input,
            args.output,
            args.format,
            options=options,
            progress=update,
            engine=args.engine,
            incremental=args.incremental,
        )
    _report(args, result)
    return EXIT_OK if not result.skipped_bytes else EXIT_PROBLEMS


def _convert(args: argparse.Namespace) -> int:
    from kwire.spark import get_session
    from kwire.spark._pipeline import convert_log

    spark = get_session(args.master, app_name="kwire pipeline convert", log_level="FATAL")
    with progress_bar("convert", not args.json) as update, spark_errors():
        result = convert_log(
            spark,
            args.input,
            args.output,
            magic=args.magic,
            compression=args.compression,
            segment_bytes=args.segment_bytes,
            progress=update,
        )
    _report(args, result)
    return EXIT_OK if not result.skipped_bytes else EXIT_PROBLEMS


@contextmanager
def spark_errors() -> Iterator[None]:
    """A failed Spark job becomes kwire's error: its Python cause, without the JVM trace."""
    from pyspark.errors import PySparkException

    from kwire.errors import CorruptRecordError, KwireError

    try:
        yield
    except Exception as exc:
        if not isinstance(exc, PySparkException) and not type(exc).__module__.startswith("py4j"):
            raise
        lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
        causes = [line for line in lines if line.startswith("kwire.")]
        if causes:
            name, _, message = causes[-1].partition(": ")
            error = CorruptRecordError if "CorruptRecordError" in name else KwireError
            raise error(message) from None
        raise KwireError(f"Spark job failed: {lines[-1] if lines else exc}") from None


def _report(args: argparse.Namespace, result: JobResult) -> None:
    if args.json:
        print(_as_json(result))
    else:
        print_results([result])
