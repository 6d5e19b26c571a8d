"""The "kafka-wire" Spark data source: a Kafka cluster read over its protocol, with kafka-log's options.

``spark.read.format("kafka-wire").option("kafka.bootstrap.servers", ...)`` takes the options of
Spark's Kafka source (subscribe / subscribePattern / assign, startingOffsets / endingOffsets and
their timestamp forms, failOnDataLoss, includeHeaders, isolation) through the same parser as
``kafka-log`` (spark/_options.py) and has the same schema: the two formats differ only in where the
bytes come from. ``kafka.*`` options go to the client (kwire.client.ClientConfig, Kafka's names).

Planning runs on the driver: Metadata for the subscribed topics, ListOffsets for the earliest and
latest offsets (and for timestamps), each Spark partition one (topic, partition, from, until)
range (``minPartitions``: big ranges split in pieces, as Spark's KafkaOffsetRangeCalculator
does). Offsets before the log start fail the query under failOnDataLoss (the default), naming
the partition and the offsets, as Spark's Kafka source does; with failOnDataLoss=false the range
starts at the log start, with a warning. Executors fetch their range from the partition's leader
with kwire.client, which decodes the fetched batches to Arrow without a Python object per record.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    InputPartition,
)
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)

from kwire._lazy import lazy_dataclass
from kwire.client import EARLIEST, LATEST, ClientConfig, KafkaClient
from kwire.errors import OptionError
from kwire.spark._options import (
    WIRE_SINK_OPTIONS,
    ReadOptions,
    bound_for,
    parse_min_partitions,
    parse_read_options,
    warn_unknown_write_options,
)
from kwire.spark._schema import CORRUPT_RECORD, schema_for
from kwire.spark._stream import (
    TriggerDelay,
    lost_before_log_start,
    offsets_from_json,
    offsets_to_json,
    rate_limit,
)

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql.types import StructType

    from kwire.spark._wire_sink import KafkaWireStreamWriter, KafkaWireWriter

__all__ = ["WIRE_FORMAT", "KafkaWireDataSource", "WireRange", "plan_ranges", "split_ranges"]

log = logging.getLogger("kwire.spark")

WIRE_FORMAT = "kafka-wire"


#: Where the ``kafka.*`` options leave them unset, an executor's fetches ask for this much per
#: partition (Kafka's consumer default is 1 MiB): a task reads one partition's bounded range, and
#: 8 MiB answers took about a third less client CPU per byte than 1 MiB ones (bench_wire.py's
#: data; 16 and 32 MiB were no better). fetch.max.bytes keeps Kafka's 50 MiB, above it.
BULK_FETCH_DEFAULTS: Mapping[str, str] = {"max.partition.fetch.bytes": str(8 << 20)}


def client_options(options: Mapping[str, str]) -> dict[str, str]:
    """The ``kafka.*`` options, for the client (Spark passes them to Kafka's client the same way)."""
    out = {k[len("kafka.") :]: str(v) for k, v in options.items() if k.lower().startswith("kafka.")}
    if not out.get("bootstrap.servers"):
        raise OptionError('kafka-wire needs option("kafka.bootstrap.servers", "host:port,...")')
    return out


@lazy_dataclass(frozen=True)
class WireRange(InputPartition):  # type: ignore[misc]
    """One Spark partition: offsets ``[start, end)`` of one topic-partition."""

    topic: str
    partition: int
    start: int
    end: int


def split_ranges(ranges: list[WireRange], min_partitions: int | None) -> list[WireRange]:
    """At least about ``min_partitions`` ranges: Spark's KafkaOffsetRangeCalculator.getRanges.

    Empty ranges are dropped. With fewer non-empty ranges than ``min_partitions``, each range gets
    a share of the pieces proportional to its size (rounded, at least one); the ranges that keep
    one piece are taken out of the proportion first, so the big ranges share what is left. A
    range's pieces are contiguous and cover it exactly once (the last one takes the rounding)."""
    ranges = [r for r in ranges if r.end > r.start]
    if min_partitions is None or len(ranges) >= min_partitions:
        return ranges

    def pieces(size: int, total: int, wanted: int) -> int:
        # Scala's math.round: half up
        return max(int(size / total * wanted + 0.5), 1)

    total = sum(r.end - r.start for r in ranges)
    whole = {id(r) for r in ranges if pieces(r.end - r.start, total, min_partitions) == 1}
    whole_size = sum(r.end - r.start for r in ranges if id(r) in whole)
    split_min = max(min_partitions - len(whole), 1)
    out: list[WireRange] = []
    for r in ranges:
        size = r.end - r.start
        parts = 1 if id(r) in whole else pieces(size, total - whole_size, split_min)
        remaining, start = size, r.start
        for part in range(parts):
            this = remaining // (parts - part)
            remaining -= this
            end = min(start + this, r.end)
            if end > start:
                out.append(WireRange(r.topic, r.partition, start, end))
            start = end
    return out


def _selected(options: ReadOptions, topics: Mapping[str, int]) -> list[tuple[str, int]]:
    if options.assign is not None:
        return sorted(options.assign)
    out: list[tuple[str, int]] = []
    for topic, count in sorted(topics.items()):
        if options.topics is not None and topic not in options.topics:
            continue
        if options.topic_pattern is not None and not re.fullmatch(options.topic_pattern, topic):
            continue
        out.extend((topic, p) for p in range(count))
    return out


def _resolve(
    client: KafkaClient,
    tps: list[tuple[str, int]],
    offsets: Any,
    timestamps: Any,
    default: int,
    earliest: Mapping[tuple[str, int], int],
    latest: Mapping[tuple[str, int], int],
    strategy: str = "latest",
) -> dict[tuple[str, int], int]:
    """Each partition's offset from a per-partition/global offset or timestamp option."""
    out: dict[tuple[str, int], int] = {}
    for tp in tps:
        if timestamps is not None:
            ts = bound_for(timestamps, tp[0], tp[1], -1)
            found = client.list_offsets([tp], ts)[tp] if ts >= 0 else -1
            if found < 0 and strategy == "error":
                # Spark's KafkaOffsetReader: startingOffsetsByTimestampStrategy=error
                raise OptionError(
                    f"kafka-wire: no record of {tp[0]}-{tp[1]} has a timestamp at or after "
                    f"{ts}; set startingOffsetsByTimestampStrategy to latest to start at the end"
                )
            out[tp] = latest[tp] if found < 0 else found  # no record at/after ts: the end
            continue
        value = bound_for(offsets, tp[0], tp[1], default)
        out[tp] = earliest[tp] if value == EARLIEST else latest[tp] if value == LATEST else value
    return out


def subscribed_partitions(client: KafkaClient, options: ReadOptions) -> list[tuple[str, int]]:
    """The topic-partitions subscribe / subscribePattern / assign select, by fresh Metadata."""
    wanted = (
        None
        if options.topic_pattern is not None or options.topics is None
        else sorted(options.topics)
    )
    if options.assign is not None:
        wanted = sorted({t for t, _ in options.assign})
    meta = client.metadata(wanted)
    missing = [t for t in wanted or () if t not in meta.topics()]
    if missing:
        raise OptionError(f"kafka-wire: no such topic: {', '.join(missing)}")
    counts = {t: meta.partition_count(t) for t in meta.topics()}
    internal = set(meta.internal_topics)
    if options.topics is None and options.assign is None:
        counts = {t: n for t, n in counts.items() if t not in internal}
    return _selected(options, counts)


def plan_ranges(
    client: KafkaClient, options: ReadOptions, min_partitions: int | None = None
) -> list[WireRange]:
    """The (topic, partition, from, until) ranges of a batch read (driver side)."""
    tps = subscribed_partitions(client, options)
    earliest = client.list_offsets(tps, EARLIEST)
    latest = client.list_offsets(tps, LATEST, read_committed=options.read_committed)
    starts = _resolve(
        client,
        tps,
        options.starting_offsets,
        options.starting_timestamps,
        EARLIEST,
        earliest,
        latest,
    )
    ends = _resolve(
        client, tps, options.ending_offsets, options.ending_timestamps, LATEST, earliest, latest
    )
    ranges = []
    for tp in tps:
        start, end = starts[tp], ends[tp]
        if start < earliest[tp]:
            lost_before_log_start(options, tp, start, earliest[tp])
            start = earliest[tp]
        if start > end:
            raise OptionError(
                f"kafka-wire: {tp[0]}-{tp[1]}: the starting offset {start} is after the ending "
                f"offset {end}"
            )
        if start < end:
            ranges.append(WireRange(tp[0], tp[1], start, end))
    return split_ranges(ranges, min_partitions)


class KafkaWireReader(DataSourceReader):  # type: ignore[misc]
    def __init__(self, options: Mapping[str, str], read: ReadOptions, schema: StructType) -> None:
        self.client_options = client_options(options)
        self.options = read
        self.schema = schema
        self.min_partitions = parse_min_partitions(options)

    def partitions(self) -> list[WireRange]:
        with KafkaClient(self.client_options) as client:
            ranges = plan_ranges(client, self.options, self.min_partitions)
        log.info(
            "kwire: kafka-wire plans %d ranges, %d offsets",
            len(ranges),
            sum(r.end - r.start for r in ranges),
        )
        return ranges

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        yield from read_range(self.client_options, self.options, self.schema, partition)


def read_range(
    client_options: Mapping[str, str],
    options: ReadOptions,
    schema: StructType,
    partition: InputPartition,
) -> Iterator[pa.RecordBatch]:
    """Executor side: the rows of one ``WireRange``, fetched from its leader, in ``schema``."""
    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_schema

    if not isinstance(partition, WireRange):
        return  # Spark's placeholder partition when there is nothing to read
    target = to_arrow_schema(schema, timezone="UTC")
    columns = [f.name for f in target if f.name != CORRUPT_RECORD]
    config = ClientConfig.from_options({**BULK_FETCH_DEFAULTS, **client_options})
    with KafkaClient(config) as client:
        for rows in client.fetch_range(
            partition.topic,
            partition.partition,
            partition.start,
            partition.end,
            columns=columns,
            read_committed=options.read_committed,
            fail_on_data_loss=options.fail_on_data_loss,
        ):
            arrays = []
            for f in target:
                if f.name == CORRUPT_RECORD:
                    arrays.append(pa.nulls(rows.num_rows, pa.string()))
                else:
                    column = rows.column(f.name)
                    arrays.append(column if column.type == f.type else column.cast(f.type))
            yield pa.RecordBatch.from_arrays(arrays, schema=target)


class KafkaWireDataSource(DataSource):  # type: ignore[misc]
    """A Kafka cluster, read over the wire, as DataFrames (batch)."""

    @classmethod
    def name(cls) -> str:
        return WIRE_FORMAT

    def _read_options(self, *, streaming: bool = False) -> ReadOptions:
        # the kafka.* options are the client's; kafka.isolation.level is the reader's too, and
        # parse_read_options reads it (with kwire's alias) as for kafka-log
        # minPartitions is kafka-wire's own (parse_min_partitions), not a log directory's
        plain = {
            k: v
            for k, v in self.options.items()
            if (not k.lower().startswith("kafka.") or k.lower() == "kafka.isolation.level")
            and k.lower() != "minpartitions"
        }
        options = parse_read_options(plain, streaming=streaming, source=WIRE_FORMAT)
        parse_min_partitions(self.options)  # a bad value fails when the DataFrame is defined
        if not options.subscribed:
            raise OptionError(
                "kafka-wire: one of the options subscribe, subscribePattern or assign is required"
            )
        return options

    def schema(self) -> str | StructType:
        return schema_for(self._read_options())

    def reader(self, schema: StructType) -> KafkaWireReader:
        return KafkaWireReader(self.options, self._read_options(), schema)

    def writer(self, schema: StructType, overwrite: bool) -> KafkaWireWriter:
        from kwire.spark._wire_sink import KafkaWireWriter

        if overwrite:
            raise OptionError(
                'kafka-wire sink: a Kafka topic is appended to; use mode("append") (Spark\'s '
                "Kafka sink refuses other modes too)"
            )
        warn_unknown_write_options(
            self.options, WIRE_SINK_OPTIONS, "the kafka-wire sink", client=True
        )
        if self._option("exactlyOnce") is not None or self._option("transactionalIdPrefix"):
            raise OptionError(
                "kafka-wire sink: exactlyOnce / transactionalIdPrefix are for writeStream (a "
                "batch write's tasks are committed as they finish, as Spark's Kafka sink does)"
            )
        return KafkaWireWriter(client_options(self.options), self._option("topic"), schema)

    def _option(self, name: str) -> str | None:
        return next((v for k, v in self.options.items() if k.lower() == name.lower()), None)

    def streamWriter(self, schema: StructType, overwrite: bool) -> KafkaWireStreamWriter:
        """``writeStream.format("kafka-wire")``: append output mode; ``exactlyOnce`` (default
        false, Spark's Kafka sink's at least once) and ``transactionalIdPrefix``."""
        from kwire.spark._wire_sink import KafkaWireStreamWriter

        if overwrite:
            raise OptionError(
                'kafka-wire sink: a Kafka topic is appended to; use outputMode("append")'
            )
        warn_unknown_write_options(
            self.options, WIRE_SINK_OPTIONS, "the kafka-wire sink", client=True
        )
        exactly_once = (self._option("exactlyOnce") or "false").strip().lower()
        if exactly_once not in ("true", "false"):
            raise OptionError(f"exactlyOnce must be true or false, not {exactly_once!r}")
        prefix = self._option("transactionalIdPrefix")
        if prefix is not None and exactly_once != "true":
            raise OptionError("transactionalIdPrefix is for exactlyOnce=true")
        return KafkaWireStreamWriter(
            client_options(self.options),
            self._option("topic"),
            schema,
            exactly_once=exactly_once == "true",
            transactional_id_prefix=prefix or None,
        )

    def streamReader(self, schema: StructType) -> KafkaWireStreamReader:
        return KafkaWireStreamReader(self.options, self._read_options(streaming=True), schema)


TP = tuple[str, int]


class KafkaWireStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):  # type: ignore[misc]
    """Micro-batches from a live cluster: offsets in Spark's Kafka JSON, ends from ListOffsets.

    A micro-batch ends at each partition's latest offset (the last stable offset under
    read_committed), limited by maxOffsetsPerTrigger as Spark's ``KafkaMicroBatchStream``
    prorates it; partitions and topics that appear later are read from their log start;
    Trigger.AvailableNow stops at the ends seen when the query starts.
    """

    def __init__(self, options: Mapping[str, str], read: ReadOptions, schema: StructType) -> None:
        self.client_options = client_options(options)
        self.options = read
        self.schema = schema
        self._client: KafkaClient | None = None
        self._target_ends: dict[TP, int] | None = None
        self._trigger_delay = TriggerDelay(read)
        self.min_partitions = parse_min_partitions(options)

    @property
    def client(self) -> KafkaClient:
        if self._client is None:
            self._client = KafkaClient(self.client_options)
        return self._client

    def _ends(self) -> tuple[dict[TP, int], dict[TP, int]]:
        tps = subscribed_partitions(self.client, self.options)
        earliest = self.client.list_offsets(tps, EARLIEST)
        latest = self.client.list_offsets(tps, LATEST, read_committed=self.options.read_committed)
        return earliest, latest

    def initialOffset(self) -> dict[str, dict[str, int]]:
        earliest, latest = self._ends()
        opts = self.options
        tps = sorted(latest)
        start = _resolve(
            self.client,
            tps,
            opts.starting_offsets,
            opts.starting_timestamps,
            LATEST,
            earliest,
            latest,
        )
        for tp in tps:
            if start[tp] < earliest[tp]:
                lost_before_log_start(opts, tp, start[tp], earliest[tp])
                start[tp] = earliest[tp]
        log.info("kwire: kafka-wire streaming from %s", offsets_to_json(start))
        return offsets_to_json(start)

    def latestOffset(
        self, start: dict[str, dict[str, int]], limit: ReadLimit
    ) -> dict[str, dict[str, int]]:
        begin = offsets_from_json(start)
        earliest, latest = self._ends()
        end: dict[TP, int] = {}
        starts: dict[TP, int] = {}
        for tp in set(begin) | set(latest):
            s = starts[tp] = begin.get(tp, earliest.get(tp, 0))  # a new one: its log start
            e = latest.get(tp, s)
            if self._target_ends is not None:
                e = min(e, self._target_ends.get(tp, s))
            end[tp] = max(s, e)
        if isinstance(limit, ReadMaxRows):
            end = rate_limit(starts, end, limit.max_rows)
        if self._trigger_delay.skip(starts, end, available_now=self._target_ends is not None):
            return offsets_to_json(starts)
        return offsets_to_json(end)

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.options.max_offsets_per_trigger is not None:
            return ReadMaxRows(self.options.max_offsets_per_trigger)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self._target_ends = self._ends()[1]

    def partitions(
        self, start: dict[str, dict[str, int]], end: dict[str, dict[str, int]]
    ) -> list[WireRange]:
        begin, stop = offsets_from_json(start), offsets_from_json(end)
        earliest = self.client.list_offsets(sorted(stop), EARLIEST)
        ranges = []
        for tp, e in sorted(stop.items()):
            s = begin.get(tp, earliest.get(tp, 0))
            if s < earliest.get(tp, s):
                lost_before_log_start(self.options, tp, s, min(earliest[tp], e))
                s = earliest[tp]
            if s < e:
                ranges.append(WireRange(tp[0], tp[1], s, e))
        return split_ranges(ranges, self.min_partitions)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        yield from read_range(self.client_options, self.options, self.schema, partition)

    def commit(self, end: dict[str, dict[str, int]]) -> None:
        """Nothing to do: offsets live in Spark's checkpoint, as Spark's Kafka source keeps them."""

    def stop(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def __getstate__(self) -> dict[str, Any]:  # executors get the options, not the connections
        state = dict(self.__dict__)
        state["_client"] = None
        return state
