"""Kafka's own Java clients (kafka-clients 3.9.1, tools/java/ClientsProgram.java) against
``kwire broker``: produce in every codec, consume, the Admin client, idempotent and transactional
producers. Needs a JDK (java, javac); Kafka's jars come from tools/kafka_jars.py."""

from __future__ import annotations

from typing import Any

import pytest
from interop_helpers import (
    BASE_TS,
    CODEC_IDS,
    CODECS,
    ck_consume,
    expected_record,
    from_java,
    java_admin,
    java_clients,
    stored_batches,
)

pytestmark = pytest.mark.interop

N = 40


def java_produce(bootstrap: str, topic: str, codec: str, n: int, *options: str) -> list[Any]:
    acks = java_clients("produce", bootstrap, topic, codec, str(n), *options)["acks"]
    errors = [a for a in acks if "error" in a]
    assert errors == [], errors
    return list(acks)


def java_consume(bootstrap: str, topic: str, n: int, *options: str) -> list[Any]:
    records = java_clients("consume", bootstrap, topic, str(n), "30000", *options)["records"]
    assert len(records) >= n, f"the Java consumer read {len(records)} of {n} records"
    return [from_java(r) for r in records]


@pytest.mark.parametrize("codec", CODECS)
def test_produce_consume_every_codec(broker: Any, codec: str) -> None:
    topic = f"java-{codec}"
    broker.create_topic(topic, partitions=1)
    acks = java_produce(broker.bootstrap, topic, codec, N, "acks=all")
    assert [(a["partition"], a["offset"]) for a in acks] == [(0, i) for i in range(N)]
    assert [a["timestamp"] for a in acks] == [BASE_TS + i for i in range(N)]
    expected = [expected_record(i) for i in range(N)]
    got = java_consume(broker.bootstrap, topic, N)
    assert [r.content() for r in got] == [r.content() for r in expected]
    assert [(r.offset, r.timestamp) for r in got] == [(i, BASE_TS + i) for i in range(N)]
    # Another client reads the same.
    other = ck_consume(broker.bootstrap, topic, N)
    assert [r.content() for r in other] == [r.content() for r in expected]
    batches = stored_batches(broker.data_dir, topic)
    assert {int(b.compression) for b in batches} == {CODEC_IDS[codec]}
    assert {b.producer_id for b in batches} == {-1}  # enable.idempotence=false


def test_idempotent_producer(broker: Any) -> None:
    broker.create_topic("java-idem", partitions=1)
    n = 500
    acks = java_produce(broker.bootstrap, "java-idem", "zstd", n, "idempotent")
    assert [a["offset"] for a in acks] == list(range(n))
    got = java_consume(broker.bootstrap, "java-idem", n)
    assert [r.content() for r in got] == [expected_record(i).content() for i in range(n)]
    batches = stored_batches(broker.data_dir, "java-idem")
    assert len({b.producer_id for b in batches}) == 1 and batches[0].producer_id >= 0
    sequences = [b.base_sequence for b in batches]
    assert sequences == [b.base_offset for b in batches]  # one producer from offset 0


def test_transactional_producer_and_read_committed(broker: Any) -> None:
    """A committed transaction then an aborted one: read_committed sees the first only, with the
    control batches (markers) taking offsets; read_uncommitted sees both."""
    broker.create_topic("java-txn", partitions=1)
    n = 20
    acks = java_produce(broker.bootstrap, "java-txn", "gzip", n, "transactional", "abort")
    assert [a["offset"] for a in acks] == list(range(n))
    committed = java_consume(broker.bootstrap, "java-txn", n, "read_committed")
    assert [r.offset for r in committed] == list(range(n))
    everything = java_consume(broker.bootstrap, "java-txn", 2 * n)
    # Offsets n is the COMMIT marker; the aborted records follow it, then the ABORT marker.
    assert [r.offset for r in everything] == [*range(n), *range(n + 1, 2 * n + 1)]
    batches = stored_batches(broker.data_dir, "java-txn")
    controls = [b for b in batches if b.is_control]
    assert [b.base_offset for b in controls] == [n, 2 * n + 1]
    assert all(b.is_transactional for b in batches)
    # Nothing more is readable committed: the aborted data stays hidden.
    again = java_clients(
        "consume", broker.bootstrap, "java-txn", str(n + 1), "3000", "read_committed"
    )["records"]
    assert len(again) == n


def test_admin_client(broker: Any) -> None:
    bs = broker.bootstrap
    results = java_admin(
        bs,
        {
            "op": "createTopics",
            "topics": [
                {"name": "java-admin", "partitions": 2, "configs": {"retention.ms": "86400000"}},
                {"name": "java-admin-2", "partitions": 1},
            ],
        },
        {"op": "createTopics", "topics": [{"name": "java-admin", "partitions": 1}]},
        {"op": "listTopics"},
        {"op": "describeTopics", "names": ["java-admin"]},
        {"op": "describeConfigs", "topic": "java-admin"},
        {
            "op": "incrementalAlterConfigs",
            "topic": "java-admin",
            "set": {"segment.ms": "3600000"},
            "delete": ["retention.ms"],
        },
        {"op": "describeConfigs", "topic": "java-admin"},
        {"op": "describeConfigs", "broker": "1"},
        {"op": "createPartitions", "topic": "java-admin", "count": 3},
        {"op": "describeTopics", "names": ["java-admin"]},
        {"op": "describeCluster"},
    )
    by_index = {i: r for i, r in enumerate(results)}
    assert all(by_index[i]["error"] is None for i in (0, 2, 3, 4, 5, 6, 7, 8, 9, 10)), results
    created = by_index[0]["result"]
    assert created["java-admin"]["error"] is None, created
    assert created["java-admin"]["numPartitions"] == 2
    assert created["java-admin"]["replicationFactor"] == 1
    assert created["java-admin"]["topicId"] not in ("", "null", "AAAAAAAAAAAAAAAAAAAAAA")
    again = by_index[1]["result"] or {}
    assert "TopicExistsException" in (again.get("java-admin", {}).get("error") or "")
    assert {"java-admin", "java-admin-2"} <= set(by_index[2]["result"])
    desc = by_index[3]["result"]["java-admin"]
    assert desc["topicId"] == created["java-admin"]["topicId"]
    assert [
        (p["partition"], p["leader"]["id"], p["replicas"], p["isr"]) for p in desc["partitions"]
    ] == [
        (0, 1, [1], [1]),
        (1, 1, [1], [1]),
    ]
    configs = by_index[4]["result"]
    assert configs["retention.ms"]["value"] == "86400000"
    assert configs["retention.ms"]["source"] == "DYNAMIC_TOPIC_CONFIG"
    assert configs["cleanup.policy"] == {
        "value": "delete",
        "source": "DEFAULT_CONFIG",
        "isDefault": True,
        "readOnly": False,
        "sensitive": False,
    }
    after = by_index[6]["result"]
    assert after["segment.ms"]["value"] == "3600000"
    assert after["retention.ms"]["value"] == "604800000"  # Kafka's default (7 days)
    assert after["retention.ms"]["source"] == "DEFAULT_CONFIG"
    assert by_index[7]["result"]["num.partitions"]["value"] == "1"
    assert [p["partition"] for p in by_index[9]["result"]["java-admin"]["partitions"]] == [0, 1, 2]
    cluster = by_index[10]["result"]
    assert cluster["clusterId"]
    assert [(n["id"], n["port"]) for n in cluster["nodes"]] == [(1, broker.port)]
    assert cluster["controller"]["id"] == 1 or cluster["controller"] == {}

    # Records, offsets, log dirs, deletion.
    java_produce(bs, "java-admin-2", "none", 30)
    results = java_admin(
        bs,
        {"op": "listOffsets", "topic": "java-admin-2", "partition": 0, "spec": "earliest"},
        {"op": "listOffsets", "topic": "java-admin-2", "partition": 0, "spec": "latest"},
        {"op": "listOffsets", "topic": "java-admin-2", "partition": 0, "spec": "maxTimestamp"},
        {
            "op": "listOffsets",
            "topic": "java-admin-2",
            "partition": 0,
            "spec": f"timestamp:{BASE_TS + 12}",
        },
        {"op": "deleteRecords", "topic": "java-admin-2", "partition": 0, "offset": 10},
        {"op": "listOffsets", "topic": "java-admin-2", "partition": 0, "spec": "earliest"},
        {"op": "describeLogDirs", "brokers": [1]},
        {"op": "deleteTopics", "names": ["java-admin"]},
        {"op": "listTopics"},
        {"op": "deleteTopics", "names": ["java-admin"]},
    )
    assert all(r["error"] is None for r in results[:9]), results
    offsets = [r["result"] for r in results]
    assert offsets[0]["offset"] == 0
    assert offsets[1]["offset"] == 30
    assert (offsets[2]["offset"], offsets[2]["timestamp"]) == (29, BASE_TS + 29)
    assert (offsets[3]["offset"], offsets[3]["timestamp"]) == (12, BASE_TS + 12)
    assert offsets[4] == {"lowWatermark": 10}
    assert offsets[5]["offset"] == 10
    dirs = results[6]["result"]["1"]
    assert len(dirs) == 1
    (log_dir,) = dirs.values()
    assert log_dir["error"] is None
    assert log_dir["replicas"]["java-admin-2-0"]["size"] > 0
    assert {"java-admin-0", "java-admin-1", "java-admin-2-0"} <= set(log_dir["replicas"])
    assert "java-admin" not in results[8]["result"]
    assert "UnknownTopicOrPartitionException" in (results[9]["error"] or "")


def test_admin_client_dynamic_broker_configs(broker: Any) -> None:
    # kafka-configs --entity-type brokers --entity-default / --entity-name 1 --alter
    results = java_admin(
        broker.bootstrap,
        {"op": "incrementalAlterConfigs", "broker": "", "set": {"log.retention.ms": "7000"}},
        {"op": "incrementalAlterConfigs", "broker": "1", "set": {"log.segment.bytes": "2000000"}},
        {"op": "describeConfigs", "broker": "1"},
        {"op": "describeConfigs", "broker": ""},
        {"op": "incrementalAlterConfigs", "broker": "1", "set": {"num.partitions": "3"}},
    )
    assert [r["error"] for r in results[:4]] == [None] * 4, results
    node = results[2]["result"]
    assert (node["log.retention.ms"]["value"], node["log.retention.ms"]["source"]) == (
        "7000",
        "DYNAMIC_DEFAULT_BROKER_CONFIG",
    )
    assert (node["log.segment.bytes"]["value"], node["log.segment.bytes"]["source"]) == (
        "2000000",
        "DYNAMIC_BROKER_CONFIG",
    )
    assert results[3]["result"]["log.retention.ms"]["value"] == "7000"
    assert "Cannot update these configs dynamically" in results[4]["error"]
