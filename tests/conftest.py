"""Settings for the whole test suite.

Strict fast path: a generated decoder or encoder that fails where the reference implementation
(the careful decoder, the encode checker) succeeds is a bug in the generated code. Outside the
tests that costs only speed and a ``FastPathFallbackWarning``; here it raises ``FastPathError`` so
the test that hit it fails. Set in the environment, so subprocesses (the CLI, Spark workers) see it.
"""

from __future__ import annotations

import os

os.environ["KWIRE_STRICT_FASTPATH"] = "1"
