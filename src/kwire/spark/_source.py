"""The "kafka-log" Spark data source (PySpark's Python Data Source API, Spark 4.0+).

`KafkaLogDataSource` is what `spark.read.format("kafka-log")` and `df.write.format("kafka-log")`
instantiate. Reading: `schema()` is the records layer's Arrow schema as Spark DDL (plus
`_corrupt_record` in PERMISSIVE mode); `reader()` keeps only the parsed options and the
requested schema (it is pickled to every executor); `partitions()` runs on the driver and plans
splits from a listing and the index files (spark/_plan.py); `read()` runs on executors and yields
Arrow record batches (spark/_read.py). PySpark passes Python sources the full schema even when a
query uses fewer columns (no column pruning): a user schema or the `columns` option is how a
query decodes fewer. `pushFilters` (Spark 4.1+, on when spark.sql.python.filterPushdown.enabled)
turns predicates on topic, partition, offset and timestamp into a `Pushdown` the planner uses to
skip segments and positions; every filter is still handed back to Spark, which evaluates it
over the rows read, so pushdown only ever reads less. `streamReader()` is the streaming source
(spark/_stream.py). Writing: see spark/_sink.py.
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from kwire.errors import KwireError
from kwire.spark._fs import join_uri, list_files, read_bytes, resolve, to_uri
from kwire.spark._options import ReadOptions, parse_read_options, parse_write_options
from kwire.spark._plan import (
    PlanStats,
    Pushdown,
    SegmentSplit,
    SplitGroup,
    pack_splits,
    plan_splits,
)
from kwire.spark._schema import CORRUPT_RECORD, RECORD_COLUMNS, arrow_schema, spark_ddl

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import SparkSession
    from pyspark.sql.datasource import Filter
    from pyspark.sql.types import StructType

    from kwire.spark._stream import KafkaLogStreamReader

__all__ = ["FORMAT", "KafkaLogDataSource", "KafkaLogReader", "pushdown_from_filters", "register"]

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


def schema_for(options: ReadOptions) -> str | StructType:
    """The source's schema under ``columns``, ``includeHeaders`` and ``mode``."""
    if options.columns is None and options.include_headers:
        return spark_ddl(corrupt_record=options.mode == "PERMISSIVE")
    from pyspark.sql.pandas.types import from_arrow_schema

    names = list(options.columns or RECORD_COLUMNS)
    if options.columns is None and options.mode == "PERMISSIVE":
        names.append(CORRUPT_RECORD)
    if not options.include_headers:
        names = [n for n in names if n != "headers"]
    return from_arrow_schema(arrow_schema(names))


def _millis(value: Any) -> float | None:
    """A pushed timestamp literal in milliseconds (aware datetimes; naive ones are UTC)."""
    if isinstance(value, datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        return float(value.timestamp()) * 1000.0
    return None


def _intersect(a: frozenset[Any] | None, b: Iterable[Any]) -> frozenset[Any]:
    values = frozenset(b)
    return values if a is None else a & values


def pushdown_from_filters(filters: Sequence[Filter]) -> Pushdown:
    """What Spark's pushed filters (an AND) let a scan skip; filters kwire cannot use are ignored
    (Spark evaluates every filter anyway)."""
    from pyspark.sql.datasource import (
        EqualTo,
        GreaterThan,
        GreaterThanOrEqual,
        In,
        LessThan,
        LessThanOrEqual,
    )

    topics: frozenset[str] | None = None
    partitions: frozenset[int] | None = None
    lo: dict[str, float] = {}  # column -> smallest value that may match (inclusive)
    hi: dict[str, float] = {}  # column -> exclusive upper bound

    def raise_lo(name: str, value: float) -> None:
        lo[name] = max(lo.get(name, -math.inf), value)

    def lower_hi(name: str, value: float) -> None:
        hi[name] = min(hi.get(name, math.inf), value)

    for f in filters:
        ref = getattr(f, "attribute", None)
        if not isinstance(ref, tuple) or len(ref) != 1:
            continue
        name = ref[0]
        if name == "topic":
            if isinstance(f, EqualTo) and isinstance(f.value, str):
                topics = _intersect(topics, [f.value])
            elif isinstance(f, In):
                topics = _intersect(topics, [v for v in f.value if isinstance(v, str)])
            continue
        if name == "partition" and isinstance(f, (EqualTo, In)):
            values = [f.value] if isinstance(f, EqualTo) else list(f.value)
            partitions = _intersect(partitions, [v for v in values if isinstance(v, int)])
            continue
        if name not in ("offset", "timestamp", "partition"):
            continue
        if isinstance(f, In):
            numbers = [_number(name, v) for v in f.value]
            if numbers and None not in numbers:
                raise_lo(name, math.ceil(min(n for n in numbers if n is not None)))
                lower_hi(name, math.floor(max(n for n in numbers if n is not None)) + 1)
            continue
        value = _number(name, getattr(f, "value", None))
        if value is None:
            continue
        # integer domains (offsets, partitions, timestamps in ms): bounds as [lo, hi)
        if isinstance(f, EqualTo):
            raise_lo(name, math.ceil(value))
            lower_hi(name, math.floor(value) + 1)
        elif isinstance(f, GreaterThan):
            raise_lo(name, math.floor(value) + 1)
        elif isinstance(f, GreaterThanOrEqual):
            raise_lo(name, math.ceil(value))
        elif isinstance(f, LessThan):
            lower_hi(name, math.ceil(value))
        elif isinstance(f, LessThanOrEqual):
            lower_hi(name, math.floor(value) + 1)
    if "partition" in lo or "partition" in hi:
        p_lo, p_hi = lo.get("partition", 0), hi.get("partition", math.inf)
        if p_hi != math.inf:
            wanted = range(max(0, int(p_lo)), int(p_hi))
            partitions = _intersect(partitions, wanted)

    def bound(table: dict[str, float], name: str) -> int | None:
        value = table.get(name)
        return None if value is None or math.isinf(value) else int(value)

    return Pushdown(
        topics=topics,
        partitions=partitions,
        offset_lo=bound(lo, "offset"),
        offset_hi=bound(hi, "offset"),
        timestamp_lo=bound(lo, "timestamp"),
        timestamp_hi=bound(hi, "timestamp"),
    )


def _number(column: str, value: Any) -> float | None:
    if column == "timestamp":
        return _millis(value)
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return float(value)


def plan_scan(
    uri: str, options: ReadOptions, pushdown: Pushdown | None = None
) -> tuple[list[SegmentSplit], PlanStats]:
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
        pushdown=pushdown,
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
        self.pushdown: Pushdown | None = None
        self._target: pa.Schema | None = None

    def pushFilters(self, filters: list[Filter]) -> Iterable[Filter]:
        self.pushdown = pushdown_from_filters(filters)
        return filters  # Spark still evaluates them all: kwire only skips what cannot match

    def partitions(self) -> list[SegmentSplit | SplitGroup]:
        splits, stats = plan_scan(self.uri, self.options, self.pushdown)
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
    """Make ``spark.read.format("kafka-log")`` and ``df.write.format("kafka-log")`` available."""
    spark.dataSource.register(KafkaLogDataSource)
