"""``Broker.start`` (the fixtures' path): a start that is given up (its timeout passed, or Ctrl-C
while it waited) leaves no broker running in a thread nobody can stop."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient

from kwire.broker import Broker


def _broker_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("kwire-broker-")]


def test_a_start_given_up_stops_the_broker_it_was_starting(tmp_path: Path) -> None:
    assert _broker_threads() == []
    broker = Broker(tmp_path / "data")
    # a timeout of 0 gives up before the thread has opened the directory and bound the port;
    # the thread went on, started the broker and kept it (and the directory's lock) for ever
    with pytest.raises(TimeoutError):
        broker.start(timeout=0)
    assert _broker_threads() == []
    assert not broker.running
    # the directory is free again: a broker starts on it and answers
    with Broker(tmp_path / "data") as again:
        admin = AdminClient({"bootstrap.servers": again.bootstrap})
        assert admin.list_topics(timeout=10).brokers
    assert _broker_threads() == []
