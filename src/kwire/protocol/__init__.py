"""kwire.protocol: Kafka's RPC protocol, every API and version, generated from Kafka's JSON specs.

Sans-IO: bytes in, objects out (and back). Public names (see docs/protocol.md):

- ``message_class(name)`` / ``message_class(api_key=3, kind="response")``: a generated class;
  ``cls.decode(data, version)``, ``msg.encode(version)``, ``msg.encode_into(buf, version)``,
  ``msg.to_json(version)``, ``cls.from_json(obj, version)``. Typed ``type[AnyMessage]``
  (``struct_class``: ``type[AnyStruct]``), whose fields mypy cannot know; the classes of
  ``kwire.protocol.messages`` have typed fields, and mypy checks their names.
- ``load_specs(path)``: a ``ProtocolRegistry`` for any Kafka spec directory (same ``message_class``).
- ``inspect(cls_or_name, version)``: the ``KField`` metadata of the fields present at a version;
  ``struct_class(cls, *fields)``: the class of a nested struct (to build messages).
- ``fast_path_fallbacks()``: how often generated code failed where the reference succeeded (a bug;
  each one also warns ``FastPathFallbackWarning``, or raises under ``KWIRE_STRICT_FASTPATH=1``).
- ``RecordsReference``: records a frame refers to (zero-copy sends) instead of holding.
- frames: ``encode_request_frame``, ``decode_request_frame``, ``encode_response_frame``,
  ``decode_response_frame``, ``request_header_version``, ``response_header_version``,
  ``ClientConnection``, ``ServerConnection``, ``FrameReader`` (the one frame cutter: the
  client's, the broker's; a bad size prefix raises ``kwire.errors.FrameSizeError``).
- ``ErrorCode``: Kafka's error codes (an IntEnum; decoding never raises for a response's code).
- spec model: ``message_spec(name)``, ``iter_message_versions()``, ``bundled_specs()``,
  ``VersionRange``, ``MessageSpec``, ``StructSpec``, ``FieldSpec``, ``SpecError``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from kwire._lazy import lazy_getattr

# kwire's extensions of the protocol register themselves with the core (see kwire.protocol.ext)
from kwire.protocol import ext  # noqa: F401  (imported for its registrations)
from kwire.protocol._bundled import bundled_specs, iter_message_versions, message_spec, spec_source
from kwire.protocol._error_codes import ErrorCode
from kwire.protocol._frames import (
    ClientConnection,
    FrameReader,
    Request,
    Response,
    ServerConnection,
    decode_request_frame,
    decode_response_frame,
    encode_request_frame,
    encode_response_frame,
    request_header_version,
    response_header_version,
)
from kwire.protocol._primitives import RecordsReference
from kwire.protocol._reference import uuid_from_str, uuid_to_str
from kwire.protocol._registry import (
    ProtocolRegistry,
    inspect,
    load_specs,
    message_class,
    struct_class,
)
from kwire.protocol._runtime import (
    ZERO_UUID,
    AnyMessage,
    AnyStruct,
    KafkaMessage,
    KafkaStruct,
    KField,
    fast_path_fallbacks,
)
from kwire.protocol._spec._versions import VersionRange

if TYPE_CHECKING:
    from kwire.protocol._spec import (
        FieldSpec,
        FieldType,
        MessageSpec,
        SpecError,
        StructSpec,
        snake_case,
    )

__all__ = [
    "ZERO_UUID",
    "AnyMessage",
    "AnyStruct",
    "ClientConnection",
    "ErrorCode",
    "FieldSpec",
    "FieldType",
    "FrameReader",
    "KField",
    "KafkaMessage",
    "KafkaStruct",
    "MessageSpec",
    "ProtocolRegistry",
    "RecordsReference",
    "Request",
    "Response",
    "ServerConnection",
    "SpecError",
    "StructSpec",
    "VersionRange",
    "bundled_specs",
    "decode_request_frame",
    "decode_response_frame",
    "encode_request_frame",
    "encode_response_frame",
    "fast_path_fallbacks",
    "inspect",
    "iter_message_versions",
    "load_specs",
    "message_class",
    "message_spec",
    "request_header_version",
    "response_header_version",
    "snake_case",
    "spec_source",
    "struct_class",
    "uuid_from_str",
    "uuid_to_str",
]

#: The spec model's names, imported on first use: a broker or client answers without the model
#: (the generated codecs carry what the wire needs), so importing kwire.protocol skips its loader.
_SPEC_MODEL: Final = frozenset(
    ("FieldSpec", "FieldType", "MessageSpec", "SpecError", "StructSpec", "snake_case")
)


__getattr__ = lazy_getattr(globals(), "kwire.protocol", dict.fromkeys(_SPEC_MODEL, "_spec"))
