"""Check that kwire's modules and docs speak only of what is in the repository.

Approach: one pass over the sources with ``ast`` and regular expressions, no imports. Every module
under ``src/kwire`` (the generated ones aside) must start with a docstring of a few sentences that
``help()`` shows (a docstring of fewer than ``MIN_WORDS`` words is reported as too short to say its
approach). Module docstrings, ``docs/*.md`` and ``README.md`` must not link to files outside the
repository (relative links that climb out of it, ``file:`` URLs, absolute paths) nor cite issue
or task numbers (``issue 6``, ``#123``, ``seed 003``). Prints one line per problem; exits 1 if any.
``source_problems()`` and ``docs_problems()`` return the two halves for tests
(``tests/unit/test_module_docs.py``).

    python tools/check_module_docs.py
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MIN_WORDS = 12
GENERATED = ROOT / "src" / "kwire" / "protocol" / "_generated"
#: Issue and task references: "issue 6", "issue #6", "#123" (not "C#"), "seed 003", "task 4".
ISSUE = re.compile(
    r"\b(?:issues?|tasks?|tickets?|seed)\s*#?\d+\b|(?<![\w&])#\d{2,}\b", re.IGNORECASE
)
#: Markdown links and bare paths that leave the repository.
OUTSIDE = re.compile(r"\]\((?:\.\./){2,}[^)]*\)|\]\(file:[^)]*\)|\]\(/[^)]*\)|file://")


def _generated(path: Path) -> bool:
    return GENERATED in path.parents or path.read_text().startswith("# Code generated")


def module_problems(path: Path) -> list[str]:
    text = path.read_text()
    rel = path.relative_to(ROOT)
    try:
        tree = ast.parse(text)
    except SyntaxError as exc:
        return [f"{rel}: does not parse: {exc}"]
    doc = ast.get_docstring(tree)
    problems = []
    if not doc:
        problems.append(f"{rel}: no module docstring")
    elif len(doc.split()) < MIN_WORDS:
        problems.append(f"{rel}: module docstring too short to say its approach ({doc!r})")
    problems += _text_problems(f"{rel} (docstring)", doc or "")
    return problems


def _text_problems(where: str, text: str) -> list[str]:
    out = []
    for m in ISSUE.finditer(text):
        out.append(f"{where}: cites an issue or task number: {m.group(0)!r}")
    for m in OUTSIDE.finditer(text):
        out.append(f"{where}: links outside the repository: {m.group(0)!r}")
    return out


def doc_problems(path: Path) -> list[str]:
    rel = path.relative_to(ROOT)
    problems = _text_problems(str(rel), path.read_text())
    base = path.parent
    for m in re.finditer(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", path.read_text()):
        target = m.group(1)
        if re.match(r"[a-z]+:", target):  # a URL: not a repository file
            continue
        resolved = (base / target).resolve()
        if ROOT not in resolved.parents and resolved != ROOT:
            problems.append(f"{rel}: links outside the repository: {target!r}")
        elif not resolved.exists():
            problems.append(f"{rel}: links to a missing file: {target!r}")
    return problems


def source_problems() -> list[str]:
    """Problems of every module under ``src/kwire``, the generated ones aside."""
    problems: list[str] = []
    for path in sorted((ROOT / "src" / "kwire").rglob("*.py")):
        if not _generated(path):
            problems += module_problems(path)
    return problems


def docs_problems() -> list[str]:
    """Problems of ``README.md`` and ``docs/*.md``."""
    problems: list[str] = []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        problems += doc_problems(path)
    return problems


def main() -> int:
    problems = source_problems() + docs_problems()
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
