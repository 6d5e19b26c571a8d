"""The interleaved tag header of KIP-482's first draft, as a kwire extension.

Approach: ``"tagHeader": "interleaved"`` at the top of a spec file (or
``load_specs(..., tag_header="interleaved")``) writes each tagged field's header as one unsigned
varlong whose even bits are the length and odd bits the tag, as KIP-482's first draft had it,
instead of Kafka's two unsigned varints. The extension plugs into the core through
``kwire.protocol._extension_points``: one ``TagHeaderCodec`` registered under ``"interleaved"``,
naming the fast-path helpers below (which generated code imports instead of
``read_tagged_fields``/``write_tagged_fields``) and giving the reference decoder its checked read.
"""

from __future__ import annotations

from typing import Any, Final

from kwire._wire import read_uvarint, read_uvarlong, write_uvarint
from kwire.protocol._extension_points import CheckedReader, register_tag_header
from kwire.protocol._primitives import Malformed
from kwire.protocol._primitives import write_uvarint as write_uvarint_inline

__all__ = [
    "INTERLEAVED",
    "InterleavedTagHeader",
    "interleave",
    "read_interleaved_tag_header",
    "read_interleaved_tagged_fields",
    "uninterleave",
    "write_interleaved_tagged_fields",
]

INTERLEAVED: Final = "interleaved"


_M = (
    (0x0000FFFF0000FFFF, 16),
    (0x00FF00FF00FF00FF, 8),
    (0x0F0F0F0F0F0F0F0F, 4),
    (0x3333333333333333, 2),
    (0x5555555555555555, 1),
)


def _spread(x: int) -> int:
    """Move bit i of a 32-bit value to bit 2i."""
    for mask, shift in _M:
        x = (x | (x << shift)) & mask
    return x


def _gather(x: int) -> int:
    """Inverse of ``_spread``: bit 2i to bit i."""
    x &= 0x5555555555555555
    x = (x | (x >> 1)) & 0x3333333333333333
    x = (x | (x >> 2)) & 0x0F0F0F0F0F0F0F0F
    x = (x | (x >> 4)) & 0x00FF00FF00FF00FF
    x = (x | (x >> 8)) & 0x0000FFFF0000FFFF
    return (x | (x >> 16)) & 0xFFFFFFFF


def interleave(tag: int, length: int) -> int:
    """The interleaved tag header value: length bits at even positions, tag bits at odd ones."""
    if not (0 <= tag <= 0xFFFFFFFF and 0 <= length <= 0xFFFFFFFF):
        raise ValueError(f"tag {tag} and length {length} must be 32-bit unsigned values")
    return _spread(length) | (_spread(tag) << 1)


def uninterleave(header: int) -> tuple[int, int]:
    """``(tag, length)`` from an interleaved tag header."""
    return _gather(header >> 1), _gather(header)


def read_interleaved_tag_header(b: Any, p: int) -> tuple[int, int, int]:
    """An interleaved tag header: ``(tag, size, new position)``."""
    x = b[p]
    if x < 0x80:
        # one byte: length bits 0, 2, 4, 6 -> 0..3; tag bits 1, 3, 5 -> 0..2
        return (
            ((x >> 1) & 1) | ((x >> 2) & 2) | ((x >> 3) & 4),
            (x & 1) | ((x >> 1) & 2) | ((x >> 2) & 4) | ((x >> 3) & 8),
            p + 1,
        )
    h, p = read_uvarlong(b, p)
    tag, size = uninterleave(h)
    return tag, size, p


def read_interleaved_tagged_fields(b: Any, p: int) -> tuple[dict[int, bytes] | None, int]:
    """``read_tagged_fields`` for interleaved tag headers."""
    n = b[p]
    if n < 0x80:
        p += 1
    else:
        n, p = read_uvarint(b, p)
    if n == 0:
        return None, p
    ut: dict[int, bytes] = {}
    for _ in range(n):
        tag, size, p = read_interleaved_tag_header(b, p)
        e = p + size
        if e > len(b) or tag in ut:
            raise Malformed
        ut[tag] = bytes(b[p:e])
        p = e
    return ut, p


def write_interleaved_tagged_fields(
    out: bytearray, tags: list[tuple[int, Any]], unknown: dict[int, bytes] | None
) -> None:
    """``write_tagged_fields`` with interleaved tag headers."""
    if unknown:
        known = {t for t, _ in tags}
        for t in unknown:
            if t in known:
                raise Malformed
        tags = sorted([*tags, *unknown.items()], key=_first)
    write_uvarint_inline(out, len(tags))
    for tag, data in tags:
        write_uvarint(out, interleave(tag, len(data)))
        out += data


def _first(item: tuple[int, Any]) -> int:
    return item[0]


class InterleavedTagHeader:
    """The ``TagHeaderCodec`` of the interleaved tag header."""

    name: Final = INTERLEAVED
    helpers: Final = (
        __name__,
        "read_interleaved_tagged_fields",
        "write_interleaved_tagged_fields",
        "read_interleaved_tag_header",
    )

    def read_checked(
        self, reader: CheckedReader, pos: int, end: int, path: str
    ) -> tuple[int, int, int]:
        h, pos = reader.uvarint(pos, end, path, "interleaved tag header", 10)
        tag, size = uninterleave(h)
        return tag, size, pos


register_tag_header(InterleavedTagHeader())
