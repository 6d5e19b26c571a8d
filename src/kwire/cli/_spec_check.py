"""``kwire spec-check OLD NEW``: is a spec change a compatible evolution (Kafka's evolution rules)?"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from kwire.protocol.evolution import check_evolution


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "spec-check",
        help="check that NEW specs are a compatible evolution of OLD specs",
        description=(
            "Compare two Kafka message-spec files or directories (matched by file name) and list "
            "every violation of the evolution rules (exit 1 if any), removed versions or messages, "
            "and the compatible changes."
        ),
    )
    parser.add_argument("old", type=Path, help="the baseline spec file or directory")
    parser.add_argument("new", type=Path, help="the changed spec file or directory")
    parser.add_argument("--json", action="store_true", help="one JSON object per finding")
    parser.add_argument(
        "--strict", action="store_true", help="treat removed versions or messages as violations"
    )
    parser.add_argument("--violations-only", action="store_true", help="list violations only")
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    for p in (args.old, args.new):
        if not p.exists():
            print(f"kwire spec-check: {p}: no such file or directory", file=sys.stderr)
            return 2
    if args.old.is_dir() != args.new.is_dir():
        print("kwire spec-check: compare two files or two directories", file=sys.stderr)
        return 2
    report = check_evolution(args.old, args.new)
    findings = report.violations if args.violations_only else report.findings
    if args.json:
        for f in findings:
            print(json.dumps(f.to_json()))
    else:
        for f in findings:
            where = f"{f.file} {f.message}" + (f".{f.field}" if f.field else "")
            versions = f" [v{f.versions}]" if f.versions else ""
            print(f"{f.kind.upper():9} {f.rule:36} {where}{versions}: {f.detail}")
        print(
            f"{len(report.violations)} violation(s), {len(report.removals)} removal(s), "
            f"{len(report.changes)} compatible change(s)"
        )
    return 0 if report.ok(strict=args.strict) else 1
