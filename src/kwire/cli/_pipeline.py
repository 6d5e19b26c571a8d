"""``kwire pipeline export|convert``: the Spark pipeline over Kafka log directories.

``export`` writes the records of a log directory (``--input``), or of a live cluster
(``--bootstrap``, read with kafka-wire), to Parquet (built in), Delta (deltalake) or
Iceberg (pyiceberg, local SQLite catalog); ``convert`` rewrites a log directory in another record
format and codec, one Spark task per segment. Spark runs embedded (``local[*]``) unless
``--master`` names a cluster. A progress bar follows the Spark tasks; a closing table gives
records, bytes, rate and anything skipped.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
import threading
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kwire.spark._pipeline import JobResult

EXIT_OK = 0
EXIT_PROBLEMS = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports a command stopped by Ctrl-C


def _common(parser: argparse.ArgumentParser, *, cluster: bool = False) -> None:
    if not cluster:
        parser.add_argument("--input", required=True, help="Kafka log directory (local or URI)")
    else:
        source = parser.add_mutually_exclusive_group(required=True)
        source.add_argument("--input", help="Kafka log directory (local or URI)")
        source.add_argument(
            "--bootstrap",
            metavar="HOST:PORT[,...]",
            help="a live cluster's bootstrap servers instead (read with kafka-wire; security and "
            "other client settings as --option kafka.NAME=VALUE, Spark's way)",
        )
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
    _common(export, cluster=True)
    export.add_argument(
        "--subscribe",
        metavar="TOPIC[,...]",
        default=None,
        help="topics to export (default: every topic but the internal ones)",
    )
    export.add_argument("--format", choices=("parquet", "delta", "iceberg"), default="parquet")
    export.add_argument(
        "--engine",
        choices=("arrow", "spark"),
        default="arrow",
        help="arrow: Spark tasks write Parquet with pyarrow (default, faster); "
        "spark: the kafka-log DataFrame into Spark's Parquet writer",
    )
    export.add_argument(
        "--mode",
        default=None,
        metavar="MODE",
        help="when --output exists, Spark's save modes: errorifexists (default, or error) refuses "
        "it, ignore writes nothing, append adds the records, overwrite replaces them (a new "
        "table version)",
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
        help="a read option (startingOffsets, mode, ...; with --bootstrap, kafka.* client "
        "settings too: kafka.security.protocol, kafka.sasl.mechanism, ...); repeatable",
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
    """A rich progress bar fed with (done, total) Spark tasks; None when disabled.

    Python warnings raised meanwhile (deltalake's, pyiceberg's...) would be printed through the
    live bar: they are held back and printed once each after it."""
    if not enabled:
        yield None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        try:
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
        finally:
            held = list(caught)
    shown: set[tuple[str, str]] = set()
    for w in held:
        key = (w.category.__name__, str(w.message))
        if key not in shown:
            shown.add(key)
            print(f"warning: {key[0]}: {key[1]}", file=sys.stderr)


def print_results(results: list[JobResult]) -> None:
    """One block per job, a row per measure: fits 80 columns whatever the numbers."""
    from rich.console import Console
    from rich.table import Table

    console = Console()
    for r in results:
        table = Table(title=f"kwire pipeline: {r.name}", show_header=False, title_justify="left")
        table.add_column("measure", style="bold")
        table.add_column("value", justify="right")
        table.add_row("records", f"{r.records:,}")
        table.add_row("input (selected)", f"{r.input_bytes / 1e6:,.2f} MB")
        table.add_row("output", f"{r.output_bytes / 1e6:,.2f} MB")
        table.add_row("time", f"{r.seconds:,.1f} s")
        table.add_row("rate", f"{r.records_per_second:,.0f} records/s, {r.mb_per_second:,.2f} MB/s")
        table.add_row("skipped", f"{r.skipped_bytes:,} B")
        console.print(table)
        for note in r.notes:
            console.print(f"  {note}")
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
    if args.subscribe is not None:
        options["subscribe"] = args.subscribe
    if args.bootstrap is not None:
        options["kafka.bootstrap.servers"] = args.bootstrap
        subscribed = {"subscribe", "subscribepattern", "assign"}
        if not any(k.lower() in subscribed for k in options):
            options["subscribePattern"] = ".*"  # every topic, as for a log directory
    if args.incremental and args.format == "parquet":
        print("kwire pipeline: --incremental needs --format delta or iceberg", file=sys.stderr)
        return EXIT_USAGE
    if args.incremental and args.mode is not None:
        print(
            "kwire pipeline: --incremental appends what is new; --mode does not apply",
            file=sys.stderr,
        )
        return EXIT_USAGE
    from kwire.errors import KwireError
    from kwire.spark import get_session
    from kwire.spark._options import parse_read_options
    from kwire.spark._pipeline import export, save_mode

    plain = {k: v for k, v in options.items() if not k.lower().startswith("kafka.")}
    try:
        parse_read_options(plain)  # a bad option is a usage error, found before Spark starts
        if args.mode is not None:
            save_mode(args.mode)
    except KwireError as exc:  # OptionError, or a save mode Spark does not know
        print(f"kwire pipeline: {exc}", file=sys.stderr)
        return EXIT_USAGE
    # the session starts under the bar too: PySpark's own warnings at start-up (pandas
    # versions) are held back with the job's, so a Ctrl-C still ends with one line
    with (
        clean_interrupt(),
        progress_bar(f"export to {args.format}", not args.json) as update,
        spark_errors(),
    ):
        spark = get_session(args.master, app_name="kwire pipeline export", log_level="FATAL")
        result = export(
            spark,
            args.input,
            args.output,
            args.format,
            options=options,
            progress=update,
            engine=args.engine,
            incremental=args.incremental,
            mode=args.mode,
        )
    _report(args, result)
    return EXIT_OK if not result.skipped_bytes else EXIT_PROBLEMS


def _convert(args: argparse.Namespace) -> int:
    from kwire.spark import get_session
    from kwire.spark._convert_log import convert_log

    # the session starts under the bar too: PySpark's own warnings at start-up (pandas
    # versions) are held back with the job's, so a Ctrl-C still ends with one line
    with (
        clean_interrupt(),
        progress_bar("convert", not args.json) as update,
        spark_errors(),
    ):
        spark = get_session(args.master, app_name="kwire pipeline convert", log_level="FATAL")
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


def _interrupted_by(exc: BaseException | None) -> bool:
    seen = 0
    while exc is not None and seen < 20:
        if isinstance(exc, KeyboardInterrupt):
            return True
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return False


@contextmanager
def clean_interrupt() -> Iterator[None]:
    """Ctrl-C stops the command with one line and exit code 130.

    Left alone, a SIGINT in a Spark job raises through py4j's socket reads, SparkContext's own
    handler calls back into the JVM from inside that read, and py4j logs every failure with its
    traceback: pages of them. Here SIGINT stays ours while the command runs (the SparkContext's
    attempt to take it is ignored): the first one turns logging off and raises
    KeyboardInterrupt, and whatever escapes after it ends the process with one line: the JVM is
    asked to stop (SIGTERM: its shutdown hooks remove its temporary files) and ``os._exit``
    skips the atexit hooks that would talk to it."""
    interrupted = threading.Event()
    real_signal = signal.signal

    def on_sigint(signum: int, frame: object) -> None:
        interrupted.set()
        logging.disable(logging.CRITICAL)  # py4j logs each broken call with a traceback
        raise KeyboardInterrupt

    def keep_ours(signum: int, handler: Any) -> Any:
        if signum == signal.SIGINT:
            return on_sigint
        return real_signal(signum, handler)

    main = threading.current_thread() is threading.main_thread()
    previous = signal.getsignal(signal.SIGINT)
    if main:
        real_signal(signal.SIGINT, on_sigint)
        signal.signal = keep_ours  # type: ignore[assignment]
    try:
        yield
    except BaseException as exc:
        if not (interrupted.is_set() or _interrupted_by(exc)):
            raise
        logging.disable(logging.CRITICAL)
        _stop_jvm()
        print("kwire pipeline: interrupted", file=sys.stderr)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(EXIT_INTERRUPTED)
    finally:
        if main:
            signal.signal = real_signal
            if previous is not None:
                real_signal(signal.SIGINT, previous)


def _stop_jvm() -> None:
    """SIGTERM to the JVM PySpark launched (if any) and wait briefly for it."""
    from pyspark import SparkContext

    gateway = getattr(SparkContext, "_gateway", None)
    proc = getattr(gateway, "proc", None)
    if proc is None:
        return
    with suppress(OSError):
        proc.terminate()
    with suppress(Exception):
        proc.wait(timeout=30)


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
