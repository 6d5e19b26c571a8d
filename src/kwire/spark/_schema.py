"""The kafka-log data source's columns: the records layer's one Arrow schema, plus `_corrupt_record`.

`kwire.records.records_arrow_schema` (and its Spark DDL twin) is the single definition of the
record columns: Spark's Kafka source schema, then kwire's batch columns. This module only adds
Spark's `_corrupt_record` string column, which the default schema carries in PERMISSIVE mode
(the default mode) and leaves out in DROPMALFORMED and FAILFAST, where no row can be corrupt.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from kwire.records._columnar import RECORD_COLUMNS, records_arrow_schema, records_spark_ddl

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql.types import StructType

    from kwire.spark._options import ReadOptions

__all__ = ["CORRUPT_RECORD", "RECORD_COLUMNS", "arrow_schema", "schema_for", "spark_ddl"]

CORRUPT_RECORD = "_corrupt_record"


def spark_ddl(*, corrupt_record: bool) -> str:
    """The default schema of ``spark.read.format("kafka-log")`` as a Spark DDL string."""
    ddl = records_spark_ddl()
    return f"{ddl}, `{CORRUPT_RECORD}` string" if corrupt_record else ddl


def arrow_schema(columns: Sequence[str]) -> pa.Schema:
    """The Arrow schema of the given columns (record columns and/or ``_corrupt_record``)."""
    import pyarrow as pa

    fields = []
    for name in columns:
        if name == CORRUPT_RECORD:
            fields.append(pa.field(CORRUPT_RECORD, pa.string()))
        else:
            fields.append(records_arrow_schema([name]).field(0))
    return pa.schema(fields)


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
