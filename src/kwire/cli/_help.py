"""The help formatters of kwire's parsers: argparse's, with the terminal's width found without
``shutil``.

argparse makes a formatter for every ``add_argument`` (to check the metavar) and, with no width
given, imports ``shutil`` (and with it ``bz2``, ``lzma``, ``fnmatch``) to ask the terminal's
size: a cost every ``kwire broker`` start paid for help it never prints. The width here follows
``shutil.get_terminal_size``: ``COLUMNS`` when set, else the terminal's, else 80.
"""

from __future__ import annotations

import argparse
import os
import sys

__all__ = ["DefaultsHelpFormatter", "HelpFormatter"]


def terminal_columns() -> int:
    """``shutil.get_terminal_size().columns``: ``COLUMNS`` if a positive number, else the size
    of the terminal on standard output, else 80."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


class HelpFormatter(argparse.HelpFormatter):
    def __init__(
        self,
        prog: str,
        indent_increment: int = 2,
        max_help_position: int = 24,
        width: int | None = None,
    ) -> None:
        width = terminal_columns() - 2 if width is None else width
        super().__init__(prog, indent_increment, max_help_position, width)


class DefaultsHelpFormatter(HelpFormatter, argparse.ArgumentDefaultsHelpFormatter):
    """``ArgumentDefaultsHelpFormatter`` with the width of ``HelpFormatter``."""
