"""JSON Schema checks of the Schema Registry decoder: the fast one (jsonschema-rs) and the
reference one (jsonschema) agree on what matches, references to other documents included."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("jsonschema")
pytest.importorskip("jsonschema_rs")

from kwire.spark._registry_json import _fast_json_check, _json_check

CUSTOMER = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "vip": {"type": "boolean"}},
    "required": ["name"],
    "definitions": {
        "Address": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "zip": {"type": ["string", "null"]}},
            "required": ["city"],
        }
    },
}
ORDER = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "properties": {
        "id": {"type": "integer", "minimum": 0},
        "customer": {"$ref": "customer.json"},
        "ship_to": {"$ref": "customer.json#/definitions/Address"},
        "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
        "email": {"type": "string", "format": "email"},  # an annotation: not checked
        "status": {"enum": ["NEW", "PAID"]},
    },
    "required": ["id", "customer"],
    "additionalProperties": False,
}
DOCS = {"customer.json": CUSTOMER}

VALUES: list[tuple[Any, bool]] = [
    ({"id": 1, "customer": {"name": "a"}}, True),
    ({"id": 1, "customer": {"name": "a"}, "ship_to": {"city": "p", "zip": None}}, True),
    ({"id": 1, "customer": {"name": "a"}, "email": "not an address"}, True),
    ({"id": 1, "customer": {"name": "a"}, "tags": ["x", "y"], "status": "PAID"}, True),
    ({"id": -1, "customer": {"name": "a"}}, False),
    ({"id": 1, "customer": {}}, False),  # the referenced document's required field
    ({"id": 1, "customer": {"name": "a"}, "ship_to": {"zip": "1"}}, False),  # a fragment's
    ({"id": 1, "customer": {"name": 3}}, False),
    ({"id": 1, "customer": {"name": "a"}, "tags": ["1", "2", "3", "4"]}, False),
    ({"id": 1, "customer": {"name": "a"}, "status": "LOST"}, False),
    ({"id": 1, "customer": {"name": "a"}, "extra": 1}, False),
    ({"customer": {"name": "a"}}, False),
    ([1, 2], False),
    (None, False),
]


@pytest.mark.parametrize(("value", "valid"), VALUES)
def test_fast_and_reference_checks_agree(value: Any, valid: bool) -> None:
    fast = _fast_json_check(ORDER, DOCS)
    assert fast is not None
    reference = _json_check(ORDER, DOCS)
    assert (fast(value) is None) == (reference(value) is None) == valid
    if not valid:
        assert fast(value) and reference(value)  # a reason, not an empty string


def test_a_schema_the_fast_check_refuses_falls_back() -> None:
    broken = {"type": "object", "properties": {"x": {"$ref": "missing.json"}}}
    assert _fast_json_check(broken, {}) is None  # unresolvable here: jsonschema is used
