"""KIP-368 with librdkafka: an OAUTHBEARER session lasts as long as its token, even with
``connections.max.reauth.ms`` at its default 0 (Kafka's ``SaslServerAuthenticator`` takes the
credential's own lifetime), so librdkafka is told the lifetime and re-authenticates; producing
goes on through the re-authentications and the expiry of the first tokens."""

from __future__ import annotations

import logging
import re
import time
from typing import Any

import confluent_kafka as ck
import pytest

pytestmark = pytest.mark.interop

LIFETIME_S = 4


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def test_oauthbearer_session_ends_with_its_token(start_broker: Any) -> None:
    broker = start_broker(
        config={
            "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
            "sasl.enabled.mechanisms": "OAUTHBEARER",
        }
    )
    broker.create_topic("reauth", partitions=1)
    lines = _Lines()
    log = logging.getLogger("kwire.test.rdkafka.reauth")
    log.propagate = False
    log.setLevel(logging.DEBUG)
    log.addHandler(lines)
    producer = ck.Producer(
        {
            "bootstrap.servers": broker.bootstrap_for("SASL_PLAINTEXT"),
            "broker.address.family": "v4",
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "OAUTHBEARER",
            "enable.sasl.oauthbearer.unsecure.jwt": True,
            "sasl.oauthbearer.config": f"principal=svc lifeSeconds={LIFETIME_S}",
            "debug": "security",
            "message.timeout.ms": 20000,
        },
        logger=log,
    )
    failed: list[Any] = []
    delivered: list[int] = []

    def report(err: Any, msg: Any) -> None:
        if err is not None:
            failed.append(err)
        else:
            delivered.append(msg.offset())

    sent = 0
    deadline = time.monotonic() + 1.5 * LIFETIME_S  # past the first token's expiry
    while time.monotonic() < deadline:
        producer.produce("reauth", b"v", on_delivery=report)
        sent += 1
        producer.poll(0.1)
    assert producer.flush(20) == 0
    assert failed == [] and len(delivered) == sent
    lifetimes = [
        int(m.group(1))
        for line in lines.lines
        if (m := re.search(r"Received session lifetime (\d+) ms from broker", line))
    ]
    assert lifetimes, "the broker told librdkafka no session lifetime"
    assert all(0 <= ms <= LIFETIME_S * 1000 for ms in lifetimes), lifetimes
    assert any("REAUTH" in line for line in lines.lines)  # librdkafka re-authenticated
