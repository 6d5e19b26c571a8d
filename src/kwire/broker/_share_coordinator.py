"""The share coordinator's operations on ``__share_group_state``: initialize, read, write, delete
and summarize one share partition's state (KIP-932).

Approach, after Kafka's ``ShareCoordinatorShard`` (``initializeState``,
``readStateAndMaybeUpdateLeaderEpoch``, ``writeState``, ``deleteState``, ``readStateSummary``)
and the persister (``DefaultStatePersister``) that the group coordinator and the share-partition
leaders call, in the KIP-848 style (style rule 31): each operation checks the request against
what the topic holds (``ShareCoordinator.stored``, replayed from the records) and returns its
refusal, or adds the records it decided to a ``Changes``; ``apply`` appends them to the state
topic, one batch per partition, and replays them into the same store (the replay that loads the
topic at start).

One implementation: the share-group state APIs (83-87) answer from these functions,
AlterShareGroupOffsets/DeleteShareGroupOffsets initialize and delete through them, and the
broker's own share-partition leaders write their snapshots with ``write_state``
(``_share_service.flush_share_state``). A leader's live state (``ShareCoordinator.partitions``)
is dropped when an operation replaces or removes the stored state under it (initialize, delete),
so the next fetch loads the new state, as Kafka's leader does when its state epoch is fenced.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import field
from typing import Final

from kwire._lazy import lazy_dataclass
from kwire.broker._share_group import ShareCoordinator
from kwire.broker._share_partition import RecordState
from kwire.broker._share_state import (
    STATE_TOPIC,
    Batch,
    StoredState,
    coordinator_key,
    merge_batches,
    replay,
    snapshot_value,
    tombstone,
)
from kwire.broker._state import BrokerState, Partition, partition_for
from kwire.protocol import ErrorCode
from kwire.records import BatchBuilder

__all__ = [
    "Changes",
    "StateError",
    "apply",
    "delete_state",
    "initialize_state",
    "on_topic_deleted",
    "read_state",
    "read_state_summary",
    "write_state",
]

Key = tuple[str, uuid.UUID, int]

#: ``PartitionFactory.DEFAULT_LEADER_EPOCH`` / ``UNINITIALIZED_START_OFFSET`` /
#: ``DEFAULT_STATE_EPOCH``: what a share partition without stored state reads as.
NO_LEADER_EPOCH: Final = -1
NO_START_OFFSET: Final = -1
NO_STATE_EPOCH: Final = 0


@lazy_dataclass(frozen=True)
class StateError:
    """An operation's refusal: Kafka's error code and message."""

    error: ErrorCode
    message: str


@lazy_dataclass
class Changes:
    """What operations decided: the records to append and the live share partitions to drop once
    they are."""

    records: list[tuple[Key, bytes, bytes | None]] = field(default_factory=list)
    reset: list[Key] = field(default_factory=list)


def _check_partition(state: BrokerState, key: Key) -> StateError | None:
    """``ShareCoordinatorShard.maybeGet*Error``'s common checks: a partition index that is not
    negative, of a topic the metadata knows."""
    _, topic_id, index = key
    if index < 0:
        return StateError(ErrorCode.INVALID_REQUEST, "Partition id cannot be negative.")
    topic = state.topics_by_id.get(topic_id)
    if topic is None or index >= len(topic.partitions):
        return StateError(
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION.message
        )
    return None


def _fenced(error: ErrorCode) -> StateError:
    return StateError(error, error.message)


def initialize_state(
    state: BrokerState,
    coordinator: ShareCoordinator,
    changes: Changes,
    key: Key,
    state_epoch: int,
    start_offset: int,
) -> StateError | None:
    """``ShareCoordinatorShard.initializeState``: a fresh snapshot at ``start_offset`` with nothing
    in flight, unless the stored state has a newer state epoch (FENCED_STATE_EPOCH)."""
    problem = _check_partition(state, key)
    if problem is not None:
        return problem
    stored = coordinator.stored.get(key)
    if stored is not None and stored.state_epoch > state_epoch:
        return _fenced(ErrorCode.FENCED_STATE_EPOCH)
    now = state.now_ms()
    fresh = StoredState(
        start_offset=start_offset,
        state_epoch=state_epoch,
        snapshot_epoch=0 if stored is None else stored.snapshot_epoch + 1,
        create_ms=now,
        leader_epoch=NO_LEADER_EPOCH,
    )
    changes.records.append((key, *snapshot_value(key, fresh, NO_LEADER_EPOCH, now)))
    changes.reset.append(key)
    return None


def read_state(
    state: BrokerState,
    coordinator: ShareCoordinator,
    changes: Changes,
    key: Key,
    leader_epoch: int,
) -> StoredState | StateError:
    """``ShareCoordinatorShard.readStateAndMaybeUpdateLeaderEpoch``: the stored state (start offset
    -1 and state epoch 0 when none). A leader epoch older than the stored one is
    FENCED_LEADER_EPOCH; a newer one is recorded (a snapshot carrying it), -1 reads without."""
    problem = _check_partition(state, key)
    if problem is not None:
        return problem
    stored = coordinator.stored.get(key)
    if stored is None:
        return StoredState(
            start_offset=NO_START_OFFSET, state_epoch=NO_STATE_EPOCH, leader_epoch=NO_LEADER_EPOCH
        )
    if leader_epoch != -1 and leader_epoch < stored.leader_epoch:
        return _fenced(ErrorCode.FENCED_LEADER_EPOCH)
    if leader_epoch > stored.leader_epoch:
        bumped = StoredState(
            start_offset=stored.start_offset,
            state_epoch=stored.state_epoch,
            snapshot_epoch=stored.snapshot_epoch + 1,
            create_ms=stored.create_ms,
            batches=list(stored.batches),
            leader_epoch=leader_epoch,
        )
        changes.records.append((key, *snapshot_value(key, bumped, leader_epoch, state.now_ms())))
    return stored


def write_state(
    state: BrokerState,
    coordinator: ShareCoordinator,
    changes: Changes,
    key: Key,
    *,
    state_epoch: int,
    leader_epoch: int,
    start_offset: int,
    batches: Iterable[Batch],
    replace: bool = False,
) -> StateError | None:
    """``ShareCoordinatorShard.writeState``: the batches (and the start offset unless -1) merged
    over the stored state, as a new snapshot; ``replace``: the batches are the whole in-flight
    state (the broker's own share-partition leaders write that way). A state or leader epoch older
    than the stored one is fenced (-1: keep the stored one)."""
    problem = _check_partition(state, key)
    if problem is not None:
        return problem
    stored = coordinator.stored.get(key)
    if stored is not None:
        if state_epoch != -1 and state_epoch < stored.state_epoch:
            return _fenced(ErrorCode.FENCED_STATE_EPOCH)
        if leader_epoch != -1 and leader_epoch < stored.leader_epoch:
            return _fenced(ErrorCode.FENCED_LEADER_EPOCH)
    now = state.now_ms()
    new = list(batches)
    if stored is None or replace:
        start, merged = start_offset, new
    else:
        start = stored.start_offset if start_offset == -1 else start_offset
        merged = merge_batches(stored.batches, new)
    written = StoredState(
        start_offset=start,
        state_epoch=stored.state_epoch if stored and state_epoch == -1 else state_epoch,
        snapshot_epoch=0 if stored is None else stored.snapshot_epoch + 1,
        create_ms=now if stored is None else stored.create_ms,
        batches=[(max(f, start), last, k, c) for f, last, k, c in merged if last >= start],
        leader_epoch=stored.leader_epoch if stored and leader_epoch == -1 else leader_epoch,
    )
    changes.records.append((key, *snapshot_value(key, written, written.leader_epoch, now)))
    return None


def delete_state(
    state: BrokerState, coordinator: ShareCoordinator, changes: Changes, key: Key
) -> StateError | None:
    """``ShareCoordinatorShard.deleteState``: a tombstone for the stored state (a state never
    written deletes as done); the live share partition goes too."""
    problem = _check_partition(state, key)
    if problem is not None:
        return problem
    if key in coordinator.stored:
        changes.records.append((key, *tombstone(key)))
    changes.reset.append(key)
    return None


def on_topic_deleted(coordinator: ShareCoordinator, changes: Changes, topic_id: uuid.UUID) -> None:
    """``ShareCoordinatorShard.onTopicsDeleted`` (KAFKA-19201, Kafka 4.1): tombstones for the
    state of every share partition of a deleted topic, in every group, and its live share
    partitions go (the partition check of ``delete_state`` would refuse a topic already gone)."""
    keys = {k for k in coordinator.stored if k[1] == topic_id}
    keys |= {k for k in coordinator.partitions if k[1] == topic_id}
    for key in sorted(keys, key=lambda k: (k[0], k[2])):
        if key in coordinator.stored:
            changes.records.append((key, *tombstone(key)))
        changes.reset.append(key)


def read_state_summary(
    state: BrokerState, coordinator: ShareCoordinator, key: Key
) -> tuple[StoredState, int] | StateError:
    """``ShareCoordinatorShard.readStateSummary``: the stored state and its delivery-complete count
    (offsets past the start acknowledged or archived); start offset -1 when none. A summary reads
    without recording a leader epoch."""
    found = read_state(state, coordinator, Changes(), key, -1)
    if isinstance(found, StateError):
        return found
    complete = sum(
        last - first + 1
        for first, last, kind, _ in found.batches
        if kind in (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED)
    )
    return found, complete


# --- the runtime: append what was decided, replay it ---------------------------------------------


def _state_partition(state: BrokerState, key: Key) -> Partition:
    """The partition of ``__share_group_state`` holding ``key``'s state, the topic made on first
    use (``share.coordinator.state.topic.*``: 50 partitions, compacted, as Kafka makes it)."""
    topic = state.topics.get(STATE_TOPIC)
    if topic is None:
        topic = state.create_topic(
            STATE_TOPIC,
            int(state.static_config.get("share.coordinator.state.topic.num.partitions", "50")),
            {
                "cleanup.policy": "compact",
                "segment.bytes": "104857600",
                "compression.type": "producer",
                "min.insync.replicas": "1",
            },
        )
    return topic.partitions[partition_for(coordinator_key(*key), len(topic.partitions))]


def apply(state: BrokerState, coordinator: ShareCoordinator, changes: Changes) -> None:
    """Append the records, one batch per state partition, replay them into the coordinator, and
    drop the live share partitions whose state was replaced or removed."""
    now = state.now_ms()
    by_partition: dict[int, tuple[Partition, list[tuple[bytes, bytes | None]]]] = {}
    for key, record_key, value in changes.records:
        partition = _state_partition(state, key)
        by_partition.setdefault(partition.index, (partition, []))[1].append((record_key, value))
    for partition, pairs in by_partition.values():
        builder = BatchBuilder(2, 0)
        for record_key, value in pairs:
            builder.append(None, now, record_key, value)
        state.append_as_coordinator(partition, builder.build(), now)
        for record_key, value in pairs:
            replay(coordinator.stored, record_key, value)
    for key in changes.reset:
        coordinator.partitions.pop(key, None)
        coordinator.written.pop(key, None)
    changes.records.clear()
    changes.reset.clear()
