"""kwire: Apache Kafka's wire formats in Python.

Layers, each a subpackage, importing only downwards:
``cli`` -> ``spark`` -> ``log`` -> ``records`` -> ``protocol`` / ``_wire``.
"""

# The error classes load on first use: `import kwire.broker.pytest_plugin` (every pytest run in an
# environment with kwire installed) executes this package and must import nothing.
from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kwire.errors import (
        CorruptRecordError,
        DecodeError,
        EncodeError,
        KwireError,
        UnsupportedCodecError,
        UnsupportedVersionError,
    )

__version__ = "0.1.0"

__all__ = [
    "CorruptRecordError",
    "DecodeError",
    "EncodeError",
    "KwireError",
    "UnsupportedCodecError",
    "UnsupportedVersionError",
    "__version__",
]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from kwire import errors

        return getattr(errors, name)
    raise AttributeError(f"module 'kwire' has no attribute {name!r}")
