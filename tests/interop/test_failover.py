"""Failover in an in-process cluster of three kwire brokers, with real clients.

Kafka's Java producer (idempotent, acks=all; tools/java/FailoverProducer.java) sends at a steady
rate while librdkafka (confluent-kafka) consumes every partition; meanwhile every leader moves,
broker 2 stops (its connections drop, its partitions move) and starts again on its port, and
broker 1, the first of the bootstrap list, does the same. Every record is acknowledged once,
stored once and read once, in order, with contiguous offsets.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from interop_helpers import ck_conf, wait_until

from kwire.broker import Cluster

pytestmark = pytest.mark.interop

TOPIC = "orders"
PARTITIONS = 6
COUNT = 1500
INTERVAL_MS = 4


class Consumer(threading.Thread):
    """confluent-kafka's consumer over every partition (assign, from the beginning), until
    ``count`` records or ``stop``; what it read and the errors it saw."""

    def __init__(self, bootstrap: str, count: int) -> None:
        super().__init__(name="failover-consumer", daemon=True)
        self.bootstrap = bootstrap
        self.count = count
        self.records: list[tuple[int, int, bytes]] = []  # partition, offset, value
        self.errors: list[str] = []
        self.stop = threading.Event()

    def run(self) -> None:
        import confluent_kafka as ck

        consumer = ck.Consumer(
            ck_conf(
                self.bootstrap,
                **{
                    "group.id": "kwire-failover",  # never joined: assign() only
                    "enable.auto.commit": False,
                    "auto.offset.reset": "earliest",
                    "topic.metadata.refresh.interval.ms": 1000,
                    "reconnect.backoff.max.ms": 500,
                },
            )
        )
        try:
            consumer.assign(
                [ck.TopicPartition(TOPIC, p, ck.OFFSET_BEGINNING) for p in range(PARTITIONS)]
            )
            deadline = time.monotonic() + 180
            while (
                len(self.records) < self.count
                and not self.stop.is_set()
                and time.monotonic() < deadline
            ):
                msg = consumer.poll(0.2)
                if msg is None:
                    continue
                if msg.error() is not None:
                    self.errors.append(str(msg.error()))
                    continue
                self.records.append((msg.partition(), msg.offset(), msg.value()))
        finally:
            consumer.close()


def test_java_producer_and_librdkafka_consumer_through_moves_and_stopped_brokers(
    tmp_path: Path,
) -> None:
    from kafka_jars import compile_java, java_command

    missing = [tool for tool in ("java", "javac") if shutil.which(tool) is None]
    if missing:
        pytest.fail(f"the Java interop tests need a JDK ({', '.join(missing)} missing)")
    classes = compile_java("FailoverProducer")
    cluster = Cluster(tmp_path / "data", nodes=3, host="127.0.0.1", port=0)
    cluster.start()
    proc: subprocess.Popen[str] | None = None
    consumer: Consumer | None = None
    err_path = tmp_path / "producer.err"
    try:
        cluster.create_topic(TOPIC, partitions=PARTITIONS)
        assert cluster.leaders(TOPIC) == [1, 2, 3, 1, 2, 3]
        consumer = Consumer(cluster.bootstrap, COUNT)
        consumer.start()
        argv = [
            *java_command("FailoverProducer", classes),
            cluster.bootstrap,
            TOPIC,
            str(COUNT),
            str(PARTITIONS),
            str(INTERVAL_MS),
        ]
        with open(err_path, "w") as err:
            proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err, text=True)

        def stored() -> int:
            return sum(cluster.end_offsets(TOPIC))

        def reached(n: int) -> None:
            wait_until(f"{n} records stored", lambda: True if stored() >= n else None, 90)

        reached(150)
        for p, leader in enumerate(cluster.leaders(TOPIC)):  # every leader moves
            cluster.move_leader(TOPIC, p, leader % 3 + 1)
        reached(450)
        cluster.stop_broker(2)
        assert 2 not in cluster.leaders(TOPIC)
        reached(750)
        cluster.start_broker(2)
        cluster.move_leader(TOPIC, 0, 2)
        cluster.move_leader(TOPIC, 3, 2)
        reached(1000)
        cluster.stop_broker(1)
        reached(1200)
        cluster.start_broker(1)
        cluster.move_leader(TOPIC, 1, 1)

        out, _ = proc.communicate(timeout=150)
        lines = out.strip().splitlines()
        assert proc.returncode == 0 and lines, err_path.read_text()[-4000:]
        reply: dict[str, Any] = json.loads(lines[-1])
        assert reply["error"] is None, reply["error"]
        acks = reply["acks"]
        failed = [a for a in acks if "error" in a]
        assert failed == [], f"{len(failed)} sends failed, first: {failed[:3]}"
        assert [a["partition"] for a in acks] == [i % PARTITIONS for i in range(COUNT)]
        placed = {(a["partition"], a["offset"]) for a in acks}
        assert len(placed) == COUNT  # every record acknowledged at an offset of its own

        # stored once each: the log holds exactly COUNT records (no duplicate from a retry)
        assert stored() == COUNT
        assert all(epoch >= 1 for epoch in cluster.leader_epochs(TOPIC))

        wait_until(
            f"librdkafka to read {COUNT} records",
            lambda: True if len(consumer.records) >= COUNT or not consumer.is_alive() else None,
            90,
        )
        consumer.stop.set()
        consumer.join(30)
        records = consumer.records
        values = [v for _, _, v in records]
        assert len(values) == COUNT, f"read {len(values)}; errors {consumer.errors[:5]}"
        assert sorted(values) == sorted(b"v-%d" % i for i in range(COUNT))  # none lost, none twice
        for p in range(PARTITIONS):
            mine = [(offset, value) for part, offset, value in records if part == p]
            assert [offset for offset, _ in mine] == list(range(len(mine)))
            assert [value for _, value in mine] == [
                b"v-%d" % i for i in range(p, COUNT, PARTITIONS)
            ]  # in the order sent
    finally:
        if consumer is not None:
            consumer.stop.set()
            consumer.join(30)
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=15)
        cluster.stop()


def commit(consumer: Any, msg: Any) -> None:
    """A synchronous commit, retried (bounded) while the coordinator is being found again:
    librdkafka hands NOT_COORDINATOR and a dropped connection to the caller."""
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


def test_librdkafka_group_follows_its_coordinator_when_it_moves(tmp_path: Path) -> None:
    """A subscribed confluent-kafka consumer commits through the group coordinator (the leader
    of its ``__consumer_offsets`` partition); the coordinator moves and its node stops: the
    group finds the new one (NOT_COORDINATOR) and its commits are all there."""
    import confluent_kafka as ck
    from interop_helpers import ck_produce, expected_record

    from kwire.broker._state import partition_for

    cluster = Cluster(tmp_path / "data", nodes=3, host="127.0.0.1", port=0)
    cluster.start()
    consumer: Any = None
    try:
        cluster.create_topic("events", partitions=3)
        records = [dataclasses.replace(expected_record(i), partition=i % 3) for i in range(300)]
        ck_produce(cluster.bootstrap, "events", records)
        group = "kwire-failover-group"
        consumer = ck.Consumer(
            ck_conf(
                cluster.bootstrap,
                **{
                    "group.id": group,
                    "enable.auto.commit": False,
                    "auto.offset.reset": "earliest",
                    "topic.metadata.refresh.interval.ms": 1000,
                    "session.timeout.ms": 10000,
                },
            )
        )
        consumer.subscribe(["events"])

        def coordinator() -> tuple[int, int]:
            """(the group's __consumer_offsets partition, its leader)"""
            index = partition_for(group, cluster.topics()["__consumer_offsets"])
            return index, cluster.leaders("__consumer_offsets")[index]

        read = 0
        moved = stopped = False
        deadline = time.monotonic() + 90
        while read < 300 and time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is None or msg.error() is not None:
                continue
            read += 1
            commit(consumer, msg)
            if read == 100 and not moved:
                index, leader = coordinator()
                cluster.move_leader("__consumer_offsets", index, leader % 3 + 1)
                moved = True
            if read == 200 and not stopped:
                cluster.stop_broker(coordinator()[1])
                stopped = True
        assert read == 300
        committed = consumer.committed(
            [ck.TopicPartition("events", p) for p in range(3)], timeout=20
        )
        assert sorted((tp.partition, tp.offset) for tp in committed) == [
            (0, 100),
            (1, 100),
            (2, 100),
        ]
    finally:
        if consumer is not None:
            consumer.close()
        cluster.stop()


def test_cli_cluster_of_three_serves_real_clients(tmp_path: Path) -> None:
    """``kwire broker --nodes 3``: three listeners, one per node, that clients find through
    Metadata; partition leaders spread over the nodes; librdkafka produces to and reads from every
    leader; SIGTERM stops all three and exits 0."""
    from confluent_kafka.admin import AdminClient, NewTopic
    from interop_helpers import CliBroker, Rec, ck_consume, ck_produce

    broker = CliBroker(tmp_path / "data", extra_args=("--nodes", "3"))
    try:
        out = wait_until(
            "the cluster's bootstrap line",
            lambda: (
                "kwire cluster bootstrap servers" in broker.out_path.read_text()
                and broker.out_path.read_text()
            ),
        )
        nodes = [line for line in out.splitlines() if "kwire broker listening on" in line]
        assert len(nodes) == 3 and all(f"(node {n} of 3" in nodes[n - 1] for n in (1, 2, 3))
        bootstrap = out.split("kwire cluster bootstrap servers ", 1)[1].split()[0]
        assert len(bootstrap.split(",")) == 3

        admin = AdminClient(ck_conf(bootstrap))
        futures = admin.create_topics([NewTopic("spread", num_partitions=6, replication_factor=1)])
        futures["spread"].result(timeout=30)

        def leaders() -> dict[int, int] | None:
            meta = admin.list_topics("spread", timeout=10)
            topic = meta.topics.get("spread")
            if topic is None or len(topic.partitions) != 6 or topic.error is not None:
                return None
            assert sorted(meta.brokers) == [1, 2, 3]
            return {p: topic.partitions[p].leader for p in range(6)}

        placed = wait_until("six partitions with leaders", leaders)
        assert set(placed.values()) == {1, 2, 3}  # round-robin over the nodes

        records = [Rec(key=b"k%d" % i, value=b"v%d" % i, partition=i % 6) for i in range(60)]
        reports = ck_produce(
            bootstrap, "spread", records, acks="all", **{"enable.idempotence": True}
        )
        assert sorted((p, o) for _, p, o in reports) == sorted(
            (p, o) for p in range(6) for o in range(10)
        )
        got = ck_consume(bootstrap, "spread", 60, partitions=tuple(range(6)))
        assert sorted(r.value for r in got) == sorted(r.value for r in records)
    finally:
        assert broker.kill(signal.SIGTERM) == 0, broker.output()
