"""kwire's extensions of Kafka's protocol: what Kafka never shipped, kept apart from the core.

Approach: each extension is one module that registers itself with the core's one narrow interface,
``kwire.protocol._extension_points`` (a field-encoding registry and a tag-header codec registry),
when it is imported; importing this package (``kwire.protocol`` does) registers both. A spec that
uses neither behaves exactly as Kafka's.

- ``varint_fields``: varint integer fields, a KIP proposal Kafka never shipped.
- ``tag_header``: the interleaved tag header of KIP-482's first draft.
"""

from kwire.protocol.ext import tag_header, varint_fields

__all__ = ["tag_header", "varint_fields"]
