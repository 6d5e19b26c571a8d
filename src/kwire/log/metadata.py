"""kwire.log.metadata: KRaft's metadata log (``__cluster_metadata``): the record framing
(``encode_metadata_record`` / ``decode_metadata_record``), the record types, the JSON
``kafka-dump-log --cluster-metadata-decoder`` prints, the topic and partition images a replay
builds, and the replica set of each partition (``ReplicaSets``, ``ReplicaSetReader``,
``read_replica_sets``, loaded with the first use of one of these two names: a broker's start
needs neither).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kwire._lazy import lazy_getattr
from kwire.log._metadata_records import (
    CLUSTER_METADATA_DIR,
    CLUSTER_METADATA_TOPIC,
    METADATA_FRAME_VERSION,
    METADATA_RECORD_TYPES,
    MetadataRecord,
    PartitionImage,
    ReplicaSets,
    TopicImage,
    decode_metadata_record,
    encode_metadata_record,
    metadata_record_api_key,
    metadata_record_class,
    metadata_record_json,
    metadata_record_type_name,
    new_metadata_record,
    replay_topic_record,
)

if TYPE_CHECKING:
    from kwire.log._replica_set_reader import ReplicaSetReader, read_replica_sets

__all__ = [
    "CLUSTER_METADATA_DIR",
    "CLUSTER_METADATA_TOPIC",
    "METADATA_FRAME_VERSION",
    "METADATA_RECORD_TYPES",
    "MetadataRecord",
    "PartitionImage",
    "ReplicaSetReader",
    "ReplicaSets",
    "TopicImage",
    "decode_metadata_record",
    "encode_metadata_record",
    "metadata_record_api_key",
    "metadata_record_class",
    "metadata_record_json",
    "metadata_record_type_name",
    "new_metadata_record",
    "read_replica_sets",
    "replay_topic_record",
]


__getattr__ = lazy_getattr(
    globals(),
    "kwire.log",
    {"ReplicaSetReader": "_replica_set_reader", "read_replica_sets": "_replica_set_reader"},
)
