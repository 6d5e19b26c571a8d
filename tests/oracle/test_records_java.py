"""kwire.records against Kafka's own record code (tools/java/RecordsOracle.java).

Both directions, for every magic x codec (zstd only with magic 2) and, for magic 2, headers, null
keys and values, idempotent and transactional producer state, control batches, LogAppendTime,
offset holes and the delete horizon:

* Kafka's ``MemoryRecordsBuilder`` builds the bytes; kwire reads the same batches and records that
  Kafka's ``MemoryRecords`` reads from them.
* kwire's ``BatchBuilder`` builds the bytes; Kafka's ``ensureValid()`` passes on every batch and
  Kafka reads back exactly the records kwire was given. Uncompressed builds must be byte-identical
  to Kafka's (compressed ones differ only in the compressor's choices).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import pytest

from kwire.records import (
    LOG_APPEND_TIME,
    BatchBuilder,
    Compression,
    ControlRecordType,
    EndTransactionMarker,
    build_control_batch,
    build_end_txn_marker,
    decode_control_record,
    read_batches,
)

pytestmark = pytest.mark.oracle

CODEC_NAMES = {c: c.name.lower() for c in Compression}
COMBOS = [(m, c) for m in (0, 1, 2) for c in Compression if not (c == Compression.ZSTD and m < 2)]


@pytest.fixture(scope="module")
def oracle(start_java: Callable[..., Any]) -> Any:
    return start_java("RecordsOracle", ["RecordsOracle"])


def _hex(b: bytes | memoryview | None) -> str | None:
    return None if b is None else bytes(b).hex()


def _spec(
    magic: int, codec: Compression, seed: int, *, variant: str = "plain", n: int = 40
) -> dict[str, Any]:
    """A build request: random records (deterministic per seed) plus the variant's batch fields."""
    rnd = random.Random(seed)
    base = rnd.choice([0, 5, 1_000_000])
    spec: dict[str, Any] = {
        "op": "build",
        "magic": magic,
        "codec": CODEC_NAMES[codec],
        "base_offset": base,
        "timestamp_type": 0,
    }
    offset = base
    records = []
    for i in range(n):
        if variant == "holes":
            offset += rnd.choice([1, 1, 2, 7, 100])
        else:
            offset = base + i
        key = None if rnd.random() < 0.2 else rnd.randbytes(rnd.randint(0, 20))
        value = None if rnd.random() < 0.15 else rnd.randbytes(rnd.choice([0, 1, 50, 300, 3000]))
        if codec != Compression.NONE and rnd.random() < 0.5 and value is not None:
            value = value[:1] * len(value)  # compressible
        headers: list[list[Any]] = []
        if magic == 2 and variant in ("headers", "transactional"):
            for j in range(rnd.randint(0, 3)):
                hv = None if rnd.random() < 0.3 else rnd.randbytes(rnd.randint(0, 10))
                headers.append([f"h{j}-é", _hex(hv)])
        records.append(
            {
                "offset": offset,
                "timestamp": 1_600_000_000_000 + rnd.randint(-5000, 5000),
                "key": _hex(key),
                "value": _hex(value),
                "headers": headers,
            }
        )
    spec["records"] = records
    if variant == "log_append_time":
        spec["timestamp_type"] = 1
        spec["log_append_time"] = 1_700_000_000_123
    if variant == "transactional":
        spec.update(
            producer_id=123456789,
            producer_epoch=7,
            base_sequence=2**31 - 10,
            transactional=True,
            partition_leader_epoch=42,
        )
    if variant == "idempotent":
        spec.update(producer_id=99, producer_epoch=0, base_sequence=0, partition_leader_epoch=3)
    if variant == "delete_horizon":
        spec["delete_horizon_ms"] = 1_650_000_000_000
    return spec


VARIANTS_V2 = ["plain", "holes", "headers", "log_append_time", "transactional", "idempotent"]
VARIANTS_V1 = ["plain", "holes", "log_append_time"]
VARIANTS_V0 = ["plain", "holes"]
CASES = [
    (m, c, v) for m, c in COMBOS for v in {0: VARIANTS_V0, 1: VARIANTS_V1, 2: VARIANTS_V2}[m]
] + [(2, Compression.NONE, "delete_horizon"), (2, Compression.GZIP, "delete_horizon")]


def _kwire_build(spec: dict[str, Any]) -> bytes:
    b = BatchBuilder(
        spec["magic"],
        Compression[spec["codec"].upper()],
        base_offset=spec["base_offset"],
        timestamp_type=spec.get("timestamp_type", 0) if spec["magic"] > 0 else 0,
        log_append_time=spec.get("log_append_time"),
        producer_id=spec.get("producer_id", -1),
        producer_epoch=spec.get("producer_epoch", -1),
        base_sequence=spec.get("base_sequence", -1),
        is_transactional=spec.get("transactional", False),
        partition_leader_epoch=spec.get("partition_leader_epoch", -1),
        delete_horizon_ms=spec.get("delete_horizon_ms"),
    )
    for r in spec["records"]:
        b.append(
            r["offset"],
            r["timestamp"],
            None if r["key"] is None else bytes.fromhex(r["key"]),
            None if r["value"] is None else bytes.fromhex(r["value"]),
            [(k, None if v is None else bytes.fromhex(v)) for k, v in r["headers"]],
        )
    return b.build()


def _kwire_read(data: bytes) -> list[dict[str, Any]]:
    """kwire's view of ``data`` in the shape RecordsOracle answers ``read`` with."""
    out = []
    for batch in read_batches(data):
        b: dict[str, Any] = {
            "magic": batch.magic,
            "base_offset": batch.base_offset,
            "last_offset": batch.last_offset,
            "size": batch.size,
            "compression": CODEC_NAMES[batch.compression],
            "timestamp_type": batch.timestamp_type,
            "max_timestamp": batch.max_timestamp,
            "is_transactional": batch.is_transactional,
            "is_control": batch.is_control,
            "producer_id": batch.producer_id,
            "producer_epoch": batch.producer_epoch,
            "base_sequence": batch.base_sequence,
            "partition_leader_epoch": batch.partition_leader_epoch,
            "crc": batch.crc,
            "has_delete_horizon": batch.has_delete_horizon,
            "valid": True,
        }
        if batch.magic == 2:
            b["count"] = batch.record_count
        recs = []
        for r in batch:
            rec: dict[str, Any] = {
                "offset": r.offset,
                "timestamp": r.timestamp,
                "sequence": r.sequence,
                "key": _hex(r.key),
                "value": _hex(r.value),
                "headers": [[k, _hex(v)] for k, v in r.headers],
            }
            if batch.is_control:
                control = decode_control_record(r)
                rec["control_type"] = control.type.name
                if isinstance(control.value, EndTransactionMarker):
                    rec["coordinator_epoch"] = control.value.coordinator_epoch
            recs.append(rec)
        b["records"] = recs
        out.append(b)
    return out


def _expected_records(spec: dict[str, Any]) -> list[dict[str, Any]]:
    """What a reader must see for the records of ``spec`` (Kafka's timestamp rules applied)."""
    magic = spec["magic"]
    lat = spec.get("timestamp_type") == 1 and magic > 0
    out = []
    base_seq = spec.get("base_sequence", -1)
    for r in spec["records"]:
        seq = -1
        if base_seq >= 0 and magic == 2:
            seq = (base_seq + r["offset"] - spec["base_offset"]) % 2**31
        out.append(
            {
                "offset": r["offset"],
                "timestamp": -1
                if magic == 0
                else spec["log_append_time"]
                if lat
                else r["timestamp"],
                "sequence": seq,
                "key": r["key"],
                "value": r["value"],
                "headers": r["headers"],
            }
        )
    return out


@pytest.mark.parametrize(("magic", "codec", "variant"), CASES)
def test_kafka_builds_kwire_reads(
    oracle: Any, magic: int, codec: Compression, variant: str
) -> None:
    for seed in range(3):
        spec = _spec(magic, codec, seed * 31 + magic, variant=variant)
        built = oracle.request(spec)
        assert "error" not in built, built
        data = bytes.fromhex(built["bytes"])
        kafka = oracle.request({"op": "read", "bytes": built["bytes"]})
        assert "error" not in kafka, kafka
        assert all(b["valid"] for b in kafka["batches"])
        assert _kwire_read(data) == kafka["batches"]
        assert [r for b in _kwire_read(data) for r in b["records"]] == _expected_records(spec)


@pytest.mark.parametrize(("magic", "codec", "variant"), CASES)
def test_kwire_builds_kafka_reads(
    oracle: Any, magic: int, codec: Compression, variant: str
) -> None:
    for seed in range(3):
        spec = _spec(magic, codec, seed * 17 + 1000 + magic, variant=variant)
        data = _kwire_build(spec)
        kafka = oracle.request({"op": "read", "bytes": data.hex()})
        assert "error" not in kafka, kafka
        for batch in kafka["batches"]:
            assert batch["valid"], batch.get("error")
            assert "records_error" not in batch, batch["records_error"]
        assert [r for b in kafka["batches"] for r in b["records"]] == _expected_records(spec)
        assert kafka["batches"] == _kwire_read(data)
        if codec == Compression.NONE:
            assert data.hex() == oracle.request(spec)["bytes"]


def test_end_txn_markers_both_ways(oracle: Any) -> None:
    for commit in (True, False):
        req = {
            "op": "end_txn",
            "commit": commit,
            "offset": 77,
            "timestamp": 1_700_000_000_000,
            "partition_leader_epoch": 4,
            "producer_id": 31337,
            "producer_epoch": 2,
            "coordinator_epoch": 12,
        }
        kafka_bytes = bytes.fromhex(oracle.request(req)["bytes"])
        ours = build_end_txn_marker(
            commit,
            coordinator_epoch=12,
            producer_id=31337,
            producer_epoch=2,
            offset=77,
            timestamp=1_700_000_000_000,
            partition_leader_epoch=4,
        )
        assert ours == kafka_bytes
        (batch,) = read_batches(kafka_bytes)
        assert batch.is_control and batch.is_transactional
        (record,) = batch
        control = decode_control_record(record)
        assert control.type == (ControlRecordType.COMMIT if commit else ControlRecordType.ABORT)
        assert control.value == EndTransactionMarker(control.type, 12)
        kafka = oracle.request({"op": "read", "bytes": ours.hex()})
        assert kafka["batches"] == _kwire_read(ours)
        assert kafka["batches"][0]["records"][0]["coordinator_epoch"] == 12


def test_leader_change_control_record(oracle: Any) -> None:
    req = {
        "op": "leader_change",
        "offset": 5,
        "timestamp": 123,
        "leader_epoch": 3,
        "leader_id": 7,
        "voters": [1, 2, 3],
    }
    data = bytes.fromhex(oracle.request(req)["bytes"])
    kafka = oracle.request({"op": "read", "bytes": data.hex()})
    assert kafka["batches"][0]["records"][0]["control_type"] == "LEADER_CHANGE"
    assert _kwire_read(data) == kafka["batches"]
    (batch,) = read_batches(data)
    (record,) = batch
    control = decode_control_record(record)
    assert control.type == ControlRecordType.LEADER_CHANGE
    assert control.offset == 5 and control.timestamp == 123
    # the value is a LeaderChangeMessage (version 0, no prefix), decoded by kwire.protocol
    message: Any = control.value
    assert type(message).__name__ == "LeaderChangeMessage"
    assert message.leader_id == 7
    assert [v.voter_id for v in message.voters] == [1, 2, 3]
    assert [v.voter_id for v in message.granting_voters] == [1, 2, 3]
    # and kwire writes the same batch from the decoded message
    ours = build_control_batch(
        ControlRecordType.LEADER_CHANGE, message, offset=5, timestamp=123, partition_leader_epoch=3
    )
    assert ours == data


def test_lz4_magic0_header_checksum_quirk(oracle: Any) -> None:
    """Kafka's magic-0 lz4 frames carry the historical header checksum; kwire writes the same byte."""
    for magic in (0, 1, 2):
        spec = _spec(magic, Compression.LZ4, 5, n=3)
        kafka = bytes.fromhex(oracle.request(spec)["bytes"])
        ours = _kwire_build(spec)
        frame_at = {0: 26, 1: 34, 2: 61}[magic]
        assert kafka[frame_at : frame_at + 4] == b"\x04\x22\x4d\x18"
        assert ours[frame_at : frame_at + 7] == kafka[frame_at : frame_at + 7]
    assert ours[61 + 6] != 0x1A  # magic 2: the correct checksum (0x82), not the magic-0 one


def test_log_append_time_batch_fields(oracle: Any) -> None:
    spec = _spec(2, Compression.SNAPPY, 9, variant="log_append_time")
    ours = _kwire_build(spec)
    kafka = oracle.request({"op": "read", "bytes": ours.hex()})
    assert kafka["batches"][0]["timestamp_type"] == LOG_APPEND_TIME
    assert kafka["batches"][0]["max_timestamp"] == spec["log_append_time"]


def test_empty_batch_passes_kafka(oracle: Any) -> None:
    """A v2 batch emptied by compaction (header only) is valid to Kafka and keeps its offsets."""
    from kwire.records._v2 import encode_batch

    out = bytearray()
    encode_batch(
        out,
        b"",
        count=0,
        base_offset=1000,
        last_offset_delta=41,
        base_timestamp=-1,
        max_timestamp=-1,
        producer_id=5,
        producer_epoch=1,
        base_sequence=17,
        is_transactional=True,
        partition_leader_epoch=2,
    )
    kafka = oracle.request({"op": "read", "bytes": bytes(out).hex()})
    (batch,) = kafka["batches"]
    assert batch["valid"] and batch["records"] == []
    assert (batch["base_offset"], batch["last_offset"], batch["count"]) == (1000, 1041, 0)
    assert kafka["batches"] == _kwire_read(bytes(out))


def test_random_sweep_both_directions(oracle: Any) -> None:
    """200 random batches (any magic x codec x variant), sent to the JVM in one round trip each way."""
    rnd = random.Random(20261121)
    specs = []
    for i in range(200):
        magic, codec, variant = rnd.choice(CASES)
        specs.append(_spec(magic, codec, 10_000 + i, variant=variant, n=rnd.randint(1, 30)))
    built = oracle.batch(specs)
    reads = oracle.batch([{"op": "read", "bytes": b["bytes"]} for b in built])
    for spec, b, kafka in zip(specs, built, reads, strict=True):
        assert _kwire_read(bytes.fromhex(b["bytes"])) == kafka["batches"], spec
    ours = [_kwire_build(spec) for spec in specs]
    reads = oracle.batch([{"op": "read", "bytes": data.hex()} for data in ours])
    for spec, data, kafka in zip(specs, ours, reads, strict=True):
        assert all(batch["valid"] for batch in kafka["batches"]), spec
        assert [r for batch in kafka["batches"] for r in batch["records"]] == _expected_records(
            spec
        )
        assert kafka["batches"] == _kwire_read(data)


@pytest.mark.parametrize("codec", list(Compression))
def test_zero_count_batch_with_bytes_after_its_header(oracle: Any, codec: Compression) -> None:
    """Record count 0: Kafka's DefaultRecordBatch.iterator() gives no records whatever follows the
    header (garbage, or a real records section), without reading it; so does kwire (rows and
    columns). The CRC still covers those bytes (ensureValid passes here, fails on a flip)."""
    from kwire.records._columnar import decode_to_arrow
    from kwire.records._v2 import HEADER_SIZE, crc32c, encode_batch

    real = BatchBuilder(2, codec)
    real.append(0, 1, b"k", b"v")
    section = real.build()[HEADER_SIZE:]
    for body in (b"not a records section", section, section + b"\x00junk"):
        out = bytearray()
        encode_batch(out, body, count=0, base_offset=70, last_offset_delta=3,
                     base_timestamp=5, max_timestamp=5)  # fmt: skip
        out[22] |= codec  # attributes (int16 at 21): the codec bits
        out[17:21] = crc32c(memoryview(out)[21:]).to_bytes(4, "big")
        data = bytes(out)
        kafka = oracle.request({"op": "read", "bytes": data.hex(), "iterator": True})
        (batch,) = kafka["batches"]
        assert batch["valid"] and batch["count"] == 0, batch
        assert batch["records"] == [] and "records_error" not in batch
        assert kafka["batches"] == _kwire_read(data)
        assert decode_to_arrow(data).num_rows == 0
        flipped = bytearray(data)
        flipped[-1] ^= 0x40
        kafka = oracle.request({"op": "read", "bytes": bytes(flipped).hex(), "iterator": True})
        assert not kafka["batches"][0]["valid"]
