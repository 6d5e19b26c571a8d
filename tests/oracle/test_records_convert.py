"""kwire's append path and format conversion against Kafka 3.9.1's own record classes.

``tools/java/ConvertOracle.java`` runs in one JVM for the session and exposes, over JSON lines:
Kafka's reader (``MemoryRecords`` + ``ensureValid()``), its fetch down-conversion
(``MemoryRecords.downConvert`` = ``RecordsUtil.downConvert``), ``MemoryRecordsBuilder`` (what
``LogValidator`` rebuilds with, and its ``info()``), and the ``MutableRecordBatch`` setters that
``LogValidator`` patches producer batches with in place.

The checks:

* down-conversion: kwire's ``convert`` and Kafka's ``downConvert`` give the same records (offsets,
  timestamps, keys, values, batch fields), byte-identical output where the codec is deterministic
  across implementations, and kwire's output passes Kafka's ``ensureValid()``;
* in place: kwire's ``validate_and_assign`` output is byte for byte what Kafka's setters make of the
  producer's bytes, given the values ``LogValidator`` passes them (derived here from its rules);
* rebuilt: kwire's output holds the records Kafka's builder writes with ``LogValidator``'s
  arguments (bytes equal when uncompressed), and the same max timestamp and shallow offset.
"""

from __future__ import annotations

import base64
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kwire.records import LOG_APPEND_TIME, NO_TIMESTAMP, BatchBuilder, Compression, read_batches
from kwire.records._append import TopicConfig, validate_and_assign
from kwire.records._convert import convert

pytestmark = pytest.mark.oracle

NOW = 1_700_000_000_000
NEXT = 5_000
EPOCH = 17
LEGACY_CODECS = [Compression.NONE, Compression.GZIP, Compression.SNAPPY, Compression.LZ4]
V2_CODECS = [*LEGACY_CODECS, Compression.ZSTD]


@pytest.fixture(scope="session")
def oracle(start_java: Any) -> Any:
    return start_java("ConvertOracle", ["ConvertOracle"])


def b64(data: bytes | bytearray | memoryview | None) -> str | None:
    return None if data is None else base64.b64encode(bytes(data)).decode()


def unb64(text: str) -> bytes:
    return base64.b64decode(text)


def ask(oracle: Any, request: dict[str, Any]) -> dict[str, Any]:
    reply: dict[str, Any] = oracle.request(request)
    assert "error" not in reply, reply.get("error")
    return reply


def kafka_read(oracle: Any, data: bytes | bytearray | memoryview) -> list[dict[str, Any]]:
    """Kafka's view of ``data``: every batch passed ``ensureValid()``."""
    batches: list[dict[str, Any]] = ask(oracle, {"op": "read", "bytes": b64(data)})["batches"]
    return batches


def records_of(batches: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [
        (r["offset"], r["timestamp"], r["key"], r["value"], tuple(map(tuple, r["headers"])))
        for b in batches
        for r in b["records"]
    ]


def shape(batches: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    keys = (
        "magic",
        "baseOffset",
        "lastOffset",
        "compression",
        "timestampType",
        "maxTimestamp",
        "producerId",
        "producerEpoch",
        "baseSequence",
        "partitionLeaderEpoch",
        "transactional",
        "control",
    )
    return [tuple(b[k] for k in keys) for b in batches]


def v2_source(codec: int, *, lat: bool = False, holes: bool = True, producer: bool = True) -> bytes:
    offsets = [100, 101, 104, 105, 109] if holes else [100, 101, 102, 103, 104]
    opts: dict[str, Any] = {"base_offset": 100, "partition_leader_epoch": 3}
    if producer:
        opts.update(producer_id=42, producer_epoch=2, base_sequence=7)
    if lat:
        opts.update(timestamp_type=LOG_APPEND_TIME, log_append_time=NOW + 500)
    b = BatchBuilder(2, codec, **opts)
    for i, off in enumerate(offsets):
        b.append(
            offset=off,
            timestamp=NOW + 10 * i,
            key=None if i == 2 else b"key-%d" % i,
            value=None if i == 3 else b"value-%d" % i * (i + 1),
            headers=[("trace", b"t%d" % i), ("null", None)] if i % 2 == 0 else (),
        )
    return b.build()


# --- down-conversion ----------------------------------------------------------------------------


@pytest.mark.parametrize("codec", LEGACY_CODECS, ids=lambda c: Compression(c).name)
@pytest.mark.parametrize("to_magic", [0, 1])
@pytest.mark.parametrize("lat", [False, True], ids=["create", "logappend"])
def test_down_conversion_matches_kafka(oracle: Any, codec: int, to_magic: int, lat: bool) -> None:
    data = v2_source(codec, lat=lat)
    kafka = unb64(
        ask(
            oracle, {"op": "downconvert", "bytes": b64(data), "toMagic": to_magic, "firstOffset": 0}
        )["bytes"]
    )
    mine = convert(data, to_magic)
    theirs = kafka_read(oracle, kafka)
    ours = kafka_read(oracle, mine.records)  # kwire's bytes pass Kafka's ensureValid()
    assert records_of(ours) == records_of(theirs)
    assert shape(ours) == shape(theirs)
    if codec in (Compression.NONE, Compression.LZ4):
        # Identical bytes where both sides compress alike (lz4 block format is deterministic;
        # zlib and snappy-java choose other matches than cramjam's gzip/snappy).
        assert bytes(mine.records) == kafka
    assert mine.loss.headers == 6 and mine.loss.producer_state == 1


@pytest.mark.parametrize("first_offset", [0, 101, 105, 200])
def test_fetch_first_offset_rule_matches_kafka(oracle: Any, first_offset: int) -> None:
    data = v2_source(Compression.NONE, producer=False)
    kafka = unb64(
        ask(
            oracle,
            {"op": "downconvert", "bytes": b64(data), "toMagic": 1, "firstOffset": first_offset},
        )["bytes"]
    )
    mine = convert(data, 1, first_offset=first_offset)
    assert bytes(mine.records) == kafka


def test_control_batches_and_mixed_magics_match_kafka(oracle: Any) -> None:
    from kwire.records import build_end_txn_marker

    legacy = BatchBuilder(1, Compression.GZIP, base_offset=90)
    for off in (90, 92):
        legacy.append(offset=off, timestamp=NOW, key=b"old", value=b"v1")
    txn = BatchBuilder(
        2, base_offset=100, producer_id=8, producer_epoch=0, base_sequence=0, is_transactional=True
    )
    txn.append(timestamp=NOW, key=b"k", value=b"v")
    marker = build_end_txn_marker(
        False, coordinator_epoch=4, producer_id=8, producer_epoch=0, offset=101, timestamp=NOW
    )
    data = legacy.build() + txn.build() + marker
    kafka = unb64(
        ask(oracle, {"op": "downconvert", "bytes": b64(data), "toMagic": 1, "firstOffset": 0})[
            "bytes"
        ]
    )
    from kwire.records._convert import convert_for_fetch

    mine = convert_for_fetch(data, 3)
    assert bytes(mine.records) == kafka
    assert mine.loss.control_batches == 1 and mine.loss.transactional == 1


@pytest.mark.parametrize("codec", LEGACY_CODECS, ids=lambda c: Compression(c).name)
@pytest.mark.parametrize("magic", [0, 1])
def test_up_converted_batches_pass_ensure_valid(oracle: Any, codec: int, magic: int) -> None:
    b = BatchBuilder(magic, codec, base_offset=7)
    for off in (7, 9, 10):
        b.append(offset=off, timestamp=NOW if magic else NO_TIMESTAMP, key=b"k", value=b"v")
    data = b.build()
    up = convert(data, 2)
    ours = kafka_read(oracle, up.records)
    assert records_of(ours) == records_of(kafka_read(oracle, data))
    assert all(x["magic"] == 2 for x in ours)


# --- the append path: in place --------------------------------------------------------------------


def _max_ts(batch: dict[str, Any]) -> int:
    return max((r["timestamp"] for r in batch["records"]), default=NO_TIMESTAMP)


@pytest.mark.parametrize("codec", V2_CODECS, ids=lambda c: Compression(c).name)
@pytest.mark.parametrize("ts_type", [0, 1], ids=["create", "logappend"])
def test_v2_in_place_is_what_kafkas_setters_make(oracle: Any, codec: int, ts_type: int) -> None:
    b = BatchBuilder(2, codec, producer_id=3, producer_epoch=0, base_sequence=0)
    for i in range(6):
        b.append(timestamp=NOW - 60 + (7 * i) % 11, key=b"k%d" % i, value=b"x" * (20 + i))
    data = b.build()
    result = validate_and_assign(
        data,
        next_offset=NEXT,
        now_ms=NOW,
        partition_leader_epoch=EPOCH,
        config=TopicConfig(timestamp_type=ts_type),
    )
    assert result.in_place
    (src,) = kafka_read(oracle, data)
    # LogValidator: setLastOffset(next + count - 1), setMaxTimestamp(type, now or the records'
    # max), setPartitionLeaderEpoch (the uncompressed path sets the epoch before the timestamp;
    # the order does not change the bytes).
    op = {
        "lastOffset": NEXT + 5,
        "partitionLeaderEpoch": EPOCH,
        "maxTimestamp": {"type": ts_type, "value": NOW if ts_type else _max_ts(src)},
    }
    kafka = unb64(ask(oracle, {"op": "patch", "bytes": b64(data), "batches": [op]})["bytes"])
    assert bytes(result.records) == kafka
    kafka_read(oracle, result.records)


@pytest.mark.parametrize("codec", LEGACY_CODECS[1:], ids=lambda c: Compression(c).name)
@pytest.mark.parametrize("ts_type", [0, 1], ids=["create", "logappend"])
def test_magic1_wrapper_in_place_is_what_kafkas_setters_make(
    oracle: Any, codec: int, ts_type: int
) -> None:
    b = BatchBuilder(1, codec)
    for i in range(4):
        b.append(timestamp=NOW - 5 + (3 * i) % 4, key=b"k", value=b"v%d" % i)
    data = b.build()
    result = validate_and_assign(
        data,
        next_offset=NEXT,
        now_ms=NOW,
        config=TopicConfig(message_format=1, timestamp_type=ts_type),
    )
    assert result.in_place
    (src,) = kafka_read(oracle, data)
    op = {
        "lastOffset": NEXT + 3,
        "maxTimestamp": {"type": ts_type, "value": NOW if ts_type else _max_ts(src)},
    }
    kafka = unb64(ask(oracle, {"op": "patch", "bytes": b64(data), "batches": [op]})["bytes"])
    assert bytes(result.records) == kafka
    assert [r["offset"] for r in records_of_batches(kafka_read(oracle, result.records))] == [
        NEXT,
        NEXT + 1,
        NEXT + 2,
        NEXT + 3,
    ]


def records_of_batches(batches: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for b in batches for r in b["records"]]


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("ts_type", [0, 1], ids=["create", "logappend"])
def test_plain_legacy_in_place_is_what_kafkas_setters_make(
    oracle: Any, magic: int, ts_type: int
) -> None:
    b = BatchBuilder(magic)
    for i in range(3):
        b.append(timestamp=NOW - i if magic else NO_TIMESTAMP, key=b"k", value=b"v%d" % i)
    data = b.build()
    result = validate_and_assign(
        data,
        next_offset=NEXT,
        now_ms=NOW,
        config=TopicConfig(message_format=magic, timestamp_type=ts_type),
    )
    src = kafka_read(oracle, data)
    ops: list[dict[str, Any]] = []
    for i, batch in enumerate(src):
        op: dict[str, Any] = {"lastOffset": NEXT + i}
        if magic:
            op["maxTimestamp"] = {"type": ts_type, "value": NOW if ts_type else _max_ts(batch)}
        ops.append(op)
    kafka = unb64(ask(oracle, {"op": "patch", "bytes": b64(data), "batches": ops})["bytes"])
    assert bytes(result.records) == kafka


# --- the append path: rebuilt ---------------------------------------------------------------------

REBUILDS = [
    # (source magic, source codec, topic format, topic compression, inner offsets)
    (2, Compression.LZ4, 2, "gzip", None),
    (2, Compression.NONE, 2, "snappy", None),
    (2, Compression.GZIP, 2, "uncompressed", None),
    (2, Compression.ZSTD, 2, "lz4", None),
    (1, Compression.GZIP, 2, "producer", None),
    (0, Compression.NONE, 1, "producer", None),
    (0, Compression.SNAPPY, 1, "producer", None),
    (1, Compression.SNAPPY, 0, "producer", None),
    (1, Compression.GZIP, 1, "producer", [0, 3, 4, 8]),
    (0, Compression.LZ4, 0, "producer", None),
    (2, Compression.NONE, 1, "producer", None),
    (2, Compression.NONE, 0, "producer", None),
    (1, Compression.NONE, 1, "gzip", None),
]


@pytest.mark.parametrize(("magic", "codec", "fmt", "target", "offsets"), REBUILDS)
@pytest.mark.parametrize("ts_type", [0, 1], ids=["create", "logappend"])
def test_rebuilt_records_are_what_kafkas_builder_writes(
    oracle: Any,
    magic: int,
    codec: int,
    fmt: int,
    target: str,
    offsets: list[int] | None,
    ts_type: int,
) -> None:
    b = BatchBuilder(magic, codec)
    for i, off in enumerate(offsets or range(4)):
        b.append(
            offset=off,
            timestamp=NOW - 9 + (5 * i) % 7 if magic else NO_TIMESTAMP,
            key=b"key%d" % i,
            value=b"value" * i,
        )
    data = b.build()
    cfg = TopicConfig(message_format=fmt, compression_type=target, timestamp_type=ts_type)
    result = validate_and_assign(
        data, next_offset=NEXT, now_ms=NOW, config=cfg, partition_leader_epoch=EPOCH
    )
    assert not result.in_place
    src = kafka_read(oracle, data)
    first = src[0]
    out_codec = result.compression
    request = {
        "op": "build",
        "magic": fmt,
        "compression": int(out_codec),
        "timestampType": ts_type,
        "baseOffset": NEXT,
        "logAppendTime": NOW,
        "producerId": first["producerId"],
        "producerEpoch": first["producerEpoch"],
        "baseSequence": first["baseSequence"],
        "transactional": first["transactional"],
        "partitionLeaderEpoch": EPOCH,
        "records": [
            {
                "offset": NEXT + i,
                "timestamp": r["timestamp"],
                "key": r["key"],
                "value": r["value"],
                "headers": r["headers"],
            }
            for i, r in enumerate(records_of_batches(src))
        ],
    }
    built = ask(oracle, request)
    kafka = unb64(built["bytes"])
    ours = kafka_read(oracle, result.records)
    theirs = kafka_read(oracle, kafka)
    assert records_of(ours) == records_of(theirs)
    assert shape(ours) == shape(theirs)
    assert (result.max_timestamp, result.shallow_offset_of_max_timestamp) == (
        built["maxTimestamp"],
        built["shallowOffsetOfMaxTimestamp"],
    )
    if out_codec == Compression.NONE:
        assert bytes(result.records) == kafka


def test_kwire_reads_what_kafka_builds_for_every_rebuild_codec(oracle: Any) -> None:
    """The other direction: a Kafka-built producer batch goes through kwire's append path."""
    for codec in V2_CODECS:
        request = {
            "op": "build",
            "magic": 2,
            "compression": int(codec),
            "timestampType": 0,
            "baseOffset": 0,
            "logAppendTime": -1,
            "producerId": 11,
            "producerEpoch": 1,
            "baseSequence": 5,
            "transactional": False,
            "partitionLeaderEpoch": -1,
            "records": [
                {
                    "offset": i,
                    "timestamp": NOW - i,
                    "key": b64(b"k"),
                    "value": b64(b"v" * i),
                    "headers": [["a", b64(b"b")]],
                }
                for i in range(5)
            ],
        }
        data = unb64(ask(oracle, request)["bytes"])
        result = validate_and_assign(data, next_offset=NEXT, now_ms=NOW)
        assert result.in_place
        (batch,) = read_batches(result.records)
        assert (batch.base_offset, batch.last_offset, batch.producer_id) == (NEXT, NEXT + 4, 11)
        assert [r["offset"] for r in records_of_batches(kafka_read(oracle, result.records))] == [
            NEXT + i for i in range(5)
        ]


@pytest.mark.parametrize("codec", LEGACY_CODECS, ids=lambda c: Compression(c).name)
@pytest.mark.parametrize("magic", [0, 1])
def test_kafka_built_legacy_producer_sets_through_the_append_path(
    oracle: Any, magic: int, codec: int
) -> None:
    """Message sets written by Kafka's own builder (its lz4/snappy framing, its relative offsets)."""
    request = {
        "op": "build",
        "magic": magic,
        "compression": int(codec),
        "timestampType": 0,
        "baseOffset": 0,
        "logAppendTime": -1,
        "producerId": -1,
        "producerEpoch": -1,
        "baseSequence": -1,
        "transactional": False,
        "partitionLeaderEpoch": -1,
        "records": [
            {
                "offset": i,
                "timestamp": NOW - 3 + i if magic else -1,
                "key": b64(b"k%d" % i),
                "value": b64(b"v" * (i + 1)),
                "headers": [],
            }
            for i in range(4)
        ],
    }
    data = unb64(ask(oracle, request)["bytes"])
    result = validate_and_assign(
        data, next_offset=NEXT, now_ms=NOW, config=TopicConfig(message_format=magic)
    )
    got = records_of(kafka_read(oracle, result.records))
    want = [
        (NEXT + i, NOW - 3 + i if magic else -1, b64(b"k%d" % i), b64(b"v" * (i + 1)), ())
        for i in range(4)
    ]
    assert got == want
    if magic == 1 or codec == Compression.NONE:
        # In place: exactly what Kafka's setters make of the same bytes.
        assert result.in_place
        src = kafka_read(oracle, data)
        ops = []
        for i, batch in enumerate(src):
            op: dict[str, Any] = {"lastOffset": NEXT + (i if codec == Compression.NONE else 3)}
            if magic:
                op["maxTimestamp"] = {"type": 0, "value": _max_ts(batch)}
            ops.append(op)
        kafka = unb64(ask(oracle, {"op": "patch", "bytes": b64(data), "batches": ops})["bytes"])
        assert bytes(result.records) == kafka
    else:
        assert not result.in_place  # magic 0 inner offsets are absolute: rebuilt


# --- randomized: many shapes, same verdicts -------------------------------------------------------

_record = st.tuples(
    st.integers(0, 2),  # offset gap before the record
    st.integers(0, 5_000),  # timestamp offset from NOW
    st.one_of(st.none(), st.binary(max_size=5)),
    st.one_of(st.none(), st.binary(max_size=12)),
    st.lists(
        st.tuples(st.text(max_size=3), st.one_of(st.none(), st.binary(max_size=3))), max_size=2
    ),
)


def _v2_from(
    recs: list[tuple[int, int, bytes | None, bytes | None, list[tuple[str, bytes | None]]]],
    codec: int,
    base: int,
) -> bytes:
    b = BatchBuilder(2, codec, base_offset=base)
    off = base
    for gap, ts, key, value, headers in recs:
        off += gap
        b.append(offset=off, timestamp=NOW + ts, key=key, value=value, headers=headers)
        off += 1
    return b.build()


@given(
    st.lists(_record, min_size=1, max_size=10),
    st.sampled_from(LEGACY_CODECS),
    st.sampled_from([0, 1]),
    st.integers(0, 30),
)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_random_down_conversions_match_kafka(
    oracle: Any, recs: list[Any], codec: int, to_magic: int, first_offset: int
) -> None:
    data = _v2_from(recs, codec, base=3)
    kafka = unb64(
        ask(
            oracle,
            {
                "op": "downconvert",
                "bytes": b64(data),
                "toMagic": to_magic,
                "firstOffset": first_offset,
            },
        )["bytes"]
    )
    mine = convert(data, to_magic, first_offset=first_offset)
    assert records_of(kafka_read(oracle, mine.records)) == records_of(kafka_read(oracle, kafka))
    if codec in (Compression.NONE, Compression.LZ4):
        assert bytes(mine.records) == kafka


@given(
    st.lists(_record.map(lambda r: (0, *r[1:])), min_size=1, max_size=10),
    st.sampled_from(V2_CODECS),
    st.sampled_from([0, 1]),
)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_random_in_place_assignments_match_kafkas_setters(
    oracle: Any, recs: list[Any], codec: int, ts_type: int
) -> None:
    data = _v2_from(recs, codec, base=0)
    result = validate_and_assign(
        data,
        next_offset=NEXT,
        now_ms=NOW,
        partition_leader_epoch=EPOCH,
        config=TopicConfig(timestamp_type=ts_type),
    )
    assert result.in_place
    (src,) = kafka_read(oracle, data)
    op = {
        "lastOffset": NEXT + len(recs) - 1,
        "partitionLeaderEpoch": EPOCH,
        "maxTimestamp": {"type": ts_type, "value": NOW if ts_type else _max_ts(src)},
    }
    kafka = unb64(ask(oracle, {"op": "patch", "bytes": b64(data), "batches": [op]})["bytes"])
    assert bytes(result.records) == kafka
