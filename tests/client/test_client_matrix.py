"""kwire.client against kwire's broker personalities, 0.8.2 (magic 0, no ApiVersions) to 4.3
(issue 20): what kafka-python wrote, read back with the release's own record format; and a read
that goes on across a SIGKILL of the ``kwire broker`` process, restarted on its data dir and port.

A broker older than the client's newest ApiVersions answers it in v0 with UNSUPPORTED_VERSION
(KIP-511; Kafka's brokers since 0.10.0); the client must read that answer as v0 and ask again,
not take the broker for one without ApiVersions (which would fetch magic 0, down-converted,
without timestamps or headers).
"""

from __future__ import annotations

import gc
import sys
import threading
import time
import warnings
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "interop"))

from interop_helpers import CliBroker, free_port

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


def test_a_read_goes_on_across_a_broker_sigkill(tmp_path: Path) -> None:
    import confluent_kafka as ck
    from confluent_kafka.admin import AdminClient, NewTopic

    port = free_port()
    data = tmp_path / "data"
    broker = CliBroker(data, port=port)
    restarted: list[CliBroker] = []
    try:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap, "broker.address.family": "v4"})
        for f in admin.create_topics([NewTopic("k", 1, 1)]).values():
            f.result(20)
        producer = ck.Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
        for i in range(200):
            producer.produce("k", key=f"k{i}".encode(), value=f"v{i}".encode(), partition=0)
            if i % 10 == 9:  # batches of 10: many fetches of max.partition.fetch.bytes
                assert producer.flush(30) == 0
        del producer
        options = {"bootstrap.servers": broker.bootstrap, "max.partition.fetch.bytes": "400"}
        with KafkaClient(options) as client:
            batches = client.fetch_range("k", 0, 0, 200, columns=("offset", "value"))
            got = list(next(batches).to_pylist())
            assert 0 < len(got) < 200
            broker.kill()

            def restart() -> None:
                time.sleep(1.5)  # the client meets a closed port meanwhile
                restarted.append(CliBroker(data, port=port))

            thread = threading.Thread(target=restart, daemon=True)
            thread.start()
            for batch in batches:
                got.extend(batch.to_pylist())
            thread.join(60)
        assert [(r["offset"], r["value"]) for r in got] == [
            (i, f"v{i}".encode()) for i in range(200)
        ]
    finally:
        broker.kill()
        for b in restarted:
            b.kill()
