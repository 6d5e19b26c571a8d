"""Kafka's topic-level log settings (``LogConfig``) as the live log uses them: names,
defaults (Kafka 3.9) and the checks Kafka makes on them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field

from kwire._lazy import lazy_dataclass
from kwire.log._index import (
    TIME_INDEX_ENTRY_SIZE,
)
from kwire.log._log_segment import LONG_MAX
from kwire.records import (
    TopicConfig,
)

__all__ = ["LogConfig"]


@lazy_dataclass(frozen=True)
class LogConfig:
    """Kafka's topic-level log settings (names in comments), defaults as Kafka 3.9."""

    segment_bytes: int = 1073741824  # segment.bytes
    segment_ms: int = 604800000  # segment.ms
    segment_index_bytes: int = 10485760  # segment.index.bytes
    index_interval_bytes: int = 4096  # index.interval.bytes
    retention_ms: int = 604800000  # retention.ms (-1: unlimited)
    retention_bytes: int = -1  # retention.bytes
    flush_messages: int = LONG_MAX  # flush.messages
    flush_ms: int = LONG_MAX  # flush.ms
    file_delete_delay_ms: int = 60000  # file.delete.delay.ms
    cleanup_policy: str = "delete"  # cleanup.policy (retention applies when it holds "delete")
    delete_retention_ms: int = 86400000  # delete.retention.ms (tombstones, markers)
    min_compaction_lag_ms: int = 0  # min.compaction.lag.ms
    max_compaction_lag_ms: int = LONG_MAX  # max.compaction.lag.ms
    min_cleanable_dirty_ratio: float = 0.5  # min.cleanable.dirty.ratio
    #: The records layer's append settings (message.format.version, compression.type,
    #: message.timestamp.*, cleanup.policy=compact, max.message.bytes).
    records: TopicConfig = field(default_factory=TopicConfig)

    def __post_init__(self) -> None:
        if not 14 <= self.segment_bytes <= (1 << 31) - 1:
            raise ValueError(f"segment.bytes must be in [14, 2**31-1], not {self.segment_bytes}")
        if self.segment_ms < 1:
            raise ValueError("segment.ms must be >= 1")
        if self.segment_index_bytes < 4 * TIME_INDEX_ENTRY_SIZE:
            raise ValueError(f"segment.index.bytes must be >= {4 * TIME_INDEX_ENTRY_SIZE}")
        if self.index_interval_bytes < 0:
            raise ValueError("index.interval.bytes must be >= 0")
        if self.flush_messages < 1 or self.flush_ms < 0 or self.file_delete_delay_ms < 0:
            raise ValueError("flush.messages must be >= 1, flush.ms and delay must be >= 0")
        if not 0.0 <= self.min_cleanable_dirty_ratio <= 1.0:
            raise ValueError("min.cleanable.dirty.ratio must be in [0, 1]")
        if self.delete_retention_ms < 0 or self.min_compaction_lag_ms < 0:
            raise ValueError("delete.retention.ms and min.compaction.lag.ms must be >= 0")
        if self.max_compaction_lag_ms < 1:
            raise ValueError("max.compaction.lag.ms must be >= 1")

    @property
    def delete_retention(self) -> bool:
        return "delete" in {p.strip() for p in self.cleanup_policy.split(",")}

    @property
    def compact(self) -> bool:
        """``cleanup.policy`` holds "compact": the log cleaner compacts this log."""
        return "compact" in {p.strip() for p in self.cleanup_policy.split(",")}

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> LogConfig:
        """Read Kafka topic properties (``segment.bytes=...``); unknown keys are ignored."""
        names = {
            "segment.bytes": "segment_bytes",
            "segment.ms": "segment_ms",
            "segment.index.bytes": "segment_index_bytes",
            "index.interval.bytes": "index_interval_bytes",
            "retention.ms": "retention_ms",
            "retention.bytes": "retention_bytes",
            "flush.messages": "flush_messages",
            "flush.ms": "flush_ms",
            "file.delete.delay.ms": "file_delete_delay_ms",
            "delete.retention.ms": "delete_retention_ms",
            "min.compaction.lag.ms": "min_compaction_lag_ms",
            "max.compaction.lag.ms": "max_compaction_lag_ms",
        }
        kwargs: dict[str, object] = {
            attr: int(props[key].strip()) for key, attr in names.items() if key in props
        }
        if "min.cleanable.dirty.ratio" in props:
            kwargs["min_cleanable_dirty_ratio"] = float(props["min.cleanable.dirty.ratio"])
        if "cleanup.policy" in props:
            kwargs["cleanup_policy"] = props["cleanup.policy"]
        kwargs["records"] = TopicConfig.from_properties(props)
        return cls(**kwargs)  # type: ignore[arg-type]
