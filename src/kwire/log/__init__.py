"""kwire.log: Kafka's log on disk (segments, indexes, producer state, checkpoints) and a writer.

Reading is sans-IO wherever it can be (``Segment``, ``OffsetIndex``, ``TimeIndex``,
``TransactionIndex``, ``scan_batches``, ``partitions_from_paths`` take bytes or path strings), so
the same code serves local files (``open_segment``/``list_log_dir``, read-only ``mmap``) and object
stores (read the bytes yourself). Batches are parsed by ``kwire.records``.

Writing: ``LogWriter`` lays out a partition offline; ``LiveLog`` is the live partition log a broker
appends to and fetches from (Kafka's ``UnifiedLog``, with recovery, retention and producer state),
``LogCleaner`` compacts live logs (``cleanup.policy=compact``; the record rules are sans-IO in
``clean_batches`` / ``build_offset_map``), and ``DataDir`` the broker data directory around them
(``meta.properties``, offset checkpoints).
KRaft's metadata log (``__cluster_metadata``): the record framing (``encode_metadata_record`` /
``decode_metadata_record``) and the replica set of each partition it describes (``ReplicaSets``,
``ReplicaSetReader``, ``read_replica_sets``).
Both writers share one implementation of Kafka's segment rules.
"""

from kwire.log._arrow import to_arrow_batch_reader
from kwire.log._check import (
    DEFAULT_MAX_MESSAGE_SIZE,
    OffsetIndexEntryCheck,
    TimeIndexEntryCheck,
    walk_offset_index,
    walk_time_index,
)
from kwire.log._checkpoint import (
    EpochEntry,
    PartitionMetadata,
    encode_leader_epoch_checkpoint,
    encode_partition_metadata,
    read_leader_epoch_checkpoint,
    read_partition_metadata,
)
from kwire.log._cleaner import CleanResult, LogCleaner, LogToClean
from kwire.log._compaction import (
    CleanedTransactionMetadata,
    CleanerStats,
    CleaningRound,
    LastRecord,
    OffsetMap,
    build_offset_map,
    clean_batches,
)
from kwire.log._datadir import (
    CLEANER_OFFSET_CHECKPOINT,
    LOG_START_OFFSET_CHECKPOINT,
    META_PROPERTIES,
    DataDir,
    encode_offset_checkpoint,
    meta_properties_node_id,
    read_offset_checkpoint,
)
from kwire.log._errors import (
    DataDirLockedError,
    KafkaStorageError,
    LogError,
    OffsetOutOfRangeError,
    ProducerStateError,
)
from kwire.log._failure import LogDirFailureChannel
from kwire.log._fetch_info import (
    FetchDataInfo,
    FileSlice,
    LogAppendInfo,
    batch_formats,
    read_batch_chunks,
)
from kwire.log._files import MappedFile, list_log_dir, open_segment, read_small_file
from kwire.log._index import (
    OffsetIndex,
    OffsetPosition,
    TimeIndex,
    TimestampOffset,
    offset_index_sanity_problem,
    time_index_sanity_problem,
)
from kwire.log._isolation import ReadCommittedFilter, committed_batches, is_abort_marker
from kwire.log._layout import (
    PartitionDir,
    SegmentFiles,
    TopicPartition,
    parse_partition_dir,
    parse_segment_file_name,
    partitions_from_paths,
    segment_base_offset,
    segment_file_beside,
    segment_file_name,
)
from kwire.log._live import LiveLog
from kwire.log._log_config import LogConfig
from kwire.log._log_loader import read_topic_id
from kwire.log._metadata_records import (
    CLUSTER_METADATA_DIR,
    CLUSTER_METADATA_TOPIC,
    METADATA_FRAME_VERSION,
    METADATA_RECORD_TYPES,
    MetadataRecord,
    PartitionImage,
    ReplicaSetReader,
    ReplicaSets,
    TopicImage,
    decode_metadata_record,
    encode_metadata_record,
    metadata_record_api_key,
    metadata_record_class,
    metadata_record_json,
    metadata_record_type_name,
    new_metadata_record,
    read_replica_sets,
    replay_topic_record,
)
from kwire.log._partition import PartitionLog
from kwire.log._producer_state import BatchMetadata, ProducerStateEntry
from kwire.log._sample import MIN_SEGMENT_BYTES, SampleSummary, write_sample
from kwire.log._segment import (
    BatchScan,
    Segment,
    SkippedBytes,
    TimestampAndOffset,
    scan_batches,
    split_ranges,
)
from kwire.log._snapshot import (
    ProducerSnapshot,
    ProducerSnapshotEntry,
    encode_producer_snapshot,
    read_producer_snapshot,
)
from kwire.log._txnindex import (
    AbortedTxn,
    TransactionIndex,
    collect_aborted_transactions,
    encode_txn_index,
    read_txn_index,
)
from kwire.log._writer import LogWriter

__all__ = [
    "CLEANER_OFFSET_CHECKPOINT",
    "CLUSTER_METADATA_DIR",
    "CLUSTER_METADATA_TOPIC",
    "DEFAULT_MAX_MESSAGE_SIZE",
    "LOG_START_OFFSET_CHECKPOINT",
    "METADATA_FRAME_VERSION",
    "METADATA_RECORD_TYPES",
    "META_PROPERTIES",
    "MIN_SEGMENT_BYTES",
    "AbortedTxn",
    "BatchMetadata",
    "BatchScan",
    "CleanResult",
    "CleanedTransactionMetadata",
    "CleanerStats",
    "CleaningRound",
    "DataDir",
    "DataDirLockedError",
    "EpochEntry",
    "FetchDataInfo",
    "FileSlice",
    "KafkaStorageError",
    "LastRecord",
    "LiveLog",
    "LogAppendInfo",
    "LogCleaner",
    "LogConfig",
    "LogDirFailureChannel",
    "LogError",
    "LogToClean",
    "LogWriter",
    "MappedFile",
    "MetadataRecord",
    "OffsetIndex",
    "OffsetIndexEntryCheck",
    "OffsetMap",
    "OffsetOutOfRangeError",
    "OffsetPosition",
    "PartitionDir",
    "PartitionImage",
    "PartitionLog",
    "PartitionMetadata",
    "ProducerSnapshot",
    "ProducerSnapshotEntry",
    "ProducerStateEntry",
    "ProducerStateError",
    "ReadCommittedFilter",
    "ReplicaSetReader",
    "ReplicaSets",
    "SampleSummary",
    "Segment",
    "SegmentFiles",
    "SkippedBytes",
    "TimeIndex",
    "TimeIndexEntryCheck",
    "TimestampAndOffset",
    "TimestampOffset",
    "TopicImage",
    "TopicPartition",
    "TransactionIndex",
    "batch_formats",
    "build_offset_map",
    "clean_batches",
    "collect_aborted_transactions",
    "committed_batches",
    "decode_metadata_record",
    "encode_leader_epoch_checkpoint",
    "encode_metadata_record",
    "encode_offset_checkpoint",
    "encode_partition_metadata",
    "encode_producer_snapshot",
    "encode_txn_index",
    "is_abort_marker",
    "list_log_dir",
    "meta_properties_node_id",
    "metadata_record_api_key",
    "metadata_record_class",
    "metadata_record_json",
    "metadata_record_type_name",
    "new_metadata_record",
    "offset_index_sanity_problem",
    "open_segment",
    "parse_partition_dir",
    "parse_segment_file_name",
    "partitions_from_paths",
    "read_batch_chunks",
    "read_leader_epoch_checkpoint",
    "read_offset_checkpoint",
    "read_partition_metadata",
    "read_producer_snapshot",
    "read_replica_sets",
    "read_small_file",
    "read_topic_id",
    "read_txn_index",
    "replay_topic_record",
    "scan_batches",
    "segment_base_offset",
    "segment_file_beside",
    "segment_file_name",
    "split_ranges",
    "time_index_sanity_problem",
    "to_arrow_batch_reader",
    "walk_offset_index",
    "walk_time_index",
    "write_sample",
]
