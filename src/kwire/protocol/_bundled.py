"""The bundled Kafka specs (``protocol/specs/``, Kafka 3.9.1 + 4.3.1) as spec models, loaded once, lazily.

``bundled_specs()`` parses every JSON file (about 50 ms) on first use; ``message_spec(name)`` and
``iter_message_versions()`` are the helpers tests and tools use to walk every (message, version).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathlib import Path

    from kwire.protocol._spec import MessageSpec

    SPEC_DIR: Path

__all__ = ["SPEC_DIR", "bundled_specs", "iter_message_versions", "message_spec", "spec_source"]


@functools.cache
def _spec_dir() -> Path:
    # pathlib (with urllib.parse) is imported when a spec file is read, not by a broker's start
    from pathlib import Path

    return Path(__file__).resolve().parent / "specs"


def __getattr__(name: str) -> Any:
    if name == "SPEC_DIR":  # the bundled specs' directory, a Path
        return _spec_dir()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@functools.cache
def bundled_specs() -> dict[str, MessageSpec]:
    """Every bundled spec by message name (``MetadataResponse``, ``RequestHeader``...)."""
    from kwire.protocol._spec import load_spec_dir  # the loader only when a spec is asked for

    return load_spec_dir(_spec_dir())


def message_spec(name: str) -> MessageSpec:
    """The spec model of one bundled message; ``KeyError`` if there is none of that name."""
    return bundled_specs()[name]


def iter_message_versions(*, kinds: tuple[str, ...] | None = None) -> Iterator[tuple[str, int]]:
    """Every ``(message name, version)`` bundled, sorted by name; ``kinds`` filters spec types
    (``("request", "response")``; default: all, headers and data types included)."""
    for name, spec in sorted(bundled_specs().items()):
        if kinds is None or spec.type in kinds:
            for v in spec.versions():
                yield name, v


@functools.cache
def spec_source() -> dict[str, str]:
    """The ``SOURCE`` file of the bundled specs as a dict (``kafka_version``, ``jar_sha256``...)."""
    out: dict[str, str] = {}
    for line in (_spec_dir() / "SOURCE").read_text().splitlines():
        key, sep, value = line.partition(":")
        if sep:
            out[key.strip()] = value.strip()
    return out
