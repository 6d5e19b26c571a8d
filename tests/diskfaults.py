"""A full disk on demand: file writes of this process fail with ``OSError(ENOSPC)``.

``DiskFull`` patches the calls kwire's log layer writes with (``os.write``, ``os.open`` creating
a file, ``open`` for writing, ``os.fsync``, ``os.replace``; ``calls`` picks some: "write",
"create", "open", "fsync", "replace") so that, once ``armed``, every one aimed at a file whose
path ``match`` accepts fails as a full disk does: a first ``os.write`` of
more than one byte writes half its bytes for real and then fails (a torn write, what a file
system returns when it fills mid-write), later ones fail at once. Paths of descriptors come
from ``/proc/self/fd`` (Linux). ``hits`` lists what failed; ``armed = False`` is "space is back".
Other threads of the process (an in-process broker's loop) see the same patched calls; C
libraries (librdkafka) do not.
"""

from __future__ import annotations

import builtins
import errno
import os
from collections.abc import Callable
from typing import Any

import pytest


def fd_path(fd: int) -> str:
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return ""


class DiskFull:
    def __init__(
        self,
        monkeypatch: pytest.MonkeyPatch,
        match: Callable[[str], bool],
        calls: frozenset[str] = frozenset({"write", "create", "open", "fsync", "replace"}),
    ) -> None:
        self.calls = calls
        self.match = lambda path: bool(path) and match(path)
        self.armed = False
        self.hits: list[str] = []
        self._torn = False
        real_write, real_open, real_fsync = os.write, os.open, os.fsync
        real_replace, real_builtin_open = os.replace, builtins.open

        def fail(call: str, path: str) -> OSError:
            self.hits.append(f"{call} {path}")
            return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), path)

        def write(fd: int, data: Any) -> int:
            if self.armed and "write" in self.calls:
                path = fd_path(fd)
                if self.match(path):
                    view = memoryview(data)
                    if not self._torn and len(view) > 1:
                        self._torn = True
                        return real_write(fd, view[: len(view) // 2])
                    raise fail("write", path)
            return real_write(fd, data)

        def open_(path: Any, flags: int, mode: int = 0o777, **kw: Any) -> int:
            if (
                self.armed
                and "create" in self.calls
                and flags & os.O_CREAT
                and self.match(os.fspath(path))
                and not os.path.exists(path)
            ):
                raise fail("create", os.fspath(path))
            return real_open(path, flags, mode, **kw)

        def builtin_open(file: Any, mode: str = "r", *args: Any, **kw: Any) -> Any:
            if (
                self.armed
                and "open" in self.calls
                and isinstance(file, (str, os.PathLike))
                and any(c in mode for c in "wax+")
                and self.match(os.fspath(file))
            ):
                raise fail("open", os.fspath(file))
            return real_builtin_open(file, mode, *args, **kw)

        def fsync(fd: int) -> None:
            if self.armed and "fsync" in self.calls:
                path = fd_path(fd)
                if self.match(path):
                    raise fail("fsync", path)
            real_fsync(fd)

        def replace(src: Any, dst: Any, **kw: Any) -> None:
            if self.armed and "replace" in self.calls and self.match(os.fspath(src)):
                raise fail("replace", os.fspath(src))
            real_replace(src, dst, **kw)

        monkeypatch.setattr(os, "write", write)
        monkeypatch.setattr(os, "open", open_)
        monkeypatch.setattr(os, "fsync", fsync)
        monkeypatch.setattr(os, "replace", replace)
        monkeypatch.setattr(builtins, "open", builtin_open)
