"""kafka-python against ``kwire broker``: produce in every codec, consume with assign + seek, and
KafkaAdminClient's topic and config calls."""

from __future__ import annotations

import time
from typing import Any

import pytest
from interop_helpers import (
    BASE_TS,
    CODEC_IDS,
    CODECS,
    Rec,
    compressible,
    expected_record,
    kp_consume,
    kp_produce,
    stored_batches,
)
from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient

pytestmark = [
    pytest.mark.interop,
    pytest.mark.filterwarnings("ignore::DeprecationWarning:kafka"),
]

TIMEOUT = 30.0
N = 40


def as_rec(r: Any) -> Rec:
    return Rec(r.key, r.value, list(r.headers or []), r.timestamp, r.offset, r.partition)


@pytest.mark.parametrize("codec", CODECS)
def test_produce_consume_every_codec(broker: Any, codec: str) -> None:
    topic = f"kp-{codec}"
    broker.create_topic(topic, partitions=1)
    # kafka-python's send() takes (str, bytes) headers only: no null header value.
    records = [
        Rec(e.key, e.value, [(k, v) for k, v in e.headers if v is not None], e.timestamp)
        for e in (compressible(expected_record(i)) for i in range(N))
    ]
    acked = kp_produce(
        broker.bootstrap,
        topic,
        records,
        compression_type=None if codec == "none" else codec,
        linger_ms=5,
        batch_size=2000,
    )
    assert [(p, o) for p, o, _ in acked] == [(0, i) for i in range(N)]
    got = [as_rec(r) for r in kp_consume(broker.bootstrap, topic, N)]
    assert [r.content() for r in got] == [r.content() for r in records]
    assert [(r.offset, r.timestamp) for r in got] == [(i, BASE_TS + i) for i in range(N)]
    batches = stored_batches(broker.data_dir, topic)
    assert {b.magic for b in batches} == {2}
    assert {int(b.compression) for b in batches} == {CODEC_IDS[codec]}
    # kafka-python 3 is idempotent by default (enable_idempotence=True on brokers >= 0.11).
    assert all(b.producer_id >= 0 for b in batches)


def test_admin_client(broker: Any) -> None:
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=10000)
    try:
        admin.create_topics(
            {
                "kp-admin": {
                    "num_partitions": 3,
                    "replication_factor": 1,
                    "configs": {"retention.bytes": "1048576", "max.message.bytes": "65536"},
                },
                "kp-admin-2": {"num_partitions": 1, "replication_factor": 1},
            }
        )
        assert {"kp-admin", "kp-admin-2"} <= set(admin.list_topics())
        described = {t["name"]: t for t in admin.describe_topics(["kp-admin"])}
        assert sorted(p["partition_index"] for p in described["kp-admin"]["partitions"]) == [
            0,
            1,
            2,
        ]

        configs = admin.describe_configs(
            [ConfigResource(ConfigResourceType.TOPIC, "kp-admin")], config_filter="all"
        )["topic"]["kp-admin"]
        assert configs["retention.bytes"]["value"] == "1048576"
        assert configs["max.message.bytes"]["value"] == "65536"
        assert configs["cleanup.policy"]["value"] == "delete"
        modified = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "kp-admin")])[
            "topic"
        ]["kp-admin"]
        assert set(modified) == {"retention.bytes", "max.message.bytes"}

        admin.delete_topics(["kp-admin"])
        deadline = time.monotonic() + TIMEOUT
        while "kp-admin" in admin.list_topics() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert "kp-admin" not in admin.list_topics()
        assert "kp-admin-2" in admin.list_topics()
    finally:
        admin.close()


def test_max_message_bytes_is_enforced(broker: Any) -> None:
    """A record batch above the topic's max.message.bytes: MESSAGE_TOO_LARGE (not retried)."""
    from kafka.errors import MessageSizeTooLargeError

    broker.create_topic("kp-small", partitions=1, config={"max.message.bytes": "1000"})
    with pytest.raises(MessageSizeTooLargeError):
        kp_produce(
            broker.bootstrap,
            "kp-small",
            [Rec(b"k", bytes(5000))],
            max_request_size=100_000,
        )
    kp_produce(broker.bootstrap, "kp-small", [Rec(b"k", bytes(100))])
    assert [r.offset for r in kp_consume(broker.bootstrap, "kp-small", 1)] == [0]
