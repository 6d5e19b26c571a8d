"""The share coordinator's records (``_share_state``): ShareSnapshot and ShareUpdate keys and values
as Kafka's share-coordinator module lays them out, replayed into share-partition state."""

from __future__ import annotations

import struct
import uuid

from kwire.broker._share_partition import ACCEPT, REJECT, RELEASE, RecordState, SharePartition
from kwire.broker._share_state import (
    StoredState,
    coordinator_key,
    replay,
    snapshot_record,
    state_batches,
    tombstone,
)
from kwire.protocol import message_class, struct_class

TOPIC = uuid.UUID("0b5b3f5c-8f5f-4a8e-9a3c-2d7e3e0e1f10")
KEY = ("g", TOPIC, 3)
NOW = 1_700_000_000_000


def test_coordinator_key_is_kafkas_share_partition_key() -> None:
    # SharePartitionKey.asCoordinatorKey: group, Uuid.toString (URL-safe base64), partition
    assert coordinator_key("g", TOPIC, 3) == "g:C1s_XI9fSo6aPC1-Pg4fEA:3"


def test_snapshot_bytes_replay_into_the_same_state() -> None:
    sp = SharePartition()
    sp.initialize(10)
    sp.acquire("m", [(10, 15, False)], 100, NOW)
    sp.acknowledge("m", 11, 13, [ACCEPT, REJECT, RELEASE], NOW)
    assert state_batches(sp) == [
        (10, 10, 0, 1),  # held by m: written AVAILABLE, delivered once
        (11, 11, 2, 1),
        (12, 12, 4, 1),
        (13, 15, 0, 1),  # released, and held: both available, delivered once
    ]
    key, value = snapshot_record(
        KEY, sp, snapshot_epoch=4, state_epoch=0, leader_epoch=2, create_ms=NOW, now_ms=NOW + 5
    )
    # the key: version 0 (ShareSnapshotKey), GroupId, TopicId, Partition
    assert key == struct.pack(">hh", 0, 1) + b"g" + TOPIC.bytes + struct.pack(">i", 3)
    assert struct.unpack_from(">h", value) == (0,)
    decoded = message_class("ShareSnapshotValue").decode(memoryview(value)[2:], 0)
    assert (decoded.snapshot_epoch, decoded.start_offset, decoded.write_timestamp) == (
        4,
        10,
        NOW + 5,
    )
    assert decoded.delivery_complete_count == 2
    store: dict[tuple[str, uuid.UUID, int], StoredState] = {}
    replay(store, key, value)
    restored = SharePartition()
    restored.restore(store[KEY].start_offset, store[KEY].in_flight())
    assert (restored.start_offset, restored.end_offset) == (10, 16)
    assert [restored.state_of(o) for o in range(10, 16)] == [
        RecordState.AVAILABLE,
        RecordState.ACKNOWLEDGED,
        RecordState.ARCHIVED,
        RecordState.AVAILABLE,
        RecordState.AVAILABLE,
        RecordState.AVAILABLE,
    ]
    assert restored.acquire("n", [(10, 15, False)], 100, NOW)[0].delivery_count == 2
    replay(store, *tombstone(KEY))
    assert store == {}


def test_an_update_applies_over_its_snapshot() -> None:
    sp = SharePartition()
    sp.initialize(0)
    sp.acquire("m", [(0, 9, False)], 100, NOW)
    store: dict[tuple[str, uuid.UUID, int], StoredState] = {}
    replay(
        store,
        *snapshot_record(
            KEY, sp, snapshot_epoch=0, state_epoch=0, leader_epoch=0, create_ms=NOW, now_ms=NOW
        ),
    )
    update_value = message_class("ShareUpdateValue")
    batch = struct_class(update_value, "state_batches")
    value = update_value(
        snapshot_epoch=0,
        leader_epoch=0,
        start_offset=3,
        state_batches=[batch(first_offset=4, last_offset=5, delivery_state=2, delivery_count=1)],
    )
    key = message_class("ShareUpdateKey")(group_id="g", topic_id=TOPIC, partition=3)
    replay(
        store,
        struct.pack(">h", 1) + bytes(key.encode(1)),
        struct.pack(">h", 0) + bytes(value.encode(0)),
    )
    assert store[KEY].start_offset == 3
    assert store[KEY].batches == [(3, 3, 0, 1), (4, 5, 2, 1), (6, 9, 0, 1)]
