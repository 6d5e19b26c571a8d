"""The live log's errors, defined in ``kwire.errors`` (one home for every public exception).

Approach: re-exported here so ``kwire.log`` and its modules name them as before; ``LOG_ERROR_CODES``
maps each of Kafka's ``Errors`` names the log can return to its generated ``ErrorCode``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from kwire.errors import (
    LOG_ERRORS,
    DataDirLockedError,
    KafkaStorageError,
    LogError,
    OffsetOutOfRangeError,
    ProducerStateError,
    kafka_error_code,
)

__all__ = [
    "LOG_ERROR_CODES",
    "DataDirLockedError",
    "KafkaStorageError",
    "LogError",
    "OffsetOutOfRangeError",
    "ProducerStateError",
]

#: Kafka's ``org.apache.kafka.common.protocol.Errors`` codes the log can return.
LOG_ERROR_CODES: Final[Mapping[str, int]] = {
    name: kafka_error_code(name) for name in sorted(LOG_ERRORS)
}
