"""``Cluster``: several brokers in one process and one event loop, sharing one controller.

Approach: a cluster is one ``BrokerState`` (topics, partitions and their logs, coordinators,
the metadata log: the controller and the storage, over one data directory) served by one
``KafkaServer`` per node, each with its own listeners and ports, node ids 1..N. The storage is
shared in-process, so moving a partition's leader copies nothing and loses nothing: there is no
replication to wait for, and every partition keeps one replica, its leader, wherever it goes.
What differs between nodes is routing (``_routing``): a request names the node whose listener
received it (``RequestContext.node_id``), partition requests are answered by the partition's
leader only (NOT_LEADER_OR_FOLLOWER elsewhere), coordinator requests by the leader of the
coordinator's internal partition (NOT_COORDINATOR elsewhere).

Leaders are placed round-robin over the live nodes when partitions are created; ``move_leader``
moves one (a new leader epoch, recorded in the log's leader epoch cache and as a
PartitionChangeRecord); ``stop_broker`` closes a node's listeners and connections and moves its
partitions to the live nodes; ``start_broker`` listens again on the same ports (leaders stay
where they are, as Kafka without ``auto.leader.rebalance.enable``). ``inject`` delays or fails
requests of chosen APIs, on one node or all, to test client retries.

``Cluster`` is a ``Broker`` (start and stop in a thread or a loop, ``call``, the admin helpers);
a plain ``Broker`` is unchanged (a one-node cluster of its own state).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import threading
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

from kwire.broker._apis import start as run_startup
from kwire.broker._broker import Broker
from kwire.broker._routing import DISCONNECT, Fault, Faults
from kwire.broker._security import Listener, parse_listeners
from kwire.broker._server import KafkaServer, housekeep
from kwire.broker._state import BrokerError, BrokerState, Clock
from kwire.protocol import ErrorCode
from kwire.protocol.releases import NEWEST

__all__ = ["Cluster"]

T = TypeVar("T")


class Cluster(Broker):
    """``nodes`` brokers (node ids 1..N) over one data directory; see the module doc.

    ``port`` 0 gives every listener of every node a free port; another port is node 1's, node
    ``n`` listening on ``port + n - 1`` (the ports of ``listeners``/``advertised.listeners`` in
    ``config`` are offset the same way).
    """

    def __init__(
        self,
        data_dir: str | os.PathLike[str],
        *,
        nodes: int = 3,
        host: str = "127.0.0.1",
        port: int = 0,
        kafka_version: str = NEWEST,
        config: Mapping[str, str] | None = None,
        clock: Clock | None = None,
        metrics_port: int | None = None,
        report_removed_in: str | None = None,
    ) -> None:
        if nodes < 1:
            raise ValueError(f"a cluster needs at least one node, not {nodes}")
        super().__init__(
            data_dir,
            host=host,
            port=port,
            kafka_version=kafka_version,
            node_id=1,
            config=config,
            clock=clock,
            metrics_port=metrics_port,
            report_removed_in=report_removed_in,
        )
        self.node_ids = list(range(1, nodes + 1))
        self.faults = Faults()
        self._nodes: dict[int, KafkaServer] = {}
        self._housekeeper: asyncio.Task[None] | None = None

    # --- facts --------------------------------------------------------------------------------

    @property
    def bootstrap(self) -> str:
        """``host:port`` of every live node, comma-separated (``bootstrap.servers``)."""
        return ",".join(self.node_bootstrap(n) for n in self.live_nodes)

    def bootstrap_for(self, listener: str) -> str:
        """``bootstrap.servers`` of one listener (``SASL_SSL``, ...) on every live node."""
        name = listener.upper()
        out = []
        for node in self.live_nodes:
            host, port = self._server_of(node).endpoints[name]
            out.append(f"{host}:{port}")
        return ",".join(out)

    def node_bootstrap(self, node_id: int) -> str:
        """``host:port`` of one node's first listener."""
        server = self._server_of(node_id)
        return f"{self.host}:{server.port}"

    def node_listeners(self, node_id: int) -> dict[str, str]:
        server = self._server_of(node_id)
        return {name: f"{h}:{p}" for name, (h, p) in server.endpoints.items()}

    @property
    def live_nodes(self) -> list[int]:
        return sorted(n for n, s in self._nodes.items() if s.running)

    def _server_of(self, node_id: int) -> KafkaServer:
        if not self._nodes:
            raise RuntimeError("the cluster is not running")
        try:
            return self._nodes[node_id]
        except KeyError:
            raise ValueError(f"no node {node_id} (nodes {self.node_ids})") from None

    def _listeners_of(self, node_id: int) -> list[Listener]:
        """The node's listeners: the configured ones, ports offset by ``node_id - 1``."""
        offset = node_id - 1
        out = []
        for listener in parse_listeners(self.config, self.host, self.requested_port):
            out.append(
                dataclasses.replace(
                    listener,
                    port=listener.port + offset if listener.port else 0,
                    advertised_port=(
                        listener.advertised_port + offset if listener.advertised_port else None
                    ),
                )
            )
        return out

    # --- async --------------------------------------------------------------------------------

    async def start_async(self) -> None:
        """Open the data directory, recover the logs and start every node in the running loop."""
        if self._server is not None:
            raise RuntimeError("the cluster is already running")
        state = BrokerState(
            self.data_dir,
            personality=self.personality,
            node_id=1,
            host=self.host,
            port=self.requested_port,
            static_config=self.config,
            clock=self.clock,
            nodes=self.node_ids,
        )
        run_startup(state)
        nodes: dict[int, KafkaServer] = {}
        try:
            for node in self.node_ids:
                server = KafkaServer(
                    state,
                    self.host,
                    self.requested_port,
                    node_id=node,
                    listeners=self._listeners_of(node),
                    housekeeping=False,
                    faults=self.faults,
                )
                nodes[node] = server
                await server.start()
        except BaseException:
            for server in nodes.values():
                await server.stop()
            state.close()
            raise
        self.state = state
        self._nodes = nodes
        self._server = nodes[self.node_ids[0]]
        self._loop = asyncio.get_running_loop()
        self._housekeeper = asyncio.create_task(housekeep(state))
        self._watch_log_dir(state)
        await self._start_metrics(self._server)

    async def stop_async(self) -> None:
        """Stop every node, close every connection, flush and checkpoint the logs."""
        nodes, state = self._nodes, self.state
        self._server = None
        if self._metrics_server is not None:
            self._metrics_server.close()
            self._metrics_server = None
        if self._housekeeper is not None:
            self._housekeeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._housekeeper
            self._housekeeper = None
        for server in nodes.values():
            if server.running:
                await server.stop()
        if state is not None:
            state.close()
        self.state = None

    async def stop_broker_async(self, node_id: int) -> None:
        """Stop one node: its listeners close, every connection to it drops, and the
        partitions it led move to the live nodes (new leader epochs)."""
        server = self._server_of(node_id)
        if not server.running:
            return
        await server.stop()
        assert self.state is not None
        self.state.broker_stopped(node_id)

    async def start_broker_async(self, node_id: int) -> None:
        """Start a stopped node again, listening on the ports it had."""
        server = self._server_of(node_id)
        if server.running:
            return
        server.listeners = [
            dataclasses.replace(listener, port=server.bound.get(listener.name, listener.port))
            for listener in server.listeners
        ]
        await server.start()

    # --- threaded (or in the cluster's loop) ---------------------------------------------------

    def start(self, timeout: float = 30.0) -> Cluster:
        """Run the cluster in a background thread; returns once every node listens."""
        super().start(timeout)
        return self

    def __enter__(self) -> Cluster:
        return self.start()

    def _run(self, make: Callable[[], Awaitable[T]], timeout: float = 30.0) -> T:
        """Run a coroutine on the cluster's loop from another thread."""
        loop = self._loop
        if loop is None or self.state is None:
            raise RuntimeError("the cluster is not running")
        if self._thread is None or threading.current_thread() is self._thread:
            raise RuntimeError("in the cluster's own loop, await the *_async method instead")

        async def run() -> T:
            return await make()

        return asyncio.run_coroutine_threadsafe(run(), loop).result(timeout)

    def stop_broker(self, node_id: int) -> None:
        """``stop_broker_async`` from another thread (a cluster started with ``start``)."""
        self._run(lambda: self.stop_broker_async(node_id))

    def start_broker(self, node_id: int) -> None:
        """``start_broker_async`` from another thread (a cluster started with ``start``)."""
        self._run(lambda: self.start_broker_async(node_id))

    # --- leadership -----------------------------------------------------------------------------

    def move_leader(self, topic: str, partition: int, to_node: int) -> int:
        """Make ``to_node`` (a live node) the leader of ``topic``-``partition``; returns the new
        leader epoch (bumped even when the leader does not change, as a Kafka election would)."""

        def move(state: BrokerState) -> int:
            found = state.partition(topic, partition)
            if found is None:
                raise BrokerError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"{topic}-{partition}")
            if to_node not in state.live_brokers:
                raise ValueError(f"node {to_node} is not live (live: {sorted(state.live_brokers)})")
            state.move_leader(found, to_node)
            return found.leader_epoch

        return self.call(move)

    def leaders(self, topic: str) -> list[int]:
        """The leader node of each partition of ``topic``."""
        return self.call(lambda state: [p.leader_id for p in state.topics[topic].partitions])

    def leader_epochs(self, topic: str) -> list[int]:
        return self.call(lambda state: [p.leader_epoch for p in state.topics[topic].partitions])

    # --- faults ---------------------------------------------------------------------------------

    def inject(
        self,
        api_key: int,
        *,
        node_id: int | None = None,
        delay_ms: int = 0,
        error: int | str | ErrorCode | None = None,
        count: int | None = None,
    ) -> None:
        """Delay and/or fail requests of ``api_key`` (on ``node_id``, or every node): wait
        ``delay_ms``, then answer with ``error`` in every error code of the response (an
        ``ErrorCode``, its number or its name), or close the connection (``"disconnect"``);
        the next ``count`` requests, or all of them until ``clear_faults``."""
        failure: ErrorCode | str | None
        if error is None or error == DISCONNECT:
            failure = error
        elif isinstance(error, str):
            failure = ErrorCode[error.upper()]
        else:
            failure = ErrorCode(int(error))
        fault = Fault(api_key, node_id, delay_ms, failure, count)
        self._on_loop(lambda: self.faults.add(fault))

    def clear_faults(self) -> None:
        self._on_loop(self.faults.clear)

    def _on_loop(self, fn: Callable[[], Any]) -> None:
        if self.state is None:
            fn()  # not running: nothing reads the faults
            return
        self.call(lambda _state: fn())

    def __repr__(self) -> str:
        where = self.bootstrap if self._server is not None else "stopped"
        return (
            f"Cluster({self.data_dir!r}, nodes={len(self.node_ids)}, "
            f"kafka_version={self.personality.release!r}, {where})"
        )
