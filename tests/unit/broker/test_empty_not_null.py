"""Empty, never null, where Kafka answers empty: the record set of a Fetch partition error and the
arrays of an error result.

Kafka's rule: a partition error carries ``MemoryRecords.EMPTY`` (``FetchResponse.partitionResponse``,
``ReplicaManager``'s error read results), and the generated message classes default every array to an
empty list unless the spec says ``"default": "null"`` (Kafka's ``FieldSpec.fieldDefault``). librdkafka
rejects a null record set ("invalid MessageSetSize -1") before it looks at the error code.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kwire.broker import BrokerState, ManualClock, personality, testing
from kwire.broker._apis import implemented_versions
from kwire.broker._data import append_to_partition
from kwire.protocol import ErrorCode, message_class, struct_class
from kwire.records import build_batch

NOW = 1_700_000_000_000


@pytest.fixture
def state(tmp_path: Path) -> Iterator[BrokerState]:
    s = BrokerState(
        tmp_path / "data",
        personality=personality("4.3", implemented_versions()),
        clock=ManualClock(NOW),
        static_config={},
    )
    yield s
    s.close()


def call(state: BrokerState, name: str, version: int, **fields: Any) -> Any:
    """Request bytes -> handler -> response bytes -> the response as a client decodes it."""
    return testing.call(state, name, version, **fields)


def versions(name: str) -> range:
    """The versions kwire's handler serves."""
    return testing.served(name)


@pytest.mark.parametrize("version", versions("Fetch"))
def test_fetch_partition_errors_carry_empty_records(state: BrokerState, version: int) -> None:
    state.create_topic("t", 1)
    part = state.partition("t", 0)
    assert part is not None
    records = build_batch([(None, NOW, b"k", b"v%d" % i) for i in range(3)])
    assert append_to_partition(state, part, records, 9, NOW).error_code == 0
    topic_id = state.topics["t"].topic_id

    req = message_class("FetchRequest")
    fetch_topic = struct_class(req, "topics")
    fetch_partition = struct_class(req, "topics", "partitions")

    def topic(name: str, tid: uuid.UUID, *partitions: Any) -> Any:
        return fetch_topic(topic=name, topic_id=tid, partitions=list(partitions))

    def partition(index: int, offset: int, leader_epoch: int = -1) -> Any:
        return fetch_partition(
            partition=index,
            fetch_offset=offset,
            partition_max_bytes=1 << 20,
            current_leader_epoch=leader_epoch,
        )

    asked = [
        topic(
            "t",
            topic_id,
            partition(0, 1000),  # past the end
            partition(7, 0),  # no such partition
        ),
        topic("missing", uuid.uuid4(), partition(0, 0)),
    ]
    if version >= 9:
        asked[0].partitions.append(partition(0, 0, leader_epoch=part.leader_epoch + 5))
    got = call(
        state,
        "Fetch",
        version,
        replica_id=-1,
        max_wait_ms=0,
        min_bytes=1,
        max_bytes=1 << 24,
        topics=asked,
    )
    outcomes = [(p.error_code, p.records) for t in got.responses for p in t.partitions]
    unknown = ErrorCode.UNKNOWN_TOPIC_ID if version >= 13 else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    expected = [
        ErrorCode.OFFSET_OUT_OF_RANGE,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        *([ErrorCode.UNKNOWN_LEADER_EPOCH] if version >= 9 else []),
        unknown,
    ]
    assert sorted(code for code, _ in outcomes) == sorted(int(e) for e in expected)
    for code, records in outcomes:
        assert records is not None, f"v{version}: error {code} came with null records"
        assert len(records) == 0


@pytest.mark.parametrize("version", [v for v in versions("CreateTopics") if v >= 5])
def test_create_topics_error_results_carry_empty_configs(state: BrokerState, version: int) -> None:
    state.create_topic("exists", 1)
    creatable = struct_class(message_class("CreateTopicsRequest"), "topics")

    def topic(name: str) -> Any:
        return creatable(
            name=name, num_partitions=1, replication_factor=1, assignments=[], configs=[]
        )

    got = call(
        state,
        "CreateTopics",
        version,
        topics=[topic("exists"), topic("bad/name"), topic("dup"), topic("dup")],
        timeout_ms=1000,
    )
    assert {r.name: r.error_code for r in got.topics} == {
        "exists": ErrorCode.TOPIC_ALREADY_EXISTS,
        "bad/name": ErrorCode.INVALID_TOPIC_EXCEPTION,
        "dup": ErrorCode.INVALID_REQUEST,
    }
    for result in got.topics:
        assert result.configs == [], (result.name, result.configs)
