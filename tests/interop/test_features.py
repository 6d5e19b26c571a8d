"""Finalized features (ApiVersions v3+, UpdateFeatures) and transaction.version 2 with real
clients: Kafka's Java Admin 3.9.1 (describeFeatures / updateFeatures), kafka-python's admin
(describe_features / update_features), and the transactional producers of librdkafka 2.16 and
Kafka's Java client 3.9.1, which both speak transaction version 1 (EndTxn v1 / v4, Produce v10 /
v11), against a 4.3 broker that finalizes transaction.version 2 as Kafka 4.x does.
"""

from __future__ import annotations

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
