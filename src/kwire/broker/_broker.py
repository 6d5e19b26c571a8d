"""``Broker``: start and stop a kwire broker from Python, in a thread or in a running loop.

Approach: the broker is one asyncio event loop (``KafkaServer`` over a ``BrokerState``). ``start``
runs that loop in a daemon thread and returns once the listener is bound, so synchronous test
code and programs get a Kafka in a few milliseconds; ``start_async`` runs it in the caller's
loop. Everything that touches the state runs on the broker's loop (admin helpers hop there), so
no lock is needed.

A full or failing disk stops the broker as it stops Kafka's: an I/O error takes the data
directory offline (``kwire.log.LogDirFailureChannel``); the request that met it, and any
answered before the stop, get KAFKA_STORAGE_ERROR; then, as ``LogManager.handleLogDirFailure``
halts a broker whose every log directory failed, the listeners close without writing anything
more (no checkpoint, no clean-shutdown marker), so the next start recovers the logs and cuts
any torn write. ``failed_log_dir`` names the directory, ``log_dir_failure`` the error;
``wait_halted`` waits for the stop.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import os
import threading
import time
from collections.abc import Callable, Mapping
from types import TracebackType
from typing import Any, TypeVar

from kwire._lazy import build
from kwire.broker._apis import implemented_versions
from kwire.broker._apis import start as run_startup
from kwire.broker._config import check_broker_config
from kwire.broker._metadata_image import BrokerImage, MetadataImage, NodeInfo
from kwire.broker._releases import Personality, personality
from kwire.broker._server import KafkaServer
from kwire.broker._services import Services
from kwire.broker._state import BrokerError, BrokerState, Clock, Topic
from kwire.log._meta_properties import MetaProperties
from kwire.log._rules import SegmentIndexer
from kwire.log.storage import LogAppendInfo, LogConfig
from kwire.protocol import ErrorCode, Request, Response
from kwire.protocol.releases import NEWEST, BrokerPersonality, parse_release

# The value types every start makes (the personality, the services, the metadata image and
# meta.properties, the metadata log's config and first append, the frames): built with this
# module, which every start imports, so that a start itself (the pytest fixture's first test)
# does not build them; every other lazy_dataclass waits for its first use.
for _value_type in (
    BrokerPersonality, Personality, Services, MetaProperties, NodeInfo, MetadataImage,
    BrokerImage, LogConfig, SegmentIndexer, LogAppendInfo, Request, Response,
):  # fmt: skip
    build(_value_type)

__all__ = ["Broker"]

log = logging.getLogger("kwire.broker")

#: how long a given-up ``start`` waits for its thread to stop what it started (a stop that hangs
#: must not hang the caller for ever)
_GIVE_UP_JOIN = 30.0

T = TypeVar("T")


class Broker:
    """A single-node Kafka broker over ``data_dir`` (see the module doc).

    ``kafka_version`` picks the release personality (``"0.10.2"``, ``"2.0"``, ``"3.9"``,
    ``"4.3"``); ``config`` takes Kafka broker settings by name (``num.partitions``,
    ``auto.create.topics.enable``, ``log.segment.bytes``, ...): a value Kafka would refuse
    raises ``ConfigError`` here, before anything is written; an unknown name is logged as Kafka
    does ("... was supplied but isn't a known config.") and otherwise ignored.
    """

    def __init__(
        self,
        data_dir: str | os.PathLike[str],
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        kafka_version: str = NEWEST,
        node_id: int = 1,
        config: Mapping[str, str] | None = None,
        clock: Clock | None = None,
        metrics_port: int | None = None,
        report_removed_in: str | None = None,
    ) -> None:
        self.data_dir = os.fspath(data_dir)
        self.host = host
        self.requested_port = port
        self.personality: Personality = personality(
            parse_release(kafka_version), implemented_versions()
        )
        self.node_id = node_id
        self.config = dict(config or {})
        for warning in check_broker_config(self.config):
            log.warning("%s", warning)
        self.clock = clock
        #: ``GET /metrics`` on 127.0.0.1 (0: any free port; the bound one once started)
        self.metrics_port = metrics_port
        #: log (and count) clients using versions this release removed (``_upgrade``)
        self.report_removed_in = report_removed_in
        self._metrics_server: asyncio.Server | None = None
        self.state: BrokerState | None = None
        self._server: KafkaServer | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._stopped: asyncio.Event | None = None
        #: The data directory whose I/O error stopped the broker (None: no failure).
        self.failed_log_dir: str | None = None
        #: What failed there, e.g. "... [Errno 28] No space left on device" (None: no failure).
        self.log_dir_failure: str | None = None
        self._halting: asyncio.Task[None] | None = None
        self._halted: asyncio.Event | None = None
        self._started_at = 0.0

    # --- facts --------------------------------------------------------------------------------

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("the broker is not running")
        return self._server.port

    @property
    def bootstrap(self) -> str:
        """``host:port`` for a client's ``bootstrap.servers``."""
        return f"{self.host}:{self.port}"

    @property
    def listeners(self) -> dict[str, str]:
        """Listener name -> its advertised ``host:port`` (``listeners`` config; else PLAINTEXT)."""
        if self._server is None:
            raise RuntimeError("the broker is not running")
        return {name: f"{h}:{p}" for name, (h, p) in self._server.endpoints.items()}

    def bootstrap_for(self, listener: str) -> str:
        """``host:port`` of the listener named ``listener`` (``SASL_SSL``, ``INTERNAL``, ...)."""
        return self.listeners[listener.upper()]

    @property
    def running(self) -> bool:
        return self._server is not None

    # --- async --------------------------------------------------------------------------------

    async def start_async(self) -> None:
        """Open the data directory, recover the logs and start listening in the running loop."""
        if self._server is not None:
            raise RuntimeError("the broker is already running")
        state = BrokerState(
            self.data_dir,
            personality=self.personality,
            node_id=self.node_id,
            host=self.host,
            port=self.requested_port,
            static_config=self.config,
            clock=self.clock,
        )
        run_startup(state)
        server = KafkaServer(state, self.host, self.requested_port)
        try:
            await server.start()
        except BaseException:
            state.close()
            raise
        self.state = state
        self._server = server
        self._loop = asyncio.get_running_loop()
        self._started_at = time.monotonic()
        self._watch_log_dir(state)
        await self._start_metrics(server)

    async def stop_async(self) -> None:
        """Stop listening, close every connection, flush and checkpoint the logs."""
        server, state = self._server, self.state
        self._server = None
        if self._metrics_server is not None:
            self._metrics_server.close()
            self._metrics_server = None
        if server is not None:
            await server.stop()
        if state is not None:
            state.close()
        self.state = None
        if server is not None and state is not None:
            # KafkaServer's "shut down completed", with what the broker served
            log.info(
                "shut down completed after %.1f s: %d connections, %d requests, %d topics",
                time.monotonic() - self._started_at,
                sum(server.metrics.created.values()),
                sum(server.metrics.usage.values()),
                len(state.topics),
            )

    def _watch_log_dir(self, state: BrokerState) -> None:
        self._halted = asyncio.Event()
        state.data_dir.failures.on_offline(self._log_dir_failed)

    def _log_dir_failed(self, log_dir: str) -> None:
        """``ReplicaManager.handleLogDirFailure``: with its only log directory offline, the
        broker stops (Kafka's ``Exit.halt``); called on the broker's loop by the failing call,
        so its response (KAFKA_STORAGE_ERROR) is written before the stop begins."""
        log.critical("Shutdown broker because all log dirs in %s have failed", log_dir)
        self.failed_log_dir = log_dir
        state = self.state
        error = state.data_dir.failures.offline_error(log_dir) if state is not None else None
        self.log_dir_failure = error.message if error is not None else None
        loop = self._loop
        if loop is None or self._halting is not None:
            return
        self._halting = loop.create_task(self._halt())

    async def _halt(self) -> None:
        try:
            if self._stopped is not None and self._thread is not None:
                self._stopped.set()  # started with ``start``: its thread stops the broker
            else:
                await self.stop_async()
        finally:
            if self._halted is not None:
                self._halted.set()

    async def wait_halted(self) -> str:
        """Wait until an I/O error has stopped the broker; the failed log directory."""
        if self._halted is None:
            raise RuntimeError("the broker is not running")
        await self._halted.wait()
        assert self.failed_log_dir is not None
        return self.failed_log_dir

    # --- threaded -----------------------------------------------------------------------------

    def start(self, timeout: float = 30.0) -> Broker:
        """Run the broker in a background thread; returns once it listens."""
        if self._thread is not None:
            raise RuntimeError("the broker is already running")
        ready: concurrent.futures.Future[None] = concurrent.futures.Future()

        def run() -> None:
            loop = asyncio.new_event_loop()
            asyncio.set_event_loop(loop)
            self._stopped = asyncio.Event()

            async def main() -> None:
                try:
                    await self.start_async()
                except BaseException as exc:
                    if ready.set_running_or_notify_cancel():
                        ready.set_exception(exc)
                    return
                # the caller may have given up meanwhile (timeout, Ctrl-C): nobody would stop it
                if not ready.set_running_or_notify_cancel():
                    await self.stop_async()
                    return
                ready.set_result(None)
                assert self._stopped is not None
                await self._stopped.wait()
                await self.stop_async()

            try:
                loop.run_until_complete(main())
            finally:
                loop.close()

        self._thread = threading.Thread(
            target=run, name=f"kwire-broker-{self.node_id}", daemon=True
        )
        self._thread.start()
        try:
            ready.result(timeout)
        except BaseException:
            # given up: a start not yet done is cancelled (the thread stops what it starts); one
            # that finished meanwhile is stopped here. Either way the thread ends, whatever the
            # timeout was (0 included), so no broker keeps the port and the directory's lock
            if not ready.cancel() and ready.exception(_GIVE_UP_JOIN) is None:
                self.stop(_GIVE_UP_JOIN)
            if self._thread is not None:
                self._thread.join(_GIVE_UP_JOIN)
                self._thread = None
            raise
        return self

    def stop(self, timeout: float = 30.0) -> None:
        """Stop a broker started with ``start`` (no-op when not running)."""
        thread, loop, stopped = self._thread, self._loop, self._stopped
        if thread is None or loop is None or stopped is None:
            return
        if loop.is_running():
            loop.call_soon_threadsafe(stopped.set)
        thread.join(timeout)
        self._thread = None

    def __enter__(self) -> Broker:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # --- admin helpers (run on the broker's loop) ---------------------------------------------

    def call(self, fn: Callable[[BrokerState], T], timeout: float = 30.0) -> T:
        """Run ``fn(state)`` on the broker's loop and return its result."""
        loop, state = self._loop, self.state
        if loop is None or state is None:
            raise RuntimeError("the broker is not running")
        if self._thread is None or threading.current_thread() is self._thread:
            return fn(state)

        async def run() -> T:
            return fn(state)

        return asyncio.run_coroutine_threadsafe(run(), loop).result(timeout)

    def create_topic(
        self, name: str, partitions: int = 1, config: Mapping[str, str] | None = None
    ) -> Topic:
        """Create a topic as CreateTopics would (Kafka's checks; raises ``BrokerError``)."""
        return self.call(lambda state: state.create_topic(name, partitions, config))

    def delete_topic(self, name: str) -> None:
        """Delete a topic and its data (``BrokerError`` if there is none of that name)."""
        self.call(lambda state: state.delete_topic(self._topic(state, name).name))

    def set_scram_password(
        self, user: str, password: str, mechanism: str = "SCRAM-SHA-512", iterations: int = 4096
    ) -> None:
        """Add or replace a SCRAM credential, as ``kafka-configs --alter --add-config
        'SCRAM-SHA-512=[password=...]'`` or AlterUserScramCredentials would."""
        from kwire.broker._sasl import set_scram_password

        self.call(lambda state: set_scram_password(state, user, password, mechanism, iterations))

    def connections(self) -> list[dict[str, Any]]:
        """Each open client connection: peer address, requests read, and the bytes held for it
        (``output`` unsent, ``input`` read but not yet handled)."""
        server = self._server
        if server is None:
            raise RuntimeError("the broker is not running")
        return self.call(lambda _state: server.connection_stats())

    def topics(self) -> dict[str, int]:
        """Topic name -> partition count."""
        return self.call(lambda state: {t.name: len(t.partitions) for t in state.topics.values()})

    def end_offsets(self, topic: str) -> list[int]:
        """The high watermark of each partition of ``topic``."""
        return self.call(
            lambda state: [p.high_watermark for p in self._topic(state, topic).partitions]
        )

    @staticmethod
    def _topic(state: BrokerState, name: str) -> Topic:
        topic = state.topics.get(name)
        if topic is None:  # Kafka's words for it (UnknownTopicOrPartitionException)
            raise BrokerError(
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                f"This server does not host this topic: {name}",
            )
        return topic

    # --- metrics, quotas, upgrade readiness (_metrics, _quotas, _upgrade) ----------------------

    async def _start_metrics(self, server: KafkaServer) -> None:
        from kwire.broker._metrics import serve_metrics

        if self.report_removed_in is not None:
            server.metrics.report_removed_in(self.report_removed_in)
        if self.metrics_port is not None:
            self._metrics_server = await serve_metrics(server.state, self.metrics_port)
            self.metrics_port = self._metrics_server.sockets[0].getsockname()[1]

    def metrics_text(self) -> str:
        """What ``GET /metrics`` answers (Prometheus text format)."""
        from kwire.broker._metrics import render

        return self.call(render)

    def removed_version_report(self, release: str | None = None) -> list[dict[str, Any]]:
        """Every client (software name and version, client id) that used a protocol version
        ``release`` (default ``report_removed_in``, else 4.0) removed, with the API, version
        and request count."""
        from kwire.broker._metrics import broker_metrics

        return self.call(
            lambda state: [
                u.to_dict() for u in broker_metrics(state).removed_version_report(release)
            ]
        )

    def alter_client_quotas(
        self, entity: Mapping[str, str | None], values: Mapping[str, float | None]
    ) -> None:
        """Set quota values (``None`` removes one) of an entity such as ``{"client-id": "app"}``
        or ``{"user": None}`` (``<default>``), as ``kafka-configs --alter --entity-type clients``."""
        from kwire.broker._quotas import alter_quotas

        key = tuple(sorted(entity.items()))
        self.call(lambda state: alter_quotas(state, key, values))

    def __repr__(self) -> str:
        where = self.bootstrap if self._server is not None else "stopped"
        return f"Broker({self.data_dir!r}, kafka_version={self.personality.release!r}, {where})"
