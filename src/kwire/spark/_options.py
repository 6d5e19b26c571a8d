"""Options of the "kafka-log" data source, parsed once on the driver into plain, picklable values.

Names and JSON shapes follow Spark's Kafka source, so a job written against a broker reads a log
directory by changing only the format and the path:
  startingOffsets / endingOffsets        "earliest" | "latest" | {"topic": {"0": 23, "1": -2}}
                                         (-2 = earliest, -1 = latest, as Spark spells them)
  startingTimestamp / endingTimestamp    one timestamp (ms) for every partition
  startingOffsetsByTimestamp / endingOffsetsByTimestamp   {"topic": {"0": 1700000000000}}
  subscribe / subscribePattern / assign  which topics and partitions to read
  failOnDataLoss                         fail (default) or warn when offsets were deleted
  includeHeaders                         the headers column (kwire's default: true)
  maxOffsetsPerTrigger                   streaming: offsets per micro-batch, prorated
  minOffsetsPerTrigger / maxTriggerDelay  streaming: wait for this many offsets, at most this long
  startingOffsetsByTimestampStrategy     error (default) or latest when no record is at or after
                                         a starting timestamp
  kafka.isolation.level                  read_uncommitted (default) or read_committed
plus kwire's own: isolationLevel (an alias of kafka.isolation.level), includeControl, mode,
maxSplitBytes, verifyCrc, reportPath,
columns (decode only these), metricsPath (bytes read per scan), timestampSkewMs (how far a
partition's timestamps may go back, for pushed timestamp upper bounds), streamEnd
(auto, highWatermark or logEnd: where a micro-batch may read up to).
Precedence is Spark's: a timestamp option beats the ByTimestamp JSON, which beats the offsets.
Streaming queries (`parse_read_options(..., streaming=True)`) default startingOffsets to latest
and refuse the ending options, as Spark's Kafka source. Validation follows Spark's
KafkaSourceProvider (validateGeneralOptions, validateBatchOptions, checkOffsetLimitValidity): at
most one of subscribe / subscribePattern / assign (kwire reads every topic but Kafka's internal
ones when none is given), no -1 (latest) in a batch startingOffsets, no start after its end. An
option no reader knows is warned about once (logger kwire.spark), with the closest known name.
"""

from __future__ import annotations

import difflib
import json
import logging
import re
from collections.abc import Mapping
from dataclasses import field

from kwire._lazy import lazy_dataclass
from kwire.errors import OptionError
from kwire.log.internal_topics import INTERNAL_TOPICS

__all__ = ["EARLIEST", "LATEST", "ReadOptions", "WriteOptions", "parse_read_options"]

log = logging.getLogger("kwire.spark")

EARLIEST = -2
LATEST = -1

MODES = ("PERMISSIVE", "DROPMALFORMED", "FAILFAST")
ISOLATION_LEVELS = ("read_uncommitted", "read_committed")
DEFAULT_SPLIT_BYTES = 128 << 20  # Spark's spark.sql.files.maxPartitionBytes default

TIMESTAMP_STRATEGIES = ("error", "latest")
#: Kafka's internal topics (Topic.isInternal, and the KRaft metadata log): read only when named,
#: as a Kafka consumer's pattern subscription leaves them out (exclude.internal.topics)
#: (kwire.log.internal_topics.INTERNAL_TOPICS)

#: Every option a kafka-log read understands (kwire's, Spark's Kafka source's, the Schema
#: Registry decoding's and the internal-topic views'), as documented.
READ_OPTION_NAMES = (
    "path",
    "paths",
    "startingOffsets",
    "endingOffsets",
    "startingTimestamp",
    "endingTimestamp",
    "startingOffsetsByTimestamp",
    "endingOffsetsByTimestamp",
    "startingOffsetsByTimestampStrategy",
    "subscribe",
    "subscribePattern",
    "assign",
    "failOnDataLoss",
    "includeHeaders",
    "maxOffsetsPerTrigger",
    "minOffsetsPerTrigger",
    "maxTriggerDelay",
    "kafka.isolation.level",
    "isolationLevel",
    "includeControl",
    "mode",
    "maxSplitBytes",
    "verifyCrc",
    "reportPath",
    "columns",
    "metricsPath",
    "timestampSkewMs",
    "streamEnd",
    "view",
    "valueFormat",
    "keyFormat",
    "valueSubject",
    "keySubject",
    "valueMessage",
    "keyMessage",
    "valueSchemaIdHeader",
    "keySchemaIdHeader",
    "schemaRegistryUrl",
    "schemasTopic",
    "schemasPath",
)
#: The same, lower-cased as Spark hands them over, to their documented spelling.
READ_OPTIONS = {name.lower(): name for name in READ_OPTION_NAMES}

#: Spark Kafka source options that mean nothing without a broker: accepted, said to be ignored.
IGNORED_OPTIONS = frozenset(
    name.lower()
    for name in (
        "minPartitions",
        "maxRecordsPerPartition",
        "groupIdPrefix",
        "kafkaConsumer.pollTimeoutMs",
        "fetchOffset.numRetries",
        "fetchOffset.retryIntervalMs",
    )
)
_WARNED: set[str] = set()


def _warn_once(message: str) -> None:
    if message not in _WARNED:
        _WARNED.add(message)
        log.warning("kwire: %s", message)


def _warn_unknown(name: str, known: Mapping[str, str], what: str) -> None:
    close = difflib.get_close_matches(name.lower(), known, n=1, cutoff=0.75)
    hint = f"; did you mean {known[close[0]]}?" if close else ""
    _warn_once(f"option {name}: unknown to {what}, ignored{hint}")


def warn_unknown_options(options: Mapping[str, str], source: str = "kafka-log") -> None:
    """Warn (once per process and option) about options no reader of ``source`` reads (kafka-wire
    hands over its options without the ``kafka.*`` ones, which go to its client)."""
    for name in options:
        key = str(name).lower()
        if key in READ_OPTIONS:
            continue
        if source != "kafka-log" and key in IGNORED_OPTIONS:
            _warn_once(f"option {name}: not supported by {source} (ignored)")
        elif key in IGNORED_OPTIONS or key.startswith("kafka."):
            _warn_once(f"option {name}: has no effect on a log directory (ignored)")
        else:
            _warn_unknown(str(name), READ_OPTIONS, source)


_DURATION = re.compile(r"^\s*(\d+)\s*(ms|s|m|min|h|d)?\s*$", re.IGNORECASE)
_UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000, "d": 86_400_000}


def parse_duration_ms(name: str, raw: str) -> int:
    """A duration as Spark's JavaUtils.timeStringAsMs reads it: "15m", "30s", "500ms", "1h"
    (a bare number is milliseconds)."""
    match = _DURATION.match(raw)
    if match is None:
        raise OptionError(f"option {name}: expected a duration such as 15m, 30s or 500ms")
    return int(match.group(1)) * _UNIT_MS[(match.group(2) or "ms").lower()]


# A bound per (topic, partition); a key of None stands for "every partition".
Bounds = dict[tuple[str, int] | None, int]


def _get(options: Mapping[str, str], name: str) -> str | None:
    # Spark hands data sources a case-insensitive dict already; plain dicts (tests) get the same.
    lowered = {k.lower(): v for k, v in options.items()}
    value = lowered.get(name.lower())
    return None if value is None else str(value)


def _parse_bool(options: Mapping[str, str], name: str, default: bool) -> bool:
    raw = _get(options, name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in ("true", "1", "yes"):
        return True
    if value in ("false", "0", "no"):
        return False
    raise OptionError(f"option {name}: expected true or false, got {raw!r}")


def _parse_int(options: Mapping[str, str], name: str, default: int, *, minimum: int = 1) -> int:
    raw = _get(options, name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise OptionError(f"option {name}: expected an integer, got {raw!r}") from None
    if value < minimum:
        raise OptionError(f"option {name}: must be >= {minimum}, got {value}")
    return value


def parse_min_partitions(options: Mapping[str, str]) -> int | None:
    """kafka-wire's ``minPartitions`` (Spark's KafkaSourceProvider: a positive integer), or None."""
    if _get(options, "minPartitions") is None:
        return None
    return _parse_int(options, "minPartitions", 1)


def _parse_per_partition(name: str, raw: str) -> Bounds:
    try:
        doc = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise OptionError(f"option {name}: not valid JSON ({exc.msg} at char {exc.pos})") from None
    if not isinstance(doc, dict):
        raise OptionError(f'option {name}: expected {{"topic": {{"partition": value}}}}')
    bounds: Bounds = {}
    for topic, parts in doc.items():
        if not isinstance(parts, dict):
            raise OptionError(f"option {name}: topic {topic!r} must map partitions to values")
        for part, value in parts.items():
            try:
                partition = int(part)
            except ValueError:
                raise OptionError(f"option {name}: partition {part!r} is not an integer") from None
            if not isinstance(value, int) or isinstance(value, bool):
                raise OptionError(f"option {name}: {topic}-{part}: expected an integer")
            bounds[(str(topic), partition)] = value
    return bounds


def _parse_offsets(options: Mapping[str, str], name: str, default: int) -> Bounds:
    raw = _get(options, name)
    if raw is None or raw.strip().lower() in ("earliest", "latest"):
        word = (raw or "").strip().lower()
        return {None: EARLIEST if word == "earliest" else LATEST if word == "latest" else default}
    bounds = _parse_per_partition(name, raw)
    for key, value in bounds.items():
        if value < EARLIEST:
            raise OptionError(f"option {name}: {key}: offsets are >= 0, or -2 / -1")
    return bounds


def _parse_timestamps(options: Mapping[str, str], single: str, by: str) -> Bounds | None:
    raw = _get(options, single)
    if raw is not None:
        try:
            return {None: int(raw)}
        except ValueError:
            raise OptionError(f"option {single}: expected milliseconds, got {raw!r}") from None
    raw = _get(options, by)
    return None if raw is None else _parse_per_partition(by, raw)


@lazy_dataclass(frozen=True)
class ReadOptions:
    """Every read option, parsed and checked (see the module comment for their meaning)."""

    starting_offsets: Bounds = field(default_factory=lambda: {None: EARLIEST})
    ending_offsets: Bounds = field(default_factory=lambda: {None: LATEST})
    starting_timestamps: Bounds | None = None
    ending_timestamps: Bounds | None = None
    topics: frozenset[str] | None = None
    topic_pattern: str | None = None
    assign: frozenset[tuple[str, int]] | None = None
    read_committed: bool = False
    include_control: bool = False
    mode: str = "PERMISSIVE"
    max_split_bytes: int = DEFAULT_SPLIT_BYTES
    verify_crc: bool = True
    report_path: str | None = None
    fail_on_data_loss: bool = True
    include_headers: bool = True
    #: the columns option: the only columns of the schema (and of the decode), in this order
    columns: tuple[str, ...] | None = None
    metrics_path: str | None = None
    timestamp_skew_ms: int | None = None
    max_offsets_per_trigger: int | None = None
    min_offsets_per_trigger: int | None = None
    max_trigger_delay_ms: int = 15 * 60_000  # Spark's default, 15m
    #: startingOffsetsByTimestampStrategy: "error" (Spark's default) or "latest"
    timestamp_strategy: str = "error"
    stream_end: str = "auto"
    #: JSON per-partition options whose partitions must match the subscribed ones (Spark's rule)
    named_partitions: tuple[tuple[str, frozenset[tuple[str, int]]], ...] = ()

    @property
    def subscribed(self) -> bool:
        """Whether subscribe, subscribePattern or assign names the topics."""
        return self.topics is not None or self.topic_pattern is not None or self.assign is not None

    def wants(self, topic: str, partition: int) -> bool:
        """Whether the subscribe/subscribePattern/assign options select this topic-partition.

        Kafka's internal topics (``__consumer_offsets``, ``__transaction_state``, and
        ``__cluster_metadata``, a KRaft node's metadata log) are read only when ``subscribe`` or
        ``assign`` name them, as a consumer's pattern subscription leaves them out."""
        if self.assign is not None and (topic, partition) not in self.assign:
            return False
        if self.topics is not None and topic not in self.topics:
            return False
        if topic in INTERNAL_TOPICS and self.topics is None and self.assign is None:
            return False
        return self.topic_pattern is None or re.fullmatch(self.topic_pattern, topic) is not None


def bound_for(bounds: Bounds, topic: str, partition: int, default: int) -> int:
    """The bound a per-partition option gives (topic, partition), or the global one, or default."""
    if (topic, partition) in bounds:
        return bounds[(topic, partition)]
    return bounds.get(None, default)


STREAM_ENDS = ("auto", "highWatermark", "logEnd")


def _named(name: str, bounds: Bounds | None) -> tuple[str, frozenset[tuple[str, int]]] | None:
    if bounds is None or None in bounds:
        return None
    return name, frozenset(k for k in bounds if k is not None)


def parse_read_options(
    options: Mapping[str, str], *, streaming: bool = False, source: str = "kafka-log"
) -> ReadOptions:
    """Parse and check the options of a batch read, or of a streaming one (``streaming``), of
    ``source`` (the format named in warnings)."""
    warn_unknown_options(options, source)
    mode = (_get(options, "mode") or "PERMISSIVE").upper()
    if mode not in MODES:
        raise OptionError(f"option mode: expected one of {', '.join(MODES)}, got {mode!r}")
    isolation = _isolation(options)
    starting = _parse_offsets(options, "startingOffsets", LATEST if streaming else EARLIEST)
    if streaming:
        for name in ("endingOffsets", "endingTimestamp", "endingOffsetsByTimestamp"):
            if _get(options, name) is not None:
                raise OptionError(f"option {name}: not valid in streaming queries")
    else:
        if starting.get(None) == LATEST:
            raise OptionError('option startingOffsets: "latest" is not allowed for a batch query')
        for key, value in starting.items():
            if key is not None and value == LATEST:
                raise OptionError(
                    f"option startingOffsets: {key[0]}-{key[1]} can't be latest (-1) for batch "
                    "queries (Spark's rule)"
                )
        for name in ("maxOffsetsPerTrigger", "minOffsetsPerTrigger", "maxTriggerDelay"):
            if _get(options, name) is not None:
                _warn_once(f"option {name}: ignored in batch queries")
    ending = _parse_offsets(options, "endingOffsets", LATEST)
    if ending.get(None) == EARLIEST or any(
        v == EARLIEST for k, v in ending.items() if k is not None
    ):
        raise OptionError('option endingOffsets: "earliest" (-2) is not allowed for a batch query')
    strategies = [n for n in ("subscribe", "subscribePattern", "assign") if _get(options, n)]
    if len(strategies) > 1:
        raise OptionError(
            "Only one of the following options can be specified: subscribe, subscribePattern, "
            f"assign (given: {', '.join(strategies)})"
        )
    subscribe = _get(options, "subscribe")
    if subscribe is not None and not any(t.strip() for t in subscribe.split(",")):
        raise OptionError(f"option subscribe: no topics to subscribe to in {subscribe!r}")
    assign_raw = _get(options, "assign")
    assign: frozenset[tuple[str, int]] | None = None
    if assign_raw is not None:
        try:
            doc = json.loads(assign_raw)
            assign = frozenset((str(t), int(p)) for t, parts in doc.items() for p in parts)
        except (json.JSONDecodeError, AttributeError, TypeError, ValueError):
            raise OptionError('option assign: expected {"topic": [0, 1]}') from None
    pattern = _get(options, "subscribePattern")
    if pattern is not None and not pattern.strip():
        raise OptionError("option subscribePattern: the pattern to subscribe to is empty")
    if pattern is not None:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise OptionError(f"option subscribePattern: {exc}") from None
    starting_ts = _parse_timestamps(options, "startingTimestamp", "startingOffsetsByTimestamp")
    ending_ts = _parse_timestamps(options, "endingTimestamp", "endingOffsetsByTimestamp")
    named = [
        _named("startingOffsetsByTimestamp", starting_ts)
        if starting_ts is not None
        else _named("startingOffsets", starting),
        _named("endingOffsetsByTimestamp", ending_ts)
        if ending_ts is not None
        else _named("endingOffsets", ending),
    ]
    columns_raw = _get(options, "columns")
    columns = None
    if columns_raw is not None:
        from kwire.spark._schema import CORRUPT_RECORD, RECORD_COLUMNS

        columns = tuple(c.strip() for c in columns_raw.split(",") if c.strip())
        unknown = [c for c in columns if c not in RECORD_COLUMNS and c != CORRUPT_RECORD]
        if unknown or not columns:
            raise OptionError(
                f"option columns: expected a comma list of {', '.join(RECORD_COLUMNS)}"
                f"{'; unknown: ' + ', '.join(unknown) if unknown else ''}"
            )
    if not streaming:
        _check_start_before_end(starting, ending, starting_ts, ending_ts)
    max_offsets = _get(options, "maxOffsetsPerTrigger")
    min_offsets = _get(options, "minOffsetsPerTrigger")
    max_n = None if max_offsets is None else _parse_int(options, "maxOffsetsPerTrigger", 1)
    min_n = None if min_offsets is None else _parse_int(options, "minOffsetsPerTrigger", 1)
    if min_n is not None and max_n is not None and min_n > max_n:
        raise OptionError(
            f"The value of minOffsetPerTrigger({min_n}) is higher than the "
            f"maxOffsetsPerTrigger({max_n})."
        )
    delay_raw = _get(options, "maxTriggerDelay")
    delay = 15 * 60_000 if delay_raw is None else parse_duration_ms("maxTriggerDelay", delay_raw)
    strategy = (_get(options, "startingOffsetsByTimestampStrategy") or "error").lower()
    if strategy not in TIMESTAMP_STRATEGIES:
        raise OptionError(
            f"option startingOffsetsByTimestampStrategy: expected error or latest, got {strategy!r}"
        )
    stream_end = _get(options, "streamEnd") or "auto"
    if stream_end not in STREAM_ENDS:
        raise OptionError(f"option streamEnd: expected one of {', '.join(STREAM_ENDS)}")
    skew = _get(options, "timestampSkewMs")
    return ReadOptions(
        starting_offsets=starting,
        ending_offsets=ending,
        starting_timestamps=starting_ts,
        ending_timestamps=ending_ts,
        topics=None
        if subscribe is None
        else frozenset(t.strip() for t in subscribe.split(",") if t.strip()),
        topic_pattern=pattern,
        assign=assign,
        read_committed=isolation == "read_committed",
        include_control=_parse_bool(options, "includeControl", False),
        mode=mode,
        max_split_bytes=_parse_int(options, "maxSplitBytes", DEFAULT_SPLIT_BYTES),
        verify_crc=_parse_bool(options, "verifyCrc", True),
        report_path=_get(options, "reportPath"),
        fail_on_data_loss=_parse_bool(options, "failOnDataLoss", True),
        include_headers=_parse_bool(options, "includeHeaders", True),
        columns=columns,
        metrics_path=_get(options, "metricsPath"),
        timestamp_skew_ms=None
        if skew is None
        else _parse_int(options, "timestampSkewMs", 0, minimum=0),
        max_offsets_per_trigger=max_n,
        min_offsets_per_trigger=min_n,
        max_trigger_delay_ms=delay,
        timestamp_strategy=strategy,
        stream_end=stream_end,
        named_partitions=tuple(n for n in named if n is not None),
    )


def _isolation(options: Mapping[str, str]) -> str:
    """kafka.isolation.level (Spark passes kafka.* to its consumer), or kwire's isolationLevel."""
    spark_name = _get(options, "kafka.isolation.level")
    kwire_name = _get(options, "isolationLevel")
    if spark_name is not None and kwire_name is not None and spark_name != kwire_name:
        raise OptionError(
            f"options kafka.isolation.level ({spark_name}) and isolationLevel ({kwire_name}) differ"
        )
    isolation = (spark_name or kwire_name or "read_uncommitted").lower()
    if isolation not in ISOLATION_LEVELS:
        raise OptionError(
            f"option kafka.isolation.level (isolationLevel): expected one of "
            f"{', '.join(ISOLATION_LEVELS)}, got {isolation!r}"
        )
    return isolation


def _check_start_before_end(
    starting: Bounds, ending: Bounds, starting_ts: Bounds | None, ending_ts: Bounds | None
) -> None:
    """Spark's checkOffsetLimitValidity: two per-partition options of the same kind name the same
    partitions, and no start is after its end."""
    pairs = []
    if starting_ts is None and ending_ts is None:
        pairs.append(("offset", starting, ending))
    if starting_ts is not None and ending_ts is not None:
        pairs.append(("timestamp", starting_ts, ending_ts))
    for kind, start, end in pairs:
        if None in start or None in end:
            continue
        if set(start) != set(end):
            raise OptionError(
                f"the starting and ending {kind}s name different partitions: "
                f"{_tps(start)} and {_tps(end)}"
            )
        for key, first in start.items():
            last = end[key]
            if key is not None and first >= 0 and last >= 0 and first > last:
                raise OptionError(
                    f"the starting {kind} {first} is greater than the ending {kind} {last} "
                    f"for topic partition {key[0]}-{key[1]}"
                )


def _tps(bounds: Bounds) -> str:
    return "[" + ", ".join(f"{k[0]}-{k[1]}" for k in sorted(k for k in bounds if k)) + "]"


@lazy_dataclass(frozen=True)
class WriteOptions:
    """Options of ``df.write.format("kafka-log")`` (see kwire.spark._sink)."""

    magic: int = 2
    compression: str = "none"
    records_per_batch: int = 1000
    segment_bytes: int = 1 << 30
    index_interval_bytes: int = 4096
    topic: str | None = None
    num_partitions: int = 1


COMPRESSION_NAMES = ("none", "gzip", "snappy", "lz4", "zstd")


#: Every option of df.write.format("kafka-log"), lower-cased as Spark hands them over.
WRITE_OPTIONS = {
    name.lower(): name
    for name in (
        "path",
        "magic",
        "compression",
        "recordsPerBatch",
        "segmentBytes",
        "indexIntervalBytes",
        "topic",
        "numPartitions",
    )
}


#: Every option of the kafka-wire sink but the client's ``kafka.*``; Spark hands a streaming
#: sink the query's own options too (queryName, checkpointLocation, path).
WIRE_SINK_OPTIONS = {
    name.lower(): name
    for name in (
        "path",
        "checkpointLocation",
        "queryName",
        "topic",
        "exactlyOnce",
        "transactionalIdPrefix",
    )
}


def warn_unknown_write_options(
    options: Mapping[str, str], known: Mapping[str, str], what: str, *, client: bool = False
) -> None:
    """Warn (once per process and option) about options a sink does not read: a misspelt one
    would otherwise write with the defaults without a word. ``client``: ``kafka.*`` options go to
    the Kafka client."""
    for name in options:
        key = str(name).lower()
        if key not in known and not (client and key.startswith("kafka.")):
            _warn_unknown(str(name), known, what)


def parse_write_options(options: Mapping[str, str]) -> WriteOptions:
    warn_unknown_write_options(options, WRITE_OPTIONS, "the kafka-log writer")
    magic = _parse_int(options, "magic", 2, minimum=0)
    if magic > 2:
        raise OptionError(f"option magic: expected 0, 1 or 2, got {magic}")
    compression = (_get(options, "compression") or "none").lower()
    if compression == "uncompressed":
        compression = "none"
    if compression not in COMPRESSION_NAMES:
        raise OptionError(
            f"option compression: expected one of {', '.join(COMPRESSION_NAMES)}, got {compression!r}"
        )
    if compression == "zstd" and magic < 2:
        raise OptionError(
            "option compression: zstd needs magic 2 (Kafka allows it only in v2 batches)"
        )
    return WriteOptions(
        magic=magic,
        compression=compression,
        records_per_batch=_parse_int(options, "recordsPerBatch", 1000),
        segment_bytes=_parse_int(options, "segmentBytes", 1 << 30, minimum=14),
        index_interval_bytes=_parse_int(options, "indexIntervalBytes", 4096, minimum=0),
        topic=_get(options, "topic"),
        num_partitions=_parse_int(options, "numPartitions", 1),
    )
