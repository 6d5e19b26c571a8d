"""Fuzz a live broker with mutated frames of real request traffic.

The frames are what clients send (ApiVersions, Metadata, Produce with a real batch, Fetch,
ListOffsets, CreateTopics), each mutated (bit flips, truncation, wrong sizes, junk appended,
fields overwritten with extremes) and sent on its own connection. The broker may answer or close
that connection; it must never crash, never stall another connection, and never change a stored
byte of what was written before.
"""

from __future__ import annotations

import os
import random
import socket
import struct
import time
from pathlib import Path

import pytest

from kwire.broker import Broker
from kwire.protocol import ClientConnection, message_class, struct_class
from kwire.records import Compression, build_batch

SEED = 20261124
MUTATIONS = 400
DEADLINE_S = 60.0


def _requests() -> list[bytes]:
    conn = ClientConnection("fuzz")
    produce = message_class("ProduceRequest")
    fetch = message_class("FetchRequest")
    records = build_batch([(None, 1_700_000_000_000, b"k", b"v" * 50)], 2, Compression.LZ4)
    frames = [
        conn.send(
            message_class("ApiVersionsRequest")(
                client_software_name="fuzz", client_software_version="1"
            ),
            3,
        ),
        conn.send(
            message_class("MetadataRequest")(
                topics=[struct_class("MetadataRequest", "topics")(name="fuzzed")],
                allow_auto_topic_creation=True,
            ),
            12,
        ),
        conn.send(
            produce(
                acks=-1,
                timeout_ms=1000,
                topic_data=[
                    struct_class(produce, "topic_data")(
                        name="fuzzed",
                        partition_data=[
                            struct_class(produce, "topic_data", "partition_data")(
                                index=0, records=records
                            )
                        ],
                    )
                ],
            ),
            9,
        ),
        conn.send(
            fetch(
                max_wait_ms=10,
                min_bytes=1,
                topics=[
                    struct_class(fetch, "topics")(
                        topic="fuzzed",
                        partitions=[
                            struct_class(fetch, "topics", "partitions")(
                                partition=0, fetch_offset=0, partition_max_bytes=1 << 20
                            )
                        ],
                    )
                ],
            ),
            12,
        ),
        conn.send(
            message_class("ListOffsetsRequest")(
                replica_id=-1,
                topics=[
                    struct_class("ListOffsetsRequest", "topics")(
                        name="fuzzed",
                        partitions=[
                            struct_class("ListOffsetsRequest", "topics", "partitions")(
                                partition_index=0, timestamp=-1
                            )
                        ],
                    )
                ],
            ),
            7,
        ),
        conn.send(
            message_class("CreateTopicsRequest")(
                topics=[
                    struct_class("CreateTopicsRequest", "topics")(
                        name="made", num_partitions=1, replication_factor=1
                    )
                ],
                timeout_ms=1000,
            ),
            7,
        ),
    ]
    return frames


def _mutate(rng: random.Random, frame: bytes) -> bytes:
    data = bytearray(frame)
    kind = rng.randrange(6)
    if kind == 0:  # flip bits in the body
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(4, len(data))
            data[i] ^= 1 << rng.randrange(8)
    elif kind == 1:  # truncate, size fixed to match
        cut = rng.randrange(8, len(data))
        data = data[:cut]
        data[0:4] = struct.pack(">i", len(data) - 4)
    elif kind == 2:  # a size prefix that lies
        data[0:4] = struct.pack(">i", rng.choice([-1, 0, 3, 7, len(data) + 100, 2**31 - 1]))
    elif kind == 3:  # junk appended inside the frame
        data += os.urandom(rng.randint(1, 64))
        data[0:4] = struct.pack(">i", len(data) - 4)
    elif kind == 4:  # an int32 somewhere set to an extreme
        i = rng.randrange(4, max(5, len(data) - 4))
        data[i : i + 4] = struct.pack(">i", rng.choice([-1, 2**31 - 1, -(2**31), 0x7FFF]))
    else:  # API key / version mangled
        data[4:8] = struct.pack(">hh", rng.randrange(-2, 100), rng.randrange(-2, 30))
    return bytes(data)


def _exchange(port: int, frame: bytes, timeout: float = 2.0) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(frame)
        sock.shutdown(socket.SHUT_WR)
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            try:
                chunk = sock.recv(65536)
            except (TimeoutError, ConnectionError):
                return
            if not chunk:
                return


def _healthy(port: int) -> None:
    conn = ClientConnection("probe")
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(conn.send(message_class("MetadataRequest")(topics=None), 12))
        end = time.monotonic() + 5
        while time.monotonic() < end:
            conn.receive_data(sock.recv(65536))
            response = conn.next_response()
            if response is not None:
                assert response.message.brokers[0].port == port
                return
    raise AssertionError("the broker did not answer a Metadata request")


def _stored(data_dir: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(data_dir)): p.read_bytes()
        for p in sorted(data_dir.rglob("*.log"))
        if "fuzzed" in p.parent.name
    }


@pytest.mark.slow
def test_mutated_frames_never_hurt_the_broker(tmp_path: Path) -> None:
    rng = random.Random(SEED)
    frames = _requests()
    with Broker(tmp_path / "data") as broker:
        port = broker.port
        # seed the topic with real data, through the unmutated frames
        for frame in frames:
            _exchange(port, frame)
        before = _stored(tmp_path / "data")
        assert before and any(before.values())
        bystander = socket.create_connection(("127.0.0.1", port), timeout=5)
        started = time.monotonic()
        try:
            for i in range(MUTATIONS):
                if time.monotonic() - started > DEADLINE_S:
                    break
                _exchange(port, _mutate(rng, rng.choice(frames)), timeout=0.5)
                if i % 50 == 0:
                    _healthy(port)
            # a connection opened before the storm still works
            conn = ClientConnection("bystander")
            bystander.sendall(conn.send(message_class("MetadataRequest")(topics=None), 12))
            end = time.monotonic() + 5
            response = None
            while response is None and time.monotonic() < end:
                conn.receive_data(bystander.recv(65536))
                response = conn.next_response()
            assert response is not None
        finally:
            bystander.close()
        _healthy(port)
        after = _stored(tmp_path / "data")
    for name, data in before.items():
        assert after[name][: len(data)] == data, f"{name} changed"
