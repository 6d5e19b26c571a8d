"""kwire.log.storage: what the broker uses of the log layer, its storage boundary.

``LiveLog`` is a partition's live log (Kafka's ``UnifiedLog``: append, roll, read, retention,
recovery at open); ``DataDir`` the data directory around the logs (``meta.properties``, offset
checkpoints, the lock, ``LogDirFailureChannel`` taking it offline on an I/O error); ``LogCleaner``
compacts them (the record rules, sans-IO, are ``clean_batches`` / ``build_offset_map``). Files are
touched here and nowhere in the broker. A reader of log directories needs none of this: see
``kwire.log``. The cleaner's names load their modules on first use: a broker with no compacted
log never needs them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Final

from kwire.log._datadir import DataDir
from kwire.log._errors import DataDirLockedError, KafkaStorageError, ProducerStateError
from kwire.log._failure import LogDirFailureChannel
from kwire.log._fetch_info import (
    FetchDataInfo,
    FileSlice,
    LogAppendInfo,
    batch_formats,
    read_batch_chunks,
)
from kwire.log._live import LiveLog
from kwire.log._log_config import LogConfig
from kwire.log._log_loader import read_topic_id
from kwire.log._producer_state import ProducerStateEntry
from kwire.log._writer import write_atomic

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
    "FileSlice",
    "KafkaStorageError",
    "LastRecord",
    "LiveLog",
    "LogAppendInfo",
    "LogCleaner",
    "LogConfig",
    "LogDirFailureChannel",
    "LogToClean",
    "OffsetMap",
    "ProducerStateEntry",
    "ProducerStateError",
    "batch_formats",
    "build_offset_map",
    "clean_batches",
    "read_batch_chunks",
    "read_topic_id",
    "write_atomic",
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


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'kwire.log.storage' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"kwire.log.{home}"), name)
    globals()[name] = value
    return value
