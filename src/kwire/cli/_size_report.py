"""``kwire size-report``: what varint integer fields (a KIP proposal Kafka never shipped) and
the interleaved tag header of KIP-482's first draft would save, in bytes and in encode/decode time, on realistic messages or on captured frames.

The measuring lives in ``kwire.protocol._sizereport`` (sans-IO); this module reads frame files,
picks the cases and prints a table per case (markdown, so it pastes into docs) or JSON.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kwire.errors import DecodeError

_DEFAULT_CASES = ("metadata:10", "metadata:1000", "metadata:100000")


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "size-report",
        help=(
            "wire sizes and codec times with varint integer fields (a KIP proposal Kafka never "
            "shipped) and the interleaved tag header of KIP-482's first draft"
        ),
        description=(
            "Encode messages under: the last non-flexible version; the flexible version as Kafka "
            "ships it (KIP-482); a new version with varint integer fields (a KIP proposal Kafka "
            "never shipped: a given or suggested set); the interleaved tag header of KIP-482's "
            "first draft; and varints plus that header. Reports "
            "bytes and encode/decode time relative to the shipped form, measured in the same run. "
            "Without --generate or --frames: MetadataResponse for clusters of 10, 1,000 and "
            "100,000 partitions (the motivating case)."
        ),
    )
    parser.add_argument(
        "--generate",
        "-g",
        action="append",
        metavar="NAME[:N]",
        default=[],
        help="a built-in generator: metadata:N (partitions), fetch:N (partitions), apiversions:N",
    )
    parser.add_argument(
        "--frames",
        action="append",
        type=Path,
        default=[],
        metavar="PATH",
        help=(
            "a file of size-prefixed Kafka frames (a capture of one direction of a connection), "
            "or a directory of such files; request frames decode by their header"
        ),
    )
    parser.add_argument(
        "--response",
        metavar="NAME:VERSION",
        help="read --frames as response frames of this message and version (MetadataResponse:12)",
    )
    parser.add_argument(
        "--varint",
        action="append",
        default=[],
        metavar="PATH=ENC",
        help=(
            "a field to write as a varint, as a path of field names from the message root and an "
            "encoding: Topics.Partitions.LeaderId=varint (zigzag) or =unsigned, or a sized form "
            "(varint32, unsigned64...). Default for MetadataResponse: the default set"
        ),
    )
    parser.add_argument(
        "--no-suggest", action="store_true", help="do not measure a suggested varint set"
    )
    parser.add_argument(
        "--repeat", type=int, default=5, help="timing repeats, best kept (0: sizes only)"
    )
    parser.add_argument("--seed", type=int, default=482, help="seed of the generators")
    parser.add_argument("--json", action="store_true", help="one JSON document instead of tables")
    parser.set_defaults(func=_run)


def _iter_frame_files(paths: list[Path]) -> Iterator[Path]:
    for p in paths:
        if p.is_dir():
            yield from sorted(x for x in p.iterdir() if x.is_file())
        else:
            yield p


def _frames(paths: list[Path]) -> Iterator[tuple[str, bytearray]]:
    from kwire.protocol import FrameReader

    for path in _iter_frame_files(paths):
        buf = FrameReader()
        for frame in buf.feed(path.read_bytes()):
            yield str(path), frame
        if buf.buffered:
            raise DecodeError(f"{buf.buffered} bytes after the last whole frame", context=str(path))


def _usage(message: str) -> int:
    print(f"kwire size-report: {message}", file=sys.stderr)
    return 2


def _run(args: argparse.Namespace) -> int:
    from kwire.protocol import decode_request_frame, decode_response_frame, message_class
    from kwire.protocol._sizereport import GENERATORS, generate, report_case

    given: dict[str, str] | None = None
    if args.varint:
        given = {}
        for item in args.varint:
            path, sep, enc = item.partition("=")
            if not sep or not path or not enc:
                return _usage(f"--varint takes PATH=ENCODING, not {item!r}")
            given[path] = enc
    if args.repeat < 0:
        return _usage("--repeat must be 0 or more")

    cases: list[tuple[str, str, list[Any]]] = []
    specs = args.generate or ([] if args.frames else list(_DEFAULT_CASES))
    for item in specs:
        name, _, count = item.partition(":")
        if name not in GENERATORS:
            return _usage(f"no generator {name!r}; choose from {', '.join(GENERATORS)}")
        try:
            n = int(count) if count else None
        except ValueError:
            return _usage(f"{item!r}: N must be an integer")
        if n is not None and n < 1:
            return _usage(f"{item!r}: N must be at least 1")
        message, msgs = generate(name, n, seed=args.seed)
        n_text = f"{n if n is not None else GENERATORS[name][2]:,}"
        title = {
            "metadata": f"MetadataResponse, {n_text} partitions",
            "fetch": f"FetchResponse, {n_text} partitions",
            "apiversions": f"ApiVersionsResponse x {n_text}",
        }[name]
        cases.append((title, message, msgs))

    if args.frames:
        response: tuple[int, int] | None = None
        if args.response:
            rname, _, rver = args.response.partition(":")
            try:
                cls = message_class(rname)
                response = (int(cls.API_KEY or 0), int(rver))
            except (KeyError, ValueError):
                return _usage(
                    f"--response takes a response name and version, not {args.response!r}"
                )
            if cls.__kafka_message__.kind != "response":
                return _usage(f"{rname} is not a response")
        for p in args.frames:
            if not p.exists():
                return _usage(f"{p}: no such file or directory")
        by_message: dict[str, list[Any]] = defaultdict(list)
        for _, frame in _frames(args.frames):
            if response is None:
                msg = decode_request_frame(frame).message
            else:
                msg = decode_response_frame(frame, *response).message
            by_message[type(msg).__name__].append(msg)
        if not by_message:
            return _usage("no frames found")
        for name, msgs in sorted(by_message.items()):
            cases.append((f"{name} from frames ({len(msgs):,} messages)", name, msgs))

    results = []
    for title, message, msgs in cases:
        # the default set applies to its message only; a given set to every message that has it
        results.append(
            report_case(
                title,
                message,
                msgs,
                given=given,
                suggest=not args.no_suggest,
                repeat=args.repeat,
            )
        )
        del msgs
    if args.json:
        print(
            json.dumps(
                {"python": platform.python_version(), "cases": [c.to_json() for c in results]},
                indent=2,
            )
        )
    else:
        for case in results:
            print(render_case(case.to_json()))
    return 0


def _pct(x: float | None) -> str:
    if x is None:
        return "n/a"
    if abs(x) < 0.0005:
        return "0.0%"
    return f"{x * 100:+.1f}%"


def _ratio(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.2f}x"


def render_case(case: dict[str, Any]) -> str:
    """A case's markdown table (as printed and as pasted into docs/size-report.md)."""
    lines = [f"### {case['case']}", ""]
    lines.append("| variant | version | bytes | vs shipped | encode | decode |")
    lines.append("| --- | ---: | ---: | ---: | ---: | ---: |")
    for row in case["variants"]:
        size = "n/a" if row["bytes"] is None else f"{row['bytes']:,}"
        lines.append(
            f"| {row['label']} | v{row['version']} | {size} | {_pct(row.get('bytes_vs_shipped'))} "
            f"| {_ratio(row.get('encode_vs_shipped'))} | {_ratio(row.get('decode_vs_shipped'))} |"
        )
    base = next((r for r in case["variants"] if r["variant"] == "shipped"), None)
    if base is not None and base["encode_seconds"] is not None:
        lines.append("")
        lines.append(
            f"Shipped form: encode {base['encode_seconds'] * 1e3:.3f} ms, decode "
            f"{base['decode_seconds'] * 1e3:.3f} ms (best of the repeats)."
        )
    notes = [f"{r['label']}: {r['note']}" for r in case["variants"] if r["note"]]
    for key, label in (("varints_given", "varint fields"), ("varints_suggested", "suggested")):
        if case[key]:
            fields = ", ".join(f"{p}={e}" for p, e in case[key].items())
            notes.append(f"{label}: {fields}")
    if notes:
        lines.append("")
        lines.extend(f"- {n}" for n in notes)
    lines.append("")
    return "\n".join(lines)
