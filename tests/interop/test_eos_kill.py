"""Exactly-once consume-transform-produce across broker crashes.

A confluent-kafka (librdkafka) loop reads ``eos-in`` with a ``read_committed`` consumer in a group,
writes each record transformed to ``eos-out`` with a transactional producer and commits the
consumer's positions in the same transaction (``send_offsets_to_transaction``). Meanwhile the broker,
a ``kwire broker`` process, is killed with SIGKILL (by its pid) and started again on the same data
dir and port, twice:

* in the middle of a transaction, after its records and offsets were sent and before EndTxn;
* right after records were handed to the producer, before they were flushed.

On any error, and after each restart, the loop does what an EOS application does when it fails: it
drops its producer and consumer, a new producer's ``init_transactions`` fences the old one and
aborts the transaction it left open (records and offsets), and a new consumer resumes from the
group's committed offsets. At the end ``eos-out`` read committed holds every input record exactly
once.

Why start over after a restart rather than carry on with the same producer: librdkafka 2.16's
``send_offsets_to_transaction`` in the first transaction after the broker came back sends
AddOffsetsToTxn, gets NO_ERROR, and then sends neither FindCoordinator(group) nor TxnOffsetCommit,
ignoring its own timeout (the call never returns; the coordinator times the transaction out 30 s
later). Starting over is also the harder case for the broker: the killed transaction must be
aborted by the next producer's InitProducerId after the coordinator reloaded it from its log.
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from interop_helpers import CliBroker, Rec, ck_conf, ck_consume, ck_produce, free_port, run_isolated

pytestmark = pytest.mark.interop

N = 300
PARTITIONS = 2
BATCH = 20
DEADLINE_S = 240.0
IN, OUT, GROUP, TXN_ID = "eos-in", "eos-out", "eos-group", "eos-loop"


class Restarted(Exception):
    """The broker was killed and started again under the loop."""


def test_consume_transform_produce_survives_sigkill(tmp_path: Path) -> None:
    # In a child process: a librdkafka call blocked past its own timeout fails the test instead
    # of hanging the suite (run_isolated kills the child and its brokers by pid).
    run_isolated(_scenario, str(tmp_path), timeout=DEADLINE_S + 120, workdir=tmp_path)


def _scenario(tmp: str) -> None:
    import confluent_kafka as ck
    from confluent_kafka import KafkaException, TopicPartition

    tmp_path = Path(tmp)
    started: list[CliBroker] = []

    def broker_cli(**kwargs: Any) -> CliBroker:
        b = CliBroker(kwargs.pop("data_dir"), **kwargs)
        started.append(b)
        return b

    try:
        _loop(ck, KafkaException, TopicPartition, tmp_path, broker_cli)
    finally:
        for b in started:
            b.kill()


def _loop(
    ck: Any, KafkaException: Any, TopicPartition: Any, tmp_path: Path, broker_cli: Any
) -> None:
    data_dir = tmp_path / "data"
    port = free_port()
    broker = broker_cli(data_dir=data_dir, port=port, config={"num.partitions": str(PARTITIONS)})
    bootstrap = broker.bootstrap
    records = [
        Rec(f"k{i}".encode(), f"in-{i}".encode(), partition=i % PARTITIONS) for i in range(N)
    ]
    ck_produce(bootstrap, IN, records)
    per_partition = Counter(r.partition for r in records)
    ck_produce(bootstrap, OUT, [Rec(b"warm-up", None, partition=0)])  # creates eos-out

    def new_producer() -> Any:
        producer = ck.Producer(
            ck_conf(
                bootstrap,
                **{
                    "transactional.id": TXN_ID,
                    "transaction.timeout.ms": 30000,
                    "message.timeout.ms": 30000,
                    "linger.ms": 5,
                },
            )
        )
        producer.init_transactions(60)
        return producer

    def new_consumer() -> Any:
        consumer = ck.Consumer(
            ck_conf(
                bootstrap,
                **{
                    "group.id": GROUP,
                    "isolation.level": "read_committed",
                    "enable.auto.commit": False,
                    "auto.offset.reset": "earliest",
                    "session.timeout.ms": 10000,
                    "heartbeat.interval.ms": 500,
                },
            )
        )
        consumer.subscribe([IN])
        return consumer

    def restart_broker() -> None:
        nonlocal broker
        status = broker.kill()  # SIGKILL by pid
        assert status == -9, status
        broker = broker_cli(data_dir=data_dir, port=port, config={"num.partitions": "2"})
        assert broker.port == port
        raise Restarted

    producer = new_producer()
    consumer = new_consumer()
    done: dict[int, int] = dict.fromkeys(range(PARTITIONS), 0)  # committed positions we saw
    kills: list[str] = []
    recoveries = 0
    transactions = 0
    deadline = time.monotonic() + DEADLINE_S
    while sum(done.values()) < N:
        assert time.monotonic() < deadline, (
            f"no progress: committed {done}, kills {kills}, recoveries {recoveries}\n"
            f"{broker.output()}"
        )
        try:
            msgs = [m for m in consumer.consume(BATCH, 0.5) if m.error() is None]
            if not msgs:
                continue
            producer.begin_transaction()
            for m in msgs:
                producer.produce(
                    OUT, key=m.key(), value=b"out-" + m.value()[3:], partition=m.partition()
                )
            progress = sum(done.values())
            if progress >= 200 and len(kills) == 1:
                kills.append(f"before flush, after {progress}")
                restart_broker()
            assert producer.flush(30) == 0
            positions = consumer.position(consumer.assignment())
            producer.send_offsets_to_transaction(positions, consumer.consumer_group_metadata(), 30)
            if progress >= 100 and not kills:
                kills.append(f"before EndTxn, after {progress}")
                restart_broker()
            producer.commit_transaction(30)
            transactions += 1
            for tp in positions:
                if tp.offset >= 0:
                    done[tp.partition] = max(done[tp.partition], tp.offset)
        except (KafkaException, Restarted) as exc:
            recoveries += 1
            assert recoveries <= 20, f"too many recoveries; last error: {exc!r}\n{broker.output()}"
            # Start over as an EOS application does: the new producer fences the old one and
            # finishes its open transaction; the new consumer resumes from the committed offsets.
            consumer.close()
            del producer
            producer = new_producer()
            consumer = new_consumer()
            committed = consumer.committed(
                [TopicPartition(IN, p) for p in range(PARTITIONS)], timeout=30
            )
            done = {tp.partition: max(tp.offset, 0) for tp in committed}
    consumer.close()
    del producer
    assert len(kills) == 2, kills
    assert done == dict(per_partition)

    # One more than there should be (N and the warm-up record): a duplicate would show.
    out = ck_consume(
        bootstrap,
        OUT,
        N + 2,
        partitions=tuple(range(PARTITIONS)),
        timeout=10,
        require=False,
        **{"isolation.level": "read_committed"},
    )
    values = [r.value for r in out if r.key != b"warm-up"]
    counts = Counter(values)
    duplicates = {v: c for v, c in counts.items() if c > 1}
    assert duplicates == {}, f"{len(duplicates)} records more than once: {list(duplicates)[:10]}"
    assert sorted(values) == sorted(f"out-{i}".encode() for i in range(N))
    assert transactions >= N // BATCH  # the loop kept committing after each restart
