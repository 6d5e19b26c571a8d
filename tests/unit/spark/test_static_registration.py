"""The ``pyspark_kafka_log`` / ``pyspark_kafka_wire`` modules Spark's Python data source lookup
imports (pyspark.sql.worker.lookup_data_sources): what they register, and that a Python where
kwire cannot be imported gets a source naming why instead of failing the lookup."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("pyspark")


def _run(code: str) -> dict[str, object]:
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout.splitlines()[-1])  # type: ignore[no-any-return]


def test_the_lookup_finds_kwires_sources() -> None:
    out = _run(
        """
        import json
        from pkgutil import iter_modules
        from importlib import import_module
        found = {}
        for info in iter_modules():  # lookup_data_sources' own walk
            if info.name.startswith("pyspark_"):
                source = import_module(info.name).DefaultSource
                found[source.name()] = f"{source.__module__}.{source.__qualname__}"
        print(json.dumps(found))
        """
    )
    assert out["kafka-log"] == "kwire.spark._source.KafkaLogDataSource"
    assert out["kafka-wire"] == "kwire.spark._wire_source.KafkaWireDataSource"


def test_a_python_that_cannot_import_kwire_gets_the_reason() -> None:
    """A worker's Python with kwire but not its dependencies (here crc32c, as the system python3
    of an unactivated venv's user): both modules still import, and using the source says why."""
    out = _run(
        """
        import json, sys
        sys.modules["crc32c"] = None  # this interpreter cannot import it
        from pyspark.serializers import CloudPickleSerializer
        import pyspark_kafka_log, pyspark_kafka_wire
        got = {}
        for module in (pyspark_kafka_log, pyspark_kafka_wire):
            source = CloudPickleSerializer().loads(  # as Spark ships it to the JVM and back
                CloudPickleSerializer().dumps(module.DefaultSource)
            )
            try:
                source(options={}).schema()
                got[source.name()] = "no error"
            except ImportError as e:
                got[source.name()] = str(e)
        print(json.dumps(got))
        """
    )
    assert set(out) == {"kafka-log", "kafka-wire"}
    for name, message in out.items():
        assert isinstance(message, str)
        assert message.startswith(f"{name}: kwire cannot be imported by Spark's Python workers")
        assert "crc32c" in message
        assert "kwire.spark.register(spark)" in message
