"""Paths to pyarrow filesystems, so the same code reads a local log dir and object-store copies.

Only a URI string travels to executors (it pickles small and carries no credentials); each side
resolves it with pyarrow, which takes credentials from its own environment.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pyarrow.fs as pafs

__all__ = ["STAGING_DIR", "list_files", "read_bytes", "resolve", "to_uri"]

STAGING_DIR = "_kwire_staging"


def to_uri(path: str) -> str:
    """A URI for ``path``: object-store URIs are kept, local paths become absolute file paths."""
    if "://" in path:
        return path
    return os.path.abspath(os.path.expanduser(path))


def resolve(uri: str) -> tuple[pafs.FileSystem, str]:
    """The filesystem holding ``uri`` and the path inside it."""
    import pyarrow.fs as pafs

    if "://" not in uri:
        return pafs.LocalFileSystem(), os.path.abspath(uri)
    fs, path = pafs.FileSystem.from_uri(uri)
    return fs, path


def join_uri(root_uri: str, path_in_fs: str) -> str:
    """A URI for a path inside the filesystem of ``root_uri`` (as pyarrow listings return them)."""
    if "://" not in root_uri:
        return path_in_fs
    scheme = root_uri.split("://", 1)[0]
    if scheme == "file":
        return path_in_fs
    return f"{scheme}://{path_in_fs.lstrip('/')}"


def list_files(fs: pafs.FileSystem, root: str, *, staging: bool = False) -> dict[str, int]:
    """Every file under ``root`` (recursive) with its size; ``root`` may also be a single file.

    The staging folders of kwire's sink (writes in progress or abandoned) are left out unless
    ``staging`` is true.
    """
    import pyarrow.fs as pafs

    from kwire.errors import KwireError

    info = fs.get_file_info(root)
    if info.type == pafs.FileType.NotFound:
        raise KwireError(f"no such file or directory: {root}")
    if info.type == pafs.FileType.File:  # one segment file
        return {info.path: int(info.size or 0)}
    infos = fs.get_file_info(pafs.FileSelector(root, recursive=True, allow_not_found=False))
    return {
        info.path: int(info.size or 0)
        for info in infos
        if info.type == pafs.FileType.File and (staging or f"/{STAGING_DIR}/" not in info.path)
    }


def read_bytes(
    fs: pafs.FileSystem, path: str, start: int = 0, end: int | None = None
) -> memoryview:
    """Bytes [start, end) of a file (the whole file by default): one ranged read, no extra copy."""
    with fs.open_input_file(path) as f:
        size = f.size()
        stop = size if end is None else min(end, size)
        if start >= stop:
            return memoryview(b"")
        return memoryview(f.read_at(stop - start, start))
