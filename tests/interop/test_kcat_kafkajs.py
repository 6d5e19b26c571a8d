"""kcat (librdkafka's command-line client) and kafkajs (a JavaScript client) against
``kwire broker``. They are not Python packages: ``tools/interop_extra.sh`` installs them (``make
interop`` runs it); without them these tests are skipped, saying so. Marked ``interop`` and
``interop_extra`` (deselect them with ``-m "interop and not interop_extra"``)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from interop_helpers import BASE_TS, ck_consume, ck_produce, expected_record

ROOT = Path(__file__).resolve().parents[2]
NODE_MODULES = Path(os.environ.get("KWIRE_NPM_DIR", ROOT / ".cache" / "npm")) / "node_modules"
KAFKAJS_CLIENT = Path(__file__).with_name("kafkajs_client.js")

pytestmark = [pytest.mark.interop, pytest.mark.interop_extra]

needs_kcat = pytest.mark.skipif(
    shutil.which("kcat") is None,
    reason="kcat is not installed: run tools/interop_extra.sh (make interop does)",
)
needs_kafkajs = pytest.mark.skipif(
    shutil.which("node") is None or not (NODE_MODULES / "kafkajs" / "package.json").is_file(),
    reason=f"node or kafkajs ({NODE_MODULES}/kafkajs) missing: run tools/interop_extra.sh "
    "(make interop does)",
)


def kcat(*args: str, stdin: str | None = None, timeout: float = 60.0) -> str:
    proc = subprocess.run(
        ["kcat", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert proc.returncode == 0, f"kcat {' '.join(args)}: {proc.returncode}\n{proc.stderr[-3000:]}"
    return proc.stdout


def kafkajs(*args: str, timeout: float = 90.0) -> dict[str, Any]:
    proc = subprocess.run(
        ["node", str(KAFKAJS_CLIENT), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env={**os.environ, "NODE_PATH": str(NODE_MODULES)},
    )
    lines = proc.stdout.strip().splitlines()
    assert proc.returncode == 0 and lines, proc.stdout[-2000:] + proc.stderr[-3000:]
    reply: dict[str, Any] = json.loads(lines[-1])
    assert reply["error"] is None, reply["error"]
    return reply


@needs_kcat
def test_kcat_metadata(broker: Any) -> None:
    broker.create_topic("kcat-meta", partitions=3)
    md = json.loads(kcat("-b", broker.bootstrap, "-L", "-J", "-m", "15"))
    assert [(b["id"], b["name"]) for b in md["brokers"]] == [(1, broker.bootstrap)]
    topics = {t["topic"]: t for t in md["topics"]}
    assert sorted(p["partition"] for p in topics["kcat-meta"]["partitions"]) == [0, 1, 2]
    assert {p["leader"] for p in topics["kcat-meta"]["partitions"]} == {1}


@needs_kcat
@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_kcat_produce_consume(broker: Any, codec: str) -> None:
    topic = f"kcat-{codec}"
    broker.create_topic(topic, partitions=1)
    lines = [f"k{i}:value {i}" for i in range(50)]
    kcat(
        "-b",
        broker.bootstrap,
        "-P",
        "-t",
        topic,
        "-p",
        "0",
        "-K",
        ":",
        "-z",
        codec,
        "-H",
        "source=kcat",
        "-m",
        "15",
        stdin="\n".join(lines) + "\n",
    )
    out = kcat(
        "-b",
        broker.bootstrap,
        "-C",
        "-t",
        topic,
        "-p",
        "0",
        "-o",
        "beginning",
        "-e",
        "-J",
        "-m",
        "15",
    )
    got = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    assert [(m["offset"], m["key"], m["payload"]) for m in got] == [
        (i, f"k{i}", f"value {i}") for i in range(50)
    ]
    assert all(m["headers"] == ["source", "kcat"] for m in got)
    # And a Python client sees the same.
    seen = ck_consume(broker.bootstrap, topic, 50)
    assert [(r.key, r.value) for r in seen] == [
        (f"k{i}".encode(), f"value {i}".encode()) for i in range(50)
    ]


@needs_kcat
def test_kcat_reads_what_confluent_kafka_wrote(broker: Any) -> None:
    broker.create_topic("kcat-read", partitions=1)
    records = [expected_record(i) for i in range(12)]
    ck_produce(broker.bootstrap, "kcat-read", records)
    out = kcat("-b", broker.bootstrap, "-C", "-t", "kcat-read", "-o", "beginning", "-e", "-J")
    got = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    assert [(m["offset"], m["ts"], m["key"], m["payload"]) for m in got] == [
        (
            i,
            BASE_TS + i,
            None if r.key is None else r.key.decode(),
            None if r.value is None else r.value.decode(),
        )
        for i, r in enumerate(records)
    ]


@needs_kafkajs
@pytest.mark.parametrize("codec", ["none", "gzip"])
def test_kafkajs_produce_consume(broker: Any, codec: str) -> None:
    topic = f"kafkajs-{codec}"
    broker.create_topic(topic, partitions=1)
    n = 30
    acks = kafkajs("produce", broker.bootstrap, topic, str(n), codec)["acks"]
    assert acks == [{"partition": 0, "baseOffset": 0}]
    reply = kafkajs("consume", broker.bootstrap, topic, str(n), "45000")
    got = reply["records"]
    assert len(got) == n, reply.get("failure")

    def hx(s: str | None) -> str | None:
        return None if s is None else s.encode().hex()

    assert [(r["offset"], r["timestamp"], r["key"], r["value"], r["headers"]) for r in got] == [
        (
            i,
            BASE_TS + i,
            None if i % 4 == 0 else hx(f"k-{i}"),
            None if i % 4 == 1 else hx(f"v-{i}"),
            {"h": hx(f"a-{i}")} if i % 4 == 2 else {},
        )
        for i in range(n)
    ]


@needs_kafkajs
def test_kafkajs_admin(broker: Any) -> None:
    reply = kafkajs("admin", broker.bootstrap, "kafkajs-admin", "3")
    assert reply["created"] is True
    assert "kafkajs-admin" in reply["listed"]
    assert reply["metadata"] == [
        {
            "name": "kafkajs-admin",
            "partitions": [{"partition": p, "leader": 1} for p in range(3)],
        }
    ]
    assert reply["offsets"] == [{"partition": p, "low": 0, "high": 0} for p in range(3)]
    assert "kafkajs-admin" not in reply["afterDelete"]
