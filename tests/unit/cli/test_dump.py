"""``kwire dump`` against the text Kafka 3.9's ``DumpLogSegments`` prints.

Expected lines are written out from ``core/src/main/scala/kafka/tools/DumpLogSegments.scala``:
``printBatchLevel`` ("baseOffset: .. lastOffset: .. count: .. baseSequence: .. lastSequence: ..
producerId: .. producerEpoch: .. partitionLeaderEpoch: .. isTransactional: .. isControl: ..
deleteHorizonMs: .. position: .. <TimestampType>: .. size: .. magic: .. compresscodec: .. crc: ..
isvalid: .."; for magic < 2 "offset: <lastOffset>" then the same tail), ``dumpLog``'s record lines
("| offset: .. <TimestampType>: .. keySize: .. valueSize: .." + " sequence: .. headerKeys: [..]"
or " isValid: .. crc: ..}" + " key: .. payload: .."), ``dumpIndex`` ("offset: .. position: .."),
``dumpTimeIndex`` ("timestamp: .. offset: .."), ``dumpTxnIndex``, ``dumpProducerIdSnapshot`` and the
stderr reports. The batches are made by hand here (struct + crc32c/zlib), not by kwire's builder.
"""

from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path

import crc32c
import pytest

from kwire.cli import main


def zigzag_varint(n: int) -> bytes:
    z = (n << 1) ^ (n >> 63)
    out = bytearray()
    while z >= 0x80:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


def v2_record(
    offset_delta: int,
    ts_delta: int,
    key: bytes | None,
    value: bytes | None,
    headers: list[tuple[bytes, bytes | None]] = [],  # noqa: B006 - never mutated
) -> bytes:
    body = b"\x00" + zigzag_varint(ts_delta) + zigzag_varint(offset_delta)
    body += zigzag_varint(-1) if key is None else zigzag_varint(len(key)) + key
    body += zigzag_varint(-1) if value is None else zigzag_varint(len(value)) + value
    body += zigzag_varint(len(headers))
    for hk, hv in headers:
        body += zigzag_varint(len(hk)) + hk
        body += zigzag_varint(-1) if hv is None else zigzag_varint(len(hv)) + hv
    return zigzag_varint(len(body)) + body


def v2_batch(
    base_offset: int,
    records: list[bytes],
    *,
    last_offset_delta: int,
    base_ts: int,
    max_ts: int,
    attributes: int = 0,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    leader_epoch: int = 0,
) -> tuple[bytes, int]:
    """A v2 batch (61-byte header, CRC32C over attributes..end); returns (bytes, crc)."""
    after_crc = struct.pack(
        ">hiqqqhii",
        attributes,
        last_offset_delta,
        base_ts,
        max_ts,
        producer_id,
        producer_epoch,
        base_sequence,
        len(records),
    ) + b"".join(records)
    crc = crc32c.crc32c(after_crc)
    length = 4 + 1 + 4 + len(after_crc)  # partitionLeaderEpoch + magic + crc + rest
    head = struct.pack(">qiibI", base_offset, length, leader_epoch, 2, crc)
    return head + after_crc, crc


def legacy_message(
    offset: int, magic: int, key: bytes | None, value: bytes, ts: int = -1
) -> tuple[bytes, int]:
    """A magic 0/1 message: offset, size, CRC32 (over magic..end), magic, attributes, [ts], key, value."""
    body = struct.pack(">bb", magic, 0)
    if magic == 1:
        body += struct.pack(">q", ts)
    body += struct.pack(">i", -1) if key is None else struct.pack(">i", len(key)) + key
    body += struct.pack(">i", len(value)) + value
    crc = zlib.crc32(body)
    return struct.pack(">qiI", offset, 4 + len(body), crc) + body, crc


def dump(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str], list[str]]:
    code = main(["dump", *args])
    captured = capsys.readouterr()
    return code, captured.out.splitlines(), captured.err.splitlines()


@pytest.fixture
def segment(tmp_path: Path) -> tuple[Path, list[int], list[bytes]]:
    first, crc1 = v2_batch(
        0,
        [
            v2_record(0, 0, b"k0", b"hello", [(b"h1", b"x"), (b"h2", None)]),
            v2_record(1, 5, None, b"world"),
        ],
        last_offset_delta=1,
        base_ts=1_700_000_000_000,
        max_ts=1_700_000_000_005,
        producer_id=42,
        producer_epoch=3,
        base_sequence=10,
        leader_epoch=7,
    )
    second, crc2 = v2_batch(
        2,
        [v2_record(0, 0, b"k2", None)],
        last_offset_delta=0,
        base_ts=1_700_000_000_010,
        max_ts=1_700_000_000_010,
    )
    log = tmp_path / "00000000000000000000.log"
    log.write_bytes(first + second)
    return log, [crc1, crc2], [first, second]


def test_batch_lines(
    capsys: pytest.CaptureFixture[str], segment: tuple[Path, list[int], list[bytes]]
) -> None:
    log, crcs, parts = segment
    code, out, err = dump(capsys, "--files", str(log))
    assert code == 0 and err == []
    assert out == [
        f"Dumping {log}",
        "Log starting offset: 0",
        "baseOffset: 0 lastOffset: 1 count: 2 baseSequence: 10 lastSequence: 11 producerId: 42 "
        "producerEpoch: 3 partitionLeaderEpoch: 7 isTransactional: false isControl: false "
        "deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: 1700000000005 "
        f"size: {len(parts[0])} magic: 2 compresscodec: none crc: {crcs[0]} isvalid: true",
        "baseOffset: 2 lastOffset: 2 count: 1 baseSequence: -1 lastSequence: -1 producerId: -1 "
        "producerEpoch: -1 partitionLeaderEpoch: 0 isTransactional: false isControl: false "
        f"deleteHorizonMs: OptionalLong.empty position: {len(parts[0])} CreateTime: 1700000000010 "
        f"size: {len(parts[1])} magic: 2 compresscodec: none crc: {crcs[1]} isvalid: true",
    ]


def test_record_lines(
    capsys: pytest.CaptureFixture[str], segment: tuple[Path, list[int], list[bytes]]
) -> None:
    log, _, _ = segment
    code, out, _ = dump(capsys, "--files", str(log), "--print-data-log")
    assert code == 0
    assert out[3:5] == [
        "| offset: 0 CreateTime: 1700000000000 keySize: 2 valueSize: 5 sequence: 10 "
        "headerKeys: [h1,h2] key: k0 payload: hello",
        "| offset: 1 CreateTime: 1700000000005 keySize: -1 valueSize: 5 sequence: 11 "
        "headerKeys: [] payload: world",
    ]
    assert (
        out[6]
        == "| offset: 2 CreateTime: 1700000000010 keySize: 2 valueSize: -1 sequence: -1 headerKeys: [] key: k2"
    )
    # --deep-iteration alone: metadata, no data.
    _, deep, _ = dump(capsys, "--files", str(log), "--deep-iteration")
    assert deep[3] == (
        "| offset: 0 CreateTime: 1700000000000 keySize: 2 valueSize: 5 sequence: 10 headerKeys: [h1,h2]"
    )
    # --skip-record-metadata: the "| " prefix goes before the key, and a keyless record prints
    # only " payload: ..." (Kafka's prefix logic).
    _, skipped, _ = dump(capsys, "--files", str(log), "--print-data-log", "--skip-record-metadata")
    assert skipped[3:5] == ["| key: k0 payload: hello", " payload: world"]
    assert skipped[6] == "| key: k2"


def test_control_batch_and_delete_horizon(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # Control record key: version int16, type int16 (1 = COMMIT); value: version int16, coordinatorEpoch int32.
    marker, crc = v2_batch(
        5,
        [v2_record(0, 0, struct.pack(">hh", 0, 1), struct.pack(">hi", 0, 17))],
        last_offset_delta=0,
        base_ts=99,
        max_ts=99,
        attributes=0x10 | 0x20 | 0x40,  # transactional, control, delete horizon
        producer_id=8,
        producer_epoch=1,
    )
    log = tmp_path / "00000000000000000005.log"
    log.write_bytes(marker)
    code, out, _ = dump(capsys, "--files", str(log), "--print-data-log")
    assert code == 0
    assert out[2] == (
        "baseOffset: 5 lastOffset: 5 count: 1 baseSequence: -1 lastSequence: -1 producerId: 8 "
        "producerEpoch: 1 partitionLeaderEpoch: 0 isTransactional: true isControl: true "
        f"deleteHorizonMs: OptionalLong[99] position: 0 CreateTime: 99 size: {len(marker)} magic: 2 "
        f"compresscodec: none crc: {crc} isvalid: true"
    )
    # No key/payload for control batches, only the marker.
    assert out[3] == (
        "| offset: 5 CreateTime: 99 keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] "
        "endTxnMarker: COMMIT coordinatorEpoch: 17"
    )


def test_legacy_messages(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    m0, crc0 = legacy_message(0, 0, b"k", b"abc")
    m1, crc1 = legacy_message(1, 1, None, b"defg", ts=1234)
    log = tmp_path / "00000000000000000000.log"
    log.write_bytes(m0 + m1)
    code, out, _ = dump(capsys, "--files", str(log), "--print-data-log")
    assert code == 0
    assert out[2:] == [
        f"offset: 0 position: 0 NoTimestampType: -1 size: {len(m0)} magic: 0 compresscodec: none "
        f"crc: {crc0} isvalid: true",
        # Kafka's legacy record line ends the crc with a stray "}" ("crc: ${r.checksum}}").
        f"| offset: 0 NoTimestampType: -1 keySize: 1 valueSize: 3 isValid: true crc: {crc0}}} "
        "key: k payload: abc",
        f"offset: 1 position: {len(m0)} CreateTime: 1234 size: {len(m1)} magic: 1 "
        f"compresscodec: none crc: {crc1} isvalid: true",
        f"| offset: 1 CreateTime: 1234 keySize: -1 valueSize: 4 isValid: true crc: {crc1}}} payload: defg",
    ]


def test_trailing_bytes_and_max_bytes(
    capsys: pytest.CaptureFixture[str], segment: tuple[Path, list[int], list[bytes]]
) -> None:
    log, _, parts = segment
    log.write_bytes(parts[0] + parts[1][:-9])
    code, out, err = dump(capsys, "--files", str(log))
    assert code == 1
    assert len(out) == 4
    assert out[-1] == f"Found {len(parts[1]) - 9} invalid bytes at the end of {log.name}"
    assert "truncated batch" in err[0]
    # --max-bytes cuts inside the second batch: Kafka stops quietly there.
    log.write_bytes(parts[0] + parts[1])
    code, out, err = dump(capsys, "--files", str(log), "--max-bytes", str(len(parts[0]) + 10))
    assert code == 0 and err == [] and len(out) == 3


def test_corrupt_batch_in_the_middle(
    capsys: pytest.CaptureFixture[str], segment: tuple[Path, list[int], list[bytes]]
) -> None:
    log, _, parts = segment
    garbage = b"\x07" * 50
    log.write_bytes(parts[0] + garbage + parts[1])
    code, out, err = dump(capsys, "--files", str(log))
    assert code == 1
    assert [line.split(" position: ")[1].split()[0] for line in out[2:]] == [
        "0",
        str(len(parts[0]) + 50),
    ]
    assert len(err) == 1
    assert err[0].startswith(f"kwire: {log}: skipped 50 bytes at position {len(parts[0])}: ")
    assert "resumed at the next valid batch" in err[0]
    flipped = bytearray(parts[0] + parts[1])
    flipped[-1] ^= 0x01  # the CRC no longer matches; dump prints it and says isvalid: false
    log.write_bytes(bytes(flipped))
    code, out, _ = dump(capsys, "--files", str(log))
    assert code == 1 and out[-1].endswith("isvalid: false")


def index_bytes(*pairs: tuple[int, int]) -> bytes:
    return b"".join(struct.pack(">ii", r, p) for r, p in pairs)


def test_index_dump_and_mismatches(
    capsys: pytest.CaptureFixture[str], segment: tuple[Path, list[int], list[bytes]]
) -> None:
    log, _, parts = segment
    index = log.with_suffix(".index")
    # Entry (relative offset 2, position of batch 2): Kafka's entries name the batch's LAST offset.
    index.write_bytes(index_bytes((2, len(parts[0]))) + bytes(8 * 3))  # preallocated tail
    code, out, err = dump(capsys, "--files", str(index))
    assert code == 0 and err == []
    assert out == [f"Dumping {index}", f"offset: 2 position: {len(parts[0])}"]
    code, out, _ = dump(capsys, "--files", str(index), "--index-sanity-check")
    assert code == 0 and out == [f"Dumping {index}", f"{index} passed sanity check."]
    # A wrong entry: offset 1 at the second batch (whose last offset is 2), and one at position 0.
    index.write_bytes(index_bytes((1, len(parts[0])), (3, 0)))
    code, out, err = dump(capsys, "--files", str(index), "--verify-index-only")
    assert code == 1 and out == [f"Dumping {index}"]
    # Kafka prepends to its list, so the mismatches come out last-first.
    assert err == [
        f"Mismatches in :{index.resolve()}",
        "  Index offset: 3, log offset: 1",
        "  Index offset: 1, log offset: 2",
    ]
    index.write_bytes(b"")
    code, out, _ = dump(capsys, "--files", str(index))
    assert out == [f"Dumping {index}", f"{index} is empty."]
    index.write_bytes(b"\x00" * 12)
    code, out, err = dump(capsys, "--files", str(index), "--index-sanity-check")
    assert code == 1
    assert err[-1].endswith(
        f"Index file {index.resolve()} is corrupt, found 12 bytes which is neither positive nor a multiple of 8"
    )


def test_time_index_dump_and_checks(
    capsys: pytest.CaptureFixture[str], segment: tuple[Path, list[int], list[bytes]]
) -> None:
    log, _, _ = segment
    tindex = log.with_suffix(".timeindex")
    tindex.write_bytes(
        struct.pack(">qi", 1_700_000_000_005, 1) + struct.pack(">qi", 1_700_000_000_010, 2)
    )
    code, out, err = dump(capsys, "--files", str(tindex))
    assert code == 0 and err == []
    assert out == [
        f"Dumping {tindex}",
        "timestamp: 1700000000005 offset: 1",
        "timestamp: 1700000000010 offset: 2",
    ]
    tindex.write_bytes(
        struct.pack(">qi", 1_700_000_000_004, 1)  # wrong max timestamp for the batch ending at 1
        + struct.pack(">qi", 1_700_000_000_003, 2)  # out of order
        + struct.pack(">qi", 1_700_000_000_020, 3)  # offset 3 is not in the log
    )
    code, out, err = dump(capsys, "--files", str(tindex), "--verify-index-only")
    assert code == 1 and out == [f"Dumping {tindex}"]
    path = tindex.resolve()
    assert err == [
        f"Found timestamp mismatch in :{path}",
        "  Index timestamp: 1700000000004, log timestamp: 1700000000005",
        "  Index timestamp: 1700000000003, log timestamp: 1700000000010",
        f"Found out of order timestamp in :{path}",
        "  Index timestamp: 1700000000003, Previously indexed timestamp: 1700000000004",
        "The following indexed offsets are not found in the log.",
        "Indexed offset: 3, found log offset: -1",
    ]


def test_txnindex_and_snapshot(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    txn = tmp_path / "00000000000000000000.txnindex"
    txn.write_bytes(struct.pack(">hqqqq", 0, 42, 10, 20, 10))
    code, out, _ = dump(capsys, "--files", str(txn))
    assert code == 0
    assert out[1] == "version: 0 producerId: 42 firstOffset: 10 lastOffset: 20 lastStableOffset: 10"
    body = struct.pack(">i", 2)
    body += struct.pack(">qhiqiqiq", 42, 3, 15, 20, 5, 777, 9, -1)
    body += struct.pack(">qhiqiqiq", 43, 0, -1, -1, 0, 888, -1, 30)
    snap = tmp_path / "00000000000000000021.snapshot"
    snap.write_bytes(struct.pack(">hI", 1, crc32c.crc32c(body)) + body)
    code, out, _ = dump(capsys, "--files", str(snap))
    assert code == 0
    assert out[1:] == [
        "producerId: 42 producerEpoch: 3 coordinatorEpoch: 9 currentTxnFirstOffset: "
        "OptionalLong.empty lastTimestamp: 777 firstSequence: 10 lastSequence: 15 lastOffset: 20 "
        "offsetDelta: 5 timestamp: 777",
        "producerId: 43 producerEpoch: 0 coordinatorEpoch: -1 currentTxnFirstOffset: "
        "OptionalLong[30] lastTimestamp: 888 ",
    ]
    snap.write_bytes(struct.pack(">hI", 1, 12345) + body)
    code, out, err = dump(capsys, "--files", str(snap))
    assert code == 1 and out == [f"Dumping {snap}"]
    assert err == [
        f"Snapshot is corrupt (CRC is no longer valid). Stored crc: 12345. Computed crc: {crc32c.crc32c(body)}"
    ]


def test_several_files_unknown_files_and_usage(
    capsys: pytest.CaptureFixture[str], segment: tuple[Path, list[int], list[bytes]], tmp_path: Path
) -> None:
    log, _, _ = segment
    other = tmp_path / "leader-epoch-checkpoint"
    other.write_text("0\n0\n")
    code, out, err = dump(capsys, "--files", f"{log},{other}")
    assert code == 0
    assert out[0] == f"Dumping {log}" and out[-1] == f"Dumping {other}"
    assert err == [f"Ignoring unknown file {other}"]
    code, out, err = dump(capsys, "--files", str(tmp_path / "00000000000000000009.log"))
    assert code == 1 and "No such file" in err[0]
    with pytest.raises(SystemExit) as exit_info:
        main(["dump"])
    assert exit_info.value.code == 2
    assert "--files" in capsys.readouterr().err
    code, _, err = dump(capsys, "--files", str(log), "--value-decoder-class", "com.example.Nope")
    assert code == 2 and "unsupported decoder class" in err[0]


def test_decoders(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    batch, _ = v2_batch(
        0,
        [v2_record(0, 0, struct.pack(">i", -7), struct.pack(">q", 2**40))],
        last_offset_delta=0,
        base_ts=1,
        max_ts=1,
    )
    log = tmp_path / "00000000000000000000.log"
    log.write_bytes(batch)
    code, out, _ = dump(
        capsys,
        "--files",
        str(log),
        "--key-decoder-class",
        "org.apache.kafka.tools.api.IntegerDecoder",
        "--value-decoder-class",
        "kafka.serializer.LongDecoder",
    )
    assert code == 0
    # Kafka 3.8+ maps deprecated decoders and says so (value decoder first), per .log file.
    assert out[1] == (
        "kafka.serializer.LongDecoder is deprecated. Please use "
        "org.apache.kafka.tools.api.LongDecoder instead"
    )
    assert out[-1].endswith(f"key: -7 payload: {2**40}")


def test_non_consecutive_offsets_are_reported(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    a, _ = v2_batch(
        0,
        [v2_record(0, 0, b"a", b"1"), v2_record(3, 0, b"b", b"2")],
        last_offset_delta=3,
        base_ts=1,
        max_ts=1,
    )
    b, _ = v2_batch(10, [v2_record(0, 0, b"c", b"3")], last_offset_delta=0, base_ts=1, max_ts=1)
    log = tmp_path / "00000000000000000000.log"
    log.write_bytes(a + b)
    code, _, err = dump(capsys, "--files", str(log), "--deep-iteration")
    assert code == 0  # compaction holes are normal
    assert err == [
        f"Non-consecutive offsets in {log.resolve()}",
        "  3 is followed by 10",
        "  0 is followed by 3",
    ]


def test_json_lines(
    capsys: pytest.CaptureFixture[str], segment: tuple[Path, list[int], list[bytes]]
) -> None:
    log, crcs, parts = segment
    log.write_bytes(parts[0] + parts[1] + b"\x00" * 30)
    code, out, err = dump(capsys, "--files", str(log), "--print-data-log", "--json")
    assert code == 1 and err == []
    objs = [json.loads(line) for line in out]
    assert [o["type"] for o in objs] == [
        "file",
        "log",
        "batch",
        "record",
        "record",
        "batch",
        "record",
        "problem",
    ]
    batch = objs[2]
    assert batch["baseOffset"] == 0 and batch["crc"] == crcs[0] and batch["isvalid"] is True
    assert batch["deleteHorizonMs"] is None and batch["timestampType"] == "CreateTime"
    assert objs[3]["key"] == "k0" and objs[3]["headerKeys"] == ["h1", "h2"]
    assert objs[4].get("key") is None and objs[4]["payload"] == "world"
    assert objs[-1]["reason"] == "zero-filled tail" and objs[-1]["length"] == 30


def test_legacy_compressed_wrapper(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    import gzip

    # KIP-31: magic 1 inner offsets are relative (0, 1); the wrapper carries the last absolute
    # offset (11) and the largest inner timestamp.
    inner0, crc0 = legacy_message(0, 1, b"a", b"x", ts=500)
    inner1, crc1 = legacy_message(1, 1, None, b"yy", ts=700)
    value = gzip.compress(inner0 + inner1)
    body = (
        struct.pack(">bbq", 1, 1, 700)
        + struct.pack(">i", -1)
        + struct.pack(">i", len(value))
        + value
    )
    wrapper_crc = zlib.crc32(body)
    wrapper = struct.pack(">qiI", 11, 4 + len(body), wrapper_crc) + body
    log = tmp_path / "00000000000000000010.log"
    log.write_bytes(wrapper)
    code, out, _ = dump(capsys, "--files", str(log), "--print-data-log")
    assert code == 0
    assert out[1:] == [
        "Log starting offset: 10",
        f"offset: 11 position: 0 CreateTime: 700 size: {len(wrapper)} magic: 1 compresscodec: gzip "
        f"crc: {wrapper_crc} isvalid: true",
        f"| offset: 10 CreateTime: 500 keySize: 1 valueSize: 1 isValid: true crc: {crc0}}} key: a payload: x",
        f"| offset: 11 CreateTime: 700 keySize: -1 valueSize: 2 isValid: true crc: {crc1}}} payload: yy",
    ]


def test_logs_written_by_log_writer_verify_cleanly(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from kwire.log import LogWriter, list_log_dir
    from kwire.records import BatchBuilder, Compression, build_end_txn_marker

    with LogWriter(
        tmp_path, "dump-me", 0, segment_bytes=2000, index_interval_bytes=300, fsync=False
    ) as w:
        for i in range(40):
            txn = i % 5 == 4
            b = BatchBuilder(
                2,
                list(Compression)[i % 5],
                base_offset=w.next_offset,
                producer_id=9 if txn else -1,
                producer_epoch=0 if txn else -1,
                base_sequence=i if txn else -1,
                is_transactional=txn,
            )
            for j in range(3):
                b.append(timestamp=10_000 + 10 * i + j, key=b"k", value=b"v" * (20 + i))
            w.append(b.build())
            if txn:
                w.append(
                    build_end_txn_marker(
                        i % 10 == 4,
                        offset=w.next_offset,
                        producer_id=9,
                        producer_epoch=0,
                        coordinator_epoch=2,
                        timestamp=10_000 + 10 * i + 5,
                    )
                )
    (part,) = list_log_dir(tmp_path)
    files = [f for s in part.segments for f in (s.log, s.index, s.timeindex, s.txnindex) if f]
    files += list(part.snapshots)
    code, out, err = dump(
        capsys, "--files", ",".join(files), "--verify-index-only", "--deep-iteration"
    )
    assert err == [] and code == 0
    batch_lines = [line for line in out if line.startswith("baseOffset: ")]
    record_lines = [line for line in out if line.startswith("| offset: ")]
    assert len(batch_lines) == 40 + 8  # data batches and transaction markers
    assert len(record_lines) == 40 * 3 + 8
    assert sum("endTxnMarker: ABORT" in line for line in record_lines) == 4
    txn_lines = [line for line in out if line.startswith("version: 0 producerId: 9")]
    assert len(txn_lines) == 4  # one aborted transaction per ABORT marker
    code, out, err = dump(capsys, "--files", ",".join(files), "--index-sanity-check")
    assert code == 0 and sum(line.endswith("passed sanity check.") for line in out) == 2 * len(
        part.segments
    )


def test_kraft_control_records(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    # Kafka: " SnapshotHeader " + SnapshotHeaderRecordJsonConverter.write(...); other control
    # types: " controlType: LEADER_CHANGE(2)". Values carry no version prefix (ControlRecordUtils).
    header_value = (
        struct.pack(">hq", 0, 5) + b"\x00"
    )  # Version int16, lastContainedLogTimestamp, no tags
    key = struct.pack(">hh", 0, 3)
    header, _ = v2_batch(
        0,
        [v2_record(0, 0, key, header_value)],
        last_offset_delta=0,
        base_ts=5,
        max_ts=5,
        attributes=0x20,
    )
    leader, _ = v2_batch(
        1,
        [v2_record(0, 0, struct.pack(">hh", 0, 2), b"\x00" * 9)],
        last_offset_delta=0,
        base_ts=5,
        max_ts=5,
        attributes=0x20,
    )
    log = tmp_path / "00000000000000000000.log"
    log.write_bytes(header + leader)
    code, out, _ = dump(capsys, "--files", str(log), "--deep-iteration")
    assert code == 0
    assert out[3].endswith(' SnapshotHeader {"version":0,"lastContainedLogTimestamp":5}')
    assert out[5].endswith(" controlType: LEADER_CHANGE(2)")


def test_a_closed_pipe_ends_the_dump_quietly(tmp_path: Path) -> None:
    import subprocess
    import sys

    parts = [
        v2_batch(i, [v2_record(0, 0, b"k", b"v" * 50)], last_offset_delta=0, base_ts=1, max_ts=1)[0]
        for i in range(3000)
    ]
    log = tmp_path / "00000000000000000000.log"
    log.write_bytes(b"".join(parts))
    with subprocess.Popen(
        [sys.executable, "-m", "kwire", "dump", "--files", str(log), "--deep-iteration"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        first = proc.stdout.readline()  # like `| head -1`
        proc.stdout.close()
        err = proc.stderr.read()
        assert proc.wait(timeout=120) == 0
    assert first.startswith(b"Dumping ") and err == b""


def test_json_for_indexes_and_small_files(
    capsys: pytest.CaptureFixture[str], segment: tuple[Path, list[int], list[bytes]]
) -> None:
    log, _, parts = segment
    index = log.with_suffix(".index")
    index.write_bytes(index_bytes((1, len(parts[0]))))  # wrong: the batch there ends at offset 2
    tindex = log.with_suffix(".timeindex")
    tindex.write_bytes(struct.pack(">qi", 1_700_000_000_005, 1))
    txn = log.with_suffix(".txnindex")
    txn.write_bytes(struct.pack(">hqqqq", 0, 42, 10, 20, 10))
    code, out, err = dump(capsys, "--files", f"{index},{tindex},{txn}", "--json")
    assert code == 1 and err == []
    objs = [json.loads(line) for line in out]
    assert [o["type"] for o in objs] == [
        "file",
        "index_entry",
        "file",
        "time_index_entry",
        "file",
        "aborted_txn",
        "index_mismatch",
        # The wrong .index also misleads the time index check (Kafka looks positions up in it).
        "time_index_offset_not_found",
    ]
    assert objs[1] == {
        "type": "index_entry",
        "file": str(index),
        "offset": 1,
        "position": len(parts[0]),
        "logOffset": 2,
    }
    assert objs[3]["logOffset"] == 2 and objs[3]["logMaxTimestamp"] is None
    assert objs[5]["producerId"] == 42 and objs[5]["lastStableOffset"] == 10
    assert objs[6] == {
        "type": "index_mismatch",
        "file": str(index.resolve()),
        "indexOffset": 1,
        "logOffset": 2,
    }
