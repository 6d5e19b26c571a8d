"""The ``kwire_broker`` fixture runs with test settings (no initial rebalance delay, one-partition
internal topics), as Kafka's development config and the client projects' test brokers do; the
marker overrides them; ``kwire broker`` keeps Kafka's production defaults. Seen from
confluent-kafka: its DescribeConfigs, its consumer group, the internal topic it creates."""

from __future__ import annotations

import time
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType

TEST_SETTINGS = {
    "group.initial.rebalance.delay.ms": "0",
    "offsets.topic.num.partitions": "1",
    "transaction.state.log.num.partitions": "1",
}


def broker_configs(bootstrap: str) -> dict[str, str]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    resource = ConfigResource(ResourceType.BROKER, "1")
    entries = admin.describe_configs([resource], request_timeout=20)[resource].result(timeout=20)
    return {name: entry.value for name, entry in entries.items() if name in TEST_SETTINGS}


def test_fixture_group_consumer_runs_with_test_settings(kwire_broker: Any) -> None:
    assert broker_configs(kwire_broker.bootstrap) == TEST_SETTINGS
    kwire_broker.create_topic("events", partitions=2)
    producer = Producer({"bootstrap.servers": kwire_broker.bootstrap})
    for i in range(4):
        producer.produce("events", str(i).encode(), partition=i % 2)
    assert producer.flush(20) == 0
    consumer = Consumer(
        {
            "bootstrap.servers": kwire_broker.bootstrap,
            "group.id": "g",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.subscribe(["events"])
        values: list[bytes] = []
        deadline = time.monotonic() + 30
        while len(values) < 4 and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None and msg.value() is not None:
                values.append(msg.value() or b"")
        assert sorted(values) == [b"0", b"1", b"2", b"3"]
        assert {tp.partition for tp in consumer.assignment()} == {0, 1}
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    assert kwire_broker.topics()["__consumer_offsets"] == 1


@pytest.mark.kwire_broker(config={"group.initial.rebalance.delay.ms": "100"})
def test_the_marker_overrides_a_test_setting(kwire_broker: Any) -> None:
    assert broker_configs(kwire_broker.bootstrap) == {
        **TEST_SETTINGS,
        "group.initial.rebalance.delay.ms": "100",
    }


def test_the_cli_keeps_kafkas_production_defaults(broker_cli: Any) -> None:
    broker = broker_cli()
    assert broker_configs(broker.bootstrap) == {
        "group.initial.rebalance.delay.ms": "3000",
        "offsets.topic.num.partitions": "50",
        "transaction.state.log.num.partitions": "50",
    }


@pytest.mark.kwire_broker(config={"no.such.setting": "1"})
def test_the_marker_warns_of_an_unknown_setting(
    recwarn: pytest.WarningsRecorder, kwire_broker: Any, caplog: pytest.LogCaptureFixture
) -> None:
    # logged as Kafka does, and a UserWarning (recwarn, set up first, records it)
    warnings = [r.getMessage() for r in caplog.get_records("setup") if r.levelname == "WARNING"]
    assert warnings == [
        "The configuration 'no.such.setting' was supplied but isn't a known config."
    ]
    assert [(w.category, str(w.message)) for w in recwarn] == [
        (
            UserWarning,
            "kwire_broker: The configuration 'no.such.setting' was supplied but isn't a known "
            "config.",
        )
    ]
