"""The share coordinator's operations on ``__share_group_state``: initialize, read, write, delete and
summarize one share partition's state (KIP-932).

Approach, after Kafka's ``ShareCoordinatorShard`` (``initializeState``, ``readStateAndMaybeUpdate
LeaderEpoch``, ``writeState``, ``deleteState``, ``readStateSummary``) and the persister
(``DefaultStatePersister``) that the group coordinator and the share-partition leaders call: each
operation checks the request against what the topic holds (``ShareCoordinator.stored``, replayed
from the records), returns its error or the records to append, and ``_share_service.write_records``
appends them and replays them into the same store. The share-group state APIs (83-87) answer from
these functions, and so do AlterShareGroupOffsets/DeleteShareGroupOffsets; the broker's share
fetch path writes its snapshots through ``write_state`` too (``flush_share_state``).

A share-partition leader's live state (``ShareCoordinator.partitions``) is dropped when an
operation replaces or removes the stored state under it (initialize, delete), so the next fetch
loads the new state, as Kafka's leader does when its state epoch is fenced.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from kwire.broker._share_group import ShareCoordinator
from kwire.broker._share_partition import RecordState
from kwire.broker._share_service import share_coordinator, write_records
from kwire.broker._share_state import (
    Batch,
    StoredState,
    merge_batches,
    snapshot_value,
    tombstone,
)
from kwire.broker._state import BrokerState
from kwire.protocol import ErrorCode

__all__ = [
    "StateError",
    "delete_state",
    "initialize_state",
    "read_state",
    "read_state_summary",
    "write_state",
]

Key = tuple[str, uuid.UUID, int]

#: ``PartitionFactory.DEFAULT_LEADER_EPOCH``: the leader epoch of state nobody leads yet.
NO_LEADER_EPOCH: Final = -1


@dataclass(frozen=True)
class StateError:
    """An operation's refusal: Kafka's error code and message."""

    error: ErrorCode
    message: str


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


def _drop_live(coordinator: ShareCoordinator, key: Key) -> None:
    coordinator.partitions.pop(key, None)
    coordinator.written.pop(key, None)


def initialize_state(
    state: BrokerState, key: Key, state_epoch: int, start_offset: int
) -> StateError | None:
    """``ShareCoordinatorShard.initializeState``: a fresh snapshot at ``start_offset`` with nothing
    in flight, unless the stored state has a newer state epoch (FENCED_STATE_EPOCH)."""
    problem = _check_partition(state, key)
    if problem is not None:
        return problem
    coordinator = share_coordinator(state)
    stored = coordinator.stored.get(key)
    if stored is not None and stored.state_epoch > state_epoch:
        return StateError(
            ErrorCode.FENCED_STATE_EPOCH,
            f"Initialize request state epoch {state_epoch} is "
            f"older than the current one {stored.state_epoch}.",
        )
    now = state.now_ms()
    fresh = StoredState(
        start_offset=start_offset,
        state_epoch=state_epoch,
        snapshot_epoch=0 if stored is None else stored.snapshot_epoch + 1,
        create_ms=now,
    )
    write_records(state, coordinator, [(key, *snapshot_value(key, fresh, NO_LEADER_EPOCH, now))])
    _drop_live(coordinator, key)
    return None


def read_state(
    state: BrokerState, key: Key, leader_epoch: int | None = None
) -> StoredState | StateError:
    """``ShareCoordinatorShard.readStateAndMaybeUpdateLeaderEpoch``: the stored state. A state
    never written reads as start offset -1 (``PartitionFactory.UNINITIALIZED_START_OFFSET``);
    ``leader_epoch`` older than the stored one is FENCED_LEADER_EPOCH, newer is recorded."""
    problem = _check_partition(state, key)
    if problem is not None:
        return problem
    coordinator = share_coordinator(state)
    stored = coordinator.stored.get(key)
    if stored is None:
        return StoredState(start_offset=-1, leader_epoch=NO_LEADER_EPOCH)
    if leader_epoch is not None and leader_epoch != -1:
        if leader_epoch < stored.leader_epoch:
            return StateError(ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.FENCED_LEADER_EPOCH.message)
        if leader_epoch > stored.leader_epoch:
            bumped = StoredState(
                start_offset=stored.start_offset,
                state_epoch=stored.state_epoch,
                snapshot_epoch=stored.snapshot_epoch + 1,
                create_ms=stored.create_ms,
                batches=list(stored.batches),
                leader_epoch=leader_epoch,
            )
            write_records(
                state,
                coordinator,
                [(key, *snapshot_value(key, bumped, leader_epoch, state.now_ms()))],
            )
            return coordinator.stored[key]
    return stored


def write_state(
    state: BrokerState,
    key: Key,
    *,
    state_epoch: int,
    leader_epoch: int,
    start_offset: int,
    batches: Iterable[Batch],
    replace: bool = False,
) -> StateError | None:
    """``ShareCoordinatorShard.writeState``: the batches (and a start offset unless -1) merged over
    the stored state, written as a new snapshot; ``replace``: the batches are the whole state (the
    broker's own leader writes that way). A state epoch or leader epoch older than the stored one
    is fenced."""
    problem = _check_partition(state, key)
    if problem is not None:
        return problem
    coordinator = share_coordinator(state)
    stored = coordinator.stored.get(key)
    if stored is not None:
        if state_epoch < stored.state_epoch:
            return StateError(ErrorCode.FENCED_STATE_EPOCH, ErrorCode.FENCED_STATE_EPOCH.message)
        if leader_epoch != -1 and leader_epoch < stored.leader_epoch:
            return StateError(ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.FENCED_LEADER_EPOCH.message)
    now = state.now_ms()
    new = list(batches)
    if stored is None or replace:
        start = start_offset
        merged = new
    else:
        start = stored.start_offset if start_offset == -1 else start_offset
        merged = merge_batches(stored.batches, new)
    merged = [(max(f, start), last, k, c) for f, last, k, c in merged if last >= start]
    written = StoredState(
        start_offset=start,
        state_epoch=state_epoch,
        snapshot_epoch=0 if stored is None else stored.snapshot_epoch + 1,
        create_ms=now if stored is None else stored.create_ms,
        batches=merged,
        leader_epoch=leader_epoch if leader_epoch != -1 or stored is None else stored.leader_epoch,
    )
    write_records(
        state, coordinator, [(key, *snapshot_value(key, written, written.leader_epoch, now))]
    )
    return None


def delete_state(state: BrokerState, keys: Iterable[Key]) -> dict[Key, StateError | None]:
    """``ShareCoordinatorShard.deleteState``: a tombstone for each stored state (a state never
    written deletes as done); the live share partitions go too."""
    coordinator = share_coordinator(state)
    out: dict[Key, StateError | None] = {}
    records: list[tuple[Key, bytes, bytes | None]] = []
    for key in keys:
        problem = _check_partition(state, key)
        out[key] = problem
        if problem is None:
            if key in coordinator.stored:
                records.append((key, *tombstone(key)))
            _drop_live(coordinator, key)
    if records:
        write_records(state, coordinator, records)
    return out


def read_state_summary(state: BrokerState, key: Key) -> tuple[StoredState, int] | StateError:
    """``ShareCoordinatorShard.readStateSummary``: the stored state and its delivery-complete
    count (offsets past the start acknowledged or archived); -1 start offset when none."""
    found = read_state(state, key)
    if isinstance(found, StateError):
        return found
    complete = sum(
        last - first + 1
        for first, last, kind, _ in found.batches
        if kind in (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED)
    )
    return found, complete
