"""Quotas, metrics and upgrade readiness with real clients.

* confluent-kafka: a producer above its ``producer_byte_rate`` quota is throttled (librdkafka's
  statistics report the broker's throttle times) while a producer with another client id is not;
  the metrics endpoint counts the bytes each topic received.
* kafka-python with ``api_version=(0, 10, 2)`` produces with Produce v2, which Kafka 4.0 removed
  (KIP-896): the removed-versions report and metric name it.
"""

from __future__ import annotations

import json
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from interop_helpers import expected_record, kp_produce

from kwire.broker import Broker

pytestmark = [
    pytest.mark.interop,
    pytest.mark.filterwarnings("ignore::DeprecationWarning:kafka"),
]


def scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        text: str = response.read().decode("utf-8")
        return text


def metric(text: str, name: str, **labels: str) -> float:
    wanted = [f'{k}="{v}"' for k, v in labels.items()]
    for line in text.splitlines():
        if line.startswith(name + "{") and all(w in line for w in wanted):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"no {name} {labels} in\n{text}")


def produce_with_stats(bootstrap: str, client_id: str, topic: str, total: int) -> dict[str, Any]:
    """Sends ``total`` bytes in 1 KB records; returns the largest throttle time librdkafka saw and
    how long it took."""
    import confluent_kafka

    seen: list[int] = []

    def on_stats(raw: str) -> None:
        for broker in json.loads(raw).get("brokers", {}).values():
            throttle = broker.get("throttle") or {}
            if throttle.get("cnt"):
                seen.append(int(throttle.get("max", 0)))

    producer = confluent_kafka.Producer(
        {
            "bootstrap.servers": bootstrap,
            "client.id": client_id,
            "statistics.interval.ms": 100,
            "stats_cb": on_stats,
            "linger.ms": 5,
            "batch.size": 16384,
        }
    )
    started = time.monotonic()
    for _ in range(total // 1024):
        while True:
            try:
                producer.produce(topic, b"x" * 1024)
                break
            except BufferError:
                producer.poll(0.05)
        producer.poll(0)
    assert producer.flush(60) == 0
    elapsed = time.monotonic() - started
    deadline = time.monotonic() + 2
    while time.monotonic() < deadline:  # one more statistics round after the last response
        producer.poll(0.1)
    return {"max_throttle_ms": max(seen, default=0), "elapsed": elapsed}


def test_confluent_producer_above_its_quota_is_throttled(tmp_path: Path) -> None:
    with Broker(tmp_path / "data", metrics_port=0, config={"num.partitions": "1"}) as broker:
        broker.create_topic("limited", 1)
        broker.create_topic("free", 1)
        # 10 KB/s: 150 KB at once is 15 KB/s over the 10 s minimum window, 5 s of throttle in all
        broker.alter_client_quotas({"client-id": "batch-loader"}, {"producer_byte_rate": 10_000})
        limited = produce_with_stats(broker.bootstrap, "batch-loader", "limited", 150 * 1024)
        free = produce_with_stats(broker.bootstrap, "web-frontend", "free", 150 * 1024)
        assert limited["max_throttle_ms"] > 500, limited
        assert free["max_throttle_ms"] == 0, free
        assert free["elapsed"] < limited["elapsed"], (free, limited)
        text = scrape(broker.metrics_port or 0)
        for topic in ("limited", "free"):
            received = metric(text, "kafka_server_brokertopicmetrics_bytesin_total", topic=topic)
            assert received > 150 * 1024  # record bytes: values plus batch and record headers
            assert metric(
                text, "kafka_server_brokertopicmetrics_messagesin_total", topic=topic
            ) == pytest.approx(150)
        throttled = metric(
            text, "kafka_server_produce_throttle_time_ms_total", client_id="batch-loader"
        )
        assert throttled >= limited["max_throttle_ms"]
        unlimited = metric(
            text, "kafka_server_produce_throttle_time_ms_total", client_id="web-frontend"
        )
        assert unlimited == 0  # recorded in its own sensor (as Kafka), never throttled
        print("throttled producer:", limited, "other client id:", free)
        assert (
            metric(
                text,
                "kafka_server_socket_server_metrics_connection_creation_total",
                listener="PLAINTEXT",
            )
            >= 2
        )


def test_kafka_python_old_produce_is_in_the_removed_in_4_0_report(tmp_path: Path) -> None:
    with Broker(
        tmp_path / "data", kafka_version="3.9", metrics_port=0, report_removed_in="4.0"
    ) as broker:
        broker.create_topic("ledger", 1)
        records = [expected_record(i, headers=False) for i in range(5)]
        kp_produce(
            broker.bootstrap, "ledger", records, api_version=(0, 10, 2), client_id="ledger-app"
        )
        # a current kafka-python: KIP-511 name and version, current versions only
        kp_produce(broker.bootstrap, "ledger", records, client_id="new-app")
        report = broker.removed_version_report()
        produce = [u for u in report if u["api"] == "Produce"]
        assert produce and {u["client_id"] for u in produce} == {"ledger-app"}, report
        assert produce[0]["version"] == 2
        # kafka-python told to speak 0.10.2 sends ApiVersions v0, which carries no software name
        # (KIP-511 is v3+): the report names it "unknown" and by its client id
        assert produce[0]["client_software_name"] == "unknown"
        assert all(u["client_id"] != "new-app" for u in report)
        text = scrape(broker.metrics_port or 0)
        assert (
            metric(
                text,
                "kwire_clients_using_removed_versions",
                client_id="ledger-app",
                api="Produce",
                version="2",
            )
            >= 1
        )
        from kwire.broker._metrics import broker_metrics

        usage = broker.call(lambda state: broker_metrics(state).usage_by_client())
        assert {name for name, _, client_id, _, _ in usage if client_id == "new-app"} == {
            "kafka-python"
        }
