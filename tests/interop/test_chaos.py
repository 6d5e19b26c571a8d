"""Chaos: a well-behaved librdkafka producer and consumer next to clients that misbehave.

While confluent-kafka produces and then consumes a bounded workload, other connections open slow
reader fetches (Fetch v9 and v12 of a 16 MiB topic, never read), half frames, idle connections,
mutated frames and compression bombs (issue 21, items 4-6). The well-behaved client must finish
its workload exactly (every record delivered once, read back in order); the broker must hold a
bounded output per connection, close the idle and stuck ones (``connections.max.idle.ms``) and
answer every bomb. No timing is asserted: the latency and RSS numbers are in
``bench/bench_slow_clients.py`` and docs/benchmarks.md.
"""

from __future__ import annotations

import contextlib
import functools
import random
import socket
import struct
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from interop_helpers import ck_consume, ck_produce, compressible, expected_record

from kwire.protocol import ClientConnection, message_class, struct_class
from kwire.records import Compression, build_batch

pytestmark = pytest.mark.interop

NOW = 1_700_000_000_000
MIB = 1 << 20
N = 3000
ATTACK_S = 60.0  # the attackers' deadline, should the workload hang


def produce_frame(conn: ClientConnection, topic: str, records: bytes) -> bytes:
    cls = message_class("ProduceRequest")
    return conn.send(
        cls(
            acks=1,
            timeout_ms=30000,
            topic_data=[
                struct_class(cls, "topic_data")(
                    name=topic,
                    partition_data=[
                        struct_class(cls, "topic_data", "partition_data")(index=0, records=records)
                    ],
                )
            ],
        ),
        9,
    )


def fetch_frame(conn: ClientConnection, topic: str, version: int) -> bytes:
    cls = message_class("FetchRequest")
    request = cls(
        replica_id=-1,
        max_wait_ms=0,
        min_bytes=1,
        max_bytes=100_000_000,
        isolation_level=0,
        session_id=0,
        session_epoch=-1,
        topics=[
            struct_class(cls, "topics")(
                topic=topic,
                partitions=[
                    struct_class(cls, "topics", "partitions")(
                        partition=0, fetch_offset=0, partition_max_bytes=100_000_000
                    )
                ],
            )
        ],
    )
    return conn.send(request, version)


def read_response(sock: socket.socket, conn: ClientConnection) -> Any:
    while True:
        response = conn.next_response()
        if response is not None:
            return response.message
        chunk = sock.recv(1 << 20)
        if not chunk:
            raise ConnectionError("closed by the broker")
        conn.receive_data(chunk)


class Chaos:
    """The misbehaving connections, each kind on its own thread until ``stop``."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.stop = threading.Event()
        self.deadline = time.monotonic() + ATTACK_S
        self.held: list[socket.socket] = []  # slow readers, half frames, idle ones
        self.lock = threading.Lock()
        self.bombs_answered = 0
        self.bomb_errors: list[int] = []
        self.mutated_sent = 0
        self.closed_by_broker = 0
        self.peak_output = 0  # the most bytes the broker held unsent for one connection
        self.samples = 0
        self.failures: list[BaseException] = []

    def running(self) -> bool:
        return not self.stop.is_set() and time.monotonic() < self.deadline

    def connect(self, rcvbuf: int | None = None) -> socket.socket:
        sock = socket.socket()
        if rcvbuf is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        sock.settimeout(30)
        sock.connect(("127.0.0.1", self.port))
        return sock

    def hold(self, sock: socket.socket) -> None:
        with self.lock:
            self.held.append(sock)

    def guarded(self, fn: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            try:
                fn()
            except BaseException as exc:  # reported by the test, not lost in a thread
                self.failures.append(exc)

        return run

    def slow_readers(self) -> None:
        versions = [9, 12]
        while self.running():
            sock = self.connect(rcvbuf=4096)
            sock.sendall(fetch_frame(ClientConnection("slow"), "big", versions[0]))
            versions.reverse()
            self.hold(sock)
            self.stop.wait(0.5)

    def half_frames_and_idle(self) -> None:
        while self.running():
            half = self.connect()
            half.sendall(struct.pack(">i", 1000) + b"\x00\x03\x00")  # 3 of 1000 bytes
            self.hold(half)
            self.hold(self.connect())  # says nothing at all
            self.stop.wait(0.3)

    def mutated_frames(self) -> None:
        rng = random.Random(21)
        conn = ClientConnection("mutant")
        frames = [
            produce_frame(conn, "small", build_batch([(None, NOW, b"k", b"v" * 50)])),
            fetch_frame(conn, "small", 12),
            conn.send(message_class("ApiVersionsRequest")(), 0),
        ]
        while self.running():
            data = bytearray(rng.choice(frames))
            for _ in range(rng.randint(1, 4)):
                i = rng.randrange(4, len(data))
                data[i] ^= 1 << rng.randrange(8)
            if rng.random() < 0.3:
                data[0:4] = struct.pack(">i", rng.choice([-1, 0, 3, 2**31 - 1]))
            with contextlib.suppress(OSError), self.connect() as sock:
                sock.settimeout(1.0)
                sock.sendall(bytes(data))
                sock.shutdown(socket.SHUT_WR)
                with contextlib.suppress(OSError):
                    while sock.recv(65536):
                        pass
            self.mutated_sent += 1

    def bombs(self) -> None:
        conn = ClientConnection("bomber")
        bomb = build_batch([(None, NOW, None, bytes(MIB))] * 30, 2, Compression.GZIP)
        with self.connect() as sock:
            while self.running():
                sock.sendall(produce_frame(conn, "bombed", bomb))
                part = read_response(sock, conn).responses[0].partition_responses[0]
                with self.lock:
                    self.bombs_answered += 1
                    if part.error_code:
                        self.bomb_errors.append(part.error_code)

    def sample_buffers(self, connections: Callable[[], list[dict[str, Any]]]) -> None:
        while self.running():
            for c in connections():
                self.peak_output = max(self.peak_output, c["output"])
            self.samples += 1
            self.stop.wait(0.1)

    def close_held(self) -> None:
        for sock in self.held:
            sock.setblocking(False)
            try:
                while True:  # drain what the broker sent; b"" means it closed the connection
                    if not sock.recv(1 << 20):
                        self.closed_by_broker += 1
                        break
            except BlockingIOError:
                pass
            except OSError:
                self.closed_by_broker += 1
            sock.close()


def test_a_well_behaved_client_finishes_among_misbehaving_ones(start_broker: Any) -> None:
    broker = start_broker(config={"connections.max.idle.ms": "2000"})
    for topic in ("big", "small", "bombed", "good"):
        broker.create_topic(topic, 1)
    seed = ClientConnection("seed")
    with socket.create_connection(("127.0.0.1", broker.port), timeout=30) as sock:
        value = build_batch([(None, NOW, None, b"x" * 1024)] * 1000)
        for _ in range(16):  # 16 MiB for the slow readers
            sock.sendall(produce_frame(seed, "big", value))
            read_response(sock, seed)

    chaos = Chaos(broker.port)
    kinds = [chaos.slow_readers, chaos.half_frames_and_idle, chaos.mutated_frames]
    threads = [threading.Thread(target=chaos.guarded(k)) for k in kinds]
    threads += [threading.Thread(target=chaos.guarded(chaos.bombs)) for _ in range(2)]
    sampler = functools.partial(chaos.sample_buffers, broker.connections)
    threads.append(threading.Thread(target=chaos.guarded(sampler)))
    for t in threads:
        t.start()
    try:
        time.sleep(1.0)  # the attacks are under way
        records = [compressible(expected_record(i)) for i in range(N)]
        reports = ck_produce(
            broker.bootstrap,
            "good",
            records,
            timeout=60.0,
            **{"compression.codec": "lz4", "acks": "all", "linger.ms": 5},
        )
        assert [(p, o) for _, p, o in reports] == [(0, i) for i in range(N)]
        got = ck_consume(broker.bootstrap, "good", N, timeout=60.0)
        assert [r.content() for r in got] == [r.content() for r in records]
        assert [r.offset for r in got] == list(range(N))
        time.sleep(2.5)  # past connections.max.idle.ms for the oldest held connections
    finally:
        chaos.stop.set()
        for t in threads:
            t.join(30)
    chaos.close_held()
    assert not chaos.failures, chaos.failures
    assert chaos.bombs_answered >= 2 and chaos.bomb_errors == []
    assert chaos.mutated_sent > 0
    # the broker keeps at most about one sendfile step and a transport buffer per connection
    assert chaos.samples > 0 and chaos.peak_output <= 4 * MIB
    # the stuck and idle ones were closed by the broker, not left open
    assert chaos.closed_by_broker > 0
    assert broker.end_offsets("good") == [N]
