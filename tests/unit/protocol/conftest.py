"""Fixtures for the protocol unit tests."""

from __future__ import annotations

from typing import Any

import pytest

from kwire.protocol import message_class


@pytest.fixture
def metadata_response() -> Any:
    return message_class("MetadataResponse")
