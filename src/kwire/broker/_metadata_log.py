"""The broker's own metadata in ``__cluster_metadata``, as a Kafka 3.9 KRaft combined-mode node.

Approach: two halves.

The sans-IO half: a metadata record value is Kafka's ``MetadataRecordSerde`` framing, the frame
version 1, the record's apiKey and version (unsigned varints), then the record's fields. The
framing lives in the log layer (``kwire.log.encode_metadata_record`` / ``decode_metadata_record``,
with kwire's generated classes of Kafka 3.9's ``metadata/src/main/resources/common/metadata``
specs), used here under this module's names ``encode_record`` / ``decode_record``.
``MetadataImage`` is what replaying the records gives (Kafka's ``MetadataImage``, reduced to what
this node needs): topics by name and id with their partitions and config overrides, other config
resources (broker overrides), the next producer id block, the finalized features, the registered
brokers, the SCRAM credentials by (user, mechanism), the ACLs by id and the delegation tokens. ``topic_records``, ``partition_records``,
``remove_topic_records``, ``config_records``, ``producer_ids_record``, ``scram_records`` and
``create_acl_records`` / ``delete_acl_records`` turn a state change into records as Kafka's
controller writes them (``ReplicationControlManager``, ``ConfigurationControlManager``,
``ProducerIdControlManager``, ``ScramControlManager``, ``AclControlManager``), at the record
versions of the node's ``metadata.version`` (``MetadataVersion.partitionRecordVersion``,
``registerBrokerRecordVersion``).

The files (``MetadataLog``): ``<data dir>/__cluster_metadata-0/`` is a ``kwire.log.LiveLog``
(segments, indexes, ``leader-epoch-checkpoint``; no ``partition.metadata``, as Kafka's metadata
log), recovered on every open (a torn tail is truncated) and replayed into the image; data batches
are appended as the quorum leader (``AppendOrigin.COORDINATOR``, the partition leader epoch is the
quorum epoch) and fsynced before the change is used, as KafkaRaftClient flushes before it commits.
``quorum-state`` is ``FileQuorumStateStore``'s JSON (``data_version`` 0, static voters;
``kwire.log._quorum_state`` writes and reads it). A fresh
directory gets what ``kafka-storage format`` and the first start write: ``bootstrap.checkpoint``
(a snapshot with ``FeatureLevelRecord metadata.version``), then in the log the bootstrap records
(``ActivationRecordsGenerator.recordsForEmptyLog``: BeginTransaction, FeatureLevel,
ZkMigrationState NONE, EndTransaction from 3.6-IV1 on). Every open is a new election: the epoch
goes up by one, ``quorum-state`` is rewritten, a ``LeaderChange`` control batch opens the epoch,
and the node registers again (``RegisterBrokerRecord`` with a new incarnation and the record's
offset as broker epoch, then ``UnfenceBrokerRecord``).

SCRAM credentials (``UserScramCredentialRecord``: salt, StoredKey, ServerKey, iterations; never a
password) and ACLs (``AccessControlEntryRecord`` with a random id per ACL, as
``AclControlManager.newAclId``) live only in the log and its image. ``scram-credentials.json`` and
``acls.json``, where an older kwire kept them, are imported once on open (their records appended,
then the file renamed ``<name>.migrated``; an entry the image already holds is not written again,
so an import cut short by a crash is finished on the next open).

Producer ids come in blocks of 1000 (``ProducerIdControlManager``): the image's
``next_producer_id`` is the first id no block has handed out, so ids never repeat after a restart
or a kill. kwire writes no periodic ``<offset>-<epoch>.checkpoint`` snapshots (the log is kept
whole); ``read_snapshot`` reads Kafka's.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import json
import logging
import os
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Self

from kwire._wire import uuid_from_text
from kwire.log._quorum_state import quorum_state_json, read_quorum_state
from kwire.log.metadata import (
    CLUSTER_METADATA_DIR,
    CLUSTER_METADATA_TOPIC,
    METADATA_FRAME_VERSION,
    METADATA_RECORD_TYPES,
    MetadataRecord,
    PartitionImage,
    TopicImage,
    decode_metadata_record,
    encode_metadata_record,
    metadata_record_class,
    metadata_record_json,
    metadata_record_type_name,
    new_metadata_record,
    replay_topic_record,
)
from kwire.log.storage import LiveLog, LogConfig, LogDirFailureChannel, write_atomic
from kwire.records import (
    AppendOrigin,
    BatchBuilder,
    ControlRecordType,
    build_control_batch,
    read_batches,
)

__all__ = [
    "BOOTSTRAP_CHECKPOINT",
    "FRAME_VERSION",
    "METADATA_TOPIC",
    "PRODUCER_ID_BLOCK_SIZE",
    "QUORUM_STATE",
    "RECORD_NAMES",
    "DelegationToken",
    "MetadataImage",
    "MetadataLog",
    "NodeInfo",
    "PartitionImage",
    "ScramCredential",
    "StandardAcl",
    "TopicImage",
    "TopicState",
    "acl_json_records",
    "changes",
    "config_records",
    "create_acl_records",
    "decode_record",
    "delegation_token_record",
    "delete_acl_records",
    "dump_json",
    "encode_record",
    "metadata_version_for",
    "partition_change_record",
    "partition_records",
    "producer_ids_record",
    "read_snapshot",
    "record_type_name",
    "remove_delegation_token_record",
    "remove_topic_records",
    "scram_json_records",
    "scram_records",
    "topic_records",
]

_logger = logging.getLogger("kwire.broker")

METADATA_TOPIC: Final = CLUSTER_METADATA_TOPIC
METADATA_PARTITION_DIR: Final = CLUSTER_METADATA_DIR
QUORUM_STATE: Final = "quorum-state"
BOOTSTRAP_CHECKPOINT: Final = "bootstrap.checkpoint"
#: ``MetadataRecordSerde``'s DEFAULT_FRAME_VERSION (``kwire.log.METADATA_FRAME_VERSION``).
FRAME_VERSION: Final = METADATA_FRAME_VERSION
#: ``ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE``.
PRODUCER_ID_BLOCK_SIZE: Final = 1000
#: ``ConfigResource.Type``.
CONFIG_TOPIC: Final = 2
CONFIG_BROKER: Final = 4
METADATA_VERSION_FEATURE: Final = "metadata.version"
#: ``ScramMechanism``'s ids (UserScramCredentialRecord.Mechanism, the SCRAM APIs' mechanism).
SCRAM_MECHANISMS: Final = {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}
_SCRAM_IDS: Final = {name: key for key, name in SCRAM_MECHANISMS.items()}
#: ``PatternType`` codes of a stored ACL.
LITERAL: Final = 3
PREFIXED: Final = 4
#: Where an older kwire kept SCRAM credentials and ACLs (imported once on open, then renamed).
LEGACY_SCRAM_FILE: Final = "scram-credentials.json"
LEGACY_ACLS_FILE: Final = "acls.json"

#: Kafka 3.9's metadata records by apiKey (``kwire.log.METADATA_RECORD_TYPES``).
RECORD_NAMES: Final = METADATA_RECORD_TYPES

#: ``MetadataVersion`` feature levels (Kafka 3.9.0): the newest level of each release line that
#: has KRaft in production (3.3 on); 3.9-IV0 is the newest stable level the bundled specs know,
#: so later personalities write it too (Kafka 4.x reads it: it still supports 3.3-IV3 and up).
_METADATA_VERSIONS: Final = {
    (3, 3): 7,
    (3, 4): 8,
    (3, 5): 11,
    (3, 6): 14,
    (3, 7): 19,
    (3, 8): 20,
    (3, 9): 21,
}
_MV_3_3_IV3: Final = 7  # InControlledShutdown in RegisterBrokerRecord v1
_MV_3_4_IV0: Final = 8  # migration: RegisterBrokerRecord v2, ZkMigrationStateRecord
_MV_3_6_IV1: Final = 13  # metadata transactions (Begin/EndTransactionRecord)
_MV_3_7_IV2: Final = 17  # directory assignment: PartitionRecord v1, RegisterBrokerRecord v3


def metadata_version_for(release: str) -> int:
    """The ``metadata.version`` feature level a node of ``release`` formats its log with."""
    parts = release.split(".")
    try:
        key = (int(parts[0]), int(parts[1]))
    except (IndexError, ValueError):
        return _METADATA_VERSIONS[(3, 9)]
    if key in _METADATA_VERSIONS:
        return _METADATA_VERSIONS[key]
    return _METADATA_VERSIONS[(3, 9)] if key > (3, 9) else _METADATA_VERSIONS[(3, 3)]


def _partition_record_version(level: int) -> int:
    return 1 if level >= _MV_3_7_IV2 else 0


def _register_broker_record_version(level: int) -> int:
    if level >= _MV_3_7_IV2:
        return 3
    if level >= _MV_3_4_IV0:
        return 2
    return 1 if level >= _MV_3_3_IV3 else 0


# -- the record framing (MetadataRecordSerde): kwire.log's, under this module's older names -------

_record_class = metadata_record_class
new_record = new_metadata_record
Record = MetadataRecord  # (message, version): Kafka's ApiMessageAndVersion
encode_record = encode_metadata_record
decode_record = decode_metadata_record
record_type_name = metadata_record_type_name
dump_json = metadata_record_json


def _struct(record_name: str, *path: str) -> Any:
    from kwire.protocol import struct_class

    return struct_class(_record_class(record_name), *path)


# -- the image ----------------------------------------------------------------------------------


@dataclass
class BrokerImage:
    broker_id: int
    broker_epoch: int
    incarnation_id: uuid.UUID
    fenced: bool
    #: (listener name, host, port, security protocol id) as registered
    endpoints: tuple[tuple[str, str, int, int], ...] = ()


@dataclass(frozen=True, slots=True)
class ScramCredential:
    """What the broker keeps of a SCRAM password (``ScramCredential``, a
    ``UserScramCredentialRecord``'s fields): never the password."""

    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


@dataclass(frozen=True, slots=True)
class DelegationToken:
    """A delegation token as a ``DelegationTokenRecord`` holds it (Kafka's ``TokenInformation``):
    principals as ``"Type:name"`` strings, times in ms. The HMAC is not kept: it is derived from
    the token id and ``delegation.token.secret.key`` wherever it is needed."""

    token_id: str
    owner: str
    requester: str
    renewers: tuple[str, ...]
    issue_timestamp: int
    max_timestamp: int
    expiry_timestamp: int


@dataclass(frozen=True, slots=True)
class StandardAcl:
    """One ACL (Kafka's ``StandardAcl``, an ``AccessControlEntryRecord`` without its id): a
    resource pattern (type, name, LITERAL or PREFIXED) and an access control entry."""

    resource_type: int
    resource_name: str
    pattern_type: int
    principal: str
    host: str
    operation: int
    permission_type: int

    def fields(self) -> dict[str, Any]:
        """The ACL's fields by the names Kafka's ACL records and responses give them."""
        return {
            "resource_type": self.resource_type,
            "resource_name": self.resource_name,
            "pattern_type": self.pattern_type,
            "principal": self.principal,
            "host": self.host,
            "operation": self.operation,
            "permission_type": self.permission_type,
        }

    def matches_resource(self, resource_type: int, name: str) -> bool:
        if self.resource_type != resource_type:
            return False
        if self.pattern_type == LITERAL:
            return self.resource_name in (name, "*")
        return self.pattern_type == PREFIXED and name.startswith(self.resource_name)


@dataclass
class MetadataImage:
    """What replaying metadata records gives; see the module doc."""

    topics: dict[str, TopicImage] = field(default_factory=dict)
    topics_by_id: dict[uuid.UUID, TopicImage] = field(default_factory=dict)
    #: Config overrides by (resource type, resource name): topics (2) by name, brokers (4) by id
    #: ("" for the cluster default).
    configs: dict[tuple[int, str], dict[str, str]] = field(default_factory=dict)
    #: The first producer id no block has handed out (ProducerIdsRecord.NextProducerId).
    next_producer_id: int = 0
    features: dict[str, int] = field(default_factory=dict)
    #: Every feature a FeatureLevelRecord named, removals (level 0) included: a feature absent
    #: here was never set (a log an older kwire wrote), one absent from ``features`` only is 0.
    features_recorded: set[str] = field(default_factory=set)
    brokers: dict[int, BrokerImage] = field(default_factory=dict)
    #: SCRAM credentials by (user, mechanism id: 1 SCRAM-SHA-256, 2 SCRAM-SHA-512).
    scram_credentials: dict[tuple[str, int], ScramCredential] = field(default_factory=dict)
    #: ACLs by id, in the order they were created (``AclControlManager.idToAcl``).
    acls: dict[uuid.UUID, StandardAcl] = field(default_factory=dict)
    #: Delegation tokens by token id (``DelegationTokenImage``).
    delegation_tokens: dict[str, DelegationToken] = field(default_factory=dict)
    #: Client quotas: entity ((type, name or None for the default), sorted) -> key -> value.
    client_quotas: dict[tuple[tuple[str, str | None], ...], dict[str, float]] = field(
        default_factory=dict
    )

    def topic_configs(self, name: str) -> dict[str, str]:
        return dict(self.configs.get((CONFIG_TOPIC, name), {}))

    def broker_configs(self, broker: str = "") -> dict[str, str]:
        return dict(self.configs.get((CONFIG_BROKER, broker), {}))

    def replay(self, message: Any) -> None:
        """Apply one record (Kafka's ``MetadataDelta.replay``); unknown kinds are ignored."""
        kind = type(message).__name__
        if kind in ("TopicRecord", "PartitionRecord", "PartitionChangeRecord", "RemoveTopicRecord"):
            gone = replay_topic_record(self.topics, self.topics_by_id, message)
            if gone is not None:
                self.configs.pop((CONFIG_TOPIC, gone.name), None)
        elif kind == "ConfigRecord":
            entries = self.configs.setdefault((message.resource_type, message.resource_name), {})
            if message.value is None:
                entries.pop(message.name, None)
            else:
                entries[message.name] = message.value
            if not entries:
                del self.configs[(message.resource_type, message.resource_name)]
        elif kind == "ProducerIdsRecord":
            self.next_producer_id = max(self.next_producer_id, message.next_producer_id)
        elif kind == "FeatureLevelRecord":
            self.features_recorded.add(message.name)
            if message.feature_level == 0 and message.name != METADATA_VERSION_FEATURE:
                self.features.pop(message.name, None)
            else:
                self.features[message.name] = message.feature_level
        elif kind == "RegisterBrokerRecord":
            self.brokers[message.broker_id] = BrokerImage(
                message.broker_id,
                message.broker_epoch,
                uuid.UUID(bytes=message.incarnation_id.bytes),
                message.fenced,
                tuple((e.name, e.host, e.port, e.security_protocol) for e in message.end_points),
            )
        elif kind in ("UnfenceBrokerRecord", "FenceBrokerRecord"):
            broker = self.brokers.get(message.id)
            if broker is not None and broker.broker_epoch == message.epoch:
                broker.fenced = kind == "FenceBrokerRecord"
        elif kind == "UnregisterBrokerRecord":
            self.brokers.pop(message.broker_id, None)
        elif kind == "UserScramCredentialRecord":
            self.scram_credentials[(message.name, message.mechanism)] = ScramCredential(
                bytes(message.salt),
                bytes(message.stored_key),
                bytes(message.server_key),
                message.iterations,
            )
        elif kind == "RemoveUserScramCredentialRecord":
            self.scram_credentials.pop((message.name, message.mechanism), None)
        elif kind == "DelegationTokenRecord":
            self.delegation_tokens[message.token_id] = DelegationToken(
                message.token_id,
                message.owner,
                message.requester,
                tuple(message.renewers),
                message.issue_timestamp,
                message.max_timestamp,
                message.expiration_timestamp,
            )
        elif kind == "RemoveDelegationTokenRecord":
            self.delegation_tokens.pop(message.token_id, None)
        elif kind == "AccessControlEntryRecord":
            self.acls[uuid.UUID(bytes=message.id.bytes)] = StandardAcl(
                message.resource_type,
                message.resource_name,
                message.pattern_type,
                message.principal,
                message.host,
                message.operation,
                message.permission_type,
            )
        elif kind == "RemoveAccessControlEntryRecord":
            self.acls.pop(uuid.UUID(bytes=message.id.bytes), None)
        elif kind == "ClientQuotaRecord":
            entity = tuple(sorted((e.entity_type, e.entity_name) for e in message.entity))
            values = self.client_quotas.setdefault(entity, {})
            if message.remove:
                values.pop(message.key, None)
                if not values:
                    del self.client_quotas[entity]
            else:
                values[message.key] = message.value

    def replay_all(self, records: Iterable[Record]) -> None:
        for message, _version in records:
            self.replay(message)


# -- state changes as records ------------------------------------------------------------------


@dataclass(frozen=True)
class NodeInfo:
    """This node as its records name it."""

    node_id: int
    directory_id: uuid.UUID
    metadata_version: int
    host: str = "127.0.0.1"
    port: int = 9092


def topic_records(
    node: NodeInfo,
    name: str,
    topic_id: uuid.UUID,
    partitions: int,
    configs: Mapping[str, str],
    leaders: Sequence[int] = (),
) -> list[Record]:
    """``ReplicationControlManager.createTopic``: the topic, its configs, its partitions."""
    out: list[Record] = [(new_record("TopicRecord", name=name, topic_id=topic_id), 0)]
    out += config_records(CONFIG_TOPIC, name, {}, configs)
    out += partition_records(node, topic_id, 0, partitions, leaders)
    return out


def partition_records(
    node: NodeInfo, topic_id: uuid.UUID, start: int, end: int, leaders: Sequence[int] = ()
) -> list[Record]:
    """PartitionRecords for partitions ``start .. end-1``: one replica each, its leader
    (``leaders[index]`` in an in-process cluster; else this node)."""
    version = _partition_record_version(node.metadata_version)
    out: list[Record] = []
    for index in range(start, end):
        leader = leaders[index] if index < len(leaders) else node.node_id
        record = new_record(
            "PartitionRecord",
            partition_id=index,
            topic_id=topic_id,
            replicas=[leader],
            isr=[leader],
            removing_replicas=[],
            adding_replicas=[],
            leader=leader,
            leader_recovery_state=0,
            leader_epoch=0,
            partition_epoch=0,
            directories=[node.directory_id] if version >= 1 else [],
        )
        out.append((record, version))
    return out


def partition_change_record(topic_id: uuid.UUID, partition: int, leader: int) -> Record:
    """A PartitionChangeRecord moving a partition's leader (and its one replica) to ``leader``;
    replaying it bumps the leader epoch (``PartitionChangeBuilder``)."""
    record = new_record(
        "PartitionChangeRecord",
        partition_id=partition,
        topic_id=topic_id,
        leader=leader,
        isr=[leader],
        replicas=[leader],
    )
    return record, 0


def remove_topic_records(topic_id: uuid.UUID) -> list[Record]:
    return [(new_record("RemoveTopicRecord", topic_id=topic_id), 0)]


def config_records(
    resource_type: int, resource_name: str, old: Mapping[str, str], new: Mapping[str, str]
) -> list[Record]:
    """ConfigRecords taking ``old`` overrides to ``new`` (a null value deletes one)."""
    out: list[Record] = []
    for name in sorted(set(old) | set(new)):
        value = new.get(name)
        if old.get(name) == value:
            continue
        out.append(
            (
                new_record(
                    "ConfigRecord",
                    resource_type=resource_type,
                    resource_name=resource_name,
                    name=name,
                    value=value,
                ),
                0,
            )
        )
    return out


def producer_ids_record(broker_id: int, broker_epoch: int, next_producer_id: int) -> Record:
    """``ProducerIdControlManager.generateNextProducerId``: the block below ``next_producer_id``
    is handed out."""
    return (
        new_record(
            "ProducerIdsRecord",
            broker_id=broker_id,
            broker_epoch=broker_epoch,
            next_producer_id=next_producer_id,
        ),
        0,
    )


ScramChange = tuple[str, int, ScramCredential | None]  # (user, mechanism id, None: delete)


def scram_records(changes: Iterable[ScramChange]) -> list[Record]:
    """``ScramControlManager.alterCredentials``: an upsertion is a UserScramCredentialRecord, a
    deletion (``None``) a RemoveUserScramCredentialRecord."""
    out: list[Record] = []
    for user, mechanism, credential in changes:
        if credential is None:
            record = new_record("RemoveUserScramCredentialRecord", name=user, mechanism=mechanism)
        else:
            record = new_record(
                "UserScramCredentialRecord",
                name=user,
                mechanism=mechanism,
                salt=credential.salt,
                stored_key=credential.stored_key,
                server_key=credential.server_key,
                iterations=credential.iterations,
            )
        out.append((record, 0))
    return out


def delegation_token_record(token: DelegationToken) -> Record:
    """``DelegationTokenData.toRecord``: a new token, or a renewed or shortened one."""
    return new_record(
        "DelegationTokenRecord",
        owner=token.owner,
        requester=token.requester,
        renewers=list(token.renewers),
        issue_timestamp=token.issue_timestamp,
        max_timestamp=token.max_timestamp,
        expiration_timestamp=token.expiry_timestamp,
        token_id=token.token_id,
    ), 0


def remove_delegation_token_record(token_id: str) -> Record:
    return new_record("RemoveDelegationTokenRecord", token_id=token_id), 0


def acl_record(acl_id: uuid.UUID, acl: StandardAcl) -> Record:
    """``StandardAclWithId.toRecord``."""
    return new_record("AccessControlEntryRecord", id=acl_id, **acl.fields()), 0


def create_acl_records(image: MetadataImage, acls: Iterable[StandardAcl]) -> list[Record]:
    """``AclControlManager.createAcls``: an AccessControlEntryRecord with a new random id for
    each ACL the image (or an earlier one of ``acls``) does not hold yet; a duplicate writes
    nothing (and still succeeds)."""
    existing = set(image.acls.values())
    taken = set(image.acls)
    out: list[Record] = []
    for acl in acls:
        if acl in existing:
            continue
        existing.add(acl)
        acl_id = uuid.uuid4()
        while acl_id in taken or acl_id.int == 0:  # newAclId: never a used id, never ZERO
            acl_id = uuid.uuid4()
        taken.add(acl_id)
        out.append(acl_record(acl_id, acl))
    return out


def delete_acl_records(acl_ids: Iterable[uuid.UUID]) -> list[Record]:
    """``AclControlManager.deleteAcls``: a RemoveAccessControlEntryRecord per id (each once)."""
    return [
        (new_record("RemoveAccessControlEntryRecord", id=acl_id), 0)
        for acl_id in dict.fromkeys(acl_ids)
    ]


def scram_json_records(doc: Any, image: MetadataImage) -> list[Record]:
    """The records of an older kwire's ``scram-credentials.json`` (``{"credentials": [{"user",
    "mechanism", "salt", "stored_key", "server_key", "iterations"}]}``, keys in base64) that the
    image does not hold yet."""
    changes: list[ScramChange] = []
    for entry in doc.get("credentials", []) if isinstance(doc, dict) else []:
        key = (str(entry["user"]), _SCRAM_IDS[entry["mechanism"]])
        credential = ScramCredential(
            base64.b64decode(entry["salt"]),
            base64.b64decode(entry["stored_key"]),
            base64.b64decode(entry["server_key"]),
            int(entry["iterations"]),
        )
        if image.scram_credentials.get(key) != credential:
            changes.append((*key, credential))
    return scram_records(changes)


def acl_json_records(doc: Any, image: MetadataImage) -> list[Record]:
    """The records of an older kwire's ``acls.json`` (``{"acls": [{"resource_type",
    "resource_name", "pattern_type", "principal", "host", "operation", "permission_type"}]}``)
    that the image does not hold yet."""
    entries = doc.get("acls", []) if isinstance(doc, dict) else []
    return create_acl_records(image, [StandardAcl(**entry) for entry in entries])


def feature_level_records(levels: Mapping[str, int]) -> list[Record]:
    """One ``FeatureLevelRecord`` per feature (``FeatureControlManager``: level 0 removes a
    feature other than metadata.version from the finalized set)."""
    return [
        (new_record("FeatureLevelRecord", name=name, feature_level=level), 0)
        for name, level in sorted(levels.items())
    ]


def bootstrap_records(
    metadata_version: int, features: Mapping[str, int] | None = None
) -> list[Record]:
    """What ``kafka-storage format`` puts in ``bootstrap.checkpoint``: metadata.version, then
    the other features of a new cluster at a level above 0 (KIP-1022: ``Formatter``)."""
    others = {k: v for k, v in (features or {}).items() if v > 0 and k != METADATA_VERSION_FEATURE}
    return feature_level_records({METADATA_VERSION_FEATURE: metadata_version}) + (
        feature_level_records(others)
    )


def activation_records(
    metadata_version: int, features: Mapping[str, int] | None = None
) -> list[Record]:
    """``ActivationRecordsGenerator.recordsForEmptyLog`` for a KRaft cluster (no ZK migration)."""
    out: list[Record] = []
    transactions = metadata_version >= _MV_3_6_IV1
    if transactions:
        out.append((new_record("BeginTransactionRecord", name="Bootstrap records"), 0))
    out += bootstrap_records(metadata_version, features)
    if metadata_version >= _MV_3_4_IV0:
        out.append((new_record("ZkMigrationStateRecord", zk_migration_state=0), 0))
    if transactions:
        out.append((new_record("EndTransactionRecord"), 0))
    return out


#: Kafka's ``SecurityProtocol`` ids, as RegisterBrokerRecord carries them.
SECURITY_PROTOCOL_IDS: Final = {"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}


def register_broker_records(
    node: NodeInfo,
    broker_epoch: int,
    endpoints: Sequence[tuple[str, str, int, int]] | None = None,
) -> list[Record]:
    """The broker's registration (``ClusterControlManager.registerBroker``), then its unfencing;
    ``endpoints`` (listener name, host, port, security protocol id), by default PLAINTEXT on the
    node's host and port."""
    version = _register_broker_record_version(node.metadata_version)
    if endpoints is None:
        endpoints = [("PLAINTEXT", node.host, node.port, 0)]
    endpoint = _struct("RegisterBrokerRecord", "end_points")
    feature = _struct("RegisterBrokerRecord", "features")
    register = new_record(
        "RegisterBrokerRecord",
        broker_id=node.node_id,
        is_migrating_zk_broker=False,
        incarnation_id=uuid.uuid4(),
        broker_epoch=broker_epoch,
        end_points=[
            endpoint(name=name, host=host, port=port, security_protocol=protocol)
            for name, host, port, protocol in endpoints
        ],
        features=[
            feature(
                name=METADATA_VERSION_FEATURE,
                min_supported_version=1,
                max_supported_version=node.metadata_version,
            )
        ],
        rack=None,
        fenced=True,
        in_controlled_shutdown=False,
        log_dirs=[node.directory_id] if version >= 3 else [],
    )
    unfence = new_record("UnfenceBrokerRecord", id=node.node_id, epoch=broker_epoch)
    return [(register, version), (unfence, 0)]


def fence_broker_record(broker_id: int, broker_epoch: int) -> Record:
    """A broker gone (``ClusterControlManager`` fencing it after its shutdown)."""
    return new_record("FenceBrokerRecord", id=broker_id, epoch=broker_epoch), 0


# -- files --------------------------------------------------------------------------------------


def _kafka_uuid(text: str) -> uuid.UUID:
    """A Kafka ``Uuid`` string (base64url, no padding) as a UUID."""
    return uuid.UUID(bytes=uuid_from_text(text))


def data_batch(records: Iterable[Record], *, offset: int, now_ms: int, leader_epoch: int) -> bytes:
    """One v2 batch of metadata records (no key, the serde's value), as the raft leader writes."""
    builder = BatchBuilder(2, base_offset=offset, partition_leader_epoch=leader_epoch)
    for message, version in records:
        builder.append(None, now_ms, None, encode_record(message, version))
    return builder.build()


def snapshot_bytes(records: list[Record], *, now_ms: int, last_timestamp: int = -1) -> bytes:
    """A snapshot file (``RecordsSnapshotWriter``): SnapshotHeader, the records, SnapshotFooter."""
    header = new_record(
        "SnapshotHeaderRecord", version=0, last_contained_log_timestamp=last_timestamp
    )
    footer = new_record("SnapshotFooterRecord", version=0)
    out = build_control_batch(
        ControlRecordType.SNAPSHOT_HEADER,
        header,
        offset=0,
        timestamp=now_ms,
        partition_leader_epoch=0,
    )
    out += data_batch(records, offset=1, now_ms=now_ms, leader_epoch=0)
    out += build_control_batch(
        ControlRecordType.SNAPSHOT_FOOTER,
        footer,
        offset=1 + len(records),
        timestamp=now_ms,
        partition_leader_epoch=0,
    )
    return out


def read_snapshot(data: bytes) -> list[Record]:
    """The metadata records of a snapshot file (``bootstrap.checkpoint``, ``<o>-<e>.checkpoint``)."""
    return list(_batch_records(data))


def _batch_records(data: bytes | memoryview) -> Iterator[Record]:
    for batch in read_batches(data):
        if batch.is_control:
            continue
        for record in batch:
            if record.value is not None:
                yield decode_record(record.value)


class ImageView:
    """A store that is a view of the metadata image (SCRAM credentials, ACLs): a change is records
    handed to ``append``, which writes them to ``__cluster_metadata`` (fsynced) and replays them
    into the image before returning; the store keeps nothing of its own. ``in_memory()`` gives a
    store over an image of its own, without a log (tests, tools)."""

    def __init__(self, image: MetadataImage, append: Callable[[list[Record]], None]) -> None:
        self._image = image
        self._append = append

    @classmethod
    def in_memory(cls) -> Self:
        image = MetadataImage()
        return cls(image, image.replay_all)

    def _write(self, records: list[Record]) -> None:
        if records:
            self._append(records)


class MetadataLog:
    """``__cluster_metadata-0``, ``quorum-state`` and ``bootstrap.checkpoint`` of one data
    directory; see the module doc. ``MetadataLog.open`` reads them back into ``image``."""

    def __init__(self, root: str, node: NodeInfo, live: LiveLog, epoch: int) -> None:
        self.root = root
        self.node = node
        self.log = live
        self.epoch = epoch
        self.image = MetadataImage()
        #: Whether the log held no metadata records when it was opened.
        self.fresh = True
        self.broker_epoch = -1

    @classmethod
    def open(
        cls,
        root: str | os.PathLike[str],
        *,
        node_id: int,
        directory_id: str,
        release: str,
        now_ms: int,
        host: str = "127.0.0.1",
        port: int = 9092,
        failure_channel: LogDirFailureChannel | None = None,
        features: Mapping[str, int] | None = None,
    ) -> MetadataLog:
        """Open ``__cluster_metadata`` in ``root``; ``failure_channel`` is the data directory's
        (an I/O error of the metadata log takes the directory offline). ``features``: the
        finalized levels of a new cluster besides metadata.version (bootstrapped on a fresh log;
        on an older log, written for the features no record has named yet)."""
        root = os.fspath(root)
        level = metadata_version_for(release)
        node = NodeInfo(node_id, _kafka_uuid(directory_id), level, host, port)
        config = LogConfig(retention_ms=-1, retention_bytes=-1)
        live = LiveLog.open(
            os.path.join(root, METADATA_PARTITION_DIR),
            config,
            now_ms=now_ms,
            failure_channel=failure_channel,
        )
        quorum_path = os.path.join(root, METADATA_PARTITION_DIR, QUORUM_STATE)
        state = read_quorum_state(quorum_path)
        previous = max(int(state.get("leaderEpoch", 0)) if state else 0, live.latest_epoch or 0)
        self = cls(root, node, live, previous + 1)
        try:
            for message, _version in self._read_log():
                self.image.replay(message)
                self.fresh = False
            if level and self.image.features.get(METADATA_VERSION_FEATURE):
                level = self.image.features[METADATA_VERSION_FEATURE]
                self.node = NodeInfo(node_id, node.directory_id, level, host, port)
            # A new election: quorum-state first (Kafka's durable transition), then LeaderChange.
            write_atomic(
                quorum_path, quorum_state_json(node_id, self.epoch, [node_id]).encode("utf-8")
            )
            self._leader_change(now_ms)
            if self.fresh:
                bootstrap = os.path.join(root, BOOTSTRAP_CHECKPOINT)
                if not os.path.exists(bootstrap):
                    write_atomic(
                        bootstrap,
                        snapshot_bytes(bootstrap_records(level, features), now_ms=now_ms),
                    )
                self.append(activation_records(level, features), now_ms)
            else:
                # A log written before kwire finalized these features: they take the new
                # cluster's levels once, as a fresh format would have given them.
                missing = {
                    name: value
                    for name, value in (features or {}).items()
                    if value > 0
                    and name != METADATA_VERSION_FEATURE
                    and name not in self.image.features_recorded
                }
                self.append(feature_level_records(missing), now_ms)
            self.broker_epoch = self.log.log_end_offset
            self.append(register_broker_records(self.node, self.broker_epoch), now_ms)
            self._import_legacy(LEGACY_SCRAM_FILE, scram_json_records, now_ms)
            self._import_legacy(LEGACY_ACLS_FILE, acl_json_records, now_ms)
        except BaseException:
            live.close()
            raise
        return self

    def _import_legacy(
        self, name: str, convert: Callable[[Any, MetadataImage], list[Record]], now_ms: int
    ) -> None:
        """Import ``<root>/<name>`` of an older kwire: its records (those the image lacks) are
        appended and fsynced, then the file is renamed ``<name>.migrated``."""
        path = os.path.join(self.root, name)
        try:
            with open(path, encoding="utf-8") as f:
                doc = json.load(f)
        except FileNotFoundError:
            return
        self.append(convert(doc, self.image), now_ms)
        os.replace(path, path + ".migrated")
        _logger.info("migrated %s into the metadata log", name)

    def _read_log(self) -> Iterator[Record]:
        start = self.log.log_start_offset
        for batch in self.log.iter_batches():
            if batch.is_control:
                continue
            for record in batch:
                if record.offset >= start and record.value is not None:
                    yield decode_record(record.value)

    def _leader_change(self, now_ms: int) -> None:
        voter = _struct("LeaderChangeMessage", "voters")
        value = new_record(
            "LeaderChangeMessage",
            version=0,
            leader_id=self.node.node_id,
            voters=[voter(voter_id=self.node.node_id)],
            granting_voters=[voter(voter_id=self.node.node_id)],
        )
        batch = build_control_batch(
            ControlRecordType.LEADER_CHANGE,
            value,
            offset=self.log.log_end_offset,
            timestamp=now_ms,
            partition_leader_epoch=self.epoch,
        )
        self._write(batch, now_ms)

    def _write(self, batch: bytes, now_ms: int) -> None:
        self.log.append_as_leader(
            batch, now_ms=now_ms, leader_epoch=self.epoch, origin=AppendOrigin.COORDINATOR
        )
        self.log.flush(now_ms)
        self.log.high_watermark = self.log.log_end_offset

    def append(self, records: list[Record], now_ms: int) -> None:
        """Append ``records`` as one batch, fsync, then apply them to the image."""
        if not records:
            return
        batch = data_batch(
            records, offset=self.log.log_end_offset, now_ms=now_ms, leader_epoch=self.epoch
        )
        self._write(batch, now_ms)
        self.image.replay_all(records)

    def register(
        self, node_id: int, endpoints: Sequence[tuple[str, str, int, int]], now_ms: int
    ) -> None:
        """Register node ``node_id`` with ``endpoints`` and unfence it (its broker epoch the
        record's offset, as ``ClusterControlManager`` gives), unless the image has it already,
        unfenced, with the same endpoints."""
        known = self.image.brokers.get(node_id)
        if known is not None and not known.fenced and list(known.endpoints) == list(endpoints):
            return
        epoch = self.log.log_end_offset
        node = dataclasses.replace(self.node, node_id=node_id)
        self.append(register_broker_records(node, epoch, endpoints), now_ms)
        if node_id == self.node.node_id:
            self.broker_epoch = epoch

    def fence(self, node_id: int, now_ms: int) -> None:
        """Fence node ``node_id`` (gone) if it is registered and not fenced yet."""
        known = self.image.brokers.get(node_id)
        if known is not None and not known.fenced:
            self.append([fence_broker_record(node_id, known.broker_epoch)], now_ms)

    def allocate_producer_ids(self, now_ms: int, at_least: int = 0) -> int:
        """Hand out the next block (of 1000, from ``at_least`` when that is higher); returns the
        block's first id. The block is in the log before an id of it is used."""
        start = max(self.image.next_producer_id, at_least)
        self.append(
            [
                producer_ids_record(
                    self.node.node_id, self.broker_epoch, start + PRODUCER_ID_BLOCK_SIZE
                )
            ],
            now_ms,
        )
        return start

    def set_metadata_version(self, level: int) -> None:
        """Write later records at ``level``'s record versions (a metadata.version upgrade)."""
        self.node = dataclasses.replace(self.node, metadata_version=level)

    @property
    def features_epoch(self) -> int:
        """The offset of the last record applied (Kafka's ``FinalizedFeaturesEpoch``: the
        metadata image's offset)."""
        return self.log.log_end_offset - 1

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.log.flush()
        self.log.close()


@dataclass(frozen=True)
class TopicState:
    """A topic as the broker holds it, to compare with the image."""

    topic_id: uuid.UUID
    partitions: int
    configs: Mapping[str, str]
    leaders: Sequence[int] = ()  # each partition's leader at creation (in-process clusters)


def changes(image: MetadataImage, node: NodeInfo, topics: Mapping[str, TopicState]) -> list[Record]:
    """The records that take ``image`` to ``topics``: removed topics (RemoveTopicRecord), new
    ones (``topic_records``), added partitions, changed config overrides."""
    out: list[Record] = []
    for topic_id, old in sorted(image.topics_by_id.items(), key=lambda kv: kv[1].name):
        now = topics.get(old.name)
        if now is None or now.topic_id != topic_id:
            out += remove_topic_records(topic_id)
    for name, now in sorted(topics.items()):
        found = image.topics_by_id.get(now.topic_id)
        if found is None or found.name != name:
            out += topic_records(node, name, now.topic_id, now.partitions, now.configs, now.leaders)
            continue
        out += config_records(CONFIG_TOPIC, name, image.topic_configs(name), now.configs)
        if now.partitions > len(found.partitions):
            out += partition_records(
                node, now.topic_id, len(found.partitions), now.partitions, now.leaders
            )
    return out
