"""The coordinator runtime: where the group coordinator's records go, and how they come back.

Approach: Kafka's ``CoordinatorRuntime`` reduced to one process. The shard decides and hands its
records to ``write``; the runtime builds one batch of them (transactional when a producer is
given), appends it to the group's partition of ``__consumer_offsets`` and, when asked, replays
the records into the shard at once. At start ``load`` hands every partition's batches to the
shard's replay, so a restart rebuilds exactly what was written. Where the batches live is an
``OffsetsLog``: the broker's topic (``BrokerOffsetsLog``) or a list in memory (``MemoryOffsetsLog``,
for property tests that run the real write and replay path thousands of times). There is no mode
without one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol

from kwire.broker._state import BrokerState, Partition, partition_for
from kwire.broker.group._records import GROUP_TOPIC, Record
from kwire.records import Batch, BatchBuilder, read_batches

__all__ = ["BrokerOffsetsLog", "CoordinatorRuntime", "MemoryOffsetsLog", "OffsetsLog"]

#: a coordinator record's replay: key, value, now
Replay = Callable[[bytes, bytes | None, int], None]


class OffsetsLog(Protocol):
    """The partitions of ``__consumer_offsets``."""

    def num_partitions(self) -> int: ...

    def append(self, group_id: str, batch: bytes, now_ms: int) -> None: ...

    def partitions(self) -> Iterable[Iterable[Batch]]: ...


class BrokerOffsetsLog:
    """The broker's ``__consumer_offsets`` topic, created (compacted) on first use."""

    def __init__(self, state: BrokerState, default_partitions: int) -> None:
        self.state = state
        self.default_partitions = default_partitions

    def num_partitions(self) -> int:
        topic = self.state.topics.get(GROUP_TOPIC)
        return len(topic.partitions) if topic is not None else self.default_partitions

    def partition(self, group_id: str) -> Partition:
        """The group's partition (``abs(groupId.hashCode()) % n``), the topic made if needed."""
        topic = self.state.topics.get(GROUP_TOPIC)
        if topic is None:
            topic = self.state.create_topic(
                GROUP_TOPIC,
                self.default_partitions,
                {
                    "cleanup.policy": "compact",
                    "segment.bytes": "104857600",
                    "compression.type": "producer",
                },
            )
        return topic.partitions[partition_for(group_id, len(topic.partitions))]

    def append(self, group_id: str, batch: bytes, now_ms: int) -> None:
        self.state.append_as_coordinator(self.partition(group_id), batch, now_ms)

    def partitions(self) -> Iterable[Iterable[Batch]]:
        topic = self.state.topics.get(GROUP_TOPIC)
        if topic is None:
            return []
        return [partition.log.iter_batches() for partition in topic.partitions]


class MemoryOffsetsLog:
    """``__consumer_offsets`` as lists of batches in memory."""

    def __init__(self, num_partitions: int = 50) -> None:
        self.batches: list[list[bytes]] = [[] for _ in range(num_partitions)]

    def num_partitions(self) -> int:
        return len(self.batches)

    def append(self, group_id: str, batch: bytes, now_ms: int) -> None:
        self.batches[partition_for(group_id, len(self.batches))].append(batch)

    def partitions(self) -> Iterable[Iterable[Batch]]:
        return [(b for raw in batches for b in read_batches(raw)) for batches in self.batches]


class CoordinatorRuntime:
    """Appends a shard's records, replays them, and loads the log at start (module doc)."""

    def __init__(self, log: OffsetsLog, replay: Replay) -> None:
        self.log = log
        self._replay = replay

    def write(
        self,
        group_id: str,
        records: Sequence[Record],
        now_ms: int,
        *,
        producer: tuple[int, int] | None = None,
        replay: bool = False,
    ) -> None:
        """Append ``records`` as one batch to the group's partition; then, with ``replay``,
        apply them to the shard (Kafka's ``CoordinatorResult.replayRecords``: classic-group
        operations change the group themselves and do not replay)."""
        if not records:
            return
        options: dict[str, Any] = {}
        if producer is not None:
            options = {
                "producer_id": producer[0],
                "producer_epoch": producer[1],
                "is_transactional": True,
            }
        builder = BatchBuilder(2, 0, **options)
        for key, value in records:
            builder.append(None, now_ms, key, value)
        self.log.append(group_id, builder.build(), now_ms)
        if replay:
            for key, value in records:
                self._replay(key, value, now_ms)

    def load(self, replay_partition: Callable[[Iterable[Batch]], None]) -> None:
        """Every partition's batches, in order, to the shard (``loadGroupsAndOffsets``)."""
        for batches in self.log.partitions():
            replay_partition(batches)
