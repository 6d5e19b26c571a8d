"""Start-up: what a fresh broker does before its first answer (nothing it does not need)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient

import kwire.protocol._bundled as bundled
import kwire.protocol._registry as registry
import kwire.protocol._spec._loader as loader
from kwire.broker import Broker


@pytest.fixture
def spec_parses(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every JSON spec parsed from now on, with a fresh bundled registry and spec cache (so what
    earlier tests in this process loaded cannot hide a parse)."""
    parsed: list[str] = []
    real = loader.parse_spec

    def counting(text: str, source: str = "<spec>") -> Any:
        parsed.append(source)
        return real(text, source)

    monkeypatch.setattr(loader, "parse_spec", counting)
    monkeypatch.setattr(registry, "_BUNDLED", None)
    bundled.bundled_specs.cache_clear()
    yield parsed
    bundled.bundled_specs.cache_clear()


def test_first_metadata_parses_no_spec(tmp_path: Path, spec_parses: list[str]) -> None:
    with Broker(tmp_path / "data") as broker:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap, "socket.timeout.ms": 10000})
        metadata = admin.list_topics(timeout=10)  # ApiVersions, then Metadata
        del admin  # librdkafka's threads end before the broker does
        assert [b.id for b in metadata.brokers.values()] == [1]
    assert spec_parses == []


def test_message_class_by_api_key_parses_no_spec(spec_parses: list[str]) -> None:
    cls = registry.message_class(api_key=3, kind="request")
    assert cls.__name__ == "MetadataRequest"
    with pytest.raises(KeyError, match="no request with API key 999"):
        registry.message_class(api_key=999, kind="request")
    assert spec_parses == []


def test_small_zigzag_table_is_the_reference_encoding() -> None:
    from kwire.records import _v2

    assert len(_v2._SMALL) == _v2._SMALL_MAX - _v2._SMALL_MIN + 1
    for value in range(_v2._SMALL_MIN, _v2._SMALL_MAX + 1):
        assert _v2._SMALL[value + 1] == _v2._zigzag_slow(value), value


def test_unzigzag_table_is_the_reference_decoding() -> None:
    from kwire.records import _v2

    assert [(raw >> 1) ^ -(raw & 1) for raw in range(1 << 14)] == _v2._UNZIGZAG
