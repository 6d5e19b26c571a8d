"""The streaming proof with Delta output: a `kafka-log` query over a live `kwire broker` data
directory writes each micro-batch to a Delta table with `deltalake` in `foreachBatch`, recording the
batch id as a Delta app transaction (`txn` action) in the same commit, so a replayed batch is
skipped. The query fails once right after a Delta commit (before Spark records the batch), is
restarted, stopped, and restarted again with the broker restarted and a new topic added; the table
then holds every produced record exactly once and in offset order per partition.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.spark

confluent_kafka = pytest.importorskip("confluent_kafka")
deltalake = pytest.importorskip("deltalake")

APP_ID = "kwire-stream-delta-test"
#: a short high-watermark checkpoint interval: micro-batches see produced records within ~1 s
BROKER_CONFIG = {"replica.high.watermark.checkpoint.interval.ms": "1000"}


def _produce(bootstrap: str, topic: str, partitions: int, first: int, count: int) -> None:
    """``count`` records (values ``topic:partition:seq``) in a bounded loop, idempotent."""
    producer = confluent_kafka.Producer(
        {"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5}
    )
    for seq in range(first, first + count):
        part = seq % partitions
        producer.produce(topic, value=f"{topic}:{part}:{seq}".encode(), partition=part)
        if seq % 50 == 0:
            producer.poll(0)
            time.sleep(0.005)
    assert producer.flush(30) == 0


class DeltaSink:
    """``foreachBatch``: append a micro-batch to ``path`` once, whatever Spark replays."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fail_once_after_commit = False
        self.skipped: list[int] = []

    def committed_version(self) -> int:
        from deltalake import DeltaTable

        if not (self.path / "_delta_log").exists():
            return -1
        version = DeltaTable(str(self.path)).transaction_version(APP_ID)
        return -1 if version is None else int(version)

    def __call__(self, df: Any, batch_id: int) -> None:
        import pyarrow as pa
        from deltalake import CommitProperties, Transaction, write_deltalake

        if batch_id <= self.committed_version():
            self.skipped.append(batch_id)  # committed before a failure: Spark replays it
            return
        table = df.toArrow()
        if table.num_rows == 0:
            return
        n = table.num_rows
        table = table.append_column("batch_id", pa.array([batch_id] * n, pa.int64()))
        table = table.append_column("row", pa.array(range(n), pa.int64()))
        write_deltalake(
            str(self.path),
            table,
            mode="append",
            commit_properties=CommitProperties(
                app_transactions=[Transaction(APP_ID, version=batch_id)]
            ),
        )
        if self.fail_once_after_commit:
            self.fail_once_after_commit = False
            raise RuntimeError(f"injected failure after committing batch {batch_id}")


def _start(spark: Any, data: Path, checkpoint: Path, sink: DeltaSink, **options: str) -> Any:
    reader = spark.readStream.format("kafka-log").option("subscribePattern", "orders.*")
    for key, value in options.items():
        reader = reader.option(key, value)
    return (
        reader.load(str(data))
        .selectExpr("topic", "partition", "offset", "CAST(value AS STRING) AS value")
        .writeStream.foreachBatch(sink)
        .option("checkpointLocation", str(checkpoint))
        .trigger(processingTime="1 second")
        .start()
    )


def _rows(out: Path) -> int:
    from deltalake import DeltaTable

    if not (out / "_delta_log").exists():
        return 0
    return int(DeltaTable(str(out)).to_pyarrow_table(columns=["offset"]).num_rows)


def _wait_for(out: Path, n: int, query: Any, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert query.exception() is None, query.exception()
        if _rows(out) >= n:
            return
        time.sleep(1.0)
    raise AssertionError(f"{_rows(out)} rows after {timeout} s, expected {n}")


def test_stream_to_delta_exactly_once(spark: Any, tmp_path: Path) -> None:
    from deltalake import DeltaTable

    from kwire.broker import Broker

    data, out, checkpoint = tmp_path / "data", tmp_path / "delta", tmp_path / "checkpoint"
    sink = DeltaSink(out)
    produced: dict[str, int] = {}  # topic -> records produced
    broker = Broker(data, config=BROKER_CONFIG).start()
    try:
        broker.create_topic("orders", 3)
        _produce(broker.bootstrap, "orders", 3, 0, 1500)
        produced["orders"] = 1500
        more = threading.Thread(target=_produce, args=(broker.bootstrap, "orders", 3, 1500, 1500))
        # the first batch commits to Delta, then the query fails before Spark commits it
        sink.fail_once_after_commit = True
        query = _start(
            spark, data, checkpoint, sink, startingOffsets="earliest", maxOffsetsPerTrigger="700"
        )
        try:
            more.start()  # clients keep producing while the query runs
            deadline = time.monotonic() + 120
            while query.isActive and time.monotonic() < deadline:
                time.sleep(0.5)
            assert not query.isActive and "injected failure" in str(query.exception())
        finally:
            query.stop()
        failed_at = sink.committed_version()
        assert failed_at >= 0
        # restarted from its checkpoint, the query replays the batch Delta already has
        query = _start(spark, data, checkpoint, sink, maxOffsetsPerTrigger="700")
        try:
            _wait_for(out, 2000, query)
            more.join()
            produced["orders"] += 1500
        finally:
            query.stop()
        assert failed_at in sink.skipped
    finally:
        broker.stop()

    # the broker restarts; a new topic appears; the query restarts from its checkpoint
    broker = Broker(data, config=BROKER_CONFIG).start()
    try:
        broker.create_topic("orders-new", 2)
        query = _start(spark, data, checkpoint, sink, startingOffsets="earliest")
        try:
            _produce(broker.bootstrap, "orders", 3, 3000, 600)
            _produce(broker.bootstrap, "orders-new", 2, 0, 400)
            produced["orders"] += 600
            produced["orders-new"] = 400
            _wait_for(out, sum(produced.values()), query)
            time.sleep(2)  # one more trigger: nothing may come twice
        finally:
            query.stop()
        ends = {t: broker.end_offsets(t) for t in produced}
    finally:
        broker.stop()

    table = DeltaTable(str(out)).to_pyarrow_table()
    assert DeltaTable(str(out)).transaction_version(APP_ID) == max(
        table.column("batch_id").to_pylist()
    )
    rows = table.to_pylist()
    assert len(rows) == sum(produced.values())
    assert len({(r["topic"], r["partition"], r["offset"]) for r in rows}) == len(rows)  # once
    by_partition: dict[tuple[str, int], list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        topic, part, _ = r["value"].rsplit(":", 2)
        assert (topic, int(part)) == (r["topic"], r["partition"])
        by_partition[(r["topic"], r["partition"])].append(r)
    for (topic, part), group in by_partition.items():
        # in the order written: micro-batch by micro-batch, row by row
        group.sort(key=lambda r: (r["batch_id"], r["row"]))
        assert [r["offset"] for r in group] == list(range(ends[topic][part]))  # every offset
        seqs = [int(r["value"].rsplit(":", 1)[1]) for r in group]
        assert seqs == sorted(seqs)  # in the order produced
        assert len(seqs) == len([s for s in range(produced[topic]) if s % len(ends[topic]) == part])
