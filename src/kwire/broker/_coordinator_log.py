"""Where a coordinator's records go: the partition of its internal topic that a key (group id,
transactional id) hashes to, as Kafka's ``CoordinatorRuntime`` and ``TransactionStateManager``
place them (``abs(key.hashCode()) % partitions``).

Approach: ``CoordinatorTopic`` is the broker's topic (``__consumer_offsets``,
``__transaction_state``), created with its coordinator's configs on the first write;
``MemoryCoordinatorTopic`` keeps the batches in lists, for the property tests that run a
coordinator without a broker. The group and transaction runtimes add only what their records
are (``group._runtime``, ``_txn``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from kwire.broker._state import BrokerState, Partition, partition_for
from kwire.records import Batch, read_batches

__all__ = ["CoordinatorTopic", "MemoryCoordinatorTopic"]


class CoordinatorTopic:
    """A coordinator's internal topic in the broker, created (``configs()``) on first use."""

    def __init__(
        self,
        state: BrokerState,
        name: str,
        default_partitions: Callable[[], int],
        configs: Callable[[], Mapping[str, str]],
    ) -> None:
        self.state = state
        self.name = name
        self.default_partitions = default_partitions
        self.configs = configs

    def num_partitions(self) -> int:
        topic = self.state.topic(self.name)
        return len(topic.partitions) if topic is not None else self.default_partitions()

    def partition(self, key: str) -> Partition:
        """The key's partition, the topic created if needed."""
        topic = self.state.topic(self.name)
        if topic is None:
            topic = self.state.create_topic(
                self.name, self.default_partitions(), dict(self.configs())
            )
        return topic.partitions[partition_for(key, len(topic.partitions))]

    def append_batch(self, key: str, batch: bytes, now_ms: int) -> None:
        self.state.append_as_coordinator(self.partition(key), batch, now_ms)

    def partitions(self) -> Iterable[Iterable[Batch]]:
        topic = self.state.topic(self.name)
        if topic is None:
            return []
        return [partition.log.iter_batches() for partition in topic.partitions]


class MemoryCoordinatorTopic:
    """A coordinator's internal topic as lists of batches in memory."""

    def __init__(self, num_partitions: int = 50) -> None:
        self.batches: list[list[bytes]] = [[] for _ in range(num_partitions)]

    def num_partitions(self) -> int:
        return len(self.batches)

    def append_batch(self, key: str, batch: bytes, now_ms: int) -> None:
        self.batches[partition_for(key, len(self.batches))].append(batch)

    def partitions(self) -> Iterable[Iterable[Batch]]:
        return [[b for raw in batches for b in read_batches(raw)] for batches in self.batches]
