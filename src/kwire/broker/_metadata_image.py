"""The broker's metadata records and the image they replay into: the sans-IO half of the metadata
log (``_metadata_log`` is the files).

A metadata record value is Kafka's ``MetadataRecordSerde`` framing, the frame
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
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import field
from typing import Any, Final

from kwire._lazy import lazy_dataclass
from kwire.log.metadata import (
    METADATA_FRAME_VERSION,
    METADATA_RECORD_TYPES,
    MetadataRecord,
    TopicImage,
    decode_metadata_record,
    encode_metadata_record,
    metadata_record_json,
    metadata_record_type_name,
    new_metadata_record,
    replay_topic_record,
)

__all__ = [
    "CONFIG_BROKER",
    "CONFIG_TOPIC",
    "FRAME_VERSION",
    "LITERAL",
    "METADATA_VERSION_FEATURE",
    "PREFIXED",
    "RECORD_NAMES",
    "SCRAM_MECHANISMS",
    "SECURITY_PROTOCOL_IDS",
    "BrokerImage",
    "DelegationToken",
    "MetadataImage",
    "NodeInfo",
    "Record",
    "ScramChange",
    "ScramCredential",
    "StandardAcl",
    "TopicState",
    "acl_json_records",
    "acl_record",
    "activation_records",
    "bootstrap_records",
    "changes",
    "config_records",
    "create_acl_records",
    "decode_record",
    "delegation_token_record",
    "delete_acl_records",
    "dump_json",
    "encode_record",
    "feature_level_records",
    "fence_broker_record",
    "metadata_version_for",
    "new_record",
    "partition_change_record",
    "partition_records",
    "producer_ids_record",
    "record_type_name",
    "register_broker_records",
    "remove_delegation_token_record",
    "remove_topic_records",
    "scram_json_records",
    "scram_records",
    "topic_records",
]


#: ``MetadataRecordSerde``'s DEFAULT_FRAME_VERSION (``kwire.log.METADATA_FRAME_VERSION``).
FRAME_VERSION: Final = METADATA_FRAME_VERSION


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


new_record = new_metadata_record


Record = MetadataRecord  # (message, version): Kafka's ApiMessageAndVersion


encode_record = encode_metadata_record


decode_record = decode_metadata_record


record_type_name = metadata_record_type_name


dump_json = metadata_record_json


@lazy_dataclass
class BrokerImage:
    """A registered broker as the metadata image holds it (a ``RegisterBrokerRecord``'s fields,
    Kafka's ``BrokerRegistration``); ``fenced`` until it heartbeats."""

    broker_id: int
    broker_epoch: int
    incarnation_id: uuid.UUID
    fenced: bool
    #: (listener name, host, port, security protocol id) as registered
    endpoints: tuple[tuple[str, str, int, int], ...] = ()


@lazy_dataclass(frozen=True)
class ScramCredential:
    """What the broker keeps of a SCRAM password (``ScramCredential``, a
    ``UserScramCredentialRecord``'s fields): never the password."""

    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


@lazy_dataclass(frozen=True)
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


@lazy_dataclass(frozen=True)
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


@lazy_dataclass
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


@lazy_dataclass(frozen=True)
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
    from kwire.protocol.messages import TopicRecord

    out: list[Record] = [(TopicRecord(name=name, topic_id=topic_id), 0)]
    out += config_records(CONFIG_TOPIC, name, {}, configs)
    out += partition_records(node, topic_id, 0, partitions, leaders)
    return out


def partition_records(
    node: NodeInfo, topic_id: uuid.UUID, start: int, end: int, leaders: Sequence[int] = ()
) -> list[Record]:
    """PartitionRecords for partitions ``start .. end-1``: one replica each, its leader
    (``leaders[index]`` in an in-process cluster; else this node)."""
    from kwire.protocol.messages import PartitionRecord

    version = _partition_record_version(node.metadata_version)
    out: list[Record] = []
    for index in range(start, end):
        leader = leaders[index] if index < len(leaders) else node.node_id
        record = PartitionRecord(
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
    from kwire.protocol.messages import PartitionChangeRecord

    record = PartitionChangeRecord(
        partition_id=partition,
        topic_id=topic_id,
        leader=leader,
        isr=[leader],
        replicas=[leader],
    )
    return record, 0


def remove_topic_records(topic_id: uuid.UUID) -> list[Record]:
    from kwire.protocol.messages import RemoveTopicRecord

    return [(RemoveTopicRecord(topic_id=topic_id), 0)]


def config_records(
    resource_type: int, resource_name: str, old: Mapping[str, str], new: Mapping[str, str]
) -> list[Record]:
    """ConfigRecords taking ``old`` overrides to ``new`` (a null value deletes one)."""
    from kwire.protocol.messages import ConfigRecord

    out: list[Record] = []
    for name in sorted(set(old) | set(new)):
        value = new.get(name)
        if old.get(name) == value:
            continue
        out.append(
            (
                ConfigRecord(
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
    from kwire.protocol.messages import ProducerIdsRecord

    return (
        ProducerIdsRecord(
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
    from kwire.protocol.messages import RemoveUserScramCredentialRecord, UserScramCredentialRecord

    out: list[Record] = []
    for user, mechanism, credential in changes:
        record: RemoveUserScramCredentialRecord | UserScramCredentialRecord
        if credential is None:
            record = RemoveUserScramCredentialRecord(name=user, mechanism=mechanism)
        else:
            record = UserScramCredentialRecord(
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
    from kwire.protocol.messages import DelegationTokenRecord

    return DelegationTokenRecord(
        owner=token.owner,
        requester=token.requester,
        renewers=list(token.renewers),
        issue_timestamp=token.issue_timestamp,
        max_timestamp=token.max_timestamp,
        expiration_timestamp=token.expiry_timestamp,
        token_id=token.token_id,
    ), 0


def remove_delegation_token_record(token_id: str) -> Record:
    from kwire.protocol.messages import RemoveDelegationTokenRecord

    return RemoveDelegationTokenRecord(token_id=token_id), 0


def acl_record(acl_id: uuid.UUID, acl: StandardAcl) -> Record:
    """``StandardAclWithId.toRecord``."""
    from kwire.protocol.messages import AccessControlEntryRecord

    return AccessControlEntryRecord(id=acl_id, **acl.fields()), 0


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
    from kwire.protocol.messages import RemoveAccessControlEntryRecord

    return [(RemoveAccessControlEntryRecord(id=acl_id), 0) for acl_id in dict.fromkeys(acl_ids)]


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
    from kwire.protocol.messages import FeatureLevelRecord

    return [
        (FeatureLevelRecord(name=name, feature_level=level), 0)
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
    from kwire.protocol.messages import (
        BeginTransactionRecord,
        EndTransactionRecord,
        ZkMigrationStateRecord,
    )

    out: list[Record] = []
    transactions = metadata_version >= _MV_3_6_IV1
    if transactions:
        out.append((BeginTransactionRecord(name="Bootstrap records"), 0))
    out += bootstrap_records(metadata_version, features)
    if metadata_version >= _MV_3_4_IV0:
        out.append((ZkMigrationStateRecord(zk_migration_state=0), 0))
    if transactions:
        out.append((EndTransactionRecord(), 0))
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
    from kwire.protocol.messages import RegisterBrokerRecord, UnfenceBrokerRecord

    version = _register_broker_record_version(node.metadata_version)
    if endpoints is None:
        endpoints = [("PLAINTEXT", node.host, node.port, 0)]
    register = RegisterBrokerRecord(
        broker_id=node.node_id,
        is_migrating_zk_broker=False,
        incarnation_id=uuid.uuid4(),
        broker_epoch=broker_epoch,
        end_points=[
            RegisterBrokerRecord.BrokerEndpoint(
                name=name, host=host, port=port, security_protocol=protocol
            )
            for name, host, port, protocol in endpoints
        ],
        features=[
            RegisterBrokerRecord.BrokerFeature(
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
    unfence = UnfenceBrokerRecord(id=node.node_id, epoch=broker_epoch)
    return [(register, version), (unfence, 0)]


def fence_broker_record(broker_id: int, broker_epoch: int) -> Record:
    """A broker gone (``ClusterControlManager`` fencing it after its shutdown)."""
    from kwire.protocol.messages import FenceBrokerRecord

    return FenceBrokerRecord(id=broker_id, epoch=broker_epoch), 0


@lazy_dataclass(frozen=True)
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
