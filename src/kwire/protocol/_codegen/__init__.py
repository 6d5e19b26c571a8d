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
    "check_generated",
    "emit_module",
    "generate_sources",
    "group_modules",
    "module_name_for",
    "specialised_source",
    "write_generated",
]

GENERATED_DIR = Path(__file__).resolve().parent.parent / "_generated"


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


def generate_sources(spec_dir: Path, kafka_version: str) -> dict[str, str]:
    """File name -> unformatted source for every generated module plus the index."""
    specs = load_spec_dir(spec_dir)
    groups = group_modules(specs)
    out = {
        f"{mod}.py": emit_module(group, EmitOptions(kafka_version=kafka_version))
        for mod, group in groups.items()
    }
    out["__init__.py"] = _index_source(groups, kafka_version)
    return out


def _ruff() -> list[str]:
    exe = shutil.which(
        "ruff", path=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")
    )
    if exe is None:
        raise RuntimeError("ruff is needed to format generated code (pip install ruff)")
    return [exe]


def format_sources(sources: dict[str, str]) -> dict[str, str]:
    """Run ``ruff format`` over the sources (in a temporary directory, one process)."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "pyproject.toml").write_text(
            '[tool.ruff]\nline-length = 100\ntarget-version = "py311"\n'
        )
        for name, text in sources.items():
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


def write_generated(spec_dir: Path | None = None, target: Path = GENERATED_DIR) -> list[str]:
    """Rewrite the committed modules; returns the file names written or removed."""
    want = expected_generated(spec_dir)
    target.mkdir(parents=True, exist_ok=True)
    changed = []
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
    want = expected_generated(spec_dir)
    have = {p.name: p.read_text() for p in target.glob("*.py")} if target.is_dir() else {}
    problems = [
        f"{n}: differs from the generator's output"
        for n in want
        if n in have and have[n] != want[n]
    ]
    problems += [f"{n}: missing" for n in want if n not in have]
    problems += [f"{n}: not produced by the generator" for n in have if n not in want]
    return sorted(problems)
