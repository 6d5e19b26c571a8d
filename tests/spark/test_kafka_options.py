"""Spark's Kafka option names do in kafka-log what they do in Spark's Kafka source (issue 16
item 5), through a real session: the pure validation is in tests/unit/spark/test_kafka_option_rules.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kwire.log import SampleSummary

pytestmark = pytest.mark.spark


def test_spark_option_names_and_errors(spark: Any, sample: tuple[Path, SampleSummary]) -> None:
    path, summary = sample
    load = str(path)
    read = spark.read.format("kafka-log")
    # Spark's name for the isolation level, passed to its consumer: aborted records are dropped
    committed = read.option("kafka.isolation.level", "read_committed").load(load)
    assert committed.count() == summary.committed_records
    # a per-partition -1 (latest) in a batch query's startingOffsets is refused, as in Spark
    latest = {"orders": {"0": -1, "1": -2, "2": -2}}
    with pytest.raises(Exception, match=r"orders-0 can't be latest"):
        read.option("subscribe", "orders").option("startingOffsets", json.dumps(latest)).load(
            load
        ).count()
    # exactly one of subscribe / subscribePattern / assign
    with pytest.raises(Exception, match="Only one of the following options"):
        spark.read.format("kafka-log").option("subscribe", "orders").option(
            "assign", '{"orders": [0]}'
        ).load(load).count()
    # a topic that is not there fails, as Spark's source does, rather than reading 0 rows
    with pytest.raises(Exception, match="ordres not found"):
        spark.read.format("kafka-log").option("subscribe", "ordres").load(load).count()
    # no record at or after the starting timestamp: Spark's default strategy (error) fails
    future = str(4_000_000_000_000)
    with pytest.raises(Exception, match=r"No offset matched from request of topic-partition"):
        spark.read.format("kafka-log").option("subscribe", "orders").option(
            "startingTimestamp", future
        ).load(load).count()
    lenient = (
        spark.read.format("kafka-log")
        .option("subscribe", "orders")
        .option("startingTimestamp", future)
        .option("startingOffsetsByTimestampStrategy", "latest")
        .load(load)
    )
    assert lenient.count() == 0
