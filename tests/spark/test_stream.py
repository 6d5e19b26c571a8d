"""Streaming reads of a live data directory (`spark.readStream.format("kafka-log")`).

The end-to-end test runs a `kwire broker`, produces with confluent-kafka while a query writes
Parquet with a checkpoint, stops and restarts the query and the broker, adds a topic, and checks
that every produced record is in the output exactly once and in offset order per partition. The
other tests drive the stream reader's driver side directly (no Spark job needed).
"""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from kwire.errors import OffsetOutOfRangeError, OptionError
from kwire.log import LogWriter
from kwire.records import BatchBuilder

pytestmark = pytest.mark.spark

confluent_kafka = pytest.importorskip("confluent_kafka")


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


def _rows(spark: Any, out: Path) -> int:
    from pyspark.errors import AnalysisException

    try:
        return int(spark.read.parquet(str(out)).count())
    except AnalysisException:  # no file committed yet
        return 0


def _wait_for(spark: Any, out: Path, n: int, query: Any, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert query.exception() is None, query.exception()
        if _rows(spark, out) >= n:
            return
        time.sleep(1.0)
    raise AssertionError(f"{_rows(spark, out)} rows after {timeout} s, expected {n}")


def _start(spark: Any, data: Path, out: Path, checkpoint: Path, **options: str) -> Any:
    reader = spark.readStream.format("kafka-log").option("subscribePattern", "orders.*")
    for key, value in options.items():
        reader = reader.option(key, value)
    return (
        reader.load(str(data))
        .selectExpr("topic", "partition", "offset", "CAST(value AS STRING) AS value")
        .writeStream.format("parquet")
        .option("checkpointLocation", str(checkpoint))
        .option("path", str(out))
        .trigger(processingTime="1 second")
        .start()
    )


def _batches_in_order(out: Path) -> list[list[str]]:
    """The output's files grouped by micro-batch, in batch order (from the sink's log)."""
    meta = out / "_spark_metadata"
    result = []
    for entry in sorted((p for p in meta.iterdir() if p.name.isdigit()), key=lambda p: int(p.name)):
        lines = entry.read_text().splitlines()[1:]  # "v1", then one JSON line per file
        result.append([json.loads(line)["path"] for line in lines])
    return result


def test_stream_from_a_live_broker_exactly_once(spark: Any, tmp_path: Path) -> None:
    from kwire.broker import Broker

    data, out, checkpoint = tmp_path / "data", tmp_path / "out", tmp_path / "checkpoint"
    produced: dict[str, int] = {}  # topic -> records produced
    broker = Broker(data).start()
    try:
        broker.create_topic("orders", 3)
        _produce(broker.bootstrap, "orders", 3, 0, 1500)
        produced["orders"] = 1500
        query = _start(
            spark, data, out, checkpoint, startingOffsets="earliest", maxOffsetsPerTrigger="700"
        )
        try:
            # clients keep producing while the query runs
            more = threading.Thread(
                target=_produce, args=(broker.bootstrap, "orders", 3, 1500, 1500)
            )
            more.start()
            _wait_for(spark, out, 1000, query)
            more.join()
            produced["orders"] += 1500
            progress = [p for p in query.recentProgress if p["numInputRows"]]
            assert progress and max(p["numInputRows"] for p in progress) <= 700
        finally:
            query.stop()
    finally:
        broker.stop()

    # the broker restarts; a new topic appears; the query restarts from its checkpoint
    broker = Broker(data).start()
    try:
        broker.create_topic("orders-new", 2)
        query = _start(spark, data, out, checkpoint, startingOffsets="earliest")
        try:
            _produce(broker.bootstrap, "orders", 3, 3000, 600)
            _produce(broker.bootstrap, "orders-new", 2, 0, 400)
            produced["orders"] += 600
            produced["orders-new"] = 400
            _wait_for(spark, out, sum(produced.values()), query)
            time.sleep(2)  # one more trigger: nothing may come twice
        finally:
            query.stop()
        ends = {t: broker.end_offsets(t) for t in produced}
    finally:
        broker.stop()

    rows = spark.read.parquet(str(out)).collect()
    assert len(rows) == sum(produced.values())
    seen = {(r["topic"], r["partition"], r["offset"]) for r in rows}
    assert len(seen) == len(rows)  # exactly once
    by_partition: dict[tuple[str, int], list[tuple[int, int]]] = defaultdict(list)
    for r in rows:
        topic, part, seq = r["value"].rsplit(":", 2)
        assert (topic, int(part)) == (r["topic"], r["partition"])
        by_partition[(r["topic"], r["partition"])].append((r["offset"], int(seq)))
    for (topic, part), pairs in by_partition.items():
        pairs.sort()
        assert [o for o, _ in pairs] == list(range(ends[topic][part]))  # every offset
        seqs = [s for _, s in pairs]
        assert seqs == sorted(seqs)  # in the order produced
        assert len(seqs) == len([s for s in range(produced[topic]) if s % len(ends[topic]) == part])

    # offset order per partition across the output: micro-batch by micro-batch, file by file
    import pyarrow.parquet as pq

    last: dict[tuple[str, int], int] = {}
    for files in _batches_in_order(out):
        batch_first: dict[tuple[str, int], int] = {}
        batch_last: dict[tuple[str, int], int] = {}
        for path in files:
            table = pq.read_table(path.removeprefix("file://"))
            for topic, part, offset in zip(
                table.column("topic").to_pylist(),
                table.column("partition").to_pylist(),
                table.column("offset").to_pylist(),
                strict=True,
            ):
                key = (topic, part)
                batch_first[key] = min(batch_first.get(key, offset), offset)
                batch_last[key] = max(batch_last.get(key, offset), offset)
        for key, first in batch_first.items():
            assert first == last.get(key, -1) + 1, (key, first, last.get(key))
            last[key] = batch_last[key]


def test_trigger_available_now_stops_at_the_ends_it_saw(spark: Any, tmp_path: Path) -> None:
    log = tmp_path / "log"
    _write(log, "orders", 0, 10, 20)
    _write(log, "orders", 1, 5, 20)
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"

    def run() -> None:
        (
            spark.readStream.format("kafka-log")
            .option("startingOffsets", "earliest")
            .option("maxOffsetsPerTrigger", "90")
            .load(str(log))
            .select("topic", "partition", "offset")
            .writeStream.format("parquet")
            .option("checkpointLocation", str(checkpoint))
            .option("path", str(out))
            .trigger(availableNow=True)
            .start()
            .awaitTermination(120)
        )

    run()
    assert _rows(spark, out) == 300
    assert len(_batches_in_order(out)) >= 4  # 300 offsets, at most 90 a micro-batch
    _write(log, "orders", 1, 5, 20, first_offset=100)  # more data: the next run reads just that
    run()
    rows = spark.read.parquet(str(out)).collect()
    assert len(rows) == 400 == len({(r["partition"], r["offset"]) for r in rows})


def test_auto_reads_a_single_node_broker_before_its_checkpoint(spark: Any, tmp_path: Path) -> None:
    """Every partition of a single-node broker has one replica: with the default streamEnd
    (auto) a micro-batch reads up to the log end, which is the high watermark, while the
    broker's replication-offset-checkpoint is still stale; streamEnd=highWatermark waits."""
    from kwire.broker import Broker

    data = tmp_path / "data"
    broker = Broker(data).start()
    try:
        broker.create_topic("orders", 2)
    finally:
        broker.stop()  # a clean stop checkpoints the high watermarks: 0 for both partitions
    checkpoint = (data / "replication-offset-checkpoint").read_text()
    stale = {"replica.high.watermark.checkpoint.interval.ms": "600000"}
    broker = Broker(data, config=stale).start()
    try:
        _produce(broker.bootstrap, "orders", 2, 0, 300)
        assert broker.end_offsets("orders") == [150, 150]

        def available_now(name: str, **options: str) -> int:
            reader = (
                spark.readStream.format("kafka-log")
                .option("subscribe", "orders")
                .option("startingOffsets", "earliest")
            )
            for key, value in options.items():
                reader = reader.option(key, value)
            query = (
                reader.load(str(data))
                .select("topic", "partition", "offset")
                .writeStream.format("memory")
                .queryName(name)
                .option("checkpointLocation", str(tmp_path / name))
                .trigger(availableNow=True)
                .start()
            )
            assert query.awaitTermination(120), f"{name} did not finish in 120 s"
            assert query.exception() is None, query.exception()
            return int(spark.table(name).count())

        assert available_now("auto_end") == 300
        assert available_now("hw_end", streamEnd="highWatermark") == 0
        assert available_now("log_end", streamEnd="logEnd") == 300
        # the checkpoint was not rewritten meanwhile: auto did not wait for it
        assert (data / "replication-offset-checkpoint").read_text() == checkpoint
    finally:
        broker.stop()


# ---- the stream reader's driver side, without Spark jobs ---------------------------------------


def _write(
    root: Path, topic: str, partition: int, batches: int, per_batch: int, first_offset: int = 0
) -> None:
    """Write offsets from ``first_offset`` on; later segments are moved beside existing ones."""
    if first_offset:
        staging = root.parent / f"_staging-{topic}-{partition}-{first_offset}"
        with LogWriter(staging, topic, partition, fsync=False, start_offset=first_offset) as w:
            _fill(w, batches, per_batch)
        for f in (staging / f"{topic}-{partition}").iterdir():
            if f.suffix in (".log", ".index", ".timeindex"):
                f.rename(root / f"{topic}-{partition}" / f.name)
        shutil.rmtree(staging)
        return
    with LogWriter(
        root, topic, partition, segment_bytes=4096, index_interval_bytes=512, fsync=False
    ) as w:
        _fill(w, batches, per_batch)


def _fill(w: LogWriter, batches: int, per_batch: int) -> None:
    for _ in range(batches):
        b = BatchBuilder(2, base_offset=w.next_offset)
        for _ in range(per_batch):
            b.append(timestamp=1_700_000_000_000 + b.next_offset * 1000, key=None, value=bytes(50))
        w.append(b.build())


def _reader(root: Path, **options: str) -> Any:
    from kwire.spark._options import parse_read_options
    from kwire.spark._stream import KafkaLogStreamReader

    return KafkaLogStreamReader(str(root), parse_read_options(options, streaming=True), None)


def test_starting_offsets_and_limits(tmp_path: Path) -> None:
    from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows

    _write(tmp_path, "t", 0, 10, 10)  # offsets 0..99
    _write(tmp_path, "t", 1, 2, 10)  # 0..19
    assert _reader(tmp_path).initialOffset() == {"t": {"0": 100, "1": 20}}  # latest by default
    earliest = _reader(tmp_path, startingOffsets="earliest")
    start = earliest.initialOffset()
    assert start == {"t": {"0": 0, "1": 0}}
    assert earliest.latestOffset(start, ReadAllAvailable()) == {"t": {"0": 100, "1": 20}}
    # maxOffsetsPerTrigger is prorated (Spark's rateLimit): 60 of 120 -> 50 and 10
    assert earliest.latestOffset(start, ReadMaxRows(60)) == {"t": {"0": 50, "1": 10}}
    assert _reader(tmp_path, maxOffsetsPerTrigger="60").getDefaultReadLimit() == ReadMaxRows(60)
    json_start = _reader(tmp_path, startingOffsets='{"t": {"0": 42, "1": -2}}').initialOffset()
    assert json_start == {"t": {"0": 42, "1": 0}}
    with pytest.raises(OptionError, match=r"every TopicPartition.*t-1"):
        _reader(tmp_path, startingOffsets='{"t": {"0": 42}}').initialOffset()
    ts = _reader(
        tmp_path,
        startingTimestamp=str(1_700_000_000_000 + 57_500),
        startingOffsetsByTimestampStrategy="latest",
    ).initialOffset()
    assert ts == {"t": {"0": 58, "1": 20}}  # the first record at/after it; none: the end
    with pytest.raises(OptionError, match="endingOffsets"):
        _reader(tmp_path, endingOffsets="latest")
    # a partition that appears later is read from offset 0
    _write(tmp_path, "t", 2, 1, 10)
    assert earliest.latestOffset(start, ReadAllAvailable())["t"]["2"] == 10
    parts = earliest.partitions(start, {"t": {"0": 100, "1": 20, "2": 10}})
    splits = [s for p in parts for s in getattr(p, "splits", (p,))]
    assert {(s.topic, s.partition) for s in splits} == {("t", 0), ("t", 1), ("t", 2)}
    assert all(s.live for s in splits)
    # Trigger.AvailableNow: never past the ends seen when the query started
    earliest.prepareForTriggerAvailableNow()
    _write(tmp_path, "t", 1, 1, 10, first_offset=20)
    assert earliest.latestOffset(start, ReadAllAvailable())["t"]["1"] == 20


def test_high_watermark_checkpoint_bounds_the_end_and_torn_tails_wait(tmp_path: Path) -> None:
    from pyspark.sql.streaming.datasource import ReadAllAvailable

    _write(tmp_path, "t", 0, 3, 10)  # 0..29
    reader = _reader(tmp_path, startingOffsets="earliest")
    start = reader.initialOffset()
    # no checkpoint: the log end; a batch still being written does not count
    log = sorted((tmp_path / "t-0").glob("*.log"))[-1]
    whole = log.read_bytes()
    with log.open("ab") as f:
        f.write(whole[:40])  # a torn batch at the tail
    assert reader.latestOffset(start, ReadAllAvailable()) == {"t": {"0": 30}}
    # with Kafka's replication-offset-checkpoint, its high watermark bounds the end
    (tmp_path / "replication-offset-checkpoint").write_text("0\n1\nt 0 20\n")
    assert reader.latestOffset(start, ReadAllAvailable()) == {"t": {"0": 20}}
    assert _reader(tmp_path, startingOffsets="earliest", streamEnd="logEnd").latestOffset(
        start, ReadAllAvailable()
    ) == {"t": {"0": 30}}
    # a partition the checkpoint does not list yet has nothing to read yet
    _write(tmp_path, "t", 1, 1, 10)
    assert reader.latestOffset(start, ReadAllAvailable())["t"]["1"] == 0


def _metadata_log(root: Path, replicas: dict[tuple[str, int], list[int]]) -> None:
    """A KRaft metadata log in ``root`` placing each partition on ``replicas``."""
    import uuid

    from kwire.log.metadata import CLUSTER_METADATA_DIR, encode_metadata_record, new_metadata_record

    ids = {topic: uuid.uuid5(uuid.NAMESPACE_OID, topic) for topic, _ in replicas}
    builder = BatchBuilder(2, base_offset=0, partition_leader_epoch=1)
    for topic, topic_id in ids.items():
        record = new_metadata_record("TopicRecord", name=topic, topic_id=topic_id)
        builder.append(None, 0, None, encode_metadata_record(record, 0))
    for (topic, partition), ids_ in replicas.items():
        record = new_metadata_record(
            "PartitionRecord",
            partition_id=partition,
            topic_id=ids[topic],
            replicas=ids_,
            isr=ids_,
            removing_replicas=[],
            adding_replicas=[],
            leader=ids_[0],
            leader_recovery_state=0,
            leader_epoch=0,
            partition_epoch=0,
            directories=[],
        )
        builder.append(None, 0, None, encode_metadata_record(record, 0))
    folder = root / CLUSTER_METADATA_DIR
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "00000000000000000000.log").write_bytes(builder.build())


def test_auto_takes_the_log_end_only_where_this_node_is_the_only_replica(tmp_path: Path) -> None:
    from pyspark.sql.streaming.datasource import ReadAllAvailable

    for partition in range(4):
        _write(tmp_path, "t", partition, 3, 10)  # 0..29 each
    (tmp_path / "replication-offset-checkpoint").write_text(
        "0\n4\nt 0 20\nt 1 20\nt 2 20\nt 3 20\n"
    )
    start = {"t": {str(p): 0 for p in range(4)}}

    def ends(**options: str) -> dict[str, int]:
        reader = _reader(tmp_path, startingOffsets="earliest", **options)
        return reader.latestOffset(start, ReadAllAvailable())["t"]

    high_watermarks = {"0": 20, "1": 20, "2": 20, "3": 20}
    # no metadata log (a LogWriter copy, a ZooKeeper-mode Kafka): the checkpoint bounds it
    assert ends() == high_watermarks
    (tmp_path / "meta.properties").write_text("version=0\nbroker.id=1\n")
    assert ends() == high_watermarks
    # a KRaft node 1: t-0 has only node 1, t-1 three replicas, t-2 only node 2, t-3 is not known
    (tmp_path / "meta.properties").write_text("node.id=1\nversion=1\ncluster.id=c\n")
    _metadata_log(tmp_path, {("t", 0): [1], ("t", 1): [1, 2, 3], ("t", 2): [2]})
    assert ends() == {"0": 30, "1": 20, "2": 20, "3": 20}
    assert ends(streamEnd="highWatermark") == high_watermarks
    assert ends(streamEnd="logEnd") == {"0": 30, "1": 30, "2": 30, "3": 30}
    # a reassignment to more replicas is seen by the next planning (the log is read on)
    from kwire.log.metadata import CLUSTER_METADATA_DIR

    shutil.rmtree(tmp_path / CLUSTER_METADATA_DIR)
    _metadata_log(tmp_path, {("t", 0): [1, 2], ("t", 3): [1]})
    assert ends() == {"0": 20, "1": 20, "2": 20, "3": 30}


def test_fail_on_data_loss(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    _write(tmp_path, "t", 0, 20, 10)
    segments = sorted((tmp_path / "t-0").glob("*.log"))
    assert len(segments) > 2
    reader = _reader(tmp_path, startingOffsets="earliest")
    start = reader.initialOffset()
    end = {"t": {"0": 200}}
    for seg in segments[:2]:  # retention deletes the oldest segments
        for f in seg.parent.glob(seg.stem + ".*"):
            f.unlink()
    first = int(segments[2].stem)
    with pytest.raises(
        OffsetOutOfRangeError, match=rf"t-0: offsets 0 to {first - 1} .*failOnDataLoss"
    ):
        reader.partitions(start, end)
    lenient = _reader(tmp_path, startingOffsets="earliest", failOnDataLoss="false")
    with caplog.at_level("WARNING", logger="kwire.spark"):
        parts = lenient.partitions(start, end)
    assert "t-0: offsets 0 to" in caplog.text
    splits = [s for p in parts for s in getattr(p, "splits", (p,))]
    assert min(s.base_offset for s in splits) == first
    # batch reads: a starting offset below the log start is the same data loss
    from kwire.spark._options import parse_read_options
    from kwire.spark._source import plan_scan

    with pytest.raises(OffsetOutOfRangeError, match="t-0"):
        plan_scan(str(tmp_path), parse_read_options({"startingOffsets": '{"t": {"0": 5}}'}))
    splits, _ = plan_scan(
        str(tmp_path),
        parse_read_options({"startingOffsets": '{"t": {"0": 5}}', "failOnDataLoss": "false"}),
    )
    assert min(s.base_offset for s in splits) == first
    shutil.rmtree(tmp_path / "t-0")
    assert os.listdir(tmp_path) == []
