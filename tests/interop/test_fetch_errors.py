"""Fetch errors as librdkafka (confluent-kafka) and kcat meet them: an offset past the end, a
committed offset below the log start after DeleteRecords, a topic deleted while assigned.

Kafka answers a partition error with *empty* records (``FetchResponse.partitionResponse``:
``MemoryRecords.EMPTY``), never a null record set: librdkafka rejects a null one ("invalid
MessageSetSize -1"), logs it in a loop and never acts on the error, so the consumer never resets to
``auto.offset.reset``. Each test watches librdkafka's log for that line as well as the outcome."""

from __future__ import annotations

import logging
import shutil
import subprocess
import time
from typing import Any

import confluent_kafka as ck
import pytest
from confluent_kafka.admin import AdminClient
from interop_helpers import Rec, ck_conf, ck_produce, java_clients

pytestmark = pytest.mark.interop

TIMEOUT = 20.0


class _Lines(logging.Handler):
    """Collects librdkafka's log lines (confluent-kafka hands them to a Python logger)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())

    def invalid_sizes(self) -> list[str]:
        return [line for line in self.lines if "MessageSetSize" in line]


def _logger(name: str) -> tuple[logging.Logger, _Lines]:
    lines = _Lines()
    log = logging.getLogger(f"kwire.test.rdkafka.{name}")
    log.propagate = False
    log.setLevel(logging.DEBUG)
    log.addHandler(lines)
    return log, lines


def _produce(bootstrap: str, topic: str, n: int) -> None:
    ck_produce(bootstrap, topic, [Rec(b"k", f"v{i}".encode()) for i in range(n)])


def _poll_offsets(consumer: ck.Consumer, count: int, errors: list[Any]) -> list[int]:
    """The offsets of up to ``count`` messages polled in at most TIMEOUT seconds."""
    offsets: list[int] = []
    deadline = time.monotonic() + TIMEOUT
    while len(offsets) < count and time.monotonic() < deadline:
        msg = consumer.poll(0.2)
        if msg is None:
            continue
        if msg.error() is not None:
            errors.append(msg.error())
            continue
        offsets.append(msg.offset())
    return offsets


def test_assigned_past_the_end_resets_to_earliest(broker: Any) -> None:
    topic = "fe-past-end"
    broker.create_topic(topic, partitions=1)
    _produce(broker.bootstrap, topic, 10)
    log, lines = _logger(topic)
    consumer = ck.Consumer(
        ck_conf(
            broker.bootstrap,
            **{"group.id": topic, "enable.auto.commit": False, "auto.offset.reset": "earliest"},
        ),
        logger=log,
    )
    errors: list[Any] = []
    try:
        consumer.assign([ck.TopicPartition(topic, 0, 1000)])
        offsets = _poll_offsets(consumer, 10, errors)
    finally:
        consumer.close()
    assert lines.invalid_sizes()[:3] == []
    assert offsets == list(range(10)), errors


def test_committed_offset_below_log_start_resets_to_earliest(broker: Any) -> None:
    topic = "fe-below-start"
    broker.create_topic(topic, partitions=1)
    _produce(broker.bootstrap, topic, 10)
    tp = ck.TopicPartition(topic, 0)
    conf = ck_conf(
        broker.bootstrap,
        **{"group.id": topic, "enable.auto.commit": False, "auto.offset.reset": "earliest"},
    )
    committer = ck.Consumer(conf)
    try:
        committer.commit(offsets=[ck.TopicPartition(topic, 0, 2)], asynchronous=False)
    finally:
        committer.close()
    admin = AdminClient(ck_conf(broker.bootstrap))
    deleted = admin.delete_records([ck.TopicPartition(topic, 0, 6)], request_timeout=TIMEOUT)
    for f in deleted.values():
        assert f.result(timeout=TIMEOUT).low_watermark == 6

    log, lines = _logger(topic)
    consumer = ck.Consumer(conf, logger=log)
    errors: list[Any] = []
    try:
        consumer.subscribe([topic])
        offsets = _poll_offsets(consumer, 4, errors)
        (committed,) = consumer.committed([tp], timeout=TIMEOUT)
    finally:
        consumer.close()
    assert lines.invalid_sizes()[:3] == []
    assert offsets == [6, 7, 8, 9], errors
    assert committed.offset == 2  # a reset moves the position, not the committed offset


def test_topic_deleted_while_assigned_reports_the_error(broker: Any) -> None:
    """The Fetch error (UNKNOWN_TOPIC_OR_PARTITION) sends librdkafka to the metadata, which no
    longer has the topic: an assigned partition is then dropped ("partition count changed"), as
    with Kafka; librdkafka tells an assign()-only application nothing more."""
    topic = "fe-deleted"
    broker.create_topic(topic, partitions=1)
    _produce(broker.bootstrap, topic, 3)
    log, lines = _logger(topic)
    consumer = ck.Consumer(
        ck_conf(
            broker.bootstrap,
            **{
                "group.id": topic,
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "topic.metadata.propagation.max.ms": 1000,  # not 30 s before "non-existent"
            },
        ),
        logger=log,
    )
    errors: list[Any] = []
    try:
        consumer.assign([ck.TopicPartition(topic, 0, 0)])
        assert _poll_offsets(consumer, 3, errors) == [0, 1, 2], errors
        broker.delete_topic(topic)

        def dropped() -> bool:
            return any("partition count changed from 1 to 0" in line for line in lines.lines)

        deadline = time.monotonic() + TIMEOUT
        while not dropped() and time.monotonic() < deadline:
            consumer.poll(0.2)
    finally:
        consumer.close()
    assert lines.invalid_sizes()[:3] == []
    assert dropped(), lines.lines[-20:]


@pytest.mark.interop_extra
def test_kcat_offset_below_log_start(broker: Any) -> None:
    """``kcat -o N`` with N below the log start: librdkafka resets, to the end by default (kcat
    then exits at once, -e) or to what is left with ``auto.offset.reset=earliest``."""
    kcat = shutil.which("kcat") or shutil.which("kafkacat")
    if kcat is None:
        pytest.skip("kcat is not installed (tools/interop_extra.sh installs it)")
    topic = "fe-kcat"
    broker.create_topic(topic, partitions=1)
    _produce(broker.bootstrap, topic, 10)
    admin = AdminClient(ck_conf(broker.bootstrap))
    for f in admin.delete_records(
        [ck.TopicPartition(topic, 0, 6)], request_timeout=TIMEOUT
    ).values():
        f.result(timeout=TIMEOUT)

    def kcat_from(offset: int, *extra: str) -> subprocess.CompletedProcess[str]:
        command = [kcat, "-b", broker.bootstrap, "-C", "-t", topic, "-p", "0", "-o", str(offset)]
        return subprocess.run(
            [*command, "-e", *extra], capture_output=True, text=True, timeout=TIMEOUT, check=False
        )

    to_end = kcat_from(2)
    assert to_end.returncode == 0, to_end.stderr[-2000:]
    assert "MessageSetSize" not in to_end.stderr
    assert "offset reset (at offset 2" in to_end.stderr
    assert to_end.stdout.split() == []
    earliest = kcat_from(2, "-X", "auto.offset.reset=earliest")
    assert earliest.returncode == 0, earliest.stderr[-2000:]
    assert "MessageSetSize" not in earliest.stderr
    assert earliest.stdout.split() == ["v6", "v7", "v8", "v9"]


def test_java_consumer_past_the_end_resets_to_earliest(broker: Any) -> None:
    """Kafka's Java consumer seeks past the end: OFFSET_OUT_OF_RANGE, then auto.offset.reset."""
    topic = "fe-java-past-end"
    broker.create_topic(topic, partitions=1)
    _produce(broker.bootstrap, topic, 10)
    reply = java_clients("consume", broker.bootstrap, topic, "10", "20000", "seek=1000")
    assert [r["offset"] for r in reply["records"]] == list(range(10))


def test_java_consumer_below_log_start_resets_to_earliest(broker: Any) -> None:
    topic = "fe-java-below-start"
    broker.create_topic(topic, partitions=1)
    _produce(broker.bootstrap, topic, 10)
    admin = AdminClient(ck_conf(broker.bootstrap))
    for f in admin.delete_records(
        [ck.TopicPartition(topic, 0, 6)], request_timeout=TIMEOUT
    ).values():
        f.result(timeout=TIMEOUT)
    reply = java_clients("consume", broker.bootstrap, topic, "4", "20000", "seek=2")
    assert [r["offset"] for r in reply["records"]] == [6, 7, 8, 9]
