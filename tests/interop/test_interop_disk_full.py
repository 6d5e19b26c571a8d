"""A disk that fills under a confluent-kafka producer (acks=all): issue 21, item 3, end to end.

The broker's data dir sits on a real 4 MiB tmpfs (skipped where ``mount`` is not permitted), or
its writes start failing through an injected hook (``diskfaults.DiskFull``: ENOSPC, the first
write torn) after 2,000 acknowledged records. The producer sends more than fits; then the space
comes back (the tmpfs is remounted bigger, the hook disarmed) and it sends again. Kafka's
promise, checked: the broker stops acknowledging at the first I/O error (KAFKA_STORAGE_ERROR,
then it halts, its only log dir offline), and after a restart on the same data dir every
acknowledged record is read back, each whole, with nothing that was not sent. Before the fix,
the records acknowledged once the space came back were lost (1,425 of 7,940 in one run).
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import confluent_kafka as ck
import pytest
from diskfaults import DiskFull
from interop_helpers import ck_conf, ck_consume

pytestmark = pytest.mark.interop

TOPIC = "full"
VALUE_BYTES = 1024
FIRST = 6000  # ~6 MiB: more than the 4 MiB tmpfs holds
SECOND = 500  # sent once the space is back
ARM_AFTER = 2000


def _value(i: int) -> bytes:
    head = b"record-%06d:" % i
    return head + bytes([i % 251]) * (VALUE_BYTES - len(head))


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Path]:
    mnt = tmp_path / "tmpfs"
    mnt.mkdir()
    try:
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mnt)],
            capture_output=True,
            timeout=20,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        pytest.skip(f"cannot mount a tmpfs: {exc}")
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {done.stderr.decode(errors='replace').strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True, timeout=20)


def _send(
    bootstrap: str, first: int, count: int, on_ack: Callable[[int], None] | None = None
) -> tuple[dict[int, int], int]:
    """Produce values ``first .. first+count-1`` (acks=all, idempotent); the acknowledged ones
    (index -> offset) and how many failed. Bounded: message.timeout.ms, then a flush deadline."""
    producer = ck.Producer(
        ck_conf(
            bootstrap,
            **{
                "acks": "all",
                "enable.idempotence": True,
                "linger.ms": 5,
                "message.timeout.ms": 6000,
                "reconnect.backoff.max.ms": 500,
            },
        )
    )
    acked: dict[int, int] = {}
    failed: list[int] = []

    def report(index: int) -> Callable[[Any, Any], None]:
        def done(err: Any, msg: Any) -> None:
            if err is None:
                acked[index] = msg.offset()
                if on_ack is not None:
                    on_ack(len(acked))
            else:
                failed.append(index)

        return done

    deadline = time.monotonic() + 60
    for i in range(first, first + count):
        while time.monotonic() < deadline:
            try:
                producer.produce(TOPIC, key=b"%d" % i, value=_value(i), on_delivery=report(i))
                break
            except BufferError:
                producer.poll(0.05)
        producer.poll(0)
    producer.flush(30)
    assert len(acked) + len(failed) == count, "delivery reports missing after the deadline"
    return acked, len(failed)


def _wait_halted(broker: Any, timeout: float = 20.0) -> None:
    end = time.monotonic() + timeout
    while broker.running and time.monotonic() < end:
        time.sleep(0.05)


@pytest.mark.parametrize("disk", ["tmpfs", "injected"])
def test_a_full_disk_loses_no_acknowledged_record(
    disk: str,
    start_broker: Callable[..., Any],
    tmp_path: Path,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if disk == "tmpfs":
        mnt = request.getfixturevalue("tmpfs")
        data = mnt / "data"
        hook = None
    else:
        data = tmp_path / "data"
        hook = DiskFull(monkeypatch, lambda p: f"/{TOPIC}-0/" in p)
    broker = start_broker(data_dir=data, config={"log.segment.bytes": "1048576"})
    broker.create_topic(TOPIC, partitions=1)
    bootstrap = broker.bootstrap

    def arm(acked: int) -> None:
        if hook is not None and acked >= ARM_AFTER:
            hook.armed = True

    acked, failed = _send(bootstrap, 0, FIRST, arm)
    assert failed > 0 and acked, f"the disk never filled ({len(acked)} acknowledged)"
    # The space comes back: nothing more is acknowledged, the broker has stopped.
    if hook is not None:
        assert hook.hits
        hook.armed = False
    else:
        subprocess.run(["mount", "-o", "remount,size=64m", str(data.parent)], check=True)
    _wait_halted(broker)
    assert not broker.running and broker.failed_log_dir == str(data)
    later, _ = _send(bootstrap, FIRST, SECOND)
    assert not later, f"{len(later)} records acknowledged by a broker whose log dir failed"
    broker.stop()
    # The next start recovers: every acknowledged record, whole, and nothing never sent.
    again = start_broker(data_dir=data)
    _check_recovered(again.bootstrap, again.end_offsets(TOPIC)[0], acked)


def _check_recovered(bootstrap: str, end: int, acked: dict[int, int]) -> None:
    assert end >= len(acked)
    read = ck_consume(bootstrap, TOPIC, end, timeout=60)
    by_offset = {r.offset: r for r in read}
    for index, offset in acked.items():
        got = by_offset.get(offset)
        assert got is not None and got.value == _value(index), f"acknowledged record {index} lost"
    for r in read:
        assert r.key is not None and r.value == _value(int(r.key)), "a record nobody sent"
    assert len({r.key for r in read}) == len(read), "a record stored twice"


def test_kwire_broker_exits_when_its_disk_fills(
    tmpfs: Path, broker_cli: Callable[..., Any]
) -> None:
    """``kwire broker`` on a full tmpfs: it stops acknowledging, exits with status 1 and says
    why; started again once there is space, it serves every acknowledged record."""
    cli = broker_cli(data_dir=tmpfs, config={"log.segment.bytes": "1048576"})
    acked, failed = _send(cli.bootstrap, 0, FIRST)
    assert failed > 0 and acked, f"the disk never filled ({len(acked)} acknowledged)"
    assert cli.proc.wait(timeout=30) == 1, cli.output()
    (said,) = [line for line in cli.output().splitlines() if line.startswith("kwire broker: stop")]
    assert "data dir" in said and "failed" in said
    assert "No space left on device" in said  # the cause, in the line a terminal user reads last
    subprocess.run(["mount", "-o", "remount,size=64m", str(tmpfs)], check=True)
    again = broker_cli(data_dir=tmpfs)
    consumer = ck.Consumer(ck_conf(again.bootstrap, **{"group.id": "end"}))
    try:
        _low, end = consumer.get_watermark_offsets(ck.TopicPartition(TOPIC, 0), timeout=30)
    finally:
        consumer.close()
    _check_recovered(again.bootstrap, end, acked)
