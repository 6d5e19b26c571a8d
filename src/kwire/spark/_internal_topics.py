"""Views of a log directory as tables (option ``view``): Kafka's internal topics decoded, and the
latest value per key.

  view=consumer_offsets  every offset commit in ``__consumer_offsets``: group, topic, partition,
                         committedOffset, leaderEpoch, metadata, commitTimestamp, expireTimestamp
                         (a deletion, a tombstone, has null offset fields), plus where the commit
                         sits (logPartition, logOffset, logTimestamp): consumer-lag history from a
                         backup, no broker needed. Keys are decoded with kwire's generated
                         classes (``OffsetCommitKey``; the key's first int16 is the record type:
                         0/1 offsets, 2 group metadata, which this view leaves out) and values
                         with ``OffsetCommitValue`` at their version. Read read_committed, so
                         offsets of aborted TxnOffsetCommits are not listed.
  view=transactions      every ``__transaction_state`` record (TransactionLogKey/Value):
                         transactionalId, producerId, producerEpoch, timeoutMs, state (Kafka's
                         TransactionState names), partitions, startTimestamp, lastUpdateTimestamp.
  view=latest            the last record per key in each topic-partition, tombstones dropped: the
                         offline equivalent of a compacted topic. One Spark task per
                         topic-partition reads it twice: keys and offsets first (the winning
                         offset per key, pyarrow's hash aggregation), then the full records,
                         keeping those offsets; memory holds keys and offsets, not values.
Internal topics are small and their records are structs, so they decode record by record.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from kwire._lazy import lazy_dataclass
from kwire.errors import OptionError
from kwire.log.internal_topics import (
    CONSUMER_OFFSETS,
    TRANSACTION_STATE,
    read_version,
    transaction_state_name,
)
from kwire.spark._options import ReadOptions, parse_read_options
from kwire.spark._plan import SegmentSplit, SplitGroup
from kwire.spark._schema import CORRUPT_RECORD, arrow_schema, schema_for
from kwire.spark._source import KafkaLogReader, plan_scan, read_partition

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql.types import StructType

__all__ = ["VIEWS", "ViewSource", "view_source"]

VIEWS = ("consumer_offsets", "transactions", "latest")

_POSITION = "logPartition int, logOffset bigint, logTimestamp timestamp"
OFFSETS_DDL = (
    "group string, topic string, partition int, committedOffset bigint, leaderEpoch int, "
    f"metadata string, commitTimestamp timestamp, expireTimestamp timestamp, {_POSITION}"
)
TRANSACTIONS_DDL = (
    "transactionalId string, producerId bigint, producerEpoch smallint, timeoutMs int, "
    "state string, partitions array<struct<topic: string, partitions: array<int>>>, "
    f"startTimestamp timestamp, lastUpdateTimestamp timestamp, {_POSITION}"
)


def _ms(value: int | None) -> Any:
    import datetime as dt

    if value is None or value < 0:
        return None
    return dt.datetime.fromtimestamp(value / 1000, tz=dt.UTC)


def _position(row: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "logPartition": row["partition"],
        "logOffset": row["offset"],
        "logTimestamp": row["timestamp"],
    }


def decode_offset_commit(key: bytes, value: bytes | None) -> dict[str, Any] | None:
    """One ``__consumer_offsets`` record as a row, or None when it is not an offset commit."""
    from kwire.protocol.messages import OffsetCommitKey, OffsetCommitValue

    if len(key) < 2:
        return None
    kind, key_body = read_version(key)
    if kind not in (0, 1):
        return None  # 2: group metadata; others: the new coordinator's records
    k = OffsetCommitKey.decode(key_body, kind)
    row: dict[str, Any] = {"group": k.group, "topic": k.topic, "partition": k.partition}
    if value is not None and len(value) >= 2:
        vv, body = read_version(value)
        v = OffsetCommitValue.decode(body, min(vv, OffsetCommitValue.MAX_VERSION))
        row.update(
            committedOffset=v.offset,
            leaderEpoch=v.leader_epoch if vv >= 3 and v.leader_epoch >= 0 else None,
            metadata=v.metadata,
            commitTimestamp=_ms(v.commit_timestamp),
            expireTimestamp=_ms(v.expire_timestamp) if vv == 1 else None,
        )
    return row


def decode_transaction(key: bytes, value: bytes | None) -> dict[str, Any] | None:
    """One ``__transaction_state`` record as a row (a tombstone: only the id and position)."""
    from kwire.protocol.messages import TransactionLogKey, TransactionLogValue

    if len(key) < 2:
        return None
    kv, key_body = read_version(key)
    k = TransactionLogKey.decode(key_body, min(kv, TransactionLogKey.MAX_VERSION))
    row: dict[str, Any] = {"transactionalId": k.transactional_id}
    if value is not None and len(value) >= 2:
        vv, body = read_version(value)
        v = TransactionLogValue.decode(body, min(vv, TransactionLogValue.MAX_VERSION))
        status = v.transaction_status
        row.update(
            producerId=v.producer_id,
            producerEpoch=v.producer_epoch,
            timeoutMs=v.transaction_timeout_ms,
            state=transaction_state_name(status) or str(status),
            partitions=[
                {"topic": p.topic, "partitions": list(p.partition_ids)}
                for p in v.transaction_partitions or ()
            ],
            startTimestamp=_ms(v.transaction_start_timestamp_ms),
            lastUpdateTimestamp=_ms(v.transaction_last_update_timestamp_ms),
        )
    return row


def _splits(partition: Any) -> tuple[SegmentSplit, ...]:
    if isinstance(partition, SegmentSplit):
        return (partition,)
    if isinstance(partition, SplitGroup):
        return partition.splits
    return ()


class InternalTopicReader(KafkaLogReader):
    """Reads an internal topic's key/value records and decodes each into a row."""

    decoder: Any = None

    def read(self, partition: Any) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa
        from pyspark.sql.pandas.types import to_arrow_schema

        target = to_arrow_schema(self.schema, timezone="UTC")
        raw = arrow_schema(["key", "value", "partition", "offset", "timestamp"])
        for batch in read_partition(partition, self.options, raw):
            rows = []
            for record in batch.to_pylist():
                if record["key"] is None:
                    continue
                try:
                    row = type(self).decoder(record["key"], record["value"])
                except Exception:  # a record of a newer format than kwire knows: not listed
                    row = None
                if row is not None:
                    rows.append({**row, **_position(record)})
            if rows:
                yield pa.RecordBatch.from_pylist(rows, schema=target)


class ConsumerOffsetsReader(InternalTopicReader):
    decoder = staticmethod(decode_offset_commit)


class TransactionsReader(InternalTopicReader):
    decoder = staticmethod(decode_transaction)


class LatestReader(KafkaLogReader):
    """The last record per key in each topic-partition, tombstones dropped."""

    def partitions(self) -> list[SegmentSplit | SplitGroup]:
        splits, _ = plan_scan(self.uri, self.options)
        groups: dict[tuple[str, int], list[SegmentSplit]] = {}
        for split in splits:
            groups.setdefault((split.topic, split.partition), []).append(split)
        return [SplitGroup(tuple(g)) for g in groups.values()]

    def read(self, partition: Any) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa
        import pyarrow.compute as pc
        from pyspark.sql.pandas.types import to_arrow_schema

        target = to_arrow_schema(self.schema, timezone="UTC")
        splits = _splits(partition)
        if not splits:
            return
        # pass 1: the winning (largest) offset of every key; values are not copied
        keys = arrow_schema(["key", "offset"])
        tables = [
            pa.Table.from_batches([b])
            for split in splits
            for b in read_partition(split, self.options, keys)
            if b.num_rows
        ]
        if not tables:
            return
        table = pa.concat_tables(tables).filter(pc.is_valid(pa.concat_tables(tables)["key"]))
        winners = table.group_by("key").aggregate([("offset", "max")])["offset_max"]
        # pass 2: the records at those offsets, tombstones dropped
        names = list(target.names)
        extra = [c for c in ("offset", "value") if c not in names]
        wanted = arrow_schema([n for n in names if n != CORRUPT_RECORD] + extra)
        for split in splits:
            for batch in read_partition(split, self.options, wanted):
                keep = pc.and_(
                    pc.is_in(batch.column("offset"), value_set=winners),
                    pc.is_valid(batch.column("value")),
                )
                rows = batch.filter(keep)
                if rows.num_rows:
                    arrays = [
                        rows.column(f.name)
                        if f.name != CORRUPT_RECORD
                        else pa.nulls(rows.num_rows, pa.string())
                        for f in target
                    ]
                    yield pa.RecordBatch.from_arrays(arrays, schema=target)


@lazy_dataclass
class ViewSource:
    """A read of an internal topic (``__consumer_offsets``, ``__transaction_state``) as a view."""

    path: str
    options: ReadOptions
    view: str

    def schema(self) -> str | StructType:
        if self.view == "consumer_offsets":
            return OFFSETS_DDL
        if self.view == "transactions":
            return TRANSACTIONS_DDL
        return schema_for(self.options)

    def reader(self, schema: StructType) -> KafkaLogReader:
        cls = {
            "consumer_offsets": ConsumerOffsetsReader,
            "transactions": TransactionsReader,
            "latest": LatestReader,
        }[self.view]
        return cls(self.path, self.options, schema)  # type: ignore[no-any-return]


def view_source(path: str, raw: Mapping[str, str]) -> ViewSource | None:
    """The ``view`` option's source, or None without the option."""
    lowered = {str(k).lower(): str(v) for k, v in raw.items()}
    view = lowered.get("view")
    if view is None:
        return None
    view = view.strip().lower()
    if view not in VIEWS:
        raise OptionError(f"option view: expected one of {', '.join(VIEWS)}, got {view!r}")
    options = parse_read_options(raw)
    if view == "consumer_offsets":
        options = dataclasses.replace(
            options, topics=frozenset({CONSUMER_OFFSETS}), read_committed=True
        )
    elif view == "transactions":
        options = dataclasses.replace(options, topics=frozenset({TRANSACTION_STATE}))
    elif options.topics is None and options.topic_pattern is None and options.assign is None:
        options = dataclasses.replace(options, topic_pattern=r"[^_].*")  # not internal topics
    return ViewSource(path, options, view)
