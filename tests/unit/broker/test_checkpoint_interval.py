"""replica.high.watermark.checkpoint.interval.ms: how often the broker writes the high watermarks."""

from __future__ import annotations

import socket
import time
from pathlib import Path
from typing import Any

import pytest

from kwire.broker import Broker
from kwire.broker._config import BROKER_CONFIGS, ConfigError, ConfigType
from kwire.log import TopicPartition, read_offset_checkpoint
from kwire.protocol import ClientConnection, message_class, struct_class
from kwire.records import Compression, build_batch

NOW = 1_700_000_000_000


def _produce(port: int, topic: str, records: bytes) -> None:
    """One acks=-1 ProduceRequest v9 to partition 0, answered without an error."""
    cls = message_class("ProduceRequest")
    request = cls(
        acks=-1,
        timeout_ms=1000,
        topic_data=[
            struct_class(cls, "topic_data")(
                name=topic,
                partition_data=[
                    struct_class(cls, "topic_data", "partition_data")(index=0, records=records)
                ],
            )
        ],
    )
    conn = ClientConnection("checkpoint-test")
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(conn.send(request, 9))
        response: Any = None
        while response is None:
            chunk = sock.recv(1 << 16)
            assert chunk, "closed by the broker"
            conn.receive_data(chunk)
            response = conn.next_response()
    assert response.message.responses[0].partition_responses[0].error_code == 0


def _high_watermark(data_dir: str, topic: str) -> int | None:
    path = Path(data_dir) / "replication-offset-checkpoint"
    if not path.exists():
        return None
    return read_offset_checkpoint(path.read_text()).get(TopicPartition(topic, 0))


def test_the_config_is_kafkas(tmp_path: Path) -> None:
    row = BROKER_CONFIGS["replica.high.watermark.checkpoint.interval.ms"]
    assert (row.type, row.default) == (ConfigType.LONG, "5000")
    config = {"replica.high.watermark.checkpoint.interval.ms": "0"}
    with pytest.raises(ConfigError, match="Value must be at least 1"):
        Broker(tmp_path / "data", config=config).start()


def test_a_short_interval_checkpoints_the_high_watermark_soon_after_a_produce(
    tmp_path: Path,
) -> None:
    config = {"replica.high.watermark.checkpoint.interval.ms": "200"}
    with Broker(tmp_path / "data", config=config) as broker:
        broker.create_topic("t", 1)
        for i in range(3):
            batch = build_batch([(None, NOW, b"k%d" % i, b"v")], 2, Compression.NONE)
            _produce(broker.port, "t", batch)
        # within 200 ms (3 s allows for a loaded machine); the default 5 s would miss it
        deadline = time.monotonic() + 3.0
        while _high_watermark(broker.data_dir, "t") != 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _high_watermark(broker.data_dir, "t") == 3
