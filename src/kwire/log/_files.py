"""The only module of ``kwire.log`` that touches the local filesystem for reading.

Approach: files are opened read-only and memory-mapped (``mmap.ACCESS_READ``), so a segment is a
``memoryview`` the records layer parses without copying, and pages are read on demand by the OS.
Empty files cannot be mapped and are served as ``b""``. ``MappedFile`` is a context manager; when
it closes, the map is closed unless some ``memoryview`` of it is still alive (a batch or record the
caller kept): then it is left to the garbage collector instead of raising ``BufferError``, so the
caller's copies stay valid. ``list_log_dir`` walks a local tree and hands the paths to the sans-IO
``partitions_from_paths``.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager, suppress
from types import TracebackType

from kwire.log._layout import (
    INDEX_SUFFIX,
    LOG_SUFFIX,
    TIME_INDEX_SUFFIX,
    TXN_INDEX_SUFFIX,
    PartitionDir,
    SegmentFiles,
    parse_segment_file_name,
    partitions_from_paths,
)
from kwire.log._segment import Segment

__all__ = ["MappedFile", "list_log_dir", "open_segment", "read_small_file"]


class MappedFile:
    """A file mapped read-only; ``.view`` is a ``memoryview`` of its bytes (``b""`` if empty)."""

    __slots__ = ("_map", "path", "view")

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        self._map: mmap.mmap | None = None
        with open(self.path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size:
                self._map = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        self.view = memoryview(self._map) if self._map is not None else memoryview(b"")

    def __len__(self) -> int:
        return len(self.view)

    def close(self) -> None:
        with suppress(BufferError):
            self.view.release()
        m, self._map = self._map, None
        if m is not None:
            # BufferError: a slice of the map is still referenced by the caller; the map is then
            # closed when that slice is garbage collected.
            with suppress(BufferError):
                m.close()

    def __enter__(self) -> MappedFile:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def read_small_file(path: str | os.PathLike[str]) -> bytes:
    """Whole contents of a small file (indexes, checkpoints, snapshots)."""
    with open(path, "rb") as f:
        return f.read()


def list_log_dir(root: str | os.PathLike[str]) -> list[PartitionDir]:
    """Partitions and segments under ``root``: a broker data dir, a partition dir, or any tree
    holding ``<topic>-<partition>/`` folders (walked recursively). Fills the file sizes."""
    top = os.fspath(root)
    if not os.path.isdir(top):
        raise NotADirectoryError(f"{top} is not a directory")
    paths: list[str] = []
    sizes: dict[str, int] = {}
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames.sort()
        for name in filenames:
            path = os.path.join(dirpath, name)
            paths.append(path)
            try:
                sizes[path] = os.stat(path).st_size
            except OSError:
                continue
    return partitions_from_paths(paths, sizes)


def _sibling(log_path: str, suffix: str) -> str | None:
    base = log_path[: -len(LOG_SUFFIX)] if log_path.endswith(LOG_SUFFIX) else None
    if base is None:
        return None
    path = base + suffix
    return path if os.path.exists(path) else None


@contextmanager
def open_segment(
    log: str | os.PathLike[str] | SegmentFiles,
    *,
    base_offset: int | None = None,
    indexes: bool = True,
) -> Iterator[Segment]:
    """Open a segment read-only through ``mmap``: its ``.log`` and (``indexes=True``) the
    ``.index``, ``.timeindex`` and ``.txnindex`` beside it, when present. Everything is closed on
    exit; views of the segment must not be used after the block (copy what you keep).

    ``base_offset`` defaults to the number in the file name (``00000000000000000042.log``).
    """
    if isinstance(log, SegmentFiles):
        log_path = log.log
        found: dict[str, str | None] = {
            INDEX_SUFFIX: log.index,
            TIME_INDEX_SUFFIX: log.timeindex,
            TXN_INDEX_SUFFIX: log.txnindex,
        }
        if base_offset is None:
            base_offset = log.base_offset
    else:
        log_path = os.fspath(log)
        found = {
            s: _sibling(log_path, s) for s in (INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX)
        }
    if base_offset is None:
        parsed = parse_segment_file_name(os.path.basename(log_path))
        if parsed is None:
            raise ValueError(
                f"{log_path}: not a segment file name (<base offset>.log); pass base_offset="
            )
        base_offset = parsed[0]
    with ExitStack() as stack:
        data = stack.enter_context(MappedFile(log_path))
        extra: dict[str, memoryview | None] = {}
        for suffix, path in found.items():
            extra[suffix] = (
                stack.enter_context(MappedFile(path)).view if indexes and path is not None else None
            )
        segment = Segment(
            data.view,
            base_offset=base_offset,
            index=extra[INDEX_SUFFIX],
            timeindex=extra[TIME_INDEX_SUFFIX],
            txnindex=extra[TXN_INDEX_SUFFIX],
            source=log_path,
        )
        try:
            yield segment
        finally:
            segment.release()
