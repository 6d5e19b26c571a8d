"""JBOD: ``log.dirs`` with several directories, as Kafka's ``LogManager`` runs them. Each directory
gets its own ``meta.properties`` (its own directory id) and checkpoints; a new partition goes to
the directory with the fewest partitions; a restart finds every log where it is; AlterReplicaLogDirs
moves a log between directories for real (records, log start offset and all); DescribeLogDirs
lists every directory with the replicas it holds."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from kwire.broker import BrokerState
from kwire.broker._data import append_to_partition
from kwire.log import META_PROPERTIES
from kwire.protocol import ErrorCode, message_class, struct_class
from kwire.records import build_batch, read_batches
from tests.unit.broker.test_txn import NOW, call, make_state

ALTER = message_class("AlterReplicaLogDirsRequest")
ALTER_DIR = struct_class(ALTER, "dirs")
ALTER_TOPIC = struct_class(ALTER, "dirs", "topics")


def dirs_of(state: BrokerState, topic: str) -> list[str]:
    return [os.path.basename(state.log_dir_of(p).path) for p in state.topics[topic].partitions]


def properties(path: Path) -> dict[str, str]:
    text = (path / META_PROPERTIES).read_text()
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


def produce(state: BrokerState, topic: str, index: int, values: list[bytes]) -> None:
    partition = state.partition(topic, index)
    assert partition is not None
    batch = build_batch([(None, NOW, None, v) for v in values], 2)
    assert append_to_partition(state, partition, batch, 9, NOW).error_code == 0


def values(state: BrokerState, topic: str, index: int) -> list[bytes]:
    p = state.partition(topic, index)
    assert p is not None
    data = p.log.read(p.log.log_start_offset, 1 << 24).read_bytes()
    return [bytes(r.value or b"") for b in read_batches(data) for r in b]


def open_state(tmp_path: Path) -> BrokerState:
    extra = f"{tmp_path / 'd2'}, {tmp_path / 'd3'}"
    return make_state(tmp_path / "d1", **{"log.dirs": extra})


def test_placement_meta_properties_and_restart(tmp_path: Path) -> None:
    state = open_state(tmp_path)
    try:
        state.create_topic("a", 4)
        state.create_topic("b", 2)
        # LogManager.nextLogDirs: the fewest partitions first, the first of equals.
        assert dirs_of(state, "a") == ["d1", "d2", "d3", "d1"]
        assert dirs_of(state, "b") == ["d2", "d3"]
        produce(state, "b", 1, [b"x", b"y"])
    finally:
        state.close()
    ids = {name: properties(tmp_path / name) for name in ("d1", "d2", "d3")}
    assert len({p["directory.id"] for p in ids.values()}) == 3
    assert {p["cluster.id"] for p in ids.values()} == {ids["d1"]["cluster.id"]}
    assert {p["node.id"] for p in ids.values()} == {"1"}
    assert (tmp_path / "d3" / "b-1" / "00000000000000000000.log").exists()
    assert (tmp_path / "d2" / "recovery-point-offset-checkpoint").read_text().splitlines()[1] == "2"
    again = open_state(tmp_path)
    try:
        assert dirs_of(again, "a") == ["d1", "d2", "d3", "d1"]
        assert dirs_of(again, "b") == ["d2", "d3"]
        assert values(again, "b", 1) == [b"x", b"y"]
        # The ids were kept, not made again.
        assert properties(tmp_path / "d2")["directory.id"] == ids["d2"]["directory.id"]
    finally:
        again.close()


def test_alter_replica_log_dirs_moves_the_log(tmp_path: Path) -> None:
    state = open_state(tmp_path)
    try:
        state.create_topic("m", 1)
        produce(state, "m", 0, [b"1", b"2", b"3"])
        partition = state.partition("m", 0)
        assert partition is not None
        partition.log.delete_records_before(1)  # a log start above the first segment's base
        target = str((tmp_path / "d3").absolute())
        response = call(
            state,
            "AlterReplicaLogDirs",
            2,
            dirs=[ALTER_DIR(path=target, topics=[ALTER_TOPIC(name="m", partitions=[0])])],
        )
        assert [p.error_code for r in response.results for p in r.partitions] == [0]
        assert dirs_of(state, "m") == ["d3"]
        assert not (tmp_path / "d1" / "m-0").exists() and (tmp_path / "d3" / "m-0").is_dir()
        moved = state.partition("m", 0)
        assert moved is not None and moved.log.log_start_offset == 1
        assert values(state, "m", 0) == [b"1", b"2", b"3"]  # whole batches from the log start
        produce(state, "m", 0, [b"4"])  # it keeps serving from there
        unknown = call(
            state,
            "AlterReplicaLogDirs",
            2,
            dirs=[ALTER_DIR(path="/nowhere", topics=[ALTER_TOPIC(name="m", partitions=[0])])],
        )
        assert [p.error_code for r in unknown.results for p in r.partitions] == [
            ErrorCode.LOG_DIR_NOT_FOUND
        ]
        described = call(state, "DescribeLogDirs", 4, topics=None)
        listed: dict[str, Any] = {
            os.path.basename(r.log_dir): {
                (t.name, p.partition_index) for t in r.topics for p in t.partitions
            }
            for r in described.results
        }
        assert listed == {"d1": set(), "d2": set(), "d3": {("m", 0)}}
        assert all(r.total_bytes > 0 and r.usable_bytes > 0 for r in described.results)
    finally:
        state.close()
    again = open_state(tmp_path)
    try:
        assert dirs_of(again, "m") == ["d3"]
        assert values(again, "m", 0) == [b"1", b"2", b"3", b"4"]
        p = again.partition("m", 0)
        assert p is not None and p.log.log_start_offset == 1
    finally:
        again.close()
