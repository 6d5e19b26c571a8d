"""DeleteRecords and the log start across a restart: ListOffsets, Fetch and ``kwire dump`` after a
kill, read by librdkafka (confluent-kafka).

Kafka's rules (``UnifiedLog.maybeIncrementLogStartOffset``, ``LogManager``'s
``log-start-offset-checkpoint``, ``UnifiedLog.deleteLogStartOffsetBreachedSegments``): DeleteRecords
moves the log start; the records below it stay in their segment file until the whole segment is
below the log start, when retention deletes it. The log start comes back from the checkpoint at the
next start: ListOffsets EARLIEST answers it, a Fetch below it is OFFSET_OUT_OF_RANGE (the consumer
resets), and ``kwire dump``, like ``kafka-dump-log.sh``, prints what the files hold."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import confluent_kafka as ck
import pytest
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec
from interop_helpers import Rec, ck_conf, ck_produce, wait_until

pytestmark = pytest.mark.interop

TIMEOUT = 20.0
N = 10


def _earliest(bootstrap: str, topic: str) -> int:
    admin = AdminClient(ck_conf(bootstrap))
    tp = ck.TopicPartition(topic, 0)
    found = admin.list_offsets({tp: OffsetSpec.earliest()}, request_timeout=TIMEOUT)[tp]
    return int(found.result(timeout=TIMEOUT).offset)


def _read_from(bootstrap: str, topic: str, offset: int, count: int) -> list[int]:
    consumer = ck.Consumer(
        ck_conf(
            bootstrap,
            **{"group.id": topic, "enable.auto.commit": False, "auto.offset.reset": "earliest"},
        )
    )
    got: list[int] = []
    try:
        consumer.assign([ck.TopicPartition(topic, 0, offset)])
        deadline = time.monotonic() + TIMEOUT
        while len(got) < count and time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is not None and msg.error() is None:
                got.append(msg.offset())
    finally:
        consumer.close()
    return got


def _dumped_base_offsets(partition_dir: Path) -> list[int]:
    files = ",".join(str(p) for p in sorted(partition_dir.glob("*.log")))
    proc = subprocess.run(
        [sys.executable, "-m", "kwire", "dump", "--files", files],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return [
        int(line.split("baseOffset: ")[1].split()[0])
        for line in proc.stdout.splitlines()
        if line.startswith("baseOffset: ")
    ]


def test_log_start_survives_a_kill(tmp_path: Path, broker_cli: Any) -> None:
    data = tmp_path / "data"
    config = {"log.retention.check.interval.ms": "200"}
    first = broker_cli(data_dir=data, config=config)
    topic = "trimmed"
    admin = AdminClient(ck_conf(first.bootstrap))
    # one record a batch and a segment of about two batches: records 0-5 span whole segments
    # and part of one
    new = NewTopic(topic, 1, 1, config={"segment.bytes": "180"})
    for f in admin.create_topics([new], request_timeout=TIMEOUT).values():
        f.result(timeout=TIMEOUT)
    records = [Rec(b"k", f"v{i}".encode()) for i in range(N)]
    ck_produce(first.bootstrap, topic, records, **{"linger.ms": 0, "batch.num.messages": 1})
    segment_bases = [int(p.stem) for p in sorted((data / f"{topic}-0").glob("*.log"))]
    assert len(segment_bases) > 2, segment_bases
    cut = 5  # inside a segment: that segment keeps records below the log start
    deleted = admin.delete_records([ck.TopicPartition(topic, 0, cut)], request_timeout=TIMEOUT)
    for f in deleted.values():
        assert f.result(timeout=TIMEOUT).low_watermark == cut
    keeper = max(b for b in segment_bases if b <= cut)
    assert keeper < cut, segment_bases

    # retention deletes the segments wholly below the log start, not the one it falls in
    wait_until(
        "the segments below the log start deleted",
        lambda: min(int(p.stem) for p in (data / f"{topic}-0").glob("*.log")) == keeper,
    )
    first.kill(signal.SIGKILL)

    assert f"{topic} 0 {cut}" in (data / "log-start-offset-checkpoint").read_text().splitlines()
    dumped = _dumped_base_offsets(data / f"{topic}-0")
    assert dumped[0] == keeper and dumped == sorted(dumped)  # the file's bytes, as Kafka's tool

    again = broker_cli(data_dir=data, config=config)
    assert _earliest(again.bootstrap, topic) == cut
    low, high = _watermarks(again.bootstrap, topic)
    assert (low, high) == (cut, N)
    assert _read_from(again.bootstrap, topic, keeper, N - cut) == list(range(cut, N))
    assert _read_from(again.bootstrap, topic, cut + 2, N - cut - 2) == list(range(cut + 2, N))


def _watermarks(bootstrap: str, topic: str) -> tuple[int, int]:
    consumer = ck.Consumer(ck_conf(bootstrap, **{"group.id": f"{topic}-wm"}))
    try:
        low, high = consumer.get_watermark_offsets(ck.TopicPartition(topic, 0), timeout=TIMEOUT)
    finally:
        consumer.close()
    return int(low), int(high)
