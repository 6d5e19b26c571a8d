"""``kwire codegen``: regenerate, check, or show the generated protocol code.

kwire codegen --check              # exit 1 if protocol/_generated differs from the generator
kwire codegen --write              # rewrite protocol/_generated from protocol/specs
kwire codegen MetadataResponse 12  # print the decode/encode functions of one message version
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "codegen",
        help="regenerate, check or show the generated protocol code",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="fail if the committed code is stale")
    mode.add_argument("--write", action="store_true", help="rewrite the committed code")
    mode.add_argument(
        "--reference", action="store_true", help="print a markdown reference of the messages"
    )
    parser.add_argument("message", nargs="?", help="a message name, e.g. MetadataResponse")
    parser.add_argument("version", nargs="?", type=int, help="the message version to show")
    parser.add_argument("--spec-dir", type=Path, help="a Kafka spec directory (default: bundled)")
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from kwire.protocol._codegen import RuffNotFoundError, specialised_source
    from kwire.protocol._spec import load_spec_dir

    if args.check or args.write:
        if args.message is not None:
            print("kwire codegen: --check/--write take no message", file=sys.stderr)
            return EXIT_USAGE
        try:
            return _check_or_write(args)
        except RuffNotFoundError as exc:
            print(f"kwire codegen: {exc}", file=sys.stderr)
            return EXIT_FAILED
    if args.reference:
        from kwire.protocol._codegen._reference import render_message, render_reference

        if args.spec_dir is not None:
            ref_specs = load_spec_dir(args.spec_dir)
            described = f"the specs in {args.spec_dir}"
        else:
            from kwire.protocol import bundled_specs, spec_source

            ref_specs = bundled_specs()
            described = f"Kafka {spec_source().get('kafka_version', '?')}"
        if args.message is None:
            sys.stdout.write(render_reference(ref_specs.values(), described))
            return EXIT_OK
        if args.message not in ref_specs:
            print(f"kwire codegen: no message named {args.message!r}", file=sys.stderr)
            return EXIT_USAGE
        sys.stdout.write(render_message(ref_specs[args.message]))
        return EXIT_OK
    if args.message is None or args.version is None:
        print("kwire codegen: give --check, --write, or MESSAGE VERSION", file=sys.stderr)
        return EXIT_USAGE
    if args.spec_dir is not None:
        specs = load_spec_dir(args.spec_dir)
    else:
        from kwire.protocol import bundled_specs

        specs = bundled_specs()
    spec = specs.get(args.message)
    if spec is None:
        print(f"kwire codegen: no message named {args.message!r}", file=sys.stderr)
        return EXIT_USAGE
    if args.version not in spec.valid_versions:
        print(
            f"kwire codegen: {spec.name} has no version {args.version} (valid: {spec.valid_versions})",
            file=sys.stderr,
        )
        return EXIT_USAGE
    sys.stdout.write(specialised_source(spec, args.version))
    return EXIT_OK


def _check_or_write(args: argparse.Namespace) -> int:
    from kwire.protocol._codegen import check_generated, write_generated

    if args.write:
        changed = write_generated(args.spec_dir)
        print(
            f"kwire codegen: {len(changed)} files written"
            if changed
            else "kwire codegen: up to date"
        )
        return EXIT_OK
    problems = check_generated(args.spec_dir)
    for p in problems:
        print(f"kwire codegen: {p}", file=sys.stderr)
    if problems:
        print("kwire codegen: run `kwire codegen --write`", file=sys.stderr)
        return EXIT_FAILED
    print("kwire codegen: generated code is up to date")
    return EXIT_OK
