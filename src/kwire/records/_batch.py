"""The one entry point to record bytes of any magic: ``read_batches`` / ``BatchReader``.

Approach: the caller's buffer becomes one ``memoryview`` at the boundary. Every batch of every
magic starts with ``offset int64 | size int32`` and has its magic byte at position 16, so the
reader checks those (as Kafka's ``ByteBufferLogInputStream`` does), then hands the exact slice to
the class registered for that magic in ``_BY_MAGIC``. Nothing is copied; the batches hold slices
of the caller's buffer, which they keep alive.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator
from typing import Final

from kwire._wire import as_view
from kwire.errors import CorruptRecordError
from kwire.records._codecs import DEFAULT_MAX_DECOMPRESSED_SIZE
from kwire.records._legacy import RECORD_OVERHEAD_V0, LegacyBatch
from kwire.records._model import Batch
from kwire.records._v2 import RecordBatch

__all__ = ["BatchReader", "as_view", "read_batch", "read_batches"]

_LOG_OVERHEAD: Final = 12
_MAGIC_OFFSET: Final = 16
_PREFIX: Final = struct.Struct(">qi")

BatchFactory = Callable[..., Batch]

#: Batch class by magic byte.
_BY_MAGIC: Final[dict[int, BatchFactory]] = {0: LegacyBatch, 1: LegacyBatch, 2: RecordBatch}

Buffer = bytes | bytearray | memoryview


class BatchReader(Iterator[Batch]):
    """Iterates the batches of a buffer; remembers where it stopped.

    ``position`` is where the next batch starts (after the loop: how many bytes were consumed).
    At the end of the buffer, fewer bytes than a whole batch are a *truncated tail* (normal at the
    end of a fetch response or of a segment being written): by default a ``CorruptRecordError``;
    with ``allow_truncated_tail=True`` iteration just ends and ``truncated_at`` holds the position
    of the partial batch (``None`` after a clean end). Anything else malformed always raises.
    """

    __slots__ = (
        "_allow_truncated_tail",
        "_end",
        "_max_decompressed_size",
        "_src",
        "_verify_crc",
        "_view",
        "position",
        "truncated_at",
    )

    def __init__(
        self,
        buffer: Buffer,
        *,
        verify_crc: bool = True,
        max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
        allow_truncated_tail: bool = False,
        start: int = 0,
        end: int | None = None,
    ) -> None:
        view = as_view(buffer)
        self._view = view
        # the caller's bytes object itself, when the view covers all of it: batches read
        # integers from it (faster than through the memoryview), in the same coordinates
        obj = view.obj
        self._src: bytes | memoryview = (
            obj if isinstance(obj, bytes) and len(obj) == len(view) else view
        )
        self._end = len(view) if end is None else min(end, len(view))
        self._verify_crc = verify_crc
        self._max_decompressed_size = max_decompressed_size
        self._allow_truncated_tail = allow_truncated_tail
        self.position = start
        self.truncated_at: int | None = None

    @property
    def bytes_consumed(self) -> int:
        return self.position

    def __iter__(self) -> BatchReader:
        return self

    def __next__(self) -> Batch:
        pos = self.position
        end = self._end
        left = end - pos
        if left <= 0:
            raise StopIteration
        view = self._view
        if left < _LOG_OVERHEAD:
            return self._truncated(pos, f"{left} bytes are too few for a batch header")
        base_offset, size = _PREFIX.unpack_from(view, pos)
        if size < RECORD_OVERHEAD_V0:
            raise CorruptRecordError(
                f"batch size {size} is less than the minimum record overhead ({RECORD_OVERHEAD_V0})",
                offset=pos + 8,
                context=f"batch at offset {base_offset}",
            )
        if size > left - _LOG_OVERHEAD:
            return self._truncated(
                pos, f"batch of {size} bytes but only {left - _LOG_OVERHEAD} bytes left"
            )
        magic = view[pos + _MAGIC_OFFSET]
        factory = _BY_MAGIC.get(magic)
        if factory is None:
            raise CorruptRecordError(
                f"invalid magic byte {magic}",
                offset=pos + _MAGIC_OFFSET,
                context=f"batch at offset {base_offset}",
            )
        nxt = pos + _LOG_OVERHEAD + size
        batch = factory(
            view[pos:nxt],
            pos,
            verify_crc=self._verify_crc,
            max_decompressed_size=self._max_decompressed_size,
            whole=view,
            src=self._src,
        )
        self.position = nxt
        return batch

    def _truncated(self, pos: int, why: str) -> Batch:
        if self._allow_truncated_tail:
            self.truncated_at = pos
            self._end = pos
            raise StopIteration
        raise CorruptRecordError(f"truncated batch at the end of the buffer: {why}", offset=pos)


def read_batches(
    buffer: Buffer,
    *,
    verify_crc: bool = True,
    max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
    allow_truncated_tail: bool = False,
) -> BatchReader:
    """Iterate the batches (any magic, mixed) in ``buffer`` without copying it.

    ``verify_crc=False`` skips the CRC check (only for trusted data: a corrupted batch then
    decodes to wrong values or fails later). ``max_decompressed_size`` caps what one compressed
    batch may decompress to. See ``BatchReader`` for ``allow_truncated_tail``. Every batch holds a
    ``memoryview`` of ``buffer``, which keeps it alive.
    """
    return BatchReader(
        buffer,
        verify_crc=verify_crc,
        max_decompressed_size=max_decompressed_size,
        allow_truncated_tail=allow_truncated_tail,
    )


def read_batch(
    buffer: Buffer,
    *,
    verify_crc: bool = True,
    max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
) -> Batch:
    """Parse a buffer that holds exactly one batch."""
    reader = BatchReader(buffer, verify_crc=verify_crc, max_decompressed_size=max_decompressed_size)
    batch = next(reader, None)
    if batch is None:
        raise CorruptRecordError("empty buffer: no batch", offset=0)
    if reader.position != len(reader._view):
        raise CorruptRecordError(
            f"{len(reader._view) - reader.position} bytes after the batch", offset=reader.position
        )
    return batch
