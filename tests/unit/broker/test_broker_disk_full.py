"""A full disk under the broker (issue 21, item 3): Kafka's answers, then Kafka's halt.

Kafka: an I/O error takes the log directory offline (``LogDirFailureChannel``); Produce answers
KAFKA_STORAGE_ERROR for its partitions (``ReplicaManager.appendToLocalLog``), any other request
its error response (``KafkaApis.handleError``), coordinators NOT_COORDINATOR; with its only log
directory offline the broker halts (``LogManager.handleLogDirFailure``), and the next start
recovers the logs. Each test fills the disk for one kind of file (``diskfaults.DiskFull``:
injected ENOSPC, the first write torn), gives the space back, and restarts on the same data dir:
every acknowledged record (or offset, or topic) is there, nothing unacknowledged is.
"""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path
from typing import Any

import pytest
from diskfaults import DiskFull

from kwire.broker import Broker, BrokerState, ManualClock, RequestContext, personality
from kwire.broker._apis import handler, implemented_versions
from kwire.log._datadir import CLEAN_SHUTDOWN_FILE
from kwire.protocol import (
    ClientConnection,
    ErrorCode,
    decode_request_frame,
    encode_request_frame,
    message_class,
    struct_class,
)
from kwire.records import Compression, build_batch, read_batches

NOW = 1_700_000_000_000
STORAGE = int(ErrorCode.KAFKA_STORAGE_ERROR)


def _batch(values: list[bytes]) -> bytes:
    return build_batch([(None, NOW, b"k", v) for v in values], 2, Compression.NONE)


def _produce_request(topic: str, records: bytes) -> Any:
    cls = message_class("ProduceRequest")
    tcls = struct_class(cls, "topic_data")
    pcls = struct_class(cls, "topic_data", "partition_data")
    return cls(
        acks=-1,
        timeout_ms=1000,
        topic_data=[tcls(name=topic, partition_data=[pcls(index=0, records=records)])],
    )


def _fetch_request(topic: str, offset: int) -> Any:
    cls = message_class("FetchRequest")
    tcls = struct_class(cls, "topics")
    pcls = struct_class(cls, "topics", "partitions")
    part = pcls(partition=0, fetch_offset=offset, partition_max_bytes=1 << 20)
    return cls(
        replica_id=-1,
        max_wait_ms=0,
        min_bytes=1,
        max_bytes=1 << 24,
        topics=[tcls(topic=topic, partitions=[part])],
    )


def _values(records: Any) -> list[bytes]:
    return [bytes(r.value) for b in read_batches(bytes(records or b""), verify_crc=True) for r in b]


class Client:
    """A bounded, blocking kwire.protocol client over one socket."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.conn = ClientConnection("disk-full-test")

    def call(self, message: Any, version: int, timeout: float = 10.0) -> Any:
        self.sock.sendall(self.conn.send(message, version))
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            response = self.conn.next_response()
            if response is not None:
                return response.message
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise ConnectionError("closed by the broker")
            self.conn.receive_data(chunk)
        raise TimeoutError

    def close(self) -> None:
        self.sock.close()


def _wait_halted(broker: Broker, timeout: float = 10.0) -> None:
    end = time.monotonic() + timeout
    while broker.running and time.monotonic() < end:
        time.sleep(0.02)
    assert not broker.running, "the broker kept running with its log dir offline"


# --- the handlers over a BrokerState ------------------------------------------------------------


def _state(path: Path) -> BrokerState:
    return BrokerState(
        path, personality=personality("4.3", implemented_versions()), clock=ManualClock(NOW)
    )


def _handle(state: BrokerState, message: Any, version: int) -> Any:
    frame = encode_request_frame(message, version, correlation_id=7, client_id="test")
    decoded = decode_request_frame(frame)
    ctx = RequestContext(message.API_KEY, version, 7, "test")
    return handler(message.API_KEY)(state, ctx, decoded.message)


def _partition_error(response: Any) -> int:
    return int(response.responses[0].partition_responses[0].error_code)


def test_produce_answers_kafka_storage_error_then_nothing_more_is_acknowledged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"
    state = _state(data)
    state.create_topic("t", 1)
    state.create_topic("u", 1)
    disk = DiskFull(
        monkeypatch, lambda p: "/t-0/" in p and p.endswith(".log"), frozenset({"write"})
    )
    acked: list[bytes] = []
    for i in range(3):
        values = [b"a%d-%d" % (i, j) for j in range(4)]
        assert _partition_error(_handle(state, _produce_request("t", _batch(values)), 9)) == 0
        acked += values
    disk.armed = True
    response = _handle(state, _produce_request("t", _batch([b"torn-%d" % j for j in range(50)])), 9)
    assert _partition_error(response) == STORAGE and disk.hits
    disk.armed = False  # space is back: still nothing is acknowledged, on any partition
    assert state.offline
    for topic in ("t", "u"):
        response = _handle(state, _produce_request(topic, _batch([b"late"])), 9)
        assert _partition_error(response) == STORAGE
        assert response.responses[0].partition_responses[0].base_offset == -1
    # Fetch: the partition's error with an empty (not null) record set.
    part = _handle(state, _fetch_request("t", 0), 12).responses[0].partitions[0]
    assert part.error_code == STORAGE and part.records == b""
    state.close()
    assert not (data / CLEAN_SHUTDOWN_FILE).exists()
    again = _state(data)
    try:
        fetched = _handle(again, _fetch_request("t", 0), 12)
        part = fetched.responses[0].partitions[0]
        assert part.error_code == 0 and part.high_watermark == len(acked)
        assert _values(part.records.to_bytes()) == acked
        assert again.partition("u", 0).log.log_end_offset == 0  # type: ignore[union-attr]
    finally:
        again.close()


# --- the server: answers on the connection, then the halt ---------------------------------------


def test_the_broker_answers_kafka_storage_error_then_stops(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"
    broker = Broker(data).start()
    client: Client | None = None
    try:
        broker.create_topic("t", 1)
        client = Client(broker.port)
        first = client.call(_produce_request("t", _batch([b"kept-0", b"kept-1"])), 9)
        assert first.responses[0].partition_responses[0].error_code == 0
        disk = DiskFull(monkeypatch, lambda p: "/t-0/" in p, frozenset({"write"}))
        disk.armed = True
        failed = client.call(_produce_request("t", _batch([b"lost"] * 40)), 9)
        assert failed.responses[0].partition_responses[0].error_code == STORAGE
        disk.armed = False
        _wait_halted(broker)
        assert broker.failed_log_dir == str(data)
        assert not (data / CLEAN_SHUTDOWN_FILE).exists()
    finally:
        if client is not None:
            client.close()
        broker.stop()
    with Broker(data) as again:
        client = Client(again.port)
        try:
            fetched = client.call(_fetch_request("t", 0), 12)
            part = fetched.responses[0].partitions[0]
            assert part.error_code == 0 and _values(part.records) == [b"kept-0", b"kept-1"]
        finally:
            client.close()


def test_a_failed_metadata_log_append_creates_no_topic(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``__cluster_metadata``: CreateTopics answers KAFKA_STORAGE_ERROR, the topic never was."""
    data = tmp_path / "data"
    broker = Broker(data).start()
    client = Client(broker.port)
    try:
        cls = message_class("CreateTopicsRequest")
        tcls = struct_class(cls, "topics")
        request = cls(
            topics=[tcls(name="new", num_partitions=2, replication_factor=1)], timeout_ms=5000
        )
        disk = DiskFull(
            monkeypatch, lambda p: "/__cluster_metadata-0/" in p, frozenset({"write", "fsync"})
        )
        disk.armed = True
        response = client.call(request, 7)
        disk.armed = False
        assert [t.error_code for t in response.topics] == [STORAGE] and disk.hits
        _wait_halted(broker)
    finally:
        client.close()
        broker.stop()
    with Broker(data) as again:
        assert "new" not in again.topics()


def test_a_failed_offset_commit_answers_not_coordinator_and_is_not_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``__consumer_offsets`` (GroupMetadataManager.storeOffsets maps KAFKA_STORAGE_ERROR to
    NOT_COORDINATOR): the failed commit is not what OffsetFetch finds after the restart."""
    data = tmp_path / "data"
    cls = message_class("OffsetCommitRequest")
    tcls = struct_class(cls, "topics")
    pcls = struct_class(cls, "topics", "partitions")

    def commit(offset: int) -> Any:
        return cls(
            group_id="g",
            generation_id_or_member_epoch=-1,
            member_id="",
            topics=[tcls(name="t", partitions=[pcls(partition_index=0, committed_offset=offset)])],
        )

    broker = Broker(data).start()
    client = Client(broker.port)
    try:
        broker.create_topic("t", 1)
        ok = client.call(commit(5), 8)
        assert ok.topics[0].partitions[0].error_code == 0
        disk = DiskFull(monkeypatch, lambda p: "/__consumer_offsets-" in p, frozenset({"write"}))
        disk.armed = True
        failed = client.call(commit(9), 8)
        disk.armed = False
        assert failed.topics[0].partitions[0].error_code == int(ErrorCode.NOT_COORDINATOR)
        assert disk.hits
        _wait_halted(broker)
    finally:
        client.close()
        broker.stop()
    with Broker(data) as again:
        client = Client(again.port)
        try:
            fcls = message_class("OffsetFetchRequest")
            ftcls = struct_class(fcls, "topics")
            fetched = client.call(
                fcls(group_id="g", topics=[ftcls(name="t", partition_indexes=[0])]), 7
            )
            assert fetched.topics[0].partitions[0].committed_offset == 5
        finally:
            client.close()


def test_a_topic_creation_that_failed_half_way_leaves_no_topic(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``partition.metadata`` of the third partition cannot be written: the topic was never
    recorded, so after the restart it does not exist, and creating it again works (the folders
    the failed creation left are strays, renamed as Kafka renames stray logs)."""
    from kwire.log.storage import KafkaStorageError

    data = tmp_path / "data"
    state = _state(data)
    disk = DiskFull(monkeypatch, lambda p: "/x-2/partition.metadata" in p)
    disk.armed = True
    with pytest.raises(KafkaStorageError):
        state.create_topic("x", 4)
    disk.armed = False
    assert disk.hits and state.offline
    state.close()
    again = _state(data)
    try:
        assert again.topic("x") is None
        again.create_topic("x", 4)
        response = _handle(again, _produce_request("x", _batch([b"one"])), 9)
        assert _partition_error(response) == 0
        assert [p.log.log_end_offset for p in again.topics["x"].partitions] == [1, 0, 0, 0]
        assert any(name.endswith("-stray") for name in os.listdir(data))
    finally:
        again.close()


def test_a_failed_transaction_state_append_answers_not_coordinator(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``__transaction_state`` (TransactionStateManager.appendTransactionToLog maps
    KAFKA_STORAGE_ERROR to NOT_COORDINATOR): InitProducerId fails, the broker stops; after the
    restart the transactional id starts afresh."""
    data = tmp_path / "data"
    cls = message_class("InitProducerIdRequest")
    request = cls(transactional_id="tx", transaction_timeout_ms=60000)
    broker = Broker(data).start()
    client = Client(broker.port)
    try:
        disk = DiskFull(monkeypatch, lambda p: "/__transaction_state-" in p)
        disk.armed = True
        failed = client.call(request, 4)
        disk.armed = False
        assert failed.error_code == int(ErrorCode.NOT_COORDINATOR) and disk.hits
        _wait_halted(broker)
    finally:
        client.close()
        broker.stop()
    with Broker(data) as again:
        client = Client(again.port)
        try:
            ok = client.call(request, 4)
            assert ok.error_code == 0 and ok.producer_id >= 0 and ok.producer_epoch == 0
        finally:
            client.close()
