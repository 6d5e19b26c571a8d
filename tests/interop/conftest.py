"""Fixtures for the interop tests: a fresh ``kwire broker`` per test, in-process or as a process.

* ``broker``: a :class:`kwire.broker.Broker` on a free loopback port with its data dir in
  ``tmp_path``, started before the test and stopped after it.
* ``start_broker(data_dir=None, kafka_version="4.3", config=None, **kw)``: more of them (another
  personality, or a restart on the same data dir); every one is stopped at the end of the test.
* ``broker_cli(data_dir=None, port=0, kafka_version=None, config=None)``: ``kwire broker`` started
  as ``sys.executable -m kwire broker ...``; returns a :class:`CliBroker` once the process printed
  its "listening on" line. Every process started is killed by its pid at the end of the test.

Nothing here waits without a deadline: a broker that does not come up fails the test.

kafka-python 3 calls the deprecated ``importlib.resources.read_text`` while importing (and when it
loads a protocol schema later): it is imported here with that warning silenced, and the tests that
use it ignore DeprecationWarnings raised from ``kafka.*`` (pyproject turns warnings into errors).

The clients under test sometimes drop a socket without closing it (kafka-python's bootstrap and
version probes do, now and then): Python's "unclosed socket" ResourceWarning then fires whenever the
garbage collector gets to it, as an unraisable exception that fails whichever test is running. The
interop tests ignore that one warning and collect garbage before they end, so a client's leak stays
in its own test. The broker's own sockets are held to it by the unit tests, where it is an error.
"""

from __future__ import annotations

import contextlib
import gc
import os
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from interop_helpers import CliBroker

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    import kafka
    import kafka.admin
    import kafka.errors

    del kafka


_INTEROP_DIR = Path(__file__).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if _INTEROP_DIR in Path(item.path).parents:
            item.add_marker(pytest.mark.filterwarnings("ignore:unclosed:ResourceWarning"))


@pytest.fixture(autouse=True)
def _collect_client_leaks() -> Iterator[None]:
    yield
    gc.collect()


@pytest.fixture
def start_broker(tmp_path: Path) -> Iterator[Callable[..., Any]]:
    from kwire.broker import Broker

    started: list[Any] = []
    count = 0

    def start(
        data_dir: str | os.PathLike[str] | None = None,
        kafka_version: str = "4.3",
        config: dict[str, str] | None = None,
        port: int = 0,
        node_id: int = 1,
    ) -> Any:
        nonlocal count
        count += 1
        if data_dir is None:
            data_dir = tmp_path / f"data-{count}"
        b = Broker(
            str(data_dir),
            host="127.0.0.1",
            port=port,
            kafka_version=kafka_version,
            node_id=node_id,
            config={"num.partitions": "1", **(config or {})},
        )
        started.append(b)
        b.start()
        return b

    yield start
    for b in reversed(started):
        with contextlib.suppress(Exception):
            b.stop()


@pytest.fixture
def broker(start_broker: Callable[..., Any]) -> Any:
    return start_broker()


@pytest.fixture
def broker_cli(tmp_path: Path) -> Iterator[Callable[..., CliBroker]]:
    started: list[CliBroker] = []

    def start(
        data_dir: Path | None = None,
        port: int = 0,
        kafka_version: str | None = None,
        config: dict[str, str] | None = None,
    ) -> CliBroker:
        b = CliBroker(data_dir or tmp_path / "data", port, kafka_version, config)
        started.append(b)
        return b

    yield start
    for b in started:
        b.kill()
