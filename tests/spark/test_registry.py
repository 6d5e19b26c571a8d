"""Schema Registry decoding: values written by confluent-kafka's own serializers into a kwire broker,
with a stand-in registry whose `_schemas` topic is written the way Confluent's registry writes it,
come back from the log directory as the same typed values (Avro, Protobuf, JSON Schema)."""

from __future__ import annotations

import datetime as dt
import json
import threading
import uuid
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.spark


# ---- a stand-in registry: the endpoints confluent-kafka's serializers and kwire call ------------


class Registry:
    """Subjects and ids in memory; every registration also becomes a `_schemas` record."""

    def __init__(self) -> None:
        self.by_id: dict[int, dict[str, Any]] = {}
        self.subjects: dict[str, list[dict[str, Any]]] = {}
        self.log: list[tuple[bytes, bytes | None]] = [(b'{"keytype":"NOOP","magic":0}', None)]
        self.lock = threading.Lock()

    def register(self, subject: str, body: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            schema_type = body.get("schemaType", "AVRO")
            for doc in self.subjects.get(subject, []):
                if doc["schema"] == body["schema"]:
                    return doc
            same = [d for d in self.by_id.values() if d["schema"] == body["schema"]]
            schema_id = same[0]["id"] if same else len(self.by_id) + 1
            version = len(self.subjects.get(subject, [])) + 1
            doc = {
                "subject": subject,
                "version": version,
                "id": schema_id,
                "schema": body["schema"],
                "references": body.get("references") or [],
                "guid": str(uuid.uuid5(uuid.NAMESPACE_OID, f"{schema_id}")),
            }
            if schema_type != "AVRO":
                doc["schemaType"] = schema_type
            self.by_id[schema_id] = doc
            self.subjects.setdefault(subject, []).append(doc)
            key = {"keytype": "SCHEMA", "subject": subject, "version": version, "magic": 1}
            value = doc | {"deleted": False}
            self.log.append((json.dumps(key).encode(), json.dumps(value).encode()))
            return doc


def _serve(registry: Registry) -> tuple[ThreadingHTTPServer, str]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def reply(self, code: int, doc: Any) -> None:
            data = json.dumps(doc).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/vnd.schemaregistry.v1+json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self) -> None:
            parts = self.path.split("?")[0].strip("/").split("/")
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if len(parts) == 3 and parts[0] == "subjects" and parts[2] == "versions":
                self.reply(200, registry.register(parts[1], body))
            else:
                self.reply(404, {"error_code": 404, "message": self.path})

        def do_GET(self) -> None:
            parts = self.path.split("?")[0].strip("/").split("/")
            if parts[:2] == ["schemas", "ids"] and int(parts[2]) in registry.by_id:
                doc = registry.by_id[int(parts[2])]
                self.reply(200, {k: doc[k] for k in doc if k not in ("subject", "version")})
            elif parts[0] == "subjects" and len(parts) == 3 and parts[2] == "versions":
                self.reply(200, [d["version"] for d in registry.subjects.get(parts[1], [])])
            elif parts[0] == "subjects" and len(parts) == 4 and parts[1] in registry.subjects:
                docs = registry.subjects[parts[1]]
                self.reply(200, docs[-1] if parts[3] == "latest" else docs[int(parts[3]) - 1])
            else:
                self.reply(404, {"error_code": 40403, "message": "not found"})

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


@pytest.fixture
def registry() -> Iterator[tuple[Registry, str]]:
    reg = Registry()
    server, url = _serve(reg)
    yield reg, url
    server.shutdown()
    server.server_close()


def _produce(
    broker: Any, topic: str, items: list[tuple[bytes | None, bytes | None, list[Any] | None]]
) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
    for key, value, headers in items:
        producer.produce(topic, key=key, value=value, headers=headers)
    assert producer.flush(30) == 0


def _write(
    factory: Callable[..., Any],
    tmp_path: Path,
    reg: Registry,
    topic: str,
    records: Callable[[], list[tuple[bytes | None, bytes | None, list[Any] | None]]],
) -> Path:
    """A kwire broker data dir holding ``topic`` and the registry's ``_schemas`` topic."""
    broker = factory(tmp_path / "data")
    broker.create_topic(topic, partitions=2)
    broker.create_topic("_schemas", partitions=1, config={"cleanup.policy": "compact"})
    items = records()
    _produce(broker, topic, items)
    _produce(broker, "_schemas", [(k, v, None) for k, v in reg.log])
    broker.stop()
    return tmp_path / "data"


AVRO_V1 = {
    "type": "record",
    "name": "Order",
    "namespace": "shop",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "customer", "type": "string"},
        {"name": "amount", "type": "double"},
        {"name": "quantity", "type": ["null", "int"], "default": None},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "attributes", "type": {"type": "map", "values": "long"}},
        {
            "name": "status",
            "type": {"type": "enum", "name": "Status", "symbols": ["NEW", "PAID", "SHIPPED"]},
        },
        {"name": "created", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {
            "name": "address",
            "type": [
                "null",
                {
                    "type": "record",
                    "name": "Address",
                    "fields": [
                        {"name": "city", "type": "string"},
                        {"name": "zip", "type": ["null", "string"], "default": None},
                    ],
                },
            ],
            "default": None,
        },
    ],
}
AVRO_V2 = {
    **AVRO_V1,
    "fields": [*AVRO_V1["fields"], {"name": "channel", "type": "string", "default": "web"}],
}


def _order(i: int, v2: bool) -> dict[str, Any]:
    order: dict[str, Any] = {
        "id": i,
        "customer": f"customer-{i % 7}-é",
        "amount": i * 1.25,
        "quantity": None if i % 4 == 0 else i % 10,
        "tags": [f"t{j}" for j in range(i % 3)],
        "attributes": {f"a{j}": j * i for j in range(i % 2)},
        "status": ["NEW", "PAID", "SHIPPED"][i % 3],
        "created": dt.datetime(2024, 5, 1, tzinfo=dt.UTC) + dt.timedelta(seconds=i),
        "address": None if i % 5 == 0 else {"city": f"c{i}", "zip": None if i % 2 else "75001"},
    }
    if v2:
        order["channel"] = "app" if i % 2 else "store"
    return order


def test_wire_prefix_and_message_indexes() -> None:
    from kwire.spark._registry import parse_wire_prefix

    assert parse_wire_prefix(b"\x00\x00\x00\x01\x02rest", protobuf=False) == (258, [], 5)
    assert parse_wire_prefix(b"\x00\x00\x00\x00\x07\x00msg", protobuf=True) == (7, [0], 6)
    # count 2 (zigzag 4), indexes 1 (2) and 3 (6)
    assert parse_wire_prefix(b"\x00\x00\x00\x00\x07\x04\x02\x06m", protobuf=True) == (7, [1, 3], 8)
    with pytest.raises(ValueError):
        parse_wire_prefix(b"\x01\x00\x00\x00\x07", protobuf=False)


def test_schemas_topic_store_follows_deletes() -> None:
    from kwire.spark._registry import store_from_records

    def key(subject: str, version: int) -> bytes:
        return json.dumps(
            {"keytype": "SCHEMA", "subject": subject, "version": version, "magic": 1}
        ).encode()

    def value(subject: str, version: int, schema_id: int, deleted: bool = False) -> bytes:
        return json.dumps(
            {
                "subject": subject,
                "version": version,
                "id": schema_id,
                "schema": '"string"',
                "deleted": deleted,
            }
        ).encode()

    store = store_from_records(
        [
            (b'{"keytype":"NOOP","magic":0}', None),
            (key("t-value", 1), value("t-value", 1, 1)),
            (key("t-value", 2), value("t-value", 2, 2)),
            (key("t-value", 3), value("t-value", 3, 3)),
            (key("t-value", 3), value("t-value", 3, 3, deleted=True)),  # soft delete
            (key("u-value", 1), value("u-value", 1, 4)),
            (key("u-value", 1), None),  # hard delete
        ]
    )
    assert store.latest("t-value").id == 2
    assert store.get(3) is not None and store.get(4) is None
    assert store.latest("t-value").schema_type == "AVRO"


def test_avro_values_from_confluent_serializer(
    spark: Any,
    kwire_broker_factory: Callable[..., Any],
    registry: tuple[Registry, str],
    tmp_path: Path,
) -> None:
    from confluent_kafka.schema_registry import SchemaRegistryClient, header_schema_id_serializer
    from confluent_kafka.schema_registry.avro import AvroSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    from kwire.errors import CorruptRecordError

    reg, url = registry
    client = SchemaRegistryClient({"url": url})
    v1 = AvroSerializer(client, json.dumps(AVRO_V1))
    v2 = AvroSerializer(client, json.dumps(AVRO_V2))
    v2_header = AvroSerializer(
        client, json.dumps(AVRO_V2), conf={"schema.id.serializer": header_schema_id_serializer}
    )
    expected: dict[tuple[int, int], dict[str, Any]] = {}

    def records() -> list[tuple[bytes | None, bytes | None, list[Any] | None]]:
        items: list[tuple[bytes | None, bytes | None, list[Any] | None]] = []
        for i in range(300):
            use_v2 = i >= 150
            order = _order(i, use_v2)
            headers: list[Any] = []
            ctx = SerializationContext("orders", MessageField.VALUE, headers)
            serializer = v2_header if i >= 280 else v2 if use_v2 else v1
            value = serializer(order, ctx)
            items.append((str(i).encode(), value, headers or None))
            expected[(i, 0)] = {**order, "channel": order.get("channel", "web")}
        items.append((b"bad", b"\x00\x00\x00\x00\x01\x99", None))  # truncated datum
        items.append((b"tombstone", None, None))
        return items

    data = _write(kwire_broker_factory, tmp_path, reg, "orders", records)
    df = spark.read.format("kafka-log").option("valueFormat", "avro").load(str(data))
    value_type = dict(df.dtypes)["value"]
    assert value_type.startswith("struct<id:bigint,customer:string,amount:double,quantity:int")
    assert "channel:string" in value_type  # the latest schema (v2) is the output type
    rows = df.collect()
    assert len(rows) == 302
    by_id = {}
    for row in rows:
        if row["key"] in (b"bad", b"tombstone"):
            continue
        assert row["_corrupt_record"] is None, row["_corrupt_record"]
        value = row["value"].asDict(recursive=True)
        value["attributes"] = dict(value["attributes"])
        value["created"] = value["created"].astimezone(dt.UTC)  # Spark gives local time
        by_id[value["id"]] = value
    assert len(by_id) == 300
    for i in range(300):
        want = expected[(i, 0)]
        got = by_id[i]
        assert got == want, (i, got, want)
    schema_ids = {r["valueSchemaId"] for r in rows if r["value"] is not None}
    assert len(schema_ids) == 2
    bad = next(r for r in rows if r["key"] == b"bad")
    assert bad["value"] is None and "Avro" in bad["_corrupt_record"]
    tomb = next(r for r in rows if r["key"] == b"tombstone")
    assert tomb["value"] is None and tomb["_corrupt_record"] is None
    # the same through the registry's REST API instead of the _schemas topic
    via_url = (
        spark.read.format("kafka-log")
        .option("valueFormat", "avro")
        .option("schemaRegistryUrl", url)
        .load(str(data))
    )
    assert via_url.where("_corrupt_record is null").count() == 301
    cols = ["key", "value.id", "value.customer", "value.channel", "value.tags", "value.created"]
    assert via_url.select(*cols).exceptAll(df.select(*cols)).count() == 0
    # DROPMALFORMED drops the record; FAILFAST fails the job
    dropped = (
        spark.read.format("kafka-log")
        .option("valueFormat", "avro")
        .option("mode", "DROPMALFORMED")
        .load(str(data))
    )
    assert dropped.count() == 301
    failing = (
        spark.read.format("kafka-log")
        .option("valueFormat", "avro")
        .option("mode", "FAILFAST")
        .load(str(data))
    )
    with pytest.raises(Exception, match=r"CorruptRecordError|Avro"):
        failing.collect()
    del CorruptRecordError
    # an export with valueFormat writes the decoded values (the default arrow engine hands typed
    # reads to the spark engine instead of writing the raw bytes)
    import pyarrow.parquet as pq

    from kwire.spark._pipeline import export

    out = tmp_path / "typed-export"
    result = export(spark, str(data), str(out), "parquet", options={"valueFormat": "avro"})
    assert result.records == 301  # the truncated datum is reported as skipped, not exported
    assert any("Avro" in problem for problem in result.problems)
    table = pq.read_table(str(out))
    assert str(table.schema.field("value").type).startswith("struct<id: int64")


def _proto_class() -> Any:
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    fdp = descriptor_pb2.FileDescriptorProto(name="kwire_test_payment.proto", package="shop")
    fdp.syntax = "proto3"
    F = descriptor_pb2.FieldDescriptorProto
    enum = fdp.enum_type.add(name="Method")
    enum.value.add(name="CARD", number=0)
    enum.value.add(name="CASH", number=1)
    msg = fdp.message_type.add(name="Payment")
    msg.field.add(name="id", number=1, type=F.TYPE_INT64, label=F.LABEL_OPTIONAL)
    msg.field.add(name="payer", number=2, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    msg.field.add(name="amount", number=3, type=F.TYPE_DOUBLE, label=F.LABEL_OPTIONAL)
    msg.field.add(
        name="method", number=4, type=F.TYPE_ENUM, label=F.LABEL_OPTIONAL, type_name=".shop.Method"
    )
    msg.field.add(
        name="lines", number=5, type=F.TYPE_MESSAGE, label=F.LABEL_REPEATED, type_name=".shop.Line"
    )
    msg.field.add(name="flags", number=6, type=F.TYPE_BOOL, label=F.LABEL_REPEATED)
    item = fdp.message_type.add(name="Line")
    item.field.add(name="sku", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    item.field.add(name="count", number=2, type=F.TYPE_INT32, label=F.LABEL_OPTIONAL)
    pool = descriptor_pool.Default()
    try:
        file = pool.FindFileByName(fdp.name)
    except KeyError:
        file = pool.Add(fdp) or pool.FindFileByName(fdp.name)
    return message_factory.GetMessageClass(file.message_types_by_name["Payment"])


def test_protobuf_values_from_confluent_serializer(
    spark: Any,
    kwire_broker_factory: Callable[..., Any],
    registry: tuple[Registry, str],
    tmp_path: Path,
) -> None:
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    reg, url = registry
    Payment = _proto_class()
    serializer = ProtobufSerializer(
        Payment, SchemaRegistryClient({"url": url}), {"use.deprecated.format": False}
    )
    expected = {}

    def records() -> list[tuple[bytes | None, bytes | None, list[Any] | None]]:
        items: list[tuple[bytes | None, bytes | None, list[Any] | None]] = []
        for i in range(120):
            p = Payment(id=i, payer=f"p{i}", amount=i / 4, method=i % 2, flags=[True] * (i % 3))
            for j in range(i % 3):
                p.lines.add(sku=f"s{j}", count=j + i)
            ctx = SerializationContext("payments", MessageField.VALUE)
            items.append((None, serializer(p, ctx), None))
            expected[i] = {
                "id": i,
                "payer": f"p{i}",
                "amount": i / 4,
                "method": ["CARD", "CASH"][i % 2],
                "lines": [{"sku": f"s{j}", "count": j + i} for j in range(i % 3)],
                "flags": [True] * (i % 3),
            }
        return items

    data = _write(kwire_broker_factory, tmp_path, reg, "payments", records)
    df = spark.read.format("kafka-log").option("valueFormat", "protobuf").load(str(data))
    rows = df.collect()
    assert len(rows) == 120 and all(r["_corrupt_record"] is None for r in rows)
    got = {r["value"]["id"]: r["value"].asDict(recursive=True) for r in rows}
    assert got == expected


JSON_SCHEMA = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "Shipment",
    "type": "object",
    "properties": {
        "id": {"type": "integer"},
        "carrier": {"type": "string"},
        "weight": {"type": "number"},
        "fragile": {"type": "boolean"},
        "parcels": {"type": "array", "items": {"$ref": "#/definitions/Parcel"}},
        "note": {"oneOf": [{"type": "null"}, {"type": "string"}]},
    },
    "required": ["id", "carrier"],
    "definitions": {
        "Parcel": {
            "type": "object",
            "properties": {"code": {"type": "string"}, "kg": {"type": "number"}},
        }
    },
}


def test_json_schema_values_from_confluent_serializer(
    spark: Any,
    kwire_broker_factory: Callable[..., Any],
    registry: tuple[Registry, str],
    tmp_path: Path,
) -> None:
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.json_schema import JSONSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    reg, url = registry
    serializer = JSONSerializer(json.dumps(JSON_SCHEMA), SchemaRegistryClient({"url": url}))
    expected = {}

    def records() -> list[tuple[bytes | None, bytes | None, list[Any] | None]]:
        items: list[tuple[bytes | None, bytes | None, list[Any] | None]] = []
        for i in range(80):
            doc = {
                "id": i,
                "carrier": ["ups", "dhl"][i % 2],
                "weight": i * 0.5,
                "fragile": i % 3 == 0,
                "parcels": [{"code": f"x{j}", "kg": j * 1.5} for j in range(i % 3)],
                "note": None if i % 2 else f"n{i}",
            }
            ctx = SerializationContext("shipments", MessageField.VALUE)
            items.append((None, serializer(doc, ctx), None))
            expected[i] = doc
        # valid JSON that breaks the schema (a string id): not decoded, kept as corrupt
        bad = b"\x00" + (1).to_bytes(4, "big") + b'{"id": "one", "carrier": "x"}'
        items.append((b"bad", bad, None))
        return items

    data = _write(kwire_broker_factory, tmp_path, reg, "shipments", records)
    df = spark.read.format("kafka-log").option("valueFormat", "json").load(str(data))
    rows = df.collect()
    good = {r["value"]["id"]: r["value"].asDict(recursive=True) for r in rows if r["key"] != b"bad"}
    assert good == expected
    bad_rows = [r for r in rows if r["key"] == b"bad"]
    assert bad_rows[0]["value"] is None and "JSON" in bad_rows[0]["_corrupt_record"]
