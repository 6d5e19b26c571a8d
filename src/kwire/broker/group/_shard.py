"""The group coordinator shard: every group of this node, classic and KIP-848, and their offsets.

Approach: Kafka's ``GroupCoordinatorShard``. One map of groups by id, of two kinds (a classic
``Group`` and a KIP-848 ``ConsumerGroup``, each with its committed offsets; a group known only by
its offsets is an empty classic one); three managers that decide (``ClassicGroups``: JoinGroup /
SyncGroup / Heartbeat / LeaveGroup; ``ConsumerGroups``: ConsumerGroupHeartbeat;
``OffsetMetadataManager``: commits, fetches, deletes, retention); and one ``CoordinatorRuntime``
that writes the records each operation gives to the group's partition of ``__consumer_offsets``
(``abs(groupId.hashCode()) % n``) and replays them. ``replay`` turns a record into state: the
runtime calls it after an append (for the records that ask for it; a classic-group operation
changes its group itself, as in Kafka), and ``load`` calls it for every record of the topic at
start (``loadGroupsAndOffsets``), transactional offsets settled by their markers. The records are Kafka 3.9's (``_records``): OffsetCommitKey v1 +
OffsetCommitValue v3 (v1 with a retention time), GroupMetadataKey v2 + GroupMetadataValue v3,
the consumer group's key versions 3..8, ``null`` values as tombstones.

The handlers (``_group_apis``) call this class; ``group_coordinator(state)`` makes, loads and
registers it (``state.services.group``) on first use, its ``tick`` run every 100 ms.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import Final

from kwire._wire import random_uuid
from kwire.broker._state import BrokerState, Partition, Topic, partition_for
from kwire.broker.group._classic import DEAD, EMPTY, STABLE, Group, Member
from kwire.broker.group._classic_groups import ClassicGroups
from kwire.broker.group._consumer import ConsumerGroup
from kwire.broker.group._consumer_groups import ConsumerGroups
from kwire.broker.group._offsets import OffsetMetadataManager
from kwire.broker.group._records import (
    GROUP_METADATA_KEY,
    GROUP_METADATA_VALUE,
    OFFSET_COMMIT_KEY,
    OffsetAndMetadata,
    Record,
    Write,
    consumer_group_tombstones,
    decode_offset,
    group_key,
    offset_key,
)
from kwire.broker.group._runtime import (
    BrokerOffsetsLog,
    CoordinatorRuntime,
    MemoryOffsetsLog,
    OffsetsLog,
)
from kwire.broker.group._streams import StreamsGroups
from kwire.broker.group._streams_records import KEY_VERSIONS as STREAMS_KEY_VERSIONS
from kwire.broker.group._streams_records import tombstones as streams_tombstones
from kwire.log.internal_topics import (
    CONSUMER_OFFSETS,
    COORDINATOR_TOPICS,
    java_hash_map_order,
    read_version,
)
from kwire.protocol import ErrorCode
from kwire.records import Batch
from kwire.records._control import parse_control_key

__all__ = ["GroupCoordinator", "group_coordinator"]

_DEFAULTS: Final = {
    "offsets.topic.num.partitions": 50,
    "group.initial.rebalance.delay.ms": 3000,
    "group.min.session.timeout.ms": 6000,
    "group.max.session.timeout.ms": 1800000,
    "offset.metadata.max.bytes": 4096,
    "group.max.size": 2**31 - 1,
    "offsets.retention.minutes": 10080,
    "offsets.retention.check.interval.ms": 600_000,
}


class GroupCoordinator:
    """All groups of this node, their offsets and ``__consumer_offsets`` (module doc).

    Without a broker ``state`` (property tests) the records go to a ``MemoryOffsetsLog``, or
    to the ``log`` given: every path writes and replays as the broker does."""

    def __init__(
        self,
        state: BrokerState | None,
        *,
        config: Mapping[str, str] | None = None,
        notify: Callable[[Hashable], None] | None = None,
        log: OffsetsLog | None = None,
    ) -> None:
        self.state = state
        #: member ids come from the broker's seeded random source (a property test replays)
        self.random = state.random if state is not None else random.Random(0)
        conf = dict(state.static_config if state is not None else {})
        conf.update(config or {})
        self.config = conf
        #: both kinds of group by id: classic (with the offsets-only ones) and KIP-848
        self.groups: dict[str, Group | ConsumerGroup] = {}
        self._notify = notify or (state.notify if state is not None else (lambda key: None))
        if log is None:
            partitions = self.conf("offsets.topic.num.partitions")
            log = (
                BrokerOffsetsLog(state, partitions)
                if state is not None
                else MemoryOffsetsLog(partitions)
            )
        self.runtime = CoordinatorRuntime(log, self.replay)
        self.classic = ClassicGroups(self)
        self.consumer = ConsumerGroups(self)
        self.offsets = OffsetMetadataManager(self)
        #: the KIP-1071 streams groups (``_streams``), apart: they share only the id space
        self.streams = StreamsGroups(self)
        # the requests, wired once to the manager that decides them; the runtime writes the
        # records each returns
        run = self.runtime.run
        self.join = run(self.classic.join)
        self.sync = run(self.classic.sync)
        self.heartbeat = self.classic.heartbeat
        self.leave = run(self.classic.leave)
        self.validate_offset_commit = self.offsets.validate_offset_commit
        self.commit_offsets = run(self.offsets.commit_offsets)
        self.stage_txn_offsets = run(self.offsets.stage_txn_offsets)
        self.complete_txn = self.offsets.complete_txn
        self.fetch_offsets = self.offsets.fetch_offsets
        self.delete_offsets = run(self.offsets.delete_offsets)
        self.cleanup_group_metadata = run(self.offsets.cleanup_group_metadata)
        self.on_partitions_deleted = run(self.offsets.on_partitions_deleted)
        self.delete_group = run(self._delete_group)
        # the first check one interval after the coordinator starts; without a broker (no clock
        # yet) one interval after its first tick
        self._next_offsets_cleanup: int | None = (
            None
            if state is None
            else self.now_ms() + self.conf("offsets.retention.check.interval.ms")
        )

    # --- configuration ------------------------------------------------------------------------

    def uuid4(self) -> uuid.UUID:
        """A random (version 4) UUID from the shard's random source."""
        return random_uuid(self.random)

    def conf(self, name: str) -> int:
        value = self.config.get(name)
        return int(value) if value is not None else int(_DEFAULTS[name])

    @property
    def num_partitions(self) -> int:
        return self.runtime.log.num_partitions()

    def partition_for(self, group_id: str) -> int:
        return partition_for(group_id, self.num_partitions)

    def now_ms(self) -> int:
        return self.state.now_ms() if self.state is not None else 0

    def batched(self, group_ids: Iterable[str], *, classic: bool = False) -> list[str]:
        """``group_ids`` in the order ``GroupCoordinatorService`` answers a batch of them
        (DescribeGroups, DeleteGroups, Consumer/Share/StreamsGroupDescribe): grouped by
        ``__consumer_offsets`` partition, the partitions in its ``HashMap``'s order
        (``java_hash_map_order``), the request's order within a partition. ``classic``: an API
        the old coordinator served before Kafka 4.0, in the request's order."""
        ids = list(group_ids)
        if classic and self.state is not None:
            major = int(self.state.personality.release.split(".")[0])
            if major < 4:
                return ids
        by_partition: dict[int, list[str]] = {}
        for group_id in ids:
            by_partition.setdefault(self.partition_for(group_id), []).append(group_id)
        order = java_hash_map_order([(CONSUMER_OFFSETS, p) for p in by_partition])
        return [group_id for _, p in order for group_id in by_partition[p]]

    def classic_group(self, group_id: str) -> Group | None:
        """The classic group of that id (None for a consumer group)."""
        group = self.groups.get(group_id)
        return group if isinstance(group, Group) else None

    def moved(self, group_id: str) -> None:
        """The group changed: wake the responses parked on it."""
        self._notify(("group", group_id))

    # --- timers -------------------------------------------------------------------------------

    def tick(self, now_ms: int) -> None:
        """Expire sessions, pending members and rebalance deadlines (every 100 ms), and offsets
        (every ``offsets.retention.check.interval.ms``)."""
        self.consumer.tick(now_ms)
        if self._next_offsets_cleanup is None:
            self._next_offsets_cleanup = now_ms + self.conf("offsets.retention.check.interval.ms")
        if now_ms >= self._next_offsets_cleanup:
            self._next_offsets_cleanup = now_ms + self.conf("offsets.retention.check.interval.ms")
            self.cleanup_group_metadata(now_ms)
        for group in list(self.groups.values()):
            if isinstance(group, Group):
                self.runtime.run(self.classic.run_timers)(group, now_ms)

    def expire_due(self, group_id: str, now_ms: int) -> None:
        """Run the group's timers that are due before a request looks at it: Kafka keeps a
        timer per member (and per rebalance), which fires at its deadline; ``tick`` runs every
        100 ms, so a request just after a deadline would otherwise see the member still there
        (a DeleteGroups answered NON_EMPTY_GROUP, a heartbeat accepted)."""
        group = self.groups.get(group_id)
        if group is None:
            return
        if isinstance(group, ConsumerGroup):
            self.consumer.run_timers(group, now_ms)
        else:
            self.runtime.run(self.classic.run_timers)(group, now_ms)

    # --- deletion -----------------------------------------------------------------------------

    def _delete_group(self, out: list[Write], group_id: str, now_ms: int) -> ErrorCode:
        """``GroupMetadataManager.deleteGroups``: only an empty (or dead) group."""
        self.expire_due(group_id, now_ms)
        streams = self.streams.groups.get(group_id)
        if streams is not None:  # StreamsGroup.validateDeleteGroup, createGroupTombstoneRecords
            self.streams.expire(group_id, now_ms)
            if streams.members:
                return ErrorCode.NON_EMPTY_GROUP
            out.append(Write(group_id, streams_tombstones(streams), now_ms, replay=True))
        group = self.groups.get(group_id)
        if streams is not None and group is None:
            return ErrorCode.NONE  # no committed offsets to delete
        if group is None or group.state == DEAD:  # the empty id too (GroupCoordinatorService)
            return ErrorCode.GROUP_ID_NOT_FOUND
        if group.state != EMPTY:  # a consumer group too: Empty when it has no members
            return ErrorCode.NON_EMPTY_GROUP
        records: list[Record] = [(offset_key(group_id, tp), None) for tp in sorted(group.offsets)]
        if isinstance(group, ConsumerGroup):
            records += consumer_group_tombstones(group)
            self.consumer.forget(group_id)
        else:
            records.append((group_key(group_id), None))
            group.state = DEAD
        out.append(Write(group_id, records, now_ms))
        del self.groups[group_id]
        return ErrorCode.NONE

    # --- persistence --------------------------------------------------------------------------

    def offsets_partition(self, group_id: str) -> Partition | None:
        """The group's partition of the broker's ``__consumer_offsets``, created on first use."""
        log = self.runtime.log
        return log.partition(group_id) if isinstance(log, BrokerOffsetsLog) else None

    def load(self) -> None:
        """Replay ``__consumer_offsets`` (``GroupMetadataManager.loadGroupsAndOffsets``)."""
        now = self.now_ms()
        self.runtime.load(lambda batches: self._load_partition(batches, now))

    def _load_partition(self, batches: Iterable[Batch], now_ms: int) -> None:
        pending: dict[int, list[tuple[str, tuple[str, int], OffsetAndMetadata | None]]] = {}
        for batch in batches:
            if batch.is_control:
                for record in batch:
                    _, control_type = parse_control_key(record.key)
                    staged = pending.pop(batch.producer_id, [])
                    if control_type == 1:  # COMMIT
                        for group_id, tp, om in staged:
                            group = self.loaded_group(group_id, now_ms)
                            if om is not None:
                                group.offsets[tp] = om
                continue
            for record in batch:
                if record.key is None:
                    continue
                self._replay_loaded(
                    bytes(record.key),
                    None if record.value is None else bytes(record.value),
                    batch.producer_id if batch.is_transactional else None,
                    pending,
                    now_ms,
                )
        for pid, staged in pending.items():
            for group_id, tp, om in staged:
                if om is not None:
                    self.loaded_group(group_id, now_ms).pending_txn.setdefault(pid, {})[tp] = om

    def loaded_group(self, group_id: str, now_ms: int) -> Group | ConsumerGroup:
        """The group of that id, of either kind; an empty classic group when there is none (a
        group known by its offsets only)."""
        group = self.groups.get(group_id)
        if group is None:
            group = self.groups[group_id] = Group(group_id, state_timestamp=now_ms)
        return group

    def replay(self, key: bytes, value: bytes | None, now_ms: int) -> None:
        """One record of the topic, not in a transaction (``GroupCoordinatorShard.replay``)."""
        self._replay_loaded(key, value, None, {}, now_ms)

    def _replay_loaded(
        self,
        key: bytes,
        value: bytes | None,
        txn_pid: int | None,
        pending: dict[int, list[tuple[str, tuple[str, int], OffsetAndMetadata | None]]],
        now_ms: int,
    ) -> None:
        key_version = read_version(key)[0]
        if key_version in (0, 1):
            k = OFFSET_COMMIT_KEY.decode(memoryview(key)[2:], key_version)
            tp = (k.topic, k.partition)
            om = None if value is None else decode_offset(value)
            if txn_pid is not None:
                pending.setdefault(txn_pid, []).append((k.group, tp, om))
                return
            group = self.loaded_group(k.group, now_ms)
            if om is None:
                group.offsets.pop(tp, None)
                for staged in group.pending_txn.values():  # as Kafka's replay of a tombstone
                    staged.pop(tp, None)
            else:
                group.offsets[tp] = om
        elif key_version == 2:
            gk = GROUP_METADATA_KEY.decode(memoryview(key)[2:], 2)
            if value is None:
                dropped = self.groups.pop(gk.group, None)
                if dropped is not None and (dropped.offsets or dropped.pending_txn):
                    self.groups[gk.group] = Group(
                        gk.group, offsets=dropped.offsets, pending_txn=dropped.pending_txn
                    )
                return
            vv = read_version(value)[0]
            v = GROUP_METADATA_VALUE.decode(memoryview(value)[2:], min(vv, 4))
            found = self.loaded_group(gk.group, now_ms)
            if isinstance(found, ConsumerGroup):  # now a classic group; the offsets stay
                found = self.groups[gk.group] = Group(
                    gk.group, state_timestamp=now_ms, offsets=found.offsets,
                    pending_txn=found.pending_txn,
                )  # fmt: skip
            group = found
            group.generation_id = v.generation
            group.protocol_type = v.protocol_type or None
            group.protocol_name = v.protocol
            group.leader_id = v.leader
            # when it entered its state (Empty: the base of offset retention); -1: unknown
            group.state_timestamp = v.current_state_timestamp if vv >= 2 else -1
            group.members.clear()
            group.static_members.clear()
            for mm in v.members:
                member = Member(
                    mm.member_id,
                    mm.group_instance_id,
                    mm.client_id,
                    mm.client_host,
                    mm.rebalance_timeout if vv >= 1 else mm.session_timeout,
                    mm.session_timeout,
                    v.protocol_type,
                    [(v.protocol or "", bytes(mm.subscription))],
                    assignment=bytes(mm.assignment),
                    heartbeat_deadline=now_ms + mm.session_timeout,
                )
                group.members[member.member_id] = member
                if member.group_instance_id is not None:
                    group.static_members[member.group_instance_id] = member.member_id
            group.state = STABLE if group.members else EMPTY
        elif 3 <= key_version <= 8:
            self.consumer.replay(key_version, key, value, now_ms)
        elif key_version in STREAMS_KEY_VERSIONS:
            self.streams.replay(key_version, key, value, now_ms)

    # --- describe -----------------------------------------------------------------------------

    def list_groups(self, now_ms: int | None = None) -> list[Group | ConsumerGroup]:
        """The classic and consumer groups; a streams group's committed offsets, kept in a
        classic holder, are not a group of their own (``list_streams_groups``)."""
        if now_ms is not None:
            for group_id in list(self.groups):
                self.expire_due(group_id, now_ms)
        return [
            g
            for g in self.groups.values()
            if g.state != DEAD and g.group_id not in self.streams.groups
        ]

    def list_streams_groups(self, now_ms: int) -> list[tuple[str, str]]:
        """(group id, state) of each streams group (``StreamsGroup.state``)."""
        out = []
        for group_id in list(self.streams.groups):
            self.streams.expire(group_id, now_ms)
            group = self.streams.groups.get(group_id)
            if group is not None:
                out.append((group_id, group.state(self.streams.configured(group))))
        return out


def group_coordinator(state: BrokerState) -> GroupCoordinator:
    """The state's group coordinator (``state.services.group``), made and loaded on first use."""
    found = state.services.group
    if found is not None:
        return found
    coordinator = GroupCoordinator(state)
    coordinator.load()
    state.services.group = coordinator
    state.add_ticker(coordinator.tick)

    def offsets_deleted(topic: Topic) -> None:
        # a deleted topic's committed offsets go too (GroupCoordinatorShard.onPartitionsDeleted,
        # run when the metadata image no longer has them)
        if topic.name not in COORDINATOR_TOPICS:
            deleted = [(topic.name, p.index) for p in topic.partitions]
            coordinator.on_partitions_deleted(deleted, state.now_ms())

    state.on_topic_deleted(offsets_deleted)
    return coordinator
