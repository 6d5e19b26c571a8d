"""kafka-wire against real producers and a broker that misbehaves (issue 20).

Records come from real clients (confluent-kafka, kafka-python, Kafka's Java producer) into kwire's
broker; Spark reads them with ``kafka-wire`` and every record appears once, keys, values and
headers as produced: with ``minPartitions`` splitting the ranges (batch and streaming, inside
transactions too); while producers write, through a query restart; with read_committed hiding
aborted transactions; across a SIGKILL of a ``kwire broker`` process restarted on its data dir
and port; from old broker personalities; from a three-node cluster whose leaders move mid-read;
over SASL/SCRAM and TLS.
"""

from __future__ import annotations

import gc
import json
import sys
import threading
import time
import warnings
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "interop"))

from interop_helpers import CliBroker, expected_record, free_port, java_clients

pytestmark = [
    pytest.mark.spark,
    pytest.mark.filterwarnings("ignore::DeprecationWarning:kafka"),
    pytest.mark.filterwarnings("ignore:unclosed:ResourceWarning"),
]

with warnings.catch_warnings():  # kafka-python 3 calls a deprecated importlib API on import
    warnings.simplefilter("ignore", DeprecationWarning)
    import kafka  # noqa: F401


def produce_ck(bootstrap: str, topic: str, start: int, count: int, partitions: int) -> None:
    """confluent-kafka (librdkafka): record i to partition i % partitions, headers on every third."""
    import confluent_kafka as ck

    producer = ck.Producer(
        {"bootstrap.servers": bootstrap, "broker.address.family": "v4", "linger.ms": 5}
    )
    for i in range(start, start + count):
        producer.produce(
            topic,
            key=None if i % 7 == 0 else f"k{i}".encode(),
            value=f"v{i}".encode(),
            partition=i % partitions,
            headers=[("i", str(i).encode())] if i % 3 == 0 else None,
        )
    assert producer.flush(30) == 0


def expected(start: int, count: int) -> list[tuple[bytes, bytes | None, list[Any]]]:
    return sorted(
        (
            f"v{i}".encode(),
            None if i % 7 == 0 else f"k{i}".encode(),
            [("i", str(i).encode())] if i % 3 == 0 else [],
        )
        for i in range(start, start + count)
    )


def got(rows: list[Any]) -> list[tuple[bytes, bytes | None, list[Any]]]:
    return sorted((r.value, r.key, [(h.key, h.value) for h in r.headers or []]) for r in rows)


def read(spark: Any, bootstrap: str, **options: str) -> Any:
    from kwire.spark import register

    register(spark)
    reader = spark.read.format("kafka-wire").option("kafka.bootstrap.servers", bootstrap)
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load()


def test_min_partitions_batch_and_streaming(spark: Any, kwire_broker: Any, tmp_path: Path) -> None:
    import confluent_kafka as ck

    from kwire.spark._wire_source import KafkaWireDataSource, WireRange

    bootstrap = kwire_broker.bootstrap
    kwire_broker.create_topic("skew", partitions=2)
    produce_ck(bootstrap, "skew", 0, 200, 2)
    produce_ck(bootstrap, "skew", 200, 1, 1)  # partition 0 gets 101, partition 1 gets 100
    # a transactional topic: a range split inside a committed and an aborted transaction
    kwire_broker.create_topic("txn", partitions=1)
    producer = ck.Producer({"bootstrap.servers": bootstrap, "transactional.id": "split"})
    producer.init_transactions(30)
    for commit in (True, False, True):
        producer.begin_transaction()
        for i in range(20):
            producer.produce("txn", value=f"{commit}-{i}".encode(), partition=0)
        producer.flush(30)
        (producer.commit_transaction if commit else producer.abort_transaction)(30)

    df = read(spark, bootstrap, subscribe="skew", minPartitions="7")
    assert df.rdd.getNumPartitions() >= 7
    assert got(df.collect()) == expected(0, 201)
    committed = read(
        spark,
        bootstrap,
        subscribe="txn",
        minPartitions="9",
        **{"kafka.isolation.level": "read_committed"},
    )
    assert committed.rdd.getNumPartitions() >= 9
    values = sorted(r.value for r in committed.select("value").collect())
    assert values == sorted(f"True-{i}".encode() for i in range(20) for _ in (1, 2))
    assert len(read(spark, bootstrap, subscribe="txn", minPartitions="9").collect()) == 60

    # streaming: a micro-batch's ranges are split the same way, each offset once
    source = KafkaWireDataSource(
        {"kafka.bootstrap.servers": bootstrap, "subscribe": "skew", "minPartitions": "5"}
    )
    stream = source.streamReader(source.schema())
    try:
        start = json.dumps({"skew": {"0": 0, "1": 0}})
        end = json.dumps({"skew": {"0": 101, "1": 100}})
        pieces = stream.partitions(json.loads(start), json.loads(end))
    finally:
        stream.stop()
    assert len(pieces) >= 5 and all(isinstance(p, WireRange) for p in pieces)
    for partition, until in ((0, 101), (1, 100)):
        covered = sorted(
            o for p in pieces if p.partition == partition for o in range(p.start, p.end)
        )
        assert covered == list(range(until))
    rows = drain(spark, bootstrap, tmp_path, subscribe="skew", minPartitions="5")
    assert got(rows) == expected(0, 201)


# ---- real producers while Spark reads ----------------------------------------------------------

Content = tuple[bytes | None, bytes | None, tuple[tuple[str, bytes | None], ...]]


def content(rows: list[Any]) -> Counter[Content]:
    """(value, key, headers) of each row, as a multiset."""
    return Counter((r.value, r.key, tuple((h.key, h.value) for h in r.headers or [])) for r in rows)


def ck_expected(prefix: str, start: int, count: int) -> Counter[Content]:
    return Counter(
        (
            f"{prefix}{i}".encode(),
            None if i % 7 == 0 else f"k{i}".encode(),
            (("i", str(i).encode()),) if i % 3 == 0 else (),
        )
        for i in range(start, start + count)
    )


def produce_prefixed(bootstrap: str, topic: str, prefix: str, start: int, count: int) -> None:
    """confluent-kafka, idempotent: values ``<prefix><i>``, keys and headers as ck_expected."""
    import confluent_kafka as ck

    producer = ck.Producer(
        {
            "bootstrap.servers": bootstrap,
            "broker.address.family": "v4",
            "linger.ms": 5,
            "enable.idempotence": True,
            "message.timeout.ms": 60000,
        }
    )
    for i in range(start, start + count):
        producer.produce(
            topic,
            key=None if i % 7 == 0 else f"k{i}".encode(),
            value=f"{prefix}{i}".encode(),
            headers=[("i", str(i).encode())] if i % 3 == 0 else None,
        )
        producer.poll(0)
    assert producer.flush(60) == 0


def kp_produce_prefixed(bootstrap: str, topic: str, prefix: str, count: int) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, request_timeout_ms=10000, linger_ms=5)
    try:
        for i in range(count):
            producer.send(
                topic,
                key=None if i % 7 == 0 else f"k{i}".encode(),
                value=f"{prefix}{i}".encode(),
                headers=[("i", str(i).encode())] if i % 3 == 0 else None,
            )
        producer.flush(timeout=30.0)
    finally:
        producer.close(timeout=10)


def java_expected(count: int) -> Counter[Content]:
    """What ClientsProgram's produce sends (its ``expected(topic, i)``), as content."""
    out: Counter[Content] = Counter()
    for i in range(count):
        r = expected_record(i)
        out[(r.value, r.key, tuple(r.headers))] += 1
    return out


def drain(spark: Any, bootstrap: str, tmp: Path, **options: str) -> list[Any]:
    """One ``Trigger.AvailableNow`` run of a kafka-wire -> Parquet query on the checkpoint in
    ``tmp`` (a restart of the query each time); the output's rows so far.

    Spark gives a Python worker 10 s (fixed, PythonWorkerFactory) to connect back; on this
    loaded 2-core machine the streaming source's worker sometimes takes longer and the run fails
    before reading anything. It is then run again on its checkpoint, as a user would, at most 3
    times: a restart that must itself lose and repeat nothing."""
    from pyspark.errors import StreamingQueryException

    from kwire.spark import register

    register(spark)
    out = tmp / "out"
    for attempt in range(4):
        reader = spark.readStream.format("kafka-wire").option("kafka.bootstrap.servers", bootstrap)
        for k, v in {"startingOffsets": "earliest", **options}.items():
            reader = reader.option(k, v)
        query = (
            reader.load()
            .select("topic", "partition", "offset", "key", "value", "headers")
            .writeStream.format("parquet")
            .option("path", str(out))
            .option("checkpointLocation", str(tmp / "checkpoint"))
            .trigger(availableNow=True)
            .start()
        )
        try:
            finished = query.awaitTermination(240)
        except StreamingQueryException:
            finished = True  # failed: the exception is the query's, read below
        failure = query.exception()
        if not finished:
            query.stop()
        assert finished, "the run did not finish in 240 s"
        if failure is None:
            break
        assert "failed to connect back" in str(failure) and attempt < 3, failure
    return list(spark.read.parquet(str(out)).collect())


def assert_true(value: bool) -> None:
    assert value


def while_producing(producers: list[Callable[[], None]], read: Callable[[], Any]) -> None:
    """Run the producers one after another in a thread (the machine's 2 cores also run Spark)
    and ``read()`` again and again until they are done; fail on the first that failed."""
    errors: list[BaseException] = []

    def run() -> None:
        try:
            for job in producers:
                job()
        except BaseException as exc:  # the test's assertion, reported from the main thread
            errors.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 400
    while thread.is_alive() and time.monotonic() < deadline:
        read()
    thread.join(max(1.0, deadline - time.monotonic()))
    assert not thread.is_alive(), "the producers did not finish in 400 s"
    if errors:
        raise errors[0]


def test_real_producers_while_streaming_through_restarts(
    spark: Any, kwire_broker: Any, tmp_path: Path
) -> None:
    """confluent-kafka, kafka-python and Kafka's Java producer write while a read_committed
    query reads (one AvailableNow run after another on one checkpoint: each run a restart); a
    transactional producer commits one transaction and aborts one: every committed record once,
    as produced, and nothing of the aborted transaction."""
    import confluent_kafka as ck
    from kafka_jars import compile_java

    compile_java("ClientsProgram")  # before Spark reads: javac is slow on a loaded machine
    bootstrap = kwire_broker.bootstrap
    kwire_broker.create_topic("live", partitions=3)

    def transactional() -> None:
        producer = ck.Producer({"bootstrap.servers": bootstrap, "transactional.id": "matrix"})
        producer.init_transactions(30)
        for commit in (True, False):
            producer.begin_transaction()
            for i in range(20):
                producer.produce("live", value=f"txn-{commit}-{i}".encode(), partition=i % 3)
            producer.flush(30)
            (producer.commit_transaction if commit else producer.abort_transaction)(30)

    options = {"subscribe": "live", "kafka.isolation.level": "read_committed"}
    runs: list[int] = []

    first_run = threading.Event()

    def read() -> None:
        runs.append(len(drain(spark, bootstrap, tmp_path, **options)))
        first_run.set()

    while_producing(
        [
            lambda: produce_prefixed(bootstrap, "live", "ck", 0, 150),
            lambda: kp_produce_prefixed(bootstrap, "live", "kp", 100),
            lambda: assert_true(first_run.wait(300)),  # the rest once a run has read
            lambda: java_clients("produce", bootstrap, "live", "lz4", "60"),
            transactional,
        ],
        read,
    )
    rows = drain(spark, bootstrap, tmp_path, **options)
    again = drain(spark, bootstrap, tmp_path, **options)  # nothing new: nothing added
    total = 150 + 100 + 60 + 20
    assert runs and runs[0] < total  # the first run read while the producers wrote
    assert len(again) == len(rows) == total
    assert len({(r.partition, r.offset) for r in rows}) == total
    want = (
        ck_expected("ck", 0, 150)
        + ck_expected("kp", 0, 100)
        + java_expected(60)
        + Counter((f"txn-True-{i}".encode(), None, ()) for i in range(20))
    )
    assert content(rows) == want
    gc.collect()


# ---- a broker killed and restarted --------------------------------------------------------------


def test_broker_sigkill_between_and_during_reads(spark: Any, tmp_path: Path) -> None:
    """``kwire broker`` (a process) SIGKILLed while a query has read part of a topic (and once
    while a batch read is planned and fetched), restarted on its data dir and port: the query
    goes on from its checkpoint and every record is read once."""
    from confluent_kafka.admin import AdminClient, NewTopic

    port = free_port()
    data = tmp_path / "data"
    broker = CliBroker(data, port=port)
    try:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap, "broker.address.family": "v4"})
        for f in admin.create_topics([NewTopic("kill", 2, 1)]).values():
            f.result(20)
        produce_prefixed(broker.bootstrap, "kill", "a", 0, 100)
        assert len(drain(spark, broker.bootstrap, tmp_path, subscribe="kill")) == 100
        broker.kill()
        broker = CliBroker(data, port=port)
        produce_prefixed(broker.bootstrap, "kill", "a", 100, 100)
        rows = drain(spark, broker.bootstrap, tmp_path, subscribe="kill")
        assert len({(r.partition, r.offset) for r in rows}) == len(rows) == 200
        assert content(rows) == ck_expected("a", 0, 200)
        # a DataFrame defined before the kill reads the restarted broker's records
        df = read(spark, broker.bootstrap, subscribe="kill")
        broker.kill()
        broker = CliBroker(data, port=port)
        assert content(df.collect()) == ck_expected("a", 0, 200)
    finally:
        broker.kill()


# ---- old brokers ---------------------------------------------------------------------------------


def produce_to_release(bootstrap: str, topic: str, release: str, count: int) -> None:
    """kafka-python, speaking the release's protocol (headers from 0.11, magic 2)."""
    from kafka import KafkaProducer

    api = tuple(int(x) for x in release.split(".")) + (0,) * (3 - len(release.split(".")))
    producer = KafkaProducer(
        bootstrap_servers=bootstrap, api_version=api[:3], request_timeout_ms=10000, linger_ms=5
    )
    try:
        for i in range(count):
            producer.send(
                topic,
                key=None if i % 7 == 0 else f"k{i}".encode(),
                value=f"v{i}".encode(),
                partition=i % 2,
                headers=[("i", str(i).encode())] if i % 3 == 0 and api >= (0, 11, 0) else None,
            )
        producer.flush(timeout=30.0)
    finally:
        producer.close(timeout=10)


def release_expected(release: str, count: int) -> Counter[Content]:
    headers = release not in ("0.8.2", "0.10.0")
    return Counter(
        (
            f"v{i}".encode(),
            None if i % 7 == 0 else f"k{i}".encode(),
            (("i", str(i).encode()),) if i % 3 == 0 and headers else (),
        )
        for i in range(count)
    )


@pytest.mark.parametrize("release", ["0.8.2", "0.10.0", "0.11.0", "2.8", "4.3"])
def test_broker_personalities(spark: Any, kwire_broker_factory: Any, release: str) -> None:
    """kwire's broker as Kafka 0.8.2 (magic 0, no ApiVersions: the client is told the version,
    librdkafka's broker.version.fallback) through 4.3, read by kafka-wire."""
    broker = kwire_broker_factory(kafka_version=release)
    broker.create_topic("old", partitions=2)
    produce_to_release(broker.bootstrap, "old", release, 60)
    options = {"subscribe": "old"}
    if release == "0.8.2":
        options["kafka.broker.version.fallback"] = "0.8.2"
    rows = read(spark, broker.bootstrap, **options).collect()
    assert content(rows) == release_expected(release, 60)
    assert sorted((r.partition, r.offset) for r in rows) == sorted(
        (p, o) for p in (0, 1) for o in range(30)
    )
    gc.collect()


# ---- a cluster whose leaders move ---------------------------------------------------------------


def test_leaders_on_several_nodes_moved_mid_read(
    spark: Any, kwire_cluster: Any, tmp_path: Path
) -> None:
    """Three nodes, a topic's leaders on each: ranges planned before every leader moves are
    fetched after (one of them while its fetches go on), and a query reads on across the move."""
    from pyspark.sql.types import StructType

    from kwire.client import KafkaClient
    from kwire.spark._wire_source import KafkaWireDataSource

    bootstrap = kwire_cluster.bootstrap
    kwire_cluster.create_topic("spread", partitions=3)
    produce_prefixed(bootstrap, "spread", "a", 0, 150)
    with KafkaClient({"bootstrap.servers": bootstrap}) as client:
        meta = client.metadata(["spread"])
        leaders = {p: meta.leader("spread", p) for p in range(3)}
    assert all(leaders.values())
    assert len({b.node_id for b in leaders.values() if b is not None}) > 1
    assert len(drain(spark, bootstrap, tmp_path, subscribe="spread")) == 150

    source = KafkaWireDataSource(
        {
            "kafka.bootstrap.servers": bootstrap,
            "kafka.max.partition.fetch.bytes": "300",  # many fetches per range
            "subscribe": "spread",
        }
    )
    reader = source.reader(StructType.fromDDL(source.schema()))
    ranges = reader.partitions()  # planned on the old leaders
    pieces = reader.read(ranges[0])
    got = [next(pieces)]  # the first range's first fetch, from its old leader
    for p, leader in leaders.items():
        assert leader is not None
        kwire_cluster.move_leader("spread", p, to_node=leader.node_id % 3 + 1)
    got.extend(pieces)
    for r in ranges[1:]:
        got.extend(reader.read(r))
    values = [v for batch in got for v in batch.column("value").to_pylist()]
    assert Counter(values) == Counter(f"a{i}".encode() for i in range(150))

    produce_prefixed(bootstrap, "spread", "a", 150, 60)
    rows = drain(spark, bootstrap, tmp_path, subscribe="spread")
    assert len({(r.partition, r.offset) for r in rows}) == len(rows) == 210
    assert content(rows) == ck_expected("a", 0, 210)


# ---- SASL/SCRAM and TLS --------------------------------------------------------------------------


@pytest.mark.parametrize(("listener", "mechanism"), [("SASL_SSL", "SCRAM-SHA-256"), ("SSL", None)])
def test_scram_and_tls_through_spark(
    spark: Any, kwire_broker_factory: Any, tmp_path: Path, listener: str, mechanism: str | None
) -> None:
    trustme = pytest.importorskip("trustme")
    ca = trustme.CA()
    ca_path, server_path = tmp_path / "ca.pem", tmp_path / "server.pem"
    ca.cert_pem.write_to_path(str(ca_path))
    ca.issue_cert("127.0.0.1", "localhost").private_key_and_cert_chain_pem.write_to_path(
        str(server_path)
    )
    broker = kwire_broker_factory(
        config={
            "listeners": f"PLAINTEXT://127.0.0.1:0,{listener}://127.0.0.1:0",
            "sasl.enabled.mechanisms": "SCRAM-SHA-256",
            "ssl.certfile": str(server_path),
            "ssl.cafile": str(ca_path),
        }
    )
    if mechanism:
        broker.set_scram_password("alice", "alice-secret", mechanism)
    broker.create_topic("sec", partitions=2)
    produce_prefixed(broker.bootstrap, "sec", "s", 0, 40)
    options = {
        "subscribe": "sec",
        "kafka.security.protocol": listener,
        "kafka.ssl.truststore.location": str(ca_path),
        "kafka.ssl.truststore.type": "PEM",
    }
    if mechanism:
        options["kafka.sasl.mechanism"] = mechanism
        options["kafka.sasl.jaas.config"] = (
            "org.apache.kafka.common.security.scram.ScramLoginModule required "
            'username="alice" password="alice-secret";'
        )
    secure = broker.bootstrap_for(listener)
    assert content(read(spark, secure, **options).collect()) == ck_expected("s", 0, 40)
    if mechanism:
        wrong = {**options, "kafka.sasl.jaas.config": 'x required username="alice" password="no";'}
        with pytest.raises(Exception, match="SASL_AUTHENTICATION_FAILED"):
            read(spark, secure, **wrong).collect()
