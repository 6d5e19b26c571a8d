"""kwire.client against kwire broker, with real producers writing what it reads.

Every test produces with a real client (confluent-kafka, kafka-python for the old protocols) and
reads the same range back with ``kwire.client.KafkaClient.fetch_range``: keys, values, headers,
offsets and timestamps as produced, across codecs, read_committed, data loss, old brokers (no
ApiVersions) and a cluster whose leader moves mid-read.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from interop_helpers import (
    BASE_TS,
    Rec,
    ck_conf,
    ck_produce,
    compressible,
    expected_record,
    kp_produce,
)

from kwire.client import EARLIEST, LATEST, ClientConfig, KafkaApiError, KafkaClient
from kwire.errors import OffsetOutOfRangeError, OptionError

pytestmark = [
    pytest.mark.interop,
    pytest.mark.filterwarnings("ignore::DeprecationWarning:kafka"),
]

COLUMNS = ("key", "value", "offset", "timestamp", "headers", "partition")


def read_all(
    client: KafkaClient, topic: str, partition: int, start: int, end: int, **kw: Any
) -> list[Rec]:
    rows: list[Rec] = []
    for batch in client.fetch_range(topic, partition, start, end, columns=COLUMNS, **kw):
        for r in batch.to_pylist():
            ts = r["timestamp"]
            rows.append(
                Rec(
                    r["key"],
                    r["value"],
                    [(h["key"], h["value"]) for h in r["headers"] or []],
                    -1 if ts is None else int(ts.timestamp() * 1000),
                    r["offset"],
                    r["partition"],
                )
            )
    return rows


@pytest.mark.parametrize("codec", ["none", "lz4", "zstd"])
def test_reads_what_librdkafka_wrote(start_broker: Callable[..., Any], codec: str) -> None:
    b = start_broker()
    b.create_topic("wire", partitions=2)
    records = [compressible(expected_record(i)) for i in range(300)]
    ck_produce(b.bootstrap, "wire", records, **{"compression.type": codec, "linger.ms": 5})
    with KafkaClient({"kafka.bootstrap.servers": b.bootstrap}) as client:
        meta = client.metadata(["wire"])
        assert meta.partition_count("wire") == 2
        ends = client.list_offsets([("wire", 0)], LATEST)
        assert ends == {("wire", 0): 300}
        assert client.list_offsets([("wire", 0)], EARLIEST) == {("wire", 0): 0}
        assert client.list_offsets([("wire", 0)], BASE_TS + 120) == {("wire", 0): 120}
        got = read_all(client, "wire", 0, 0, 300)
        assert [r.offset for r in got] == list(range(300))
        assert [(r.content(), r.timestamp) for r in got] == [
            (r.content(), r.timestamp) for r in records
        ]
        # a range in the middle of compressed batches: exactly [start, end)
        middle = read_all(client, "wire", 0, 37, 251)
        assert [r.offset for r in middle] == list(range(37, 251))
        assert [r.content() for r in middle] == [r.content() for r in records[37:251]]


def test_small_fetches_walk_the_whole_range(start_broker: Callable[..., Any]) -> None:
    b = start_broker()
    b.create_topic("small", partitions=1)
    records = [expected_record(i) for i in range(200)]
    ck_produce(b.bootstrap, "small", records, **{"batch.num.messages": 7, "linger.ms": 1})
    options = {"bootstrap.servers": b.bootstrap, "max.partition.fetch.bytes": "600"}
    with KafkaClient(options) as client:
        got = read_all(client, "small", 0, 0, 200)
    assert [r.offset for r in got] == list(range(200))


def test_next_fetch_is_in_flight_while_a_batch_is_handed_out(
    start_broker: Callable[..., Any],
) -> None:
    """While the caller holds a batch, the Fetch of what follows it is already at the broker."""
    b = start_broker()
    b.create_topic("ahead", partitions=1)
    records = [expected_record(i) for i in range(200)]
    ck_produce(b.bootstrap, "ahead", records, **{"batch.num.messages": 10, "linger.ms": 1})
    options = {"bootstrap.servers": b.bootstrap, "max.partition.fetch.bytes": "600"}
    with KafkaClient(options) as client:
        client.metadata(["ahead"])
        (conn,) = client._client._connections.values()  # one broker: leader and bootstrap
        before = conn._protocol.next_correlation_id
        batches = client.fetch_range("ahead", 0, 0, 200, columns=COLUMNS)
        first = next(batches)
        # the Fetch of this batch and the one of what follows it (maybe answered already)
        assert conn._protocol.next_correlation_id - before == 2
        assert [type(r).__name__ for r, _ in conn._protocol.pending.values()] in (
            [],
            ["FetchRequest"],
        )
        offsets = first.column("offset").to_pylist()
        for batch in batches:
            offsets += batch.column("offset").to_pylist()
    assert offsets == list(range(200))


def test_read_committed_hides_aborted_transactions(start_broker: Callable[..., Any]) -> None:
    import confluent_kafka as ck

    b = start_broker()
    b.create_topic("txn", partitions=1)
    producer = ck.Producer(ck_conf(b.bootstrap, **{"transactional.id": "t-1"}))
    producer.init_transactions(30)
    for round_, commit in enumerate([True, False, True]):
        producer.begin_transaction()
        for i in range(10):
            producer.produce("txn", key=f"{round_}-{i}".encode(), value=b"v", partition=0)
        producer.flush(30)
        (producer.commit_transaction if commit else producer.abort_transaction)(30)
    with KafkaClient({"bootstrap.servers": b.bootstrap}) as client:
        end = client.list_offsets([("txn", 0)], LATEST)[("txn", 0)]
        committed = read_all(client, "txn", 0, 0, end, read_committed=True)
        everything = read_all(client, "txn", 0, 0, end, read_committed=False)
    assert [r.key for r in committed] == [f"{r}-{i}".encode() for r in (0, 2) for i in range(10)]
    # control records are never rows; the aborted transaction's records are, read uncommitted
    assert [r.key for r in everything] == [
        f"{r}-{i}".encode() for r in (0, 1, 2) for i in range(10)
    ]
    assert end == 33  # three markers


def test_data_loss_is_never_silent(start_broker: Callable[..., Any]) -> None:
    import confluent_kafka as ck
    from confluent_kafka.admin import AdminClient

    b = start_broker()
    b.create_topic("gone", partitions=1)
    ck_produce(b.bootstrap, "gone", [expected_record(i) for i in range(50)])
    admin = AdminClient(ck_conf(b.bootstrap))
    futures = admin.delete_records([ck.TopicPartition("gone", 0, 20)], request_timeout=20)
    for f in futures.values():
        f.result(20)
    with KafkaClient({"bootstrap.servers": b.bootstrap}) as client:
        assert client.list_offsets([("gone", 0)], EARLIEST) == {("gone", 0): 20}
        with pytest.raises(OffsetOutOfRangeError, match=r"gone-0: offsets 5 to 19"):
            read_all(client, "gone", 0, 5, 50)
        got = read_all(client, "gone", 0, 5, 50, fail_on_data_loss=False)
    assert [r.offset for r in got] == list(range(20, 50))


def test_unknown_topic_is_an_error(start_broker: Callable[..., Any]) -> None:
    b = start_broker()
    options = {"bootstrap.servers": b.bootstrap, "request.timeout.ms": "2000"}
    with KafkaClient(options) as client, pytest.raises(KafkaApiError, match="UNKNOWN_TOPIC"):
        read_all(client, "nope", 0, 0, 10)


@pytest.mark.parametrize(
    ("kafka_version", "api_version"), [("0.8.2", (0, 8, 2)), ("0.10.2", (0, 10, 2))]
)
def test_old_brokers(
    start_broker: Callable[..., Any], kafka_version: str, api_version: tuple[int, ...]
) -> None:
    """0.8.2 has no ApiVersions (the client falls back to broker.version.fallback's table and reads
    magic 0 message sets); 0.10.2 stores magic 1 with KIP-31 relative offsets."""
    b = start_broker(kafka_version=kafka_version)
    b.create_topic("old", partitions=1)
    records = [Rec(f"k{i}".encode(), f"v{i}".encode(), [], -1) for i in range(40)]
    kp_produce(
        b.bootstrap,
        "old",
        records,
        api_version=api_version,
        compression_type="gzip",
        linger_ms=5,
        batch_size=256,
    )
    fallback = "0.8.2" if kafka_version == "0.8.2" else "0.9.0"
    options = {"bootstrap.servers": b.bootstrap, "broker.version.fallback": fallback}
    with KafkaClient(options) as client:
        got = read_all(client, "old", 0, 3, 40)
    assert [(r.key, r.value, r.offset) for r in got] == [
        (f"k{i}".encode(), f"v{i}".encode(), i) for i in range(3, 40)
    ]


def test_leader_moves_mid_read(kwire_cluster: Any) -> None:
    kwire_cluster.create_topic("moving", partitions=1)
    records = [expected_record(i) for i in range(100)]
    ck_produce(kwire_cluster.bootstrap, "moving", records, **{"batch.num.messages": 10})
    with KafkaClient(
        {"bootstrap.servers": kwire_cluster.bootstrap, "max.partition.fetch.bytes": "500"}
    ) as client:
        got: list[Rec] = []
        stream = client.fetch_range("moving", 0, 0, 100, columns=COLUMNS)
        first = next(stream)
        got.extend(Rec(r["key"], r["value"], [], -1, r["offset"]) for r in first.to_pylist())
        before = client.metadata(["moving"]).leader("moving", 0)
        assert before is not None
        kwire_cluster.move_leader(
            "moving", 0, to_node=next(n for n in (1, 2, 3) if n != before.node_id)
        )
        for batch in stream:
            got.extend(Rec(r["key"], r["value"], [], -1, r["offset"]) for r in batch.to_pylist())
        after = client.metadata(["moving"]).leader("moving", 0)
    assert after is not None and after.node_id != before.node_id
    assert [r.offset for r in got] == list(range(100))
    assert [(r.key, r.value) for r in got] == [(r.key, r.value) for r in records]


def test_options_are_checked() -> None:
    with pytest.raises(OptionError, match=r"bootstrap\.servers"):
        ClientConfig.from_options({})
    with pytest.raises(OptionError, match=r"isolation\.level"):
        ClientConfig.from_options({"bootstrap.servers": "h:1", "isolation.level": "dirty"})
    with pytest.raises(OptionError, match="not host:port"):
        ClientConfig.from_options({"bootstrap.servers": "h"})
    config = ClientConfig.from_options(
        {"kafka.bootstrap.servers": "[::1]:9092,b:9093", "kafka.isolation.level": "read_committed"}
    )
    assert config.bootstrap_servers == (("::1", 9092), ("b", 9093))
    assert config.read_committed


def test_idempotent_produce_read_by_librdkafka(start_broker: Callable[..., Any]) -> None:
    """Batches produced by kwire.client are what librdkafka consumes; a batch sent again with
    the same sequence (a retry after a lost answer) is not appended twice."""
    from interop_helpers import ck_consume

    b = start_broker()
    b.create_topic("out", partitions=1)
    records = [expected_record(i) for i in range(30)]
    rows = [(r.key, r.value, r.headers, r.timestamp) for r in records]
    options = {"bootstrap.servers": b.bootstrap, "compression.type": "zstd"}
    with KafkaClient(options) as client:
        sequences = client.init_producer_id()
        assert sequences.producer_id >= 0
        assert client.produce("out", 0, rows[:10], sequences=sequences) == 0
        assert client.produce("out", 0, rows[10:], sequences=sequences) == 10
        # the second batch again, with its sequence: the broker knows it
        sequences.next_sequence[("out", 0)] = 10
        client.produce("out", 0, rows[10:], sequences=sequences)
        assert client.list_offsets([("out", 0)], LATEST) == {("out", 0): 30}
    got = ck_consume(b.bootstrap, "out", 30)
    assert [(r.content(), r.timestamp, r.offset) for r in got] == [
        (r.content(), r.timestamp, r.offset) for r in records
    ]


def test_produce_options_follow_kafka() -> None:
    with pytest.raises(OptionError, match="Must set acks to all"):
        ClientConfig.from_options(
            {"bootstrap.servers": "h:1", "acks": "1", "enable.idempotence": "true"}
        )
    config = ClientConfig.from_options({"bootstrap.servers": "h:1", "acks": "1"})
    assert (config.acks, config.enable_idempotence) == (1, False)
    assert ClientConfig.from_options({"bootstrap.servers": "h:1"}).enable_idempotence


@pytest.fixture
def pki(tmp_path: Any) -> dict[str, str]:
    trustme = pytest.importorskip("trustme")
    ca = trustme.CA()
    paths = {"ca": str(tmp_path / "ca.pem"), "server": str(tmp_path / "server.pem")}
    ca.cert_pem.write_to_path(paths["ca"])
    ca.issue_cert("127.0.0.1", "localhost").private_key_and_cert_chain_pem.write_to_path(
        paths["server"]
    )
    return paths


@pytest.mark.parametrize(
    ("listener", "mechanism"),
    [
        ("SASL_SSL", "SCRAM-SHA-512"),
        ("SASL_SSL", "SCRAM-SHA-256"),
        ("SASL_PLAINTEXT", "PLAIN"),
        ("SSL", None),
    ],
)
def test_security(
    start_broker: Callable[..., Any], pki: dict[str, str], listener: str, mechanism: str | None
) -> None:
    config = {
        "listeners": f"PLAINTEXT://127.0.0.1:0,{listener}://127.0.0.1:0",
        "sasl.enabled.mechanisms": "SCRAM-SHA-512,SCRAM-SHA-256,PLAIN",
        "ssl.certfile": pki["server"],
        "ssl.cafile": pki["ca"],
    }
    if mechanism == "PLAIN":
        config["listener.name.sasl_plaintext.plain.sasl.jaas.config"] = (
            "org.apache.kafka.common.security.plain.PlainLoginModule required "
            'user_alice="alice-secret";'
        )
    b = start_broker(config=config)
    if mechanism and mechanism.startswith("SCRAM"):
        b.set_scram_password("alice", "alice-secret", mechanism)
    b.create_topic("sec", partitions=1)
    ck_produce(b.bootstrap, "sec", [expected_record(i) for i in range(10)])
    options = {
        "kafka.bootstrap.servers": b.bootstrap_for(listener),
        "kafka.security.protocol": listener,
        "kafka.ssl.truststore.location": pki["ca"],
    }
    if mechanism:
        module = (
            "scram.ScramLoginModule" if mechanism.startswith("SCRAM") else "plain.PlainLoginModule"
        )
        options["kafka.sasl.mechanism"] = mechanism
        options["kafka.sasl.jaas.config"] = (
            f"org.apache.kafka.common.security.{module} required "
            'username="alice" password="alice-secret";'
        )
    with KafkaClient(options) as client:
        assert [r.offset for r in read_all(client, "sec", 0, 0, 10)] == list(range(10))
    if mechanism:
        wrong = {
            **options,
            "kafka.sasl.jaas.config": 'x required username="alice" password="nope";',
        }
        with (
            KafkaClient(wrong) as client,
            pytest.raises(KafkaApiError, match="SASL_AUTHENTICATION_FAILED"),
        ):
            client.metadata()
