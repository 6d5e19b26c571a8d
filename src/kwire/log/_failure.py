"""Log directory failures: an I/O error takes the whole directory offline (Kafka's
``LogDirFailureChannel`` and ``UnifiedLog.maybeHandleIOException``).

Approach: every write (and read) of a log directory's files runs inside ``LogDirFailureChannel
.guard``; an ``OSError`` there (``ENOSPC``, ``EIO``, ...) marks the directory offline once, tells
the listeners (the broker, as Kafka's ``ReplicaManager.handleLogDirFailure``) and is re-raised as
``KafkaStorageError``. From then on every log of the directory refuses to work (KAFKA_STORAGE_ERROR)
until the process restarts: the file that failed may hold a partial write that the in-memory
positions no longer describe, and only recovery at the next start (``LogLoader``: the torn tail
is truncated) makes file and log agree again. A directory stays offline until restart, as in
Kafka. One channel serves one ``DataDir`` (its partition logs and ``__cluster_metadata``); a
``LiveLog`` opened alone gets a channel of its own.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable, Iterator

from kwire.errors import KafkaStorageError

__all__ = ["LogDirFailureChannel"]

log = logging.getLogger("kwire.log")


class LogDirFailureChannel:
    """The offline log directories of a process and who to tell when one goes offline."""

    def __init__(self) -> None:
        self._offline: dict[str, KafkaStorageError] = {}
        self._listeners: list[Callable[[str], None]] = []

    def on_offline(self, listener: Callable[[str], None]) -> None:
        """Call ``listener(log_dir)`` once for each directory that goes offline."""
        self._listeners.append(listener)

    def offline_error(self, log_dir: str) -> KafkaStorageError | None:
        """The error that took ``log_dir`` offline (None while it is online)."""
        return self._offline.get(os.path.abspath(log_dir))

    def is_offline(self, log_dir: str) -> bool:
        return os.path.abspath(log_dir) in self._offline

    @property
    def offline_dirs(self) -> list[str]:
        return sorted(self._offline)

    def mark_offline(self, log_dir: str, message: str, cause: BaseException) -> KafkaStorageError:
        """``maybeAddOfflineLogDir``: the directory is offline (the first error is kept and
        reported once); the ``KafkaStorageError`` to raise."""
        key = os.path.abspath(log_dir)
        error = KafkaStorageError(
            message=f"{message}: {cause}" if message else str(cause), log_dir=key
        )
        if key in self._offline:
            return error
        self._offline[key] = error
        log.error("log directory %s is offline: %s", key, error.message)
        for listener in list(self._listeners):
            try:
                listener(key)
            except Exception:  # a listener's failure must not hide the storage error
                log.exception("log directory failure listener failed")
        return error

    def check(self, log_dir: str) -> None:
        """Raise the directory's ``KafkaStorageError`` when it is offline."""
        if not self._offline:  # the hot path (every append and read): nothing offline
            return
        error = self._offline.get(os.path.abspath(log_dir))
        if error is not None:
            raise KafkaStorageError(message=error.message, log_dir=error.log_dir)

    @contextlib.contextmanager
    def guard(self, log_dir: str, message: str) -> Iterator[None]:
        """Run a block of file I/O on ``log_dir``: an ``OSError`` takes the directory offline
        and leaves as ``KafkaStorageError`` (``maybeHandleIOException``)."""
        try:
            yield
        except OSError as exc:
            raise self.mark_offline(log_dir, message, exc) from exc
