"""aiokafka against ``kwire broker``: async produce and consume (assign, no group), the idempotent
producer, and a broker started with ``start_async`` inside the clients' own event loop."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from interop_helpers import (
    BASE_TS,
    CODEC_IDS,
    CODECS,
    Rec,
    compressible,
    expected_record,
    stored_batches,
)

pytestmark = pytest.mark.interop

TIMEOUT = 30.0
N = 40


def run(coro: Coroutine[Any, Any, Any], timeout: float = 90.0) -> Any:
    return asyncio.run(asyncio.wait_for(coro, timeout))


async def produce(
    bootstrap: str, topic: str, records: list[Rec], **config: Any
) -> list[tuple[int, int]]:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, request_timeout_ms=10000, **config)
    await asyncio.wait_for(producer.start(), TIMEOUT)
    try:
        futures = [
            await producer.send(
                topic,
                key=r.key,
                value=r.value,
                partition=r.partition,
                timestamp_ms=r.timestamp if r.timestamp >= 0 else None,
                headers=list(r.headers) or None,
            )
            for r in records
        ]
        metadata = await asyncio.wait_for(asyncio.gather(*futures), TIMEOUT)
        return [(md.partition, md.offset) for md in metadata]
    finally:
        await asyncio.wait_for(producer.stop(), TIMEOUT)


async def consume(
    bootstrap: str, topic: str, count: int, partitions: tuple[int, ...] = (0,)
) -> list[Rec]:
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=None,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        request_timeout_ms=10000,
    )
    await asyncio.wait_for(consumer.start(), TIMEOUT)
    out: list[Rec] = []
    try:
        tps = [TopicPartition(topic, p) for p in partitions]
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + TIMEOUT
        while len(out) < count and loop.time() < deadline:
            batch = await consumer.getmany(*tps, timeout_ms=200)
            for records in batch.values():
                out.extend(
                    Rec(r.key, r.value, list(r.headers), r.timestamp, r.offset, r.partition)
                    for r in records
                )
    finally:
        await asyncio.wait_for(consumer.stop(), TIMEOUT)
    assert len(out) >= count, f"aiokafka read {len(out)} of {count} records in {TIMEOUT} s"
    return out


@pytest.mark.parametrize("codec", CODECS)
def test_produce_consume(broker: Any, codec: str) -> None:
    topic = f"aio-{codec}"
    broker.create_topic(topic, partitions=1)
    records = [compressible(expected_record(i)) for i in range(N)]
    acked = run(
        produce(
            broker.bootstrap,
            topic,
            records,
            compression_type=None if codec == "none" else codec,
            linger_ms=5,
            max_batch_size=2000,
        )
    )
    assert acked == [(0, i) for i in range(N)]
    got = run(consume(broker.bootstrap, topic, N))
    assert [r.content() for r in got] == [r.content() for r in records]
    assert [(r.offset, r.timestamp) for r in got] == [(i, BASE_TS + i) for i in range(N)]
    batches = stored_batches(broker.data_dir, topic)
    assert {int(b.compression) for b in batches} == {CODEC_IDS[codec]}


def test_idempotent_producer(broker: Any) -> None:
    broker.create_topic("aio-idem", partitions=3)
    n = 150
    records = [Rec(f"k{i}".encode(), f"v{i}".encode(), [], BASE_TS, -1, i % 3) for i in range(n)]
    acked = run(
        produce(
            broker.bootstrap,
            "aio-idem",
            records,
            enable_idempotence=True,
            acks="all",
            linger_ms=2,
            max_batch_size=200,
        )
    )
    for p in range(3):
        assert [o for part, o in acked if part == p] == list(range(n // 3))
    got = run(consume(broker.bootstrap, "aio-idem", n, partitions=(0, 1, 2)))
    assert sorted(r.value for r in got) == sorted(r.value for r in records)
    for p in range(3):
        batches = stored_batches(broker.data_dir, "aio-idem", p)
        assert {b.producer_id for b in batches} != {-1}
        assert len({b.producer_id for b in batches}) == 1
        assert batches[0].base_sequence == 0


def test_broker_started_in_the_clients_loop(tmp_path: Path) -> None:
    """``start_async``/``stop_async`` inside a running loop; the topic is auto-created by the
    producer's metadata request (auto.create.topics.enable defaults to true)."""
    from kwire.broker import Broker

    async def scenario() -> list[Rec]:
        b = Broker(str(tmp_path / "data"), host="127.0.0.1", port=0, config={"num.partitions": "2"})
        await asyncio.wait_for(b.start_async(), TIMEOUT)
        try:
            records = [expected_record(i) for i in range(10)]
            acked = await produce(b.bootstrap, "aio-auto", records)
            assert acked == [(0, i) for i in range(10)]
            return await consume(b.bootstrap, "aio-auto", 10, partitions=(0, 1))
        finally:
            await asyncio.wait_for(b.stop_async(), TIMEOUT)

    got = run(scenario())
    assert [r.content() for r in got] == [expected_record(i).content() for i in range(10)]
