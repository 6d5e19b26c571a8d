"""docs/messages.md is the generated message reference of the bundled specs, kept up to date."""

from __future__ import annotations

from pathlib import Path

from kwire.protocol import bundled_specs, spec_source
from kwire.protocol._codegen._reference import render_reference

DOC = Path(__file__).resolve().parents[3] / "docs" / "messages.md"


def test_messages_doc_matches_the_bundled_specs() -> None:
    expected = render_reference(
        bundled_specs().values(), f"Kafka {spec_source().get('kafka_version', '?')}"
    )
    assert DOC.read_text() == expected, "docs/messages.md is stale: run `make docs`"


def test_reference_names_every_bundled_message() -> None:
    text = DOC.read_text()
    for name in bundled_specs():
        assert f"\n## {name}\n" in text
