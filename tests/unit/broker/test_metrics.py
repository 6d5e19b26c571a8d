"""Metrics, quota throttling through the server, and the removed-versions report.

A broker on loopback is driven by raw kwire.protocol clients (so a test picks the exact API
versions and KIP-511 software names); ``GET /metrics`` is read over HTTP and parsed strictly as
the Prometheus text format; the throttle is checked on the wire (``throttle_time_ms``) and in time
(the muted connection's next request waits).
"""

from __future__ import annotations

import logging
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kwire.broker import Broker
from kwire.broker._upgrade import removed_versions
from kwire.protocol import ClientConnection, message_class, struct_class
from kwire.records import build_batch

NOW = 1_700_000_000_000
_SAMPLE = re.compile(
    r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*",?)*\})? '
    r"(-?[0-9.eE+-]+|NaN|[+-]Inf)$"
)
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"')

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def parse_prometheus(text: str) -> Samples:
    """A strict reader of the text exposition format: every sample line parses and belongs to
    a family declared by ``# TYPE`` before it."""
    assert text.endswith("\n")
    types: dict[str, str] = {}
    out: Samples = {}
    for line in text.splitlines():
        if line.startswith("# HELP "):
            continue
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ", 3)
            assert kind in ("counter", "gauge", "histogram", "summary", "untyped"), line
            assert name not in types, f"family {name} declared twice"
            types[name] = kind
            continue
        found = _SAMPLE.match(line)
        assert found, f"not a sample line: {line!r}"
        name = found.group(1)
        family = re.sub(r"_(bucket|sum|count)$", "", name)
        assert name in types or types.get(family) == "histogram", f"{name} has no # TYPE"
        labels = frozenset(_LABEL.findall(found.group(2) or ""))
        key = (name, labels)
        assert key not in out, f"duplicate sample {line!r}"
        out[key] = float(found.group(3))
    return out


def value(samples: Samples, name: str, **labels: object) -> float:
    wanted = {(k, str(v)) for k, v in labels.items()}
    found = [v for (n, ls), v in samples.items() if n == name and wanted <= ls]
    assert len(found) == 1, (name, labels, found)
    return found[0]


def scrape(port: int) -> Samples:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        assert response.status == 200
        assert response.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        return parse_prometheus(response.read().decode("utf-8"))


class Client:
    """A blocking kwire.protocol client over one socket."""

    def __init__(self, port: int, client_id: str) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.conn = ClientConnection(client_id)

    def frame(self, message: Any, version: int) -> bytes:
        return self.conn.send(message, version)

    def call(self, message: Any, version: int) -> Any:
        return self.call_frame(self.frame(message, version))

    def call_frame(self, frame: bytes) -> Any:
        self.sock.sendall(frame)
        end = time.monotonic() + 10
        while time.monotonic() < end:
            response = self.conn.next_response()
            if response is not None:
                return response.message
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise ConnectionError("closed by the broker")
            self.conn.receive_data(chunk)
        raise TimeoutError

    def hello(self, software: str, version: str) -> None:
        """ApiVersions v3 with the KIP-511 software name and version."""
        request = message_class("ApiVersionsRequest")(
            client_software_name=software, client_software_version=version
        )
        assert self.call(request, 3).error_code == 0

    def close(self) -> None:
        self.sock.close()


def produce_request(topic: str, records: bytes) -> Any:
    cls = message_class("ProduceRequest")
    return cls(
        acks=-1,
        timeout_ms=1000,
        topic_data=[
            struct_class(cls, "topic_data")(
                name=topic,
                partition_data=[
                    struct_class(cls, "topic_data", "partition_data")(index=0, records=records)
                ],
            )
        ],
    )


def fetch_request(topic: str, offset: int) -> Any:
    cls = message_class("FetchRequest")
    return cls(
        max_wait_ms=0,
        min_bytes=1,
        max_bytes=1 << 24,
        topics=[
            struct_class(cls, "topics")(
                topic=topic,
                partitions=[
                    struct_class(cls, "topics", "partitions")(
                        partition=0, fetch_offset=offset, partition_max_bytes=1 << 22
                    )
                ],
            )
        ],
    )


def commit_request(group: str, topic: str, offset: int) -> Any:
    cls = message_class("OffsetCommitRequest")
    return cls(
        group_id=group,
        generation_id_or_member_epoch=-1,
        member_id="",
        topics=[
            struct_class(cls, "topics")(
                name=topic,
                partitions=[
                    struct_class(cls, "topics", "partitions")(
                        partition_index=0, committed_offset=offset, committed_metadata=""
                    )
                ],
            )
        ],
    )


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    with Broker(
        tmp_path / "data", kafka_version="3.9", metrics_port=0, report_removed_in="4.0"
    ) as b:
        yield b


def test_metrics_endpoint_counts_requests_bytes_clients_and_lag(
    broker: Broker, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "kwire.broker")
    broker.create_topic("orders", 1)
    assert broker.metrics_port
    legacy = Client(broker.port, "billing")
    modern = Client(broker.port, "shipping")
    try:
        legacy.hello("legacy-lib", "0.9.1")
        modern.hello("modern-lib", "2.0.0")
        old = build_batch([(None, NOW, b"k", b"old value")], magic=1)
        new = build_batch([(None, NOW, b"k", b"v%d" % i) for i in range(3)])
        assert (
            legacy.call(produce_request("orders", old), 2)
            .responses[0]
            .partition_responses[0]
            .error_code
            == 0
        )
        assert (
            modern.call(produce_request("orders", new), 9)
            .responses[0]
            .partition_responses[0]
            .error_code
            == 0
        )
        fetched = modern.call(fetch_request("orders", 0), 12)
        assert fetched.responses[0].partitions[0].error_code == 0
        assert (
            modern.call(commit_request("billing-app", "orders", 1), 8)
            .topics[0]
            .partitions[0]
            .error_code
            == 0
        )

        samples = scrape(broker.metrics_port)
        requests = "kafka_network_requestmetrics_requests_total"
        assert value(samples, requests, request="Produce", version=2) == 1
        assert value(samples, requests, request="Produce", version=9) == 1
        assert value(samples, requests, request="ApiVersions", version=3) == 2
        assert value(samples, requests, request="Fetch", version=12) == 1
        assert value(
            samples, "kafka_server_brokertopicmetrics_bytesin_total", topic="orders"
        ) == len(old) + len(new)
        assert (
            value(samples, "kafka_server_brokertopicmetrics_messagesin_total", topic="orders") == 3
        )
        assert value(samples, "kafka_server_brokertopicmetrics_bytesout_total", topic="orders") > 0
        # a histogram per API: cumulative buckets ending in +Inf == count
        buckets = sorted(
            (float(dict(ls)["le"]), v)
            for (n, ls), v in samples.items()
            if n == "kafka_network_requestmetrics_totaltimems_bucket"
            and dict(ls)["request"] == "Produce"
        )
        assert [v for _, v in buckets] == sorted(v for _, v in buckets)
        assert buckets[-1] == (float("inf"), 2)
        assert (
            value(samples, "kafka_network_requestmetrics_totaltimems_count", request="Produce") == 2
        )
        # connections by KIP-511 software (the metrics scrape is not a Kafka connection)
        connections = "kafka_server_socket_server_metrics_connections"
        assert value(samples, connections, client_software_name="legacy-lib") == 1
        assert value(samples, connections, client_software_version="2.0.0") == 1
        assert (
            value(
                samples, "kafka_server_socket_server_metrics_connection_count", listener="PLAINTEXT"
            )
            == 2
        )
        # consumer lag from the group coordinator: 4 records in, offset 1 committed
        assert (
            value(
                samples, "kafka_consumergroup_lag", group="billing-app", topic="orders", partition=0
            )
            == 3
        )
        assert value(samples, "kafka_consumergroup_current_offset", group="billing-app") == 1
        # the removed-in-4.0 use, with the software that made it
        removed = "kwire_clients_using_removed_versions"
        assert value(samples, removed, software="legacy-lib", api="Produce", version=2) == 1
        assert not [k for k in samples if k[0] == removed and ("software", "modern-lib") in k[1]]
    finally:
        legacy.close()
        modern.close()
    assert broker.removed_version_report() == [
        {
            "client_software_name": "legacy-lib",
            "client_software_version": "0.9.1",
            "client_id": "billing",
            "api": "Produce",
            "api_key": 0,
            "version": 2,
            "requests": 1,
        }
    ]
    lines = [r.getMessage() for r in caplog.records if "KIP-896" in r.getMessage()]
    assert lines == [
        "client legacy-lib/0.9.1 (client_id=billing) used Produce v2, which Kafka 4.0 removed "
        "(KIP-896)"
    ]
    later = scrape(broker.metrics_port)
    assert (
        value(later, "kafka_server_socket_server_metrics_connection_count", listener="PLAINTEXT")
        == 0
    )
    assert (
        value(
            later,
            "kafka_server_socket_server_metrics_connection_creation_total",
            listener="PLAINTEXT",
        )
        == 2
    )


def test_removed_versions_of_4_0_are_kip_896() -> None:
    assert removed_versions("4.0") == {
        (0, 0), (0, 1), (0, 2),  # Produce
        (1, 0), (1, 1), (1, 2), (1, 3),  # Fetch
        (2, 0),  # ListOffsets
        (8, 0), (8, 1),  # OffsetCommit
        (9, 0),  # OffsetFetch
        (11, 0), (11, 1),  # JoinGroup
        (19, 0), (19, 1),  # CreateTopics
        (20, 0),  # DeleteTopics
        (23, 0), (23, 1),  # OffsetForLeaderEpoch
        (27, 0),  # WriteTxnMarkers
        (29, 0), (30, 0), (31, 0),  # DescribeAcls, CreateAcls, DeleteAcls
        (32, 0),  # DescribeConfigs
        (34, 0), (35, 0),  # AlterReplicaLogDirs, DescribeLogDirs
        (38, 0), (39, 0), (40, 0), (41, 0),  # delegation tokens
    }  # fmt: skip
    assert removed_versions("3.9") == set()


def test_http_responder_answers_only_metrics(broker: Broker) -> None:
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(f"http://127.0.0.1:{broker.metrics_port}/other", timeout=10)
    assert info.value.code == 404
    info.value.close()
    parse_prometheus(broker.metrics_text())  # the same text, from Python


def test_producer_above_its_quota_is_throttled_and_muted(tmp_path: Path) -> None:
    with Broker(tmp_path / "data") as broker:
        broker.create_topic("t", 1)
        slow = Client(broker.port, "slow")
        fast = Client(broker.port, "fast")
        try:
            records = build_batch([(None, NOW, None, b"x" * 20_000)])
            frame = slow.frame(produce_request("t", records), 9)
            size = len(frame) - 4
            # the first request alone is 5 % above the quota over the 10 s minimum window:
            # throttle = 0.05 * 10000 ms
            bound = size / 10 / 1.05
            broker.alter_client_quotas({"client-id": "slow"}, {"producer_byte_rate": round(bound)})
            expected = round((size / 10 - round(bound)) / round(bound) * 10_000)
            response = slow.call_frame(frame)
            assert response.throttle_time_ms == pytest.approx(expected, abs=3)
            started = time.monotonic()
            slow.call(message_class("MetadataRequest")(topics=None), 12)
            muted = time.monotonic() - started
            assert muted >= expected / 1000 - 0.05
            for _ in range(3):
                assert fast.call(produce_request("t", records), 9).throttle_time_ms == 0
            samples = parse_prometheus(broker.metrics_text())
            throttled = "kafka_server_produce_throttle_time_ms_total"
            assert value(samples, throttled, user="", client_id="slow") == response.throttle_time_ms
            assert value(samples, "kafka_server_produce_byte_rate", client_id="slow") > 0
        finally:
            slow.close()
            fast.close()


def test_cli_reports_removed_versions_at_shutdown(tmp_path: Path) -> None:
    argv = [
        sys.executable,
        "-m",
        "kwire",
        "broker",
        "--data-dir",
        str(tmp_path / "data"),
        "--port",
        "0",
        "--kafka-version",
        "3.9",
        "--metrics-port",
        "0",
        "--report-removed-in",
        "4.0",
    ]
    out_path = tmp_path / "out"
    with open(out_path, "wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while "metrics on" not in out_path.read_text() and time.monotonic() < deadline:
            assert proc.poll() is None, out_path.read_text()
            time.sleep(0.05)
        found = re.search(r"listening on 127\.0\.0\.1:(\d+)", out_path.read_text())
        assert found, out_path.read_text()
        client = Client(int(found.group(1)), "nightly-job")
        client.hello("old-etl", "1.2")
        client.call(message_class("MetadataRequest")(topics=[]), 0)  # still in 4.0
        client.call(message_class("ListOffsetsRequest")(replica_id=-1, topics=[]), 0)
        client.close()
        metrics_port = int(
            re.findall(r"metrics on http://127\.0\.0\.1:(\d+)/", out_path.read_text())[0]
        )
        samples = scrape(metrics_port)
        requests = "kafka_network_requestmetrics_requests_total"
        assert value(samples, requests, request="ListOffsets", version=0) == 1
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
    text = out_path.read_text()
    assert "clients using protocol versions Kafka 4.0 removed:" in text
    report = text.split("removed:", 1)[1].strip().splitlines()
    assert report == ["old-etl/1.2 client_id=nightly-job: ListOffsets v0 (1 requests)"]


def test_record_count_stops_at_corrupt_batches() -> None:
    """A corrupt Produce (answered with CORRUPT_MESSAGE) still goes through the hook."""
    from kwire.broker._metrics import _record_count

    batch = build_batch([(None, NOW, None, b"a")] * 4)
    assert _record_count(batch + batch) == 8
    assert _record_count(build_batch([(None, NOW, None, b"a")], magic=1)) == 0
    negative = bytearray(batch)
    negative[8:12] = (-5).to_bytes(4, "big", signed=True)
    assert _record_count(bytes(negative)) == 0
    assert _record_count(batch[:30]) == 0
