"""The broker's data-path handlers, bytes in and bytes out, with a clock the test moves.

Every request goes through the wire: encoded by kwire's protocol at a version, decoded as the
server decodes it, handled, and the response encoded (record bytes spliced in from the segment
files as the server sends them) and decoded again, as a client would.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kwire.broker import BrokerState, Deferred, testing
from kwire.broker._apis import CLOSE_CONNECTION
from kwire.protocol import ErrorCode, message_class
from kwire.records import Compression, build_batch, read_batches

NOW = 1_700_000_000_000


def make_state(path: Path, release: str = "4.3", **config: str) -> BrokerState:
    return testing.make_state(path, release=release, config=config)


@pytest.fixture
def state(tmp_path: Path) -> Any:
    s = make_state(tmp_path / "data")
    yield s
    s.close()


def call(state: BrokerState, name: str, version: int, **fields: Any) -> Any:
    """Send one request through the wire and the handler; the decoded response (or outcome)."""
    return testing.call(state, name, version, **fields)


def decode_response(message: Any, version: int) -> Any:
    from kwire.protocol import decode_response_frame

    api_key = message.API_KEY
    return decode_response_frame(testing.response_frame(message, version), api_key, version).message


def produce(
    state: BrokerState, topic: str, records: bytes, version: int = 9, acks: int = -1
) -> Any:
    cls = message_class("ProduceRequest")
    return call(
        state,
        "Produce",
        version,
        acks=acks,
        timeout_ms=1000,
        topic_data=[_topic_data(cls, topic, records)],
    )


def _topic_data(cls: Any, topic: str, records: bytes) -> Any:
    from kwire.protocol import struct_class

    tcls = struct_class(cls, "topic_data")
    pcls = struct_class(cls, "topic_data", "partition_data")
    return tcls(name=topic, partition_data=[pcls(index=0, records=records)])


def fetch(
    state: BrokerState,
    topic: str,
    offset: int,
    version: int = 12,
    *,
    min_bytes: int = 1,
    max_wait_ms: int = 0,
    session_id: int = 0,
    session_epoch: int = -1,
    partitions: bool = True,
) -> Any:
    from kwire.protocol import struct_class

    cls = message_class("FetchRequest")
    tcls = struct_class(cls, "topics")
    pcls = struct_class(cls, "topics", "partitions")
    topics = (
        [
            tcls(
                topic=topic,
                partitions=[pcls(partition=0, fetch_offset=offset, partition_max_bytes=1 << 20)],
            )
        ]
        if partitions
        else []
    )
    return call(
        state,
        "Fetch",
        version,
        replica_id=-1,
        max_wait_ms=max_wait_ms,
        min_bytes=min_bytes,
        max_bytes=1 << 24,
        session_id=session_id,
        session_epoch=session_epoch,
        topics=topics,
    )


def batch(
    values: list[bytes], magic: int = 2, compression: int = Compression.NONE, **opts: Any
) -> bytes:
    return build_batch(
        [(None, NOW, b"k%d" % i, v) for i, v in enumerate(values)], magic, compression, **opts
    )


# --- ApiVersions and Metadata -------------------------------------------------------------------


def test_api_versions_advertises_the_personality(state: BrokerState) -> None:
    response = call(
        state, "ApiVersions", 3, client_software_name="kwire-test", client_software_version="1.0"
    )
    keys = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
    assert response.error_code == 0
    assert keys[0][0] == 0  # 4.x advertises Produce from v0 (KAFKA-18659)
    assert keys == dict(state.personality.advertised)


def test_api_versions_rejects_bad_software_name(state: BrokerState) -> None:
    response = call(
        state, "ApiVersions", 3, client_software_name="bad name!", client_software_version="1"
    )
    assert response.error_code == ErrorCode.INVALID_REQUEST


def test_metadata_auto_creates_and_lists(state: BrokerState) -> None:
    from kwire.protocol import struct_class

    tcls = struct_class("MetadataRequest", "topics")
    response = call(
        state, "Metadata", 12, topics=[tcls(name="orders")], allow_auto_topic_creation=True
    )
    (topic,) = response.topics
    assert (topic.error_code, topic.name, len(topic.partitions)) == (0, "orders", 1)
    assert topic.topic_id == state.topics["orders"].topic_id
    assert response.brokers[0].node_id == state.node_id
    everything = call(state, "Metadata", 12, topics=None)
    assert [t.name for t in everything.topics] == ["orders"]
    refused = call(
        state, "Metadata", 12, topics=[tcls(name="nope")], allow_auto_topic_creation=False
    )
    assert refused.topics[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    illegal = call(
        state, "Metadata", 12, topics=[tcls(name="bad/name")], allow_auto_topic_creation=True
    )
    assert illegal.topics[0].error_code == ErrorCode.INVALID_TOPIC_EXCEPTION


# --- Produce and Fetch --------------------------------------------------------------------------


@pytest.mark.parametrize("codec", list(Compression))
def test_produce_then_fetch_returns_the_stored_bytes(
    state: BrokerState, codec: Compression
) -> None:
    state.create_topic("t", 1)
    sent = batch([b"a", b"b", b"c"], compression=codec)
    response = produce(state, "t", sent)
    part = response.responses[0].partition_responses[0]
    assert (part.error_code, part.base_offset) == (0, 0)
    response = produce(state, "t", batch([b"d"], compression=codec))
    assert response.responses[0].partition_responses[0].base_offset == 3
    fetched = fetch(state, "t", 0)
    data = fetched.responses[0].partitions[0]
    assert (data.error_code, data.high_watermark) == (0, 4)
    values = [bytes(r.value) for b in read_batches(data.records) for r in b.records()]
    assert values == [b"a", b"b", b"c", b"d"]
    # KIP-31: offsets assigned in place, the payload kept as sent (compressed ones too); only
    # the base offset and partition leader epoch (bytes 0-16, outside the CRC) may differ
    stored = bytes(data.records[: len(sent)])
    assert stored[16:] == sent[16:]


def test_fetch_from_the_middle_and_out_of_range(state: BrokerState) -> None:
    state.create_topic("t", 1)
    for i in range(5):
        produce(state, "t", batch([b"v%d" % i]))
    data = fetch(state, "t", 3).responses[0].partitions[0]
    offsets = [b.base_offset for b in read_batches(data.records)]
    assert offsets == [3, 4]
    bad = fetch(state, "t", 99).responses[0].partitions[0]
    assert bad.error_code == ErrorCode.OFFSET_OUT_OF_RANGE


def test_unknown_topic_and_acks_zero(state: BrokerState) -> None:
    response = produce(state, "missing", batch([b"x"]))
    assert (
        response.responses[0].partition_responses[0].error_code
        == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    )
    state.create_topic("t", 1)
    assert produce(state, "t", batch([b"x"]), acks=0) is None
    # acks=0 and an error: no response, the connection is closed (the producer's only signal)
    assert produce(state, "missing", batch([b"x"]), acks=0) is CLOSE_CONNECTION
    assert state.topics["t"].partitions[0].high_watermark == 1


def test_produce_v2_refused_by_4x_but_accepted_by_3_9(tmp_path: Path) -> None:
    new = make_state(tmp_path / "new", "4.3")
    old = make_state(tmp_path / "old", "3.9")
    try:
        for s in (new, old):
            s.create_topic("t", 1)
        legacy = batch([b"x"], magic=1)
        refused = produce(new, "t", legacy, version=2)
        assert (
            refused.responses[0].partition_responses[0].error_code == ErrorCode.UNSUPPORTED_VERSION
        )
        accepted = produce(old, "t", legacy, version=2)
        assert accepted.responses[0].partition_responses[0].error_code == 0
        # stored as magic 2 (up-converted on append: the topic's format is v2)
        data = fetch(old, "t", 0).responses[0].partitions[0]
        assert [b.magic for b in read_batches(data.records)] == [2]
    finally:
        new.close()
        old.close()


def test_old_personality_stores_magic_1_and_down_converts(tmp_path: Path) -> None:
    s = make_state(tmp_path / "d", "0.10.2")
    try:
        s.create_topic("t", 1)
        response = produce(s, "t", batch([b"x", b"y"], magic=1), version=2)
        assert response.responses[0].partition_responses[0].error_code == 0
        v3 = fetch(s, "t", 0, version=3).responses[0].partitions[0]
        assert {b.magic for b in read_batches(v3.records)} == {1}
        v1 = fetch(s, "t", 0, version=1).responses[0].partitions[0]
        assert {b.magic for b in read_batches(v1.records)} == {0}
        assert [bytes(r.value) for b in read_batches(v1.records) for r in b.records()] == [
            b"x",
            b"y",
        ]
    finally:
        s.close()


def test_idempotent_duplicate_gets_its_original_offsets(state: BrokerState) -> None:
    state.create_topic("t", 1)
    pid = call(
        state, "InitProducerId", 4, transactional_id=None, transaction_timeout_ms=-1
    ).producer_id
    first = batch([b"a", b"b"], producer_id=pid, producer_epoch=0, base_sequence=0)
    produce(state, "t", batch([b"other"]))
    ok = produce(state, "t", first).responses[0].partition_responses[0]
    assert (ok.error_code, ok.base_offset) == (0, 1)
    again = produce(state, "t", first).responses[0].partition_responses[0]
    assert (again.error_code, again.base_offset) == (0, 1)
    gap = batch([b"c"], producer_id=pid, producer_epoch=0, base_sequence=5)
    out = produce(state, "t", gap).responses[0].partition_responses[0]
    assert out.error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert state.topics["t"].partitions[0].high_watermark == 3


# --- long polls and sessions --------------------------------------------------------------------


def test_fetch_waits_for_min_bytes_then_completes(state: BrokerState) -> None:
    state.create_topic("t", 1)
    outcome = fetch(state, "t", 0, min_bytes=1, max_wait_ms=500)
    assert isinstance(outcome, Deferred)
    assert outcome.deadline_ms == NOW + 500
    assert outcome.complete(False) is None  # nothing yet
    produce(state, "t", batch([b"late"]))
    response = decode_response(outcome.complete(False), 12)
    assert response.responses[0].partitions[0].high_watermark == 1
    # at the deadline an empty answer goes out
    empty = fetch(state, "t", 1, min_bytes=1, max_wait_ms=500)
    assert isinstance(empty, Deferred)
    final = decode_response(empty.complete(True), 12)
    assert len(final.responses[0].partitions[0].records or b"") == 0


def test_fetch_session_incremental(state: BrokerState) -> None:
    state.create_topic("t", 1)
    produce(state, "t", batch([b"a"]))
    full = fetch(state, "t", 0, session_id=0, session_epoch=0)
    assert full.session_id != 0 and len(full.responses) == 1
    sid = full.session_id
    # nothing changed since: an incremental fetch at the next offset returns no partition
    quiet = fetch(state, "t", 1, session_id=sid, session_epoch=1)
    assert quiet.error_code == 0 and quiet.responses == []
    produce(state, "t", batch([b"b"]))
    moved = fetch(state, "t", 1, session_id=sid, session_epoch=2, partitions=False)
    assert moved.responses[0].partitions[0].high_watermark == 2
    stale = fetch(state, "t", 1, session_id=sid, session_epoch=9)
    assert stale.error_code == ErrorCode.INVALID_FETCH_SESSION_EPOCH
    unknown = fetch(state, "t", 1, session_id=sid + 1, session_epoch=1)
    assert unknown.error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND


def test_list_offsets(state: BrokerState) -> None:
    from kwire.protocol import struct_class

    state.create_topic("t", 1)
    for i in range(3):
        produce(state, "t", build_batch([(None, NOW + i * 1000, None, b"v")]))
    tcls = struct_class("ListOffsetsRequest", "topics")
    pcls = struct_class("ListOffsetsRequest", "topics", "partitions")

    def query(ts: int, version: int = 7) -> Any:
        r = call(
            state,
            "ListOffsets",
            version,
            replica_id=-1,
            topics=[tcls(name="t", partitions=[pcls(partition_index=0, timestamp=ts)])],
        )
        return r.topics[0].partitions[0]

    for version in range(1, 11):  # every version encodes (leader_epoch only from v4)
        assert query(-1, version).offset == 3
        assert query(NOW + 1500, version).offset == 2
    assert query(-2).offset == 0
    assert query(-1).offset == 3
    assert query(NOW + 1500).offset == 2
    assert query(NOW + 99999).offset == -1
    top = query(-3)
    assert (top.offset, top.timestamp) == (2, NOW + 2000)
    v0 = call(
        state,
        "ListOffsets",
        0,
        replica_id=-1,
        topics=[
            tcls(name="t", partitions=[pcls(partition_index=0, timestamp=-1, max_num_offsets=1)])
        ],
    )
    assert v0.topics[0].partitions[0].old_style_offsets == [3]


def test_restart_keeps_topics_and_records(tmp_path: Path) -> None:
    s = make_state(tmp_path / "d")
    s.create_topic("t", 2, {"retention.ms": "-1"})
    produce(s, "t", batch([b"a", b"b"]))
    topic_id = s.topics["t"].topic_id
    s.close()
    again = make_state(tmp_path / "d")
    try:
        assert again.topics["t"].topic_id == topic_id
        assert again.topics["t"].configs == {"retention.ms": "-1"}
        assert len(again.topics["t"].partitions) == 2
        data = fetch(again, "t", 0).responses[0].partitions[0]
        assert [bytes(r.value) for b in read_batches(data.records) for r in b.records()] == [
            b"a",
            b"b",
        ]
    finally:
        again.close()


def test_api_versions_features_by_version(tmp_path: Path) -> None:
    new = make_state(tmp_path / "new", "4.3")
    old = make_state(tmp_path / "old", "3.9")
    try:
        v4 = call(new, "ApiVersions", 4, client_software_name="t", client_software_version="1")
        assert {(f.name, f.min_version, f.max_version) for f in v4.supported_features} >= {
            ("group.version", 0, 1)
        }
        assert {(f.name, f.max_version_level) for f in v4.finalized_features} >= {
            ("group.version", 1)
        }
        # v3 leaves out features whose lowest version is 0 (old clients reject them)
        v3 = call(new, "ApiVersions", 3, client_software_name="t", client_software_version="1")
        assert "group.version" not in {f.name for f in v3.supported_features}
        # a 3.9 KRaft broker finalizes metadata.version at its highest level
        md = call(old, "ApiVersions", 3, client_software_name="t", client_software_version="1")
        (level,) = [
            f.max_version_level for f in md.finalized_features if f.name == "metadata.version"
        ]
        assert level == old.personality.supported_features["metadata.version"][1]
    finally:
        new.close()
        old.close()


def test_restart_moves_the_high_watermark_to_the_log_end(tmp_path: Path) -> None:
    # A crash can leave replication-offset-checkpoint behind the log (it is written every few
    # seconds); the only replica is the whole ISR, so on start the high watermark is the log end,
    # or read_committed consumers would stop at the stale value.
    s = make_state(tmp_path / "d")
    s.create_topic("t", 1)
    for i in range(3):
        produce(s, "t", batch([b"v%d" % i]))
    s.close()
    checkpoint = tmp_path / "d" / "replication-offset-checkpoint"
    text = checkpoint.read_text()
    assert "t 0 3" in text
    checkpoint.write_text(text.replace("t 0 3", "t 0 1"))
    again = make_state(tmp_path / "d")
    try:
        assert again.topics["t"].partitions[0].high_watermark == 3
        data = fetch(again, "t", 0).responses[0].partitions[0]
        assert data.high_watermark == 3 and len(list(read_batches(data.records))) == 3
    finally:
        again.close()
