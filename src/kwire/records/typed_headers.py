"""Opt-in typed header values (KIP-82 draft, a kwire extension); see ``_typed_headers``."""

from kwire.records._typed_headers import (
    HeaderType,
    TypedValue,
    decode_headers,
    decode_value,
    encode_headers,
    encode_value,
)

__all__ = [
    "HeaderType",
    "TypedValue",
    "decode_headers",
    "decode_value",
    "encode_headers",
    "encode_value",
]
