"""The data directory's ``.lock``: one broker per directory, as Kafka's ``LogManager.lockLogDirs``.

Approach: an exclusive, non-blocking ``flock`` on ``<dir>/.lock`` (created if missing, never
removed, as Kafka's ``FileLock``). flock locks belong to the open file, not the process, so a second
lock in the same process is refused too (Java's ``tryLock`` reports that case as an
``OverlappingFileLockException``, which Kafka treats as "locked"). The lock goes when ``release``
closes the file, when a process dies, or when a lock object nobody holds is collected.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Callable
from typing import Final

from kwire.errors import DataDirLockedError

__all__ = ["LOCK_FILE", "DirLock"]

LOCK_FILE: Final = ".lock"


class DirLock:
    """An exclusive lock on ``<path>/.lock``; ``DirLock.acquire`` raises ``DataDirLockedError``
    when someone else holds it."""

    def __init__(self, path: str, fd: int) -> None:
        self.path = path
        self._fd = fd

    @classmethod
    def acquire(cls, path: str) -> DirLock:
        fd = os.open(os.path.join(path, LOCK_FILE), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise DataDirLockedError(path) from None
        except BaseException:
            os.close(fd)
            raise
        return cls(path, fd)

    @property
    def held(self) -> bool:
        return self._fd >= 0

    def release(self, _close: Callable[[int], None] = os.close) -> None:
        """Unlock (closing the file drops the flock); a second call does nothing. (``os.close``
        is bound early: ``__del__`` may run while the interpreter tears modules down.)"""
        fd, self._fd = self._fd, -1
        if fd >= 0:
            _close(fd)

    def __del__(self) -> None:
        # A broker dropped without close: let the directory go, as a dead process's would.
        self.release()
