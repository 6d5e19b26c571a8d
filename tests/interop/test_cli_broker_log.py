"""What ``kwire broker`` logs over its life, as a user reading its output meets it: the listening
line at start, and at SIGTERM a "shutting down" line naming the signal, then a "shut down
completed" summary (Kafka's ``KafkaServer``/``BrokerServer`` log both lines) counting what the
broker served; and a request it cannot read, one warning."""

from __future__ import annotations

import re
import signal
import socket
import struct
from collections.abc import Callable
from typing import Any

import pytest
from interop_helpers import ck_consume, ck_produce, expected_record

pytestmark = pytest.mark.interop


def test_sigterm_logs_shutdown_and_a_summary(broker_cli: Callable[..., Any]) -> None:
    b = broker_cli()
    records = [expected_record(i) for i in range(5)]
    ck_produce(b.bootstrap, "logged", records)
    assert len(ck_consume(b.bootstrap, "logged", 5)) == 5
    assert b.kill(signal.SIGTERM) == 0, b.output()
    err = b.err_path.read_text()
    lines = err.splitlines()
    assert any(
        re.search(r"INFO kwire\.broker: listening on PLAINTEXT://127\.0\.0\.1:", x) for x in lines
    )
    (down,) = [x for x in lines if "shutting down" in x]
    assert down.endswith("INFO kwire.broker: shutting down (SIGTERM)"), err
    (done,) = [x for x in lines if "shut down completed" in x]
    found = re.search(
        r"INFO kwire\.broker: shut down completed after [0-9.]+ s: (\d+) connections, "
        r"(\d+) requests, (\d+) topics",
        done,
    )
    assert found, err
    connections, requests, topics = (int(g) for g in found.groups())
    assert connections >= 2 and requests >= connections  # a producer and a consumer
    assert topics >= 1  # "logged", auto-created
    assert lines.index(down) < lines.index(done)


def test_a_bad_request_is_one_warning_naming_the_connection(broker_cli: Callable[..., Any]) -> None:
    # a request the broker cannot read closes its connection with one WARNING naming the client's
    # address; no "connection from ... client_id=None" line after it (logged once a request
    # header decodes, the connection's first line, never after its last)
    b = broker_cli()
    with socket.create_connection((b.host, b.port), timeout=10) as s:
        s.sendall(struct.pack(">i", 8) + struct.pack(">hhi", 32639, 0, 1))  # no such API key
        assert s.recv(10) == b""  # closed by the broker
        host, port = s.getsockname()
        address = f"{host}:{port}"
    assert b.kill(signal.SIGTERM) == 0, b.output()
    mine = [x for x in b.err_path.read_text().splitlines() if address in x]
    assert len(mine) == 1, mine
    assert mine[0].endswith(
        f"WARNING kwire.broker: closing {address}: API key 32639 version 0 is not served by "
        "Kafka 4.3"
    )
