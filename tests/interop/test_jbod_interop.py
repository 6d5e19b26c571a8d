"""JBOD with real clients: a broker with three log directories (the data directory and two more
``log.dirs``). confluent-kafka creates a topic and produces; kafka-python's DescribeLogDirs sees
each partition in its own directory (the fewest-partitions placement); Kafka's Java Admin (3.9.1)
moves a replica to another directory with AlterReplicaLogDirs and sees it there with
DescribeLogDirs; the records read back through the moved log, also after a restart.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pytest
from interop_helpers import ck_consume, ck_produce, expected_record, java_admin

pytestmark = [
    pytest.mark.interop,
    pytest.mark.filterwarnings("ignore::DeprecationWarning:kafka"),
]

N = 9


def described_dirs(bootstrap: str) -> dict[str, set[tuple[str, int]]]:
    """kafka-python's DescribeLogDirs: directory -> the replicas in it."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from kafka import KafkaAdminClient

        admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10000)
    try:
        (described,) = admin.describe_log_dirs()
    finally:
        admin.close()
    return {
        d["log_dir"]: {
            (t["name"], p["partition_index"]) for t in d["topics"] for p in t["partitions"]
        }
        for d in described["log_dirs"]
    }


def test_three_log_dirs(start_broker: Any, tmp_path: Path) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    extra = [str((tmp_path / name).absolute()) for name in ("dir-b", "dir-c")]
    config = {"log.dirs": ",".join(extra)}
    broker = start_broker(config=config)
    main = str(Path(broker.data_dir).absolute())
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for future in admin.create_topics([NewTopic("jbod", 3, 1)]).values():
        future.result(10)
    records = [expected_record(i) for i in range(N)]
    ck_produce(broker.bootstrap, "jbod", records)
    assert described_dirs(broker.bootstrap) == {
        main: {("jbod", 0)},
        extra[0]: {("jbod", 1)},
        extra[1]: {("jbod", 2)},
    }
    moved, seen = java_admin(
        broker.bootstrap,
        {"op": "alterReplicaLogDirs", "replicas": [["jbod", 0, 1, extra[1]]]},
        {"op": "describeLogDirs", "brokers": [1]},
    )
    assert moved["result"] == {"jbod-0-1": None}, moved
    replicas = {d: set(v["replicas"]) for d, v in seen["result"]["1"].items()}
    assert replicas == {main: set(), extra[0]: {"jbod-1"}, extra[1]: {"jbod-0", "jbod-2"}}
    assert (Path(extra[1]) / "jbod-0").is_dir() and not (Path(main) / "jbod-0").exists()
    got = ck_consume(broker.bootstrap, "jbod", N)
    assert sorted(r.sort_key() for r in got) == sorted(r.sort_key() for r in records)
    # Each directory is a Kafka log dir of its own, and a restart finds every log where it is.
    ids = {
        (Path(d) / "meta.properties").read_text().split("directory.id=")[1][:22]
        for d in (main, *extra)
    }
    assert len(ids) == 3
    data_dir = broker.data_dir
    broker.stop()
    again = start_broker(data_dir=data_dir, config=config)
    # (the consumer's __consumer_offsets partitions went to the directories too, spread out)
    assert {r for r in described_dirs(again.bootstrap)[extra[1]] if r[0] == "jbod"} == {
        ("jbod", 0),
        ("jbod", 2),
    }
    got = ck_consume(again.bootstrap, "jbod", N)
    assert sorted(r.sort_key() for r in got) == sorted(r.sort_key() for r in records)
