"""KRaft metadata records (``__cluster_metadata``): their framing, and the replica sets they give.

Approach: two sans-IO halves over kwire's generated classes of Kafka 3.9's metadata record specs
(``kwire.protocol.message_class``; the protocol layer is imported on first use, as
``kwire.records`` does for control records).

The framing is Kafka's ``MetadataRecordSerde``: a record value is the frame version 1, the record's
apiKey and version (unsigned varints), then the record's fields (``encode_metadata_record`` /
``decode_metadata_record``; ``metadata_record_json`` prints one as ``kafka-dump-log.sh
--cluster-metadata-decoder`` does). This module is the only place that knows the framing; the
broker's metadata log (``kwire.broker._metadata_log``) writes and replays records with it.

``replay_topic_record`` is the one place of the topic and partition replay rules (Kafka's
``TopicsDelta``): the broker's ``MetadataImage`` and ``ReplicaSets`` both apply records with it.
``ReplicaSets`` replays the records that say where partitions live, as Kafka's ``MetadataDelta``
does: ``TopicRecord`` (a topic's name and id), ``PartitionRecord`` (a partition's replicas),
``PartitionChangeRecord`` (new replicas when its field is not null: a reassignment),
``RemoveTopicRecord`` (the topic and its partitions are gone). Records inside a metadata
transaction (``BeginTransactionRecord`` .. ``EndTransactionRecord``) apply at its end and not at
all after ``AbortTransactionRecord``, as ``MetadataLoader`` does. Other kinds are skipped from
their apiKey, without decoding their fields. ``ReplicaSetReader`` (``_replica_set_reader``) feeds
it the files of a metadata log.
"""

from __future__ import annotations

import uuid
from dataclasses import field
from typing import Any, Final

from kwire._lazy import lazy_dataclass
from kwire._wire import read_uvarint, write_uvarint
from kwire.errors import DecodeError
from kwire.log.internal_topics import CLUSTER_METADATA

__all__ = [
    "CLUSTER_METADATA_DIR",
    "CLUSTER_METADATA_TOPIC",
    "METADATA_FRAME_VERSION",
    "METADATA_RECORD_TYPES",
    "MetadataRecord",
    "PartitionImage",
    "ReplicaSets",
    "TopicImage",
    "decode_metadata_record",
    "encode_metadata_record",
    "metadata_record_api_key",
    "metadata_record_class",
    "metadata_record_json",
    "metadata_record_type_name",
    "new_metadata_record",
    "replay_topic_record",
]

CLUSTER_METADATA_TOPIC: Final = CLUSTER_METADATA
#: The metadata log's partition folder in a KRaft node's (metadata) data directory.
CLUSTER_METADATA_DIR: Final = f"{CLUSTER_METADATA_TOPIC}-0"
#: ``MetadataRecordSerde``'s DEFAULT_FRAME_VERSION.
METADATA_FRAME_VERSION: Final = 1

#: Kafka 3.9's metadata records by apiKey (``MetadataRecordType``).
METADATA_RECORD_TYPES: Final = {
    0: "RegisterBrokerRecord",
    1: "UnregisterBrokerRecord",
    2: "TopicRecord",
    3: "PartitionRecord",
    4: "ConfigRecord",
    5: "PartitionChangeRecord",
    7: "FenceBrokerRecord",
    8: "UnfenceBrokerRecord",
    9: "RemoveTopicRecord",
    10: "DelegationTokenRecord",
    11: "UserScramCredentialRecord",
    12: "FeatureLevelRecord",
    14: "ClientQuotaRecord",
    15: "ProducerIdsRecord",
    17: "BrokerRegistrationChangeRecord",
    18: "AccessControlEntryRecord",
    19: "RemoveAccessControlEntryRecord",
    20: "NoOpRecord",
    21: "ZkMigrationStateRecord",
    22: "RemoveUserScramCredentialRecord",
    23: "BeginTransactionRecord",
    24: "EndTransactionRecord",
    25: "AbortTransactionRecord",
    26: "RemoveDelegationTokenRecord",
    27: "RegisterControllerRecord",
}
_API_KEYS: Final = {name: key for key, name in METADATA_RECORD_TYPES.items()}

MetadataRecord = tuple[Any, int]  # (message, version): Kafka's ApiMessageAndVersion


def metadata_record_class(name: str) -> Any:
    """kwire's generated class of the metadata (or KRaft control) record ``name``."""
    from kwire.protocol import message_class

    return message_class(name)


def new_metadata_record(record: str, /, **fields: Any) -> Any:
    """A message of kwire's generated class ``record`` (a metadata or KRaft control record)."""
    return metadata_record_class(record)(**fields)


def encode_metadata_record(message: Any, version: int) -> bytes:
    """A record value as ``MetadataRecordSerde`` writes it."""
    api_key = _API_KEYS[type(message).__name__]
    out = bytearray()
    write_uvarint(out, METADATA_FRAME_VERSION)
    write_uvarint(out, api_key)
    write_uvarint(out, version)
    out += message.encode(version)
    return bytes(out)


def _header(view: memoryview) -> tuple[int, int, int]:
    """(apiKey, version, position of the fields) of a record value."""
    frame, pos = read_uvarint(view, 0)
    if frame != METADATA_FRAME_VERSION:
        raise DecodeError(
            f"Could not deserialize metadata record due to unknown frame version {frame}"
        )
    api_key, pos = read_uvarint(view, pos)
    version, pos = read_uvarint(view, pos)
    return api_key, version, pos


def metadata_record_api_key(value: bytes | bytearray | memoryview) -> int:
    """The apiKey of a record value, from its frame alone (``DecodeError`` for another frame)."""
    return _header(memoryview(value))[0]


def decode_metadata_record(value: bytes | bytearray | memoryview) -> MetadataRecord:
    """``(message, version)`` of a record value (``DecodeError`` when it is not one)."""
    view = memoryview(value)
    api_key, version, pos = _header(view)
    name = METADATA_RECORD_TYPES.get(api_key)
    if name is None:
        raise DecodeError(f"unknown metadata record type {api_key}")
    cls = metadata_record_class(name)
    if not cls.MIN_VERSION <= version <= cls.MAX_VERSION:
        raise DecodeError(f"{name} version {version} is not supported")
    return cls.decode(bytes(view[pos:]), version), version


def metadata_record_type_name(api_key: int) -> str:
    """``MetadataRecordType.fromId(apiKey).toString()``: ``TopicRecord`` -> ``TOPIC_RECORD``."""
    name = METADATA_RECORD_TYPES[api_key]
    return "".join("_" + c if c.isupper() and i else c for i, c in enumerate(name)).upper()


def metadata_record_json(value: bytes | bytearray | memoryview) -> str:
    """A record value as ``kafka-dump-log.sh --cluster-metadata-decoder`` prints its payload
    (``{"type":"TOPIC_RECORD","version":0,"data":{...}}``, Jackson's compact JSON)."""
    import json  # here: the dump tools need it, a broker's start does not

    message, version = decode_metadata_record(value)
    doc = {
        "type": metadata_record_type_name(_API_KEYS[type(message).__name__]),
        "version": version,
        "data": message.to_json(version),
    }
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False)


# -- replica sets -------------------------------------------------------------------------------

_TOPIC: Final = "TopicRecord"
_PARTITION: Final = "PartitionRecord"
_PARTITION_CHANGE: Final = "PartitionChangeRecord"
_REMOVE_TOPIC: Final = "RemoveTopicRecord"
_BEGIN: Final = "BeginTransactionRecord"
_END: Final = "EndTransactionRecord"
_ABORT: Final = "AbortTransactionRecord"
#: The apiKeys ``ReplicaSets`` decodes; every other record is skipped from its frame.
_REPLICA_KEYS: Final = frozenset(
    _API_KEYS[n]
    for n in (_TOPIC, _PARTITION, _PARTITION_CHANGE, _REMOVE_TOPIC, _BEGIN, _END, _ABORT)
)


@lazy_dataclass
class PartitionImage:
    """A partition as its records leave it (Kafka's ``PartitionRegistration``, in part)."""

    partition_id: int
    leader: int
    leader_epoch: int
    partition_epoch: int
    replicas: list[int]
    isr: list[int]
    directories: list[uuid.UUID] = field(default_factory=list)


@lazy_dataclass
class TopicImage:
    """A topic as the metadata log's records build it: name, id and partitions."""

    name: str
    topic_id: uuid.UUID
    partitions: dict[int, PartitionImage] = field(default_factory=dict)

    def partition_count(self) -> int:
        return len(self.partitions)


_NO_LEADER_CHANGE: Final = -2


def replay_topic_record(
    topics: dict[str, TopicImage], by_id: dict[uuid.UUID, TopicImage], message: Any
) -> TopicImage | None:
    """Apply a ``TopicRecord``, ``PartitionRecord``, ``PartitionChangeRecord`` or
    ``RemoveTopicRecord`` to the topics by name and by id, as Kafka's ``TopicsDelta`` does
    (a change's null ``replicas``/``isr`` and leader -2 mean unchanged; a new leader is a new
    leader epoch); other kinds do nothing. Returns the topic a ``RemoveTopicRecord`` removed."""
    kind = type(message).__name__
    if kind == _TOPIC:
        topic = TopicImage(message.name, uuid.UUID(bytes=message.topic_id.bytes))
        topics[topic.name] = topic
        by_id[topic.topic_id] = topic
    elif kind == _REMOVE_TOPIC:
        gone = by_id.pop(uuid.UUID(bytes=message.topic_id.bytes), None)
        if gone is not None:
            topics.pop(gone.name, None)
        return gone
    elif kind in (_PARTITION, _PARTITION_CHANGE):
        found = by_id.get(uuid.UUID(bytes=message.topic_id.bytes))
        if found is None:
            return None
        if kind == _PARTITION:
            found.partitions[message.partition_id] = PartitionImage(
                message.partition_id,
                message.leader,
                message.leader_epoch,
                message.partition_epoch,
                list(message.replicas),
                list(message.isr),
                [uuid.UUID(bytes=d.bytes) for d in message.directories],
            )
            return None
        part = found.partitions.get(message.partition_id)
        if part is None:
            return None
        if message.leader != _NO_LEADER_CHANGE:
            part.leader = message.leader
            part.leader_epoch += 1
        if message.isr is not None:
            part.isr = list(message.isr)
        if message.replicas is not None:
            part.replicas = list(message.replicas)
        part.partition_epoch += 1
    return None


class ReplicaSets:
    """Each partition's replica ids, from replaying metadata records; see the module doc."""

    def __init__(self) -> None:
        self._topics: dict[str, TopicImage] = {}
        self._by_id: dict[uuid.UUID, TopicImage] = {}
        self._pending: list[Any] | None = None  # records of an open metadata transaction

    def replay_value(self, value: bytes | bytearray | memoryview) -> None:
        """Replay one record value; kinds that do not move replicas are not decoded."""
        if metadata_record_api_key(value) in _REPLICA_KEYS:
            self.replay(decode_metadata_record(value)[0])

    def replay(self, message: Any) -> None:
        """Replay one record (a generated message); kinds that do not move replicas are ignored."""
        kind = type(message).__name__
        if kind == _BEGIN:
            self._pending = []
        elif kind == _END:
            pending, self._pending = self._pending or [], None
            for record in pending:
                self._apply(record)
        elif kind == _ABORT:
            self._pending = None
        elif self._pending is not None:
            self._pending.append(message)
        else:
            self._apply(message)

    def _apply(self, message: Any) -> None:
        replay_topic_record(self._topics, self._by_id, message)

    def replicas(self) -> dict[tuple[str, int], tuple[int, ...]]:
        """``{(topic name, partition): replica ids}`` of every partition known now."""
        return {
            (topic.name, p): tuple(part.replicas)
            for topic in self._by_id.values()
            for p, part in topic.partitions.items()
        }
