"""kwire's protocol code generator: load -> validate -> emit (see ``_emit``), plus the driver that
writes and checks the committed modules in ``kwire/protocol/_generated``."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

from kwire.protocol._codegen._emit import (
    GENERATED_MARK,
    EmitOptions,
    emit_module,
    module_name_for,
    specialised_source,
)
from kwire.protocol._spec import MessageSpec, load_spec_dir

__all__ = [
    "GENERATED_DIR",
    "EmitOptions",
    "RuffNotFoundError",
    "check_generated",
    "emit_module",
    "generate_sources",
    "group_modules",
    "module_name_for",
    "specialised_source",
    "write_generated",
]

GENERATED_DIR = Path(__file__).resolve().parent.parent / "_generated"
#: Generated files that live outside ``_generated`` (public modules), by name -> path.
PUBLIC_GENERATED = {"messages.py": GENERATED_DIR.parent / "messages.py"}


def group_modules(specs: dict[str, MessageSpec]) -> dict[str, list[MessageSpec]]:
    """Module name -> its specs (request first, then response; or one header/data type)."""
    groups: dict[str, list[MessageSpec]] = defaultdict(list)
    for spec in specs.values():
        groups[module_name_for(spec)].append(spec)
    order = {"request": 0, "response": 1}
    for name, group in groups.items():
        group.sort(key=lambda s: (order.get(s.type, 2), s.name))
        keys = {s.api_key for s in group}
        if len(keys) > 1 or (len(group) > 1 and any(s.type not in order for s in group)):
            raise ValueError(f"module {name} would mix {[s.name for s in group]}")
    return dict(sorted(groups.items()))


def _index_source(groups: dict[str, list[MessageSpec]], kafka_version: str) -> str:
    lines = [
        f"# {GENERATED_MARK}",
        "# Regenerate with `kwire codegen --write`; `kwire codegen --check` verifies it.",
        f'"""Index of the generated protocol modules (Kafka {kafka_version}): message name -> module,',
        '(api key, kind) -> message name. Modules are imported lazily by ``message_class``."""',
        "",
        f"KAFKA_VERSION = {kafka_version!r}",
        "",
        "MODULES: dict[str, str] = {",
    ]
    for mod, group in groups.items():
        for s in group:
            lines.append(f"    {s.name!r}: {mod!r},")
    lines.append("}")
    lines.append("")
    lines.append("API_KEYS: dict[tuple[int, str], str] = {")
    for group in groups.values():
        for s in group:
            if s.api_key is not None and s.type in ("request", "response"):
                lines.append(f"    ({s.api_key}, {s.type!r}): {s.name!r},")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _messages_source(groups: dict[str, list[MessageSpec]], kafka_version: str) -> str:
    """``kwire.protocol.messages``: every message class by name, statically typed, loaded lazily."""
    names = sorted(s.name for group in groups.values() for s in group)
    lines = [
        f"# {GENERATED_MARK}",
        "# Regenerate with `kwire codegen --write`; `kwire codegen --check` verifies it.",
        f'"""Every bundled Kafka message class (Kafka {kafka_version}), importable by name and typed.',
        "",
        "Approach: ``from kwire.protocol.messages import MetadataResponse`` gives the generated class",
        'itself (the one ``message_class("MetadataResponse")`` returns), with its typed fields,',
        "``decode``, ``encode`` and nested struct classes. Type checkers read the static imports below;",
        "at run time each class's module is imported on first access, so importing this module costs",
        "nothing. Written by ``kwire codegen --write`` from the specs, checked by ``--check``.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "from typing import TYPE_CHECKING",
        "",
        "if TYPE_CHECKING:",
    ]
    for mod, group in groups.items():
        for s in sorted(group, key=lambda s: s.name):
            lines.append(f"    from kwire.protocol._generated.{mod} import {s.name} as {s.name}")
    lines.append("    from kwire.protocol._runtime import KafkaMessage")
    lines += ["", "__all__ = ["]
    lines += [f"    {n!r}," for n in names]
    lines += [
        "]",
        "",
        "",
        "def __getattr__(name: str) -> type[KafkaMessage]:",
        "    if name not in __all__:",
        '        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")',
        "    from kwire.protocol._registry import message_class",
        "",
        "    cls = message_class(name)",
        "    globals()[name] = cls",
        "    return cls",
        "",
        "",
        "def __dir__() -> list[str]:",
        "    return sorted(__all__)",
    ]
    return "\n".join(lines) + "\n"


def generate_sources(spec_dir: Path, kafka_version: str) -> dict[str, str]:
    """File name -> unformatted source for every generated module plus the index."""
    specs = load_spec_dir(spec_dir)
    groups = group_modules(specs)
    out = {
        f"{mod}.py": emit_module(group, EmitOptions(kafka_version=kafka_version))
        for mod, group in groups.items()
    }
    out["__init__.py"] = _index_source(groups, kafka_version)
    out["public/messages.py"] = _messages_source(groups, kafka_version)
    return out


class RuffNotFoundError(RuntimeError):
    """No ``ruff`` executable to format the generated code with (a tool missing, not a bug:
    the CLI says so in one line)."""


def _ruff() -> list[str]:
    exe = shutil.which(
        "ruff", path=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")
    )
    if exe is None:
        raise RuffNotFoundError(
            "ruff is needed to format the generated code and none is on PATH nor next to "
            f"{sys.executable}: pip install ruff"
        )
    return [exe]


def format_sources(sources: dict[str, str]) -> dict[str, str]:
    """Run ``ruff format`` over the sources (in a temporary directory, one process)."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "pyproject.toml").write_text(
            '[tool.ruff]\nline-length = 100\ntarget-version = "py311"\n'
        )
        for name, text in sources.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(text)
        subprocess.run(
            [*_ruff(), "format", "--quiet", "--config", str(root / "pyproject.toml"), str(root)],
            check=True,
        )
        return {name: (root / name).read_text() for name in sources}


def _spec_version(spec_dir: Path) -> str:
    source = spec_dir / "SOURCE"
    if source.is_file():
        for line in source.read_text().splitlines():
            if line.startswith("kafka_version:"):
                return line.split(":", 1)[1].strip()
    return "unknown"


def _bundled_dir() -> Path:
    return Path(__file__).resolve().parent.parent / "specs"


def expected_generated(spec_dir: Path | None = None) -> dict[str, str]:
    d = spec_dir or _bundled_dir()
    return format_sources(generate_sources(d, _spec_version(d)))


def _split_public(want: dict[str, str], target: Path) -> tuple[dict[str, str], dict[Path, str]]:
    """The files for ``target`` and the public ones (only when ``target`` is the package's own)."""
    inside = {n: t for n, t in want.items() if not n.startswith("public/")}
    public: dict[Path, str] = {}
    if target.resolve() == GENERATED_DIR:
        for n, t in want.items():
            if n.startswith("public/"):
                public[PUBLIC_GENERATED[n.removeprefix("public/")]] = t
    return inside, public


def write_generated(spec_dir: Path | None = None, target: Path = GENERATED_DIR) -> list[str]:
    """Rewrite the committed modules; returns the file names written or removed."""
    want, public = _split_public(expected_generated(spec_dir), target)
    changed = []
    for path, text in public.items():
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
            changed.append(f"../{path.name}")
    target.mkdir(parents=True, exist_ok=True)
    for p in target.glob("*.py"):
        if p.name not in want:
            p.unlink()
            changed.append(p.name)
    for name, text in want.items():
        p = target / name
        if not p.exists() or p.read_text() != text:
            p.write_text(text)
            changed.append(name)
    return changed


def check_generated(spec_dir: Path | None = None, target: Path = GENERATED_DIR) -> list[str]:
    """Problems (empty when the committed modules match what the generator produces now)."""
    want, public = _split_public(expected_generated(spec_dir), target)
    public_problems = [
        f"{path.name}: missing"
        if not path.exists()
        else f"{path.name}: differs from the generator's output"
        for path, text in public.items()
        if not path.exists() or path.read_text() != text
    ]
    have = {p.name: p.read_text() for p in target.glob("*.py")} if target.is_dir() else {}
    problems = [
        f"{n}: differs from the generator's output"
        for n in want
        if n in have and have[n] != want[n]
    ]
    problems += [f"{n}: missing" for n in want if n not in have]
    problems += [f"{n}: not produced by the generator" for n in have if n not in want]
    return sorted(problems + public_problems)
