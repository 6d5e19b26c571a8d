"""The one narrow interface through which extensions of Kafka's protocol plug into the core.

Approach: the core (``_runtime``, ``_primitives``, ``_reference``, ``_spec``, ``_codegen``) speaks
only Kafka's protocol. A field wire type Kafka does not have, or a tag-header layout other than
KIP-482's, is an object registered here by the extension that defines it (``kwire.protocol.ext``):

- ``FIELD_ENCODINGS``: wire-type name -> ``FieldEncoding`` (read, write, the reference decoder's
  checked read, the encode check), for integer fields whose wire form is not Kafka's fixed width;
  its ``emit`` hook (a ``FieldEmitter``) writes the generated code's reads and writes of such a
  field into the emitter's code buffer (``CodeWriter``) and declares the module-level constants and
  imports that code needs (``ModuleWriter``), so the code generator emits Kafka's types itself and
  asks the hook for anything else;
- ``FIELD_SPEC_FORMS``: the spec syntax that gives a field such encodings (read by the loader into
  ``FieldSpec.encodings``, with the extra field keys it allows);
- ``TAG_HEADER_CODECS``: tag-header name -> ``TagHeaderCodec`` (the reference decoder's checked
  read of one tag header, and the names of the fast-path helpers generated code imports).

The core looks names up here and knows nothing else about them; a spec that uses no extension
never reaches this module's tables.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias

if TYPE_CHECKING:
    from kwire.protocol._spec._versions import VersionRange

__all__ = [
    "FIELD_ENCODINGS",
    "FIELD_SPEC_FORMS",
    "KAFKA_TAG_HEADER",
    "TAG_HEADER_CODECS",
    "CheckedReader",
    "CodeWriter",
    "FieldEmitter",
    "FieldEncoding",
    "FieldSpecForm",
    "ModuleWriter",
    "TagHeaderCodec",
    "extra_field_keys",
    "register_field_encoding",
    "register_field_spec_form",
    "register_tag_header",
    "tag_header_names",
]

#: Kafka's tag header (KIP-482 as shipped: tag and size as two unsigned varints).
KAFKA_TAG_HEADER = "kip482"


class CheckedReader(Protocol):
    """What the reference decoder offers an extension's checked reads."""

    def uvarint(
        self, pos: int, end: int, path: str, what: str, max_bytes: int = 5, kind: str = ""
    ) -> tuple[int, int]: ...

    def fail(self, reason: str, pos: int, path: str) -> Exception: ...


class CodeWriter(Protocol):
    """The emitter's code buffer: ``code(line)`` appends one line at the current indentation,
    ``with code.block():`` indents the lines written inside it by one level."""

    def __call__(self, line: str = "") -> None: ...

    def block(self) -> AbstractContextManager[None]: ...


class ModuleWriter(Protocol):
    """What the emitter offers for the generated module as a whole."""

    def use(self, module: str, name: str) -> None:
        """Import ``name`` from ``module`` in the generated module."""
        ...

    def table(self, name: str, expression: str) -> str:
        """Define the module-level constant ``name = expression`` (once, however often asked;
        constants are written in name order after Kafka's) and return ``name``."""
        ...


class FieldEmitter(Protocol):
    """The generated code for a ``FieldEncoding``: fragments the emitter asks for, written into its
    code buffer. The generated decode function reads bytes ``b`` at position ``p`` (advancing
    ``p``); the encode function appends to a ``bytearray``. Fragments may use the names every
    generated module imports from ``kwire.protocol._primitives`` (and ``_I32``, a ``>i``
    ``struct.Struct``), plus what they declare through ``ModuleWriter``."""

    @property
    def run_key(self) -> object:
        """Consecutive single-value fields whose encodings have the same non-``None`` key are read
        and written together by ``decode_run`` / ``encode_run``; ``None``: one at a time."""
        ...

    def decode_declarations(self) -> tuple[str, ...]:
        """Local annotations (``"x: Any"``) the decode function declares, once, before the code of
        a single value of this encoding."""
        ...

    def decode(self, code: CodeWriter, mod: ModuleWriter, target: str, b: str) -> None:
        """Read one value into ``target``."""
        ...

    def decode_array(
        self,
        code: CodeWriter,
        mod: ModuleWriter,
        target: str,
        b: str,
        *,
        compact: bool,
        nullable: bool,
        declare: bool,
    ) -> bool:
        """Read a whole array, its count included, into ``target`` (annotating it first when
        ``declare``) and return ``True``; or write nothing and return ``False``: the emitter then
        reads the count into ``n`` (and a null array) itself and asks ``decode_elements``."""
        ...

    def decode_elements(self, code: CodeWriter, mod: ModuleWriter, target: str, b: str) -> None:
        """Read ``n`` elements into the list ``target``."""
        ...

    def decode_run(
        self,
        code: CodeWriter,
        mod: ModuleWriter,
        targets: Sequence[str],
        b: str,
        one_by_one: Callable[[], None],
    ) -> None:
        """Read a run of values (see ``run_key``) into ``targets``; ``one_by_one()`` writes the
        code that reads them one at a time (each through its own ``decode``)."""
        ...

    def encode(self, code: CodeWriter, mod: ModuleWriter, expr: str, out: str) -> None:
        """Append the value of ``expr`` to the ``bytearray`` ``out``."""
        ...

    def encode_elements(self, code: CodeWriter, mod: ModuleWriter, out: str, compact: bool) -> None:
        """Append the array in the local ``a`` (not null), its count included, to ``out``."""
        ...

    def encode_run(
        self,
        code: CodeWriter,
        mod: ModuleWriter,
        exprs: Sequence[str],
        out: str,
        one_by_one: Callable[[], None],
    ) -> None:
        """Append a run of values (see ``run_key``) to ``out``; ``one_by_one()`` writes the code
        that appends them one at a time (each through its own ``encode``)."""
        ...


class FieldEncoding(Protocol):
    """An integer wire type Kafka does not have (one value, or each element of an array)."""

    name: str

    @property
    def emit(self) -> FieldEmitter:
        """The generated code's reads and writes of this wire type (for the code generator)."""
        ...

    def read(self, b: Any, p: int) -> tuple[int, int]: ...
    def read_array(self, b: Any, p: int, n: int) -> tuple[list[int], int]: ...
    def write(self, out: bytearray, v: int) -> None: ...
    def write_array(self, out: bytearray, a: Any) -> None: ...

    def read_checked(self, reader: CheckedReader, pos: int, end: int, path: str) -> tuple[int, int]:
        """The value at ``pos`` and the position after it; ``reader.fail`` on bad bytes."""
        ...

    def why_unwritable(self, v: int) -> str | None:
        """Why ``v`` cannot be written in this wire type (``None`` when it can)."""
        ...


Encodings: TypeAlias = "tuple[tuple[VersionRange, str], ...]"


class FieldSpecForm(Protocol):
    """Spec syntax that gives a field per-version wire types (``FieldSpec.encodings``)."""

    @property
    def keys(self) -> frozenset[str]:
        """Field keys the form reads, beyond Kafka's."""
        ...

    def parse(
        self,
        fail: Callable[[str], Exception],
        obj: dict[str, Any],
        versions: VersionRange,
        parse_type: Callable[[str], Any],
    ) -> tuple[str, Encodings, str] | None:
        """``(type text, encodings, form name)`` when ``obj`` uses this form, else ``None``."""
        ...

    def check_default(
        self, fail: Callable[[str], Exception], default: int, encodings: Encodings
    ) -> None: ...


class TagHeaderCodec(Protocol):
    """A tag-header layout other than Kafka's."""

    @property
    def name(self) -> str: ...

    @property
    def helpers(self) -> tuple[str, str, str, str]:
        """Fast-path helpers generated code imports in place of ``read_tagged_fields``,
        ``write_tagged_fields`` and a single header read: ``(module, read, write, header)``."""
        ...

    def read_checked(
        self, reader: CheckedReader, pos: int, end: int, path: str
    ) -> tuple[int, int, int]:
        """``(tag, size, position after the header)``."""
        ...


FIELD_ENCODINGS: dict[str, FieldEncoding] = {}
FIELD_SPEC_FORMS: list[FieldSpecForm] = []
TAG_HEADER_CODECS: dict[str, TagHeaderCodec] = {}


def register_field_encoding(encoding: FieldEncoding) -> None:
    FIELD_ENCODINGS[encoding.name] = encoding


def register_field_spec_form(form: FieldSpecForm) -> None:
    FIELD_SPEC_FORMS.append(form)


def extra_field_keys() -> frozenset[str]:
    """The field keys the registered spec forms read."""
    return frozenset().union(*(form.keys for form in FIELD_SPEC_FORMS))


def register_tag_header(codec: TagHeaderCodec) -> None:
    TAG_HEADER_CODECS[codec.name] = codec


def tag_header_names() -> tuple[str, ...]:
    """Every tag-header name a spec may give: Kafka's, then the registered ones."""
    return (KAFKA_TAG_HEADER, *sorted(TAG_HEADER_CODECS))
