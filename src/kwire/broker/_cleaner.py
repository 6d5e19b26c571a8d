"""The broker's log cleaner: compaction of ``cleanup.policy=compact`` topics in the event loop.

Approach: Kafka's ``LogCleaner`` runs cleaner threads; this single-node broker runs
``kwire.log.LogCleaner`` from a ticker instead, a bounded amount at a time so the event loop is
never held long: at most one cleaning round (one log, its offset map bounded by
``max_map_entries``) per ``_ROUND_SPACING_MS``, and ``log.cleaner.backoff.ms`` (Kafka's default
15 s) after a pass that found nothing to clean (``CleanerThread.doWork``). Compacted topics are
user topics and the internal ``__consumer_offsets`` / ``__transaction_state``. A round that fails
marks its partition uncleanable, as ``LogCleanerManager`` does, and is logged.

Broker settings read from the static config: ``log.cleaner.enable`` (default true),
``log.cleaner.backoff.ms`` (15000) and ``log.cleaner.dedupe.buffer.size`` (when given, the offset
map holds Kafka's number of entries for it, 24 bytes and load factor 0.9 each; else kwire's
default). The ``cleaner-offset-checkpoint`` is read at startup and written after each round.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Final

from kwire.broker._apis import on_startup
from kwire.broker._state import BrokerState
from kwire.log import TopicPartition

if TYPE_CHECKING:
    from kwire.log.storage import LogCleaner

__all__ = ["BrokerLogCleaner", "start_log_cleaner"]

log = logging.getLogger("kwire.broker.cleaner")

DEFAULT_BACKOFF_MS: Final = 15000  # log.cleaner.backoff.ms
_ROUND_SPACING_MS: Final = 1000  # at most one round per second
_DEDUPE_ENTRY_BYTES: Final = 24  # SkimpyOffsetMap: MD5 (16) + offset (8)
_LOAD_FACTOR: Final = 0.9  # log.cleaner.io.buffer.load.factor


def _enabled(state: BrokerState) -> bool:
    return str(state.static_config.get("log.cleaner.enable", "true")).strip().lower() != "false"


def _map_entries(state: BrokerState) -> int:
    size = state.static_config.get("log.cleaner.dedupe.buffer.size")
    if size is None:
        from kwire.log._compaction import DEFAULT_MAX_MAP_ENTRIES

        return DEFAULT_MAX_MAP_ENTRIES
    return max(1, int(int(str(size)) // _DEDUPE_ENTRY_BYTES * _LOAD_FACTOR))


class BrokerLogCleaner:
    """The ticker around ``kwire.log.LogCleaner`` (see the module doc)."""

    def __init__(self, state: BrokerState) -> None:
        self.state = state
        self.backoff_ms = int(str(state.static_config.get("log.cleaner.backoff.ms", "15000")))
        self._checkpoints = state.data_dir.read_cleaner_checkpoint()
        self._cleaner: LogCleaner | None = None
        self.next_run_ms = 0
        #: Completed rounds (for tests and metrics).
        self.rounds = 0

    @property
    def cleaner(self) -> LogCleaner:
        """``kwire.log.LogCleaner``, made (its modules imported) on first use: a broker with no
        compacted log and no cleaner checkpoint never needs it."""
        if self._cleaner is None:
            from kwire.log.storage import LogCleaner

            self._cleaner = LogCleaner(self._checkpoints, max_map_entries=_map_entries(self.state))
        return self._cleaner

    def tick(self, now_ms: int) -> None:
        if now_ms < self.next_run_ms:
            return
        cleaned = self.run_once(now_ms)
        self.next_run_ms = now_ms + (_ROUND_SPACING_MS if cleaned else self.backoff_ms)

    def run_once(self, now_ms: int) -> bool:
        """One cleaning round of the filthiest compacted log; False when none was due."""
        logs = [p.log for p in self.state.iter_partitions()]
        if (
            self._cleaner is None
            and not self._checkpoints
            and not any(lg.config.compact for lg in logs)
        ):
            return False  # what a cleaner would do here: find nothing to clean, forget nothing
        before = dict(self.cleaner.checkpoints)
        ltc = self.cleaner.grab_filthiest_compacted_log(logs, now_ms)
        if ltc is not None:
            try:
                result = self.cleaner.clean(ltc, now_ms)
            except Exception:
                self.cleaner.uncleanable.add(ltc.topic_partition)
                log.exception(
                    "unexpected error cleaning %s; marking it uncleanable", ltc.topic_partition
                )
                return False
            self.cleaner.checkpoints[ltc.topic_partition] = result.end_offset
            self.rounds += 1
        self.cleaner.forget(TopicPartition(lg.topic, lg.partition) for lg in logs)
        if self.cleaner.checkpoints != before:
            self.state.data_dir.write_cleaner_checkpoint(self.cleaner.checkpoints)
        return ltc is not None


def start_log_cleaner(state: BrokerState) -> BrokerLogCleaner | None:
    """Register the cleaner's ticker (unless ``log.cleaner.enable=false``)."""
    if not _enabled(state):
        return None
    cleaner = BrokerLogCleaner(state)
    state.services.log_cleaner = cleaner
    state.add_ticker(cleaner.tick)
    return cleaner


@on_startup
def _start(state: BrokerState) -> None:
    start_log_cleaner(state)
