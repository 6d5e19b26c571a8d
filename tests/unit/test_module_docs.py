"""``tools/check_module_docs.py`` over ``src/kwire`` (the generated modules aside): every module has
a docstring that states its approach, cites no issue or task numbers and links nowhere outside the
repository. The findings must be a subset of ``ALLOWED``, so a new module without a docstring fails.
"""

from __future__ import annotations

from pathlib import Path

import check_module_docs
import pytest

#: Modules known to lack a module docstring today. This list only shrinks: when one of these
#: modules gets its docstring, remove its entry here (a stale entry is not an error, but it lets the
#: module lose its docstring again unnoticed). Never add a module to make this test pass: write the
#: docstring instead.
ALLOWED_MISSING_DOCSTRINGS: frozenset[str] = frozenset()
ALLOWED = frozenset(f"{path}: no module docstring" for path in ALLOWED_MISSING_DOCSTRINGS)


def test_module_docstrings() -> None:
    findings = check_module_docs.source_problems()
    unexpected = [f for f in findings if f not in ALLOWED]
    assert not unexpected, "\n".join(unexpected)


def test_checker_reports_what_it_should(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the checker itself: a module without a docstring, a short one, an issue number, a link out
    root = tmp_path
    cases = {
        "none.py": "x = 1\n",
        "short.py": '"""Too short."""\n',
        "issue.py": '"""A module docstring long enough to say its approach, as asked in issue 6 of '
        'the tracker."""\n',
        "link.py": '"""A module docstring long enough to say its approach; see [the notes]'
        '(../../../notes.md) elsewhere."""\n',
        "good.py": '"""A module docstring long enough to say its approach: it does one thing, '
        'in one way."""\n',
    }
    for name, text in cases.items():
        (root / name).write_text(text)
    monkeypatch.setattr(check_module_docs, "ROOT", root)
    found = {name: check_module_docs.module_problems(root / name) for name in cases}
    assert found["none.py"] == ["none.py: no module docstring"]
    assert "too short" in found["short.py"][0]
    assert found["issue.py"] == ["issue.py (docstring): cites an issue or task number: 'issue 6'"]
    assert "links outside the repository" in found["link.py"][0]
    assert found["good.py"] == []
