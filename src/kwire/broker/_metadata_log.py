"""The broker's own metadata in ``__cluster_metadata``, as a Kafka 3.9 KRaft combined-mode node.

Approach: two halves. The sans-IO half (the records, the image they replay into, the record
versions of each ``metadata.version``) is ``_metadata_image``; this module re-exports its names,
so the broker reaches the metadata log through one module. This module is the files.

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

import contextlib
import dataclasses
import logging
import os
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, Final, Self

from kwire._wire import uuid_from_text
from kwire.broker._metadata_image import (
    CONFIG_BROKER,
    FRAME_VERSION,
    METADATA_VERSION_FEATURE,
    RECORD_NAMES,
    SCRAM_MECHANISMS,
    SECURITY_PROTOCOL_IDS,
    DelegationToken,
    MetadataImage,
    NodeInfo,
    Record,
    ScramCredential,
    StandardAcl,
    TopicState,
    _struct,
    acl_json_records,
    activation_records,
    bootstrap_records,
    changes,
    config_records,
    create_acl_records,
    decode_record,
    delegation_token_record,
    delete_acl_records,
    dump_json,
    encode_record,
    feature_level_records,
    fence_broker_record,
    metadata_version_for,
    new_record,
    partition_change_record,
    partition_records,
    producer_ids_record,
    record_type_name,
    register_broker_records,
    remove_delegation_token_record,
    remove_topic_records,
    scram_json_records,
    scram_records,
    topic_records,
)
from kwire.log._quorum_state import quorum_state_json, read_quorum_state
from kwire.log.metadata import (
    CLUSTER_METADATA_DIR,
    CLUSTER_METADATA_TOPIC,
    PartitionImage,
    TopicImage,
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
    "CONFIG_BROKER",
    "FRAME_VERSION",
    "METADATA_TOPIC",
    "METADATA_VERSION_FEATURE",
    "PRODUCER_ID_BLOCK_SIZE",
    "QUORUM_STATE",
    "RECORD_NAMES",
    "SCRAM_MECHANISMS",
    "SECURITY_PROTOCOL_IDS",
    "DelegationToken",
    "ImageView",
    "MetadataImage",
    "MetadataLog",
    "NodeInfo",
    "PartitionImage",
    "Record",
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
    "feature_level_records",
    "metadata_version_for",
    "new_record",
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


#: ``ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE``.
PRODUCER_ID_BLOCK_SIZE: Final = 1000


#: Where an older kwire kept SCRAM credentials and ACLs (imported once on open, then renamed).
LEGACY_SCRAM_FILE: Final = "scram-credentials.json"


LEGACY_ACLS_FILE: Final = "acls.json"


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
            f = open(path, encoding="utf-8")  # noqa: SIM115 - closed below
        except FileNotFoundError:
            return
        import json  # here: only an older kwire's data directory has these files

        with f:
            doc = json.load(f)
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
