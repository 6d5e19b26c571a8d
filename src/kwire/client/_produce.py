"""Produce without I/O: Kafka's default partitioner, idempotent batches, Produce requests and answers.

``default_partition`` is Kafka's ``BuiltInPartitioner`` for a keyed record (murmur2 of the key) and
round robin without a key. ``IdempotentSequences`` keeps what KIP-98 asks of an idempotent
producer: one producer id and epoch (InitProducerId), and per partition the sequence of the next
record; a batch keeps its base sequence through retries, so a broker that already appended it
answers with its original offset instead of appending it twice (``ProducerStateManager``), and the
sequence only moves on once the batch is acknowledged.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import field
from typing import TYPE_CHECKING, Any

from kwire._lazy import lazy_dataclass
from kwire.client._metadata import ClusterMetadata
from kwire.protocol import ZERO_UUID, ErrorCode
from kwire.records import BatchBuilder, Compression

if TYPE_CHECKING:
    from kwire.protocol.messages import ProduceResponse

__all__ = [
    "IdempotentSequences",
    "ProduceResult",
    "build_batch_for",
    "default_partition",
    "murmur2",
    "parse_produce_response",
    "produce_request",
]

CODECS: Mapping[str, int] = {
    "none": Compression.NONE,
    "gzip": Compression.GZIP,
    "snappy": Compression.SNAPPY,
    "lz4": Compression.LZ4,
    "zstd": Compression.ZSTD,
}


def murmur2(data: bytes) -> int:
    """Kafka's ``Utils.murmur2`` (the default partitioner's hash), as a signed 32-bit int."""
    m, r = 0x5BD1E995, 24
    length = len(data)
    h = (0x9747B28C ^ length) & 0xFFFFFFFF
    i = 0
    while length - i >= 4:
        k = int.from_bytes(data[i : i + 4], "little")
        k = (k * m) & 0xFFFFFFFF
        k ^= k >> r
        k = (k * m) & 0xFFFFFFFF
        h = (h * m) & 0xFFFFFFFF
        h ^= k
        i += 4
    rest = length - i
    if rest == 3:
        h ^= data[i + 2] << 16
    if rest >= 2:
        h ^= data[i + 1] << 8
    if rest >= 1:
        h ^= data[i]
        h = (h * m) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * m) & 0xFFFFFFFF
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def default_partition(key: bytes | None, num_partitions: int, counter: int) -> int:
    """Kafka's default partitioner for a keyed record; round robin (by ``counter``) without key."""
    if key is None:
        return counter % num_partitions
    return (murmur2(key) & 0x7FFFFFFF) % num_partitions


@lazy_dataclass(slots=True)
class IdempotentSequences:
    """An idempotent producer's id, epoch and next sequence per partition (KIP-98)."""

    producer_id: int = -1
    producer_epoch: int = -1
    next_sequence: dict[tuple[str, int], int] = field(default_factory=dict)

    def base_sequence(self, topic: str, partition: int) -> int:
        return self.next_sequence.get((topic, partition), 0)

    def acknowledged(self, topic: str, partition: int, records: int) -> None:
        key = (topic, partition)
        # sequences wrap at Integer.MAX_VALUE (DefaultRecordBatch.incrementSequence)
        self.next_sequence[key] = (self.next_sequence.get(key, 0) + records) & 0x7FFFFFFF


def build_batch_for(
    records: Iterable[tuple[bytes | None, bytes | None, Any, int]],
    *,
    compression: str,
    sequences: IdempotentSequences | None,
    topic: str,
    partition: int,
    transactional: bool = False,
) -> tuple[bytes, int]:
    """One v2 batch of ``(key, value, headers, timestamp_ms)`` records and its record count
    (``transactional``: part of the producer's open transaction, KIP-98)."""
    idempotent = sequences is not None and sequences.producer_id >= 0
    builder = BatchBuilder(
        2,
        CODECS[compression],
        producer_id=sequences.producer_id if idempotent and sequences else -1,
        producer_epoch=sequences.producer_epoch if idempotent and sequences else -1,
        base_sequence=sequences.base_sequence(topic, partition) if idempotent and sequences else -1,
        is_transactional=transactional and idempotent,
    )
    for key, value, headers, timestamp in records:
        builder.append(timestamp=timestamp, key=key, value=value, headers=headers or ())
    return builder.build(), len(builder)


def produce_request(
    batches: Mapping[tuple[str, int], bytes],
    version: int,
    *,
    acks: int,
    timeout_ms: int,
    metadata: ClusterMetadata,
    transactional_id: str | None = None,
) -> Any:
    """A ProduceRequest of one batch per partition (v13+ names topics by id, KIP-516)."""
    from kwire.protocol.messages import ProduceRequest

    by_topic: dict[str, list[Any]] = {}
    for (topic, partition), data in batches.items():
        by_topic.setdefault(topic, []).append(
            ProduceRequest.PartitionProduceData(index=partition, records=data)
        )
    extra: dict[str, Any] = {"transactional_id": transactional_id} if version >= 3 else {}
    topics = []
    for name, parts in by_topic.items():
        entry = ProduceRequest.TopicProduceData(partition_data=parts)
        if version >= 13:
            entry.topic_id = metadata.topic_ids.get(name, ZERO_UUID)
        else:
            entry.name = name
        topics.append(entry)
    return ProduceRequest(acks=acks, timeout_ms=timeout_ms, topic_data=topics, **extra)


@lazy_dataclass(frozen=True, slots=True)
class ProduceResult:
    error: ErrorCode
    base_offset: int
    message: str | None = None


def parse_produce_response(
    response: ProduceResponse, version: int, metadata: ClusterMetadata
) -> dict[tuple[str, int], ProduceResult]:
    out = {}
    for topic in response.responses:
        name = metadata.topic_name(topic.topic_id) if version >= 13 else topic.name
        for p in topic.partition_responses:
            out[(name or "?", p.index)] = ProduceResult(
                ErrorCode(p.error_code), p.base_offset, getattr(p, "error_message", None)
            )
    return out
