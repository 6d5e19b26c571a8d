"""The client's view of the cluster, built from Metadata responses, without I/O.

``ClusterMetadata.from_response`` turns a ``MetadataResponse`` of any version into brokers,
partition leaders (with leader epochs, v7+) and topic ids (v10+); ``leader`` answers where a
partition's requests go. A partition whose leader is unknown (-1, or a broker missing from the
response) has no leader: the caller refreshes metadata and backs off, as Kafka's ``Metadata`` does.
"""

from __future__ import annotations

import uuid
from dataclasses import field
from typing import TYPE_CHECKING, Any

from kwire._lazy import lazy_dataclass
from kwire.protocol import ZERO_UUID, ErrorCode, uuid_to_str

if TYPE_CHECKING:
    from kwire.protocol.messages import MetadataResponse

__all__ = ["BrokerAddress", "ClusterMetadata", "PartitionMetadata", "metadata_request"]


@lazy_dataclass(frozen=True, slots=True)
class BrokerAddress:
    node_id: int
    host: str
    port: int
    rack: str | None = None

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


@lazy_dataclass(frozen=True, slots=True)
class PartitionMetadata:
    topic: str
    partition: int
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    error: ErrorCode


@lazy_dataclass(slots=True)
class ClusterMetadata:
    brokers: dict[int, BrokerAddress] = field(default_factory=dict)
    partitions: dict[str, dict[int, PartitionMetadata]] = field(default_factory=dict)
    topic_errors: dict[str, ErrorCode] = field(default_factory=dict)
    topic_ids: dict[str, uuid.UUID] = field(default_factory=dict)
    internal_topics: frozenset[str] = frozenset()
    cluster_id: str | None = None
    controller_id: int = -1

    @classmethod
    def from_response(cls, response: MetadataResponse) -> ClusterMetadata:
        brokers = {
            b.node_id: BrokerAddress(b.node_id, b.host, b.port, getattr(b, "rack", None))
            for b in response.brokers
        }
        partitions: dict[str, dict[int, PartitionMetadata]] = {}
        errors: dict[str, ErrorCode] = {}
        ids: dict[str, uuid.UUID] = {}
        internal = set()
        for topic in response.topics:
            name = topic.name
            if name is None:
                continue
            error = ErrorCode(topic.error_code)
            if error != ErrorCode.NONE:
                errors[name] = error
            topic_id = getattr(topic, "topic_id", ZERO_UUID)
            if topic_id and topic_id != ZERO_UUID:
                ids[name] = topic_id
            if getattr(topic, "is_internal", False):
                internal.add(name)
            partitions[name] = {
                p.partition_index: PartitionMetadata(
                    topic=name,
                    partition=p.partition_index,
                    leader=p.leader_id,
                    leader_epoch=getattr(p, "leader_epoch", -1),
                    replicas=tuple(p.replica_nodes),
                    error=ErrorCode(p.error_code),
                )
                for p in topic.partitions
            }
        return cls(
            brokers=brokers,
            partitions=partitions,
            topic_errors=errors,
            topic_ids=ids,
            internal_topics=frozenset(internal),
            cluster_id=getattr(response, "cluster_id", None),
            controller_id=getattr(response, "controller_id", -1),
        )

    def topics(self) -> list[str]:
        """Topics that exist (no topic-level error), sorted."""
        return sorted(t for t in self.partitions if t not in self.topic_errors)

    def partition_count(self, topic: str) -> int:
        return len(self.partitions.get(topic, {}))

    def leader(self, topic: str, partition: int) -> BrokerAddress | None:
        """The broker leading ``topic``-``partition``, or None when it has none right now."""
        info = self.partitions.get(topic, {}).get(partition)
        if info is None or info.leader < 0:
            return None
        return self.brokers.get(info.leader)

    def leader_epoch(self, topic: str, partition: int) -> int:
        info = self.partitions.get(topic, {}).get(partition)
        return -1 if info is None else info.leader_epoch

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        for name, known in self.topic_ids.items():
            if known == topic_id:
                return name
        return None

    def describe(self, topic: str) -> str:
        """A topic's id in Kafka's text form, for messages."""
        topic_id = self.topic_ids.get(topic)
        return uuid_to_str(topic_id) if topic_id else "(no id)"


def metadata_request(topics: list[str] | None, version: int) -> Any:
    """A MetadataRequest for ``topics`` (None: every topic) that creates no topic.

    Metadata v0 has no null topic list: an empty list means every topic there.
    """
    from kwire.protocol.messages import MetadataRequest

    if topics is None:
        entries: list[Any] | None = [] if version == 0 else None
    else:
        entries = [MetadataRequest.MetadataRequestTopic(name=name) for name in topics]
    extra: dict[str, Any] = {"allow_auto_topic_creation": False} if version >= 4 else {}
    return MetadataRequest(topics=entries, **extra)
