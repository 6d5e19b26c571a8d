"""``kwire run``: kwire's main job on its embedded default (what ``make run`` calls).

For now the protocol demonstration of ``kwire demo``; the Spark pipeline takes this over (issue 4).
"""

from __future__ import annotations

import argparse
from typing import Any


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("run", help="run kwire's main job on its embedded default")
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from kwire.cli._demo import demo

    return demo()
