"""Golden bytes written by Kafka itself, checked without a JVM.

Provenance: Apache Kafka 3.9.1 ``kafka-clients`` (the jar ``tools/kafka_jars.py`` fetches), through
``tools/java/RecordsOracle.java``: ``MemoryRecordsBuilder.appendWithOffset`` for the batches
(records below in ``RECORDS``, base offset 10; magic 0 drops timestamps, magic 0/1 headers) and
``MemoryRecords.withEndTransactionMarker`` for the marker. Regenerate with the oracle's ``build``
and ``end_txn`` requests (see ``tests/oracle/test_records_java.py``) if Kafka's writer changes.
"""

from __future__ import annotations

import pytest

from kwire.records import (
    LOG_APPEND_TIME,
    BatchBuilder,
    Compression,
    ControlRecordType,
    EndTransactionMarker,
    build_end_txn_marker,
    decode_control_record,
    read_batch,
    read_batches,
)

# offset, timestamp, key, value, headers (v2 only)
RECORDS = [
    (10, 1_700_000_000_000, b"k1", b"value1", [("h", b"\x01")]),
    (11, 1_700_000_000_005, None, b"v2", []),
    (14, 1_699_999_999_999, b"k3", None, [("n", None)]),
]

GOLDEN = {
    "m0_none": (
        "000000000000000a00000016c704de1f0000000000026b310000000676616c756531000000000000000b0000"
        "0010d5960a780000ffffffff000000027632000000000000000e00000010b643ca6a0000000000026b33ffff"
        "ffff"
    ),
    "m0_gzip": (
        "000000000000000e0000005c2081d33d0001ffffffff0000004e1f8b08000000000000ff636000032e20163b"
        "ce724f1ecc63ca3604926c658939a5a98610050cdc402c70751a570503c37f2000a92a3382caf181e4b6399f"
        "ca82ea3606a9000090d5cc525a000000"
    ),
    "m0_snappy": (
        "000000000000000e00000074ac74b6990002ffffffff0000006682534e415050590000000001000000010000"
        "00525a00000901200a00000016c704de1f050f30026b310000000676616c75653105125c00000b00000010d5"
        "960a780000ffffffff000000027632000901500e00000010b643ca6a0000000000026b33ffffffff"
    ),
    "m0_lz4": (
        "000000000000000e0000006e67def2cb0003ffffffff0000006004224d1860401a5100000012000100910a00"
        "000016c704de1f0f00c0026b310000000676616c75650a00000200f0060b00000010d5960a780000ffffffff"
        "0000000276321900400000000e1c0041b643ca6a0e0070026b33ffffffff00000000"
    ),
    "m1_none": (
        "000000000000000a0000001e8e82429001000000018bcfe56800000000026b310000000676616c7565310000"
        "00000000000b00000018820bfd0301000000018bcfe56805ffffffff000000027632000000000000000e0000"
        "0018f8269d8801000000018bcfe567ff000000026b33ffffffff"
    ),
    "m1_gzip": (
        "000000000000000e0000006d2aaf572c01010000018bcfe56805ffffffff000000571f8b08000000000000ff"
        "63608003b9be26a7098c400663f7f9a7192011a66c4320c9569698539a6a0855055220d1c4fd9719ae92f53f"
        "108054971941d5b080d4fc509bdb0153930e96cf3606a904002bec2ac072000000"
    ),
    "m1_snappy": (
        "000000000000000e00000087b5d3a3e901020000018bcfe56805ffffffff0000007182534e41505059000000"
        "0001000000010000005d7200001901341e8e82429001000000018bcfe568011830026b310000000676616c75"
        "65310111011d1c00000018820bfd030109052a2c05ffffffff000000027632000901200400000018f8269d88"
        "11242c67ff000000026b33ffffffff"
    ),
    "m1_lz4": (
        "000000000000000e00000084ae65227001030000018bcfe56805ffffffff0000006e04224d186040825f0000"
        "0016000100e01e8e82429001000000018bcfe5681800c0026b310000000676616c75650a0000020000210050"
        "18820bfd030900012a00b005ffffffff0000000276322100c40000000400000018f8269d882400c067ff0000"
        "00026b33ffffffff00000000"
    ),
    "m2_none": (
        "000000000000000a00000059ffffffff021ddcd3b00000000000040000018bcfe568000000018bcfe56805ff"
        "ffffffffffffffffffffffffff0000000324000000046b310c76616c756531020268020110000a0201047632"
        "0016000108046b330102026e01"
    ),
    "m2_gzip": (
        "000000000000000a0000006dffffffff027e8fdcec0001000000040000018bcfe568000000018bcfe56805ff"
        "ffffffffffffffffffffffffff000000031f8b08000000000000ff5361606060c936e4294bcc294d356462ca"
        "60621460e0626264293362106360e460c936666462ca6304004466954028000000"
    ),
    "m2_snappy": (
        "000000000000000a0000006fffffffff022b39cf450002000000040000018bcfe568000000018bcfe56805ff"
        "ffffffffffffffffffffffffff0000000382534e415050590000000001000000010000002a289c2400000004"
        "6b310c76616c756531020268020110000a02010476320016000108046b330102026e01"
    ),
    "m2_lz4": (
        "000000000000000a00000068ffffffff02fce3359d0003000000040000018bcfe568000000018bcfe56805ff"
        "ffffffffffffffffffffffffff0000000304224d186040822800008024000000046b310c76616c7565310202"
        "68020110000a02010476320016000108046b330102026e0100000000"
    ),
    "m2_zstd": (
        "000000000000000a00000065ffffffff0229f466190004000000040000018bcfe568000000018bcfe56805ff"
        "ffffffffffffffffffffffffff0000000328b52ffd005840010024000000046b310c76616c75653102026802"
        "0110000a02010476320016000108046b330102026e01010000"
    ),
    "m2_none_txn_log_append_time": (
        "0000000000000064000000390000000902e35e56aa00180000000000000000000000050000018bcfe56cd200"
        "0000000000002a000300000007000000010e00000001027800"
    ),
    "end_txn_commit": (
        "000000000000006500000042000000090240e4b3e80030000000000000018bcfe56d140000018bcfe56d1400"
        "0000000000002a0003ffffffff000000012000000008000000010c00000000000400"
    ),
}

CASES = [n for n in GOLDEN if n.startswith("m") and not n.endswith("time")]


@pytest.mark.parametrize("name", CASES)
def test_kafka_bytes_decode(name: str) -> None:
    magic = int(name[1])
    data = bytes.fromhex(GOLDEN[name])
    rows = [
        (
            r.offset,
            r.timestamp,
            None if r.key is None else bytes(r.key),
            None if r.value is None else bytes(r.value),
            [(k, None if v is None else bytes(v)) for k, v in r.headers],
        )
        for b in read_batches(data)
        for r in b
    ]
    expected = [
        (o, t if magic > 0 else -1, k, v, h if magic == 2 else []) for o, t, k, v, h in RECORDS
    ]
    assert rows == expected
    for batch in read_batches(data):
        batch.verify()
        assert batch.magic == magic
        assert batch.compression == Compression[name.split("_", 1)[1].upper()]


@pytest.mark.parametrize("name", [n for n in CASES if n.endswith("_none")])
def test_kwire_writes_the_same_uncompressed_bytes(name: str) -> None:
    magic = int(name[1])
    b = BatchBuilder(magic, base_offset=10)
    for o, t, k, v, h in RECORDS:
        b.append(o, t, k, v, h if magic == 2 else ())
    assert b.build().hex() == GOLDEN[name]


def test_transactional_log_append_time_batch() -> None:
    data = bytes.fromhex(GOLDEN["m2_none_txn_log_append_time"])
    batch = read_batch(data)
    assert batch.is_transactional and batch.timestamp_type == LOG_APPEND_TIME
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (42, 3, 7)
    assert batch.partition_leader_epoch == 9
    (rec,) = batch
    assert (rec.offset, rec.timestamp, rec.sequence) == (100, 1_700_000_001_234, 7)
    b = BatchBuilder(
        2,
        base_offset=100,
        timestamp_type=LOG_APPEND_TIME,
        log_append_time=1_700_000_001_234,
        producer_id=42,
        producer_epoch=3,
        base_sequence=7,
        is_transactional=True,
        partition_leader_epoch=9,
    )
    b.append(100, 5, None, b"x")
    assert b.build() == data


def test_end_txn_marker() -> None:
    data = bytes.fromhex(GOLDEN["end_txn_commit"])
    (rec,) = read_batch(data)
    control = decode_control_record(rec)
    assert control.type == ControlRecordType.COMMIT
    assert control.value == EndTransactionMarker(ControlRecordType.COMMIT, 4)
    ours = build_end_txn_marker(
        True,
        coordinator_epoch=4,
        producer_id=42,
        producer_epoch=3,
        offset=101,
        timestamp=1_700_000_001_300,
        partition_leader_epoch=9,
    )
    assert ours == data
