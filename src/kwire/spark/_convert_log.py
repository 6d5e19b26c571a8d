"""The `kwire pipeline convert` job: a Kafka log directory rewritten in another record format, on
Spark.

convert: one Spark task per segment. The task reads the segment (pyarrow filesystem), converts
every batch with kwire.records.convert (offsets, holes, producer state, control batches and
transactions kept as far as the target magic can carry them; losses counted), and writes it
back with kwire.log's LogWriter under a staging folder; the driver then moves the segment files
into `<output>/<topic>-<partition>/`. Aborted transactions keep their .txnindex entries.

Skipped bytes are counted as the export's are (``_pipeline.JobResult``).
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kwire._lazy import lazy_dataclass
from kwire.errors import KwireError
from kwire.spark._fs import list_files, resolve, to_uri
from kwire.spark._pipeline import JobResult, ProgressCallback, _log_bytes, overlaps, track_progress

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["convert_log"]


@lazy_dataclass(frozen=True)
class _SegmentJob:
    """One segment for a Spark task to convert: where it is and which partition it belongs to."""

    uri: str
    topic: str
    partition: int
    base_offset: int
    txnindex: str | None


def _convert_segment(
    job: _SegmentJob, staging: str, magic: int, compression: int | None, segment_bytes: int
) -> dict[str, Any]:
    """Executor side: convert one segment into ``staging/<base offset>/<topic>-<partition>/``."""
    from kwire.log import LogWriter, TransactionIndex, scan_batches
    from kwire.records import convert
    from kwire.spark._fs import read_bytes

    fs, path = resolve(job.uri)
    data = read_bytes(fs, path)
    aborted = []
    if job.txnindex:
        aborted = TransactionIndex(read_bytes(*resolve(job.txnindex))).entries
    marker_at = {t.last_offset: t for t in aborted}
    root = os.path.join(staging, f"{job.topic}-{job.partition}-{job.base_offset:020d}")
    records = 0
    losses: dict[str, int] = {}
    with LogWriter(
        root,
        job.topic,
        job.partition,
        segment_bytes=segment_bytes,
        start_offset=job.base_offset,
        fsync=False,
    ) as writer:
        scan = scan_batches(data, source=job.uri)  # corrupt bytes are reported, not fatal
        for batch in scan:
            result = convert(batch.view, magic, compression=compression)
            if result.records:
                writer.append(result.records)
            records += batch.record_count if not batch.is_control else 0
            for line in result.loss.describe():
                count, _, what = line.partition(" ")
                losses[what] = losses.get(what, 0) + int(count)
            txn = marker_at.get(batch.last_offset) if batch.is_control else None
            if txn is not None and magic == 2:
                writer.append_aborted_txn(
                    txn.producer_id, txn.first_offset, txn.last_offset, txn.last_stable_offset
                )
        skipped = scan.skipped_bytes
        problems = [
            f"{job.uri}: {s.length} bytes at {s.position}: {s.reason}" for s in scan.skipped
        ]
    return {
        "problems": problems,
        "dir": os.path.join(root, f"{job.topic}-{job.partition}"),
        "topic": job.topic,
        "partition": job.partition,
        "records": records,
        "input_bytes": len(data),
        "skipped": skipped,
        "losses": losses,
    }


def convert_log(
    spark: SparkSession,
    input_path: str,
    output: str,
    *,
    magic: int = 2,
    compression: str | None = None,
    segment_bytes: int = 1 << 30,
    progress: ProgressCallback | None = None,
) -> JobResult:
    """Convert every segment of a log directory to ``magic``/``compression`` into ``output``."""
    from kwire.log import partitions_from_paths
    from kwire.records import Compression

    codec = None if compression is None else Compression[compression.upper()]
    in_uri = to_uri(input_path)
    out = os.path.abspath(output)
    if overlaps(input_path, output):
        raise KwireError(f"--output {output} overlaps --input {input_path}: choose another output")
    if "://" in output:
        raise KwireError("convert writes a local log directory: give a local --output")
    if os.path.isdir(out) and any(Path(out).iterdir()):
        raise KwireError(f"{out} is not empty")
    fs, root = resolve(in_uri)
    files = list_files(fs, root)
    jobs = []
    for pdir in partitions_from_paths(sorted(files), files):
        for seg in pdir.segments:
            scheme = in_uri.split("://", 1)[0] + "://" if "://" in in_uri else ""
            jobs.append(
                _SegmentJob(
                    scheme + seg.log.lstrip("/") if scheme else seg.log,
                    pdir.topic,
                    pdir.partition,
                    seg.base_offset,
                    (scheme + seg.txnindex.lstrip("/") if scheme else seg.txnindex)
                    if seg.txnindex
                    else None,
                )
            )
    result = JobResult(f"convert to magic {magic}" + (f" {compression}" if compression else ""))
    staging = os.path.join(out, "_kwire_staging")
    os.makedirs(staging, exist_ok=True)
    started = time.perf_counter()
    with track_progress(spark, progress):
        outputs = (
            spark.sparkContext.parallelize(jobs, max(1, len(jobs)))
            .map(lambda j: _convert_segment(j, staging, magic, codec, segment_bytes))
            .collect()
            if jobs
            else []
        )
    losses: dict[str, int] = {}
    for item in sorted(outputs, key=lambda o: (o["topic"], o["partition"])):
        final = os.path.join(out, f"{item['topic']}-{item['partition']}")
        os.makedirs(final, exist_ok=True)
        for name in os.listdir(item["dir"]):
            target = os.path.join(final, name)
            if name == "leader-epoch-checkpoint" and os.path.exists(target):
                continue  # the first segment's checkpoint; epochs only grow
            shutil.move(os.path.join(item["dir"], name), target)
        result.records += item["records"]
        result.input_bytes += item["input_bytes"]
        result.skipped_bytes += item["skipped"]
        result.problems.extend(item["problems"])
        for what, count in item["losses"].items():
            losses[what] = losses.get(what, 0) + count
    shutil.rmtree(staging, ignore_errors=True)
    _carry_checkpoints(fs, files, out)
    result.seconds = time.perf_counter() - started
    result.output_bytes = _log_bytes(out)
    result.notes.extend(f"{count} {what}" for what, count in sorted(losses.items()))
    return result


def _carry_checkpoints(fs: Any, files: dict[str, int], out: str) -> None:
    """The data dir files that say what the records are (the log start, after DeleteRecords;
    how far the cleaner compacted) go with the converted partitions, so a reader of ``out``
    sees the same log starts and takes compaction gaps for what they are."""
    from kwire.log import (
        CLEANER_OFFSET_CHECKPOINT,
        LOG_START_OFFSET_CHECKPOINT,
        encode_offset_checkpoint,
    )
    from kwire.spark._fs import read_bytes
    from kwire.spark._plan import dir_checkpoints

    for name in (LOG_START_OFFSET_CHECKPOINT, CLEANER_OFFSET_CHECKPOINT):
        merged = {}
        for entries in dir_checkpoints(files, lambda p: read_bytes(fs, p), name).values():
            merged.update(entries)
        if merged:
            Path(out, name).write_text(encode_offset_checkpoint(merged))
