"""Old Kafka personalities with kafka-python speaking the old protocol versions.

* ``kafka_version="0.10.2"`` with ``api_version=(0, 10, 2)``: Produce v2 / Fetch v3, magic 1
  message sets written, stored and read back (timestamps kept).
* ``"0.9.0"`` and ``"0.8.2"`` with ``api_version=(0, 9)`` / ``(0, 8, 2)``: magic 0 (no timestamps).
* A topic with ``message.format.version=0.10.2`` on a 2.8 broker (the last release that honours
  it): a modern producer's v2 batches are converted to magic 1 on append, a modern consumer reads
  them, and an old consumer (Fetch v1) gets them down-converted to magic 0.

The stored segments are checked with kwire.records.read_batches.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from interop_helpers import (
    BASE_TS,
    CODEC_IDS,
    Rec,
    ck_produce,
    expected_record,
    kp_consume,
    kp_produce,
    stored_batches,
    stored_records,
)

pytestmark = [
    pytest.mark.interop,
    pytest.mark.filterwarnings("ignore::DeprecationWarning:kafka"),
]

N = 30


def plain_records(n: int, with_timestamps: bool = True) -> list[Rec]:
    """Keys (some null), values (some null; never both: kafka-python refuses that below magic 2),
    no headers: what magic 0 and 1 can carry."""
    return [
        Rec(
            None if i % 5 == 0 else f"k-{i}".encode(),
            None if i % 7 == 3 and i % 5 != 0 else f"v-{i}-{'y' * (i % 9)}".encode(),
            [],
            BASE_TS + i if with_timestamps else -1,
        )
        for i in range(n)
    ]


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4"])
def test_0_10_2_magic_1(start_broker: Callable[..., Any], codec: str) -> None:
    b = start_broker(kafka_version="0.10.2")
    b.create_topic("old-v1", partitions=1)
    records = plain_records(N)
    compression = None if codec == "none" else codec
    acked = kp_produce(
        b.bootstrap,
        "old-v1",
        records,
        api_version=(0, 10, 2),
        compression_type=compression,
        linger_ms=5,
        batch_size=256,
    )
    assert [(p, o) for p, o, _ in acked] == [(0, i) for i in range(N)]
    batches = stored_batches(b.data_dir, "old-v1")
    assert {x.magic for x in batches} == {1}
    assert {int(x.compression) for x in batches} == {CODEC_IDS[codec]}
    stored = [r for x in batches for r in x]
    assert [(r.offset, r.timestamp) for r in stored] == [(i, BASE_TS + i) for i in range(N)]

    got = kp_consume(b.bootstrap, "old-v1", N, api_version=(0, 10, 2))
    assert [(r.key, r.value) for r in got] == [(r.key, r.value) for r in records]
    assert [(r.offset, r.timestamp) for r in got] == [(i, BASE_TS + i) for i in range(N)]


@pytest.mark.parametrize(
    ("kafka_version", "api_version", "codec"),
    [
        ("0.9.0", (0, 9), "none"),
        ("0.9.0", (0, 9), "gzip"),
        ("0.9.0", (0, 9), "snappy"),
        ("0.9.0", (0, 9), "lz4"),
        ("0.8.2", (0, 8, 2), "none"),
        ("0.8.2", (0, 8, 2), "gzip"),
    ],
)
def test_magic_0(
    start_broker: Callable[..., Any],
    kafka_version: str,
    api_version: tuple[int, ...],
    codec: str,
) -> None:
    b = start_broker(kafka_version=kafka_version)
    b.create_topic("old-v0", partitions=1)
    records = plain_records(N, with_timestamps=False)
    acked = kp_produce(
        b.bootstrap,
        "old-v0",
        records,
        api_version=api_version,
        compression_type=None if codec == "none" else codec,
        linger_ms=5,
        batch_size=256,
    )
    assert [(p, o) for p, o, _ in acked] == [(0, i) for i in range(N)]
    batches = stored_batches(b.data_dir, "old-v0")
    assert {x.magic for x in batches} == {0}
    assert {int(x.compression) for x in batches} == {CODEC_IDS[codec]}
    assert [r.offset for x in batches for r in x] == list(range(N))

    got = kp_consume(b.bootstrap, "old-v0", N, api_version=api_version)
    assert [(r.key, r.value) for r in got] == [(r.key, r.value) for r in records]
    assert [r.offset for r in got] == list(range(N))
    assert {r.timestamp for r in got} <= {None, -1}


@pytest.mark.parametrize("codec", ["none", "gzip"])
def test_message_format_version_converts_on_append(
    start_broker: Callable[..., Any], codec: str
) -> None:
    b = start_broker(kafka_version="2.8")
    b.create_topic("mfv", partitions=1, config={"message.format.version": "0.10.2"})
    records = plain_records(N)
    acked = kp_produce(
        b.bootstrap,
        "mfv",
        records,
        compression_type=None if codec == "none" else codec,
        enable_idempotence=False,  # idempotence needs magic 2 (UNSUPPORTED_FOR_MESSAGE_FORMAT)
        linger_ms=5,
        batch_size=256,
    )
    assert [(p, o) for p, o, _ in acked] == [(0, i) for i in range(N)]

    # The producer sent v2 batches; the log holds magic 1, in the producer's codec.
    batches = stored_batches(b.data_dir, "mfv")
    assert {x.magic for x in batches} == {1}
    assert {int(x.compression) for x in batches} == {CODEC_IDS[codec]}
    stored = stored_records(b.data_dir, "mfv")
    assert [(r.offset, r.timestamp) for r in stored] == [(i, BASE_TS + i) for i in range(N)]
    assert [(r.key, r.value) for r in stored] == [(r.key, r.value) for r in records]

    modern = kp_consume(b.bootstrap, "mfv", N)
    assert [(r.key, r.value, r.offset, r.timestamp) for r in modern] == [
        (r.key, r.value, i, BASE_TS + i) for i, r in enumerate(records)
    ]
    # Fetch v1 (kafka-python api_version=(0, 9)): down-converted to magic 0, no timestamps.
    old = kp_consume(b.bootstrap, "mfv", N, api_version=(0, 9))
    assert [(r.key, r.value, r.offset) for r in old] == [
        (r.key, r.value, i) for i, r in enumerate(records)
    ]
    assert {r.timestamp for r in old} <= {None, -1}


@pytest.mark.parametrize(("api_version", "magic"), [((0, 10, 2), 1), ((0, 9), 0)])
def test_old_fetch_of_v2_records_is_down_converted(
    start_broker: Callable[..., Any], api_version: tuple[int, ...], magic: int
) -> None:
    """v2 batches (headers, a codec, idempotent) stored by a 3.9 broker, fetched by a consumer
    speaking Fetch v3 / v1: down-converted to magic 1 / 0 (message.downconversion.enable defaults
    to true before Kafka 4.0). Headers are dropped, magic 0 has no timestamps."""
    b = start_broker(kafka_version="3.9")
    b.create_topic("down", partitions=1)
    records = [expected_record(i) for i in range(N)]
    ck_produce(
        b.bootstrap,
        "down",
        records,
        **{"compression.codec": "gzip", "enable.idempotence": True, "linger.ms": 5},
    )
    assert {x.magic for x in stored_batches(b.data_dir, "down")} == {2}
    # kafka-python refuses a record with neither key nor value below magic 2; expected_record
    # has none (a null key goes with a value).
    got = kp_consume(b.bootstrap, "down", N, api_version=api_version)
    assert [(r.key, r.value, r.offset) for r in got] == [
        (r.key, r.value, i) for i, r in enumerate(records)
    ]
    assert all(not r.headers for r in got)
    if magic == 1:
        assert [r.timestamp for r in got] == [BASE_TS + i for i in range(N)]
    else:
        assert {r.timestamp for r in got} <= {None, -1}
