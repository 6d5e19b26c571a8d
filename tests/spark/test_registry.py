"""Schema Registry decoding: values written by confluent-kafka's own serializers into a kwire broker,
with a stand-in registry whose `_schemas` topic is written the way Confluent's registry writes it,
come back from the log directory as the same typed values (Avro, Protobuf, JSON Schema)."""

from __future__ import annotations

import datetime as dt
import json
import re
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
    # an export with valueFormat writes the decoded values (the default arrow engine runs the
    # typed reader in its tasks, never the raw bytes)
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


# ---- schemas as Confluent's registry stores them: .proto source text, JSON Schema references ----


def _write_log(root: Path, topics: dict[str, list[tuple[bytes | None, bytes | None]]]) -> Path:
    """A log directory (kwire.log.LogWriter, one partition per topic) holding ``topics``."""
    from kwire.log import LogWriter
    from kwire.records import build_batch

    for topic, records in topics.items():
        with LogWriter(str(root), topic, 0, fsync=False) as w:
            for offset, (key, value) in enumerate(records):
                w.append(
                    build_batch(
                        [(None, 1_700_000_000_000 + offset, key, value)], base_offset=offset
                    )
                )
    return root


def _framed(schema_id: int, payload: bytes, indexes: bytes = b"") -> bytes:
    """Confluent's wire format: magic 0, the schema id, (Protobuf) message indexes, payload."""
    return b"\x00" + schema_id.to_bytes(4, "big") + indexes + payload


CUSTOMER_PROTO = """syntax = "proto3";
package crm;

message Customer {
  string name = 1;
  Address address = 2;

  message Address {
    string city = 1;
    repeated string lines = 2;
  }
}
"""

ORDER_PROTO = """syntax = "proto3";
package shop;

import "google/protobuf/timestamp.proto";
import "customer.proto";

message Order {
  int64 id = 1;
  crm.Customer customer = 2;
  google.protobuf.Timestamp created = 3;
  repeated Line lines = 4;
  map<string, int64> attributes = 5;
  Status status = 6;
  optional string note = 9;

  oneof payment {
    string card = 7;
    int32 cash_cents = 8;
  }

  message Line {
    string sku = 1;
    int32 count = 2;
  }

  enum Status {
    NEW = 0;
    PAID = 1;
    SHIPPED = 2;
  }
}
"""


def _proto_text_classes(files: dict[str, str], root: str) -> Any:
    """The message classes of ``root`` compiled from .proto ``files`` by protoc (as protoc-generated
    code would be), in a pool of their own."""
    import importlib.resources
    import tempfile

    import grpc_tools
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
    from grpc_tools import protoc

    with tempfile.TemporaryDirectory() as tmp:
        for name, text in files.items():
            Path(tmp, name).write_text(text)
        out = Path(tmp, "out.pb")
        include = importlib.resources.files(grpc_tools) / "_proto"
        args = ["protoc", f"-I{tmp}", f"-I{include}", "--include_imports"]
        assert protoc.main([*args, f"--descriptor_set_out={out}", root]) == 0
        fds = descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes())
    pool = descriptor_pool.DescriptorPool()
    for fdp in fds.file:
        pool.Add(fdp)
    return message_factory.GetMessages(list(fds.file), pool=pool)


def _proto_text_registry() -> Registry:
    """``customer-value`` and ``orders-value`` (importing customer.proto) stored as .proto text."""
    reg = Registry()
    reg.register("customer-value", {"schemaType": "PROTOBUF", "schema": CUSTOMER_PROTO})
    reg.register(
        "orders-value",
        {
            "schemaType": "PROTOBUF",
            "schema": ORDER_PROTO,
            "references": [{"name": "customer.proto", "subject": "customer-value", "version": 1}],
        },
    )
    return reg


def test_protobuf_values_with_proto_source_schemas(spark: Any, tmp_path: Path) -> None:
    reg = _proto_text_registry()
    stored = json.loads(reg.log[-1][1] or b"")
    assert stored["schemaType"] == "PROTOBUF" and stored["schema"].startswith('syntax = "proto3";')
    order_id = stored["id"]
    classes = _proto_text_classes(
        {"customer.proto": CUSTOMER_PROTO, "order.proto": ORDER_PROTO}, "order.proto"
    )
    Order = classes["shop.Order"]
    expected = {}
    records: list[tuple[bytes | None, bytes | None]] = []
    for i in range(60):
        order = Order(id=i, status=i % 3)
        order.customer.name = f"c{i % 7}"
        if i % 4:
            order.customer.address.city = f"city{i}"
            order.customer.address.lines.extend(f"l{j}" for j in range(i % 3))
        order.created.seconds, order.created.nanos = 1_700_000_000 + i, i * 1000
        for j in range(i % 3):
            order.lines.add(sku=f"s{j}", count=i + j)
        for j in range(i % 2 + 1):
            order.attributes[f"a{j}"] = i * j
        if i % 2:
            order.card = f"card-{i}"
        else:
            order.cash_cents = i * 100
        if i % 5 == 0:
            order.note = f"n{i}"
        # Confluent's framing: message indexes [0] written as the single byte 0
        records.append((str(i).encode(), _framed(order_id, order.SerializeToString(), b"\x00")))
        expected[i] = {
            "id": i,
            "customer": {
                "name": f"c{i % 7}",
                "address": {"city": f"city{i}", "lines": [f"l{j}" for j in range(i % 3)]}
                if i % 4
                else None,
            },
            "created": {"seconds": 1_700_000_000 + i, "nanos": i * 1000},
            "lines": [{"sku": f"s{j}", "count": i + j} for j in range(i % 3)],
            "attributes": {f"a{j}": i * j for j in range(i % 2 + 1)},
            "status": ["NEW", "PAID", "SHIPPED"][i % 3],
            "note": f"n{i}" if i % 5 == 0 else None,
            "card": f"card-{i}" if i % 2 else None,
            "cash_cents": None if i % 2 else i * 100,
        }
    records.append((b"bad", _framed(order_id, b"\xff\xff", b"\x00")))
    data = _write_log(tmp_path / "log", {"orders": records, "_schemas": list(reg.log)})
    df = spark.read.format("kafka-log").option("valueFormat", "protobuf").load(str(data))
    value_type = dict(df.dtypes)["value"]
    assert "customer:struct<name:string,address:struct<city:string,lines:array<string>>>" in (
        value_type
    )
    assert "attributes:map<string,bigint>" in value_type and "status:string" in value_type
    rows = df.collect()
    got = {}
    for row in rows:
        if row["key"] == b"bad":
            assert row["value"] is None and "Protobuf" in row["_corrupt_record"]
            continue
        assert row["_corrupt_record"] is None, row["_corrupt_record"]
        assert row["valueSchemaId"] == order_id
        value = row["value"].asDict(recursive=True)
        value["attributes"] = dict(value["attributes"])
        got[value["id"]] = value
    assert got == expected
    # nested messages by their message indexes: [0, 1] is Order.Line (the map's entry type
    # Order.AttributesEntry, which protoc declares first, is [0, 0]), as Confluent numbers them
    from kwire.spark._registry_protobuf import _Protobuf
    from kwire.spark._registry_store import store_from_records

    store = store_from_records(list(reg.log))
    line = _Protobuf(store, store.latest("orders-value")).message(store.get(order_id), (0, 1))
    assert line.DESCRIPTOR.full_name == "shop.Order.Line"
    # the customer subject alone decodes with its own file (compiled without the orders schema)
    customer = _Protobuf(store, store.latest("customer-value"))
    assert customer.descriptor.full_name == "crm.Customer"


def test_protobuf_source_schema_errors_name_the_schema(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    from kwire.errors import KwireError
    from kwire.spark._registry import typed_source

    reg = Registry()
    broken = 'syntax = "proto3";\npackage shop;\n\nmessage Order {\n  int64 id = 1\n}\n'
    reg.register("orders-value", {"schemaType": "PROTOBUF", "schema": broken})
    data = _write_log(tmp_path / "log", {"orders": [], "_schemas": list(reg.log)})
    with pytest.raises(KwireError) as err:
        typed_source(str(data), {"valueFormat": "protobuf"}).arrow_schema()
    message = str(err.value)
    assert "Protobuf schema 1 (subject orders-value version 1)" in message
    assert "schema_1.proto:6:1" in message and "Expected" in message  # protoc's own words
    assert str(tmp_path) not in message
    # an import that is neither a reference nor built in
    reg = Registry()
    missing = (
        'syntax = "proto3";\nimport "customer.proto";\nmessage Order { crm.Customer c = 1; }\n'
    )
    reg.register("orders-value", {"schemaType": "PROTOBUF", "schema": missing})
    data = _write_log(tmp_path / "log2", {"orders": [], "_schemas": list(reg.log)})
    with pytest.raises(KwireError, match=r"Protobuf schema 1 .*customer\.proto"):
        typed_source(str(data), {"valueFormat": "protobuf"}).arrow_schema()
    # without grpcio-tools: says what to install
    from kwire.spark import _registry_protobuf

    monkeypatch.setitem(sys.modules, "grpc_tools", None)
    monkeypatch.setattr(
        _registry_protobuf, "_COMPILED", {}
    )  # nothing compiled earlier in this process
    data = _write_log(
        tmp_path / "log3", {"orders": [], "_schemas": list(_proto_text_registry().log)}
    )
    with pytest.raises(KwireError, match=r"pip install grpcio-tools"):
        typed_source(str(data), {"valueFormat": "protobuf"}).arrow_schema()


CUSTOMER_JSON = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "Customer",
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "vip": {"type": "boolean"},
        "address": {"$ref": "#/definitions/Address"},
    },
    "required": ["name"],
    "definitions": {
        "Address": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "zip": {"type": "integer"}},
            "required": ["city"],
        }
    },
}
ORDER_JSON = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "Order",
    "type": "object",
    "properties": {
        "id": {"type": "integer"},
        "customer": {"$ref": "customer.json"},
        "ship_to": {"$ref": "customer.json#/definitions/Address"},
        "previous": {"type": "array", "items": {"$ref": "customer.json#/definitions/Address"}},
    },
    "required": ["id", "customer"],
}


def test_json_schema_references_to_other_subjects(spark: Any, tmp_path: Path) -> None:
    reg = Registry()
    customer_id = reg.register(
        "customer-value", {"schemaType": "JSON", "schema": json.dumps(CUSTOMER_JSON)}
    )["id"]
    order_id = reg.register(
        "orders-value",
        {
            "schemaType": "JSON",
            "schema": json.dumps(ORDER_JSON),
            "references": [{"name": "customer.json", "subject": "customer-value", "version": 1}],
        },
    )["id"]
    assert customer_id != order_id
    expected = {}
    records: list[tuple[bytes | None, bytes | None]] = []
    for i in range(40):
        doc = {
            "id": i,
            "customer": {
                "name": f"c{i}",
                "vip": i % 3 == 0,
                "address": {"city": f"city{i}", "zip": 75000 + i},
            },
            "ship_to": {"city": f"to{i}", "zip": None if i % 2 else i},
            "previous": [{"city": f"p{j}", "zip": j} for j in range(i % 3)],
        }
        if i % 2:
            del doc["ship_to"]["zip"]
        # Confluent's JSONSerializer: magic 0, the schema id, the JSON text
        records.append((str(i).encode(), _framed(order_id, json.dumps(doc).encode())))
        expected[i] = {**doc, "ship_to": {"city": f"to{i}", "zip": None if i % 2 else i}}
    # valid against the orders schema's own keywords, not against the referenced customer schema
    bad = {"id": 99, "customer": {"name": "x", "address": {"city": 5}}}
    records.append((b"bad-ref", _framed(order_id, json.dumps(bad).encode())))
    bad_fragment = {"id": 98, "customer": {"name": "y"}, "ship_to": {"zip": 1}}
    records.append((b"bad-fragment", _framed(order_id, json.dumps(bad_fragment).encode())))
    data = _write_log(tmp_path / "log", {"orders": records, "_schemas": list(reg.log)})

    def read(mode: str) -> Any:
        reader = spark.read.format("kafka-log").option("valueFormat", "json")
        return reader.option("mode", mode).load(str(data))

    df = read("PERMISSIVE")
    value_type = dict(df.dtypes)["value"]
    address = "struct<city:string,zip:bigint>"
    assert value_type == (
        f"struct<id:bigint,customer:struct<name:string,vip:boolean,address:{address}>,"
        f"ship_to:{address},previous:array<{address}>>"
    )
    rows = df.collect()
    good = {r["value"]["id"]: r["value"].asDict(recursive=True) for r in rows if r["value"]}
    assert good == expected
    corrupt = {r["key"]: r["_corrupt_record"] for r in rows if r["value"] is None}
    assert set(corrupt) == {b"bad-ref", b"bad-fragment"}
    # jsonschema-rs quotes with ", jsonschema with '
    assert re.search(r"5 is not of type .string.", corrupt[b"bad-ref"])
    assert re.search(r".city. is a required property", corrupt[b"bad-fragment"])
    assert read("DROPMALFORMED").count() == 40
    with pytest.raises(Exception, match=r"CorruptRecordError|JSON"):
        read("FAILFAST").collect()


def test_json_schema_reference_types_follow_ids_and_guard_cycles() -> None:
    from kwire.spark._registry_json import _Json
    from kwire.spark._registry_store import SchemaEntry, SchemaStore

    base = "https://example.com/schemas/"
    node = {
        "$id": f"{base}node.json",
        "type": "object",
        "properties": {"label": {"type": "string"}, "next": {"$ref": "node.json"}},
    }
    root = {
        "$id": f"{base}graph.json",
        "type": "object",
        "properties": {
            "head": {"$ref": "node.json"},  # resolved against $id: base + node.json
            "tail": {"$ref": f"{base}node.json#/properties/label"},
            "elsewhere": {"$ref": "https://other.example/unknown.json"},
        },
    }
    store = SchemaStore()
    store.add(SchemaEntry(1, "JSON", json.dumps(node), subject="node", version=1))
    refs = (("node.json", "node", 1),)
    store.add(SchemaEntry(2, "JSON", json.dumps(root), refs, subject="graph", version=1))
    decoder = _Json(store, store.latest("graph"))
    assert str(decoder.arrow_type()) == (
        "struct<head: struct<label: string, next: string>, tail: string, elsewhere: string>"
    )
    check = decoder.validator(store.get(2))
    assert check({"head": {"label": "a", "next": {"label": "b"}}}) is None
    assert check({"head": {"label": "a", "next": {"label": 3}}})


def test_protobuf_source_imports_builtins_and_serialized_references() -> None:
    """Imports the registry resolves without references (google/protobuf, google/type, confluent),
    and references mixing the two stored forms (text importing base64 and base64 importing text)."""
    import base64

    from google.protobuf import descriptor_pb2

    from kwire.spark._registry_protobuf import _Protobuf
    from kwire.spark._registry_store import SchemaEntry, SchemaStore

    store = SchemaStore()
    builtins = """syntax = "proto3";
package p;

import "confluent/meta.proto";
import "confluent/type/decimal.proto";
import "google/type/date.proto";
import "google/protobuf/wrappers.proto";

message M {
  confluent.type.Decimal price = 1 [(confluent.field_meta) = { params: [{ key: "precision", value: "8" }] }];
  google.type.Date day = 2;
  google.protobuf.StringValue note = 3;
}
"""
    store.add(SchemaEntry(1, "PROTOBUF", builtins, subject="m-value", version=1))
    assert str(_Protobuf(store, store.get(1)).arrow_type()) == (
        "struct<price: struct<value: binary, precision: int64, scale: int32>, "
        "day: struct<year: int32, month: int32, day: int32>, note: struct<value: string>>"
    )
    # base64 x.proto (importing a well-known file) imported by a .proto text schema
    F = descriptor_pb2.FieldDescriptorProto
    x = descriptor_pb2.FileDescriptorProto(
        name="x.proto", package="x", syntax="proto3", dependency=["google/protobuf/timestamp.proto"]
    )
    x.message_type.add(name="X").field.add(
        name="t", number=1, type=F.TYPE_MESSAGE, type_name=".google.protobuf.Timestamp"
    )
    serialized = base64.b64encode(x.SerializeToString()).decode()
    store.add(SchemaEntry(2, "PROTOBUF", serialized, subject="x-value", version=1))
    text = 'syntax = "proto3";\nimport "x.proto";\nmessage Y { x.X x = 1; string s = 2; }\n'
    refs = (("x.proto", "x-value", 1),)
    store.add(SchemaEntry(3, "PROTOBUF", text, refs, subject="y-value", version=1))
    y = _Protobuf(store, store.get(3))
    assert str(y.arrow_type()) == (
        "struct<x: struct<t: struct<seconds: int64, nanos: int32>>, s: string>"
    )
    assert [f.name for f in y.files(store.get(3))] == [
        "google/protobuf/timestamp.proto",
        "x.proto",
        "schema_3.proto",
    ]
    # base64 w.proto importing the text schema y-value under the name y.proto
    w = descriptor_pb2.FileDescriptorProto(
        name="w.proto", package="w", syntax="proto3", dependency=["y.proto"]
    )
    w.message_type.add(name="W").field.add(name="y", number=1, type=F.TYPE_MESSAGE, type_name=".Y")
    serialized = base64.b64encode(w.SerializeToString()).decode()
    refs = (("y.proto", "y-value", 1),)
    store.add(SchemaEntry(4, "PROTOBUF", serialized, refs, subject="w-value", version=1))
    decoder = _Protobuf(store, store.get(4))
    assert str(decoder.arrow_type()).startswith("struct<y: struct<x: struct<t: struct<seconds")
    msg = decoder.message(store.get(4), (0,))()
    msg.y.x.t.seconds = 7
    msg.y.s = "hi"
    again = decoder.message(store.get(4), (0,)).FromString(msg.SerializeToString())
    assert again.y.x.t.seconds == 7 and again.y.s == "hi"
