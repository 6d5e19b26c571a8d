"""kwire.log against Kafka's own ``FileRecords`` (kafka-clients; tools/java/LogOracle.java).

* Segments written by ``LogWriter`` (every magic and codec, transactions, rolls) are read by
  Kafka's ``FileRecords.batches()``: the same batches at the same positions, every one passing
  ``ensureValid()``, with the same record counts kwire sees.
* Kafka's ``searchForOffsetWithSize`` / ``searchForTimestamp`` (what ``LogSegment.translateOffset``
  and ``findOffsetByTimestamp`` finish with) agree with kwire's lookups on those segments.
* On a truncated tail Kafka's iterator stops at the last whole batch, as kwire's scan does (kwire
  also reports the rest); on a zero-filled tail Kafka throws, kwire reports.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kwire.log import LogWriter, PartitionLog, open_segment, scan_batches
from kwire.records import BatchBuilder, Compression, build_end_txn_marker

pytestmark = pytest.mark.oracle


@pytest.fixture(scope="module")
def oracle(start_java: Callable[..., Any]) -> Any:
    return start_java("LogOracle", ["LogOracle"])


def write_mixed_log(root: Path, seed: int) -> PartitionLog:
    rng = random.Random(seed)
    ts = 1_700_000_000_000
    with LogWriter(
        root, "mixed-topic", 0, segment_bytes=6000, index_interval_bytes=500, fsync=False
    ) as w:
        for i in range(60):
            magic = rng.choice([0, 1, 2, 2, 2])
            codecs = [c for c in Compression if not (c == Compression.ZSTD and magic < 2)]
            codec = rng.choice(codecs)
            txn = magic == 2 and rng.random() < 0.3
            b = BatchBuilder(
                magic,
                codec,
                base_offset=w.next_offset + rng.choice([0, 0, 0, 2]),  # some holes
                producer_id=7 if txn else -1,
                producer_epoch=0 if txn else -1,
                base_sequence=i if txn else -1,
                is_transactional=txn,
                partition_leader_epoch=i // 20 if magic == 2 else -1,
            )
            for _ in range(rng.randint(1, 6)):
                ts += rng.randint(-20, 200)
                b.append(
                    timestamp=ts if magic else -1,
                    key=rng.choice([None, b"key"]),
                    value=bytes(rng.randrange(256) for _ in range(rng.randint(0, 300))),
                )
            w.append(b.build())
            if txn:
                marker = w.next_offset
                commit = rng.random() < 0.5
                w.append(
                    build_end_txn_marker(
                        commit,
                        offset=marker,
                        producer_id=7,
                        producer_epoch=0,
                        coordinator_epoch=1,
                        timestamp=ts,
                    )
                )
                if not commit:
                    w.append_aborted_txn(7, marker - 1, marker, marker - 1)
    return PartitionLog(root / "mixed-topic-0")


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_kafka_reads_what_the_writer_wrote(oracle: Any, tmp_path: Path, seed: int) -> None:
    log = write_mixed_log(tmp_path, seed)
    assert len(log.segments) > 1
    for segment in log.segments:
        kafka = oracle.request({"op": "scan", "path": segment.log})
        assert kafka["error"] is None, kafka
        with open_segment(segment) as seg:
            scan = seg.scan()
            ours = [
                {
                    "position": b.position,
                    "baseOffset": b.base_offset,
                    "lastOffset": b.last_offset,
                    "magic": b.magic,
                    "size": b.size,
                    "maxTimestamp": b.max_timestamp,
                    "records": sum(1 for _ in b),
                }
                for b in scan
            ]
            assert scan.skipped == []
        theirs = [
            {
                k: b[k]
                for k in (
                    "position",
                    "baseOffset",
                    "lastOffset",
                    "magic",
                    "size",
                    "maxTimestamp",
                    "records",
                )
            }
            for b in kafka["batches"]
        ]
        assert ours == theirs
        assert all(b["isValid"] and b["ensureValid"] for b in kafka["batches"])


def test_offset_and_timestamp_lookups_agree_with_kafka(oracle: Any, tmp_path: Path) -> None:
    log = write_mixed_log(tmp_path, 4)
    for segment in log.segments:
        with open_segment(segment) as seg:
            batches = list(seg.batches())
            first, last = batches[0].base_offset, batches[-1].last_offset
            for offset in range(first - 1, last + 2):
                kafka = oracle.request(
                    {"op": "searchOffset", "path": segment.log, "offset": offset, "position": 0}
                )
                ours = seg.position_of(offset)
                assert ours == (None if kafka is None else kafka["position"])
            stamps = sorted({b.max_timestamp for b in batches if b.max_timestamp >= 0})
            for ts in [0, *stamps, stamps[-1] + 1] if stamps else [0]:
                kafka = oracle.request(
                    {
                        "op": "searchTimestamp",
                        "path": segment.log,
                        "timestamp": ts,
                        "position": 0,
                        "startingOffset": segment.base_offset,
                    }
                )
                ours = seg.lookup_timestamp(ts)
                if kafka is None:
                    assert ours is None
                else:
                    assert ours is not None and (ours.timestamp, ours.offset) == (
                        kafka["timestamp"],
                        kafka["offset"],
                    )


def test_damaged_tails(oracle: Any, tmp_path: Path) -> None:
    log = write_mixed_log(tmp_path, 5)
    segment = log.segments[0]
    data = Path(segment.log).read_bytes()
    truncated = tmp_path / "00000000000000000000.log"
    truncated.write_bytes(data[:-5])
    kafka = oracle.request({"op": "scan", "path": str(truncated)})
    ours = scan_batches(truncated.read_bytes())
    assert [b.position for b in ours] == [b["position"] for b in kafka["batches"]]
    assert kafka["error"] is None  # Kafka stops quietly; kwire says what it skipped
    assert len(ours.skipped) == 1 and ours.skipped[0].reason.startswith("truncated batch")
    zeroed = tmp_path / "zeros" / "00000000000000000000.log"
    zeroed.parent.mkdir()
    zeroed.write_bytes(data + bytes(4096))
    kafka = oracle.request({"op": "scan", "path": str(zeroed)})
    assert "CorruptRecordException" in kafka["error"]  # Kafka: size 0 < minimum overhead
    ours = scan_batches(zeroed.read_bytes())
    assert [b.position for b in ours] == [b["position"] for b in kafka["batches"]]
    assert ours.skipped[0].reason == "zero-filled tail" and ours.skipped[0].length == 4096


@pytest.mark.parametrize("seed", [6, 7])
def test_dump_lines_match_kafkas_rendering(
    oracle: Any, tmp_path: Path, seed: int, capsys: pytest.CaptureFixture[str]
) -> None:
    """kwire dump --print-data-log against DumpLogSegments' templates filled by Kafka's objects."""
    from kwire.cli import main

    log = write_mixed_log(tmp_path, seed)
    for segment in log.segments:
        kafka = oracle.request({"op": "dumpLines", "path": segment.log})
        assert "fatal" not in kafka, kafka
        code = main(["dump", "--files", segment.log, "--print-data-log"])
        out = capsys.readouterr().out
        assert code == 0
        # Values are random bytes (newlines included): compare the text, not split lines.
        header = f"Dumping {segment.log}\nLog starting offset: {segment.base_offset}\n"
        assert out == header + "".join(line + "\n" for line in kafka["lines"])


def test_string_decoder_matches_java(oracle: Any) -> None:
    """kwire dump prints keys and values as Java's ``new String(bytes, UTF_8)`` does, malformed
    input included (Java and Python replace different numbers of bytes per U+FFFD)."""
    from kwire.records import java_string as _string

    rng = random.Random(11)
    special = [
        0x80,
        0xBF,
        0xC0,
        0xC1,
        0xC2,
        0xDF,
        0xE0,
        0xED,
        0xEF,
        0xF0,
        0xF4,
        0xF5,
        0xFF,
        0x90,
        0xA0,
        0x41,
    ]
    samples = [b"", b"plain ascii", "h\u00e9llo \u20ac \U0001f600".encode()]
    for _ in range(3000):
        n = rng.randint(1, 8)
        samples.append(
            bytes(
                rng.choice(special) if rng.random() < 0.8 else rng.randrange(256) for _ in range(n)
            )
        )
    java = oracle.request({"op": "decode", "hex": [s.hex() for s in samples]})
    mismatches = [(s, _string(s), j) for s, j in zip(samples, java, strict=True) if _string(s) != j]
    assert mismatches == []


def test_kraft_control_records_dump_like_kafka(
    oracle: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """__cluster_metadata-style control batches: DumpLogSegments prints SnapshotHeader/Footer,
    KRaftVersion and KRaftVoters as "<Label> <JsonConverter JSON>", other types as controlType."""
    import uuid

    from kwire.cli import main
    from kwire.protocol import message_class
    from kwire.protocol.messages import VotersRecord
    from kwire.records import ControlRecordType, build_control_batch

    voters_mod = VotersRecord

    def value(message: Any) -> bytes:
        # MessageUtil.toByteBuffer(message, CURRENT_VERSION = 0): no version prefix.
        return bytes(message.encode(0))

    voters = voters_mod(
        version=0,
        voters=[
            VotersRecord.Voter(
                voter_id=3,
                voter_directory_id=uuid.UUID(int=0x1234),
                endpoints=[
                    VotersRecord.Endpoint(name="CONTROLLER", host="kraft-0.example", port=9093)
                ],
                kraft_version_feature=VotersRecord.KRaftVersionFeature(
                    min_supported_version=0, max_supported_version=1
                ),
            )
        ],
    )
    controls = [
        (
            ControlRecordType.SNAPSHOT_HEADER,
            value(
                message_class("SnapshotHeaderRecord")(
                    version=0, last_contained_log_timestamp=1_700_000_000_123
                )
            ),
        ),
        (
            ControlRecordType.KRAFT_VERSION,
            value(message_class("KRaftVersionRecord")(version=0, kraft_version=1)),
        ),
        (ControlRecordType.KRAFT_VOTERS, value(voters)),
        (
            ControlRecordType.SNAPSHOT_FOOTER,
            value(message_class("SnapshotFooterRecord")(version=0)),
        ),
    ]
    with LogWriter(tmp_path, "__cluster_metadata", 0, fsync=False) as w:
        for ctype, payload in controls:
            w.append(build_control_batch(ctype, payload, offset=w.next_offset, timestamp=5))
    seg = w.segments_written[0]
    kafka = oracle.request({"op": "dumpLines", "path": seg.log})
    assert "fatal" not in kafka, kafka
    assert main(["dump", "--files", seg.log, "--deep-iteration"]) == 0
    out = capsys.readouterr().out
    assert out == f"Dumping {seg.log}\nLog starting offset: 0\n" + "".join(
        line + "\n" for line in kafka["lines"]
    )
    assert " SnapshotHeader {" in out and " KRaftVoters {" in out
