"""Produce, Fetch and Metadata responses encode to the bytes recorded before the encoders changed.

The generated encoders skip work on the common path (a cached default struct to compare a field
with, no tag-section call when there is nothing to write); the bytes must not change. Each case
is built here, by hand, with its tagged fields both at their defaults and set, at every version
of the message, and compared with the hex in ``data/response_bytes.json``, recorded with the
encoders as they were before (``python tests/unit/protocol/test_response_bytes_pinned.py``
rewrites it: only for a deliberate change of the bytes).
"""

from __future__ import annotations

import json
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from kwire.protocol import KafkaMessage
from kwire.protocol._generated import fetch, metadata, produce

PINNED = Path(__file__).parent / "data" / "response_bytes.json"
TOPIC_ID = uuid.UUID("0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0")


def _produce(tagged: bool) -> KafkaMessage:
    p = produce
    leader = p.LeaderIdAndEpoch(3, 7) if tagged else p.LeaderIdAndEpoch()
    part = p.PartitionProduceResponse(
        index=2,
        error_code=0,
        base_offset=1234,
        log_append_time_ms=-1,
        log_start_offset=5,
        record_errors=[p.BatchIndexAndErrorMessage(1, "bad")] if tagged else [],
        error_message="oops" if tagged else None,
        current_leader=leader,
    )
    topic = p.TopicProduceResponse(
        name="t", partition_responses=[part, p.PartitionProduceResponse(index=0)]
    )
    nodes = [p.NodeEndpoint(1, "h", 9092, "r")] if tagged else []
    return p.ProduceResponse(responses=[topic], throttle_time_ms=11, node_endpoints=nodes)


def _fetch(tagged: bool) -> KafkaMessage:
    f = fetch
    part = f.PartitionData(
        partition_index=1,
        high_watermark=100,
        last_stable_offset=90,
        log_start_offset=0,
        diverging_epoch=f.EpochEndOffset(2, 50) if tagged else f.EpochEndOffset(),
        current_leader=f.LeaderIdAndEpoch(1, 4) if tagged else f.LeaderIdAndEpoch(),
        snapshot_id=f.SnapshotId(7, 8) if tagged else f.SnapshotId(),
        aborted_transactions=[f.AbortedTransaction(9, 10)],
        records=b"\x00" * 12,
    )
    topic = f.FetchableTopicResponse(topic="t", topic_id=TOPIC_ID, partitions=[part])
    nodes = [f.NodeEndpoint(1, "h", 9092, None)] if tagged else []
    return f.FetchResponse(
        throttle_time_ms=1, session_id=5, responses=[topic], node_endpoints=nodes
    )


def _metadata(tagged: bool) -> KafkaMessage:
    m = metadata
    part = m.MetadataResponsePartition(
        partition_index=0, leader_id=1, leader_epoch=2, replica_nodes=[1, 2], isr_nodes=[1]
    )
    topic = m.MetadataResponseTopic(
        name="t", topic_id=TOPIC_ID, partitions=[part], topic_authorized_operations=-2147483648
    )
    brokers = [m.MetadataResponseBroker(1, "localhost", 9092, "rack" if tagged else None)]
    return m.MetadataResponse(
        throttle_time_ms=3, brokers=brokers, cluster_id="c", controller_id=1, topics=[topic]
    )


BUILDERS = {"ProduceResponse": _produce, "FetchResponse": _fetch, "MetadataResponse": _metadata}


def _cases() -> list[tuple[str, int, bool]]:
    out = []
    for name, build in BUILDERS.items():
        cls: Any = type(build(False))
        for v in range(cls.MIN_VERSION, cls.MAX_VERSION + 1):
            for tagged in (False, True):
                out.append((name, v, tagged))
    return out


def _encode(name: str, version: int, tagged: bool) -> str:
    try:
        return BUILDERS[name](tagged).encode(version).hex()
    except Exception as exc:  # a field the version cannot carry: the refusal is pinned too
        return f"error: {type(exc).__name__}"


CASES = _cases()


@pytest.mark.parametrize(
    ("name", "version", "tagged"),
    CASES,
    ids=[f"{n}-v{v}-{'set' if t else 'default'}" for n, v, t in CASES],
)
def test_response_bytes_unchanged(name: str, version: int, tagged: bool) -> None:
    pinned = json.loads(PINNED.read_text())
    assert (
        _encode(name, version, tagged)
        == pinned[f"{name} v{version} {'set' if tagged else 'default'}"]
    )


if __name__ == "__main__":
    if "--write" not in sys.argv:
        sys.exit("pass --write to record the current bytes")
    table = {f"{n} v{v} {'set' if t else 'default'}": _encode(n, v, t) for n, v, t in CASES}
    PINNED.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n")
