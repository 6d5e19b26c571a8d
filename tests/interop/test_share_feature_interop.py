"""``share.version`` with confluent-kafka's ``ShareConsumer`` (librdkafka 2.16): finalized at 0
through UpdateFeatures (sent over the wire; the AdminClient has no call for it) the broker refuses
ShareGroupHeartbeat with UNSUPPORTED_VERSION, which librdkafka treats as fatal; at 1 again a new
share consumer gets its records. The broker is in-process on a free port, stopped by the fixture;
every poll loop is bounded in count and time."""

from __future__ import annotations

import socket
import struct
import time
from typing import Any

import pytest

from kwire.broker import Broker
from kwire.protocol import decode_response_frame, encode_request_frame, message_class, struct_class

pytestmark = pytest.mark.interop

DEADLINE_S = 30.0
UPDATE = struct_class("UpdateFeaturesRequest", "feature_updates")


def set_share_version(broker: Broker, level: int) -> int:
    request = message_class("UpdateFeaturesRequest")(
        timeout_ms=1000,
        feature_updates=[
            UPDATE(feature="share.version", max_version_level=level, upgrade_type=1 if level else 2)
        ],
        validate_only=False,
    )
    host, port = broker.bootstrap.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(encode_request_frame(request, 1, correlation_id=1, client_id="t"))
        data = b""
        while len(data) < 4 or len(data) < 4 + struct.unpack(">i", data[:4])[0]:
            chunk = sock.recv(65536)
            assert chunk, "the broker closed the connection"
            data += chunk
    return int(decode_response_frame(data, 57, 1).message.error_code)


def share_consumer(broker: Broker, group: str) -> Any:
    from confluent_kafka import ShareConsumer

    return ShareConsumer({"bootstrap.servers": broker.bootstrap, "group.id": group})


def test_share_consumer_is_refused_while_share_version_is_0(kwire_broker: Broker) -> None:
    from confluent_kafka import KafkaError, KafkaException, Producer

    kwire_broker.create_topic("work", partitions=1)
    assert set_share_version(kwire_broker, 0) == 0
    refused = share_consumer(kwire_broker, "g")
    try:
        refused.subscribe(["work"])
        deadline = time.monotonic() + DEADLINE_S
        with pytest.raises(KafkaException) as caught:
            while time.monotonic() < deadline:
                assert len(refused.poll(0.2)) == 0
        assert caught.value.args[0].code() == KafkaError.UNSUPPORTED_VERSION
    finally:
        refused.close()
    assert set_share_version(kwire_broker, 1) == 0
    c = share_consumer(kwire_broker, "g")
    try:
        c.subscribe(["work"])
        deadline = time.monotonic() + DEADLINE_S
        while not kwire_broker.call(
            lambda s: (
                s.services.share is not None
                and any(p.initialized for p in s.services.share.partitions.values())
            )
        ):
            assert time.monotonic() < deadline, "the share partition was never initialized"
            assert len(c.poll(0.1)) == 0
        producer = Producer({"bootstrap.servers": kwire_broker.bootstrap, "linger.ms": 0})
        for i in range(3):
            producer.produce("work", value=f"v{i}".encode())
        assert producer.flush(30) == 0
        got: list[int] = []
        while len(got) < 3 and time.monotonic() < deadline:
            got.extend(m.offset() for m in c.poll(0.2))
        assert sorted(got) == [0, 1, 2]
    finally:
        c.close()
