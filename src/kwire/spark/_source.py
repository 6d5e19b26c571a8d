# The "kafka-log" Spark data source (PySpark's Python Data Source API, Spark 4.0+).
#
# `KafkaLogDataSource` is what `spark.read.format("kafka-log")` and `df.write.format("kafka-log")`
# instantiate. Reading: `schema()` is the records layer's Arrow schema as Spark DDL (plus
# `_corrupt_record` in PERMISSIVE mode); `reader()` keeps only the parsed options and the
# requested schema (it is pickled to every executor); `partitions()` runs on the driver and plans
# splits from a listing and the index files (spark/_plan.py); `read()` runs on executors and yields
# Arrow record batches (spark/_read.py). Spark passes a pruned schema when a query uses fewer
# columns, and the decoder then materialises only those. Writing: see spark/_sink.py.
from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from kwire.errors import KwireError
from kwire.spark._fs import join_uri, list_files, read_bytes, resolve, to_uri
from kwire.spark._options import ReadOptions, parse_read_options, parse_write_options
from kwire.spark._plan import SegmentSplit, SplitGroup, pack_splits, plan_splits
from kwire.spark._schema import spark_ddl

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import SparkSession
    from pyspark.sql.types import StructType

__all__ = ["FORMAT", "KafkaLogDataSource", "KafkaLogReader", "register"]

FORMAT = "kafka-log"


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

    def schema(self) -> str:
        options = parse_read_options(self.options)
        return spark_ddl(corrupt_record=options.mode == "PERMISSIVE")

    def reader(self, schema: StructType) -> KafkaLogReader:
        return KafkaLogReader(_path(self.options), parse_read_options(self.options), schema)

    def writer(self, schema: StructType, overwrite: bool) -> Any:
        from kwire.spark._sink import KafkaLogWriter

        return KafkaLogWriter(
            to_uri(_path(self.options)), parse_write_options(self.options), schema, overwrite
        )


class KafkaLogReader(DataSourceReader):  # type: ignore[misc]
    """Plans splits on the driver; decodes them on executors."""

    def __init__(self, path: str, options: ReadOptions, schema: StructType) -> None:
        self.uri = to_uri(path)
        self.options = options
        self.schema = schema
        self._target: pa.Schema | None = None

    def partitions(self) -> list[SegmentSplit | SplitGroup]:
        fs, root = resolve(self.uri)
        files = list_files(fs, root)

        def read_file(path: str) -> memoryview:
            return read_bytes(fs, path)

        def uri_of(path: str) -> str:
            return join_uri(self.uri, path)

        splits = plan_splits(files, self.options, read_file, uri_of)
        return pack_splits(splits, self.options.max_split_bytes)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        from kwire.spark._read import read_split

        if isinstance(partition, SegmentSplit):
            splits: tuple[SegmentSplit, ...] = (partition,)
        elif isinstance(partition, SplitGroup):
            splits = partition.splits
        else:
            return  # Spark's placeholder partition when there is nothing to read
        if self._target is None:
            from pyspark.sql.pandas.types import to_arrow_schema

            self._target = to_arrow_schema(self.schema, timezone="UTC")
        for split in splits:
            yield from read_split(split, self.options, self._target)


def register(spark: SparkSession) -> None:
    """Make ``spark.read.format("kafka-log")`` and ``df.write.format("kafka-log")`` available."""
    spark.dataSource.register(KafkaLogDataSource)
