"""kwire.client against kwire's broker personalities, 0.8.2 (magic 0, no ApiVersions) to 4.3
(issue 20): what kafka-python wrote, read back with the release's own record format.

A broker older than the client's newest ApiVersions answers it in v0 with UNSUPPORTED_VERSION
(KIP-511; Kafka's brokers since 0.10.0); the client must read that answer as v0 and ask again,
not take the broker for one without ApiVersions (which would fetch magic 0, down-converted,
without timestamps or headers).
"""

from __future__ import annotations

import gc
import warnings
from typing import Any

import pytest

from kwire.client import LATEST, KafkaClient

pytestmark = [
    pytest.mark.interop,
    pytest.mark.filterwarnings("ignore::DeprecationWarning:kafka"),
    pytest.mark.filterwarnings("ignore:unclosed:ResourceWarning"),
]

with warnings.catch_warnings():  # kafka-python 3 calls a deprecated importlib API on import
    warnings.simplefilter("ignore", DeprecationWarning)
    import kafka  # noqa: F401

T0 = 1_700_000_000_000
# release -> (kafka-python api_version, record magic the broker stores and serves)
RELEASES = {
    "0.8.2": ((0, 8, 2), 0),
    "0.10.0": ((0, 10, 0), 1),
    "0.11.0": ((0, 11), 2),
    "2.8": ((2, 8), 2),
    "4.3": (None, 2),
}


@pytest.mark.parametrize("release", list(RELEASES))
def test_each_personality_read_in_its_record_format(
    kwire_broker_factory: Any, release: str
) -> None:
    from kafka import KafkaProducer

    api, magic = RELEASES[release]
    broker = kwire_broker_factory(kafka_version=release)
    broker.create_topic("p", partitions=1)
    producer = KafkaProducer(
        bootstrap_servers=broker.bootstrap, api_version=api, request_timeout_ms=10000
    )
    try:
        for i in range(30):
            producer.send(
                "p",
                key=f"k{i}".encode(),
                value=f"v{i}".encode(),
                partition=0,
                headers=[("i", str(i).encode())] if magic == 2 else None,
                timestamp_ms=T0 + i if magic >= 1 else None,
            )
        producer.flush(timeout=30.0)
    finally:
        producer.close(timeout=10)
    options = {"bootstrap.servers": broker.bootstrap}
    if release == "0.8.2":
        options["broker.version.fallback"] = "0.8.2"  # librdkafka's way: it cannot be asked
    with KafkaClient(options) as client:
        assert client.list_offsets([("p", 0)], LATEST) == {("p", 0): 30}
        rows = [
            r
            for batch in client.fetch_range(
                "p", 0, 5, 30, columns=("key", "value", "offset", "timestamp", "headers")
            )
            for r in batch.to_pylist()
        ]
    assert [(r["offset"], r["key"], r["value"]) for r in rows] == [
        (i, f"k{i}".encode(), f"v{i}".encode()) for i in range(5, 30)
    ]
    if magic >= 1:
        assert [int(r["timestamp"].timestamp() * 1000) for r in rows] == [
            T0 + i for i in range(5, 30)
        ]
    if magic == 2:
        assert [r["headers"] for r in rows] == [
            [{"key": "i", "value": str(i).encode()}] for i in range(5, 30)
        ]
    gc.collect()
