"""WriteTxnMarkers (API 27) at the protocol level, as another transaction coordinator (or a tool)
sends it: markers end an open transaction and move the last stable offset, the producer state
refuses stale producer and coordinator epochs, unknown partitions and old message formats are
refused per partition, the whole request needs CLUSTER_ACTION, and markers in
``__consumer_offsets`` settle the producer's pending transactional offsets
(``KafkaApis.handleWriteTxnMarkersRequest``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kwire.broker import BrokerState
from kwire.protocol import ErrorCode, message_class, struct_class
from kwire.records import ControlRecordType, decode_control_record
from tests.unit.broker.test_txn import begin, call, fetch, make_state, stored

REQUEST = message_class("WriteTxnMarkersRequest")
MARKER = struct_class(REQUEST, "markers")
TOPIC = struct_class(REQUEST, "markers", "topics")


def marker(
    pid: int, epoch: int, commit: bool, topics: dict[str, list[int]], coordinator_epoch: int = 0
) -> Any:
    return MARKER(
        producer_id=pid,
        producer_epoch=epoch,
        transaction_result=commit,
        topics=[TOPIC(name=t, partition_indexes=ps) for t, ps in topics.items()],
        coordinator_epoch=coordinator_epoch,
        transaction_version=0,
    )


def write(state: BrokerState, *markers: Any, version: int = 2) -> dict[tuple[int, str, int], int]:
    response = call(state, "WriteTxnMarkers", version, markers=list(markers))
    return {
        (m.producer_id, t.name, p.partition_index): p.error_code
        for m in response.markers
        for t in m.topics
        for p in t.partitions
    }


def test_markers_end_a_transaction_and_fence_stale_epochs(tmp_path: Path) -> None:
    state = make_state(tmp_path / "d")
    try:
        state.create_topic("t", 2)
        pid, epoch = begin(state, [b"a", b"b"])
        assert fetch(state).last_stable_offset == 0
        got = write(
            state,
            marker(pid, epoch, True, {"t": [0], "nope": [0]}, coordinator_epoch=4),
            marker(pid + 1, 0, False, {"t": [7]}),
        )
        assert got == {
            (pid, "t", 0): 0,
            (pid, "nope", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            (pid + 1, "t", 7): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        }
        done = fetch(state)
        assert (done.high_watermark, done.last_stable_offset) == (3, 3)
        control = stored(state)[-1]
        assert control.is_control and (control.producer_id, control.producer_epoch) == (pid, epoch)
        record = decode_control_record(next(iter(control)))
        assert record.type is ControlRecordType.COMMIT
        assert record.value.coordinator_epoch == 4  # type: ignore[attr-defined]
        # ProducerStateManager: an older coordinator epoch, an older producer epoch.
        assert write(state, marker(pid, epoch, False, {"t": [0]}, coordinator_epoch=3)) == {
            (pid, "t", 0): ErrorCode.TRANSACTION_COORDINATOR_FENCED
        }
        assert write(state, marker(pid, epoch - 1, False, {"t": [0]}, coordinator_epoch=9)) == {
            (pid, "t", 0): ErrorCode.INVALID_PRODUCER_EPOCH
        }
        # v1 (no transaction version) reads the same.
        assert write(state, marker(pid, epoch, False, {"t": [1]}, 4), version=1) == {
            (pid, "t", 1): 0
        }
    finally:
        state.close()


def test_cluster_action_and_old_formats(tmp_path: Path) -> None:
    acl = {"authorizer.class.name": "StandardAuthorizer", "super.users": "User:admin"}
    state = make_state(tmp_path / "a", **acl)
    try:
        state.create_topic("t", 1)
        assert write(state, marker(1, 0, True, {"t": [0], "x": [1]})) == {
            (1, "t", 0): ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
            (1, "x", 1): ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
        }
        assert stored(state) == []
    finally:
        state.close()
    old = make_state(tmp_path / "o", "3.9")
    try:
        old.create_topic("v1", 1, configs={"message.format.version": "0.10.2"})
        assert write(old, marker(1, 0, True, {"v1": [0]}), version=0) == {
            (1, "v1", 0): ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT
        }
    finally:
        old.close()


def test_consumer_offsets_markers_settle_pending_offsets(tmp_path: Path) -> None:
    state = make_state(tmp_path / "d")
    calls: list[tuple[int, bool]] = []

    class Group:
        def complete_txn(self, producer_id: int, commit: bool) -> None:
            calls.append((producer_id, commit))

    try:
        state.create_topic("__consumer_offsets", 1)
        state.services.group = Group()
        got = write(
            state,
            marker(11, 0, False, {"__consumer_offsets": [0]}),
            marker(12, 0, True, {"__consumer_offsets": [5]}),
        )
        assert got == {
            (11, "__consumer_offsets", 0): 0,
            (12, "__consumer_offsets", 5): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        }
        assert calls == [(11, False)]  # only where a marker was written
    finally:
        state.close()
