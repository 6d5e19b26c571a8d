"""The share coordinator's records: share-partition state in ``__share_group_state`` (KIP-932).

Approach, after Kafka's share-coordinator module (``ShareCoordinatorShard``,
``ShareCoordinatorRecordHelpers``, ``SharePartitionKey``): each (group, topic id, partition) is
one record key, ``ShareSnapshotKey`` (key version 0, the record type) or ``ShareUpdateKey`` (1),
on the partition ``abs(hash("group:topicId:partition")) % partitions`` of the topic. A
``ShareSnapshotValue`` holds the whole state: the share-partition start offset and the in-flight
offsets as state batches (first, last, delivery state 0 AVAILABLE / 2 ACKNOWLEDGED / 4 ARCHIVED,
delivery count); a ``ShareUpdateValue`` holds a change (a new start offset unless -1, and the
batches that changed), applied over the snapshot; a null value (tombstone) deletes the state.

kwire writes snapshots only (every change rewrites the partition's state; compaction keeps the
last) and replays both kinds, so a topic written by Kafka loads too. Offsets a member holds are
written AVAILABLE with their delivery count, as Kafka's persister knows no acquisition: after a
restart they are handed out again; acknowledged ones never are. Sans-IO: bytes in, bytes out.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import field
from typing import Final

from kwire._lazy import lazy_dataclass
from kwire._wire import uuid_text
from kwire.broker._share_partition import InFlight, RecordState, SharePartition
from kwire.log.internal_topics import SHARE_GROUP_STATE, read_version, versioned
from kwire.protocol.messages import (
    ShareSnapshotKey,
    ShareSnapshotValue,
    ShareUpdateKey,
    ShareUpdateValue,
)

__all__ = [
    "STATE_TOPIC",
    "StoredState",
    "coordinator_key",
    "merge_batches",
    "replay",
    "snapshot_record",
    "snapshot_value",
    "state_batches",
    "tombstone",
]

STATE_TOPIC: Final = SHARE_GROUP_STATE
SNAPSHOT: Final = 0  # key version = record type (ShareSnapshotKey)
UPDATE: Final = 1  # ShareUpdateKey

SNAPSHOT_KEY: Final = ShareSnapshotKey
SNAPSHOT_VALUE: Final = ShareSnapshotValue
SNAPSHOT_BATCH: Final = ShareSnapshotValue.StateBatch
UPDATE_KEY: Final = ShareUpdateKey
UPDATE_VALUE: Final = ShareUpdateValue

Key = tuple[str, uuid.UUID, int]
#: (first offset, last offset, delivery state, delivery count)
Batch = tuple[int, int, int, int]


@lazy_dataclass
class StoredState:
    """What the records of one share partition say."""

    start_offset: int
    state_epoch: int = 0
    snapshot_epoch: int = 0
    create_ms: int = 0
    batches: list[Batch] = field(default_factory=list)
    leader_epoch: int = 0

    def in_flight(self) -> dict[int, InFlight]:
        out: dict[int, InFlight] = {}
        for first, last, delivery_state, count in self.batches:
            for offset in range(max(first, self.start_offset), last + 1):
                out[offset] = InFlight(RecordState(delivery_state), count)
        return out


def coordinator_key(group_id: str, topic_id: uuid.UUID, partition: int) -> str:
    """``SharePartitionKey.asCoordinatorKey``: what picks the state topic's partition."""
    return f"{group_id}:{uuid_text(topic_id.bytes)}:{partition}"


def state_batches(share: SharePartition) -> list[Batch]:
    """The in-flight offsets as state batches; ACQUIRED ones as AVAILABLE (see the module doc)."""
    out: list[Batch] = []
    for offset, record in share.in_flight():
        kind = RecordState.AVAILABLE if record.state is RecordState.ACQUIRED else record.state
        if out and out[-1][1] == offset - 1 and out[-1][2:] == (kind, record.delivery_count):
            out[-1] = (out[-1][0], offset, int(kind), record.delivery_count)
        else:
            out.append((offset, offset, int(kind), record.delivery_count))
    return out


def _key(kind: int, key: Key) -> bytes:
    cls = SNAPSHOT_KEY if kind == SNAPSHOT else UPDATE_KEY
    message = cls(group_id=key[0], topic_id=key[1], partition=key[2])
    return versioned(message, kind)


def snapshot_record(
    key: Key,
    share: SharePartition,
    *,
    snapshot_epoch: int,
    state_epoch: int,
    leader_epoch: int,
    create_ms: int,
    now_ms: int,
) -> tuple[bytes, bytes]:
    """``ShareCoordinatorRecordHelpers.newShareSnapshotRecord`` of a live share partition."""
    stored = StoredState(
        start_offset=share.start_offset,
        state_epoch=state_epoch,
        snapshot_epoch=snapshot_epoch,
        create_ms=create_ms,
        batches=state_batches(share),
    )
    return snapshot_value(key, stored, leader_epoch, now_ms)


def snapshot_value(
    key: Key, stored: StoredState, leader_epoch: int, now_ms: int
) -> tuple[bytes, bytes]:
    """``ShareCoordinatorRecordHelpers.newShareSnapshotRecord``: (key, value) bytes."""
    complete = sum(
        last - first + 1
        for first, last, kind, _ in stored.batches
        if kind in (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED)
    )
    value = SNAPSHOT_VALUE(
        snapshot_epoch=stored.snapshot_epoch,
        state_epoch=stored.state_epoch,
        leader_epoch=leader_epoch,
        start_offset=stored.start_offset,
        delivery_complete_count=complete,
        create_timestamp=stored.create_ms,
        write_timestamp=now_ms,
        state_batches=[
            SNAPSHOT_BATCH(
                first_offset=first,
                last_offset=last,
                delivery_state=kind,
                delivery_count=count,
            )
            for first, last, kind, count in stored.batches
        ],
    )
    return _key(SNAPSHOT, key), versioned(value, 0)


def tombstone(key: Key) -> tuple[bytes, None]:
    """The record deleting a share partition's state (its group was deleted)."""
    return _key(SNAPSHOT, key), None


def merge_batches(old: Iterable[Batch], new: list[Batch]) -> list[Batch]:
    """``ShareCoordinatorShard.merge``: the new batches win over the old on the offsets they
    cover."""
    covered = [(first, last) for first, last, _, _ in new]
    out: list[Batch] = []
    for first, last, kind, count in old:
        pieces = [(first, last)]
        for lo, hi in covered:
            cut = []
            for a, b in pieces:
                if hi < a or lo > b:
                    cut.append((a, b))
                    continue
                if a < lo:
                    cut.append((a, lo - 1))
                if b > hi:
                    cut.append((hi + 1, b))
            pieces = cut
        out.extend((a, b, kind, count) for a, b in pieces)
    return sorted(out + new)


def replay(store: dict[Key, StoredState], key: bytes, value: bytes | None) -> None:
    """Apply one record of the state topic to ``store`` (records of other types are skipped)."""
    kind, body = read_version(key)
    if kind not in (SNAPSHOT, UPDATE):
        return
    cls = SNAPSHOT_KEY if kind == SNAPSHOT else UPDATE_KEY
    decoded = cls.decode(body, kind)
    where: Key = (decoded.group_id, decoded.topic_id, decoded.partition)
    if value is None:
        store.pop(where, None)
        return
    version, body = read_version(value)
    if kind == SNAPSHOT:
        snap = SNAPSHOT_VALUE.decode(body, version)
        store[where] = StoredState(
            start_offset=snap.start_offset,
            state_epoch=snap.state_epoch,
            snapshot_epoch=snap.snapshot_epoch,
            create_ms=snap.create_timestamp,
            leader_epoch=snap.leader_epoch,
            batches=[
                (b.first_offset, b.last_offset, b.delivery_state, b.delivery_count)
                for b in snap.state_batches
            ],
        )
        return
    update = UPDATE_VALUE.decode(body, version)
    found = store.get(where)
    if found is None:
        return  # an update without its snapshot: Kafka's shard ignores it too
    if update.start_offset != -1:
        found.start_offset = update.start_offset
    changed = [
        (b.first_offset, b.last_offset, b.delivery_state, b.delivery_count)
        for b in update.state_batches
    ]
    start = found.start_offset
    found.batches = [
        (max(first, start), last, kind, count)
        for first, last, kind, count in merge_batches(found.batches, changed)
        if last >= start
    ]
