"""The broker's data dir passes Kafka's own checks: every ``.log`` segment ``kwire broker`` wrote
for real clients (Java transactional and idempotent producers, librdkafka in every codec,
kafka-python) is read by Kafka's ``FileRecords`` (tools/java/LogOracle.java, as
tests/oracle/test_log_java.py uses it): the same batches at the same positions as kwire sees,
every one passing ``ensureValid()``, no error, and ``kwire dump --print-data-log`` prints what
Kafka's DumpLogSegments would."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from typing import Any

import pytest
from interop_helpers import (
    CODECS,
    Rec,
    ck_produce,
    expected_record,
    java_clients,
    kp_produce,
    segment_logs,
)

from kwire.log import open_segment

pytestmark = [
    pytest.mark.interop,
    pytest.mark.oracle,
    pytest.mark.filterwarnings("ignore::DeprecationWarning:kafka"),
]


def log_oracle(requests: list[dict[str, Any]]) -> list[Any]:
    """Runs LogOracle once over ``requests`` (JSON lines in, one answer per line out)."""
    from kafka_jars import compile_java, java_command

    if shutil.which("java") is None or shutil.which("javac") is None:
        pytest.fail("the log oracle needs a JDK (java and javac)")
    proc = subprocess.run(
        java_command("LogOracle", compile_java("LogOracle")),
        input="".join(json.dumps(r) + "\n" for r in requests),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    answers = [json.loads(line) for line in proc.stdout.splitlines()]
    assert len(answers) == len(requests), proc.stderr[-3000:]
    return answers


def check_with_kafka(data_dir: str, capsys: pytest.CaptureFixture[str]) -> list[str]:
    """Every .log under ``data_dir`` through Kafka's FileRecords and DumpLogSegments templates
    (LogOracle ``scan`` and ``dumpLines``) against kwire's scan and ``kwire dump``."""
    from kwire.cli import main

    logs = sorted(segment_logs(data_dir))
    answers = log_oracle([{"op": op, "path": p} for p in logs for op in ("scan", "dumpLines")])
    for i, path in enumerate(logs):
        kafka, lines = answers[2 * i], answers[2 * i + 1]
        assert kafka.get("error") is None and "fatal" not in kafka, (path, kafka)
        assert all(x["isValid"] and x["ensureValid"] for x in kafka["batches"]), path
        base = int(path.rsplit("/", 1)[1].split(".")[0])
        with open_segment(path) as seg:
            scan = seg.scan()
            ours = [
                (
                    x.position,
                    x.base_offset,
                    x.last_offset,
                    x.magic,
                    x.size,
                    x.max_timestamp,
                    sum(1 for _ in x),
                )
                for x in scan
            ]
            assert scan.skipped == [], (path, scan.skipped)
        theirs = [
            (
                x["position"],
                x["baseOffset"],
                x["lastOffset"],
                x["magic"],
                x["size"],
                x["maxTimestamp"],
                x["records"],
            )
            for x in kafka["batches"]
        ]
        assert ours == theirs, path
        assert "fatal" not in lines, lines
        assert main(["dump", "--files", path, "--print-data-log"]) == 0
        out = capsys.readouterr().out
        assert out == f"Dumping {path}\nLog starting offset: {base}\n" + "".join(
            line + "\n" for line in lines["lines"]
        ), path
    return logs


def test_kafka_reads_every_segment_the_broker_wrote(
    start_broker: Callable[..., Any], capsys: pytest.CaptureFixture[str]
) -> None:
    b = start_broker(kafka_version="3.9")
    b.create_topic("oracle", partitions=2, config={"segment.bytes": "2048"})
    b.create_topic(
        "oracle-append", partitions=1, config={"message.timestamp.type": "LogAppendTime"}
    )
    bs = b.bootstrap
    java_clients("produce", bs, "oracle", "zstd", "200", "idempotent")
    java_clients("produce", bs, "oracle", "gzip", "100")
    java_clients("produce", bs, "oracle-append", "lz4", "50", "acks=1")
    for c, codec in enumerate(CODECS):
        records = [expected_record(c * 100 + i) for i in range(80)]
        records = [
            Rec(r.key, r.value, r.headers, r.timestamp, -1, i % 2) for i, r in enumerate(records)
        ]
        ck_produce(bs, "oracle", records, **{"compression.codec": codec, "batch.num.messages": 9})
    kp_records = [Rec(b"k", f"kafka-python {i}".encode(), [("h", b"v")]) for i in range(50)]
    kp_produce(bs, "oracle", kp_records, compression_type="snappy")
    b.stop()

    logs = check_with_kafka(b.data_dir, capsys)
    assert len([p for p in logs if "/oracle-0/" in p]) > 1  # rolled


def test_kafka_reads_transactional_segments(
    start_broker: Callable[..., Any], capsys: pytest.CaptureFixture[str]
) -> None:
    """Transactions (a committed one, an aborted one): data batches and COMMIT/ABORT markers."""
    b = start_broker(kafka_version="3.9")
    b.create_topic("oracle-txn", partitions=1, config={"segment.bytes": "2048"})
    java_clients("produce", b.bootstrap, "oracle-txn", "gzip", "120", "transactional", "abort")
    java_clients("produce", b.bootstrap, "oracle-txn", "none", "40", "transactional")
    b.stop()
    logs = check_with_kafka(b.data_dir, capsys)
    assert any("/oracle-txn-0/" in p for p in logs)
