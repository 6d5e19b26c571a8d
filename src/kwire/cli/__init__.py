"""kwire's command line: argument parsing and output formatting over the public API, nothing more.

Exit codes: 0 ok, 1 a decode error (or a check that found problems), 2 a usage error.
"""

from kwire.cli._main import main

__all__ = ["main"]
