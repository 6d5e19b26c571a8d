"""Protobuf values to the Arrow struct of the subject's latest schema: values written with two
versions of one message (the same full name, other fields) each decode with their own schema."""

from __future__ import annotations

import base64
from typing import Any

import pytest

pa = pytest.importorskip("pyarrow")
pytest.importorskip("google.protobuf")

from kwire.spark._registry_protobuf import _Protobuf  # noqa: E402
from kwire.spark._registry_store import SchemaEntry, SchemaStore  # noqa: E402


def _file(version: int) -> Any:
    from google.protobuf import descriptor_pb2

    fdp = descriptor_pb2.FileDescriptorProto(name=f"order_v{version}.proto", package="shop")
    fdp.syntax = "proto3"
    f = descriptor_pb2.FieldDescriptorProto
    enum = fdp.enum_type.add(name="State")
    for number, name in enumerate(["NEW", "PAID", "SHIPPED"][: version + 1]):
        enum.value.add(name=name, number=number)
    msg = fdp.message_type.add(name="Order")
    msg.field.add(name="id", number=1, type=f.TYPE_INT64, label=f.LABEL_OPTIONAL)
    msg.field.add(
        name="state", number=2, type=f.TYPE_ENUM, label=f.LABEL_OPTIONAL, type_name=".shop.State"
    )
    if version == 2:
        msg.field.add(name="note", number=3, type=f.TYPE_STRING, label=f.LABEL_OPTIONAL)
        msg.field.add(name="tags", number=4, type=f.TYPE_STRING, label=f.LABEL_REPEATED)
    return fdp


def _message(fdp: Any, **fields: Any) -> bytes:
    from google.protobuf import descriptor_pool, message_factory

    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    cls = message_factory.GetMessageClass(pool.FindMessageTypeByName("shop.Order"))
    msg = cls(**fields)
    return bytes(msg.SerializeToString())


def test_values_of_two_schema_versions_decode_with_their_own() -> None:
    store = SchemaStore()
    v1, v2 = _file(1), _file(2)
    for schema_id, fdp in ((1, v1), (2, v2)):
        text = base64.b64encode(fdp.SerializeToString()).decode()
        store.add(
            SchemaEntry(schema_id, "PROTOBUF", text, subject="orders-value", version=schema_id)
        )
    decoder = _Protobuf(store, store.latest("orders-value"))

    def framed(schema_id: int, payload: bytes) -> bytes:
        return b"\x00" + schema_id.to_bytes(4, "big") + b"\x00" + payload

    column = pa.array(
        [
            framed(2, _message(v2, id=1, state=2, note="gift", tags=["a", "b"])),
            framed(1, _message(v1, id=2, state=1)),
            framed(2, _message(v2, id=3)),
            None,
        ],
        pa.binary(),
    )
    array, ids, errors = decoder.decode(column, None)
    assert errors == {}
    assert list(ids) == [2, 1, 2, -1]
    assert array.to_pylist() == [
        {"id": 1, "state": "SHIPPED", "note": "gift", "tags": ["a", "b"]},
        {"id": 2, "state": "PAID", "note": None, "tags": None},  # v1 has neither field
        {"id": 3, "state": "NEW", "note": "", "tags": []},  # proto3 defaults of v2
        None,
    ]
