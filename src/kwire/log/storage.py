"""kwire.log.storage: what the broker uses of the log layer, its storage boundary.

``LiveLog`` is a partition's live log (Kafka's ``UnifiedLog``: append, roll, read, retention,
recovery at open); ``DataDir`` the data directory around the logs (``meta.properties``, offset
checkpoints, the lock, ``LogDirFailureChannel`` taking it offline on an I/O error); ``LogCleaner``
compacts them (the record rules, sans-IO, are ``clean_batches`` / ``build_offset_map``). Files are
touched here and nowhere in the broker (``tests/unit/broker/test_no_file_io.py`` scans for it):
the byte ranges a read answers are held, read and released with ``hold_slices`` /
``read_slices`` / ``release_slices``, an older kwire's JSON files are imported with
``read_legacy_json`` / ``retire_legacy_file``. A segment's bytes are ``SegmentRecords`` of a
``SegmentStore``: files (``FileSegmentStore``, the broker's) or bytearrays
(``MemorySegmentStore``: a ``LiveLog`` opened over one needs no disk, for property tests), each
with an ``IndexStore`` for the segments' indexes. A reader of log
directories needs none of this: see ``kwire.log``. The cleaner's names load their modules on
first use: a broker with no compacted log never needs them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from kwire._lazy import lazy_getattr
from kwire.log._datadir import DataDir
from kwire.log._errors import DataDirLockedError, KafkaStorageError, ProducerStateError
from kwire.log._failure import LogDirFailureChannel
from kwire.log._fetch_info import (
    FetchDataInfo,
    FileSlice,
    LogAppendInfo,
    batch_formats,
    hold_slices,
    read_batch_chunks,
    read_slices,
    release_slices,
)
from kwire.log._legacy import read_legacy_json, retire_legacy_file
from kwire.log._live import LiveLog
from kwire.log._log_config import LogConfig
from kwire.log._log_loader import read_topic_id
from kwire.log._producer_state import ProducerStateEntry
from kwire.log._store import (
    FileIndexStore,
    FileSegmentRecords,
    FileSegmentStore,
    IndexStore,
    MemoryIndexStore,
    MemorySegmentRecords,
    MemorySegmentStore,
    SegmentRecords,
    SegmentStore,
)
from kwire.log._writer import write_atomic, write_atomic_once

if TYPE_CHECKING:
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

__all__ = [
    "CleanResult",
    "CleanedTransactionMetadata",
    "CleanerStats",
    "CleaningRound",
    "DataDir",
    "DataDirLockedError",
    "FetchDataInfo",
    "FileIndexStore",
    "FileSegmentRecords",
    "FileSegmentStore",
    "FileSlice",
    "IndexStore",
    "KafkaStorageError",
    "LastRecord",
    "LiveLog",
    "LogAppendInfo",
    "LogCleaner",
    "LogConfig",
    "LogDirFailureChannel",
    "LogToClean",
    "MemoryIndexStore",
    "MemorySegmentRecords",
    "MemorySegmentStore",
    "OffsetMap",
    "ProducerStateEntry",
    "ProducerStateError",
    "SegmentRecords",
    "SegmentStore",
    "batch_formats",
    "build_offset_map",
    "clean_batches",
    "hold_slices",
    "read_batch_chunks",
    "read_legacy_json",
    "read_slices",
    "read_topic_id",
    "release_slices",
    "retire_legacy_file",
    "write_atomic",
    "write_atomic_once",
]


#: Public name -> the module that defines it, imported on the first use of the name (the rest of
#: this module's names are imported above).
_HOME: Final = {
    "CleanResult": "_cleaner",
    "LogCleaner": "_cleaner",
    "LogToClean": "_cleaner",
    "CleanedTransactionMetadata": "_compaction",
    "CleanerStats": "_compaction",
    "CleaningRound": "_compaction",
    "LastRecord": "_compaction",
    "OffsetMap": "_compaction",
    "build_offset_map": "_compaction",
    "clean_batches": "_compaction",
}


__getattr__ = lazy_getattr(globals(), "kwire.log", _HOME)
