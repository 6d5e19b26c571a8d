"""kwire: Apache Kafka's wire formats in Python.

Layers, each a subpackage, importing only downwards:
``cli`` -> ``spark`` -> ``log`` -> ``records`` -> ``protocol`` / ``_wire``.
"""

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
