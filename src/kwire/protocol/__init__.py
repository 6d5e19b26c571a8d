"""kwire.protocol: Kafka's RPC protocol, every API and version, generated from Kafka's JSON specs.

Public names (see docs/protocol.md):

- ``message_class(name)`` / ``message_class(api_key=3, kind="response")``: the generated class;
  ``cls.decode(data, version)``, ``msg.encode(version)``, ``msg.to_json(version)``,
  ``cls.from_json(obj, version)``.
- ``load_specs(path)``: a registry for any Kafka spec directory, with the same ``message_class``.
- spec model: ``message_spec(name)``, ``iter_message_versions()``, ``bundled_specs()``,
  ``VersionRange``, ``MessageSpec``, ``StructSpec``, ``FieldSpec``, ``SpecError``.
"""

from kwire.protocol._bundled import bundled_specs, iter_message_versions, message_spec, spec_source
from kwire.protocol._spec import (
    FieldSpec,
    FieldType,
    MessageSpec,
    SpecError,
    StructSpec,
    VersionRange,
    snake_case,
)

__all__ = [
    "FieldSpec",
    "FieldType",
    "MessageSpec",
    "SpecError",
    "StructSpec",
    "VersionRange",
    "bundled_specs",
    "iter_message_versions",
    "message_spec",
    "snake_case",
    "spec_source",
]
