"""The ``kwire`` entry point: one argparse parser; each subcommand lives in its own module.

A subcommand module ``kwire.cli._<name>`` exposes ``register(subparsers)``, which adds its parser and
sets ``func`` (taking the parsed namespace, returning an exit code). Add new modules to
``_COMMANDS``; they are imported lazily so ``kwire --help`` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from kwire.errors import DecodeError, KwireError

_COMMANDS: tuple[str, ...] = (
    "run",
    "codegen",
    "demo",
    "dump",
    "spec_check",
    "sample",
    "pipeline",
    "size_report",
    "broker",
)

EXIT_OK = 0
EXIT_DECODE_ERROR = 1
EXIT_USAGE = 2


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kwire", description="Read, write, check and convert Apache Kafka's wire formats."
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    subparsers.required = True
    for name in _COMMANDS:
        module = importlib.import_module(f"kwire.cli._{name}")
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code: int = args.func(args)
    except DecodeError as exc:
        print(f"kwire: decode error: {exc}", file=sys.stderr)
        return EXIT_DECODE_ERROR
    except KwireError as exc:
        print(f"kwire: error: {exc}", file=sys.stderr)
        return EXIT_DECODE_ERROR
    except BrokenPipeError:  # `kwire dump ... | head`
        return EXIT_OK
    return code
