"""The ``kwire_broker`` pytest fixture: a real Kafka broker for a test, no JVM, no Docker.

Registered through the ``pytest11`` entry point, so installing kwire is enough::

    def test_roundtrip(kwire_broker):
        producer = confluent_kafka.Producer({"bootstrap.servers": kwire_broker.bootstrap})
        kwire_broker.create_topic("orders", partitions=3)

Each test gets its own broker on a free loopback port over its own ``tmp_path`` data directory,
stopped when the test ends. Mark a test ``@pytest.mark.kwire_broker(kafka_version="2.0",
config={"num.partitions": "3"})`` to choose the release personality and broker settings.
``kwire_broker_factory(**kwargs)`` starts more brokers (or restarts one on the same directory).
``kwire_session_broker`` is one broker for the whole session (per xdist worker), for session
fixtures (a function-scoped fixture cannot serve them) and suites that share topics on purpose.

Test settings: the fixtures start brokers with ``TEST_CONFIG`` under the given config, as Kafka's
development ``config/server.properties`` and the client projects' test brokers (testcontainers,
librdkafka's and franz-go's test clusters) do, so that a test waits for nothing: no initial
rebalance delay (a consumer group's first assignment at once, not 3 s later), one-partition
``__consumer_offsets`` and ``__transaction_state`` (not 50 partitions each to create and load).
A marker's ``config`` overrides any of them (a key Kafka does not know is a ``UserWarning``, where
pytest shows it; a log line shows only when the test fails); ``kwire broker`` and ``Broker(...)``
keep Kafka's production defaults.

``kwire_cluster`` is an in-process cluster of three brokers (``kwire.broker.Cluster``: node ids
1..3, each on its own free port, one shared data directory); ``@pytest.mark.kwire_cluster(nodes=5,
kafka_version=..., config=...)`` chooses its settings.

Loading this plugin costs nothing: it imports no other kwire module (its parent packages load
their names lazily), and it takes kwire off pytest's assertion-rewriting list (pytest marks every
package of a ``pytest11`` distribution, pytest-dev/pytest#2419; kwire has no assertions to
rewrite, and rewritten modules are parsed from source instead of loaded from bytecode). The
first fixture used in a session pays for ``import kwire.broker``, once.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from kwire.broker import Broker, Cluster

#: Broker settings of the fixtures' brokers (see the module doc); a marker's ``config`` wins.
TEST_CONFIG: dict[str, str] = {
    "group.initial.rebalance.delay.ms": "0",
    "offsets.topic.num.partitions": "1",
    "transaction.state.log.num.partitions": "1",
}


def _with_test_config(
    kwargs: dict[str, Any], fixture: str, request: pytest.FixtureRequest
) -> dict[str, Any]:
    from kwire.broker._config import check_broker_config

    config = {**TEST_CONFIG, **(kwargs.get("config") or {})}
    # the broker logs these as Kafka does, but a test's log is only shown when it fails; a
    # node's warning carries the test's file and line (a ``warnings.warn`` here named the plugin)
    for warning in check_broker_config(config):
        request.node.warn(UserWarning(f"{fixture}: {warning}"))
    return {**kwargs, "config": config}


def _marker_kwargs(
    request: pytest.FixtureRequest, name: str, target: Callable[..., Any]
) -> dict[str, Any]:
    """The marker's arguments, each one a keyword of ``target`` (``Broker`` or ``Cluster``).

    A positional argument would be ignored and a misspelt keyword is ``target``'s TypeError deep
    in this plugin: both fail the test's set-up with one line naming the argument.
    """
    marker = request.node.get_closest_marker(name)
    if marker is None:
        return {}
    if marker.args:
        pytest.fail(
            f"@pytest.mark.{name} takes keyword arguments only, not {marker.args!r}", pytrace=False
        )
    known = [
        parameter.name
        for parameter in inspect.signature(target).parameters.values()
        if parameter.kind is inspect.Parameter.KEYWORD_ONLY
    ]
    for key in marker.kwargs:
        if key not in known:
            import difflib  # only on this error path: loading the plugin stays cheap

            close = difflib.get_close_matches(key, known, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else f" (known: {', '.join(known)})"
            pytest.fail(f"@pytest.mark.{name}: unknown argument {key!r}{hint}", pytrace=False)
    return dict(marker.kwargs)


def pytest_load_initial_conftests(early_config: pytest.Config) -> None:
    # before any conftest imports kwire; ``_must_rewrite`` is pytest's (no public way to unmark)
    hook = getattr(early_config.pluginmanager, "rewrite_hook", None)
    marked = getattr(hook, "_must_rewrite", None)
    if isinstance(marked, set) and "kwire" in marked:
        marked.discard("kwire")
        cache = getattr(hook, "_marked_for_rewrite_cache", None)
        if isinstance(cache, dict):
            cache.clear()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "kwire_broker(kafka_version=..., config=...): settings of the kwire_broker fixture",
    )
    config.addinivalue_line(
        "markers",
        "kwire_cluster(nodes=3, kafka_version=..., config=...): settings of the kwire_cluster "
        "fixture",
    )


@pytest.fixture
def kwire_broker_factory(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[Callable[..., Broker]]:
    """``factory(data_dir=None, **Broker kwargs)`` starts a broker; all are stopped at the end."""
    from kwire.broker import Broker

    started: list[Broker] = []
    count = 0

    def factory(data_dir: str | Path | None = None, **kwargs: Any) -> Broker:
        nonlocal count
        if data_dir is None:
            count += 1
            data_dir = tmp_path / f"kwire-broker-{count}"
        kwargs.setdefault("host", "127.0.0.1")
        kwargs.setdefault("port", 0)
        broker = Broker(data_dir, **_with_test_config(kwargs, "kwire_broker", request))
        broker.start()
        started.append(broker)
        return broker

    yield factory
    for broker in reversed(started):
        broker.stop()


@pytest.fixture
def kwire_broker(
    request: pytest.FixtureRequest, kwire_broker_factory: Callable[..., Broker]
) -> Broker:
    """A running broker: ``.bootstrap``, ``.data_dir``, ``.create_topic()``, ``.topics()``;
    ``@pytest.mark.kwire_broker(kafka_version=..., config=...)`` (the closest marker) sets it up."""
    from kwire.broker import Broker

    return kwire_broker_factory(**_marker_kwargs(request, "kwire_broker", Broker))


@pytest.fixture(scope="session")
def kwire_session_broker(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Broker]:
    """One running broker for the whole session (one per xdist worker), with ``TEST_CONFIG``;
    stopped when the session ends. Tests that share it share its topics and groups."""
    from kwire.broker import Broker

    broker = Broker(
        tmp_path_factory.mktemp("kwire-session-broker"),
        **_with_test_config({"host": "127.0.0.1", "port": 0}, "kwire_session_broker", request),
    )
    broker.start()
    try:
        yield broker
    finally:
        broker.stop()


@pytest.fixture
def kwire_cluster(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Cluster]:
    """A running in-process cluster (three nodes unless marked): ``.bootstrap`` (every node),
    ``.create_topic()``, ``.move_leader()``, ``.stop_broker()``/``.start_broker()``, ``.inject()``."""
    from kwire.broker import Cluster

    kwargs = _marker_kwargs(request, "kwire_cluster", Cluster)
    kwargs.setdefault("host", "127.0.0.1")
    kwargs.setdefault("port", 0)
    cluster = Cluster(
        tmp_path / "kwire-cluster", **_with_test_config(kwargs, "kwire_cluster", request)
    )
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()
