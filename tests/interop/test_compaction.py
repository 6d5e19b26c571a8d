"""Compaction with real clients: confluent-kafka writes many updates of a few keys (and
tombstones) to a ``cleanup.policy=compact`` topic with small segments; the broker's cleaner
compacts it while it runs; a consumer reading from offset 0 then gets the latest value of each
key once, and Kafka's own ``FileRecords`` (tools/java/LogOracle.java, as
test_log_oracle_interop.py uses it) reads every cleaned segment as kwire does.

The Kafka 3.9 personality is used: 4.x refuses ``segment.bytes`` below 1 MiB."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from interop_helpers import Rec, ck_consume, ck_produce, segment_logs, wait_until
from test_log_oracle_interop import log_oracle

from kwire.log import open_segment
from kwire.records import read_batches

pytestmark = [pytest.mark.interop, pytest.mark.oracle]

TOPIC = "compacted"
KEYS = [b"key-%d" % i for i in range(8)]
SEGMENT_MS = 300


def roll_with(bootstrap: str, rec: Rec, **conf: Any) -> None:
    """Write ``rec`` once ``segment.ms`` has passed in message timestamps, so the append rolls
    the active segment (Kafka rolls only when appending, ``UnifiedLog.maybeRoll``; the cleaner
    never cleans the active segment)."""
    time.sleep(SEGMENT_MS * 2 / 1000)
    ck_produce(bootstrap, TOPIC, [rec], **conf)


def live_records(b: Any, topic: str) -> list[tuple[int, bytes | None, bytes | None]]:
    """What the partition holds now, read in the broker's thread through ``LiveLog.read``."""

    def read(state: Any) -> list[tuple[int, bytes | None, bytes | None]]:
        log = state.partition(topic, 0).log
        out = []
        offset = log.log_start_offset
        while offset < log.log_end_offset:
            data = log.read(offset, 1 << 20).read_bytes()
            if not data:
                break
            for batch in read_batches(data):
                if not batch.is_control:
                    out += [
                        (
                            r.offset,
                            None if r.key is None else bytes(r.key),
                            None if r.value is None else bytes(r.value),
                        )
                        for r in batch
                        if r.offset >= offset
                    ]
                offset = batch.last_offset + 1
        return out

    result: list[tuple[int, bytes | None, bytes | None]] = b.call(read)
    return result


def empty_batches(log: Any) -> int:
    """How many batches in ``log`` hold no records (an idempotent producer's last batch whose
    records were all cleaned away, kept for its producer state)."""
    count = 0
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        data = log.read(offset, 1 << 20).read_bytes()
        if not data:
            break
        for batch in read_batches(data):
            count += sum(1 for _ in batch) == 0
            offset = batch.last_offset + 1
    return count


def kafka_checks_segments(paths: list[str]) -> None:
    """Kafka's FileRecords reads every segment: the same batches as kwire, all valid."""
    answers = log_oracle([{"op": "scan", "path": p} for p in paths])
    for path, kafka in zip(paths, answers, strict=True):
        assert kafka.get("error") is None and "fatal" not in kafka, (path, kafka)
        assert all(x["isValid"] and x["ensureValid"] for x in kafka["batches"]), path
        with open_segment(path) as seg:
            scan = seg.scan()
            ours = [(x.position, x.base_offset, x.last_offset, x.magic, x.size) for x in scan]
            assert scan.skipped == [], (path, scan.skipped)
        theirs = [
            (x["position"], x["baseOffset"], x["lastOffset"], x["magic"], x["size"])
            for x in kafka["batches"]
        ]
        assert ours == theirs, path


def test_compacted_topic_keeps_the_latest_value_of_each_key(
    start_broker: Callable[..., Any],
) -> None:
    b = start_broker(kafka_version="3.9", config={"log.cleaner.backoff.ms": "200"})
    b.create_topic(
        TOPIC,
        partitions=1,
        config={
            "cleanup.policy": "compact",
            "segment.bytes": "4096",
            "segment.ms": str(SEGMENT_MS),
            "min.cleanable.dirty.ratio": "0.01",
            "delete.retention.ms": "1000",
        },
    )
    updates = [Rec(KEYS[i % len(KEYS)], b"value-%d-" % i + b"x" * (i % 13)) for i in range(1200)]
    deleted = KEYS[:2]
    tombstones = [Rec(k, None) for k in deleted]
    ck_produce(b.bootstrap, TOPIC, updates + tombstones, **{"batch.num.messages": 20})
    latest: dict[bytes, bytes | None] = {}
    for r in updates + tombstones:
        assert r.key is not None
        latest[r.key] = r.value
    segments_before = len(b.call(lambda s: s.partition(TOPIC, 0).log.segment_base_offsets))
    assert segments_before > 3  # the topic rolled
    # the last key's latest value again, in a new active segment: everything before is
    # cleanable; that record itself stays uncleaned (the cleaner's map stops at the active segment)
    roll_with(b.bootstrap, Rec(KEYS[-1], latest[KEYS[-1]]))

    def compacted() -> bool:
        got = live_records(b, TOPIC)
        return len(got) == len(KEYS) + 1 and {k: v for _o, k, v in got if k} == latest

    # round one: the last value of every key, tombstones kept (with a delete horizon)
    wait_until("the cleaner to compact the topic", compacted, timeout=60)
    consumed = ck_consume(b.bootstrap, TOPIC, len(KEYS) + 2, timeout=8, require=False)
    assert len(consumed) == len(KEYS) + 1
    assert {r.key: r.value for r in consumed} == latest
    assert [r.offset for r in consumed] == sorted(r.offset for r in consumed)

    # round two, past delete.retention.ms: more writes make the log dirty, tombstones go
    more = [Rec(KEYS[-1], b"final-%d" % i) for i in range(50)]
    ck_produce(b.bootstrap, TOPIC, more)
    latest[KEYS[-1]] = b"final-49"
    roll_with(b.bootstrap, Rec(KEYS[-1], b"final-49"))
    for k in deleted:
        del latest[k]

    def tombstones_gone() -> bool:
        got = live_records(b, TOPIC)
        return {k: v for _o, k, v in got if k} == latest and len(got) == len(latest) + 1

    wait_until("the tombstones to expire", tombstones_gone, timeout=60)
    consumed = ck_consume(b.bootstrap, TOPIC, len(latest) + 2, timeout=8, require=False)
    assert {r.key: r.value for r in consumed} == latest and len(consumed) == len(latest) + 1
    assert b.call(lambda s: s.services.log_cleaner.rounds) >= 2
    data_dir = b.data_dir
    b.stop()

    paths = sorted(p for p in segment_logs(data_dir) if f"/{TOPIC}-0/" in p)
    assert paths and len(paths) < segments_before
    kafka_checks_segments(paths)
    checkpoint = Path(data_dir, "cleaner-offset-checkpoint").read_text().splitlines()
    assert any(line.startswith(f"{TOPIC} 0 ") for line in checkpoint)


def test_idempotent_producers_last_batches_stay(start_broker: Callable[..., Any]) -> None:
    """An idempotent producer's last batch stays (an empty batch once its records are
    superseded: producer state needs its sequence); consumers and Kafka's FileRecords read
    through the empty batches."""
    b = start_broker(kafka_version="3.9", config={"log.cleaner.backoff.ms": "200"})
    b.create_topic(
        TOPIC,
        partitions=1,
        config={
            "cleanup.policy": "compact",
            "segment.bytes": "2048",
            "segment.ms": str(SEGMENT_MS),
            "min.cleanable.dirty.ratio": "0.01",
        },
    )
    conf = {"enable.idempotence": True, "batch.num.messages": 10}
    ck_produce(b.bootstrap, TOPIC, [Rec(b"a", b"a-%d" % i) for i in range(300)], **conf)
    # each later write comes after segment.ms, so it rolls and what came before is cleanable
    roll_with(b.bootstrap, Rec(b"b", b"b-4"))

    def keys_are(*keys: bytes) -> Callable[[], bool]:
        return lambda: [k for _o, k, _v in live_records(b, TOPIC)] == list(keys)

    wait_until("the cleaner to compact the topic", keys_are(b"a", b"b"), timeout=60)
    # a second idempotent producer supersedes a-299 but sits in the active segment: a-299 stays
    roll_with(b.bootstrap, Rec(b"a", b"again"), **conf)
    wait_until("the cleaner to clean b's segment", keys_are(b"a", b"b", b"a"), timeout=60)
    consumed = ck_consume(b.bootstrap, TOPIC, 4, timeout=8, require=False)
    assert [(r.key, r.value) for r in consumed] == [
        (b"a", b"a-299"),
        (b"b", b"b-4"),
        (b"a", b"again"),
    ]
    # once "again" is no longer active, a-299 goes, its batch kept empty (the first producer's last)
    roll_with(b.bootstrap, Rec(b"c", b"c"))
    wait_until("the cleaner to drop a-299", keys_are(b"b", b"a", b"c"), timeout=60)
    consumed = ck_consume(b.bootstrap, TOPIC, 4, timeout=8, require=False)
    assert [(r.key, r.value) for r in consumed] == [(b"b", b"b-4"), (b"a", b"again"), (b"c", b"c")]
    empty = b.call(lambda s: empty_batches(s.partition(TOPIC, 0).log))
    assert empty >= 1
    data_dir = b.data_dir
    b.stop()
    kafka_checks_segments(sorted(p for p in segment_logs(data_dir) if f"/{TOPIC}-0/" in p))
