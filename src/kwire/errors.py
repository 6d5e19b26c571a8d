"""kwire's exception hierarchy: every public exception and warning of every layer, in one module.

Approach: one flat module below every layer, so each layer raises these types and a caller catches
them from one place (the layers re-export the ones they raise). Every failure kwire reports on
purpose is a ``KwireError``. Decoding failures carry *where* they
happened: a byte ``offset`` into the buffer the caller passed and a ``path`` such as
``MetadataResponse.topics[3].partitions[7].leader_epoch``, so a user can find the bad byte.
Foreign exceptions (``struct.error``, ``IndexError``, ``UnicodeDecodeError``, codec errors) are
translated at the boundary; any other exception escaping a decoder is a bug.

Errors a broker returns to a client (``AppendError``, ``LogError``) carry Kafka's ``Errors`` name;
their ``error_code`` is the generated ``kwire.protocol.ErrorCode`` of that name (looked up when
asked, so this module imports no layer above it).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from kwire._lazy import lazy_dataclass

__all__ = [
    "APPEND_ERRORS",
    "LOG_ERRORS",
    "AppendError",
    "CorruptRecordError",
    "DataDirLockedError",
    "DecodeError",
    "DecompressedSizeError",
    "EncodeError",
    "FastPathError",
    "FastPathFallbackWarning",
    "FrameSizeError",
    "KafkaStorageError",
    "KwireError",
    "LogError",
    "OffsetOutOfRangeError",
    "OptionError",
    "ProducerStateError",
    "RecordError",
    "SpecError",
    "UnsupportedCodecError",
    "UnsupportedVersionError",
    "kafka_error_code",
]

#: The Kafka errors (``Errors`` names) the records layer's append path can return.
APPEND_ERRORS: Final = frozenset(
    {
        "CORRUPT_MESSAGE",
        "MESSAGE_TOO_LARGE",
        "INVALID_TIMESTAMP",
        "UNSUPPORTED_FOR_MESSAGE_FORMAT",
        "UNSUPPORTED_COMPRESSION_TYPE",
        "INVALID_RECORD",
    }
)
#: The Kafka errors (``Errors`` names) only the live log knows about.
LOG_ERRORS: Final = frozenset(
    {
        "OFFSET_OUT_OF_RANGE",
        "RECORD_LIST_TOO_LARGE",
        "OUT_OF_ORDER_SEQUENCE_NUMBER",
        "DUPLICATE_SEQUENCE_NUMBER",
        "INVALID_PRODUCER_EPOCH",
        "INVALID_TXN_STATE",
        "TRANSACTION_COORDINATOR_FENCED",
        "UNKNOWN_PRODUCER_ID",
        "KAFKA_STORAGE_ERROR",
    }
)


def kafka_error_code(error_name: str) -> int:
    """The code of Kafka's ``Errors`` constant ``error_name`` (the generated ``ErrorCode``)."""
    from kwire.protocol._error_codes import ErrorCode

    return int(ErrorCode[error_name])


class KwireError(Exception):
    """Base class of every error kwire raises on purpose (never raised directly)."""


class DecodeError(KwireError, ValueError):
    """Bytes that cannot be decoded: says what was wrong, at which byte offset and field path."""

    def __init__(
        self,
        reason: str,
        *,
        offset: int | None = None,
        path: str | None = None,
        context: str | None = None,
    ) -> None:
        self.reason = reason
        self.offset = offset
        self.path = path
        self.context = context
        super().__init__(self._render())

    def _render(self) -> str:
        where = []
        if self.context:
            where.append(self.context)
        if self.path:
            where.append(f"field {self.path}")
        if self.offset is not None:
            where.append(f"byte offset {self.offset}")
        return f"{self.reason} ({', '.join(where)})" if where else self.reason

    def __reduce__(self) -> tuple[object, ...]:
        # Keep the keyword-only attributes across pickling (Spark ships exceptions between processes).
        return (
            _rebuild_decode_error,
            (type(self), self.reason, self.offset, self.path, self.context),
        )


def _rebuild_decode_error(
    cls: type[DecodeError], reason: str, offset: int | None, path: str | None, context: str | None
) -> DecodeError:
    return cls(reason, offset=offset, path=path, context=context)


class CorruptRecordError(DecodeError):
    """A record batch or message set that is malformed: bad CRC, bad lengths, bad compression."""


class DecompressedSizeError(CorruptRecordError):
    """Compressed records that decompress beyond the cap given (``max_decompressed_size``): a
    compression bomb, or a cap too small for them."""

    def __init__(self, message: str, limit: int) -> None:
        super().__init__(message)
        self.limit = limit


class FrameSizeError(DecodeError):
    """A frame whose size prefix is negative or above the limit: nothing after it can be read, so
    the connection closes (Kafka's ``InvalidReceiveException``)."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(
            f"invalid frame size {size} (the limit is {limit})", offset=0, context="frame"
        )
        self.size = size
        self.limit = limit

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.size, self.limit))


class EncodeError(KwireError, ValueError):
    """A value that cannot be written: null in a non-nullable field, a string too long, ..."""


class UnsupportedVersionError(KwireError):
    """A message version, or a field value, that the target version cannot carry."""


class UnsupportedCodecError(KwireError):
    """A compression codec kwire cannot use: unknown id, not allowed for the format, or not installed."""


class FastPathError(AssertionError):
    """The generated fast path failed where the reference implementation succeeded: a kwire bug.

    Raised instead of ``FastPathFallbackWarning`` in strict mode (``KWIRE_STRICT_FASTPATH=1``, which
    kwire's own test suite sets), so a bug in generated code fails a test rather than only slowing
    decoding down. Not a ``KwireError``: it never describes the caller's input.
    """


class FastPathFallbackWarning(RuntimeWarning):
    """The generated fast path failed on input the reference implementation accepted (a kwire bug).

    The result comes from the reference, so it is correct, only slower; ``kwire.protocol.
    fast_path_fallbacks()`` counts these per message and version.
    """


class SpecError(KwireError, ValueError):
    """A message spec that breaks the spec language or Kafka's rules; names the file and field."""


class OptionError(KwireError, ValueError):
    """An option of the kafka-log data source that cannot be used (says which and why)."""


@lazy_dataclass(frozen=True, slots=True)
class RecordError:
    """One rejected record: its index within its batch and why (Kafka's ``RecordError``)."""

    index: int
    message: str


class AppendError(KwireError):
    """The Produce error Kafka would return for this partition.

    ``error_name`` is Kafka's ``Errors`` name (``INVALID_RECORD``, ``CORRUPT_MESSAGE``, ...; one of
    ``APPEND_ERRORS``), ``error_code`` its number, ``record_errors`` the offending records (empty
    for batch-level errors), ``position`` the byte position of the offending batch in the caller's
    buffer.
    """

    def __init__(
        self,
        error_name: str,
        message: str,
        *,
        record_errors: Iterable[RecordError] = (),
        position: int | None = None,
    ) -> None:
        if error_name not in APPEND_ERRORS:
            raise ValueError(f"not an append error: {error_name}")
        self.error_name = error_name
        self.message = message
        self.record_errors = tuple(record_errors)
        self.position = position
        where = f" (batch at byte {position})" if position is not None else ""
        super().__init__(f"{error_name}: {message}{where}")

    @property
    def error_code(self) -> int:
        return kafka_error_code(self.error_name)

    def __reduce__(self) -> tuple[object, ...]:
        return (
            _rebuild_append_error,
            (self.error_name, self.message, self.record_errors, self.position),
        )


def _rebuild_append_error(
    name: str, message: str, record_errors: tuple[RecordError, ...], position: int | None
) -> AppendError:
    return AppendError(name, message, record_errors=record_errors, position=position)


class LogError(KwireError):
    """A failure of a live log operation: ``error_name`` / ``error_code`` as Kafka's ``Errors``.

    What the records layer rejects is an ``AppendError``; what only the log knows (producer state,
    offsets out of range, a batch larger than a segment) is a ``LogError`` (one of ``LOG_ERRORS``),
    so the broker copies name and code into responses.
    """

    def __init__(self, error_name: str, message: str) -> None:
        if error_name not in LOG_ERRORS:
            raise ValueError(f"not a log error: {error_name}")
        self.error_name = error_name
        self.error_code = kafka_error_code(error_name)
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


class KafkaStorageError(LogError):
    """An I/O error on a log directory (KAFKA_STORAGE_ERROR, 56): Kafka's
    ``KafkaStorageException``. The directory ``log_dir`` is offline from then on: every log in it
    refuses to read or write until the process restarts and recovers it (``LogDirFailureChannel``)."""

    def __init__(
        self, error_name: str = "KAFKA_STORAGE_ERROR", message: str = "", log_dir: str = ""
    ) -> None:
        super().__init__(error_name, message)
        self.log_dir = log_dir

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.error_name, self.message, self.log_dir))


class DataDirLockedError(KwireError):
    """Another broker (another process, or another ``Broker`` in this one) holds the data
    directory's ``.lock``; Kafka's ``LogManager.lockLogDirs`` refuses to start the same way."""

    def __init__(self, path: str) -> None:
        self.path = path
        super().__init__(
            f"Failed to acquire lock on file .lock in {path}. A Kafka instance in another "
            "process or thread is using this directory."
        )

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.path,))
