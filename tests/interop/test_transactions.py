"""Transactions and exactly-once with real clients against kwire's broker.

confluent-kafka (librdkafka) transactional producers (init, begin, produce, commit / abort, a
zombie fenced by a new instance, a transaction the coordinator times out, a transaction left open
across a broker restart) and ``isolation.level=read_committed`` consumers (assign, no group);
Kafka's Java client (tools/java/ClientsProgram.java, modes "transactional" and "abort"); and
exactly-once consume-transform-produce with ``send_offsets_to_transaction``; aiokafka (older
request versions).

Transactional clients first ask FindCoordinator (api 10) for the transaction coordinator, and
send_offsets_to_transaction needs TxnOffsetCommit (api 28): those are the group coordinator's
APIs; a test that needs one the broker does not serve yet is skipped.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from interop_helpers import ck_conf, ck_consume, expected_record, java_clients, stored_batches

from kwire.records import ControlRecordType, decode_control_record

pytestmark = pytest.mark.interop

WAIT = 30.0  # seconds for any client call
READ_COMMITTED: dict[str, Any] = {"isolation.level": "read_committed"}
READ_UNCOMMITTED: dict[str, Any] = {"isolation.level": "read_uncommitted"}


def needs(*api_keys: int) -> None:
    from kwire.broker import HANDLERS

    names = {9: "OffsetFetch", 10: "FindCoordinator", 28: "TxnOffsetCommit"}
    missing = [f"{names.get(k, k)} (api {k})" for k in api_keys if k not in HANDLERS]
    if missing:
        pytest.skip(
            f"{', '.join(missing)} not served yet (the group coordinator's APIs): "
            "transactional clients cannot go on without them"
        )


def txn_producer(bootstrap: str, txn_id: str, **conf: Any) -> Any:
    import confluent_kafka as ck

    producer = ck.Producer(ck_conf(bootstrap, **{"transactional.id": txn_id, **conf}))
    producer.init_transactions(WAIT)
    return producer


def send(producer: Any, topic: str, values: list[bytes], partition: int = 0) -> None:
    for v in values:
        producer.produce(topic, value=v, key=b"k", partition=partition)
    assert producer.flush(WAIT) == 0


def values(records: list[Any]) -> list[bytes | None]:
    return [r.value for r in records]


def transaction_state(broker: Any, txn_id: str) -> tuple[str, int, int] | None:
    """(state name, producer id, epoch) of a transactional id, read on the broker's loop."""
    from kwire.broker._txn import coordinator_for

    def read(state: Any) -> tuple[str, int, int] | None:
        meta = coordinator_for(state).transactions.get(txn_id)
        if meta is None:
            return None
        return meta.state.kafka_name, meta.producer_id, meta.producer_epoch

    result: tuple[str, int, int] | None = broker.call(read)
    return result


def lso_and_hw(broker: Any, topic: str, partition: int = 0) -> tuple[int, int]:
    def read(state: Any) -> tuple[int, int]:
        p = state.partition(topic, partition)
        return p.last_stable_offset(), p.high_watermark

    result: tuple[int, int] = broker.call(read)
    return result


def offsets_partition_markers(broker: Any, group_id: str) -> list[ControlRecordType]:
    """The control records in the group's partition of ``__consumer_offsets``."""
    from kwire.broker._txn import coordinator_for

    topic, index = broker.call(lambda state: coordinator_for(state).group_partition(group_id))
    return [
        decode_control_record(record).type
        for batch in stored_batches(broker.data_dir, topic, index)
        if batch.is_control
        for record in batch
    ]


def group_offset(broker: Any, group_id: str, topic: str, partition: int) -> int | None:
    """The stable committed offset of a group (the group coordinator's ``fetch_offsets``)."""

    def read(state: Any) -> int | None:
        group = state.services.group
        if group is None:
            return None
        for name, rows in group.fetch_offsets(group_id, [(topic, [partition])], True):
            for index, found, error in rows:
                if name == topic and index == partition and found is not None and error == 0:
                    return int(found.offset)
        return None

    result: int | None = broker.call(read)
    return result


def wait_for(what: str, check: Callable[[], bool], timeout: float = WAIT) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.1)
    pytest.fail(f"timed out after {timeout} s waiting for {what}")


# --- confluent-kafka --------------------------------------------------------------------------


def test_confluent_kafka_commit_and_abort(broker: Any) -> None:
    needs(10)
    broker.create_topic("ck-txn", partitions=1)
    producer = txn_producer(broker.bootstrap, "ck-txn-1")
    producer.begin_transaction()
    send(producer, "ck-txn", [b"c-%d" % i for i in range(10)])
    producer.commit_transaction(WAIT)
    producer.begin_transaction()
    send(producer, "ck-txn", [b"a-%d" % i for i in range(10)])
    producer.abort_transaction(WAIT)
    producer.begin_transaction()
    send(producer, "ck-txn", [b"last"])
    producer.commit_transaction(WAIT)
    del producer

    committed = ck_consume(broker.bootstrap, "ck-txn", 11, timeout=WAIT, **READ_COMMITTED)
    assert values(committed) == [*(b"c-%d" % i for i in range(10)), b"last"]
    # c-0..9 (0-9), COMMIT (10), a-0..9 (11-20), ABORT (21), last (22), COMMIT (23)
    assert [r.offset for r in committed] == [*range(10), 22]
    everything = ck_consume(broker.bootstrap, "ck-txn", 21, timeout=WAIT, **READ_UNCOMMITTED)
    assert len(everything) == 21
    controls = [b.base_offset for b in stored_batches(broker.data_dir, "ck-txn") if b.is_control]
    assert controls == [10, 21, 23]
    assert lso_and_hw(broker, "ck-txn") == (24, 24)
    state = transaction_state(broker, "ck-txn-1")
    assert state is not None and state[0] == "CompleteCommit"


def test_confluent_kafka_new_instance_fences_the_zombie(broker: Any) -> None:
    """A second producer with the same transactional.id aborts the first one's transaction
    (CONCURRENT_TRANSACTIONS while it does, then an epoch bump) and fences it."""
    import confluent_kafka as ck

    needs(10)
    broker.create_topic("ck-zombie", partitions=1)
    zombie = txn_producer(broker.bootstrap, "ck-zombie-txn")
    zombie.begin_transaction()
    send(zombie, "ck-zombie", [b"zombie-%d" % i for i in range(5)])
    before = transaction_state(broker, "ck-zombie-txn")
    assert before is not None and before[0] == "Ongoing"

    successor = txn_producer(broker.bootstrap, "ck-zombie-txn")
    after = transaction_state(broker, "ck-zombie-txn")
    assert after is not None and after[1] == before[1] and after[2] == before[2] + 2
    successor.begin_transaction()
    send(successor, "ck-zombie", [b"good"])
    successor.commit_transaction(WAIT)

    with pytest.raises(ck.KafkaException) as failure:
        zombie.commit_transaction(WAIT)
    assert failure.value.args[0].fatal() or failure.value.args[0].txn_requires_abort()
    del zombie, successor

    committed = ck_consume(broker.bootstrap, "ck-zombie", 1, timeout=WAIT, **READ_COMMITTED)
    assert values(committed) == [b"good"]


def test_confluent_kafka_transaction_timeout_aborts(start_broker: Callable[..., Any]) -> None:
    needs(10)
    broker = start_broker(
        config={"transaction.abort.timed.out.transaction.cleanup.interval.ms": "200"}
    )
    broker.create_topic("ck-timeout", partitions=1)
    producer = txn_producer(
        broker.bootstrap,
        "ck-timeout-txn",
        **{"transaction.timeout.ms": 2000, "socket.timeout.ms": 2000},
    )
    producer.begin_transaction()
    send(producer, "ck-timeout", [b"never"])
    assert lso_and_hw(broker, "ck-timeout") == (0, 1)

    def aborted() -> bool:
        found = transaction_state(broker, "ck-timeout-txn")
        return found is not None and found[0] == "CompleteAbort"

    wait_for("the coordinator to abort the timed-out transaction", aborted, timeout=15)
    assert lso_and_hw(broker, "ck-timeout") == (2, 2)
    committed = ck_consume(
        broker.bootstrap,
        "ck-timeout",
        1,
        timeout=3,
        require=False,
        **READ_COMMITTED,
    )
    assert committed == []
    del producer


def test_confluent_kafka_open_transaction_across_a_restart(
    start_broker: Callable[..., Any], tmp_path: Any
) -> None:
    """The broker restarts with a transaction open: it still holds the last stable offset, and a
    new producer instance with the same transactional.id aborts it."""
    needs(10)
    data = tmp_path / "restart"
    broker = start_broker(data_dir=data)
    broker.create_topic("ck-restart", partitions=1)
    first = txn_producer(broker.bootstrap, "ck-restart-txn")
    first.begin_transaction()
    send(first, "ck-restart", [b"c"])
    first.commit_transaction(WAIT)
    first.begin_transaction()
    send(first, "ck-restart", [b"open"])
    before = transaction_state(broker, "ck-restart-txn")
    broker.stop()
    del first

    broker = start_broker(data_dir=data)
    assert transaction_state(broker, "ck-restart-txn") == before
    assert lso_and_hw(broker, "ck-restart") == (2, 3)
    second = txn_producer(broker.bootstrap, "ck-restart-txn")
    after = transaction_state(broker, "ck-restart-txn")
    assert before is not None and after is not None
    assert after[1] == before[1] and after[2] == before[2] + 2
    assert lso_and_hw(broker, "ck-restart") == (4, 4)
    second.begin_transaction()
    send(second, "ck-restart", [b"after"])
    second.commit_transaction(WAIT)
    del second
    committed = ck_consume(broker.bootstrap, "ck-restart", 2, timeout=WAIT, **READ_COMMITTED)
    assert values(committed) == [b"c", b"after"]


def test_confluent_kafka_exactly_once_consume_transform_produce(broker: Any) -> None:
    """Read ``eos-in`` with a read_committed consumer, write upper-cased values to ``eos-out`` and
    the consumed offsets in the same transaction (send_offsets_to_transaction)."""
    import confluent_kafka as ck

    needs(10, 28)
    broker.create_topic("eos-in", partitions=1)
    broker.create_topic("eos-out", partitions=1)
    producer = ck.Producer(ck_conf(broker.bootstrap))
    send(producer, "eos-in", [b"m-%d" % i for i in range(10)])
    del producer

    consumer = ck.Consumer(
        ck_conf(
            broker.bootstrap,
            **{
                "group.id": "eos-group",
                "enable.auto.commit": False,
                "isolation.level": "read_committed",
                "auto.offset.reset": "earliest",
            },
        )
    )
    transformer = txn_producer(broker.bootstrap, "eos-txn")
    try:
        tp = ck.TopicPartition("eos-in", 0, ck.OFFSET_BEGINNING)
        consumer.assign([tp])
        seen = 0
        deadline = time.monotonic() + WAIT
        while seen < 10 and time.monotonic() < deadline:
            batch = [m for m in consumer.consume(10, 0.5) if m.error() is None]
            if not batch:
                continue
            transformer.begin_transaction()
            for m in batch:
                transformer.produce("eos-out", value=(m.value() or b"").upper(), partition=0)
            positions = consumer.position([ck.TopicPartition("eos-in", 0)])
            transformer.send_offsets_to_transaction(
                positions, consumer.consumer_group_metadata(), WAIT
            )
            transformer.commit_transaction(WAIT)
            seen += len(batch)
        assert seen == 10
        # The offsets went to the group's __consumer_offsets partition transactionally, and
        # each commit wrote a COMMIT marker there too (what a reloading coordinator replays).
        markers = offsets_partition_markers(broker, "eos-group")
        assert markers and set(markers) == {ControlRecordType.COMMIT}
        # The committed offset as the group coordinator serves it (what OffsetFetch returns).
        assert group_offset(broker, "eos-group", "eos-in", 0) == 10
    finally:
        consumer.close()
        del transformer
    out = ck_consume(broker.bootstrap, "eos-out", 10, timeout=WAIT, **READ_COMMITTED)
    assert values(out) == [b"M-%d" % i for i in range(10)]


# --- Kafka's Java client ----------------------------------------------------------------------


def test_java_transactional_producer_and_read_committed(broker: Any) -> None:
    """ClientsProgram's "transactional" + "abort": one committed transaction of n records, then
    the same records in an aborted one; read_committed sees the first n only."""
    needs(10)
    broker.create_topic("java-eos", partitions=1)
    n = 25
    acks = java_clients(
        "produce", broker.bootstrap, "java-eos", "lz4", str(n), "transactional", "abort"
    )["acks"]
    assert [a.get("offset") for a in acks] == list(range(n))
    got = java_clients(
        "consume", broker.bootstrap, "java-eos", str(n + 1), "10000", "read_committed"
    )["records"]
    assert [r["offset"] for r in got] == list(range(n))
    expected = [expected_record(i) for i in range(n)]
    assert [bytes.fromhex(r["value"]) if r["value"] else None for r in got] == [
        e.value for e in expected
    ]
    state = transaction_state(broker, "kwire-interop-java-eos")
    assert state is not None and state[0] == "CompleteAbort" and state[2] == 0
    assert lso_and_hw(broker, "java-eos") == (2 * n + 2, 2 * n + 2)


# --- aiokafka (older request versions: InitProducerId v0-1, AddPartitionsToTxn v0, EndTxn v0) --


def test_aiokafka_transactions(broker: Any) -> None:
    import asyncio

    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

    needs(10)
    broker.create_topic("aio-txn", partitions=1)

    async def scenario() -> list[bytes | None]:
        producer = AIOKafkaProducer(
            bootstrap_servers=broker.bootstrap, transactional_id="aio-txn-1"
        )
        await producer.start()
        try:
            async with producer.transaction():
                for i in range(3):
                    await producer.send_and_wait("aio-txn", b"c-%d" % i, partition=0)
            await producer.begin_transaction()
            await producer.send_and_wait("aio-txn", b"aborted", partition=0)
            await producer.abort_transaction()
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(
            bootstrap_servers=broker.bootstrap,
            isolation_level="read_committed",
            enable_auto_commit=False,
            auto_offset_reset="earliest",
        )
        await consumer.start()
        out: list[bytes | None] = []
        try:
            consumer.assign([TopicPartition("aio-txn", 0)])
            deadline = time.monotonic() + 10
            while len(out) < 3 and time.monotonic() < deadline:
                for messages in (await consumer.getmany(timeout_ms=500)).values():
                    out.extend(m.value for m in messages)
        finally:
            await consumer.stop()
        return out

    got = asyncio.run(asyncio.wait_for(scenario(), 60))
    assert got == [b"c-0", b"c-1", b"c-2"]
    state = transaction_state(broker, "aio-txn-1")
    assert state is not None and state[0] == "CompleteAbort"
    assert lso_and_hw(broker, "aio-txn") == (6, 6)
