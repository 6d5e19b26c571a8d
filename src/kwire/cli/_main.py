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

from kwire.cli._help import HelpFormatter
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


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser of every subcommand, or only of ``only`` (a start imports nothing else)."""
    parser = argparse.ArgumentParser(
        prog="kwire",
        description="Read, write, check and convert Apache Kafka's wire formats.",
        formatter_class=HelpFormatter,
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    subparsers.required = True
    for name in _COMMANDS if only is None else (only,):
        module = importlib.import_module(f"kwire.cli._{name}")
        module.register(subparsers)
        if only is not None and hasattr(module, "usage_error"):
            # a command whose usage errors are one line (``kwire broker``): the top-level
            # parser's own ("unrecognized arguments") too
            parser.error = module.usage_error  # type: ignore[method-assign]
    return parser


def _command(argv: Sequence[str]) -> str | None:
    """The subcommand ``argv`` names (``kwire broker ...``), if it starts with one."""
    modules = {name.replace("_", "-"): name for name in _COMMANDS}  # spec-check: _spec_check
    return modules.get(argv[0]) if argv else None


def main(argv: Sequence[str] | None = None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    parser = build_parser(_command(argv))
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
