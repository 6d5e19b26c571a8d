"""kwire's columnar decoder against Kafka's own record code (tools/java/RecordsOracle.java).

``test_records_java.py`` checks the row API both ways; this module checks the columnar decoder
(``decode_to_arrow``, the path the Spark source uses) directly against Kafka: Kafka's
``MemoryRecordsBuilder`` builds the bytes for every magic x codec and, for magic 2, headers, null
keys and values, producer state, transactional and control batches, LogAppendTime, offset holes
and the delete horizon; Kafka's ``MemoryRecords`` reads them; every column of every row
``decode_to_arrow`` returns must equal what Kafka read (record fields from the record, batch
fields from the batch that holds it), with the same number of rows in the same order. Buffers of
many batches (mixed magics and codecs, as a segment written across upgrades holds) are decoded in
one call, so the decoder's per-batch bookkeeping is checked as well.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pytest
from test_records_java import CASES, _spec

from kwire.records import Compression, build_end_txn_marker
from kwire.records._columnar import RECORD_COLUMNS, decode_to_arrow

pytestmark = pytest.mark.oracle


@pytest.fixture(scope="module")
def oracle(start_java: Callable[..., Any]) -> Any:
    return start_java("RecordsOracle", ["RecordsOracle"])


def _kafka_rows(kafka: dict[str, Any]) -> dict[str, list[Any]]:
    """The columns ``decode_to_arrow`` must produce, from what Kafka's MemoryRecords read."""
    cols: dict[str, list[Any]] = {name: [] for name in RECORD_COLUMNS}
    for batch in kafka["batches"]:
        assert batch["valid"], batch.get("error")
        assert "records_error" not in batch, batch["records_error"]
        for r in batch["records"]:
            cols["key"].append(None if r["key"] is None else bytes.fromhex(r["key"]))
            cols["value"].append(None if r["value"] is None else bytes.fromhex(r["value"]))
            cols["topic"].append("orders")
            cols["partition"].append(3)
            cols["offset"].append(r["offset"])
            cols["timestamp"].append(r["timestamp"] * 1000)  # microseconds, as Arrow holds them
            cols["timestampType"].append(batch["timestamp_type"])
            headers = [(k, None if v is None else bytes.fromhex(v)) for k, v in r["headers"]]
            cols["headers"].append(headers or None)  # documented: null without headers
            cols["magic"].append(batch["magic"])
            cols["compression"].append(batch["compression"])
            cols["producerId"].append(batch["producer_id"])
            cols["producerEpoch"].append(batch["producer_epoch"])
            cols["sequence"].append(r["sequence"])
            cols["isTransactional"].append(batch["is_transactional"])
            cols["isControl"].append(batch["is_control"])
            cols["leaderEpoch"].append(batch["partition_leader_epoch"])
            cols["batchOffset"].append(batch["base_offset"])
            cols["segment"].append("00000000000000000000.log")
    return cols


def _kwire_columns(data: bytes, engine: str | None = None) -> dict[str, list[Any]]:
    rb = decode_to_arrow(
        data, topic="orders", partition=3, segment="00000000000000000000.log", engine=engine
    )
    assert rb.schema.names == list(RECORD_COLUMNS)
    cols: dict[str, list[Any]] = {}
    for name in RECORD_COLUMNS:
        column = rb.column(name)
        if name == "timestamp":
            column = column.cast(pa.int64())
        values = column.to_pylist()
        if name == "headers":
            values = [None if hs is None else [(h["key"], h["value"]) for h in hs] for hs in values]
        cols[name] = values
    return cols


def _check(oracle: Any, data: bytes, what: object, engine: str | None = None) -> int:
    # DefaultRecordBatch.iterator(): streamingIterator() cannot read a compressed batch whose
    # record count is 0 (EOFException from the empty stream), iterator() returns no records
    kafka = oracle.request({"op": "read", "bytes": data.hex(), "iterator": True})
    assert "error" not in kafka, kafka
    expected = _kafka_rows(kafka)
    ours = _kwire_columns(data, engine)
    for name in RECORD_COLUMNS:
        assert ours[name] == expected[name], (name, what)
    return len(expected["offset"])


@pytest.mark.parametrize(("magic", "codec", "variant"), CASES)
def test_kafka_built_batches_decode_to_kafkas_records(
    oracle: Any, magic: int, codec: Compression, variant: str
) -> None:
    specs = [_spec(magic, codec, seed * 53 + magic, variant=variant) for seed in range(3)]
    built = oracle.batch(specs)
    for spec, b in zip(specs, built, strict=True):
        assert "error" not in b, b
        assert _check(oracle, bytes.fromhex(b["bytes"]), spec) == len(spec["records"])
    # the three batches in one buffer, one call
    assert _check(oracle, b"".join(bytes.fromhex(b["bytes"]) for b in built), variant) == sum(
        len(spec["records"]) for spec in specs
    )


def test_control_batches_and_markers(oracle: Any) -> None:
    """End-transaction markers (both kinds) and a leader-change record, between data batches."""
    parts = []
    for i, commit in enumerate((True, False)):
        spec = _spec(2, Compression.LZ4, 7 + i, variant="transactional", n=5)
        spec["base_offset"] = 100 * i
        for j, r in enumerate(spec["records"]):
            r["offset"] = 100 * i + j
        parts.append(oracle.request(spec)["bytes"])
        marker = {
            "op": "end_txn",
            "commit": commit,
            "offset": 100 * i + 5,
            "timestamp": 1_700_000_000_000 + i,
            "partition_leader_epoch": 42,
            "producer_id": 123456789,
            "producer_epoch": 7,
            "coordinator_epoch": 3,
        }
        parts.append(oracle.request(marker)["bytes"])
    leader = {"op": "leader_change", "offset": 300, "timestamp": 9, "leader_epoch": 4,
              "leader_id": 1, "voters": [1, 2]}  # fmt: skip
    parts.append(oracle.request(leader)["bytes"])
    data = b"".join(bytes.fromhex(p) for p in parts)
    rows = _check(oracle, data, "control")
    assert rows == 5 + 1 + 5 + 1 + 1
    rb = decode_to_arrow(data, columns=["offset", "isControl"])
    offsets, control = (column.to_pylist() for column in rb.columns)
    assert [o for o, c in zip(offsets, control, strict=True) if c] == [5, 105, 300]
    # kwire's own control batches read the same through both
    ours = build_end_txn_marker(False, coordinator_epoch=9, producer_id=77, producer_epoch=1,
                                offset=8, timestamp=5, partition_leader_epoch=2)  # fmt: skip
    assert _check(oracle, ours, "kwire end-txn marker") == 1


def test_empty_and_zero_count_batches(oracle: Any) -> None:
    """Header-only batches (compaction) and count-0 batches with bytes after the header give no
    rows, through Kafka and through the columnar decoder, and the batches around them still do."""
    from kwire.records._v2 import crc32c, encode_batch

    before = bytes.fromhex(oracle.request(_spec(2, Compression.ZSTD, 1, n=4))["bytes"])
    after = bytes.fromhex(oracle.request(_spec(1, Compression.GZIP, 2, n=4))["bytes"])
    for codec in Compression:
        for body in (b"", b"\x01garbage"):
            out = bytearray()
            encode_batch(out, body, count=0, base_offset=50, last_offset_delta=9,
                         base_timestamp=-1, max_timestamp=-1, producer_id=5, producer_epoch=1,
                         base_sequence=3, is_transactional=True)  # fmt: skip
            out[22] |= codec
            out[17:21] = crc32c(memoryview(out)[21:]).to_bytes(4, "big")
            assert _check(oracle, before + bytes(out) + after, (codec, body)) == 8


@pytest.mark.parametrize("engine", [None, "python"])
def test_random_segments(oracle: Any, engine: str | None) -> None:
    """Random buffers of 1-12 Kafka-built batches of any magic, codec and variant, through the
    compiled kernels and through the same kernels interpreted (what runs without numba)."""
    rnd = random.Random(20261121)
    specs = []
    for i in range(60):
        magic, codec, variant = rnd.choice(CASES)
        specs.append(_spec(magic, codec, 50_000 + i, variant=variant, n=rnd.randint(1, 25)))
    built = [bytes.fromhex(b["bytes"]) for b in oracle.batch(specs)]
    total = 0
    while built:
        take = rnd.randint(1, 12)
        data, built = b"".join(built[:take]), built[take:]
        total += _check(oracle, data, len(data), engine)
    assert total == sum(len(s["records"]) for s in specs)
