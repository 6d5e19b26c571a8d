"""What ``kwire broker`` tells an operator about its logs' files, in the order it happened, as Kafka's
``LogManager``, ``LogLoader`` and ``UnifiedLog`` do at INFO: after an unclean shutdown (SIGKILL),
that each log directory is recovered and how many logs it holds, which logs recovered unflushed
segments, and the load's summary, all before the "listening on" line; after a clean one, one
"skipping recovery" line per directory and no line per log. Retention deleting segments names the
segments and the breach (retention time, log start offset), then the log start offset moving and
why (segment deletion, a client's DeleteRecords). Clients: confluent-kafka (librdkafka)."""

from __future__ import annotations

import re
import signal
import time
from pathlib import Path
from typing import Any

import confluent_kafka as ck
import pytest
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ResourceType,
)
from interop_helpers import Rec, ck_conf, ck_produce, wait_until

pytestmark = pytest.mark.interop

TIMEOUT = 20.0


def _lines(broker: Any) -> list[str]:
    return list(broker.err_path.read_text(errors="replace").splitlines())


def _index(lines: list[str], pattern: str) -> int:
    found = [i for i, line in enumerate(lines) if re.search(pattern, line)]
    assert found, f"no line matches {pattern!r}:\n" + "\n".join(lines[-40:])
    return found[0]


def _create(bootstrap: str, topic: str, config: dict[str, str]) -> None:
    admin = AdminClient(ck_conf(bootstrap))
    new = NewTopic(topic, 1, 1, config=config)
    for f in admin.create_topics([new], request_timeout=TIMEOUT).values():
        f.result(timeout=TIMEOUT)


def test_recovery_after_a_kill_is_logged_per_directory_and_per_log(
    tmp_path: Path, broker_cli: Any
) -> None:
    data = tmp_path / "data"
    first = broker_cli(data_dir=data)
    ck_produce(first.bootstrap, "recovered", [Rec(b"k", f"v{i}".encode()) for i in range(5)])
    first.kill(signal.SIGKILL)

    second = broker_cli(data_dir=data)
    lines = _lines(second)
    root = re.escape(str(data.resolve()))
    directory = _index(
        lines,
        rf"INFO kwire\.log: recovering 1 logs from {root} since no clean shutdown file was found$",
    )
    one = _index(
        lines,
        rf"INFO kwire\.log: {root}/recovered-0: recovered 1 unflushed segments from offset 0 "
        r"\(recovery point \d+\): log end offset 5$",
    )
    loaded = _index(
        lines, rf"INFO kwire\.broker: loaded 1 logs in \d+ ms \(unclean log dirs: {root}\)$"
    )
    listening = _index(lines, r"INFO kwire\.broker: listening on ")
    assert directory < one < loaded < listening, lines
    assert second.kill(signal.SIGTERM) == 0, second.output()

    # a clean start: one line for the directory, none for the log, a summary with no unclean dir
    third = broker_cli(data_dir=data)
    lines = _lines(third)
    directory = _index(
        lines,
        rf"INFO kwire\.log: skipping recovery of 1 logs from {root} since clean shutdown file "
        "was found$",
    )
    loaded = _index(lines, r"INFO kwire\.broker: loaded 1 logs in \d+ ms$")
    assert directory < loaded < _index(lines, r"INFO kwire\.broker: listening on "), lines
    assert not [x for x in lines if "recovered-0: recovered" in x], lines


def test_retention_time_deletes_segments_and_moves_the_log_start(
    tmp_path: Path, broker_cli: Any
) -> None:
    b = broker_cli(data_dir=tmp_path / "data", config={"log.retention.check.interval.ms": "200"})
    topic = "aging"
    # one record a batch, about two batches a segment; records an hour old, then kept a minute
    # (set once they are all written: one retention pass deletes every segment)
    _create(b.bootstrap, topic, {"segment.bytes": "180"})
    old = int(time.time() * 1000) - 3_600_000
    records = [Rec(b"k", f"v{i}".encode(), timestamp=old + i) for i in range(6)]
    ck_produce(b.bootstrap, topic, records, **{"linger.ms": 0, "batch.num.messages": 1})
    admin = AdminClient(ck_conf(b.bootstrap))
    resource = ConfigResource(
        ResourceType.TOPIC,
        topic,
        incremental_configs=[
            ConfigEntry("retention.ms", "60000", incremental_operation=AlterConfigOpType.SET)
        ],
    )
    for f in admin.incremental_alter_configs([resource], request_timeout=TIMEOUT).values():
        f.result(timeout=TIMEOUT)
    moved = rf"INFO kwire\.log: \S+/{topic}-0: incremented log start offset to 6 due to segment deletion$"
    wait_until("the log start offset line", lambda: any(re.search(moved, x) for x in _lines(b)))
    assert b.kill(signal.SIGTERM) == 0, b.output()
    lines = _lines(b)
    deleting = [
        i
        for i, x in enumerate(lines)
        if re.search(
            rf"INFO kwire\.log: \S+/{topic}-0: deleting \d+ segments \[0(, \d+)*\] \(\d+ bytes\) "
            r"due to retention time 60000ms breach$",
            x,
        )
    ]
    assert len(deleting) == 1, lines  # one line for the pass, not one a segment
    assert deleting[0] < _index(lines, moved), lines


def test_delete_records_moves_the_log_start_then_deletes_the_segments_below_it(
    tmp_path: Path, broker_cli: Any
) -> None:
    b = broker_cli(data_dir=tmp_path / "data", config={"log.retention.check.interval.ms": "200"})
    topic = "trimmed"
    _create(b.bootstrap, topic, {"segment.bytes": "180"})
    records = [Rec(b"k", f"v{i}".encode()) for i in range(10)]
    ck_produce(b.bootstrap, topic, records, **{"linger.ms": 0, "batch.num.messages": 1})
    admin = AdminClient(ck_conf(b.bootstrap))
    deleted = admin.delete_records([ck.TopicPartition(topic, 0, 5)], request_timeout=TIMEOUT)
    for f in deleted.values():
        assert f.result(timeout=TIMEOUT).low_watermark == 5
    breach = (
        rf"INFO kwire\.log: \S+/{topic}-0: deleting \d+ segments \[0(, \d+)*\] \(\d+ bytes\) "
        r"due to log start offset 5 breach$"
    )
    wait_until("the segment deletion line", lambda: any(re.search(breach, x) for x in _lines(b)))
    assert b.kill(signal.SIGTERM) == 0, b.output()
    lines = _lines(b)
    moved = _index(
        lines,
        rf"INFO kwire\.log: \S+/{topic}-0: incremented log start offset to 5 due to client "
        "delete records request$",
    )
    assert moved < _index(lines, breach), lines
