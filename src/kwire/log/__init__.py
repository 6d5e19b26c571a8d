"""kwire.log: Kafka's log on disk, for readers of log directories (segments, indexes, producer
snapshots, checkpoints, the layout of a data directory) and the offline writer.

Reading is sans-IO wherever it can be (``Segment``, ``OffsetIndex``, ``TimeIndex``,
``TransactionIndex``, ``scan_batches``, ``partitions_from_paths`` take bytes or path strings), so
the same code serves local files (``open_segment``/``list_log_dir``, read-only ``mmap``) and object
stores (read the bytes yourself). Batches are parsed by ``kwire.records``. ``LogWriter`` lays out
a partition offline.

Grouped apart, in public submodules:

- ``kwire.log.storage``: what the broker uses, its storage boundary (``LiveLog``, Kafka's
  ``UnifiedLog``; ``DataDir``; ``LogCleaner``; what reads and appends answer);
- ``kwire.log.metadata``: KRaft's metadata log (``__cluster_metadata``) records and images;
- ``kwire.log.internal_topics``: the rules of Kafka's internal topics (names, record types,
  framing, the partition of a key, the dump's JSON).

Every writer shares one implementation of Kafka's segment rules.
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
from kwire.log._datadir import (
    CLEANER_OFFSET_CHECKPOINT,
    LOG_START_OFFSET_CHECKPOINT,
    META_PROPERTIES,
    encode_offset_checkpoint,
    meta_properties_node_id,
    read_offset_checkpoint,
)
from kwire.log._errors import (
    LogError,
    OffsetOutOfRangeError,
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
from kwire.log._partition import PartitionLog
from kwire.log._producer_state import BatchMetadata
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
    "DEFAULT_MAX_MESSAGE_SIZE",
    "LOG_START_OFFSET_CHECKPOINT",
    "META_PROPERTIES",
    "MIN_SEGMENT_BYTES",
    "AbortedTxn",
    "BatchMetadata",
    "BatchScan",
    "EpochEntry",
    "LogError",
    "LogWriter",
    "MappedFile",
    "OffsetIndex",
    "OffsetIndexEntryCheck",
    "OffsetOutOfRangeError",
    "OffsetPosition",
    "PartitionDir",
    "PartitionLog",
    "PartitionMetadata",
    "ProducerSnapshot",
    "ProducerSnapshotEntry",
    "ReadCommittedFilter",
    "SampleSummary",
    "Segment",
    "SegmentFiles",
    "SkippedBytes",
    "TimeIndex",
    "TimeIndexEntryCheck",
    "TimestampAndOffset",
    "TimestampOffset",
    "TopicPartition",
    "TransactionIndex",
    "collect_aborted_transactions",
    "committed_batches",
    "encode_leader_epoch_checkpoint",
    "encode_offset_checkpoint",
    "encode_partition_metadata",
    "encode_producer_snapshot",
    "encode_txn_index",
    "is_abort_marker",
    "list_log_dir",
    "meta_properties_node_id",
    "offset_index_sanity_problem",
    "open_segment",
    "parse_partition_dir",
    "parse_segment_file_name",
    "partitions_from_paths",
    "read_leader_epoch_checkpoint",
    "read_offset_checkpoint",
    "read_partition_metadata",
    "read_producer_snapshot",
    "read_small_file",
    "read_txn_index",
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
