"""What the clients consumed is what is on disk: ``kwire.log.PartitionLog`` / ``read_batches`` and
``kwire dump --print-data-log`` read the broker's data dir and agree with confluent-kafka.

The topic rolls segments (segment.bytes=1024; a 3.9 personality, since Kafka 4.0 raised that
setting's minimum to 1 MiB), and several producers with different codecs write to it."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import confluent_kafka as ck
import pytest
from interop_helpers import (
    BASE_TS,
    CODECS,
    Rec,
    ck_conf,
    ck_consume,
    ck_produce,
    expected_record,
    partition_dirs,
    stored_records,
)

from kwire.log import PartitionLog

pytestmark = pytest.mark.interop

PER_CODEC = 60


def produce_mixed(bootstrap: str, topic: str) -> list[Rec]:
    """One producer per codec, PER_CODEC records each, alternating between partitions 0 and 1."""
    sent: list[Rec] = []
    for c, codec in enumerate(CODECS):
        records = []
        for i in range(PER_CODEC):
            e = expected_record(c * PER_CODEC + i)
            records.append(Rec(e.key, e.value, e.headers, e.timestamp, -1, i % 2))
        ck_produce(
            bootstrap,
            topic,
            records,
            **{"compression.codec": codec, "linger.ms": 5, "batch.num.messages": 8},
        )
        sent.extend(records)
    return sent


def dump_records(segments: list[str]) -> list[dict[str, Any]]:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "kwire",
            "dump",
            "--files",
            ",".join(segments),
            "--print-data-log",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    assert [x for x in lines if x["type"] not in ("file", "log", "batch", "record")] == []
    return [x for x in lines if x["type"] == "record"]


def test_disk_agrees_with_the_clients(start_broker: Callable[..., Any]) -> None:
    b = start_broker(kafka_version="3.9")
    b.create_topic("cross", partitions=2, config={"segment.bytes": "1024"})
    sent = produce_mixed(b.bootstrap, "cross")
    n = len(sent)
    consumed = ck_consume(b.bootstrap, "cross", n, partitions=(0, 1))
    assert sorted(r.sort_key() for r in consumed) == sorted(r.sort_key() for r in sent)

    dirs = partition_dirs(b.data_dir, "cross")
    assert [d.partition for d in dirs] == [0, 1]
    consumer = ck.Consumer(
        ck_conf(b.bootstrap, **{"group.id": "kwire-cross", "enable.auto.commit": False})
    )
    try:
        for d in dirs:
            p = d.partition
            theirs = [r for r in consumed if r.partition == p]
            ours = stored_records(b.data_dir, "cross", p)
            assert ours == theirs
            log = PartitionLog(d)
            assert len(log.segments) > 1  # segment.bytes=1024 rolled the log
            assert log.start_offset == 0
            assert log.next_offset() == len(theirs)
            assert consumer.get_watermark_offsets(ck.TopicPartition("cross", p), 30) == (
                0,
                len(theirs),
            )
            # Timestamp lookups: the broker's answer is kwire.log's answer on its files.
            for ts in (BASE_TS, BASE_TS + 101, BASE_TS + n - 1, BASE_TS + n + 10):
                (answer,) = consumer.offsets_for_times([ck.TopicPartition("cross", p, ts)], 30)
                found = log.offset_for_timestamp(ts)
                assert answer.offset == (-1 if found is None else found[1].offset), ts

            dumped = dump_records([s.log for s in log.segments])

            def text(v: bytes | None) -> str | None:
                return None if v is None else v.decode()

            assert [
                (
                    x["offset"],
                    x["timestamp"],
                    x.get("key"),
                    x.get("payload"),
                    x["keySize"],
                    x["valueSize"],
                    x["headerKeys"],
                )
                for x in dumped
            ] == [
                (
                    r.offset,
                    r.timestamp,
                    text(r.key),
                    text(r.value),
                    -1 if r.key is None else len(r.key),
                    -1 if r.value is None else len(r.value),
                    [k for k, _ in r.headers],
                )
                for r in theirs
            ]
    finally:
        consumer.close()


def test_index_files_pass_kwire_dump_checks(start_broker: Callable[..., Any]) -> None:
    """The broker's .index/.timeindex files verify against its .log files (kafka-dump-log's
    --verify-index-only and --index-sanity-check, as kwire dump implements them)."""
    b = start_broker(kafka_version="3.9")
    b.create_topic(
        "cross-idx",
        partitions=2,
        config={"segment.bytes": "2048", "index.interval.bytes": "128"},
    )
    produce_mixed(b.bootstrap, "cross-idx")
    b.stop()  # a clean stop trims the active segment's indexes as Kafka does
    dirs = partition_dirs(b.data_dir, "cross-idx")
    assert [d.partition for d in dirs] == [0, 1]
    segments = [s for d in dirs for s in d.segments]
    assert len(segments) > 2
    files = [f for s in segments for f in (s.index, s.timeindex) if f is not None]
    assert len(files) == 2 * len(segments)
    for option in ("--verify-index-only", "--index-sanity-check"):
        proc = subprocess.run(
            [sys.executable, "-m", "kwire", "dump", "--files", ",".join(files), option],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert proc.returncode == 0 and proc.stderr == "", proc.stdout[-3000:] + proc.stderr[-3000:]
        if option == "--index-sanity-check":
            passed = [line for line in proc.stdout.splitlines() if "passed sanity check" in line]
            assert len(passed) == len(files), proc.stdout
