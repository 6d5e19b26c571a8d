"""AlterShareGroupOffsets / DeleteShareGroupOffsets sent over the wire (confluent-kafka's
AdminClient has no call for them), their effect observed by confluent-kafka's ``ShareConsumer``
(librdkafka 2.16). The broker is in-process on a free port and stopped by the fixture; every poll
loop is bounded in count and time."""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Callable
from typing import Any

import pytest

from kwire.broker import Broker, BrokerState
from kwire.protocol import (
    ErrorCode,
    decode_response_frame,
    encode_request_frame,
    message_class,
    struct_class,
)

pytestmark = pytest.mark.interop

DEADLINE_S = 30.0
ALTER_TOPIC = struct_class("AlterShareGroupOffsetsRequest", "topics")
ALTER_PARTITION = struct_class("AlterShareGroupOffsetsRequest", "topics", "partitions")
DELETE_TOPIC = struct_class("DeleteShareGroupOffsetsRequest", "topics")


def wire_call(broker: Broker, request: Any, version: int) -> Any:
    """One request on its own connection to the broker; the decoded response."""
    host, port = broker.bootstrap.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(encode_request_frame(request, version, correlation_id=7, client_id="t"))
        data = b""
        while len(data) < 4 or len(data) < 4 + struct.unpack(">i", data[:4])[0]:
            chunk = sock.recv(65536)
            assert chunk, "the broker closed the connection"
            data += chunk
    return decode_response_frame(data, request.API_KEY, version).message


def share_consumer(broker: Broker, group: str) -> Any:
    from confluent_kafka import ShareConsumer

    return ShareConsumer({"bootstrap.servers": broker.bootstrap, "group.id": group})


def produce(broker: Broker, topic: str, count: int) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    for i in range(count):
        producer.produce(topic, value=f"v{i}".encode(), partition=0)
    assert producer.flush(30) == 0


def wait_for(broker: Broker, check: Callable[[BrokerState], Any], consumer: Any = None) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not broker.call(check):
        assert time.monotonic() < deadline, "timed out"
        if consumer is not None:
            assert len(consumer.poll(0.1)) == 0
        else:
            time.sleep(0.05)


def initialized(group: str) -> Callable[[BrokerState], bool]:
    def check(state: BrokerState) -> bool:
        coordinator = state.services.share
        return coordinator is not None and any(
            g == group and p.initialized for (g, _, _), p in coordinator.partitions.items()
        )

    return check


def empty(group: str) -> Callable[[BrokerState], bool]:
    def check(state: BrokerState) -> bool:
        found = state.services.share.groups.get(group)
        return found is not None and not found.members

    return check


def poll_offsets(consumer: Any, want: int, timeout_s: float = DEADLINE_S) -> list[int]:
    got: list[int] = []
    deadline = time.monotonic() + timeout_s
    while len(got) < want and time.monotonic() < deadline:
        for m in consumer.poll(0.2):
            assert m.error() is None, m.error()
            got.append(m.offset())
    return sorted(got)


def test_share_consumer_resumes_at_the_altered_offset_and_from_the_reset_policy_after_delete(
    kwire_broker: Broker,
) -> None:
    kwire_broker.create_topic("jobs", partitions=1)
    first = share_consumer(kwire_broker, "crew")
    try:
        first.subscribe(["jobs"])
        wait_for(kwire_broker, initialized("crew"), first)
        produce(kwire_broker, "jobs", 10)
        assert poll_offsets(first, 10) == list(range(10))
        assert all(error is None for error in first.commit_sync(10).values())
        busy = wire_call(
            kwire_broker,
            message_class("AlterShareGroupOffsetsRequest")(
                group_id="crew",
                topics=[
                    ALTER_TOPIC(
                        topic_name="jobs",
                        partitions=[ALTER_PARTITION(partition_index=0, start_offset=4)],
                    )
                ],
            ),
            0,
        )
        assert busy.error_code == int(ErrorCode.NON_EMPTY_GROUP)
    finally:
        first.close()
    wait_for(kwire_broker, empty("crew"))
    altered = wire_call(
        kwire_broker,
        message_class("AlterShareGroupOffsetsRequest")(
            group_id="crew",
            topics=[
                ALTER_TOPIC(
                    topic_name="jobs",
                    partitions=[ALTER_PARTITION(partition_index=0, start_offset=4)],
                )
            ],
        ),
        0,
    )
    assert altered.error_code == 0
    assert [p.error_code for t in altered.responses for p in t.partitions] == [0]
    second = share_consumer(kwire_broker, "crew")
    try:
        second.subscribe(["jobs"])
        assert poll_offsets(second, 6) == list(range(4, 10))  # redelivered from 4
        assert all(error is None for error in second.commit_sync(10).values())
    finally:
        second.close()
    wait_for(kwire_broker, empty("crew"))
    deleted = wire_call(
        kwire_broker,
        message_class("DeleteShareGroupOffsetsRequest")(
            group_id="crew", topics=[DELETE_TOPIC(topic_name="jobs")]
        ),
        0,
    )
    assert (deleted.error_code, [t.error_code for t in deleted.responses]) == (0, [0])
    third = share_consumer(kwire_broker, "crew")
    try:
        third.subscribe(["jobs"])
        # the state is gone: initialized again at the end (share.auto.offset.reset=latest)
        wait_for(kwire_broker, initialized("crew"), third)
        produce(kwire_broker, "jobs", 3)
        assert poll_offsets(third, 3) == [10, 11, 12]
    finally:
        third.close()
