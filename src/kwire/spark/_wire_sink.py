"""The "kafka-wire" sink: ``df.write.format("kafka-wire")`` appends rows to a Kafka cluster's topics.

Spark's Kafka sink columns: ``value`` (binary or string, required), ``key``, ``headers``
(array<struct<key string, value binary>>), ``topic`` (or the ``topic`` option, which wins, as in
Spark), ``partition`` (or Kafka's default partitioner: murmur2 of the key, round robin without one),
and ``timestamp`` (or the time of writing). ``kafka.*`` options go to the client (``acks``,
``compression.type``, ``batch.size``, ``enable.idempotence``, security).

Each Spark task is one idempotent producer (InitProducerId, KIP-98): a batch it retries is never
appended twice. Like Spark's own Kafka sink, the write is at least once across task attempts: a
task that fails after some batches were acknowledged is run again by Spark and writes them again.
Batches go one at a time per partition, in row order, so records of a partition keep the order of
the rows that reached the task.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage

from kwire.client import ClientConfig, KafkaClient, default_partition
from kwire.errors import OptionError
from kwire.spark._sink import sink_rows

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql.types import StructType

__all__ = ["KafkaWireWriter", "WireTaskCommit"]

SINK_COLUMNS = frozenset({"key", "value", "headers", "topic", "partition", "timestamp"})


@dataclass(frozen=True)
class WireTaskCommit(WriterCommitMessage):  # type: ignore[misc]
    records: int
    batches: int


class KafkaWireWriter(DataSourceArrowWriter):  # type: ignore[misc]
    def __init__(
        self, client_options: dict[str, str], topic: str | None, schema: StructType
    ) -> None:
        names = set(schema.fieldNames())
        if "value" not in names:
            raise OptionError("kafka-wire sink: the DataFrame needs a `value` column")
        if "topic" not in names and topic is None:
            raise OptionError('kafka-wire sink: give a `topic` column or .option("topic", ...)')
        unknown = names - SINK_COLUMNS
        if unknown:
            raise OptionError(
                f"kafka-wire sink: unexpected columns {sorted(unknown)} (Spark's Kafka sink "
                "columns are key, value, headers, topic, partition, timestamp)"
            )
        ClientConfig.from_options(client_options)  # bad settings fail on the driver, once
        self.client_options = client_options
        self.topic = topic

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WireTaskCommit:
        config = ClientConfig.from_options(self.client_options)
        pending: dict[tuple[str, int], list[tuple[bytes | None, bytes | None, Any, int]]] = {}
        sizes: dict[tuple[str, int], int] = {}
        records = batches = counter = 0
        with KafkaClient(config) as client:
            sequences = client.init_producer_id()

            def flush(tp: tuple[str, int]) -> None:
                nonlocal batches
                rows = pending.pop(tp, None)
                sizes.pop(tp, None)
                if rows:
                    client.produce(tp[0], tp[1], rows, sequences=sequences)
                    batches += 1

            for batch in iterator:
                now = int(time.time() * 1000)
                for topic, part, key, value, hdrs, stamp in sink_rows(batch, self.topic, now):
                    if topic is None:
                        raise OptionError("kafka-wire sink: a row has no topic (null `topic`)")
                    if part is None:
                        count = client.metadata_partition_count(topic)
                        part = default_partition(key, count, counter)
                        counter += 1
                    tp = (topic, int(part))
                    pending.setdefault(tp, []).append((key, value, hdrs, stamp))
                    sizes[tp] = sizes.get(tp, 0) + len(value or b"") + len(key or b"") + 24
                    records += 1
                    if sizes[tp] >= config.batch_size:
                        flush(tp)
            for tp in list(pending):
                flush(tp)
        return WireTaskCommit(records, batches)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        """Nothing to do: every batch was acknowledged (acks) when its task returned."""

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        """Nothing to undo: acknowledged batches stay, as with Spark's Kafka sink (at least once)."""
