"""The coordinator runtime: where the group coordinator's records go, and how they come back.

Approach: Kafka's ``CoordinatorRuntime`` reduced to one process. An operation of the shard decides and
returns its answer with its records (``Write``s, Kafka's ``CoordinatorResult``); ``run`` then
writes them: one batch per ``Write`` (transactional when it names a producer), appended to the
group's partition of ``__consumer_offsets`` and, when asked, replayed into the shard. At start ``load`` hands every partition's batches to the
shard's replay, so a restart rebuilds exactly what was written. Where the batches live is an
``OffsetsLog``: the broker's topic (``BrokerOffsetsLog``) or a list in memory (``MemoryOffsetsLog``,
for property tests that run the real write and replay path thousands of times). There is no mode
without one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Concatenate, Final, ParamSpec, Protocol, TypeVar

from kwire.broker._coordinator_log import CoordinatorTopic, MemoryCoordinatorTopic
from kwire.broker._state import BrokerState
from kwire.broker.group._records import GROUP_TOPIC, Write
from kwire.records import Batch, BatchBuilder

__all__ = ["BrokerOffsetsLog", "CoordinatorRuntime", "MemoryOffsetsLog", "OffsetsLog"]

P = ParamSpec("P")
T = TypeVar("T")

#: a coordinator record's replay: key, value, now
Replay = Callable[[bytes, bytes | None, int], None]


class OffsetsLog(Protocol):
    """The partitions of ``__consumer_offsets``."""

    def num_partitions(self) -> int: ...

    def append(self, group_id: str, batch: bytes, now_ms: int) -> None: ...

    def partitions(self) -> Iterable[Iterable[Batch]]: ...


class BrokerOffsetsLog(CoordinatorTopic):
    """The broker's ``__consumer_offsets`` topic, created (compacted) on first use."""

    def __init__(self, state: BrokerState, default_partitions: int) -> None:
        super().__init__(state, GROUP_TOPIC, lambda: default_partitions, lambda: _OFFSETS_CONFIGS)

    def append(self, group_id: str, batch: bytes, now_ms: int) -> None:
        self.append_batch(group_id, batch, now_ms)


#: ``__consumer_offsets``' topic configs (``GroupCoordinatorConfig``'s offsets topic ones)
_OFFSETS_CONFIGS: Final = {
    "cleanup.policy": "compact",
    "segment.bytes": "104857600",
    "compression.type": "producer",
}


class MemoryOffsetsLog(MemoryCoordinatorTopic):
    """``__consumer_offsets`` as lists of batches in memory."""

    def append(self, group_id: str, batch: bytes, now_ms: int) -> None:
        self.append_batch(group_id, batch, now_ms)


class CoordinatorRuntime:
    """Appends a shard's records, replays them, and loads the log at start (module doc)."""

    def __init__(self, log: OffsetsLog, replay: Replay) -> None:
        self.log = log
        self._replay = replay

    def run(self, operation: Callable[Concatenate[list[Write], P], T]) -> Callable[P, T]:
        """An operation of the shard as the handlers call it: it decides, returning its answer
        and giving its records (``CoordinatorResult``); they are then written, in order."""

        def run(*args: P.args, **kwargs: P.kwargs) -> T:
            writes: list[Write] = []
            result = operation(writes, *args, **kwargs)
            for write in writes:
                self.write(write)
            return result

        return run

    def write(self, write: Write) -> None:
        """Append the records as one batch to the group's partition; then, with ``replay``,
        apply them to the shard."""
        if not write.records:
            return
        options: dict[str, Any] = {}
        if write.producer is not None:
            options = {
                "producer_id": write.producer[0],
                "producer_epoch": write.producer[1],
                "is_transactional": True,
            }
        builder = BatchBuilder(2, 0, **options)
        for key, value in write.records:
            builder.append(None, write.now_ms, key, value)
        self.log.append(write.group_id, builder.build(), write.now_ms)
        if write.replay:
            for key, value in write.records:
                self._replay(key, value, write.now_ms)

    def load(self, replay_partition: Callable[[Iterable[Batch]], None]) -> None:
        """Every partition's batches, in order, to the shard (``loadGroupsAndOffsets``)."""
        for batches in self.log.partitions():
            replay_partition(batches)
