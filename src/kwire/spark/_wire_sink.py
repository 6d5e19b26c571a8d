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

``df.writeStream.format("kafka-wire")`` is the same sink per micro-batch (at least once, as Spark's
Kafka sink), or, with ``exactlyOnce=true``, exactly once for ``read_committed`` readers:

* each task of batch B writes inside a Kafka transaction with ``transactional.id``
  ``{transactionalIdPrefix}-{Spark partition id}`` (the prefix defaults to ``kwire-{query id}``,
  Spark's id that a restart from the checkpoint keeps). Its InitProducerId fences every earlier
  producer of that id (an older attempt, a killed run) and aborts the transaction it left open;
* in the same transaction it commits B as the offset of the group named after the transactional
  id (TxnOffsetCommit, as Kafka Streams and Flink commit their progress), and does not commit: it
  returns the producer id and epoch to the driver;
* the driver's ``commit(messages, batchId)`` ends each task's transaction with EndTxn (Kafka's
  coordinator accepts it from any connection holding the transactional id, producer id and epoch),
  ``abort`` aborts them;
* a replay of B (the driver died after some or all EndTxn, before Spark's commit log) finds B in a
  task's group offset and writes nothing for that task; an unfinished task transaction was aborted
  by the replay's InitProducerId and is written again.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    WriterCommitMessage,
)

from kwire._lazy import lazy_dataclass
from kwire.client import (
    ClientConfig,
    ClientError,
    IdempotentSequences,
    KafkaClient,
    Transaction,
    default_partition,
)
from kwire.errors import OptionError
from kwire.spark._sink import sink_rows

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql.types import StructType

__all__ = [
    "KafkaWireStreamWriter",
    "KafkaWireWriter",
    "WireTaskCommit",
    "WireTxnCommit",
    "check_sink_schema",
]

#: the committed metadata that marks a group offset as a batch id of an exactly-once sink
BATCH_MARKER = "kwire exactlyOnce batch"

log = logging.getLogger("kwire.spark")

SINK_COLUMNS = frozenset({"key", "value", "headers", "topic", "partition", "timestamp"})


@lazy_dataclass(frozen=True)
class WireTaskCommit(WriterCommitMessage):  # type: ignore[misc]
    """What a ``kafka-wire`` write task sends the driver: the records and batches it produced."""

    records: int
    batches: int


@lazy_dataclass(frozen=True)
class WireTxnCommit(WriterCommitMessage):  # type: ignore[misc]
    """A task's open transaction (producer_id -1: nothing to commit), for the driver to end."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    transaction_v2: bool
    batch_id: int
    records: int
    skipped: bool = False


def check_sink_schema(schema: StructType, topic: str | None) -> None:
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


def write_rows(
    client: KafkaClient,
    iterator: Iterator[pa.RecordBatch],
    topic_option: str | None,
    *,
    sequences: IdempotentSequences | None = None,
    transaction: Transaction | None = None,
) -> tuple[int, int, tuple[str, int] | None]:
    """Rows to records, one batch per partition at a time (``batch.size``); (records, batches,
    the first partition written)."""
    config = client.config
    pending: dict[tuple[str, int], list[tuple[bytes | None, bytes | None, Any, int]]] = {}
    sizes: dict[tuple[str, int], int] = {}
    records = batches = counter = 0
    first: tuple[str, int] | None = None

    def flush(tp: tuple[str, int]) -> None:
        nonlocal batches
        rows = pending.pop(tp, None)
        sizes.pop(tp, None)
        if rows:
            client.produce(tp[0], tp[1], rows, sequences=sequences, transaction=transaction)
            batches += 1

    for batch in iterator:
        now = int(time.time() * 1000)
        for topic, part, key, value, hdrs, stamp in sink_rows(batch, topic_option, now):
            if topic is None:
                raise OptionError("kafka-wire sink: a row has no topic (null `topic`)")
            if part is None:
                count = client.metadata_partition_count(topic)
                part = default_partition(key, count, counter)
                counter += 1
            tp = (topic, int(part))
            first = first or tp
            pending.setdefault(tp, []).append((key, value, hdrs, stamp))
            sizes[tp] = sizes.get(tp, 0) + len(value or b"") + len(key or b"") + 24
            records += 1
            if sizes[tp] >= config.batch_size:
                flush(tp)
    for tp in list(pending):
        flush(tp)
    return records, batches, first


class KafkaWireWriter(DataSourceArrowWriter):  # type: ignore[misc]
    def __init__(
        self, client_options: dict[str, str], topic: str | None, schema: StructType
    ) -> None:
        check_sink_schema(schema, topic)
        ClientConfig.from_options(client_options)  # bad settings fail on the driver, once
        self.client_options = client_options
        self.topic = topic

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WireTaskCommit:
        with KafkaClient(self.client_options) as client:
            sequences = client.init_producer_id()
            records, batches, _ = write_rows(client, iterator, self.topic, sequences=sequences)
        return WireTaskCommit(records, batches)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        """Nothing to do: every batch was acknowledged (acks) when its task returned."""

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        """Nothing to undo: acknowledged batches stay, as with Spark's Kafka sink (at least once)."""


class KafkaWireStreamWriter(DataSourceStreamArrowWriter):  # type: ignore[misc]
    """``writeStream.format("kafka-wire")``: at least once, or exactly once with transactions
    committed when Spark commits the micro-batch (see the module's header)."""

    def __init__(
        self,
        client_options: dict[str, str],
        topic: str | None,
        schema: StructType,
        *,
        exactly_once: bool = False,
        transactional_id_prefix: str | None = None,
    ) -> None:
        check_sink_schema(schema, topic)
        config = ClientConfig.from_options(client_options)
        if config.transactional_id is not None:
            raise OptionError(
                "kafka-wire sink: kafka.transactional.id is set per task by the sink; use "
                'option("exactlyOnce", "true") and option("transactionalIdPrefix", ...)'
            )
        if exactly_once and not config.enable_idempotence:
            raise OptionError(
                "kafka-wire sink: exactlyOnce needs an idempotent producer (acks=all)"
            )
        self.client_options = client_options
        self.topic = topic
        self.exactly_once = exactly_once
        self.prefix = transactional_id_prefix

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WireTaskCommit | WireTxnCommit:
        if not self.exactly_once:
            with KafkaClient(self.client_options) as client:
                sequences = client.init_producer_id()
                records, batches, _ = write_rows(client, iterator, self.topic, sequences=sequences)
            return WireTaskCommit(records, batches)
        from pyspark import TaskContext

        context = TaskContext.get()
        batch_text = context.getLocalProperty("streaming.sql.batchId") if context else None
        if context is None or batch_text is None:
            raise OptionError("kafka-wire sink: exactlyOnce is for writeStream only")
        batch_id = int(batch_text)
        prefix = self.prefix or f"kwire-{context.getLocalProperty('sql.streaming.queryId')}"
        tid = f"{prefix}-{context.partitionId()}"
        with KafkaClient(self.client_options) as client:
            # first fence earlier producers of this id (aborting what they left open), then
            # read the last batch this task committed: nothing of it can be pending any more
            txn = client.init_transactions(tid)
            done = [
                offset
                for offset, meta in client.committed_offsets(tid).values()
                if meta == BATCH_MARKER
            ]
            if done and max(done) >= batch_id:
                # batch_id was committed by a run that died before Spark's commit log
                for _ in iterator:  # the rows are read all the same (Spark feeds them in)
                    pass
                return WireTxnCommit(tid, -1, -1, txn.transaction_v2, batch_id, 0, skipped=True)
            client.begin_transaction(txn)
            records, _, first = write_rows(client, iterator, self.topic, transaction=txn)
            if first is None:
                client.abort_transaction(txn)  # nothing written, nothing to end
                return WireTxnCommit(tid, -1, -1, txn.transaction_v2, batch_id, 0)
            client.send_offsets_to_transaction(txn, {first: (batch_id, BATCH_MARKER)}, tid)
            # left open: the driver commits it with the batch
            return WireTxnCommit(
                tid, txn.producer_id, txn.producer_epoch, txn.transaction_v2, batch_id, records
            )

    def _end(self, messages: list[WriterCommitMessage | None], commit: bool) -> None:
        open_ = [m for m in messages if isinstance(m, WireTxnCommit) and m.producer_id >= 0]
        if not open_:
            return
        with KafkaClient(self.client_options) as client:
            for m in open_:
                txn = Transaction.resume(
                    m.transactional_id,
                    m.producer_id,
                    m.producer_epoch,
                    transaction_v2=m.transaction_v2,
                )
                if commit:
                    client.commit_transaction(txn)
                else:
                    try:
                        client.abort_transaction(txn)
                    except ClientError as exc:  # fenced or timed out: aborted already
                        log.warning("kafka-wire sink: abort of %s: %s", m.transactional_id, exc)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Commit the tasks' transactions (exactlyOnce); a failure fails the batch, and its
        replay writes only what was not committed."""
        self._end(messages, True)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        self._end(messages, False)
