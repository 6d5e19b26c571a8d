"""A deleted topic takes its committed offsets with it, as in Kafka: the group coordinator writes
an OffsetCommit tombstone for each of its partitions in every group
(``GroupCoordinatorShard.onPartitionsDeleted`` / ``OffsetMetadataManager.onPartitionsDeleted``).

Without them a group that read the old topic to offset N starts the recreated topic at N: a
librdkafka consumer silently skips the new topic's first N records (or resets, when fewer)."""

from __future__ import annotations

from typing import Any

import confluent_kafka as ck
import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from interop_helpers import Rec, ck_conf, ck_produce

pytestmark = pytest.mark.interop

TIMEOUT = 20.0
UNSET = ck.OFFSET_INVALID  # -1001: no committed offset


def _committed(bootstrap: str, group: str, topic: str) -> int:
    consumer = ck.Consumer(ck_conf(bootstrap, **{"group.id": group}))
    try:
        (tp,) = consumer.committed([ck.TopicPartition(topic, 0)], timeout=TIMEOUT)
    finally:
        consumer.close()
    return int(tp.offset)


def test_recreated_topic_is_read_from_its_start_not_the_old_committed_offset(
    start_broker: Any,
) -> None:
    broker = start_broker()
    topic, group = "recreated", "recreated-group"
    admin = AdminClient(ck_conf(broker.bootstrap))
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(timeout=TIMEOUT)
    committer = ck.Consumer(ck_conf(broker.bootstrap, **{"group.id": group}))
    try:
        committer.commit(offsets=[ck.TopicPartition(topic, 0, 5)], asynchronous=False)
    finally:
        committer.close()
    assert _committed(broker.bootstrap, group, topic) == 5

    admin.delete_topics([topic])[topic].result(timeout=TIMEOUT)
    assert _committed(broker.bootstrap, group, topic) == UNSET
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(timeout=TIMEOUT)
    ck_produce(broker.bootstrap, topic, [Rec(b"k", b"v%d" % i) for i in range(8)])

    consumer = ck.Consumer(
        ck_conf(
            broker.bootstrap,
            **{"group.id": group, "auto.offset.reset": "earliest", "enable.auto.commit": False},
        )
    )
    values: list[bytes] = []
    errors: list[Any] = []
    try:
        consumer.subscribe([topic])
        for _ in range(200):  # at most 200 polls of 0.2 s
            if len(values) == 8:
                break
            msg = consumer.poll(0.2)
            if msg is None:
                continue
            if msg.error() is not None:
                errors.append(msg.error())
            else:
                values.append(msg.value())
    finally:
        consumer.close()
    assert values == [b"v%d" % i for i in range(8)], errors

    # the tombstones are in __consumer_offsets: a restart does not bring the old offset back
    data_dir = broker.data_dir
    broker.stop()
    again = start_broker(data_dir=data_dir)
    assert _committed(again.bootstrap, group, topic) == UNSET
