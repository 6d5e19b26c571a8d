"""Spark's static registration of kwire's ``kafka-wire`` format: see ``pyspark_kafka_log``."""

from __future__ import annotations

from pyspark.sql.datasource import DataSource

from pyspark_kafka_log import unavailable

__all__ = ["DefaultSource"]

DefaultSource: type[DataSource]
try:
    from kwire.spark._wire_source import KafkaWireDataSource as DefaultSource
except Exception as error:  # the lookup must not fail: see pyspark_kafka_log
    DefaultSource = unavailable("kafka-wire", error)
