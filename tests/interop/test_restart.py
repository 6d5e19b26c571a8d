"""Restarts: what a stopped broker wrote is all there for the next one on the same data dir
(records, offsets, topic configs, producer state), and ``kwire broker`` the command."""

from __future__ import annotations

import signal
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import confluent_kafka as ck
import pytest
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic, ResourceType
from interop_helpers import (
    BASE_TS,
    Rec,
    ck_conf,
    ck_consume,
    ck_produce,
    expected_record,
    free_port,
    stored_batches,
)

pytestmark = pytest.mark.interop

N = 60


def test_restart_keeps_everything(start_broker: Callable[..., Any], tmp_path: Path) -> None:
    data = tmp_path / "data"
    first = start_broker(data_dir=data)
    first.create_topic("restart", partitions=2, config={"retention.ms": "123456789"})
    records = [
        Rec(e.key, e.value, e.headers, e.timestamp, -1, i % 2)
        for i, e in enumerate(expected_record(i) for i in range(N))
    ]
    ck_produce(
        first.bootstrap,
        "restart",
        records,
        **{"compression.codec": "snappy", "enable.idempotence": True, "linger.ms": 5},
    )
    before = ck_consume(first.bootstrap, "restart", N, partitions=(0, 1))
    first.stop()

    second = start_broker(data_dir=data)
    after = ck_consume(second.bootstrap, "restart", N, partitions=(0, 1))

    def by_position(records: list[Rec]) -> list[Rec]:
        return sorted(records, key=lambda r: (r.partition, r.offset))

    assert by_position(after) == by_position(before)
    assert sorted(r.sort_key() for r in after) == sorted(r.sort_key() for r in records)

    admin = AdminClient(ck_conf(second.bootstrap))
    md = admin.list_topics(timeout=30)
    assert sorted(md.topics["restart"].partitions) == [0, 1]
    (configs,) = (
        f.result(timeout=30)
        for f in admin.describe_configs([ConfigResource(ResourceType.TOPIC, "restart")]).values()
    )
    assert configs["retention.ms"].value == "123456789"

    # Offsets continue where they stopped, and a new idempotent producer is accepted.
    more = [Rec(b"after", b"restart", [], BASE_TS, -1, 0)]
    (report,) = ck_produce(second.bootstrap, "restart", more, **{"enable.idempotence": True})
    assert report[2] == N // 2
    batches = stored_batches(data, "restart", 0)
    assert batches[-1].producer_id != batches[0].producer_id  # a new producer id


def test_cli_broker_serves_and_stops_on_sigterm(broker_cli: Callable[..., Any]) -> None:
    b = broker_cli()
    records = [expected_record(i) for i in range(10)]
    ck_produce(b.bootstrap, "cli", records)  # auto-created (auto.create.topics.enable=true)
    got = ck_consume(b.bootstrap, "cli", 10)
    assert [r.content() for r in got] == [r.content() for r in records]
    # A clean stop: exit status 0 (or 128 + the signal, as a JVM's shutdown hooks give).
    assert b.kill(signal.SIGTERM) in (0, 128 + signal.SIGTERM), b.output()
    # Restart the command on the same data dir.
    again = broker_cli(data_dir=b.data_dir)
    assert [r.content() for r in ck_consume(again.bootstrap, "cli", 10)] == [
        r.content() for r in records
    ]
    assert again.kill(signal.SIGINT) in (0, 128 + signal.SIGINT), again.output()


def test_cli_broker_stops_cleanly_on_sighup(broker_cli: Callable[..., Any]) -> None:
    """The terminal that ran ``kwire broker`` closes (SIGHUP): a clean stop, as a JVM runs
    Kafka's shutdown hook on SIGHUP (``Exit``/``LoggingSignalHandler``), not Python's default
    of dying at once, which leaves logs to recover at the next start."""
    b = broker_cli()
    ck_produce(b.bootstrap, "hup", [expected_record(i) for i in range(3)])
    assert b.kill(signal.SIGHUP) == 0, b.output()
    assert "shutting down (SIGHUP)" in b.output()
    assert "shut down completed" in b.output()


def test_sigkill_loses_no_acknowledged_record(broker_cli: Callable[..., Any]) -> None:
    """A background idempotent producer (acks=all) numbers its records; the broker is killed with
    SIGKILL mid-stream and restarted on the same data dir and port. Every record the producer saw
    acknowledged is there exactly once (a retried batch that had been written before the kill
    must be recognised as a duplicate: the broker rebuilds producer state from the log)."""
    port = free_port()
    b = broker_cli(port=port)
    admin = AdminClient(ck_conf(b.bootstrap))
    admin.create_topics([NewTopic("durable", 1, 1)])["durable"].result(timeout=30)

    producer = ck.Producer(
        ck_conf(
            b.bootstrap,
            **{
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 2,
                "batch.num.messages": 20,
                "message.timeout.ms": 60000,
                "retry.backoff.ms": 50,
                "reconnect.backoff.max.ms": 200,
            },
        )
    )
    acked: list[int] = []
    failed: list[tuple[int, str]] = []

    def report(err: Any, msg: Any) -> None:
        if err is None:
            acked.append(int(msg.value()))
        else:
            failed.append((int(msg.value()), str(err)))

    try:
        # Produce as a stream (a short poll every 20 records lets deliveries flow), kill the broker
        # once 1500 records are acknowledged, restart it, then produce 1500 more.
        kill_after_acks = 1500
        produced = 0
        stop_at: int | None = None
        restarted = None
        deadline = time.monotonic() + 90
        while stop_at is None or produced < stop_at:
            assert time.monotonic() < deadline, f"producing took too long ({len(acked)} acked)"
            try:
                producer.produce(
                    "durable", value=str(produced).encode(), partition=0, on_delivery=report
                )
            except BufferError:
                producer.poll(0.05)
                continue
            produced += 1
            producer.poll(0.005 if produced % 20 == 0 else 0)
            if stop_at is None and len(acked) >= kill_after_acks:
                assert b.kill(signal.SIGKILL) == -signal.SIGKILL
                restarted = broker_cli(data_dir=b.data_dir, port=port)
                stop_at = produced + 1500
        total = produced
        left = producer.flush(60)
    finally:
        producer.purge()  # whatever is left when the test fails (nothing when it passes)
        producer.flush(1)
    assert restarted is not None
    assert left == 0, f"{left} records never delivered (failures: {failed[:5]})"
    assert len(set(acked)) == len(acked)

    got = ck_consume(restarted.bootstrap, "durable", len(acked), timeout=60, require=False)
    values = [int(r.value) for r in got]
    duplicates = sorted(v for v, n in Counter(values).items() if n > 1)
    missing = sorted(set(acked) - set(values))
    assert missing == [], f"{len(missing)} acknowledged records lost: {missing[:20]}"
    assert duplicates == [], f"{len(duplicates)} records stored twice: {duplicates[:20]}"
    assert [r.offset for r in got] == list(range(len(got)))
    assert failed == [] and sorted(acked) == list(range(total))
    consumer = ck.Consumer(ck_conf(restarted.bootstrap, **{"group.id": "kwire-durable"}))
    try:
        watermarks = consumer.get_watermark_offsets(ck.TopicPartition("durable", 0), timeout=30)
    finally:
        consumer.close()
    assert watermarks == (0, total)  # nothing stored beyond the records sent once


def test_sigkill_keeps_committed_group_offsets(broker_cli: Callable[..., Any]) -> None:
    """Offsets a group committed (acknowledged) survive a SIGKILL: the restarted broker loads
    them from ``__consumer_offsets``, and the group resumes where it was."""
    port = free_port()
    b = broker_cli(port=port)
    admin = AdminClient(ck_conf(b.bootstrap))
    admin.create_topics([NewTopic("kept", 2, 1)])["kept"].result(timeout=30)
    ck_produce(b.bootstrap, "kept", [Rec(b"k", b"v%d" % i, partition=i % 2) for i in range(20)])
    conf = ck_conf(b.bootstrap, **{"group.id": "kept-group", "enable.auto.commit": False})
    committer = ck.Consumer(conf)
    try:
        committer.commit(
            offsets=[ck.TopicPartition("kept", 0, 4), ck.TopicPartition("kept", 1, 7)],
            asynchronous=False,
        )
    finally:
        committer.close()
    assert b.kill(signal.SIGKILL) == -signal.SIGKILL
    again = broker_cli(data_dir=b.data_dir, port=port)
    consumer = ck.Consumer(ck_conf(again.bootstrap, **{"group.id": "kept-group"}))
    try:
        committed = consumer.committed(
            [ck.TopicPartition("kept", 0), ck.TopicPartition("kept", 1)], timeout=30
        )
        consumer.assign(committed)
        seen: list[tuple[int, int]] = []
        for _ in range(100):  # at most 20 s
            msg = consumer.poll(0.2)
            if msg is not None and msg.error() is None:
                seen.append((msg.partition(), msg.offset()))
            if len(seen) == 9:
                break
    finally:
        consumer.close()
    assert [(tp.partition, tp.offset) for tp in committed] == [(0, 4), (1, 7)]
    assert sorted(seen) == [(0, o) for o in range(4, 10)] + [(1, o) for o in range(7, 10)]
