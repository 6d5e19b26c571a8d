"""``kwire dump --offsets-decoder`` and ``--transaction-log-decoder`` against the text of Kafka 3.9's
``DumpLogSegments``:

* ``OffsetsMessageParser``: ``key: {"type":"<record type>","data":{...}} payload:
  {"version":"<value version>","data":{...}}`` (the JsonConverter JSON of the messages; a "consumer"
  group's member subscription and assignment decoded), ``payload: <DELETE>`` for a tombstone,
  ``key: Unknown record type N at offset O, skipping.`` (no payload) for another record type;
* ``TransactionLogMessageParser`` (``TransactionLog.formatRecordKeyAndValue``):
  ``key: transaction_metadata::transactionalId=<id> payload: producerId:P,producerEpoch:E,
  state=S,partitions=[t-0,...],txnLastUpdateTimestamp=T,txnTimeoutMs=M``.

The records are the ones kwire's broker writes when a real client (confluent-kafka) joins a group,
commits offsets and runs a transaction with ``send_offsets_to_transaction``; a few hand-made records
cover tombstones, unknown types and the Scala hash-set order of a transaction's partitions.
"""

from __future__ import annotations

import json
import re
import struct
import time
from pathlib import Path
from typing import Any

import pytest

from kwire.cli import main
from kwire.protocol import message_class
from kwire.records import BatchBuilder

WAIT = 30.0


def dump(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str], list[str]]:
    code = main(["dump", *args])
    captured = capsys.readouterr()
    return code, captured.out.splitlines(), captured.err.splitlines()


def prefixed(name: str, version: int, **fields: Any) -> bytes:
    return struct.pack(">h", version) + message_class(name)(**fields).encode(version)


def write_segment(path: Path, records: list[tuple[bytes | None, bytes | None]]) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    builder = BatchBuilder()
    for i, (key, value) in enumerate(records):
        builder.append(offset=i, timestamp=1_700_000_000_000 + i, key=key, value=value)
    log = path / "00000000000000000000.log"
    log.write_bytes(builder.build())
    return log


def segment_logs(data_dir: Path, topic: str) -> list[str]:
    return sorted(str(p) for p in data_dir.glob(f"{topic}-*/*.log") if p.stat().st_size > 0)


@pytest.fixture(scope="module")
def broker_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data dir where a confluent-kafka consumer group committed offsets (group "dg", topic
    "dt", 2 partitions) and a transactional producer ("dump-txn") committed one transaction with
    send_offsets_to_transaction: offsets 2 then 3 (in the transaction) for both partitions."""
    ck = pytest.importorskip("confluent_kafka")
    from kwire.broker import Broker

    data_dir = tmp_path_factory.mktemp("dump-decoders") / "data"
    broker = Broker(
        str(data_dir),
        host="127.0.0.1",
        port=0,
        config={"group.initial.rebalance.delay.ms": "0", "num.partitions": "1"},
    )
    broker.start()
    try:
        broker.create_topic("dt", 2)
        broker.create_topic("dt-out", 1)
        base = {"bootstrap.servers": broker.bootstrap, "broker.address.family": "v4"}
        producer = ck.Producer(base)
        for i in range(6):
            producer.produce("dt", value=b"v%d" % i, partition=i % 2)
        assert producer.flush(WAIT) == 0

        consumer = ck.Consumer(
            {
                **base,
                "group.id": "dg",
                "client.id": "dump-test",
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
            }
        )
        consumer.subscribe(["dt"])
        seen = 0
        deadline = time.monotonic() + WAIT
        while seen < 6 and time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is not None and msg.error() is None:
                seen += 1
        assert seen == 6
        consumer.commit(
            offsets=[
                ck.TopicPartition("dt", 0, 2, metadata="meta-0"),
                ck.TopicPartition("dt", 1, 2),
            ],
            asynchronous=False,
        )
        group_metadata = consumer.consumer_group_metadata()

        txn = ck.Producer({**base, "transactional.id": "dump-txn"})
        txn.init_transactions(WAIT)
        txn.begin_transaction()
        txn.produce("dt-out", value=b"out", partition=0)
        txn.send_offsets_to_transaction(
            [ck.TopicPartition("dt", 0, 3), ck.TopicPartition("dt", 1, 3)],
            group_metadata,
            WAIT,
        )
        txn.commit_transaction(WAIT)
        consumer.close()
    finally:
        broker.stop()
    return data_dir


def test_offsets_decoder_on_broker_written_records(
    capsys: pytest.CaptureFixture[str], broker_data: Path
) -> None:
    logs = segment_logs(broker_data, "__consumer_offsets")
    assert logs
    code, out, err = dump(capsys, "--offsets-decoder", "--files", ",".join(logs))
    assert code == 0, err
    assert err == []
    records = [line for line in out if line.startswith("| offset: ")]
    assert records
    pattern = re.compile(r"^\| offset: \d+ CreateTime: \d+ keySize: \d+ valueSize: -?\d+ .*? key: ")
    keys: list[dict[str, Any]] = []
    payloads: list[Any] = []
    for line in records:
        if " endTxnMarker: " in line:
            continue  # the transaction's COMMIT marker in the group's partition
        assert pattern.match(line), line
        key_text, _, payload_text = line.partition(" key: ")[2].partition(" payload: ")
        keys.append(json.loads(key_text))
        payloads.append(payload_text if payload_text == "<DELETE>" else json.loads(payload_text))
        assert " " not in key_text  # Jackson's compact JSON
    commits: dict[tuple[str, str, int], list[Any]] = {}
    for k, p in zip(keys, payloads, strict=True):
        if k["type"] in ("0", "1"):
            where = (k["data"]["group"], k["data"]["topic"], k["data"]["partition"])
            commits.setdefault(where, []).append(p)
    # Kafka 3.9 writes OffsetCommitKey v1 and OffsetCommitValue v3.
    assert {k["type"] for k in keys if "topic" in k["data"]} == {"1"}
    assert set(commits) == {("dg", "dt", 0), ("dg", "dt", 1)}
    for partition in (0, 1):
        values = commits[("dg", "dt", partition)]
        assert [v["data"]["offset"] for v in values] == [2, 3]  # the plain one, then the txn's
        for value in values:
            assert value["version"] == "3"
            assert set(value["data"]) == {"offset", "leaderEpoch", "metadata", "commitTimestamp"}
    # confluent-kafka-python sends the metadata with its C string's NUL (metadata_size = strlen + 1)
    assert commits[("dg", "dt", 0)][0]["data"]["metadata"].rstrip("\x00") == "meta-0"
    groups = [
        (k["data"]["group"], p) for k, p in zip(keys, payloads, strict=True) if k["type"] == "2"
    ]
    assert groups
    group_id, value = groups[0]
    assert group_id == "dg"
    assert value["version"] == "3"
    data = value["data"]
    assert data["protocolType"] == "consumer"
    member = data["members"][0]
    assert member["clientId"] == "dump-test"
    # The embedded consumer protocol is decoded, not left as base64.
    assert member["subscription"]["topics"] == ["dt"]
    assigned = member["assignment"]["assignedPartitions"]
    assert assigned == [{"topic": "dt", "partitions": [0, 1]}]
    # The exact layout of one line, rebuilt from the parsed key and value.
    first = next(line for line in records if '"type":"1"' in line)
    key_json = json.loads(first.partition(" key: ")[2].partition(" payload: ")[0])
    assert list(key_json) == ["type", "data"]
    assert list(key_json["data"]) == ["group", "topic", "partition"]


def test_transaction_log_decoder_on_broker_written_records(
    capsys: pytest.CaptureFixture[str], broker_data: Path
) -> None:
    logs = segment_logs(broker_data, "__transaction_state")
    assert logs
    code, out, err = dump(capsys, "--transaction-log-decoder", "--files", ",".join(logs))
    assert code == 0, err
    records = [line for line in out if line.startswith("| offset: ")]
    line_re = re.compile(
        r"^\| offset: \d+ CreateTime: \d+ keySize: \d+ valueSize: \d+ sequence: -?\d+ "
        r"headerKeys: \[\] key: transaction_metadata::transactionalId=dump-txn "
        r"payload: producerId:(\d+),producerEpoch:(\d+),state=(\w+),partitions=\[([^\]]*)\],"
        r"txnLastUpdateTimestamp=\d+,txnTimeoutMs=\d+$"
    )
    states = []
    for line in records:
        found = line_re.match(line)
        assert found, line
        states.append((found.group(3), found.group(4)))
    names = [s for s, _ in states]
    assert names[0] == "Empty" and states[0][1] == ""
    assert names[-3:] == ["Ongoing", "PrepareCommit", "CompleteCommit"] or names[-2:] == [
        "PrepareCommit",
        "CompleteCommit",
    ], states
    ongoing = dict(states)["PrepareCommit"].split(",")
    assert "dt-out-0" in ongoing
    assert any(p.startswith("__consumer_offsets-") for p in ongoing)
    assert dict(states)["CompleteCommit"] == ""


def test_offsets_decoder_exact_lines(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    commit_key = prefixed("OffsetCommitKey", 1, group="g", topic="t", partition=2)
    commit_value = prefixed(
        "OffsetCommitValue",
        3,
        offset=42,
        leader_epoch=-1,
        metadata="m\x01",
        commit_timestamp=1700000000123,
    )
    group_key = prefixed("GroupMetadataKey", 2, group="g")
    log = write_segment(
        tmp_path / "__consumer_offsets-0",
        [
            (commit_key, commit_value),
            (commit_key, None),
            (group_key, None),
            (struct.pack(">h", 99) + b"xx", b"\x00\x00"),
            (prefixed("OffsetCommitKey", 1, group="g", topic="t", partition=2)[:5], None),
        ],
    )
    code, out, err = dump(
        capsys, "--offsets-decoder", "--skip-record-metadata", "--files", str(log)
    )
    assert code == 0, err
    assert out[3:] == [
        '| key: {"type":"1","data":{"group":"g","topic":"t","partition":2}} payload: '
        '{"version":"3","data":{"offset":42,"leaderEpoch":-1,"metadata":"m\\u0001",'
        '"commitTimestamp":1700000000123}}',
        '| key: {"type":"1","data":{"group":"g","topic":"t","partition":2}} payload: <DELETE>',
        '| key: {"type":"2","data":{"group":"g"}} payload: <DELETE>',
        "| key: Unknown record type 99 at offset 3, skipping.",
        "| key: Error at offset 4, skipping. Could not read record with version 1 from key's buffer "
        + "due to: "
        + out[7].partition("due to: ")[2],
    ]
    assert out[7].endswith(".")


def test_transaction_log_decoder_exact_lines(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    value_cls: Any = message_class("TransactionLogValue")

    def txn_value(status: int, partitions: list[tuple[str, list[int]]]) -> bytes:
        return prefixed(
            "TransactionLogValue",
            1,
            producer_id=1000,
            producer_epoch=3,
            transaction_timeout_ms=60000,
            transaction_status=status,
            transaction_partitions=[
                value_cls.PartitionsSchema(topic=t, partition_ids=ps) for t, ps in partitions
            ],
            transaction_last_update_timestamp_ms=1700000000999,
            transaction_start_timestamp_ms=1700000000000,
        )

    key = prefixed("TransactionLogKey", 0, transactional_id="tx-1")
    log = write_segment(
        tmp_path / "__transaction_state-0",
        [
            (key, txn_value(0, [("ignored", [0])])),
            (key, txn_value(1, [("orders", [0, 1, 2]), ("__consumer_offsets", [13])])),
            (key, txn_value(4, [])),
            (key, None),
            (struct.pack(">h", 5) + b"??", b"\x00"),
        ],
    )
    code, out, err = dump(
        capsys, "--transaction-log-decoder", "--skip-record-metadata", "--files", str(log)
    )
    assert code == 0, err
    tail = ",txnLastUpdateTimestamp=1700000000999,txnTimeoutMs=60000"
    head = (
        "| key: transaction_metadata::transactionalId=tx-1 payload: producerId:1000,producerEpoch:3"
    )
    assert out[3:] == [
        f"{head},state=Empty,partitions=[]{tail}",
        # Scala 2.13's mutable.HashSet order of the TopicPartitions (Kafka's hashCode).
        f"{head},state=Ongoing,partitions=[__consumer_offsets-13,orders-0,orders-1,orders-2]{tail}",
        f"{head},state=CompleteCommit,partitions=[]{tail}",
        "| key: transaction_metadata::transactionalId=tx-1 payload: <DELETE>",
        "| key: unknown::version=5",
    ]


def test_scala_hash_set_order_matches_kafkas_hash_code() -> None:
    """Checked against Scala 2.13.18's mutable.HashSet of Kafka 3.9.1's TopicPartition (the order
    its ``mkString`` prints)."""
    from kwire._wire import java_string_hash
    from kwire.log.internal_topics import scala_hash_set_order as _scala_hash_set_order

    assert java_string_hash("orders") == -1008770331  # "orders".hashCode()
    assert java_string_hash("ab") == 97 * 31 + 98
    many = [("t", p) for p in range(20)] + [("dt-out", p) for p in range(5)]
    expected = (
        "t-19,t-17,t-15,t-13,t-11,t-9,dt-out-2,t-7,dt-out-0,t-5,t-3,dt-out-4,t-1,t-18,t-16,t-14,"
        "t-12,t-10,dt-out-1,t-8,t-6,t-4,dt-out-3,t-2,t-0"
    )
    assert ",".join(f"{t}-{p}" for t, p in _scala_hash_set_order(many)) == expected


def test_cluster_metadata_decoder_on_the_broker_metadata_log(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from kwire.broker import Broker

    with Broker(tmp_path / "data", port=0) as broker:
        broker.create_topic("orders", 3, {"retention.ms": "1000"})
    segment = next((tmp_path / "data" / "__cluster_metadata-0").glob("*.log"))
    assert (
        main(["dump", "--files", str(segment), "--print-data-log", "--cluster-metadata-decoder"])
        == 0
    )
    out = capsys.readouterr().out
    payloads = [json.loads(m) for m in re.findall(r"payload: (\{.*\})$", out, re.M)]
    types = [p["type"] for p in payloads]
    assert "FEATURE_LEVEL_RECORD" in types and "REGISTER_BROKER_RECORD" in types
    (topic,) = [p for p in payloads if p["type"] == "TOPIC_RECORD"]
    assert topic["data"]["name"] == "orders"
    assert sum(p["type"] == "PARTITION_RECORD" for p in payloads) == 3
    (config,) = [p for p in payloads if p["type"] == "CONFIG_RECORD"]
    assert (config["data"]["name"], config["data"]["value"]) == ("retention.ms", "1000")
    assert " key: " not in out  # metadata records have no key
