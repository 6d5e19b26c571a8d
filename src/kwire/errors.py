"""kwire's exception hierarchy.

Every failure kwire reports on purpose is a ``KwireError``. Decoding failures carry *where* they
happened: a byte ``offset`` into the buffer the caller passed and a ``path`` such as
``MetadataResponse.topics[3].partitions[7].leader_epoch``, so a user can find the bad byte.
Foreign exceptions (``struct.error``, ``IndexError``, ``UnicodeDecodeError``, codec errors) are
translated at the boundary; any other exception escaping a decoder is a bug.
"""

from __future__ import annotations

__all__ = [
    "CorruptRecordError",
    "DecodeError",
    "EncodeError",
    "FastPathError",
    "FastPathFallbackWarning",
    "KwireError",
    "UnsupportedCodecError",
    "UnsupportedVersionError",
]


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
