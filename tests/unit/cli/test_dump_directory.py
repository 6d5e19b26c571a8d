"""``kwire dump --files DIR``: a whole data directory (every partition's segments, oldest first;
the internal topics decoded) or one partition directory, instead of "Ignoring unknown file"."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from kwire.broker import Broker
from kwire.cli import main


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A broker's data directory: topic "orders" (2 partitions, 3 records) and a group's commit."""
    path = tmp_path_factory.mktemp("dump") / "data"
    config = {"offsets.topic.num.partitions": "1", "group.initial.rebalance.delay.ms": "0"}
    with Broker(path, config=config) as broker:
        broker.create_topic("orders", partitions=2)
        producer = Producer({"bootstrap.servers": broker.bootstrap})
        for i in range(3):
            producer.produce("orders", f"order-{i}".encode(), partition=i % 2)
        assert producer.flush(20) == 0
        del producer
        consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "billing"})
        consumer.commit(offsets=[TopicPartition("orders", 0, 2)], asynchronous=False)
        consumer.close()
    return path


def dump(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["dump", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_a_data_directory(data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = dump(capsys, "--files", str(data_dir), "--print-data-log")
    assert code == 0, err
    assert "Ignoring unknown file" not in err
    dumped = [
        line.removeprefix("Dumping ") for line in out.splitlines() if line.startswith("Dumping ")
    ]
    assert dumped == [
        str(data_dir / "__cluster_metadata-0" / "00000000000000000000.log"),
        str(data_dir / "__consumer_offsets-0" / "00000000000000000000.log"),
        str(data_dir / "orders-0" / "00000000000000000000.log"),
        str(data_dir / "orders-1" / "00000000000000000000.log"),
    ]
    assert "payload: order-0" in out and "payload: order-2" in out and "payload: order-1" in out
    # __consumer_offsets decoded as --offsets-decoder does, whatever the options
    assert 'key: {"type":"1","data":{"group":"billing","topic":"orders","partition":0}}' in out
    # the cluster metadata log too (--cluster-metadata-decoder): the topic's record
    assert '"type":"TOPIC_RECORD"' in out and '"name":"orders"' in out


def test_a_partition_directory(data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = dump(capsys, "--files", str(data_dir / "orders-1"), "--json")
    assert code == 0, err
    rows = [json.loads(line) for line in out.splitlines()]
    files = [r["file"] for r in rows if r["type"] == "file"]
    assert files == [str(data_dir / "orders-1" / "00000000000000000000.log")]
    assert sum(r["count"] for r in rows if r["type"] == "batch") == 1


def test_a_directory_of_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = dump(capsys, "--files", str(tmp_path))
    assert code == 1
    assert f"{tmp_path}: no partition directories or log segments" in err
