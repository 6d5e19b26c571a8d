"""confluent-kafka (librdkafka) against ``kwire broker``: produce in every codec and acks mode,
consume back with assign(), the AdminClient, the idempotent producer and the offset queries."""

from __future__ import annotations

import time
from typing import Any

import confluent_kafka as ck
import pytest
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewPartitions,
    NewTopic,
    OffsetSpec,
    ResourceType,
)
from interop_helpers import (
    BASE_TS,
    CODEC_IDS,
    CODECS,
    Rec,
    ck_conf,
    ck_consume,
    ck_produce,
    compressible,
    expected_record,
    stored_batches,
    wait_until,
)

pytestmark = pytest.mark.interop

N = 40
TIMEOUT = 30.0


def admin_client(bootstrap: str) -> AdminClient:
    return AdminClient(ck_conf(bootstrap))


def result(futures: dict[Any, Any]) -> dict[Any, Any]:
    return {k: f.result(timeout=TIMEOUT) for k, f in futures.items()}


@pytest.mark.parametrize("acks", ["all", "1", "0"])
@pytest.mark.parametrize("codec", CODECS)
def test_produce_consume_every_codec(broker: Any, codec: str, acks: str) -> None:
    topic = f"ck-{codec}-{acks}"
    broker.create_topic(topic, partitions=1)
    records = [compressible(expected_record(i)) for i in range(N)]
    reports = ck_produce(
        broker.bootstrap,
        topic,
        records,
        **{"compression.codec": codec, "acks": acks, "linger.ms": 5, "batch.num.messages": 7},
    )
    if acks == "0":
        # No response, so no offset: librdkafka reports a negative one (OFFSET_INVALID).
        assert all(offset is None or offset < 0 for _, _, offset in reports)
    else:
        assert [(p, o) for _, p, o in reports] == [(0, i) for i in range(N)]
    got = ck_consume(broker.bootstrap, topic, N)
    assert [r.content() for r in got] == [r.content() for r in records]
    assert [r.offset for r in got] == list(range(N))
    assert [r.timestamp for r in got] == [BASE_TS + i for i in range(N)]
    # What the broker stored carries the producer's codec (Kafka keeps compression.type=producer).
    batches = stored_batches(broker.data_dir, topic)
    assert {b.magic for b in batches} == {2}
    assert {int(b.compression) for b in batches} == {CODEC_IDS[codec]}
    assert len(batches) > 1  # batch.num.messages=7: several produce batches
    assert {b.producer_id for b in batches} == {-1}  # librdkafka: enable.idempotence=false


def test_consume_timestamps_and_types(broker: Any) -> None:
    """CreateTime comes back as the producer set it; LogAppendTime topics get the broker's clock."""
    broker.create_topic("ck-create", partitions=1)
    broker.create_topic(
        "ck-append", partitions=1, config={"message.timestamp.type": "LogAppendTime"}
    )
    records = [expected_record(i) for i in range(5)]
    ck_produce(broker.bootstrap, "ck-create", records)
    ck_produce(broker.bootstrap, "ck-append", records)
    consumer = ck.Consumer(
        ck_conf(broker.bootstrap, **{"group.id": "kwire-ts", "enable.auto.commit": False})
    )
    seen: dict[str, list[tuple[int, int]]] = {"ck-create": [], "ck-append": []}
    try:
        consumer.assign(
            [ck.TopicPartition(t, 0, ck.OFFSET_BEGINNING) for t in ("ck-create", "ck-append")]
        )
        deadline = time.monotonic() + TIMEOUT
        while sum(map(len, seen.values())) < 10 and time.monotonic() < deadline:
            m = consumer.poll(0.2)
            if m is not None and m.error() is None:
                seen[m.topic()].append(m.timestamp())
    finally:
        consumer.close()
    assert seen["ck-create"] == [(ck.TIMESTAMP_CREATE_TIME, BASE_TS + i) for i in range(5)]
    assert {t for t, _ in seen["ck-append"]} == {ck.TIMESTAMP_LOG_APPEND_TIME}
    assert all(ts > BASE_TS + 10**9 for _, ts in seen["ck-append"])  # now, not 2023's stamps


def test_admin_client(broker: Any) -> None:
    admin = admin_client(broker.bootstrap)
    created = result(
        admin.create_topics(
            [
                NewTopic(
                    "ck-admin",
                    num_partitions=2,
                    replication_factor=1,
                    config={"cleanup.policy": "compact", "retention.ms": "3600000"},
                ),
                NewTopic("ck-admin-2", num_partitions=1, replication_factor=1),
            ],
            operation_timeout=TIMEOUT,
        )
    )
    assert created == {"ck-admin": None, "ck-admin-2": None}

    # Creating it again: TOPIC_ALREADY_EXISTS.
    with pytest.raises(ck.KafkaException) as exc:
        result(admin.create_topics([NewTopic("ck-admin", 1, 1)]))
    assert exc.value.args[0].code() == ck.KafkaError.TOPIC_ALREADY_EXISTS

    md = admin.list_topics(timeout=TIMEOUT)
    assert {"ck-admin", "ck-admin-2"} <= set(md.topics)
    assert sorted(md.topics["ck-admin"].partitions) == [0, 1]
    assert {p.leader for p in md.topics["ck-admin"].partitions.values()} == {1}
    assert set(md.brokers) == {1}
    assert md.brokers[1].port == broker.port

    resource = ConfigResource(ResourceType.TOPIC, "ck-admin")
    (configs,) = result(admin.describe_configs([resource])).values()
    assert configs["cleanup.policy"].value == "compact"
    assert configs["retention.ms"].value == "3600000"
    source = configs["retention.ms"].source
    assert getattr(source, "value", source) == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert configs["segment.bytes"].is_default
    assert not configs["retention.ms"].is_default

    alter = ConfigResource(
        ResourceType.TOPIC,
        "ck-admin",
        incremental_configs=[
            ConfigEntry("retention.ms", "7200000", incremental_operation=AlterConfigOpType.SET),
            ConfigEntry("cleanup.policy", None, incremental_operation=AlterConfigOpType.DELETE),
        ],
    )
    result(admin.incremental_alter_configs([alter]))
    (configs,) = result(admin.describe_configs([resource])).values()
    assert configs["retention.ms"].value == "7200000"
    assert configs["cleanup.policy"].value == "delete"  # back to the default
    assert configs["cleanup.policy"].is_default

    # Broker configs are there too.
    (broker_configs,) = result(
        admin.describe_configs([ConfigResource(ResourceType.BROKER, "1")])
    ).values()
    assert broker_configs["num.partitions"].value == "1"

    result(admin.create_partitions([NewPartitions("ck-admin", 4)]))
    wait_until(
        "4 partitions in metadata",
        lambda: (
            len(admin.list_topics("ck-admin", timeout=TIMEOUT).topics["ck-admin"].partitions) == 4
        ),
    )
    # Shrinking is refused (INVALID_PARTITIONS).
    with pytest.raises(ck.KafkaException) as exc:
        result(admin.create_partitions([NewPartitions("ck-admin", 2)]))
    assert exc.value.args[0].code() == ck.KafkaError.INVALID_PARTITIONS

    described = result(admin.describe_topics(ck.TopicCollection(["ck-admin"])))
    assert [p.id for p in described["ck-admin"].partitions] == [0, 1, 2, 3]
    cluster = admin.describe_cluster().result(timeout=TIMEOUT)
    assert [n.id for n in cluster.nodes] == [1]
    assert cluster.cluster_id

    assert result(admin.delete_topics(["ck-admin"], operation_timeout=TIMEOUT)) == {
        "ck-admin": None
    }
    wait_until(
        "ck-admin gone from the metadata",
        lambda: "ck-admin" not in admin.list_topics(timeout=TIMEOUT).topics,
    )
    with pytest.raises(ck.KafkaException) as exc:
        result(admin.delete_topics(["ck-admin"]))
    assert exc.value.args[0].code() == ck.KafkaError.UNKNOWN_TOPIC_OR_PART


def test_idempotent_producer(broker: Any) -> None:
    """enable.idempotence=true (librdkafka's default is false): a producer id, contiguous
    sequences per partition, every record exactly once at the offsets acknowledged."""
    broker.create_topic("ck-idem", partitions=2)
    n = 300
    records = [
        Rec(f"k-{i}".encode(), f"v-{i}".encode(), [], BASE_TS + i, i, i % 2) for i in range(n)
    ]
    reports = ck_produce(
        broker.bootstrap,
        "ck-idem",
        records,
        **{
            "enable.idempotence": True,
            "linger.ms": 2,
            "batch.num.messages": 10,
            "max.in.flight.requests.per.connection": 5,
            "compression.codec": "lz4",
        },
    )
    for p in (0, 1):
        assert [o for _, part, o in reports if part == p] == list(range(n // 2))
    got = ck_consume(broker.bootstrap, "ck-idem", n, partitions=(0, 1))
    assert sorted(r.value for r in got) == sorted(r.value for r in records)
    assert len({(r.partition, r.offset) for r in got}) == n
    for p in (0, 1):
        batches = stored_batches(broker.data_dir, "ck-idem", p)
        assert len({b.producer_id for b in batches}) == 1 and batches[0].producer_id >= 0
        assert {b.producer_epoch for b in batches} == {0}
        sequences = [b.base_sequence for b in batches]
        counts = [b.last_offset - b.base_offset + 1 for b in batches]
        assert sequences == [sum(counts[:k]) for k in range(len(batches))]


def test_offset_queries(broker: Any) -> None:
    """get_watermark_offsets, offsets_for_times, AdminClient.list_offsets and delete_records."""
    topic = "ck-offsets"
    broker.create_topic(topic, partitions=1)
    n = 20
    records = [Rec(b"k", f"v{i}".encode(), [], BASE_TS + 10 * i, i) for i in range(n)]
    records[7] = Rec(b"k", b"late-max", [], BASE_TS + 10_000, 7)  # max timestamp mid-log
    ck_produce(broker.bootstrap, topic, records, **{"batch.num.messages": 3, "linger.ms": 5})
    tp = ck.TopicPartition(topic, 0)

    consumer = ck.Consumer(
        ck_conf(broker.bootstrap, **{"group.id": "kwire-offsets", "enable.auto.commit": False})
    )
    try:
        assert consumer.get_watermark_offsets(tp, timeout=TIMEOUT) == (0, n)

        def offset_for(ts: int) -> int:
            (found,) = consumer.offsets_for_times([ck.TopicPartition(topic, 0, ts)], TIMEOUT)
            assert found.error is None, found.error
            return int(found.offset)

        assert offset_for(BASE_TS + 55) == 6  # the first timestamp >= it: record 6 (+60)
        assert offset_for(BASE_TS) == 0
        assert offset_for(BASE_TS + 101) == 7  # +10000, before record 8's +80
        assert offset_for(BASE_TS + 20_000) == ck.OFFSET_END  # -1: no such record
    finally:
        consumer.close()

    admin = admin_client(broker.bootstrap)

    def list_offset(spec: OffsetSpec) -> Any:
        return admin.list_offsets({tp: spec}, request_timeout=TIMEOUT)[tp].result(timeout=TIMEOUT)

    assert list_offset(OffsetSpec.earliest()).offset == 0
    assert list_offset(OffsetSpec.latest()).offset == n
    latest_max = list_offset(OffsetSpec.max_timestamp())
    assert (latest_max.offset, latest_max.timestamp) == (7, BASE_TS + 10_000)
    at = list_offset(OffsetSpec.for_timestamp(BASE_TS + 101))
    assert (at.offset, at.timestamp) == (7, BASE_TS + 10_000)  # first ts >= +101 is record 7
    at = list_offset(OffsetSpec.for_timestamp(BASE_TS + 80))
    assert (at.offset, at.timestamp) == (7, BASE_TS + 10_000)
    at = list_offset(OffsetSpec.for_timestamp(BASE_TS + 60))
    assert (at.offset, at.timestamp) == (6, BASE_TS + 60)

    deleted = admin.delete_records([ck.TopicPartition(topic, 0, 5)], request_timeout=TIMEOUT)
    (low,) = [f.result(timeout=TIMEOUT) for f in deleted.values()]
    assert low.low_watermark == 5
    assert list_offset(OffsetSpec.earliest()).offset == 5
    got = ck_consume(broker.bootstrap, topic, n - 5)
    assert [r.offset for r in got] == list(range(5, n))
