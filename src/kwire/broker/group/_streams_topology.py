"""A KIP-1071 streams group's topology: its subtopologies and internal topics, as a heartbeat
declares them and as the ``StreamsGroupTopologyValue`` record keeps them, and their configuration.

``configure`` follows Kafka 4.3's ``streams.topics.InternalTopicManager.configureTopics``: the
partition counts of repartition topics from their sources, copartitioned topics made equal,
changelog topics as many as the subtopology's tasks, and the status (missing source topics,
incorrectly partitioned topics, internal topics to create) a heartbeat answers when the topology
cannot be configured yet.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any, Final

from kwire._lazy import lazy_dataclass
from kwire.protocol.messages import StreamsGroupTopologyValue

__all__ = ["ConfiguredTopology", "Subtopology", "TopicInfo", "Topology", "configure"]


# StreamsGroupHeartbeatResponse.Status
STATUS_STALE_TOPOLOGY: Final = 0


STATUS_MISSING_SOURCE_TOPICS: Final = 1


STATUS_INCORRECTLY_PARTITIONED_TOPICS: Final = 2


STATUS_MISSING_INTERNAL_TOPICS: Final = 3


STATUS_SHUTDOWN_APPLICATION: Final = 4


TOPOLOGY_VALUE: Final = StreamsGroupTopologyValue
TOPOLOGY_SUB: Final = StreamsGroupTopologyValue.Subtopology
TOPOLOGY_INFO: Final = StreamsGroupTopologyValue.TopicInfo
TOPOLOGY_CONFIG: Final = StreamsGroupTopologyValue.TopicConfig
TOPOLOGY_COPART: Final = StreamsGroupTopologyValue.CopartitionGroup


@lazy_dataclass(frozen=True)
class TopicInfo:
    """A topic a streams topology needs (KIP-1071's ``TopicInfo``): name, partitions,
    replication factor and configs."""

    name: str
    partitions: int
    replication_factor: int
    configs: tuple[tuple[str, str], ...]


@lazy_dataclass(frozen=True)
class Subtopology:
    """One subtopology of a streams group's topology (KIP-1071's ``Subtopology``): its source,
    changelog and repartition topics and its copartition groups."""

    subtopology_id: str
    source_topics: tuple[str, ...]
    source_topic_regex: tuple[str, ...]
    state_changelog_topics: tuple[TopicInfo, ...]
    repartition_sink_topics: tuple[str, ...]
    repartition_source_topics: tuple[TopicInfo, ...]
    copartition_groups: tuple[tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]], ...]


@lazy_dataclass(frozen=True)
class Topology:
    """``StreamsTopology``: the epoch and the subtopologies a member sent when it joined."""

    epoch: int
    subtopologies: tuple[Subtopology, ...]

    @staticmethod
    def from_message(message: Any) -> Topology:
        """From the heartbeat's ``Topology`` or a ``StreamsGroupTopologyValue`` (same fields)."""

        def info(rows: Iterable[Any]) -> tuple[TopicInfo, ...]:
            return tuple(
                TopicInfo(
                    t.name,
                    t.partitions,
                    t.replication_factor,
                    tuple((c.key, c.value) for c in t.topic_configs),
                )
                for t in rows
            )

        return Topology(
            message.epoch,
            tuple(
                Subtopology(
                    s.subtopology_id,
                    tuple(s.source_topics),
                    tuple(s.source_topic_regex),
                    info(s.state_changelog_topics),
                    tuple(s.repartition_sink_topics),
                    info(s.repartition_source_topics),
                    tuple(
                        (
                            tuple(g.source_topics),
                            tuple(g.source_topic_regex),
                            tuple(g.repartition_source_topics),
                        )
                        for g in s.copartition_groups
                    ),
                )
                for s in message.subtopologies
            ),
        )

    def validate(self) -> str | None:
        """Why the topology is invalid (``StreamsGroupHeartbeatRequest``'s topology checks and
        ``TopologyValidator``), or ``None``."""
        ids = [s.subtopology_id for s in self.subtopologies]
        if len(set(ids)) != len(ids):
            return "Subtopology IDs must be unique."
        for s in self.subtopologies:
            if not s.source_topics and not s.source_topic_regex:
                return f"Subtopology {s.subtopology_id} has no source topics."
            sources = len(s.source_topics)
            regexes = len(s.source_topic_regex)
            repartitions = len(s.repartition_source_topics)
            for group in s.copartition_groups:
                for indexes, limit in zip(group, (sources, regexes, repartitions), strict=True):
                    if any(i < 0 or i >= limit for i in indexes):
                        return (
                            f"Copartition group of subtopology {s.subtopology_id} refers to an "
                            "unknown topic index."
                        )
        internal = [t.name for s in self.subtopologies for t in s.state_changelog_topics]
        internal += [t.name for s in self.subtopologies for t in s.repartition_source_topics]
        if len(set(internal)) != len(internal):
            return "Internal topics must be declared once."
        return None

    def to_value(self) -> Any:
        def info(rows: Iterable[TopicInfo]) -> list[Any]:
            return [
                TOPOLOGY_INFO(
                    name=t.name,
                    partitions=t.partitions,
                    replication_factor=t.replication_factor,
                    topic_configs=[TOPOLOGY_CONFIG(key=k, value=v) for k, v in t.configs],
                )
                for t in rows
            ]

        return TOPOLOGY_VALUE(
            epoch=self.epoch,
            subtopologies=[
                TOPOLOGY_SUB(
                    subtopology_id=s.subtopology_id,
                    source_topics=list(s.source_topics),
                    source_topic_regex=list(s.source_topic_regex),
                    state_changelog_topics=info(s.state_changelog_topics),
                    repartition_sink_topics=list(s.repartition_sink_topics),
                    repartition_source_topics=info(s.repartition_source_topics),
                    copartition_groups=[
                        TOPOLOGY_COPART(
                            source_topics=list(a),
                            source_topic_regex=list(b),
                            repartition_source_topics=list(c),
                        )
                        for a, b, c in s.copartition_groups
                    ],
                )
                for s in self.subtopologies
            ],
        )


@lazy_dataclass(frozen=True)
class ConfiguredTopology:
    """``ConfiguredTopology``: the task count of each subtopology, or why there is none."""

    tasks: Mapping[str, int]  # subtopology id -> number of tasks (input partitions)
    stateful: frozenset[str]  # subtopologies with changelog topics (they get standbys)
    status: tuple[tuple[int, str], ...]  # (StatusCode, StatusDetail), empty when ready
    missing_internal: tuple[TopicInfo, ...]  # internal topics to create, with their sizes

    @property
    def ready(self) -> bool:
        return not self.status


def configure(topology: Topology, topics: Mapping[str, int]) -> ConfiguredTopology:
    """``InternalTopicManager.configureTopics``: a subtopology has as many tasks as the largest of
    its source topics (declared repartition topics count with their declared size, else the size
    of the source topics they are fed from is not known here: the largest source topic's);
    changelog topics get the task count of their subtopology."""
    missing_sources = sorted(
        {t for s in topology.subtopologies for t in s.source_topics if t not in topics}
    )
    if missing_sources:
        detail = f"Source topics {', '.join(missing_sources)} are missing."
        return ConfiguredTopology({}, frozenset(), ((STATUS_MISSING_SOURCE_TOPICS, detail),), ())
    counts: dict[str, int] = {}
    for s in topology.subtopologies:
        sizes = [topics[t] for t in s.source_topics]
        for r in s.repartition_source_topics:
            sizes.append(r.partitions if r.partitions > 0 else topics.get(r.name, 0))
        counts[s.subtopology_id] = max(sizes, default=0)
    # A repartition topic of unknown size takes the task count of the subtopology writing it.
    for s in topology.subtopologies:
        for sink in s.repartition_sink_topics:
            for other in topology.subtopologies:
                if any(
                    r.name == sink and r.partitions <= 0 for r in other.repartition_source_topics
                ):
                    counts[other.subtopology_id] = max(
                        counts[other.subtopology_id], counts[s.subtopology_id]
                    )
    for s in topology.subtopologies:  # copartitioned source topics must agree
        for group in s.copartition_groups:
            names = [s.source_topics[i] for i in group[0]]
            if len({topics[n] for n in names}) > 1:
                detail = f"Copartitioned topics {', '.join(names)} differ in partition count."
                return ConfiguredTopology(
                    {}, frozenset(), ((STATUS_INCORRECTLY_PARTITIONED_TOPICS, detail),), ()
                )
    missing: list[TopicInfo] = []
    for s in topology.subtopologies:
        for r in s.repartition_source_topics:
            if r.name not in topics:
                missing.append(replace(r, partitions=counts[s.subtopology_id]))
        for c in s.state_changelog_topics:
            if c.name not in topics:
                missing.append(replace(c, partitions=counts[s.subtopology_id]))
    stateful = frozenset(
        s.subtopology_id for s in topology.subtopologies if s.state_changelog_topics
    )
    if missing:
        detail = f"Internal topics {', '.join(t.name for t in missing)} are missing."
        return ConfiguredTopology(
            counts, stateful, ((STATUS_MISSING_INTERNAL_TOPICS, detail),), tuple(missing)
        )
    return ConfiguredTopology(counts, stateful, (), ())
