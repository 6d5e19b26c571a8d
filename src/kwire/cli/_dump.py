"""``kwire dump``: Kafka's ``kafka-dump-log.sh`` (``DumpLogSegments``), same options, same text.

The text layout follows Kafka 3.9's ``kafka.tools.DumpLogSegments`` line for line, so scripts that
parse its output keep working:

- ``Dumping <file>`` per file; ``.log``: ``Log starting offset: <n>``, one line per batch
  (``baseOffset: .. lastOffset: .. count: .. baseSequence: .. lastSequence: .. producerId: ..
  producerEpoch: .. partitionLeaderEpoch: .. isTransactional: .. isControl: .. deleteHorizonMs:
  OptionalLong.empty position: .. CreateTime: .. size: .. magic: .. compresscodec: .. crc: ..
  isvalid: ..``; magic 0/1: ``offset: <last offset> position: ..``), with ``--deep-iteration`` a
  ``| offset: ..`` line per record, and ``Found <n> invalid bytes at the end of <name>``;
- ``.index``: ``offset: <o> position: <p>`` (``<file> is empty.``); ``.timeindex``:
  ``timestamp: <t> offset: <o>``; ``--index-sanity-check``: ``<file> passed sanity check.``;
  ``--verify-index-only`` checks without printing; mismatches go to stderr at the end, as Kafka's;
- ``.txnindex``: ``version: .. producerId: .. firstOffset: .. lastOffset: .. lastStableOffset: ..``;
  ``.snapshot``: ``producerId: .. producerEpoch: .. coordinatorEpoch: .. currentTxnFirstOffset: ..
  lastTimestamp: .. firstSequence: .. lastSequence: .. lastOffset: .. offsetDelta: .. timestamp: ..``.

Beyond Kafka's tool, ``--files`` takes directories: a partition directory stands for its ``.log``
segments (oldest first), a data directory for every partition's, sorted by topic and partition,
with ``__consumer_offsets``, ``__transaction_state`` and ``__cluster_metadata`` decoded as their
decoder options would, and any other directory for the segments it holds (Kafka's tool says
"Ignoring unknown file" to a directory). A path that does not exist is an error, whatever its name.

Where Kafka's tool crashes with a stack trace (a corrupt batch in the middle of a segment, a
corrupt index), kwire reports what it skipped on stderr and goes on. ``--json`` prints one JSON
object per line instead (every batch, record, index entry and problem, each with a ``type``).

Exit codes: 0 when every file read cleanly, 1 when anything was skipped, invalid or mismatched
(Kafka exits 0 and leaves that to the stderr report), 2 for usage errors.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import field, replace
from typing import Any, Final, TextIO

from kwire._lazy import lazy_dataclass

__all__ = ["register"]

from kwire._wire import INT32_MAX
from kwire.cli._dump_decoders import (
    DECODERS,
    DEPRECATED_DECODERS,
    RECORD_PARSERS,
    SPECIAL_DECODER_HELP,
    SPECIAL_DECODERS,
    STRING_DECODER,
    Decoder,
)
from kwire.errors import KwireError
from kwire.log import (
    DEFAULT_MAX_MESSAGE_SIZE,
    MappedFile,
    TransactionIndex,
    offset_index_sanity_problem,
    parse_partition_dir,
    read_producer_snapshot,
    read_small_file,
    scan_batches,
    segment_base_offset,
    segment_file_beside,
    time_index_sanity_problem,
    walk_offset_index,
    walk_time_index,
)
from kwire.log.internal_topics import (
    CLUSTER_METADATA,
    CONSUMER_OFFSETS,
    TRANSACTION_STATE,
)
from kwire.protocol import KafkaMessage
from kwire.records import (
    Batch,
    Compression,
    ControlRecordType,
    EndTransactionMarker,
    LegacyBatch,
    Record,
    decode_control_record,
    java_string,
)

_RECORD_INDENT: Final = "|"
_TIMESTAMP_TYPES: Final = {-1: "NoTimestampType", 0: "CreateTime", 1: "LogAppendTime"}

#: DumpLogSegments prints these KRaft control records as "<label> <JSON of the message>".
_KRAFT_LABELS: Final = {
    ControlRecordType.SNAPSHOT_HEADER: "SnapshotHeader",
    ControlRecordType.SNAPSHOT_FOOTER: "SnapshotFooter",
    ControlRecordType.KRAFT_VERSION: "KRaftVersion",
    ControlRecordType.KRAFT_VOTERS: "KRaftVoters",
}


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "dump",
        help="print log segments, indexes, transaction indexes and producer snapshots "
        "(kafka-dump-log.sh)",
        description="Parse Kafka log files and dump their contents, as kafka-dump-log.sh does: "
        ".log, .index, .timeindex, .txnindex and .snapshot files.",
    )
    parser.add_argument(
        "--files",
        required=True,
        metavar="file1,file2,...",
        help="REQUIRED: the comma separated list of data and index log files to be dumped; a "
        "partition directory stands for its .log segments, a data directory for every "
        "partition's (internal topics decoded as by their decoder options)",
    )
    parser.add_argument(
        "--print-data-log",
        action="store_true",
        help="print the messages' content (implies --deep-iteration); also set by any decoder option",
    )
    parser.add_argument(
        "--deep-iteration", action="store_true", help="iterate records, not only batches"
    )
    parser.add_argument(
        "--verify-index-only",
        action="store_true",
        help="only verify the index files against the log, without printing their content",
    )
    parser.add_argument(
        "--index-sanity-check",
        action="store_true",
        help="only run the index sanity check a broker runs on start-up",
    )
    parser.add_argument(
        "--max-message-size",
        type=int,
        default=DEFAULT_MAX_MESSAGE_SIZE,
        metavar="size",
        help="size of the largest message (default 5242880)",
    )
    parser.add_argument(
        "--max-bytes",
        type=int,
        default=INT32_MAX,
        metavar="size",
        help="read only the batches within the first <size> bytes of each .log",
    )
    parser.add_argument(
        "--skip-record-metadata",
        action="store_true",
        help="do not print the metadata of each record",
    )
    for which in ("value", "key"):
        parser.add_argument(
            f"--{which}-decoder-class",
            nargs="?",
            const=STRING_DECODER,
            default=None,
            metavar="class",
            help=f"decode {which}s with Kafka's String (default), Integer, Long or Default decoder",
        )
    for name in SPECIAL_DECODERS:
        parser.add_argument(
            "--" + name.replace("_", "-"),
            action="store_true",
            help=SPECIAL_DECODER_HELP.get(
                name,
                "accepted for compatibility; kwire prints such data as strings (see docs/log.md)",
            ),
        )
    parser.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object per line (batches, records, index entries, problems)",
    )
    parser.set_defaults(func=_dump)


def _parse_record(
    record: Record, opts: _Options, key_decoder: Decoder, value_decoder: Decoder
) -> tuple[str | None, str | None]:
    """Kafka's ``MessageParser.parse``: the first topic decoder asked for that kwire implements,
    else ``DecoderMessageParser`` (the key and value decoders; None for a null key or value)."""
    for name in opts.special:
        parser = RECORD_PARSERS.get(name)
        if parser is not None:
            return parser(record)
    key = None if record.key is None else key_decoder(bytes(record.key))
    payload = None if record.value is None else value_decoder(bytes(record.value))
    return key, payload


# -- state ----------------------------------------------------------------------------------------


@lazy_dataclass
class _Report:
    """What Kafka's tool collects while dumping and prints to stderr at the end."""

    index_mismatches: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    time_mismatches: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    time_out_of_order: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    time_not_found: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    non_consecutive: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    failed: bool = False


class _Out:
    """Text (Kafka's layout) or JSON lines."""

    def __init__(self, stdout: TextIO, stderr: TextIO, as_json: bool) -> None:
        self.stdout = stdout
        self.stderr = stderr
        self.json = as_json

    def line(self, text: str) -> None:
        if not self.json:
            self.stdout.write(text + "\n")

    def obj(self, type_: str, **fields: Any) -> None:
        if self.json:
            self.stdout.write(json.dumps({"type": type_, **fields}, separators=(",", ":")) + "\n")

    def problem(self, file: str, text: str, **fields: Any) -> None:
        if self.json:
            self.obj("problem", file=file, message=text, **fields)
        else:
            self.stderr.write(f"kwire: {file}: {text}\n")


@lazy_dataclass
class _Options:
    """``kwire dump``'s options, as ``kafka-dump-log`` names them."""

    files: list[str]
    print_data: bool
    deep: bool
    verify_only: bool
    sanity_only: bool
    max_message_size: int
    max_bytes: int
    skip_metadata: bool
    value_decoder: str
    key_decoder: str
    special: list[str]


def _options(args: argparse.Namespace) -> _Options:
    special = [name for name in SPECIAL_DECODERS if getattr(args, name)]
    print_data = bool(
        args.print_data_log
        or special
        or args.value_decoder_class is not None
        or args.key_decoder_class is not None
    )
    files = [f for f in args.files.split(",")]
    return _Options(
        files=files,
        print_data=print_data,
        deep=bool(args.deep_iteration or print_data),
        verify_only=bool(args.verify_index_only),
        sanity_only=bool(args.index_sanity_check),
        max_message_size=args.max_message_size,
        max_bytes=args.max_bytes,
        skip_metadata=bool(args.skip_record_metadata),
        value_decoder=args.value_decoder_class or STRING_DECODER,
        key_decoder=args.key_decoder_class or STRING_DECODER,
        special=special,
    )


def _resolve_decoder(name: str, out: _Out) -> Decoder:
    if name in DEPRECATED_DECODERS:
        new = DEPRECATED_DECODERS[name]
        out.line(f"{name} is deprecated. Please use {new} instead")
        name = new
    return DECODERS[name]


#: The decoder of each internal topic when a directory is dumped (as if its flag were given).
_INTERNAL_DECODERS: Final = {
    CONSUMER_OFFSETS: "offsets_decoder",
    TRANSACTION_STATE: "transaction_log_decoder",
    CLUSTER_METADATA: "cluster_metadata_decoder",
}


def _segments(directory: str) -> list[str]:
    """A partition directory's ``.log`` segments, oldest first."""
    logs = [
        (base, name)
        for name in os.listdir(directory)
        if name.endswith(".log") and (base := segment_base_offset(name)) is not None
    ]
    return [os.path.join(directory, name) for _, name in sorted(logs)]


def _directory_logs(directory: str) -> list[tuple[str, str | None]]:
    """The segments a directory holds, with the decoder of an internal topic: a partition
    directory's own, or (a data directory) every partition's, sorted by topic and partition."""
    tp = parse_partition_dir(os.path.basename(os.path.normpath(directory)))
    if tp is not None:
        return [(f, _INTERNAL_DECODERS.get(tp.topic)) for f in _segments(directory)]
    partitions = sorted(
        (tp, os.path.join(directory, name))
        for name in os.listdir(directory)
        if (tp := parse_partition_dir(name)) is not None
        and os.path.isdir(os.path.join(directory, name))
    )
    if not partitions:  # a partition's segments under another name (a copy, a backup)
        return [(f, None) for f in _segments(directory)]
    return [(f, _INTERNAL_DECODERS.get(tp.topic)) for tp, d in partitions for f in _segments(d)]


def _dump_path(path: str, opts: _Options, out: _Out, report: _Report) -> None:
    """A file, or every segment of a partition or data directory (kafka-dump-log takes files)."""
    if not os.path.lexists(path):
        # before its name is judged: a typo is not an "unknown file" (exit 0) to skip
        out.line(f"Dumping {path}")
        out.obj("file", file=path, kind=None)
        report.failed = True
        out.problem(path, "No such file or directory")
        return
    if not os.path.isdir(path):
        _dump_file(path, opts, out, report)
        return
    logs = _directory_logs(path)
    if not logs:
        report.failed = True
        out.problem(path, "no partition directories or log segments in it")
    for file, decoder in logs:
        if decoder is None:
            _dump_file(file, opts, out, report)
        else:
            internal = replace(opts, special=[decoder], print_data=True, deep=True)
            _dump_file(file, internal, out, report)


def _dump(args: argparse.Namespace) -> int:
    opts = _options(args)
    for name in (opts.value_decoder, opts.key_decoder):
        if name not in DECODERS and name not in DEPRECATED_DECODERS:
            known = ", ".join(sorted([*DECODERS, *DEPRECATED_DECODERS]))
            print(
                f"kwire dump: unsupported decoder class {name!r} (known: {known})", file=sys.stderr
            )
            return 2
    if opts.max_bytes < 0 or opts.max_message_size < 0:
        print("kwire dump: --max-bytes and --max-message-size must be >= 0", file=sys.stderr)
        return 2
    out = _Out(sys.stdout, sys.stderr, args.json)
    for name in [n for n in opts.special if n not in RECORD_PARSERS]:
        flag = "--" + name.replace("_", "-")
        out.problem("(options)", f"{flag} is not supported by kwire; data is printed as strings")
    report = _Report()
    try:
        for file in opts.files:
            _dump_path(file, opts, out, report)
        _print_report(report, out)
        sys.stdout.flush()
    except BrokenPipeError:
        # `kwire dump ... | head`: the reader is gone. Point stdout at /dev/null so that the
        # interpreter's final flush does not complain, and stop quietly.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return 0
    return 1 if report.failed else 0


def _dump_file(file: str, opts: _Options, out: _Out, report: _Report) -> None:
    out.line(f"Dumping {file}")
    name = os.path.basename(file)
    dot = name.rfind(".")
    suffix = name[dot:] if dot >= 0 else ""
    kinds = {
        ".log": "log",
        ".checkpoint": "log",
        ".index": "index",
        ".timeindex": "timeindex",
        ".snapshot": "snapshot",
        ".txnindex": "txnindex",
    }
    kind = kinds.get(suffix)
    out.obj("file", file=file, kind=kind)
    if kind is None:
        if out.json:
            out.obj("problem", file=file, message="ignoring unknown file")
        else:
            out.stderr.write(f"Ignoring unknown file {file}\n")
        return
    try:
        if kind == "log":
            _dump_log(file, opts, out, report)
        elif kind == "index":
            _dump_index(file, opts, out, report)
        elif kind == "timeindex":
            _dump_time_index(file, opts, out, report)
        elif kind == "snapshot":
            _dump_snapshot(file, out, report)
        else:
            _dump_txn_index(file, out, report)
    except BrokenPipeError:
        raise
    except OSError as exc:
        report.failed = True
        out.problem(file, exc.strerror or str(exc))
    except KwireError as exc:
        report.failed = True
        out.problem(file, str(exc))


def _base_offset_of(file: str) -> int:
    offset = segment_base_offset(os.path.basename(file))
    if offset is None:
        raise KwireError(f"{os.path.basename(file)} is not named by a base offset")
    return offset


# -- .log -----------------------------------------------------------------------------------------


def _java_bool(value: bool) -> str:
    return "true" if value else "false"


def _is_valid(batch: Batch) -> bool:
    """Kafka's ``isValid``: the stored CRC matches (records are not decoded)."""
    check = getattr(batch, "is_valid", None)
    if check is not None:
        return bool(check())
    try:
        batch.verify()
    except KwireError:
        return False
    return True


def _delete_horizon(batch: Batch) -> int | None:
    if batch.magic >= 2 and batch.has_delete_horizon:
        return batch.base_timestamp
    return None


def _batch_fields(batch: Batch, position: int) -> dict[str, Any]:
    return {
        "baseOffset": batch.base_offset,
        "lastOffset": batch.last_offset,
        "count": batch.record_count if batch.magic >= 2 else None,
        "baseSequence": batch.base_sequence,
        "lastSequence": batch.last_sequence,
        "producerId": batch.producer_id,
        "producerEpoch": batch.producer_epoch,
        "partitionLeaderEpoch": batch.partition_leader_epoch,
        "isTransactional": batch.is_transactional,
        "isControl": batch.is_control,
        "deleteHorizonMs": _delete_horizon(batch),
        "position": position,
        "timestampType": _TIMESTAMP_TYPES.get(batch.timestamp_type, str(batch.timestamp_type)),
        "maxTimestamp": batch.max_timestamp,
        "size": batch.size,
        "magic": batch.magic,
        "compresscodec": Compression(batch.compression).name.lower(),
        "crc": batch.crc,
        "isvalid": _is_valid(batch),
    }


def _batch_line(f: dict[str, Any]) -> str:
    if f["magic"] >= 2:
        horizon = f["deleteHorizonMs"]
        head = (
            f"baseOffset: {f['baseOffset']} lastOffset: {f['lastOffset']} count: {f['count']} "
            f"baseSequence: {f['baseSequence']} lastSequence: {f['lastSequence']} "
            f"producerId: {f['producerId']} producerEpoch: {f['producerEpoch']} "
            f"partitionLeaderEpoch: {f['partitionLeaderEpoch']} "
            f"isTransactional: {_java_bool(f['isTransactional'])} "
            f"isControl: {_java_bool(f['isControl'])} deleteHorizonMs: "
            + ("OptionalLong.empty" if horizon is None else f"OptionalLong[{horizon}]")
        )
    else:
        head = f"offset: {f['lastOffset']}"
    return (
        f"{head} position: {f['position']} {f['timestampType']}: {f['maxTimestamp']} "
        f"size: {f['size']} magic: {f['magic']} compresscodec: {f['compresscodec']} "
        f"crc: {f['crc']} isvalid: {_java_bool(f['isvalid'])}"
    )


def _legacy_inner(batch: Batch) -> list[tuple[bool, int]]:
    """(isValid, crc) of each record of a magic 0/1 batch, as Kafka's deep legacy entries show."""
    if not batch.compression:
        return [(_is_valid(batch), batch.crc)]
    try:
        batch.verify()
        valid = True
    except KwireError:
        valid = False
    if not isinstance(batch, LegacyBatch):
        return [(valid, -1)] * batch.record_count
    return [(valid, entry.crc) for entry in batch.inner_entries()]


def _kraft_json(value: object) -> Any:
    """A decoded KRaft control value as Kafka's JsonConverter writes it, or None if undecodable.

    ``decode_control_record`` reads it as Kafka's ``ControlRecordUtils`` does (the message at
    version 0, no prefix); the JSON uses the message's own ``version`` field.
    """
    if not isinstance(value, KafkaMessage):
        return None
    return value.to_json(getattr(value, "version", 0))


def _control_text(record: Record) -> tuple[str, dict[str, Any]]:
    control = decode_control_record(record)
    value = control.value
    if control.type in (ControlRecordType.ABORT, ControlRecordType.COMMIT) and isinstance(
        value, EndTransactionMarker
    ):
        text = f" endTxnMarker: {control.type.name} coordinatorEpoch: {value.coordinator_epoch}"
        return text, {
            "endTxnMarker": control.type.name,
            "coordinatorEpoch": value.coordinator_epoch,
        }
    label = _KRAFT_LABELS.get(control.type)
    doc = None if label is None else _kraft_json(value)
    if label is not None and doc is not None:
        # Kafka: "<Label> " + <Message>JsonConverter.write(message, message.version()), as compact
        # JSON (Jackson's JsonNode.toString).
        text = f" {label} {json.dumps(doc, separators=(',', ':'), ensure_ascii=False)}"
        return text, {"controlType": control.type.name, label: doc}
    text = f" controlType: {control.type.name}({control.type_id})"
    return text, {"controlType": control.type.name, "controlTypeId": control.type_id}


def _record_output(
    batch: Batch,
    record: Record,
    legacy: tuple[bool, int] | None,
    opts: _Options,
    key_decoder: Decoder,
    value_decoder: Decoder,
) -> tuple[str, dict[str, Any]]:
    ts_type = _TIMESTAMP_TYPES.get(batch.timestamp_type, str(batch.timestamp_type))
    key_size = -1 if record.key is None else len(record.key)
    value_size = -1 if record.value is None else len(record.value)
    fields: dict[str, Any] = {
        "offset": record.offset,
        "timestampType": ts_type,
        "timestamp": record.timestamp,
        "keySize": key_size,
        "valueSize": value_size,
    }
    prefix = f"{_RECORD_INDENT} "
    text = ""
    if not opts.skip_metadata:
        text += (
            f"{prefix}offset: {record.offset} {ts_type}: {record.timestamp} "
            f"keySize: {key_size} valueSize: {value_size}"
        )
        prefix = " "
        if batch.magic >= 2:
            keys = [k for k, _ in record.headers]
            text += f" sequence: {record.sequence} headerKeys: [{','.join(keys)}]"
            fields["sequence"] = record.sequence
            fields["headerKeys"] = keys
        if legacy is not None:
            # Kafka's line carries a stray "}" here ("crc: ${r.checksum}}"); kept for fidelity.
            text += f" isValid: {_java_bool(legacy[0])} crc: {legacy[1]}}}"
            fields["isValid"] = legacy[0]
            fields["crc"] = legacy[1]
        if batch.is_control:
            control_text, control_fields = _control_text(record)
            text += control_text
            fields.update(control_fields)
    if opts.print_data and not batch.is_control:
        key, payload = _parse_record(record, opts, key_decoder, value_decoder)
        if key is not None:
            text += f"{prefix}key: {key}"
            prefix = " "
            fields["key"] = key
        if payload is not None:
            text += f" payload: {payload}"
            fields["payload"] = payload
    return text, fields


def _dump_log(file: str, opts: _Options, out: _Out, report: _Report) -> None:
    key_decoder: Decoder = java_string
    value_decoder: Decoder = java_string
    if opts.print_data and not opts.special:
        value_decoder = _resolve_decoder(opts.value_decoder, out)
        key_decoder = _resolve_decoder(opts.key_decoder, out)
    name = os.path.basename(file)
    if name.endswith(".log"):
        start = _base_offset_of(file)
        out.line(f"Log starting offset: {start}")
        out.obj("log", file=file, startOffset=start)
    elif name == "bootstrap.checkpoint":
        out.line("KRaft bootstrap snapshot")
    else:
        stem = name[: -len(".checkpoint")]
        offset, _, epoch = stem.partition("-")
        if offset.isdigit() and epoch.isdigit():
            out.line(f"Snapshot end offset: {int(offset)}, epoch: {int(epoch)}")
    abs_path = os.path.abspath(file)
    last_offset = -1
    with MappedFile(file) as mapped:
        limit = min(len(mapped.view), opts.max_bytes)
        scan = scan_batches(mapped.view[:limit], source=file, verify_crc=False)
        for batch in scan:
            try:
                fields = _batch_fields(batch, batch.position)
            except KwireError as exc:  # e.g. a legacy wrapper whose inner set cannot be read
                report.failed = True
                out.problem(
                    file,
                    f"cannot read the batch at position {batch.position}: {exc}",
                    position=batch.position,
                )
                continue
            if not fields["isvalid"]:
                report.failed = True
            out.line(_batch_line(fields))
            out.obj("batch", file=file, **fields)
            if not opts.deep:
                continue
            try:
                legacy = _legacy_inner(batch) if batch.magic < 2 else None
                for i, record in enumerate(batch):
                    if last_offset != -1 and record.offset != last_offset + 1:
                        pairs = report.non_consecutive.setdefault(abs_path, [])
                        pairs.insert(0, (last_offset, record.offset))
                    last_offset = record.offset
                    entry = None if legacy is None else legacy[min(i, len(legacy) - 1)]
                    text, rfields = _record_output(
                        batch, record, entry, opts, key_decoder, value_decoder
                    )
                    out.line(text)
                    out.obj("record", file=file, **rfields)
            except (KwireError, ValueError) as exc:
                report.failed = True
                out.problem(
                    file,
                    f"cannot read the records of the batch at position {batch.position}: {exc}",
                    position=batch.position,
                )
        trailing = 0
        for skipped in scan.skipped:
            at_limit = skipped.position + skipped.length >= limit
            if limit < len(mapped.view) and at_limit and skipped.reason.startswith("truncated"):
                continue  # --max-bytes cut a batch: Kafka stops there silently
            report.failed = True
            if at_limit:
                trailing += skipped.length
            out.problem(
                file,
                f"skipped {skipped.length} bytes at position {skipped.position}: {skipped.reason}",
                position=skipped.position,
                length=skipped.length,
                reason=skipped.reason,
            )
        if trailing and opts.max_bytes == INT32_MAX:
            out.line(f"Found {trailing} invalid bytes at the end of {name}")


# -- indexes --------------------------------------------------------------------------------------


def _dump_index(file: str, opts: _Options, out: _Out, report: _Report) -> None:
    base = _base_offset_of(file)
    data = read_small_file(file)
    log_path = segment_file_beside(file, ".log")
    if not os.path.exists(log_path):
        raise FileNotFoundError(2, f"{log_path} (No such file or directory)")
    if len(data) // 8 == 0:
        out.line(f"{file} is empty.")
        out.obj("index_empty", file=file)
        return
    if opts.sanity_only:
        _sanity(file, offset_index_sanity_problem(data, base, os.path.abspath(file)), out, report)
        return
    with MappedFile(log_path) as log:
        checks = walk_offset_index(data, log.view, base, max_message_size=opts.max_message_size)
    abs_path = os.path.abspath(file)
    for check in checks:
        log_offset = -1 if check.log_offset is None else check.log_offset
        if log_offset != check.entry.offset:
            report.failed = True
            report.index_mismatches.setdefault(abs_path, []).insert(
                0, (check.entry.offset, log_offset)
            )
            if check.problem is not None:
                out.problem(file, f"index entry {check.entry}: {check.problem}")
        if not opts.verify_only:
            out.line(f"offset: {check.entry.offset} position: {check.entry.position}")
            out.obj(
                "index_entry",
                file=file,
                offset=check.entry.offset,
                position=check.entry.position,
                logOffset=check.log_offset,
            )


def _sanity(file: str, problem: str | None, out: _Out, report: _Report) -> None:
    if problem is None:
        out.line(f"{file} passed sanity check.")
        out.obj("sanity_check", file=file, passed=True)
        return
    report.failed = True
    if out.json:
        out.obj("sanity_check", file=file, passed=False, message=problem)
    else:
        # Kafka's tool dies here with CorruptIndexException carrying this message.
        out.stderr.write(
            f"org.apache.kafka.storage.internals.log.CorruptIndexException: {problem}\n"
        )


def _dump_time_index(file: str, opts: _Options, out: _Out, report: _Report) -> None:
    base = _base_offset_of(file)
    data = read_small_file(file)
    log_path = segment_file_beside(file, ".log")
    if not os.path.exists(log_path):
        raise FileNotFoundError(2, f"{log_path} (No such file or directory)")
    index_path = segment_file_beside(file, ".index")
    index = read_small_file(index_path) if os.path.exists(index_path) else b""
    if opts.sanity_only:
        _sanity(file, time_index_sanity_problem(data, base, os.path.abspath(file)), out, report)
        return
    with MappedFile(log_path) as log:
        checks = walk_time_index(data, index, log.view, base)
    abs_path = os.path.abspath(file)
    prev = -1
    for check in checks:
        entry = check.entry
        if check.log_offset is None or check.log_offset != entry.offset:
            report.failed = True
            found = -1 if check.log_offset is None else check.log_offset
            report.time_not_found.setdefault(abs_path, []).append((entry.offset, found))
        else:
            log_ts = -1 if check.log_max_timestamp is None else check.log_max_timestamp
            if log_ts != entry.timestamp:
                report.failed = True
                report.time_mismatches.setdefault(abs_path, []).append((entry.timestamp, log_ts))
            if prev >= entry.timestamp:
                report.failed = True
                report.time_out_of_order.setdefault(abs_path, []).append((entry.timestamp, prev))
        if not opts.verify_only:
            out.line(f"timestamp: {entry.timestamp} offset: {entry.offset}")
            out.obj(
                "time_index_entry",
                file=file,
                timestamp=entry.timestamp,
                offset=entry.offset,
                logOffset=check.log_offset,
                logMaxTimestamp=check.log_max_timestamp,
            )
        prev = entry.timestamp


# -- txnindex and snapshots -----------------------------------------------------------------------


def _dump_txn_index(file: str, out: _Out, report: _Report) -> None:
    _base_offset_of(file)
    index = TransactionIndex(read_small_file(file))
    for t in index.entries:
        out.line(
            f"version: {t.version} producerId: {t.producer_id} firstOffset: {t.first_offset} "
            f"lastOffset: {t.last_offset} lastStableOffset: {t.last_stable_offset}"
        )
        out.obj(
            "aborted_txn",
            file=file,
            version=t.version,
            producerId=t.producer_id,
            firstOffset=t.first_offset,
            lastOffset=t.last_offset,
            lastStableOffset=t.last_stable_offset,
        )
    for problem in index.problems:
        report.failed = True
        out.problem(file, problem)


def _dump_snapshot(file: str, out: _Out, report: _Report) -> None:
    try:
        snapshot = read_producer_snapshot(read_small_file(file))
    except KwireError as exc:
        # Kafka prints the CorruptSnapshotException message to stderr and goes on.
        report.failed = True
        reason = getattr(exc, "reason", str(exc))
        if out.json:
            out.obj("problem", file=file, message=reason)
        else:
            out.stderr.write(reason + "\n")
        return
    for e in snapshot.entries:
        txn = (
            "OptionalLong.empty"
            if e.current_txn_first_offset is None
            else f"OptionalLong[{e.current_txn_first_offset}]"
        )
        text = (
            f"producerId: {e.producer_id} producerEpoch: {e.producer_epoch} "
            f"coordinatorEpoch: {e.coordinator_epoch} currentTxnFirstOffset: {txn} "
            f"lastTimestamp: {e.timestamp} "
        )
        fields: dict[str, Any] = {
            "producerId": e.producer_id,
            "producerEpoch": e.producer_epoch,
            "coordinatorEpoch": e.coordinator_epoch,
            "currentTxnFirstOffset": e.current_txn_first_offset,
            "lastTimestamp": e.timestamp,
        }
        if e.has_batch_metadata:
            text += (
                f"firstSequence: {e.first_sequence} lastSequence: {e.last_sequence} "
                f"lastOffset: {e.last_offset} offsetDelta: {e.offset_delta} "
                f"timestamp: {e.timestamp}"
            )
            fields.update(
                firstSequence=e.first_sequence,
                lastSequence=e.last_sequence,
                lastOffset=e.last_offset,
                offsetDelta=e.offset_delta,
                timestamp=e.timestamp,
            )
        out.line(text)
        out.obj("producer_snapshot_entry", file=file, **fields)


# -- the end-of-run report ------------------------------------------------------------------------


def _print_report(report: _Report, out: _Out) -> None:
    if out.json:
        for path, pairs in report.index_mismatches.items():
            for index_offset, log_offset in pairs:
                out.obj("index_mismatch", file=path, indexOffset=index_offset, logOffset=log_offset)
        for path, pairs in report.time_mismatches.items():
            for index_ts, log_ts in pairs:
                out.obj(
                    "time_index_mismatch", file=path, indexTimestamp=index_ts, logTimestamp=log_ts
                )
        for path, pairs in report.time_out_of_order.items():
            for ts, prev in pairs:
                out.obj(
                    "time_index_out_of_order", file=path, indexTimestamp=ts, previousTimestamp=prev
                )
        for path, pairs in report.time_not_found.items():
            for index_offset, log_offset in pairs:
                out.obj(
                    "time_index_offset_not_found",
                    file=path,
                    indexOffset=index_offset,
                    logOffset=log_offset,
                )
        for path, pairs in report.non_consecutive.items():
            for first, second in pairs:
                out.obj("non_consecutive_offsets", file=path, offset=first, nextOffset=second)
        return
    err = out.stderr
    for path, pairs in report.index_mismatches.items():
        err.write(f"Mismatches in :{path}\n")
        for index_offset, log_offset in pairs:
            err.write(f"  Index offset: {index_offset}, log offset: {log_offset}\n")
    for path, pairs in report.time_mismatches.items():
        err.write(f"Found timestamp mismatch in :{path}\n")
        for index_ts, log_ts in pairs:
            err.write(f"  Index timestamp: {index_ts}, log timestamp: {log_ts}\n")
    for path, pairs in report.time_out_of_order.items():
        err.write(f"Found out of order timestamp in :{path}\n")
        for ts, prev in pairs:
            err.write(f"  Index timestamp: {ts}, Previously indexed timestamp: {prev}\n")
    for pairs in report.time_not_found.values():
        err.write("The following indexed offsets are not found in the log.\n")
        for index_offset, log_offset in pairs:
            err.write(f"Indexed offset: {index_offset}, found log offset: {log_offset}\n")
    for path, pairs in report.non_consecutive.items():
        err.write(f"Non-consecutive offsets in {path}\n")
        for first, second in pairs:
            err.write(f"  {first} is followed by {second}\n")
