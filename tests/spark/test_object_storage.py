"""Object storage for real: a log directory on an S3 API server (moto's server mode, on loopback)
read with ``spark.read.format("kafka-log").load("s3://logs/...")``, and ``kwire pipeline export
--incremental`` writing Delta and Iceberg tables to ``s3://lake/...``, run twice.

Credentials and endpoint go the documented way, the AWS SDK environment variables
(``AWS_ENDPOINT_URL``, ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_REGION``,
``AWS_ALLOW_HTTP``). Spark's Python workers inherit the environment of the JVM, fixed when the
session starts, so the Spark work runs in a child process started with that environment (the
shared test session was started without it), as a user's shell would start ``kwire``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.spark

CHILD_TIMEOUT = 480  # seconds: one JVM start, a read and four exports on 2 shared cores


@pytest.fixture(scope="module")
def s3_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """A moto S3 server on 127.0.0.1 with buckets ``logs`` and ``lake``, the sample log directory
    uploaded to ``s3://logs/backup``; yields the environment a user would set."""
    pytest.importorskip("moto.server", reason="moto[server] (the dev extra) is not installed")
    import boto3  # type: ignore[import-untyped]
    from moto.server import ThreadedMotoServer

    from kwire.log import write_sample

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        env = {
            "AWS_ENDPOINT_URL": f"http://{host}:{port}",
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_REGION": "us-east-1",
            "AWS_ALLOW_HTTP": "true",  # delta-rs (object_store) refuses plain http without it
            "AWS_EC2_METADATA_DISABLED": "true",  # no instance metadata lookups (bounded waits)
        }
        s3 = boto3.client(
            "s3",
            endpoint_url=env["AWS_ENDPOINT_URL"],
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
            region_name="us-east-1",
        )
        s3.create_bucket(Bucket="logs")
        s3.create_bucket(Bucket="lake")
        local = tmp_path_factory.mktemp("s3-sample") / "log"
        write_sample(local, records_per_partition=300, segment_bytes=16 * 1024)
        count = 0
        for file in sorted(local.rglob("*")):
            if file.is_file():
                key = f"backup/{file.relative_to(local).as_posix()}"
                s3.upload_file(str(file), "logs", key)
                count += 1
        assert count > 0
        env["KWIRE_TEST_LOCAL_LOG"] = str(local)
        yield env
    finally:
        server.stop()


CHILD = textwrap.dedent(
    """
    import json, os, sys

    import pyarrow as pa

    from kwire.cli import main
    from kwire.spark import get_session

    COLS = ["topic", "partition", "offset", "key", "value", "timestamp", "headers"]
    TABLE_COLS = ["topic", "partition", "offset", "key", "value"]
    local = os.environ["KWIRE_TEST_LOCAL_LOG"]
    spark = get_session(
        "local[2]",
        app_name="kwire object storage test",
        config={"spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2"},
    )
    out = {}

    def rows(df):
        return sorted((tuple(r) for r in df.select(*COLS).collect()), key=repr)

    def arrow_rows(table):
        cols = table.select(TABLE_COLS).to_pydict()
        return sorted(zip(*(cols[c] for c in TABLE_COLS)), key=repr)

    local_df = spark.read.format("kafka-log").load(local)
    remote_df = spark.read.format("kafka-log").load("s3://logs/backup")
    local_rows = rows(local_df)
    out["local_count"] = len(local_rows)
    out["s3_equal"] = rows(remote_df) == local_rows
    out["s3_count"] = remote_df.count()
    expected = sorted(
        (tuple(r) for r in local_df.select(*TABLE_COLS).collect() if not r.topic.startswith("__")),
        key=repr,
    )

    def export(fmt):
        codes = []
        for _ in range(2):
            codes.append(main([
                "pipeline", "export", "--input", "s3://logs/backup",
                "--output", f"s3://lake/{fmt}", "--format", fmt, "--incremental", "--json",
            ]))
        return codes

    for fmt in sys.argv[1:]:
        try:
            codes = export(fmt)
            if fmt == "delta":
                from deltalake import DeltaTable
                table = DeltaTable("s3://lake/delta")
                got = arrow_rows(table.to_pyarrow_table())
                versions = len(table.history())
                files = table.file_uris()
            else:
                from kwire.spark._pipeline import ICEBERG_TABLE, _iceberg_catalog
                table = _iceberg_catalog("s3://lake/iceberg").load_table(ICEBERG_TABLE)
                got = arrow_rows(table.scan().to_arrow())
                versions = len(table.history())
                files = [task.file.file_path for task in table.scan().plan_files()]
                files.append(table.metadata_location)
            out[fmt] = {"codes": codes, "equal": got == expected, "rows": len(got),
                        "expected": len(expected), "versions": versions, "files": files}
        except Exception as exc:
            out[fmt] = {"error": f"{type(exc).__name__}: {exc}"[:2000]}
    spark.stop()
    print("KWIRE-RESULT " + json.dumps(out))
    """
)


def _run_child(env: dict[str, str], tmp_path: Path, *formats: str) -> dict[str, Any]:
    child_env = {**os.environ, **env, "KWIRE_ICEBERG_CATALOG": str(tmp_path / "catalog.db")}
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, *formats],
        env=child_env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=CHILD_TIMEOUT,
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("KWIRE-RESULT ")]
    assert proc.returncode == 0 and lines, (
        proc.returncode,
        proc.stdout[-3000:],
        proc.stderr[-3000:],
    )
    result: dict[str, Any] = json.loads(lines[-1].removeprefix("KWIRE-RESULT "))
    result["stdout"] = proc.stdout
    return result


@pytest.fixture(scope="module")
def child(s3_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One child process (one JVM) does the S3 read and the Delta and Iceberg exports."""
    return _run_child(s3_env, tmp_path_factory.mktemp("s3-child"), "delta", "iceberg")


def _exports(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines() if line.startswith('{"job"')]


def test_read_kafka_log_from_s3(child: dict[str, Any]) -> None:
    assert child["local_count"] > 0
    assert child["s3_count"] == child["local_count"]
    assert child["s3_equal"]


@pytest.mark.parametrize("fmt", ["delta", "iceberg"])
def test_incremental_export_to_s3_twice(child: dict[str, Any], fmt: str) -> None:
    result = child[fmt]
    assert "error" not in result, result.get("error")
    assert result["codes"] == [0, 0]
    assert result["rows"] == result["expected"] > 0
    assert result["equal"]
    assert result["versions"] == 1  # the second run committed nothing
    assert result["files"] and all(f.startswith(f"s3://lake/{fmt}/") for f in result["files"])
    runs = [r for r in _exports(child["stdout"]) if r["job"] == f"incremental export to {fmt}"]
    assert [r["records"] for r in runs] == [result["expected"], 0]  # the second run adds nothing
    assert "nothing new" in runs[1]["notes"][0]
