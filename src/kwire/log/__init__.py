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

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from kwire._lazy import lazy_getattr

if TYPE_CHECKING:
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
        encode_offset_checkpoint,
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
    from kwire.log._meta_properties import (
        META_PROPERTIES,
        MetaProperties,
        meta_properties_node_id,
        read_meta_properties,
        verify_ensemble,
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
    "MetaProperties",
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
    "read_meta_properties",
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
    "verify_ensemble",
    "walk_offset_index",
    "walk_time_index",
    "write_sample",
]


#: Public name -> the module that defines it: the package imports only that module (and what it
#: imports) on the first use of a name, so the broker, which needs the live log and not the
#: offline readers (Arrow, the index checks, samples), does not load them at start.
_HOME: Final = {
    "AbortedTxn": "_txnindex",
    "BatchMetadata": "_producer_state",
    "BatchScan": "_segment",
    "CLEANER_OFFSET_CHECKPOINT": "_datadir",
    "DEFAULT_MAX_MESSAGE_SIZE": "_check",
    "EpochEntry": "_checkpoint",
    "LOG_START_OFFSET_CHECKPOINT": "_datadir",
    "LogError": "_errors",
    "LogWriter": "_writer",
    "META_PROPERTIES": "_meta_properties",
    "MetaProperties": "_meta_properties",
    "read_meta_properties": "_meta_properties",
    "verify_ensemble": "_meta_properties",
    "MIN_SEGMENT_BYTES": "_sample",
    "MappedFile": "_files",
    "OffsetIndex": "_index",
    "OffsetIndexEntryCheck": "_check",
    "OffsetOutOfRangeError": "_errors",
    "OffsetPosition": "_index",
    "PartitionDir": "_layout",
    "PartitionLog": "_partition",
    "PartitionMetadata": "_checkpoint",
    "ProducerSnapshot": "_snapshot",
    "ProducerSnapshotEntry": "_snapshot",
    "ReadCommittedFilter": "_isolation",
    "SampleSummary": "_sample",
    "Segment": "_segment",
    "SegmentFiles": "_layout",
    "SkippedBytes": "_segment",
    "TimeIndex": "_index",
    "TimeIndexEntryCheck": "_check",
    "TimestampAndOffset": "_segment",
    "TimestampOffset": "_index",
    "TopicPartition": "_layout",
    "TransactionIndex": "_txnindex",
    "collect_aborted_transactions": "_txnindex",
    "committed_batches": "_isolation",
    "encode_leader_epoch_checkpoint": "_checkpoint",
    "encode_offset_checkpoint": "_datadir",
    "encode_partition_metadata": "_checkpoint",
    "encode_producer_snapshot": "_snapshot",
    "encode_txn_index": "_txnindex",
    "is_abort_marker": "_isolation",
    "list_log_dir": "_files",
    "meta_properties_node_id": "_meta_properties",
    "offset_index_sanity_problem": "_index",
    "open_segment": "_files",
    "parse_partition_dir": "_layout",
    "parse_segment_file_name": "_layout",
    "partitions_from_paths": "_layout",
    "read_leader_epoch_checkpoint": "_checkpoint",
    "read_offset_checkpoint": "_datadir",
    "read_partition_metadata": "_checkpoint",
    "read_producer_snapshot": "_snapshot",
    "read_small_file": "_files",
    "read_txn_index": "_txnindex",
    "scan_batches": "_segment",
    "segment_base_offset": "_layout",
    "segment_file_beside": "_layout",
    "segment_file_name": "_layout",
    "split_ranges": "_segment",
    "time_index_sanity_problem": "_index",
    "to_arrow_batch_reader": "_arrow",
    "walk_offset_index": "_check",
    "walk_time_index": "_check",
    "write_sample": "_sample",
}


__getattr__ = lazy_getattr(globals(), "kwire.log", _HOME)
