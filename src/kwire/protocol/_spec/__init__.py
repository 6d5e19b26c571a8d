"""kwire's model of Kafka's JSON message-spec language: version ranges, specs, loader, validator.

Runtime-importable (no code generation needed): the code generator, the runtime interpreters and
the tests all use it. ``load_spec_dir`` / ``parse_spec`` raise ``SpecError`` naming file and field.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from kwire._lazy import lazy_getattr
from kwire.protocol._spec._versions import MAX_VERSION, NONE, VersionRange

if TYPE_CHECKING:
    from kwire.protocol._spec._loader import (
        SpecError,
        load_spec_dir,
        load_spec_file,
        parse_spec,
        strip_comments,
    )
    from kwire.protocol._spec._model import (
        FIXED_TYPES,
        INT_RANGES,
        STRUCT_DEFAULT,
        FieldSpec,
        FieldType,
        MessageSpec,
        StructSpec,
        camel_case,
        parse_default,
        python_attr,
        snake_case,
    )

__all__ = [
    "FIXED_TYPES",
    "INT_RANGES",
    "MAX_VERSION",
    "NONE",
    "STRUCT_DEFAULT",
    "FieldSpec",
    "FieldType",
    "MessageSpec",
    "SpecError",
    "StructSpec",
    "VersionRange",
    "camel_case",
    "load_spec_dir",
    "load_spec_file",
    "parse_default",
    "parse_spec",
    "python_attr",
    "snake_case",
    "strip_comments",
]

#: Public name -> its module. The loader and the model are imported on the first use of one of
#: their names: the generated codecs and the runtime need only ``VersionRange``, and a broker
#: answers its first requests without either (their import is a tenth of its start).
_HOME: Final = {
    **dict.fromkeys(
        ("SpecError", "load_spec_dir", "load_spec_file", "parse_spec", "strip_comments"), "_loader"
    ),
    **dict.fromkeys(
        (
            "FIXED_TYPES",
            "INT_RANGES",
            "STRUCT_DEFAULT",
            "FieldSpec",
            "FieldType",
            "MessageSpec",
            "StructSpec",
            "camel_case",
            "parse_default",
            "python_attr",
            "snake_case",
        ),
        "_model",
    ),
}


__getattr__ = lazy_getattr(globals(), "kwire.protocol._spec", _HOME)
