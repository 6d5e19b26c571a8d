"""Kafka's internal topics, the one home of their rules: names, record types, framing, the
partition of a key, the transaction state names and the JSON ``kafka-dump-log`` prints.

The coordinators' topics (``__consumer_offsets``, ``__transaction_state``,
``__share_group_state``) hold records whose key and value each start with an int16: for the key
the record type (Kafka's ``CoordinatorRecordSerde``: the key's version *is* the type), for the
value the value's version; the rest is the generated message at that version. The broker writes
and replays them, ``kwire dump`` prints them and the Spark views read them, all through this
module, so a rule changes in one place. Sans-IO: bytes in, messages out.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from enum import IntEnum
from typing import Any, Final, TypeVar

from kwire._wire import INT16, java_string_hash
from kwire.errors import KwireError
from kwire.protocol import AnyMessage, KafkaMessage, message_class

Buffer = bytes | bytearray | memoryview

__all__ = [
    "CLUSTER_METADATA",
    "CONSUMER_OFFSETS",
    "COORDINATOR_TOPICS",
    "GROUP_METADATA_TYPE",
    "INTERNAL_TOPICS",
    "OFFSETS_RECORD_TYPES",
    "SHARE_GROUP_STATE",
    "SHARE_STATE_RECORD_TYPES",
    "TRANSACTION_STATE",
    "TransactionState",
    "coordinator_record_json",
    "java_hash_map_order",
    "partition_for",
    "read_version",
    "read_versioned",
    "read_versioned_as",
    "scala_hash_set_order",
    "transaction_log_text",
    "transaction_state_name",
    "versioned",
]

CONSUMER_OFFSETS: Final = "__consumer_offsets"
TRANSACTION_STATE: Final = "__transaction_state"
SHARE_GROUP_STATE: Final = "__share_group_state"
CLUSTER_METADATA: Final = "__cluster_metadata"
#: The topics a coordinator writes (``Topic.INTERNAL_TOPICS`` minus the metadata log).
COORDINATOR_TOPICS: Final = frozenset({CONSUMER_OFFSETS, TRANSACTION_STATE, SHARE_GROUP_STATE})
INTERNAL_TOPICS: Final = COORDINATOR_TOPICS | {CLUSTER_METADATA}

#: ``__consumer_offsets``: record type (the key's version) -> message name without Key/Value
#: (Kafka's ``GroupCoordinatorRecordSerde``; 0 and 1 are two versions of the offset commit key).
OFFSETS_RECORD_TYPES: Final[Mapping[int, str]] = {
    0: "OffsetCommit",
    1: "OffsetCommit",
    2: "GroupMetadata",
    3: "ConsumerGroupMetadata",
    4: "ConsumerGroupPartitionMetadata",
    5: "ConsumerGroupMemberMetadata",
    6: "ConsumerGroupTargetAssignmentMetadata",
    7: "ConsumerGroupTargetAssignmentMember",
    8: "ConsumerGroupCurrentMemberAssignment",
    # Kafka 4.x's streams groups (KIP-1071)
    17: "StreamsGroupMetadata",
    18: "StreamsGroupPartitionMetadata",
    19: "StreamsGroupMemberMetadata",
    20: "StreamsGroupTargetAssignmentMetadata",
    21: "StreamsGroupTargetAssignmentMember",
    22: "StreamsGroupCurrentMemberAssignment",
    23: "StreamsGroupTopology",
}
#: The classic group's record type (``GroupMetadataKey``); 0 and 1 are offset commits.
GROUP_METADATA_TYPE: Final = 2
#: ``__share_group_state``: Kafka 4.x's ``ShareCoordinatorRecordSerde``.
SHARE_STATE_RECORD_TYPES: Final[Mapping[int, str]] = {0: "ShareSnapshot", 1: "ShareUpdate"}


class TransactionState(IntEnum):
    """Kafka's ``TransactionState``; the value is the id written in ``TransactionLogValue``."""

    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7

    @property
    def kafka_name(self) -> str:
        """The name DescribeTransactions, ListTransactions and the dump tool use (``Ongoing``)."""
        return _KAFKA_NAMES[self]

    @classmethod
    def from_name(cls, name: str) -> TransactionState | None:
        return _BY_NAME.get(name)


_KAFKA_NAMES: Final = {
    TransactionState.EMPTY: "Empty",
    TransactionState.ONGOING: "Ongoing",
    TransactionState.PREPARE_COMMIT: "PrepareCommit",
    TransactionState.PREPARE_ABORT: "PrepareAbort",
    TransactionState.COMPLETE_COMMIT: "CompleteCommit",
    TransactionState.COMPLETE_ABORT: "CompleteAbort",
    TransactionState.DEAD: "Dead",
    TransactionState.PREPARE_EPOCH_FENCE: "PrepareEpochFence",
}
_BY_NAME: Final = {name: state for state, name in _KAFKA_NAMES.items()}


def transaction_state_name(status: int) -> str | None:
    """The name of the state id a ``TransactionLogValue`` carries; None for an unknown id."""
    try:
        return TransactionState(status).kafka_name
    except ValueError:
        return None


def partition_for(key: str, partitions: int) -> int:
    """The partition of an internal topic holding ``key`` (a group or transactional id):
    ``Utils.abs(key.hashCode()) % partitions``, where Kafka's ``Utils.abs`` maps
    ``Integer.MIN_VALUE`` to 0 (``GroupMetadataManager.partitionFor``,
    ``TransactionStateManager.partitionFor``)."""
    h = java_string_hash(key)
    return (0 if h == -(1 << 31) else abs(h)) % partitions


# -- framing --------------------------------------------------------------------------------------


def versioned(message: Any, version: int) -> bytes:
    """A key or value as written: the int16 ``version`` (a key's record type), then ``message``
    encoded at that version (``CoordinatorRecordSerde.serializeKey/Value``)."""
    return INT16.pack(version) + bytes(message.encode(version))


def read_version(data: Buffer, what: str = "buffer") -> tuple[int, memoryview]:
    """The int16 a key or value starts with and the bytes after it; ``ValueError`` (Kafka's
    message) when there are fewer than two bytes."""
    view = memoryview(data)
    if len(view) < 2:
        raise ValueError(f"Could not read version from {what}'s buffer.")
    return INT16.unpack_from(view, 0)[0], view[2:]


def read_versioned(name: str, data: Buffer, what: str = "buffer") -> tuple[int, AnyMessage]:
    """A version-prefixed message of class ``name`` (bytes after its end are left alone, as
    Kafka's ``message.read``); ``ValueError`` naming the version for what cannot be read."""
    return read_versioned_as(message_class(name), data, what)


_M = TypeVar("_M", bound=KafkaMessage)


def read_versioned_as(cls: type[_M], data: Buffer, what: str = "buffer") -> tuple[int, _M]:
    """``read_versioned`` of a class known where it is called: the message typed as ``cls``."""
    version, body = read_version(data, what)
    try:
        if not cls.MIN_VERSION <= version <= cls.MAX_VERSION:
            raise ValueError(f"Can't read version {version} of {cls.__name__}")
        message = cls.decode_from(body, version)[0]
    except (KwireError, ValueError) as exc:
        raise ValueError(
            f"Could not read record with version {version} from {what}'s buffer due to: {exc}."
        ) from exc
    return version, message


def coordinator_record_json(
    record_types: Mapping[int, str], key: Buffer, value: Buffer | None
) -> tuple[int, str, dict[str, Any], dict[str, Any] | None] | None:
    """A coordinator record as Kafka's ``CoordinatorRecordMessageParser`` shows it: (record type,
    message name, key document ``{"type": "<t>", "data": {...}}``, value document
    ``{"version": "<v>", "data": {...}}`` or None for a tombstone); None for an unknown record
    type; ``ValueError`` for bytes that do not decode."""
    record_type, _ = read_version(key, "key")
    name = record_types.get(record_type)
    if name is None:
        return None
    _, k = read_versioned(name + "Key", key, "key")
    key_doc = {"type": str(record_type), "data": k.to_json(record_type)}
    if value is None:
        return record_type, name, key_doc, None
    version, v = read_versioned(name + "Value", value, "value")
    value_json = v.to_json(version)
    if record_types is OFFSETS_RECORD_TYPES and record_type == GROUP_METADATA_TYPE:
        value_json = _embedded_consumer_protocol(value_json)
    return record_type, name, key_doc, {"version": str(version), "data": value_json}


# -- the text of kafka-dump-log --------------------------------------------------------------------


def scala_hash_set_order(partitions: list[tuple[str, int]]) -> list[tuple[str, int]]:
    """The iteration order of a Scala 2.13 ``mutable.HashSet[TopicPartition]`` holding
    ``partitions`` (how Kafka's ``formatRecordKeyAndValue`` lists them): buckets of the table in
    order, by hash within a bucket; the hash is Kafka's ``TopicPartition.hashCode`` improved as Scala
    does (``h ^ (h >>> 16)``); the table starts at 16 and doubles at a load factor of 0.75."""
    unique = list(dict.fromkeys(partitions))
    capacity = 16
    while len(unique) + 1 > capacity * 0.75:
        capacity *= 2

    def position(tp: tuple[str, int]) -> tuple[int, int]:
        h = (31 * (31 + tp[1]) + java_string_hash(tp[0])) & 0xFFFFFFFF
        h ^= h >> 16
        signed = h - (1 << 32) if h & 0x80000000 else h
        return h & (capacity - 1), signed

    return sorted(unique, key=position)


def java_hash_map_order(partitions: list[tuple[str, int]]) -> list[tuple[str, int]]:
    """The iteration order of a Java ``HashMap<TopicPartition, ...>`` filled by
    ``computeIfAbsent`` with ``partitions`` in that order (how Kafka's ``GroupCoordinatorService``
    batches a request's groups by ``__consumer_offsets`` partition): the table's buckets in order,
    and in a bucket the newest first (``computeIfAbsent`` puts a new node at the head of its bin; a
    resize keeps a bin's order). The hash is ``TopicPartition.hashCode`` spread as ``HashMap.hash``
    does (``h ^ (h >>> 16)``); the table starts at 16 and doubles before an insertion finds more
    than 0.75 of it used."""
    unique = list(dict.fromkeys(partitions))
    capacity = 16
    while len(unique) - 1 > capacity * 0.75:
        capacity *= 2

    def position(item: tuple[int, tuple[str, int]]) -> tuple[int, int]:
        index, (topic, partition) = item
        h = (31 * (31 + partition) + java_string_hash(topic)) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (capacity - 1), -index

    return [tp for _, tp in sorted(enumerate(unique), key=position)]


def transaction_log_text(key: Buffer, value: Buffer | None) -> tuple[str, str | None]:
    """Kafka 3.9's ``TransactionLog.formatRecordKeyAndValue`` (``--transaction-log-decoder``):
    key ``transaction_metadata::transactionalId=<id>``, payload ``producerId:<id>,producerEpoch:<e>,
    state=<state>,partitions=[<topic>-<p>,...],txnLastUpdateTimestamp=<ms>,txnTimeoutMs=<ms>``,
    ``<DELETE>`` for a tombstone, ``unknown::version=<v>`` (no payload) for a key of another
    version; ``ValueError`` for what Kafka's tool fails on."""
    from kwire.protocol.messages import TransactionLogKey, TransactionLogValue

    version, _ = read_version(key, "key")
    if not TransactionLogKey.MIN_VERSION <= version <= TransactionLogKey.MAX_VERSION:
        return f"unknown::version={version}", None
    txn_id = read_versioned_as(TransactionLogKey, key, "key")[1].transactional_id
    key_text = f"transaction_metadata::transactionalId={txn_id}"
    if value is None:
        return key_text, "<DELETE>"
    value_version, _ = read_version(value, "value")
    if not TransactionLogValue.MIN_VERSION <= value_version <= TransactionLogValue.MAX_VERSION:
        # Kafka's IllegalStateException (the tool stops); kwire reports it and goes on.
        raise ValueError(f"Unknown version {value_version} from the transaction log message value")
    _, decoded = read_versioned_as(TransactionLogValue, value, "value")
    status = decoded.transaction_status
    state = transaction_state_name(status)
    if state is None:
        raise ValueError(
            f"Unknown transaction state id {status} from the transaction status message"
        )
    partitions: list[tuple[str, int]] = []
    if status != TransactionState.EMPTY:
        for entry in decoded.transaction_partitions or ():
            partitions.extend((entry.topic, p) for p in entry.partition_ids)
    listed = ",".join(f"{t}-{p}" for t, p in scala_hash_set_order(partitions))
    payload = (
        f"producerId:{decoded.producer_id},producerEpoch:{decoded.producer_epoch},state={state},"
        f"partitions=[{listed}],txnLastUpdateTimestamp={decoded.transaction_last_update_timestamp_ms},"
        f"txnTimeoutMs={decoded.transaction_timeout_ms}"
    )
    return key_text, payload


def _embedded_consumer_protocol(doc: dict[str, Any]) -> dict[str, Any]:
    """DumpLogSegments' ``prepareGroupMetadataValue``: in a "consumer" group, each member's
    subscription and assignment bytes are shown decoded (ConsumerProtocolSubscription/Assignment at
    the version their first int16 names); bytes that do not decode stay as they are (base64)."""
    if doc.get("protocolType") != "consumer" or not isinstance(doc.get("members"), list):
        return doc
    for member in doc["members"]:
        for field_name, name in (
            ("subscription", "ConsumerProtocolSubscription"),
            ("assignment", "ConsumerProtocolAssignment"),
        ):
            encoded = member.get(field_name)
            if not isinstance(encoded, str):
                continue
            try:
                version, message = read_versioned(name, base64.b64decode(encoded), field_name)
                member[field_name] = message.to_json(version)
            except ValueError:
                pass  # Kafka swallows the RuntimeException and keeps the original bytes
    return doc
