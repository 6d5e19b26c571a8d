"""The kafka-log source in a user's own SparkSession (``SparkSession.builder...getOrCreate()`` in a
fresh interpreter, then ``kwire.spark.register(spark)``), not kwire's ``get_session``.

Each job prints one JSON line; the test compares what a DataFrame reused across queries returns
with what a fresh DataFrame returns for the same query (a fresh ``load()`` is planned alone).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kwire.log import SampleSummary

pytestmark = pytest.mark.spark

Job = Callable[..., dict[str, Any]]


def test_a_reused_dataframe_means_the_same_rows_in_every_query(
    user_job: Job, sample: tuple[Path, SampleSummary]
) -> None:
    """PySpark 4.x keeps the partitions planned for one query's pushed filters on the relation and
    reuses them for the next query of the same DataFrame or view (PythonScanBuilder.pushFilters
    stores its read info on the provider-scoped PythonDataSourceV2)."""
    root, summary = sample
    out = user_job(
        f"""
        import json, os, sys
        from pyspark.sql import SparkSession
        import kwire.spark

        os.environ["PYSPARK_PYTHON"] = sys.executable  # as PySpark's docs say
        spark = (SparkSession.builder.master("local[2]").appName("own session")
                 .config("spark.sql.python.filterPushdown.enabled", "true")  # as docs once said
                 .config("spark.ui.enabled", "false").getOrCreate())
        kwire.spark.register(spark)
        path = {str(root)!r}

        def fresh():
            return spark.read.format("kafka-log").load(path)

        df = fresh()
        got = {{"all": df.count(), "orders": df.where("topic = 'orders'").count()}}
        got["all again"] = df.count()
        got["or"] = df.where("topic = 'orders' or topic = 'payments'").count()
        got["union"] = df.where("topic = 'orders'").union(df.where("topic = 'clicks-legacy'")).count()
        df.createOrReplaceTempView("logs")
        got["view orders"] = spark.sql("select * from logs where topic = 'orders'").count()
        got["view all"] = spark.sql("select count(*) from logs").first()[0]
        latest = spark.read.format("kafka-log").option("view", "latest").load(path)
        got["latest"] = latest.where("offset < 150").count()
        want = {{
            "all": fresh().count(),
            "orders": fresh().where("topic = 'orders'").count(),
            "or": fresh().where("topic in ('orders', 'payments')").count(),
            "union": fresh().where("topic in ('orders', 'clicks-legacy')").count(),
            "latest": sum(r["offset"] < 150 for r in spark.read.format("kafka-log")
                          .option("view", "latest").load(path).select("offset").collect()),
        }}
        print(json.dumps({{"got": got, "want": want}}))
        spark.stop()
        """
    )
    got, want = out["got"], out["want"]
    assert want["orders"] == sum(
        p.records for name, p in summary.partitions.items() if name.startswith("orders-")
    )
    assert got == {
        "all": want["all"],
        "orders": want["orders"],
        "all again": want["all"],
        "or": want["or"],
        "union": want["union"],
        "view orders": want["orders"],
        "view all": want["all"],
        "latest": want["latest"],
    }


def _docs_job(root: Path) -> str:
    """docs/spark.md's opening example with the user's own session (its comment's other path),
    and a view: nothing set but what a user writes."""
    return f"""
        import json
        from pyspark.sql import SparkSession
        import kwire.spark

        spark = SparkSession.builder.appName("my job").getOrCreate()
        kwire.spark.register(spark)                # adds the "kafka-log" format

        df = spark.read.format("kafka-log").load({str(root)!r})
        df.where("topic = 'orders'").groupBy("partition").count().show()
        by_partition = {{r["partition"]: r["count"] for r in
                        df.where("topic = 'orders'").groupBy("partition").count().collect()}}
        latest = spark.read.format("kafka-log").option("view", "latest").load({str(root)!r})
        print(json.dumps({{"all": df.count(), "orders": by_partition,
                          "latest": latest.count(), "master": spark.sparkContext.master}}))
        spark.stop()
        """


def _expected(summary: SampleSummary) -> dict[str, Any]:
    orders = {
        name.rsplit("-", 1)[1]: p.records
        for name, p in summary.partitions.items()
        if name.startswith("orders-")
    }
    return {"all": summary.records, "orders": orders}


def test_register_makes_a_plain_own_session_work(
    user_job: Job, sample: tuple[Path, SampleSummary]
) -> None:
    """No spark.sql.python.filterPushdown.enabled, no PYSPARK_PYTHON, the venv not activated:
    register() points kwire's Python workers at the interpreter that registered it (local master)."""
    root, summary = sample
    out = user_job(
        _docs_job(root).replace(
            'SparkSession.builder.appName("my job")',
            'SparkSession.builder.master("local[2]").appName("my job")',
        )
    )
    assert {k: out[k] for k in ("all", "orders")} == _expected(summary)
    assert out["latest"] > 0


def test_spark_submit_runs_the_readme_job(
    user_job: Job, sample: tuple[Path, SampleSummary]
) -> None:
    """README: `spark-submit --master ... my_job.py`, my_job.py calling kwire.spark.register(spark)."""
    root, summary = sample
    out = user_job(_docs_job(root), submit=True)
    assert out["master"] == "local[2]"
    assert {k: out[k] for k in ("all", "orders")} == _expected(summary)
    assert out["latest"] > 0


def test_get_session_on_an_own_session_made_before_importing_kwire(
    user_job: Job, sample: tuple[Path, SampleSummary]
) -> None:
    """docs/spark.md: with a session already active, get_session() only registers the format on
    it. The session was made before kwire was imported, by an unactivated venv's python without
    PYSPARK_PYTHON: get_session() sets PYSPARK_PYTHON for sessions it builds, which must not stop
    register() from giving kwire's workers this interpreter (they ran python3 from the PATH,
    which has no kwire)."""
    root, summary = sample
    out = user_job(
        f"""
        import json
        from pyspark.sql import SparkSession

        spark = SparkSession.builder.master("local[2]").appName("mine").getOrCreate()
        import kwire.spark

        same = kwire.spark.get_session() is spark
        df = spark.read.format("kafka-log").load({str(root)!r})
        print(json.dumps({{"same": same, "all": df.count()}}))
        spark.stop()
        """
    )
    assert out == {"same": True, "all": summary.records}


def test_spark_submit_finds_both_formats_without_register(
    user_job: Job, sample: tuple[Path, SampleSummary]
) -> None:
    """A spark-submit job that never imports kwire: Spark registers the Python data sources it
    finds in top-level ``pyspark_*`` modules (pyspark.sql.worker.lookup_data_sources), so
    ``kafka-log`` reads and ``kafka-wire`` answers with its own option error, not Spark's
    DATA_SOURCE_NOT_FOUND."""
    root, summary = sample
    job = _docs_job(root)
    job = job.replace("import kwire.spark\n", "").replace(
        'kwire.spark.register(spark)                # adds the "kafka-log" format\n', ""
    )
    assert "kwire" not in job
    job = job.replace(
        "print(json.dumps({",
        """try:
            spark.read.format("kafka-wire").option("subscribe", "orders").load().count()
            wire = "read"
        except Exception as e:
            wire = str(e)
        print(json.dumps({"wire": wire, """,
    )
    out = user_job(job, submit=True)
    assert {k: out[k] for k in ("all", "orders")} == _expected(summary)
    assert out["latest"] > 0
    assert "DATA_SOURCE_NOT_FOUND" not in out["wire"]
    assert 'kafka-wire needs option("kafka.bootstrap.servers"' in out["wire"]
