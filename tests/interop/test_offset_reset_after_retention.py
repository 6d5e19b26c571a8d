"""A group's committed offset that time retention deleted, met by librdkafka, kafka-python and
aiokafka under each ``auto.offset.reset``: earliest reads from the new log start, latest from the
log end, none (librdkafka's ``error``) reports OFFSET_OUT_OF_RANGE to the application, as against
Kafka (the Fetch answers OFFSET_OUT_OF_RANGE, ``Fetcher``/``rdkafka_fetcher.c`` apply the policy).

The partition has 18 records, two a segment: the first 12 an hour old, the last 6 new; with
``retention.ms`` one minute, retention deletes offsets 0-11 and the group had committed 2."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import aiokafka
import confluent_kafka as ck
import kafka
import pytest
from aiokafka.errors import OffsetOutOfRangeError as AioOffsetOutOfRange
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ResourceType,
)
from interop_helpers import Rec, ck_conf, ck_produce, wait_until
from kafka.errors import OffsetOutOfRangeError as KpOffsetOutOfRange

pytestmark = pytest.mark.interop

TOPIC, GROUP = "aged", "aged-group"
TIMEOUT = 20.0
LOG_START, LOG_END, COMMITTED = 12, 18, 2


def _aged(start_broker: Any) -> Any:
    broker = start_broker(config={"log.retention.check.interval.ms": "200"})
    admin = AdminClient(ck_conf(broker.bootstrap))
    admin.create_topics([NewTopic(TOPIC, 1, 1, config={"segment.bytes": "180"})])[TOPIC].result(
        timeout=TIMEOUT
    )
    now = int(time.time() * 1000)
    records = [
        Rec(b"k", b"v%02d" % i, timestamp=(now - 3_600_000 if i < LOG_START else now) + i)
        for i in range(LOG_END)
    ]
    ck_produce(broker.bootstrap, TOPIC, records, **{"linger.ms": 0, "batch.num.messages": 1})
    committer = ck.Consumer(ck_conf(broker.bootstrap, **{"group.id": GROUP}))
    try:
        committer.commit(offsets=[ck.TopicPartition(TOPIC, 0, COMMITTED)], asynchronous=False)
    finally:
        committer.close()
    retention = ConfigEntry("retention.ms", "60000", incremental_operation=AlterConfigOpType.SET)
    resource = ConfigResource(ResourceType.TOPIC, TOPIC, incremental_configs=[retention])
    for f in admin.incremental_alter_configs([resource], request_timeout=TIMEOUT).values():
        f.result(timeout=TIMEOUT)
    probe = ck.Consumer(ck_conf(broker.bootstrap, **{"group.id": "probe"}))
    try:
        tp = ck.TopicPartition(TOPIC, 0)
        wait_until(
            "retention to delete offsets 0-11",
            lambda: probe.get_watermark_offsets(tp, timeout=TIMEOUT)[0] == LOG_START or None,
        )
        assert probe.get_watermark_offsets(tp, timeout=TIMEOUT) == (LOG_START, LOG_END)
    finally:
        probe.close()
    return broker


class _Lines(logging.Handler):
    """librdkafka's log lines (confluent-kafka hands them to a Python logger)."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__(logging.DEBUG)
        self.lines = lines

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def _produce_one(bootstrap: str) -> None:
    ck_produce(bootstrap, TOPIC, [Rec(b"k", b"after")])


@pytest.mark.parametrize("policy", ["earliest", "latest", "error"])
def test_confluent_kafka(start_broker: Any, policy: str) -> None:
    broker = _aged(start_broker)
    lines: list[str] = []
    logger = logging.getLogger(f"kwire.test.reset.{policy}")
    logger.propagate = False
    logger.addHandler(_Lines(lines))
    consumer = ck.Consumer(
        ck_conf(
            broker.bootstrap,
            **{"group.id": GROUP, "enable.auto.commit": False, "auto.offset.reset": policy},
        ),
        logger=logger,
    )
    tp = ck.TopicPartition(TOPIC, 0)
    offsets: list[int] = []
    errors: list[Any] = []
    produced = False
    try:
        consumer.assign([tp])  # from the committed offset
        for _ in range(100):  # at most 20 s
            msg = consumer.poll(0.2)
            if msg is not None and msg.error() is not None:
                errors.append(msg.error())
            elif msg is not None:
                offsets.append(msg.offset())
            if offsets or errors:
                break
            # librdkafka's position stays unset until a message: its log says the reset
            if policy == "latest" and not produced and any("offset reset" in x for x in lines):
                _produce_one(broker.bootstrap)
                produced = True
    finally:
        consumer.close()
    if policy == "error":
        (error,) = errors
        assert error.code() == ck.KafkaError._AUTO_OFFSET_RESET, error
        assert "Offset out of range" in error.str(), error
    else:
        assert errors == []
        assert offsets[:1] == [LOG_START if policy == "earliest" else LOG_END]


@pytest.mark.parametrize("policy", ["earliest", "latest", "none"])
def test_kafka_python(start_broker: Any, policy: str) -> None:
    broker = _aged(start_broker)
    consumer = kafka.KafkaConsumer(
        bootstrap_servers=broker.bootstrap,
        group_id=GROUP,
        enable_auto_commit=False,
        auto_offset_reset=policy,
    )
    tp = kafka.TopicPartition(TOPIC, 0)
    offsets: list[int] = []
    try:
        consumer.assign([tp])
        if policy == "none":
            with pytest.raises(KpOffsetOutOfRange):
                for _ in range(20):  # at most 20 s
                    consumer.poll(timeout_ms=1000)
            return
        produced = False
        for _ in range(20):  # at most 20 s
            for records in consumer.poll(timeout_ms=1000).values():
                offsets += [r.offset for r in records]
            if offsets:
                break
            if policy == "latest" and not produced and consumer.position(tp) == LOG_END:
                _produce_one(broker.bootstrap)
                produced = True
    finally:
        consumer.close()
    assert offsets[:1] == [LOG_START if policy == "earliest" else LOG_END]


@pytest.mark.parametrize("policy", ["earliest", "latest", "none"])
def test_aiokafka(start_broker: Any, policy: str) -> None:
    broker = _aged(start_broker)

    async def consume() -> list[int]:
        consumer = aiokafka.AIOKafkaConsumer(
            bootstrap_servers=broker.bootstrap,
            group_id=GROUP,
            enable_auto_commit=False,
            auto_offset_reset=policy,
        )
        await consumer.start()
        tp = aiokafka.TopicPartition(TOPIC, 0)
        offsets: list[int] = []
        try:
            consumer.assign([tp])
            produced = False
            for _ in range(20):  # at most 20 s
                for records in (await consumer.getmany(timeout_ms=1000)).values():
                    offsets += [r.offset for r in records]
                if offsets:
                    break
                if policy == "latest" and not produced and await consumer.position(tp) == LOG_END:
                    await asyncio.to_thread(_produce_one, broker.bootstrap)
                    produced = True
        finally:
            await consumer.stop()
        return offsets

    if policy == "none":
        with pytest.raises(AioOffsetOutOfRange):
            asyncio.run(asyncio.wait_for(consume(), 60))
        return
    offsets = asyncio.run(asyncio.wait_for(consume(), 60))
    assert offsets[:1] == [LOG_START if policy == "earliest" else LOG_END]
