"""The emitter and the field-encoding extension point: varint fields' generated code pinned as text
(golden files written by the emitter before its varint branches moved behind the ``FieldEmitter``
hook), the core emitter free of any extension, and a toy encoding that the emitter drives only
through the registry.

Regenerate the golden files after an intended change of the generated code with
``KWIRE_UPDATE_GOLDEN=1 pytest tests/unit/protocol/test_emit_extensions.py`` and review the diff.
"""

from __future__ import annotations

import ast
import json
import os
import struct
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from kwire.protocol import load_specs
from kwire.protocol._codegen import EmitOptions, emit_module
from kwire.protocol._extension_points import (
    FIELD_ENCODINGS,
    FIELD_SPEC_FORMS,
    CheckedReader,
    CodeWriter,
    ModuleWriter,
)
from kwire.protocol._spec import VersionRange, parse_spec
from kwire.protocol._testing import fast_roundtrip, roundtrip

GOLDEN = Path(__file__).parent / "golden"
CODEGEN = Path(__file__).resolve().parents[3] / "src" / "kwire" / "protocol" / "_codegen"

# Every varint path of the emitter: runs of zigzag and of unsigned fields (of different widths),
# a fixed field between runs, form A and form B switching from fixed to varint at a version,
# compact / non-compact / nullable arrays, a struct array with its own run, tagged values and arrays.
MIXED: dict[str, Any] = {
    "type": "data",
    "name": "Mixed",
    "validVersions": "0-4",
    "flexibleVersions": "2+",
    "fields": [
        {"name": "A", "type": "varint32", "versions": "0+"},
        {"name": "B", "type": "varint64", "versions": "0+"},
        {"name": "C", "type": "unsigned_varint16", "versions": "0+"},
        {"name": "D", "type": "unsigned_varint64", "versions": "0+"},
        {"name": "E", "type": "int32", "versions": "0+"},
        {"name": "F", "type": {"0-2": "int64", "3+": "varint64"}, "versions": "0+"},
        {
            "name": "G",
            "type": "[]int32",
            "versions": "0+",
            "encoding": {"0-3": "fixed32", "4+": "unsigned32"},
        },
        {"name": "H", "type": "[]varint16", "versions": "0+", "nullableVersions": "3+"},
        {"name": "I", "type": "[]int64", "versions": "0+", "encoding": "varint64"},
        {
            "name": "S",
            "type": "[]Sub",
            "versions": "1+",
            "fields": [
                {"name": "X", "type": "varint32", "versions": "1+"},
                {"name": "Y", "type": "varint32", "versions": "1+"},
                {"name": "Z", "type": "string", "versions": "1+"},
                {"name": "W", "type": "[]unsigned_varint32", "versions": "1+"},
            ],
        },
        {"name": "T", "type": "varint32", "versions": "2+", "taggedVersions": "2+", "tag": 0},
        {"name": "U", "type": "[]varint64", "versions": "2+", "taggedVersions": "2+", "tag": 1},
        {
            "name": "V",
            "type": "int32",
            "versions": "0+",
            "encoding": {"0": "fixed32", "1+": "unsigned16"},
        },
    ],
}

# test_varint_fields.SAMPLE: v0 inflexible and fixed; v1 flexible with varints; v2 adds varint64.
SAMPLE: dict[str, Any] = {
    "type": "data",
    "name": "Sample",
    "validVersions": "0-2",
    "flexibleVersions": "1+",
    "fields": [
        {"name": "A", "type": {"0": "int32", "1+": "unsigned_varint32"}, "versions": "0+"},
        {
            "name": "B",
            "type": "int64",
            "versions": "0+",
            "default": "-1",
            "encoding": {"0-1": "fixed64", "2+": "varint64"},
        },
        {
            "name": "C",
            "type": "[]int16",
            "versions": "0+",
            "encoding": {"0": "fixed16", "1+": "varint16"},
        },
        {"name": "E", "type": {"0": "int32", "1+": "varint64"}, "versions": "0+"},
        {
            "name": "F",
            "type": "int32",
            "versions": "0+",
            "encoding": {"0": "fixed32", "1+": "varint16"},
        },
        {
            "name": "D",
            "type": "int32",
            "versions": "1+",
            "taggedVersions": "1+",
            "tag": 0,
            "encoding": "unsigned32",
        },
    ],
}


@pytest.mark.parametrize(("spec", "golden"), [(MIXED, "varint_mixed"), (SAMPLE, "varint_sample")])
def test_varint_fields_generate_the_pinned_code(spec: dict[str, Any], golden: str) -> None:
    parsed = parse_spec(json.dumps(spec), f"{spec['name']}.json")
    source = emit_module([parsed], EmitOptions(kafka_version="3.9.1"))
    path = GOLDEN / f"{golden}.emitted.txt"
    if os.environ.get("KWIRE_UPDATE_GOLDEN"):
        path.write_text(source)
    assert source == path.read_text()


def test_mixed_spec_round_trips() -> None:
    spec = parse_spec(json.dumps(MIXED), "Mixed.json")
    cls = load_specs({spec.name: spec}).message_class("Mixed")
    sub = cls.Sub  # type: ignore[attr-defined]
    for values in (
        {"a": 1, "b": -2, "c": 3, "d": 4, "f": 5, "g": [1, 2], "h": [-1, 1], "i": [7]},
        {"a": -(2**31), "b": 2**40, "c": 300, "d": 2**62, "f": -(2**50), "g": [2**30], "i": []},
    ):
        for version in range(5):
            extra: dict[str, Any] = {}
            if version >= 1:
                extra["s"] = [sub(x=-1, y=200, z="z", w=[0, 127, 128])]
            if version >= 2:
                extra.update(t=-70, u=[1, -(2**63)])
            msg = cls(**values, **extra, e=9, v=12)
            assert roundtrip(msg, version) == fast_roundtrip(msg, version)


def test_core_emitter_imports_no_extension() -> None:
    # the emitter speaks Kafka's types and asks _extension_points for anything else
    for path in sorted(CODEGEN.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            for name in names:
                assert not name.startswith("kwire.protocol.ext"), f"{path.name} imports {name}"


# ------------------------------------------------------------------------------------------------
# A toy extension: int32 fields written little-endian, marked ``"littleEndian": true``


class _LittleEndianEmitter:
    run_key = None

    def _const(self, mod: ModuleWriter) -> str:
        return mod.table("_LE32", '_struct.Struct("<i")')

    def decode_declarations(self) -> tuple[str, ...]:
        return ()

    def decode(self, code: CodeWriter, mod: ModuleWriter, target: str, b: str) -> None:
        code(f"({target},) = {self._const(mod)}.unpack_from({b}, p)")
        code("p += 4")

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
        return False

    def decode_elements(self, code: CodeWriter, mod: ModuleWriter, target: str, b: str) -> None:
        const = self._const(mod)
        code(f"{target} = [{const}.unpack_from({b}, p + 4 * k)[0] for k in range(n)]")
        code("p += 4 * n")

    def decode_run(
        self,
        code: CodeWriter,
        mod: ModuleWriter,
        targets: Sequence[str],
        b: str,
        one_by_one: Callable[[], None],
    ) -> None:
        raise AssertionError("no runs: run_key is None")

    def encode(self, code: CodeWriter, mod: ModuleWriter, expr: str, out: str) -> None:
        code(f"{out} += {self._const(mod)}.pack({expr})")

    def encode_elements(self, code: CodeWriter, mod: ModuleWriter, out: str, compact: bool) -> None:
        code(f"write_uvarint({out}, len(a) + 1)" if compact else f"{out} += _I32.pack(len(a))")
        code("for x in a:")
        with code.block():
            code(f"{out} += {self._const(mod)}.pack(x)")

    def encode_run(
        self,
        code: CodeWriter,
        mod: ModuleWriter,
        exprs: Sequence[str],
        out: str,
        one_by_one: Callable[[], None],
    ) -> None:
        raise AssertionError("no runs: run_key is None")


class _LittleEndian:
    name = "le_int32"
    emit = _LittleEndianEmitter()
    _s = struct.Struct("<i")

    def read(self, b: Any, p: int) -> tuple[int, int]:
        return self._s.unpack_from(b, p)[0], p + 4

    def read_array(self, b: Any, p: int, n: int) -> tuple[list[int], int]:
        return [self.read(b, p + 4 * k)[0] for k in range(n)], p + 4 * n

    def write(self, out: bytearray, v: int) -> None:
        out += self._s.pack(v)

    def write_array(self, out: bytearray, a: Any) -> None:
        for v in a:
            self.write(out, v)

    def read_checked(self, reader: CheckedReader, pos: int, end: int, path: str) -> tuple[int, int]:
        raise reader.fail("not needed here: the test decodes valid bytes only", pos, path)

    def why_unwritable(self, v: int) -> str | None:
        return None if -(2**31) <= v < 2**31 else f"{v} is out of range for le_int32"


class _LittleEndianForm:
    keys = frozenset({"littleEndian"})

    def parse(
        self,
        fail: Callable[[str], Exception],
        obj: dict[str, Any],
        versions: VersionRange,
        parse_type: Callable[[str], Any],
    ) -> tuple[str, tuple[tuple[VersionRange, str], ...], str] | None:
        if not obj.get("littleEndian"):
            return None
        return obj["type"], ((versions, "le_int32"),), "littleEndian"

    def check_default(self, fail: Callable[[str], Exception], default: int, encodings: Any) -> None:
        pass


@pytest.fixture
def little_endian() -> Iterator[None]:
    form = _LittleEndianForm()
    FIELD_ENCODINGS["le_int32"] = _LittleEndian()
    FIELD_SPEC_FORMS.insert(0, form)
    try:
        yield
    finally:
        del FIELD_ENCODINGS["le_int32"]
        FIELD_SPEC_FORMS.remove(form)


@pytest.mark.usefixtures("little_endian")
def test_a_registered_encoding_is_emitted_through_its_hook() -> None:
    obj = {
        "type": "data",
        "name": "Toy",
        "validVersions": "0-1",
        "flexibleVersions": "1+",
        "fields": [
            {"name": "N", "type": "int32", "versions": "0+", "littleEndian": True},
            {"name": "M", "type": "int32", "versions": "0+"},
            {"name": "L", "type": "[]int32", "versions": "0+", "littleEndian": True},
        ],
    }
    spec = parse_spec(json.dumps(obj), "Toy.json")
    source = emit_module([spec])
    assert '_LE32 = _struct.Struct("<i")' in source
    assert "VARINTS" not in source
    cls = load_specs({spec.name: spec}).message_class("Toy")
    msg = cls(n=1, m=2, l=[3, -4])
    n, m, elements = struct.pack("<i", 1), struct.pack(">i", 2), struct.pack("<2i", 3, -4)
    assert fast_roundtrip(msg, 0) == n + m + struct.pack(">i", 2) + elements  # int32 count
    assert fast_roundtrip(msg, 1) == n + m + b"\x03" + elements + b"\x00"  # compact count, tags
