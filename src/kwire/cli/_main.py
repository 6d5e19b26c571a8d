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
    from kwire import __version__

    parser.add_argument("--version", action="version", version=f"kwire {__version__}")
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
    except ModuleNotFoundError as exc:
        module = (exc.name or "").partition(".")[0]
        extra = _extra_of(module)
        if extra is None:
            raise
        print(
            f"kwire {args.command}: needs the Python module {module!r}, which kwire's {extra} "
            f"extra installs: pip install 'kwire[{extra}]'",
            file=sys.stderr,
        )
        return EXIT_DECODE_ERROR
    return code


#: modules whose distribution is named otherwise
_DISTRIBUTION_OF = {
    "google": "protobuf",
    "grpc_tools": "grpcio-tools",
    "jsonschema_rs": "jsonschema-rs",
}


def _extra_of(module: str) -> str | None:
    """The extra of kwire's metadata that installs ``module`` (the largest, where several do)."""
    import importlib.metadata  # only here: it costs every command's start-up (email, zipfile)
    import re

    wanted = _DISTRIBUTION_OF.get(module, module).lower().replace("_", "-")
    try:
        requires = importlib.metadata.requires("kwire") or []
    except importlib.metadata.PackageNotFoundError:
        return None
    sizes: dict[str, int] = {}
    found: set[str] = set()
    for requirement in requires:
        marker = re.search(r"""extra\s*==\s*["']([^"']+)["']""", requirement)
        if marker is None:
            continue
        extra = marker.group(1)
        sizes[extra] = sizes.get(extra, 0) + 1
        name = re.match(r"[A-Za-z0-9._-]+", requirement)
        if name is not None and name.group(0).lower().replace("_", "-") == wanted:
            found.add(extra)
    return max(found, key=lambda e: sizes[e]) if found else None
