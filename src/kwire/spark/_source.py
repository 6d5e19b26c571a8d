"""The "kafka-log" Spark data source (PySpark's Python Data Source API, Spark 4.0+).

`KafkaLogDataSource` is what `spark.read.format("kafka-log")` and `df.write.format("kafka-log")`
instantiate. Reading: `schema()` is the records layer's Arrow schema as Spark DDL (plus
`_corrupt_record` in PERMISSIVE mode); `reader()` keeps only the parsed options and the
requested schema (it is pickled to every executor); `partitions()` runs on the driver and plans
splits from a listing and the index files (spark/_plan.py); `read()` runs on executors and yields
Arrow record batches (spark/_read.py). PySpark passes Python sources the full schema even when a
query uses fewer columns (no column pruning): a user schema or the `columns` option is how a
query decodes fewer. The reader has no `pushFilters`: PySpark 4.1-4.3 keeps the partitions one
query planned with its pushed filters on the relation and reuses them for the DataFrame's next
query (PythonScanBuilder stores its read info on the provider-scoped PythonDataSourceV2), which
would return that query's rows for every later one; the options (subscribe, assign, offsets,
timestamps) skip what a scan need not read, per DataFrame. `streamReader()` is the streaming
source (spark/_stream.py). Writing: see spark/_sink.py.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from kwire.errors import KwireError
from kwire.spark._fs import join_uri, list_files, read_bytes, resolve, to_uri
from kwire.spark._options import ReadOptions, parse_read_options, parse_write_options
from kwire.spark._plan import (
    PlanStats,
    SegmentSplit,
    SplitGroup,
    pack_splits,
    plan_splits,
)
from kwire.spark._schema import schema_for

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import SparkSession
    from pyspark.sql.types import StructType

    from kwire.spark._stream import KafkaLogStreamReader

__all__ = ["FORMAT", "KafkaLogDataSource", "KafkaLogReader", "register"]

log = logging.getLogger("kwire.spark")

FORMAT = "kafka-log"
LOG_LEVEL_ENV = "KWIRE_LOG_LEVEL"


def _log_to_stderr() -> None:
    """Planning runs in a Python worker Spark starts (not in the driver's Python process), where
    the driver's logging setup does not reach: ``KWIRE_LOG_LEVEL=INFO`` in the environment (which
    Spark's workers inherit; ``spark.executorEnv.KWIRE_LOG_LEVEL`` for executors) sends kwire's
    log records at that level to the process's stderr, which Spark passes through."""
    level = os.environ.get(LOG_LEVEL_ENV, "").upper()
    root = logging.getLogger("kwire")
    if not level or any(getattr(h, "_kwire", False) for h in root.handlers):
        return
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler._kwire = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    root.setLevel(level)


_log_to_stderr()


def _path(options: Any) -> str:
    path = options.get("path")
    if not path:
        raise KwireError('kafka-log needs a path: .load("/path/to/log-dir")')
    return str(path)


class KafkaLogDataSource(DataSource):  # type: ignore[misc]
    """Kafka log directories (a broker's data dir, a backup, tiered-storage copies) as DataFrames."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> str | StructType:
        if _extension(self) is not None:  # Schema Registry decoding or an internal-topic view
            return _extension(self).schema()  # type: ignore[no-any-return]
        options = parse_read_options(self.options)
        return schema_for(options)

    def reader(self, schema: StructType) -> KafkaLogReader:
        if _extension(self) is not None:
            return _extension(self).reader(schema)  # type: ignore[no-any-return]
        return KafkaLogReader(_path(self.options), parse_read_options(self.options), schema)

    def streamReader(self, schema: StructType) -> KafkaLogStreamReader:
        from kwire.spark._stream import KafkaLogStreamReader

        options = parse_read_options(self.options, streaming=True)
        return KafkaLogStreamReader(_path(self.options), options, schema)

    def writer(self, schema: StructType, overwrite: bool) -> Any:
        from kwire.spark._sink import KafkaLogWriter

        return KafkaLogWriter(
            to_uri(_path(self.options)), parse_write_options(self.options), schema, overwrite
        )


def _extension(source: KafkaLogDataSource) -> Any:
    """valueFormat/keyFormat (kwire.spark._registry) or view (kwire.spark._internal_topics)."""
    if "_kwire_extension" not in source.__dict__:
        from kwire.spark._internal_topics import view_source
        from kwire.spark._registry import typed_source

        path, options = _path(source.options), source.options
        source.__dict__["_kwire_extension"] = view_source(path, options) or typed_source(
            path, options
        )
    return source.__dict__["_kwire_extension"]


def plan_scan(uri: str, options: ReadOptions) -> tuple[list[SegmentSplit], PlanStats]:
    """The splits of a scan of ``uri`` (driver side: a listing and index files)."""
    fs, root = resolve(uri)
    files = list_files(fs, root)

    def read_file(path: str) -> memoryview:
        return read_bytes(fs, path)

    def read_tail(path: str, start: int) -> memoryview:
        return read_bytes(fs, path, start)

    def uri_of(path: str) -> str:
        return join_uri(uri, path)

    stats = PlanStats()
    splits = plan_splits(
        files,
        options,
        read_file,
        uri_of,
        stats=stats,
        read_tail=read_tail,
        must_exist=uri,
    )
    return splits, stats


def read_partition(
    partition: InputPartition, options: ReadOptions, target: pa.Schema
) -> Iterator[pa.RecordBatch]:
    """Executor side: the Arrow batches of one Spark partition (a split or a pack of them)."""
    from kwire.spark._read import read_split

    if isinstance(partition, SegmentSplit):
        splits: tuple[SegmentSplit, ...] = (partition,)
    elif isinstance(partition, SplitGroup):
        splits = partition.splits
    else:
        return  # Spark's placeholder partition when there is nothing to read
    for split in splits:
        yield from read_split(split, options, target)


class KafkaLogReader(DataSourceReader):  # type: ignore[misc]
    """Plans splits on the driver; decodes them on executors."""

    def __init__(self, path: str, options: ReadOptions, schema: StructType) -> None:
        self.uri = to_uri(path)
        self.options = options
        self.schema = schema
        self._target: pa.Schema | None = None

    def partitions(self) -> list[SegmentSplit | SplitGroup]:
        splits, stats = plan_scan(self.uri, self.options)
        log.info(
            "kwire: scan of %s plans %d splits, %d of %d log bytes (%d index bytes read)",
            self.uri,
            stats.splits,
            stats.planned_bytes,
            stats.log_bytes,
            stats.index_bytes,
        )
        if self.options.metrics_path:
            from kwire.spark._read import write_metrics

            write_metrics(
                self.options.metrics_path,
                "plan",
                {
                    "log_bytes": stats.log_bytes,
                    "index_bytes": stats.index_bytes,
                    "planned_bytes": stats.planned_bytes,
                    "splits": stats.splits,
                    "check_bytes": stats.check_bytes,
                    "lost_offsets": stats.lost_offsets,
                },
            )
        return pack_splits(splits, self.options.max_split_bytes)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if self._target is None:
            from pyspark.sql.pandas.types import to_arrow_schema

            self._target = to_arrow_schema(self.schema, timezone="UTC")
        yield from read_partition(partition, self.options, self._target)


def register(spark: SparkSession) -> None:
    """Make ``spark.read.format("kafka-log")``, ``df.write.format("kafka-log")`` and the
    ``kafka-wire`` source and sink available.

    The source needs no session setting. Its Python workers run the interpreter PySpark recorded
    when the source was registered: PYSPARK_PYTHON, else ``python3`` from the PATH, which outside
    an activated environment is not the one kwire is installed in. On a local master, with neither
    PYSPARK_PYTHON (when the session was made) nor ``spark.pyspark.python`` given, kwire's
    workers run this interpreter (its
    function alone: the session's other Python functions are left as they are). On a cluster the
    executors' Python is the user's to give (``spark.pyspark.python``, ``--archives``).
    """
    import sys

    sc = spark.sparkContext
    # What the context recorded when it was made, not os.environ now: PYSPARK_PYTHON set later
    # (get_session's prepare_environment, a user's script) never reaches sc.pythonExec, which
    # stays "python3" (SparkContext's default when PYSPARK_PYTHON was unset).
    own_python = (
        (sc.master or "").startswith("local")
        and sc.pythonExec == "python3"
        and not sc.getConf().get("spark.pyspark.python")
    )
    saved_exec, saved_env = sc.pythonExec, dict(sc.environment)
    if own_python:
        sc.pythonExec = sys.executable
        numba_cache = os.environ.get("NUMBA_CACHE_DIR")
        if numba_cache and "NUMBA_CACHE_DIR" not in sc.environment:
            sc.environment["NUMBA_CACHE_DIR"] = numba_cache
    from kwire.spark._wire_source import KafkaWireDataSource

    try:  # each registration captures pythonExec and the environment
        spark.dataSource.register(KafkaLogDataSource)
        spark.dataSource.register(KafkaWireDataSource)
    finally:
        sc.pythonExec = saved_exec
        sc.environment.clear()
        sc.environment.update(saved_env)
