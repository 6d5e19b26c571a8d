"""Finalized features (ApiVersions v3+, UpdateFeatures) and transaction.version 2 with real
clients: Kafka's Java Admin 3.9.1 (describeFeatures / updateFeatures), kafka-python's admin
(describe_features / update_features), and the transactional producers of librdkafka 2.16 and
Kafka's Java client 3.9.1, which both speak transaction version 1 (EndTxn v1 / v4, Produce v10 /
v11), against a 4.3 broker that finalizes transaction.version 2 as Kafka 4.x does.
"""

from __future__ import annotations

import socket
import time
from typing import Any

import pytest
from interop_helpers import ck_consume, java_admin, java_clients

from kwire.broker._txn import coordinator_for

pytestmark = pytest.mark.interop

WAIT = 30.0


def admin(bootstrap: str, *ops: dict[str, Any]) -> list[Any]:
    """Kafka's Java Admin: each op's result (failing on an op that threw)."""
    results = java_admin(bootstrap, *ops)
    assert [r["error"] for r in results] == [None] * len(ops), results
    return [r["result"] for r in results]


def test_java_admin_describe_and_update_features(start_broker: Any) -> None:
    broker = start_broker()
    [described] = admin(broker.bootstrap, {"op": "describeFeatures"})
    assert described["finalized"] == {
        "metadata.version": 21,
        "transaction.version": 2,
        "group.version": 1,
        "eligible.leader.replicas.version": 1,
        "share.version": 1,
        "streams.version": 1,
    }
    # ApiVersions v4 (the 3.9 client): features whose minimum is 0 listed too.
    assert described["supported"] == {
        "metadata.version": [7, 21],
        "kraft.version": [0, 1],
        "transaction.version": [0, 2],
        "group.version": [0, 1],
        "eligible.leader.replicas.version": [0, 1],
        "share.version": [0, 1],
        "streams.version": [0, 1],
    }
    assert described["epoch"] > 0
    refused, validated, applied = admin(
        broker.bootstrap,
        {"op": "updateFeatures", "features": {"transaction.version": [1, "UPGRADE"]}},
        {
            "op": "updateFeatures",
            "features": {"transaction.version": [1, "SAFE_DOWNGRADE"]},
            "validateOnly": True,
        },
        {"op": "updateFeatures", "features": {"transaction.version": [1, "SAFE_DOWNGRADE"]}},
    )
    assert refused["transaction.version"].startswith("InvalidUpdateVersionException")
    assert "safe or unsafe downgrade" in refused["transaction.version"]
    assert validated == {"transaction.version": None}
    assert applied == {"transaction.version": None}
    [after] = admin(broker.bootstrap, {"op": "describeFeatures"})
    assert after["finalized"]["transaction.version"] == 1
    assert after["epoch"] > described["epoch"]
    # Persisted in __cluster_metadata: the level survives a restart.
    data_dir = broker.data_dir
    broker.stop()
    again = start_broker(data_dir=data_dir)
    [restarted] = admin(again.bootstrap, {"op": "describeFeatures"})
    assert restarted["finalized"]["transaction.version"] == 1


def test_kafka_python_describe_and_update_features(broker: Any) -> None:
    from kafka import errors as kafka_errors
    from kafka.admin import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=10_000)
    try:
        features = admin.describe_features()
        assert features["transaction.version"]["supported"] == (0, 2)
        assert features["transaction.version"]["finalized"] == (2, 2)
        assert features["group.version"]["finalized"] == (1, 1)
        result = admin.update_features({"group.version": ("SAFE_DOWNGRADE", 0)})
        assert result == {"group.version": "OK"}
        assert "group.version" not in {
            name for name, f in admin.describe_features().items() if "finalized" in f
        }
        with pytest.raises(kafka_errors.InvalidUpdateVersionError, match="supports versions 0-1"):
            admin.update_features({"group.version": 3})
        assert admin.update_features({"group.version": 1}, validate_only=True) == {
            "group.version": "OK"
        }
    finally:
        admin.close()


def test_tv1_transactional_clients_with_transaction_version_2(broker: Any) -> None:
    """librdkafka 2.16 and Kafka's Java producer 3.9.1 keep TV1 (no epoch bump per
    transaction) with transaction.version 2 finalized; read_committed sees what they commit."""
    import confluent_kafka as ck

    assert broker.call(lambda s: s.feature_level("transaction.version")) == 2
    broker.create_topic("tv", partitions=1)
    producer = ck.Producer(
        {"bootstrap.servers": broker.bootstrap, "transactional.id": "tv-ck", "linger.ms": 0}
    )
    producer.init_transactions(WAIT)
    for commit in (True, False, True):
        producer.begin_transaction()
        producer.produce("tv", value=b"ck-commit" if commit else b"ck-abort")
        assert producer.flush(WAIT) == 0
        if commit:
            producer.commit_transaction(WAIT)
        else:
            producer.abort_transaction(WAIT)
    del producer

    def epoch(txn_id: str) -> int:
        return int(broker.call(lambda s: coordinator_for(s).transactions[txn_id].producer_epoch))

    assert epoch("tv-ck") == 0  # EndTxn v1: TV1, the epoch kept across transactions
    java_clients("produce", broker.bootstrap, "tv", "none", "3", "transactional", "abort")
    assert epoch("kwire-interop-tv") == 0  # EndTxn v4: TV1
    got = ck_consume(
        broker.bootstrap, "tv", 5, timeout=WAIT, **{"isolation.level": "read_committed"}
    )
    values = [r.value for r in got]
    assert values[:2] == [b"ck-commit", b"ck-commit"] and len(values) == 5
    assert b"ck-abort" not in values


class RawSession:
    """One connection speaking kwire's codecs (a transaction version 2 client, as Kafka's Java
    producer 4.x behaves: InitProducerId, Produce v12, EndTxn v5)."""

    def __init__(self, port: int) -> None:
        from kwire.protocol import ClientConnection

        self.conn = ClientConnection("tv2-raw")
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)

    def call(self, name: str, version: int, **fields: Any) -> Any:
        from kwire.protocol import message_class

        self.sock.sendall(self.conn.send(message_class(f"{name}Request")(**fields), version))
        for _ in range(1000):
            response = self.conn.next_response()
            if response is not None:
                return response.message
            chunk = self.sock.recv(1 << 16)
            assert chunk, "closed by the broker"
            self.conn.receive_data(chunk)
        raise AssertionError("no response")

    def produce(self, topic: str, pid: int, epoch: int, seq: int, value: bytes) -> int:
        from kwire.protocol import message_class, struct_class
        from kwire.records import build_batch

        cls = message_class("ProduceRequest")
        records = build_batch(
            [(None, int(time.time() * 1000), None, value)],
            2,
            producer_id=pid,
            producer_epoch=epoch,
            base_sequence=seq,
            is_transactional=True,
        )
        part = struct_class(cls, "topic_data", "partition_data")(index=0, records=records)
        response = self.call(
            "Produce",
            12,
            transactional_id="tv2-raw",
            acks=-1,
            timeout_ms=5000,
            topic_data=[struct_class(cls, "topic_data")(name=topic, partition_data=[part])],
        )
        return int(response.responses[0].partition_responses[0].error_code)

    def end_txn(self, pid: int, epoch: int, commit: bool) -> tuple[int, int, int]:
        r = self.call(
            "EndTxn",
            5,
            transactional_id="tv2-raw",
            producer_id=pid,
            producer_epoch=epoch,
            committed=commit,
        )
        return int(r.error_code), r.producer_id, r.producer_epoch

    def close(self) -> None:
        self.sock.close()


def test_tv2_epoch_bump_and_zombie_fencing_over_the_wire(broker: Any) -> None:
    """A TV2 client over a socket: no AddPartitionsToTxn, the epoch bumped by every EndTxn v5,
    a late write of the previous epoch fenced; librdkafka's read_committed consumer sees exactly
    the committed records."""
    from kwire.protocol import ErrorCode

    broker.create_topic("tv2", partitions=1)
    session = RawSession(broker.port)
    try:
        hello = session.call(
            "ApiVersions", 3, client_software_name="tv2-raw", client_software_version="1"
        )
        levels = {f.name: f.max_version_level for f in hello.finalized_features}
        assert levels["transaction.version"] == 2
        r = session.call(
            "InitProducerId", 5, transactional_id="tv2-raw", transaction_timeout_ms=30_000
        )
        pid, epoch = r.producer_id, r.producer_epoch
        assert session.produce("tv2", pid, epoch, 0, b"one") == 0
        assert session.produce("tv2", pid, epoch, 1, b"two") == 0
        assert session.end_txn(pid, epoch, True) == (0, pid, epoch + 1)
        # A zombie of the ended transaction's epoch: fenced, not appended.
        assert session.produce("tv2", pid, epoch, 2, b"zombie") == ErrorCode.INVALID_PRODUCER_EPOCH
        assert session.produce("tv2", pid, epoch + 1, 0, b"aborted") == 0
        assert session.end_txn(pid, epoch + 1, False) == (0, pid, epoch + 2)
        assert session.produce("tv2", pid, epoch + 2, 0, b"three") == 0
        assert session.end_txn(pid, epoch + 2, True) == (0, pid, epoch + 3)
    finally:
        session.close()
    got = ck_consume(
        broker.bootstrap, "tv2", 3, timeout=WAIT, **{"isolation.level": "read_committed"}
    )
    assert [r.value for r in got] == [b"one", b"two", b"three"]
