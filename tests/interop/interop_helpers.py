"""Helpers shared by the interop tests (tests/interop): the records every client sends, the
Java client program, deadlines, and reading what the broker stored with kwire.log.

The record pattern (``expected_record(i)``) is the one ``tools/java/ClientsProgram.java`` sends, so
that a test can check what any client produced, whichever client reads it back:

* key ``k-<i>``, or null when ``i % 4 == 0``
* value ``v-<i>-`` + ``x`` * (i % 7), or null (a tombstone) when ``i % 4 == 1``
* headers: ``i % 4 == 2``: ``[("h1", b"a-<i>"), ("h2", None)]``; ``i % 4 == 3``: ``[("h1", b"")]``
* timestamp ``BASE_TS + i`` (CreateTime), partition 0
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pytest

BASE_TS = 1_700_000_000_000
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
CODEC_IDS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}

T = TypeVar("T")


@dataclass(frozen=True)
class Rec:
    """A record as a test compares it: bytes or None, headers as a list of (str, bytes | None)."""

    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]] = field(default_factory=list)
    timestamp: int = -1
    offset: int = -1
    partition: int = 0

    def content(self) -> tuple[Any, ...]:
        """Key, value and headers (what every client keeps, whatever the magic)."""
        return (self.key, self.value, tuple(self.headers))

    def sort_key(self) -> tuple[Any, ...]:
        """``content()`` in a form that sorts (None before any bytes)."""

        def b(v: bytes | None) -> tuple[int, bytes]:
            return (0, b"") if v is None else (1, v)

        return (b(self.key), b(self.value), tuple((k, b(v)) for k, v in self.headers))


def expected_record(i: int, headers: bool = True) -> Rec:
    key = None if i % 4 == 0 else f"k-{i}".encode()
    value = None if i % 4 == 1 else f"v-{i}-{'x' * (i % 7)}".encode()
    hs: list[tuple[str, bytes | None]] = []
    if headers and i % 4 == 2:
        hs = [("h1", f"a-{i}".encode()), ("h2", None)]
    elif headers and i % 4 == 3:
        hs = [("h1", b"")]
    return Rec(key, value, hs, BASE_TS + i, i, 0)


def compressible(r: Rec) -> Rec:
    """``r`` with 300 more bytes of value that compress well. librdkafka and kafka-python send a
    batch uncompressed when compressing does not make it smaller; with these values every batch
    goes out in the codec asked for."""
    value = None if r.value is None else r.value + b"." * 300
    return Rec(r.key, value, r.headers, r.timestamp, r.offset, r.partition)


def free_port() -> int:
    """A loopback port nobody listens on now (for a broker that must come back on the same one)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_until(what: str, check: Callable[[], T | None], timeout: float = 30.0) -> T:
    """Calls ``check`` until it returns something truthy or ``timeout`` seconds passed."""
    deadline = time.monotonic() + timeout
    last: T | None = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what} (last: {last!r})")


# ----------------------------------------------------------------------------- the Java client


def java_clients(*args: str, timeout: float = 120.0) -> dict[str, Any]:
    """Runs tools/java/ClientsProgram.java with ``args``; returns its JSON answer."""
    from kafka_jars import compile_java, java_command

    missing = [tool for tool in ("java", "javac") if shutil.which(tool) is None]
    if missing:
        pytest.fail(f"the Java interop tests need a JDK ({', '.join(missing)} missing)")
    classes = compile_java("ClientsProgram")
    proc = subprocess.run(
        [*java_command("ClientsProgram", classes), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    lines = proc.stdout.strip().splitlines()
    assert proc.returncode == 0 and lines, (
        f"ClientsProgram {args[0]} exited {proc.returncode}\nstdout: {proc.stdout[-2000:]}\n"
        f"stderr: {proc.stderr[-4000:]}"
    )
    reply: dict[str, Any] = json.loads(lines[-1])
    assert reply.get("error") is None, f"ClientsProgram {args[0]}: {reply['error']}"
    return reply


def java_admin(
    bootstrap: str, *ops: dict[str, Any], settings: Sequence[str] = ()
) -> list[dict[str, Any]]:
    """Kafka's Java Admin runs ``ops``; ``settings``: its client configs as ``k=v``."""
    results: list[dict[str, Any]] = java_clients(
        "admin", bootstrap, json.dumps(list(ops)), *settings
    )["results"]
    return results


def from_java(record: dict[str, Any]) -> Rec:
    def unhex(h: str | None) -> bytes | None:
        return None if h is None else bytes.fromhex(h)

    return Rec(
        unhex(record["key"]),
        unhex(record["value"]),
        [(k, unhex(v)) for k, v in record["headers"]],
        record["timestamp"],
        record["offset"],
        record["partition"],
    )


# ----------------------------------------------------------------------------- confluent-kafka


def ck_conf(bootstrap: str, **extra: Any) -> dict[str, Any]:
    conf: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "socket.timeout.ms": 10000,
        "topic.metadata.refresh.interval.ms": 5000,
        "broker.address.family": "v4",
    }
    conf.update(extra)
    return conf


def ck_produce(
    bootstrap: str,
    topic: str,
    records: list[Rec],
    timeout: float = 30.0,
    **conf: Any,
) -> list[tuple[int, int, int]]:
    """Produces ``records`` (to their partition) with confluent-kafka; returns the delivery reports
    (index, partition, offset) in index order. Fails on any delivery error or a report missing
    after ``timeout``."""
    import confluent_kafka as ck

    producer = ck.Producer(ck_conf(bootstrap, **{"message.timeout.ms": 20000, **conf}))
    reports: dict[int, tuple[int, int, int]] = {}
    errors: dict[int, Any] = {}

    def on_delivery(index: int) -> Callable[[Any, Any], None]:
        def report(err: Any, msg: Any) -> None:
            if err is not None:
                errors[index] = err
            else:
                reports[index] = (index, msg.partition(), msg.offset())

        return report

    for i, r in enumerate(records):
        kwargs: dict[str, Any] = {
            "key": r.key,
            "value": r.value,
            "partition": r.partition,
            "on_delivery": on_delivery(i),
        }
        if r.headers:
            kwargs["headers"] = list(r.headers)
        if r.timestamp >= 0:
            kwargs["timestamp"] = r.timestamp
        producer.produce(topic, **kwargs)
        producer.poll(0)
    left = producer.flush(timeout)
    summary = dict(Counter(str(e) for e in errors.values()))
    assert left == 0, f"{left} records still undelivered after {timeout} s (errors: {summary})"
    assert errors == {}, f"{len(errors)} of {len(records)} records failed: {summary}"
    assert len(reports) == len(records)
    return [reports[i] for i in range(len(records))]


def ck_consume(
    bootstrap: str,
    topic: str,
    count: int,
    partitions: tuple[int, ...] = (0,),
    timeout: float = 30.0,
    require: bool = True,
    **conf: Any,
) -> list[Rec]:
    """Reads ``count`` records from the beginning of ``partitions`` with assign() (no subscription,
    no commits); stops at ``count`` or after ``timeout`` seconds (a failure with ``require``)."""
    import confluent_kafka as ck

    consumer = ck.Consumer(
        ck_conf(
            bootstrap,
            **{
                "group.id": f"kwire-interop-{topic}",  # the Python client insists; never joined
                "enable.auto.commit": False,
                "enable.auto.offset.store": False,
                "auto.offset.reset": "earliest",
                **conf,
            },
        )
    )
    out: list[Rec] = []
    errors: list[Any] = []
    try:
        consumer.assign([ck.TopicPartition(topic, p, ck.OFFSET_BEGINNING) for p in partitions])
        deadline = time.monotonic() + timeout
        while len(out) < count and time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is None:
                continue
            if msg.error() is not None:
                if msg.error().code() != ck.KafkaError._PARTITION_EOF:
                    errors.append(msg.error())
                continue
            _ts_type, ts = msg.timestamp()
            out.append(
                Rec(
                    msg.key(),
                    msg.value(),
                    [(k, v) for k, v in (msg.headers() or [])],
                    ts,
                    msg.offset(),
                    msg.partition(),
                )
            )
    finally:
        consumer.close()
    if require:
        assert len(out) >= count, (
            f"confluent-kafka read {len(out)} of {count} records of {topic} in {timeout} s; "
            f"consumer errors: {errors}"
        )
    return out


# ----------------------------------------------------------------------------- kafka-python


def kp_produce(
    bootstrap: str, topic: str, records: list[Rec], **config: Any
) -> list[tuple[int, int, int]]:
    """Sends ``records`` with kafka-python's KafkaProducer; returns (partition, offset, timestamp)
    per record."""
    from kafka import KafkaProducer

    producer = KafkaProducer(
        bootstrap_servers=bootstrap,
        request_timeout_ms=10000,
        max_block_ms=20000,
        **config,
    )
    try:
        futures = [
            producer.send(
                topic,
                key=r.key,
                value=r.value,
                headers=list(r.headers) or None,
                partition=r.partition,
                timestamp_ms=r.timestamp if r.timestamp >= 0 else None,
            )
            for r in records
        ]
        producer.flush(timeout=30.0)
        out = []
        for f in futures:
            md = f.get(timeout=30.0)
            out.append((md.partition, md.offset, md.timestamp))
        return out
    finally:
        producer.close(timeout=10)


def kp_consume(
    bootstrap: str,
    topic: str,
    count: int,
    partitions: tuple[int, ...] = (0,),
    timeout: float = 30.0,
    **config: Any,
) -> list[Any]:
    """``count`` ConsumerRecords from the beginning of ``partitions`` (assign + seek_to_beginning,
    no group); fails if they do not all arrive within ``timeout`` seconds."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=None,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        request_timeout_ms=10000,
        **config,
    )
    out: list[Any] = []
    try:
        tps = [TopicPartition(topic, p) for p in partitions]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        deadline = time.monotonic() + timeout
        while len(out) < count and time.monotonic() < deadline:
            for tp_records in consumer.poll(timeout_ms=200).values():
                out.extend(tp_records)
    finally:
        consumer.close()
    assert len(out) >= count, f"kafka-python read {len(out)} of {count} records in {timeout} s"
    return out


# ----------------------------------------------------------------------------- the data dir


def partition_dirs(data_dir: str | os.PathLike[str], topic: str) -> list[Any]:
    """kwire.log's view of ``<topic>-<partition>`` folders under the broker's data dir (live
    topics only: Kafka renames a deleted one ``<topic>-<p>.<id>-delete``)."""
    from kwire.log import list_log_dir

    return sorted(
        (p for p in list_log_dir(data_dir) if p.topic == topic),
        key=lambda p: p.partition,
    )


def stored_batches(data_dir: str | os.PathLike[str], topic: str, partition: int = 0) -> list[Any]:
    """Every batch of the partition's segments (kwire.records.read_batches), oldest first."""
    from kwire.records import read_batches

    found = [p for p in partition_dirs(data_dir, topic) if p.partition == partition]
    assert found, (
        f"no {topic}-{partition} folder under {data_dir}: {list(Path(data_dir).rglob('*'))}"
    )
    batches = []
    for segment in found[0].segments:
        data = Path(segment.log).read_bytes()
        batches.extend(read_batches(data, allow_truncated_tail=True))
    return batches


def stored_records(data_dir: str | os.PathLike[str], topic: str, partition: int = 0) -> list[Rec]:
    out = []
    for batch in stored_batches(data_dir, topic, partition):
        if batch.is_control:
            continue
        for r in batch:
            out.append(
                Rec(
                    None if r.key is None else bytes(r.key),
                    None if r.value is None else bytes(r.value),
                    [(k, None if v is None else bytes(v)) for k, v in r.headers],
                    r.timestamp,
                    r.offset,
                    partition,
                )
            )
    return out


def segment_logs(data_dir: str | os.PathLike[str]) -> Iterator[str]:
    from kwire.log import list_log_dir

    for p in list_log_dir(data_dir):
        for s in p.segments:
            yield s.log


# --- kwire broker processes ---------------------------------------------------------------

START_TIMEOUT = 30.0  # seconds for a broker to listen
STOP_TIMEOUT = 15.0
LISTENING = re.compile(r"kwire broker listening on (\S+):(\d+)")
PID_FILE_ENV = "KWIRE_TEST_BROKER_PIDS"


class CliBroker:
    """One ``kwire broker`` process; its output goes to files next to its data dir."""

    def __init__(
        self,
        data_dir: Path,
        port: int = 0,
        kafka_version: str | None = None,
        config: dict[str, str] | None = None,
        node_id: int = 1,
        extra_args: tuple[str, ...] = (),
    ) -> None:
        self.data_dir = data_dir
        self.requested_port = port
        argv = [
            sys.executable,
            "-m",
            "kwire",
            "broker",
            "--data-dir",
            str(data_dir),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--node-id",
            str(node_id),
        ]
        if kafka_version is not None:
            argv += ["--kafka-version", kafka_version]
        for k, v in {"num.partitions": "1", **(config or {})}.items():
            argv += ["--config", f"{k}={v}"]
        argv += extra_args
        self.argv = argv
        n = 0
        while (data_dir.parent / f"{data_dir.name}.out.{n}").exists():
            n += 1
        self.out_path = data_dir.parent / f"{data_dir.name}.out.{n}"
        self.err_path = data_dir.parent / f"{data_dir.name}.err.{n}"
        with open(self.out_path, "wb") as out, open(self.err_path, "wb") as err:
            self.proc = subprocess.Popen(argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL)
        self.pid = self.proc.pid
        pid_file = os.environ.get(PID_FILE_ENV)
        if pid_file:  # run_isolated's parent kills these by pid if the child hangs
            with open(pid_file, "a") as f:
                f.write(f"{self.pid}\n")
        self.host, self.port = self._wait_listening()
        self.bootstrap = f"{self.host}:{self.port}"

    def output(self) -> str:
        out = self.out_path.read_text(errors="replace")
        err = self.err_path.read_text(errors="replace")
        return f"stdout:\n{out[-3000:]}\nstderr:\n{err[-3000:]}"

    def _wait_listening(self) -> tuple[str, int]:
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            found = LISTENING.search(self.out_path.read_text(errors="replace"))
            if found:
                return found.group(1), int(found.group(2))
            if self.proc.poll() is not None:
                raise AssertionError(
                    f"kwire broker exited with {self.proc.returncode} before listening\n"
                    f"{' '.join(self.argv)}\n{self.output()}"
                )
            time.sleep(0.05)
        self.kill()
        raise AssertionError(f"kwire broker not listening after {START_TIMEOUT} s\n{self.output()}")

    def kill(self, sig: int = signal.SIGKILL) -> int | None:
        """Sends ``sig`` to this process (by its pid) and waits for it; returns its exit status."""
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, sig)
            try:
                self.proc.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                os.kill(self.pid, signal.SIGKILL)
                self.proc.wait(timeout=STOP_TIMEOUT)
        return self.proc.returncode


def run_isolated(target: Callable[..., None], *args: Any, timeout: float, workdir: Path) -> None:
    """Run ``target(*args)`` in a spawned process and fail, never hang, if it outlives ``timeout``.

    A client library's call that blocks in C past its own timeout (seen with librdkafka around a
    broker restart) cannot be interrupted from Python in the same process; in a child it can. The
    ``kwire broker`` processes the child starts (``CliBroker``) are killed by their pids too.
    """
    import multiprocessing

    pid_file = workdir / "isolated-broker-pids"
    previous = os.environ.get(PID_FILE_ENV)
    os.environ[PID_FILE_ENV] = str(pid_file)
    try:
        child = multiprocessing.get_context("spawn").Process(target=target, args=args)
        child.start()
        child.join(timeout)
        hung = child.is_alive()
        if hung:
            child.kill()
            child.join(STOP_TIMEOUT)
    finally:
        if previous is None:
            os.environ.pop(PID_FILE_ENV, None)
        else:
            os.environ[PID_FILE_ENV] = previous
        if pid_file.exists():
            for line in pid_file.read_text().split():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(int(line), signal.SIGKILL)
    if hung:
        pytest.fail(f"{target.__name__} did not finish within {timeout:.0f} s (killed)")
    assert child.exitcode == 0, (
        f"{target.__name__} failed (exit code {child.exitcode}); see its output"
    )
