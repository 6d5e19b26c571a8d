"""``.txnindex``, producer ``.snapshot``, ``leader-epoch-checkpoint`` and ``partition.metadata``,
from bytes written by hand after Kafka's schemas (``AbortedTxn``, ``ProducerStateManager``,
``CheckpointFile``, ``PartitionMetadataFile``)."""

from __future__ import annotations

import struct

import crc32c
import pytest

from kwire.errors import DecodeError
from kwire.log import (
    AbortedTxn,
    EpochEntry,
    ProducerSnapshotEntry,
    TransactionIndex,
    collect_aborted_transactions,
    encode_leader_epoch_checkpoint,
    encode_partition_metadata,
    encode_producer_snapshot,
    encode_txn_index,
    read_leader_epoch_checkpoint,
    read_partition_metadata,
    read_producer_snapshot,
    read_txn_index,
)


def txn(version: int, pid: int, first: int, last: int, lso: int) -> bytes:
    # AbortedTxn: version int16, producerId int64, firstOffset int64, lastOffset int64, lso int64
    return struct.pack(">hqqqq", version, pid, first, last, lso)


def test_txn_index_entries() -> None:
    data = txn(0, 7, 100, 130, 100) + txn(0, 9, 120, 200, 100)
    assert len(data) == 2 * 34
    assert read_txn_index(data) == [AbortedTxn(7, 100, 130, 100), AbortedTxn(9, 120, 200, 100)]
    assert encode_txn_index(read_txn_index(data)) == data


def test_txn_index_partial_tail_and_unknown_version() -> None:
    data = txn(0, 7, 100, 130, 100) + b"\x00" * 20
    lenient = TransactionIndex(data)
    assert lenient.entries == [AbortedTxn(7, 100, 130, 100)]  # Kafka ignores the partial entry
    assert "20 trailing bytes at byte 34" in lenient.problems[0]
    with pytest.raises(DecodeError) as err:
        read_txn_index(data)
    assert err.value.offset == 34
    newer = txn(0, 1, 1, 2, 1) + txn(1, 2, 3, 4, 3) + txn(0, 5, 6, 7, 6)
    index = TransactionIndex(newer)
    # Kafka: "Unexpected aborted transaction version 1 ..." and nothing after it is read.
    assert index.entries == [AbortedTxn(1, 1, 2, 1)]
    assert "unexpected aborted transaction version 1" in index.problems[0]
    assert list(TransactionIndex(b"")) == []


def test_collect_aborted_transactions_overlap_rule() -> None:
    entries = [
        AbortedTxn(1, 10, 20, 10),
        AbortedTxn(2, 15, 40, 10),
        AbortedTxn(3, 50, 60, 50),
        AbortedTxn(4, 5, 8, 5),
    ]
    # TransactionIndex.collectAbortedTxns: lastOffset >= fetchOffset && firstOffset < upperBound
    assert collect_aborted_transactions(entries, 21, 50) == [AbortedTxn(2, 15, 40, 10)]
    assert collect_aborted_transactions(entries, 20, 51) == [
        AbortedTxn(1, 10, 20, 10),
        AbortedTxn(2, 15, 40, 10),
        AbortedTxn(3, 50, 60, 50),
    ]
    assert [t.producer_id for t in collect_aborted_transactions(entries, 0)] == [4, 1, 2, 3]


def snapshot_bytes(
    entries: list[tuple[int, int, int, int, int, int, int, int]], version: int = 1
) -> bytes:
    # version int16 | crc uint32 (CRC32C of what follows) | array(int32 count) of
    # producer_id int64, epoch int16, last_sequence int32, last_offset int64, offset_delta int32,
    # timestamp int64, coordinator_epoch int32, current_txn_first_offset int64
    body = struct.pack(">i", len(entries)) + b"".join(struct.pack(">qhiqiqiq", *e) for e in entries)
    return struct.pack(">hI", version, crc32c.crc32c(body)) + body


def test_producer_snapshot() -> None:
    data = snapshot_bytes(
        [
            (1000, 3, 41, 500, 4, 1_700_000_000_000, 7, -1),
            (1001, 0, 9, 520, 9, 1_700_000_000_500, -1, 510),
            (1002, 1, -1, -1, 0, 1_700_000_001_000, 2, -1),
        ]
    )
    snap = read_producer_snapshot(data)
    assert snap.version == 1 and snap.crc == struct.unpack_from(">I", data, 2)[0]
    a, b, c = snap.entries
    assert (a.producer_id, a.producer_epoch, a.last_sequence, a.last_offset) == (1000, 3, 41, 500)
    assert (a.offset_delta, a.timestamp, a.coordinator_epoch) == (4, 1_700_000_000_000, 7)
    assert a.current_txn_first_offset is None and a.has_batch_metadata
    assert a.first_sequence == 37
    assert b.current_txn_first_offset == 510 and b.first_sequence == 0
    assert not c.has_batch_metadata  # last_offset < 0: no BatchMetadata in Kafka
    assert encode_producer_snapshot(snap.entries) == data


def test_snapshot_first_sequence_wraps_like_kafka() -> None:
    # BatchMetadata.firstSeq = DefaultRecordBatch.decrementSequence(lastSeq, offsetDelta)
    e = ProducerSnapshotEntry(1, 0, 2, 10, 5, 0, 0, None)
    assert e.first_sequence == 2**31 - 1 - (5 - 2) + 1


def test_snapshot_errors_are_kafkas() -> None:
    good = snapshot_bytes([(1, 0, 0, 0, 0, 0, 0, -1)])
    with pytest.raises(DecodeError, match="Snapshot contained an unknown file version 2"):
        read_producer_snapshot(b"\x00\x02" + good[2:])
    flipped = bytearray(good)
    flipped[-1] ^= 1
    with pytest.raises(DecodeError, match=r"Snapshot is corrupt \(CRC is no longer valid\)"):
        read_producer_snapshot(flipped)
    with pytest.raises(DecodeError, match="schema validation") as err:
        read_producer_snapshot(good[:4])
    assert err.value.offset == 0
    body = struct.pack(">i", 3) + bytes(46)  # claims 3 entries, holds 1
    with pytest.raises(DecodeError, match="3 entries do not fit"):
        read_producer_snapshot(struct.pack(">hI", 1, crc32c.crc32c(body)) + body)
    assert read_producer_snapshot(snapshot_bytes([])).entries == ()


def test_leader_epoch_checkpoint() -> None:
    text = "0\n3\n0 0\n2 150\n5 4000\n"
    entries = read_leader_epoch_checkpoint(text)
    assert entries == [EpochEntry(0, 0), EpochEntry(2, 150), EpochEntry(5, 4000)]
    assert read_leader_epoch_checkpoint(text.encode()) == entries
    assert encode_leader_epoch_checkpoint(entries) == text
    assert read_leader_epoch_checkpoint("") == []
    assert read_leader_epoch_checkpoint("0\n0\n") == []


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("1\n0\n", "Unrecognised version:1, expected version: 0"),
        ("0\n2\n0 0\n", "Expected 2 entries in checkpoint file, but found only 1"),
        ("0\n1\n0\n", "Malformed line"),
        ("0\n1\n0 x\n", "malformed offset"),
        ("x\n", "malformed version"),
        ("0\n", "missing the entry count"),
        (b"\xff\xfe", "not UTF-8"),
    ],
)
def test_leader_epoch_checkpoint_errors(text: str | bytes, message: str) -> None:
    with pytest.raises(DecodeError, match=message):
        read_leader_epoch_checkpoint(text)


def test_partition_metadata() -> None:
    topic_id = bytes(range(16))
    text = encode_partition_metadata(topic_id)
    assert text == "version: 0\ntopic_id: AAECAwQFBgcICQoLDA0ODw\n"
    meta = read_partition_metadata(text)
    assert meta.version == 0 and meta.topic_id == "AAECAwQFBgcICQoLDA0ODw"
    assert meta.topic_id_bytes == topic_id
    with pytest.raises(DecodeError, match="Unrecognised version:1"):
        read_partition_metadata("version: 1\ntopic_id: AAECAwQFBgcICQoLDA0ODw\n")
    with pytest.raises(DecodeError, match="not a base64url UUID"):
        read_partition_metadata("version: 0\ntopic_id: nope\n")
    with pytest.raises(DecodeError, match="needs 'version' and 'topic_id'"):
        read_partition_metadata("version: 0\n")
