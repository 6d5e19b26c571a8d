"""Errors of the live log, each carrying the Kafka error a broker returns for it.

Approach: ``kwire.records.AppendError`` covers what the records layer rejects; what only the log
knows (producer state, offsets out of range, a batch larger than a segment) is a ``LogError``
with Kafka's ``Errors`` name and code as plain data, so the broker copies them into responses.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from kwire.errors import KwireError

__all__ = ["LOG_ERROR_CODES", "LogError", "OffsetOutOfRangeError", "ProducerStateError"]

#: Kafka's ``org.apache.kafka.common.protocol.Errors`` codes the log can return.
LOG_ERROR_CODES: Final[Mapping[str, int]] = {
    "OFFSET_OUT_OF_RANGE": 1,
    "RECORD_LIST_TOO_LARGE": 18,
    "OUT_OF_ORDER_SEQUENCE_NUMBER": 45,
    "DUPLICATE_SEQUENCE_NUMBER": 46,
    "INVALID_PRODUCER_EPOCH": 47,
    "INVALID_TXN_STATE": 48,
    "TRANSACTION_COORDINATOR_FENCED": 52,
    "UNKNOWN_PRODUCER_ID": 59,
}


class LogError(KwireError):
    """A failure of a live log operation: ``error_name`` / ``error_code`` as Kafka's ``Errors``."""

    def __init__(self, error_name: str, message: str) -> None:
        if error_name not in LOG_ERROR_CODES:
            raise ValueError(f"not a log error: {error_name}")
        self.error_name = error_name
        self.error_code = LOG_ERROR_CODES[error_name]
        self.message = message
        super().__init__(f"{error_name}: {message}")

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.error_name, self.message))


class ProducerStateError(LogError):
    """Idempotence / transaction checks (``ProducerAppendInfo``): OUT_OF_ORDER_SEQUENCE_NUMBER (45),
    INVALID_PRODUCER_EPOCH (47), INVALID_TXN_STATE (48), TRANSACTION_COORDINATOR_FENCED (52)."""


class OffsetOutOfRangeError(LogError):
    """A read or DeleteRecords offset outside the log (OFFSET_OUT_OF_RANGE, 1)."""

    def __init__(self, error_name: str = "OFFSET_OUT_OF_RANGE", message: str = "") -> None:
        super().__init__(error_name, message)
