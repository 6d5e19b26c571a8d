"""Spark's Kafka source options mean what they mean in Spark (issue 16 item 5); no JVM.

Spark's rules are KafkaSourceProvider's (validateGeneralOptions, validateBatchOptions,
checkOffsetLimitValidity) and KafkaMicroBatchStream's (delayBatch for minOffsetsPerTrigger and
maxTriggerDelay); the messages keep Spark's wording where a user would search for it.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from kwire.errors import OffsetOutOfRangeError, OptionError
from kwire.log import LogWriter
from kwire.records import BatchBuilder
from kwire.spark import _options
from kwire.spark._fs import list_files, read_bytes, resolve
from kwire.spark._options import parse_duration_ms, parse_read_options, parse_write_options
from kwire.spark._plan import plan_splits

T0 = 1_700_000_000_000


def test_kafka_isolation_level_is_sparks_name_and_isolation_level_an_alias() -> None:
    assert parse_read_options({"kafka.isolation.level": "read_committed"}).read_committed
    assert parse_read_options({"isolationLevel": "read_committed"}).read_committed
    both = {"kafka.isolation.level": "read_committed", "isolationLevel": "read_committed"}
    assert parse_read_options(both).read_committed
    with pytest.raises(OptionError, match="differ"):
        parse_read_options({"kafka.isolation.level": "read_committed", "isolationLevel": "x"})


@pytest.mark.parametrize(
    ("options", "message"),
    [
        # a per-partition -1 (latest) start: Spark refuses it in batch queries
        ({"startingOffsets": '{"t": {"0": -1}}'}, r"t-0 can't be latest"),
        # exactly one strategy
        ({"subscribe": "t", "assign": '{"t": [0]}'}, "Only one of the following options"),
        ({"subscribe": "t", "subscribePattern": "t.*"}, "Only one of the following options"),
        ({"subscribe": " , "}, "no topics to subscribe to"),
        ({"subscribePattern": " "}, "pattern to subscribe to is empty"),
        # checkOffsetLimitValidity
        (
            {"startingOffsets": '{"t": {"0": 50}}', "endingOffsets": '{"t": {"0": 10}}'},
            r"starting offset 50 is greater than the ending offset 10 for topic partition t-0",
        ),
        (
            {"startingOffsets": '{"t": {"0": 5}}', "endingOffsets": '{"t": {"1": 10}}'},
            "name different partitions",
        ),
        (
            {
                "startingOffsetsByTimestamp": '{"t": {"0": 500}}',
                "endingOffsetsByTimestamp": '{"t": {"0": 100}}',
            },
            "starting timestamp 500 is greater than the ending timestamp 100",
        ),
        ({"startingOffsetsByTimestampStrategy": "earliest"}, "expected error or latest"),
        ({"maxTriggerDelay": "soon"}, "maxTriggerDelay"),
    ],
)
def test_sparks_invalid_combinations_are_refused(options: dict[str, str], message: str) -> None:
    with pytest.raises(OptionError, match=message):
        parse_read_options(options)


def test_trigger_options_parse_as_spark() -> None:
    opts = parse_read_options(
        {"minOffsetsPerTrigger": "100", "maxOffsetsPerTrigger": "500", "maxTriggerDelay": "30s"},
        streaming=True,
    )
    assert (opts.min_offsets_per_trigger, opts.max_trigger_delay_ms) == (100, 30_000)
    assert parse_read_options({}, streaming=True).max_trigger_delay_ms == 15 * 60_000
    assert [parse_duration_ms("d", v) for v in ("250", "250ms", "2m", "1h")] == [
        250,
        250,
        120_000,
        3_600_000,
    ]
    with pytest.raises(OptionError, match=r"minOffsetPerTrigger\(600\) is higher"):
        parse_read_options({"minOffsetsPerTrigger": "600", "maxOffsetsPerTrigger": "500"})


def test_unknown_and_ignored_options_are_warned_about_once(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_options, "_WARNED", set())  # once per process: start afresh
    with caplog.at_level(logging.WARNING, logger="kwire.spark"):
        for _ in range(3):
            parse_read_options({"subscibe": "orders", "kafka.bootstrap.servers": "h:9092"})
        parse_read_options({"maxOffsetsPerTrigger": "10"})  # a batch query ignores it
    messages = [r.getMessage() for r in caplog.records]
    assert sum("subscibe" in m for m in messages) == 1
    assert any("did you mean subscribe?" in m for m in messages)
    assert any("kafka.bootstrap.servers: has no effect" in m for m in messages)
    assert any("maxOffsetsPerTrigger: ignored in batch queries" in m for m in messages)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="kwire.spark"):
        parse_read_options({"valueFormat": "avro", "schemasTopic": "_s", "view": "x"})
    assert not caplog.records


def _write(root: Path, topic: str, partition: int, records: int) -> None:
    with LogWriter(root, topic, partition, segment_bytes=4096, fsync=False) as w:
        for _ in range(records // 10):
            b = BatchBuilder(2, base_offset=w.next_offset)
            for _ in range(10):
                b.append(timestamp=T0 + b.next_offset * 1000, value=bytes(50))
            w.append(b.build())


def _plan(root: Path, **options: str) -> list[object]:
    fs, path = resolve(str(root))
    opts = parse_read_options(options)
    return list(
        plan_splits(list_files(fs, path), opts, lambda p: read_bytes(fs, p), must_exist=path)
    )


def test_internal_topics_and_missing_topics(tmp_path: Path) -> None:
    _write(tmp_path, "orders", 0, 20)
    _write(tmp_path, "__consumer_offsets", 0, 10)
    topics = {s.topic for s in _plan(tmp_path)}  # type: ignore[attr-defined]
    assert topics == {"orders"}  # no subscription: internal topics are no data
    named = _plan(tmp_path, subscribe="__consumer_offsets")
    assert {s.topic for s in named} == {"__consumer_offsets"}  # type: ignore[attr-defined]
    with pytest.raises(OptionError, match=r"UnknownTopicOrPartition.*ordres not found"):
        _plan(tmp_path, subscribe="ordres")
    with pytest.raises(OptionError, match=r"orders-3 not found"):
        _plan(tmp_path, assign='{"orders": [0, 3]}')
    assert _plan(tmp_path, subscribePattern="nothing.*") == []  # a pattern may match nothing


def _stream(root: Path, **options: str):  # type: ignore[no-untyped-def]
    from kwire.spark._stream import KafkaLogStreamReader

    return KafkaLogStreamReader(str(root), parse_read_options(options, streaming=True), None)


def test_min_offsets_per_trigger_waits_up_to_max_trigger_delay(tmp_path: Path) -> None:
    from pyspark.sql.streaming.datasource import ReadAllAvailable

    _write(tmp_path, "t", 0, 30)
    waiting = _stream(tmp_path, startingOffsets="earliest", minOffsetsPerTrigger="50")
    start = waiting.initialOffset()
    # the first trigger runs (Spark's lastTriggerMillis starts at 0), then waits for 50 new
    assert waiting.latestOffset(start, ReadAllAvailable()) == {"t": {"0": 30}}
    after = {"t": {"0": 30}}
    assert waiting.latestOffset(after, ReadAllAvailable()) == after
    _write_more(tmp_path, 30)
    assert waiting.latestOffset(after, ReadAllAvailable()) == after  # 30 new < 50
    _write_more(tmp_path, 30)
    assert waiting.latestOffset(after, ReadAllAvailable()) == {"t": {"0": 90}}
    # with maxTriggerDelay 0 the delay has always passed: every trigger runs
    eager = _stream(
        tmp_path, startingOffsets="earliest", minOffsetsPerTrigger="1000", maxTriggerDelay="0"
    )
    begin = eager.initialOffset()
    assert eager.latestOffset(begin, ReadAllAvailable()) == {"t": {"0": 90}}
    assert eager.latestOffset({"t": {"0": 80}}, ReadAllAvailable()) == {"t": {"0": 90}}


def _write_more(root: Path, records: int) -> None:
    """Append ``records`` more offsets to t-0 as a new segment beside the others."""
    from kwire.spark._stream import snapshot

    end = snapshot(str(root), parse_read_options({}))[("t", 0)].end
    staging = root.parent / f"staging-{end}"
    with LogWriter(staging, "t", 0, fsync=False, start_offset=end) as w:
        for _ in range(records // 10):
            b = BatchBuilder(2, base_offset=w.next_offset)
            for _ in range(10):
                b.append(timestamp=T0 + b.next_offset * 1000, value=bytes(50))
            w.append(b.build())
    for f in (staging / "t-0").iterdir():
        if f.suffix in (".log", ".index", ".timeindex"):
            f.rename(root / "t-0" / f.name)


def test_starting_timestamp_without_a_match_follows_the_strategy(tmp_path: Path) -> None:
    _write(tmp_path, "t", 0, 20)  # timestamps T0 .. T0 + 19 s
    late = str(T0 + 60_000)
    with pytest.raises(OffsetOutOfRangeError, match=r"No offset matched .* t-0 and timestamp"):
        _stream(tmp_path, startingTimestamp=late).initialOffset()
    lenient = _stream(tmp_path, startingTimestamp=late, startingOffsetsByTimestampStrategy="latest")
    assert lenient.initialOffset() == {"t": {"0": 20}}


def test_several_copies_of_a_data_dir_are_refused(tmp_path: Path) -> None:
    from kwire.errors import KwireError

    _write(tmp_path / "copy-a", "orders", 0, 20)
    _write(tmp_path / "copy-b", "orders", 0, 20)
    _write(tmp_path / "copy-b", "other", 0, 10)
    with pytest.raises(KwireError, match=r"orders-0 is in more than one folder .*copy-a.*copy-b"):
        _plan(tmp_path)
    # selecting what is in one copy only reads it once
    assert {s.topic for s in _plan(tmp_path, subscribe="other")} == {"other"}  # type: ignore[attr-defined]


def test_unknown_write_options_are_warned_about(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """df.write.format("kafka-log").option("compresion", "zstd") wrote uncompressed batches
    without a word; a read option given to the writer means nothing either."""
    monkeypatch.setattr(_options, "_WARNED", set())
    with caplog.at_level(logging.WARNING, logger="kwire.spark"):
        options = parse_write_options(
            {"path": "/out", "compresion": "zstd", "subscribe": "orders", "magic": "2"}
        )
    assert options.compression == "none"
    messages = [r.getMessage() for r in caplog.records]
    assert any(
        "option compresion: unknown to the kafka-log writer, ignored; did you mean compression?"
        in m
        for m in messages
    ), messages
    assert any("option subscribe: unknown to the kafka-log writer" in m for m in messages)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="kwire.spark"):
        parse_write_options(
            {
                "path": "/out",
                "compression": "zstd",
                "magic": "2",
                "recordsPerBatch": "10",
                "segmentBytes": "4096",
                "indexIntervalBytes": "0",
                "topic": "t",
                "numPartitions": "3",
            }
        )
    assert not caplog.records


def test_unknown_kafka_wire_sink_options_are_warned_about(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """df.write.format("kafka-wire").option("topc", "out") ignored the misspelt topic without a
    word (then failed on the missing topic column, or wrote where the column said)."""
    from pyspark.sql.types import BinaryType, StringType, StructField, StructType

    from kwire.spark._wire_source import KafkaWireDataSource

    monkeypatch.setattr(_options, "_WARNED", set())
    schema = StructType([StructField("value", BinaryType()), StructField("topic", StringType())])
    base = {"kafka.bootstrap.servers": "127.0.0.1:9", "kafka.acks": "all"}
    with caplog.at_level(logging.WARNING, logger="kwire.spark"):
        KafkaWireDataSource({**base, "topc": "out"}).writer(schema, False)
        KafkaWireDataSource(
            {**base, "exactlyonce": "true", "transactionalIdPrefx": "p"}
        ).streamWriter(schema, False)
    messages = [r.getMessage() for r in caplog.records]
    assert any(
        "option topc: unknown to the kafka-wire sink, ignored; did you mean topic?" in m
        for m in messages
    ), messages
    assert any("option transactionalIdPrefx: unknown" in m for m in messages), messages
    assert not any("exactlyonce" in m or "kafka." in m for m in messages), messages
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="kwire.spark"):
        KafkaWireDataSource(
            {**base, "topic": "t", "path": "/x", "checkpointLocation": "/c", "queryname": "q"}
        ).streamWriter(schema, False)
    assert not caplog.records


def test_kafka_wire_reads_name_their_format_in_warnings(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A kafka-wire read's misspelt option was said to be "unknown to kafka-log", and Spark's
    maxRecordsPerPartition to have "no effect on a log directory"."""
    from kwire.spark._wire_source import KafkaWireDataSource

    monkeypatch.setattr(_options, "_WARNED", set())
    base = {"kafka.bootstrap.servers": "127.0.0.1:9", "subscribe": "t"}
    with caplog.at_level(logging.WARNING, logger="kwire.spark"):
        KafkaWireDataSource({**base, "startingOffset": "earliest"}).schema()
        KafkaWireDataSource({**base, "maxRecordsPerPartition": "10"}).schema()
    messages = [r.getMessage() for r in caplog.records]
    assert any(
        "option startingOffset: unknown to kafka-wire, ignored; did you mean startingOffsets?" in m
        for m in messages
    ), messages
    assert any("option maxRecordsPerPartition: not supported by kafka-wire" in m for m in messages)
    assert not any("kafka-log" in m or "log directory" in m for m in messages), messages
