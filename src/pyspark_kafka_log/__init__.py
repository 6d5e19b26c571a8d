"""Spark's static registration of kwire's ``kafka-log`` format.

Spark registers by itself, at a session's first Python data source lookup, the ``DefaultSource``
of every top-level module named ``pyspark_*`` that its Python workers can import
(``pyspark.sql.worker.lookup_data_sources``): a job that never calls ``kwire.spark.register``
(a spark-submit script, a notebook's own session) still finds ``kafka-log``. A worker whose Python
has kwire but cannot import it (the ``spark`` extra missing) gets a source that fails with the
reason, instead of Spark's DATA_SOURCE_NOT_FOUND; an exception here would fail the lookup of every
Python data source of the session.
"""

from __future__ import annotations

import sys
from typing import Any, NoReturn

from pyspark.sql.datasource import DataSource

__all__ = ["DefaultSource", "unavailable"]


def unavailable(name: str, error: BaseException) -> type[DataSource]:
    """A data source called ``name`` whose every use raises why kwire could not be imported."""
    reason = f"{type(error).__name__}: {error}"
    python = sys.executable

    def fail(*_: Any) -> NoReturn:
        raise ImportError(
            f"{name}: kwire cannot be imported by Spark's Python workers ({python}): {reason}. "
            "Install kwire[spark] for that interpreter, point PYSPARK_PYTHON or "
            "spark.pyspark.python at one that has it, or call kwire.spark.register(spark)"
        )

    attributes: dict[str, Any] = {
        "name": classmethod(lambda cls: name),
        "schema": fail,
        "reader": fail,
        "writer": fail,
        "streamReader": fail,
        "streamWriter": fail,
    }
    return type("KwireUnavailable", (DataSource,), attributes)


DefaultSource: type[DataSource]
try:
    from kwire.spark._source import KafkaLogDataSource as DefaultSource
except Exception as error:  # the lookup must not fail: see above
    DefaultSource = unavailable("kafka-log", error)
