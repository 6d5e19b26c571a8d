"""librdkafka consumer groups on a 3-node cluster with the StandardAuthorizer.

In a cluster, each coordinator request is authorised before it is routed (Kafka's ``KafkaApis``
checks the group's ACL, then its coordinator answers NOT_COORDINATOR on a node it has left). A
principal with READ on the group and topic consumes and commits while the group's coordinator
moves: the old coordinator answers NOT_COORDINATOR and confluent-kafka finds the new one. A group
without an ACL is GROUP_AUTHORIZATION_FAILED for the same client. A KIP-848 member subscribing to
a topic it may not DESCRIBE is refused by its heartbeat (Kafka 4.0+, KAFKA-18813).
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any

import pytest
from acl_grants import SECURED, grant
from interop_helpers import ck_conf, ck_produce, expected_record

from kwire.broker import Broker, Cluster
from kwire.broker._acl import GROUP, TOPIC
from kwire.broker._state import partition_for

pytestmark = pytest.mark.interop


def commit(consumer: Any, msg: Any) -> None:
    """A synchronous commit, retried (bounded) while the coordinator is found again."""
    import confluent_kafka as ck

    deadline = time.monotonic() + 30
    while True:
        try:
            consumer.commit(message=msg, asynchronous=False)
            return
        except ck.KafkaException:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def test_librdkafka_group_with_acls_follows_its_coordinator(tmp_path: Path) -> None:
    import confluent_kafka as ck

    cluster = Cluster(tmp_path / "data", nodes=3, host="127.0.0.1", port=0, config=SECURED)
    cluster.start()
    consumers: list[Any] = []
    try:
        cluster.create_topic("acl-events", partitions=3)
        grant(cluster, TOPIC, "acl-events", "READ", "WRITE")
        group = "acl-group"
        grant(cluster, GROUP, group, "READ")
        records = [dataclasses.replace(expected_record(i), partition=i % 3) for i in range(300)]
        ck_produce(cluster.bootstrap, "acl-events", records)
        settings = {
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "session.timeout.ms": 10000,
        }
        consumer = ck.Consumer(ck_conf(cluster.bootstrap, **{"group.id": group, **settings}))
        consumers.append(consumer)
        consumer.subscribe(["acl-events"])
        read = 0
        moved = False
        deadline = time.monotonic() + 90
        while read < 300 and time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is None or msg.error() is not None:
                continue
            read += 1
            commit(consumer, msg)
            if read == 150 and not moved:
                index = partition_for(group, cluster.topics()["__consumer_offsets"])
                leader = cluster.leaders("__consumer_offsets")[index]
                cluster.move_leader("__consumer_offsets", index, leader % 3 + 1)
                moved = True
        assert (read, moved) == (300, True)
        committed = consumer.committed(
            [ck.TopicPartition("acl-events", p) for p in range(3)], timeout=20
        )
        assert sorted((tp.partition, tp.offset) for tp in committed) == [
            (0, 100),
            (1, 100),
            (2, 100),
        ]
        # the same principal in a group it has no ACL for
        denied = ck.Consumer(ck_conf(cluster.bootstrap, **{"group.id": "acl-denied", **settings}))
        consumers.append(denied)
        denied.subscribe(["acl-events"])
        errors: list[Any] = []
        deadline = time.monotonic() + 30
        while not errors and time.monotonic() < deadline:
            msg = denied.poll(0.2)
            if msg is not None and msg.error() is not None:
                errors.append(msg.error())
            assert msg is None or msg.error() is not None, "read without READ on the group"
        assert [e.code() for e in errors] == [ck.KafkaError.GROUP_AUTHORIZATION_FAILED]
    finally:
        for c in consumers:
            c.close()
        cluster.stop()


def test_librdkafka_kip848_member_needs_describe_on_its_topics(tmp_path: Path) -> None:
    """Kafka 4.0+ (KAFKA-18813): a ``group.protocol=consumer`` member subscribing to a topic it
    may not DESCRIBE gets TOPIC_AUTHORIZATION_FAILED from its heartbeat and never joins; with
    DESCRIBE and READ on the topic the same client joins and consumes."""
    import confluent_kafka as ck

    from kwire.broker.group import group_coordinator

    broker = Broker(tmp_path / "data", config={**SECURED, "group.initial.rebalance.delay.ms": "0"})
    broker.start()
    consumers: list[Any] = []

    def members(group: str) -> int:
        def read(state: Any) -> int:
            found = group_coordinator(state).consumer.group(group)
            return 0 if found is None else len(found.members)

        return int(broker.call(read))

    try:
        broker.create_topic("kip848-hidden", 1)
        grant(broker, GROUP, "kip848-group", "READ")
        settings = {"group.protocol": "consumer", "auto.offset.reset": "earliest"}
        hidden = ck.Consumer(ck_conf(broker.bootstrap, **{"group.id": "kip848-group", **settings}))
        consumers.append(hidden)
        hidden.subscribe(["kip848-hidden"])
        errors: set[int] = set()
        deadline = time.monotonic() + 15
        while (
            ck.KafkaError.TOPIC_AUTHORIZATION_FAILED not in errors and time.monotonic() < deadline
        ):
            msg = hidden.poll(0.2)
            if msg is not None and msg.error() is not None:
                errors.add(msg.error().code())
        assert ck.KafkaError.TOPIC_AUTHORIZATION_FAILED in errors
        assert members("kip848-group") == 0  # the heartbeat was refused, not just the fetch
        hidden.close()
        consumers.remove(hidden)
        grant(broker, TOPIC, "kip848-hidden", "DESCRIBE", "READ", "WRITE")
        ck_produce(broker.bootstrap, "kip848-hidden", [expected_record(0)])
        seen = ck.Consumer(ck_conf(broker.bootstrap, **{"group.id": "kip848-group", **settings}))
        consumers.append(seen)
        seen.subscribe(["kip848-hidden"])
        got = None
        deadline = time.monotonic() + 30
        while got is None and time.monotonic() < deadline:
            msg = seen.poll(0.2)
            if msg is not None and msg.error() is None:
                got = msg
        assert got is not None and members("kip848-group") == 1
    finally:
        for c in consumers:
            c.close()
        broker.stop()
