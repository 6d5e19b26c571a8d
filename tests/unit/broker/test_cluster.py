"""An in-process cluster: leaders over nodes, routing errors, moves and epochs, coordinators,
generic error responses, and a running ``Cluster`` (faults, nodes stopped and started).

The handler tests run requests through the wire and ``dispatch`` (guards, then the handler) on
one shared ``BrokerState`` of three nodes, naming the receiving node in the context, with
endpoints registered as the servers register them; the ``Cluster`` tests use loopback sockets.
"""

from __future__ import annotations

import socket
import time
from pathlib import Path
from typing import Any

import pytest

from kwire.broker import BrokerState, Cluster, Deferred, ManualClock, RequestContext, personality
from kwire.broker._apis import dispatch, implemented_versions
from kwire.broker._fetch import FileRecords
from kwire.broker._routing import error_response
from kwire.broker._server import encode_response_pieces
from kwire.protocol import (
    ClientConnection,
    ErrorCode,
    decode_request_frame,
    decode_response_frame,
    encode_request_frame,
    message_class,
    struct_class,
)
from kwire.records import build_batch

NOW = 1_700_000_000_000
PORTS = {1: 9101, 2: 9102, 3: 9103}


def make_state(path: Path, nodes: int = 3) -> BrokerState:
    state = BrokerState(
        path,
        personality=personality("4.3", implemented_versions()),
        clock=ManualClock(NOW),
        nodes=list(range(1, nodes + 1)),
    )
    for node in state.nodes:
        state.broker_started(node, {"PLAINTEXT": ("127.0.0.1", PORTS[node])})
    return state


@pytest.fixture
def state(tmp_path: Path) -> Any:
    s = make_state(tmp_path / "data")
    yield s
    s.close()


def call(state: BrokerState, node: int, name: str, version: int, **fields: Any) -> Any:
    """One request received by ``node``, through the wire, the guards and the handler."""
    request = message_class(f"{name}Request")(**fields)
    frame = encode_request_frame(request, version, correlation_id=7, client_id="test")
    decoded = decode_request_frame(frame)
    api_key = request.API_KEY
    assert api_key is not None
    ctx = RequestContext(
        api_key, version, 7, "test", listener_port=PORTS.get(node, 9092), node_id=node
    )
    outcome = dispatch(state, ctx, decoded.message)
    if isinstance(outcome, Deferred):
        return outcome
    return decode(outcome, version)


def decode(message: Any, version: int) -> Any:
    _, pieces = encode_response_pieces(message, version, 7)
    out = b"".join(p.to_bytes() if isinstance(p, FileRecords) else p for p in pieces)
    for p in pieces:
        if isinstance(p, FileRecords):
            p.close()
    return decode_response_frame(out, message.API_KEY, version).message


def records(*values: bytes) -> bytes:
    return build_batch([(None, NOW, None, v) for v in values], 2, 0)


def produce(state: BrokerState, node: int, topic: str, partition: int, version: int = 11) -> Any:
    cls = message_class("ProduceRequest")
    tcls = struct_class(cls, "topic_data")
    pcls = struct_class(cls, "topic_data", "partition_data")
    return call(
        state,
        node,
        "Produce",
        version,
        acks=-1,
        timeout_ms=1000,
        topic_data=[
            tcls(name=topic, partition_data=[pcls(index=partition, records=records(b"x"))])
        ],
    )


def fetch(state: BrokerState, node: int, topic: str, partition: int, version: int = 12) -> Any:
    cls = message_class("FetchRequest")
    tcls = struct_class(cls, "topics")
    pcls = struct_class(cls, "topics", "partitions")
    found = state.topics[topic]
    return call(
        state,
        node,
        "Fetch",
        version,
        replica_id=-1,
        max_wait_ms=0,
        min_bytes=0,
        max_bytes=1 << 20,
        topics=[
            tcls(
                topic=topic,
                topic_id=found.topic_id,
                partitions=[pcls(partition=partition, fetch_offset=0, partition_max_bytes=1 << 20)],
            )
        ],
    )


# --- leadership -----------------------------------------------------------------------------------


def test_leaders_go_round_robin_over_the_live_nodes(state: BrokerState) -> None:
    state.create_topic("a", 4)
    state.create_topic("b", 2)
    assert [p.leader_id for p in state.topics["a"].partitions] == [1, 2, 3, 1]
    assert [p.leader_id for p in state.topics["b"].partitions] == [2, 3]
    state.create_partitions("b", 4)
    assert [p.leader_id for p in state.topics["b"].partitions] == [2, 3, 1, 2]
    state.broker_stopped(2)
    state.create_topic("c", 3)
    assert {p.leader_id for p in state.topics["c"].partitions} == {1, 3}


def test_metadata_lists_every_live_broker_and_each_leader(state: BrokerState) -> None:
    state.create_topic("t", 3)
    response = call(state, 2, "Metadata", 12, topics=None)
    assert [(b.node_id, b.port) for b in response.brokers] == [(1, 9101), (2, 9102), (3, 9103)]
    parts = response.topics[0].partitions
    assert [(p.leader_id, p.replica_nodes, p.isr_nodes) for p in parts] == [
        (1, [1], [1]),
        (2, [2], [2]),
        (3, [3], [3]),
    ]
    cluster = call(state, 3, "DescribeCluster", 1, endpoint_type=1)
    assert [(b.broker_id, b.port) for b in cluster.brokers] == [(1, 9101), (2, 9102), (3, 9103)]
    state.broker_stopped(3)
    response = call(state, 1, "Metadata", 12, topics=None)
    assert [b.node_id for b in response.brokers] == [1, 2]
    assert all(p.leader_id in (1, 2) for p in response.topics[0].partitions)


def test_partition_requests_to_a_follower_get_not_leader_or_follower(state: BrokerState) -> None:
    state.create_topic("t", 2)  # partition 0 on node 1, partition 1 on node 2
    ok = produce(state, 1, "t", 0)
    assert ok.responses[0].partition_responses[0].error_code == 0
    wrong = produce(state, 2, "t", 0)
    part = wrong.responses[0].partition_responses[0]
    assert part.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    # KIP-951: the leader and its endpoint ride along from Produce v10
    assert (part.current_leader.leader_id, part.current_leader.leader_epoch) == (1, 0)
    assert [(e.node_id, e.port) for e in wrong.node_endpoints] == [(1, 9101)]
    assert state.partition("t", 0).log.log_end_offset == 1  # type: ignore[union-attr]

    fetched = fetch(state, 3, "t", 0, version=16)
    out = fetched.responses[0].partitions[0]
    assert out.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert out.current_leader.leader_id == 1
    assert [e.node_id for e in fetched.node_endpoints] == [1]
    assert fetch(state, 1, "t", 0).responses[0].partitions[0].error_code == 0

    lcls = message_class("ListOffsetsRequest")
    listed = call(
        state,
        2,
        "ListOffsets",
        7,
        replica_id=-1,
        topics=[
            struct_class(lcls, "topics")(
                name="t",
                partitions=[
                    struct_class(lcls, "topics", "partitions")(
                        partition_index=0, timestamp=-1, current_leader_epoch=-1
                    )
                ],
            )
        ],
    )
    assert listed.topics[0].partitions[0].error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER

    ecls = message_class("OffsetForLeaderEpochRequest")
    epochs = call(
        state,
        3,
        "OffsetForLeaderEpoch",
        4,
        replica_id=-1,
        topics=[
            struct_class(ecls, "topics")(
                topic="t",
                partitions=[
                    struct_class(ecls, "topics", "partitions")(
                        partition=1, current_leader_epoch=0, leader_epoch=0
                    )
                ],
            )
        ],
    )
    assert epochs.topics[0].partitions[0].error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER

    dcls = message_class("DeleteRecordsRequest")
    deleted = call(
        state,
        1,
        "DeleteRecords",
        2,
        timeout_ms=1000,
        topics=[
            struct_class(dcls, "topics")(
                name="t",
                partitions=[
                    struct_class(dcls, "topics", "partitions")(partition_index=1, offset=0)
                ],
            )
        ],
    )
    assert deleted.topics[0].partitions[0].error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER


def test_a_move_bumps_the_epoch_in_the_cache_and_the_metadata_log(tmp_path: Path) -> None:
    state = make_state(tmp_path / "data")
    try:
        state.create_topic("t", 1)
        assert produce(state, 1, "t", 0).responses[0].partition_responses[0].error_code == 0
        partition = state.partition("t", 0)
        assert partition is not None
        state.move_leader(partition, 3)
        assert (partition.leader_id, partition.leader_epoch) == (3, 1)
        assert partition.log.leader_epochs == [(0, 0), (1, 1)]  # epoch 1 starts at the end
        stale = produce(state, 1, "t", 0).responses[0].partition_responses[0]
        assert stale.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
        assert (stale.current_leader.leader_id, stale.current_leader.leader_epoch) == (3, 1)
        assert produce(state, 3, "t", 0).responses[0].partition_responses[0].error_code == 0
        assert fetch(state, 3, "t", 0).responses[0].partitions[0].error_code == 0
        state.broker_stopped(3)
        assert partition.leader_id in (1, 2) and partition.leader_epoch == 2
        leader = partition.leader_id
    finally:
        state.close()
    again = make_state(tmp_path / "data")
    try:
        found = again.partition("t", 0)
        assert found is not None
        assert (found.leader_id, found.leader_epoch) == (leader, 2)  # PartitionChangeRecords
        assert found.log.log_end_offset == 2
        image = again._metadata.image.topics["t"].partitions[0]
        assert (image.leader, image.leader_epoch, image.replicas) == (leader, 2, [leader])
    finally:
        again.close()


def test_every_node_registers_its_endpoints_and_a_stopped_one_is_fenced(tmp_path: Path) -> None:
    """The metadata log holds a RegisterBrokerRecord per node with the ports it listens on (as
    each KRaft broker registers itself), a FenceBrokerRecord when a node stops, and a new
    registration (a new incarnation and epoch) when it starts again."""
    state = make_state(tmp_path / "data")
    try:
        image = state.metadata_image
        assert sorted(image.brokers) == [1, 2, 3]
        for node, port in PORTS.items():
            broker = image.brokers[node]
            assert broker.endpoints == (("PLAINTEXT", "127.0.0.1", port, 0),)
            assert not broker.fenced
        first = image.brokers[2]
        state.broker_stopped(2)
        assert image.brokers[2].fenced
        state.broker_started(2, {"PLAINTEXT": ("127.0.0.1", PORTS[2])})
        again = image.brokers[2]
        assert not again.fenced and again.broker_epoch > first.broker_epoch
        assert again.incarnation_id != first.incarnation_id
        registered = len(state._metadata.image.brokers)
        state.broker_started(2, {"PLAINTEXT": ("127.0.0.1", PORTS[2])})  # nothing changed
        assert image.brokers[2] is again and len(image.brokers) == registered
    finally:
        state.close()
    reopened = make_state(tmp_path / "data")
    try:
        assert {n: b.fenced for n, b in reopened.metadata_image.brokers.items()} == {
            1: False,
            2: False,
            3: False,
        }
    finally:
        reopened.close()


# --- coordinators ---------------------------------------------------------------------------------


def find_coordinator(state: BrokerState, node: int, key: str, key_type: int = 0) -> Any:
    response = call(state, node, "FindCoordinator", 4, key_type=key_type, coordinator_keys=[key])
    return response.coordinators[0]


def test_coordinator_requests_go_to_the_leader_of_the_coordinator_partition(
    state: BrokerState,
) -> None:
    found = find_coordinator(state, 1, "g1")
    offsets = state.topics["__consumer_offsets"]
    from kwire.broker._state import partition_for

    leader = offsets.partitions[partition_for("g1", len(offsets.partitions))].leader_id
    assert (found.error_code, found.node_id, found.port) == (0, leader, PORTS[leader])
    assert find_coordinator(state, 3, "g1").node_id == leader  # every node answers the same
    other = next(n for n in (1, 2, 3) if n != leader)
    heartbeat = {"group_id": "g1", "generation_id": 1, "member_id": "m"}
    assert call(state, other, "Heartbeat", 4, **heartbeat).error_code == ErrorCode.NOT_COORDINATOR
    assert call(state, leader, "Heartbeat", 4, **heartbeat).error_code != ErrorCode.NOT_COORDINATOR
    # a partition that exists: KafkaApis answers an unknown one UNKNOWN_TOPIC_OR_PARTITION on
    # any node, before the coordinator
    state.create_topic("t", 4, None)
    commit_cls = message_class("OffsetCommitRequest")
    commit = call(
        state,
        other,
        "OffsetCommit",
        8,
        group_id="g1",
        generation_id_or_member_epoch=-1,
        member_id="",
        topics=[
            struct_class(commit_cls, "topics")(
                name="t",
                partitions=[
                    struct_class(commit_cls, "topics", "partitions")(
                        partition_index=3, committed_offset=5
                    )
                ],
            )
        ],
    )
    assert commit.topics[0].name == "t"
    assert commit.topics[0].partitions[0].partition_index == 3
    assert commit.topics[0].partitions[0].error_code == ErrorCode.NOT_COORDINATOR
    # the coordinator moves with its partition
    partition = offsets.partitions[partition_for("g1", len(offsets.partitions))]
    state.move_leader(partition, other)
    assert find_coordinator(state, 1, "g1").node_id == other
    assert call(state, leader, "Heartbeat", 4, **heartbeat).error_code == ErrorCode.NOT_COORDINATOR


def test_transaction_coordinator_routing(state: BrokerState) -> None:
    found = find_coordinator(state, 2, "tx-1", key_type=1)
    assert found.error_code == 0
    assert "__transaction_state" in state.topics
    other = next(n for n in (1, 2, 3) if n != found.node_id)
    init = {"transactional_id": "tx-1", "transaction_timeout_ms": 10000}
    wrong = call(state, other, "InitProducerId", 4, **init)
    assert wrong.error_code == ErrorCode.NOT_COORDINATOR
    right = call(state, found.node_id, "InitProducerId", 4, **init)
    assert right.error_code == 0 and right.producer_id >= 0
    idempotent = call(
        state, other, "InitProducerId", 4, transactional_id=None, transaction_timeout_ms=1
    )
    assert idempotent.error_code == 0  # no transactional id: any node


def test_list_groups_lists_a_group_on_its_coordinator_only(state: BrokerState) -> None:
    from kwire.broker.group import group_coordinator

    coordinator = find_coordinator(state, 1, "g").node_id
    join = call(
        state,
        coordinator,
        "JoinGroup",
        5,
        group_id="g",
        session_timeout_ms=10000,
        rebalance_timeout_ms=10000,
        member_id="",
        group_instance_id="static-1",
        protocol_type="consumer",
        protocols=[
            struct_class(message_class("JoinGroupRequest"), "protocols")(name="range", metadata=b"")
        ],
    )
    assert isinstance(join, Deferred)  # waiting for the rebalance: the group exists
    assert "g" in group_coordinator(state).groups
    listed = {n: [g.group_id for g in call(state, n, "ListGroups", 4).groups] for n in (1, 2, 3)}
    assert [n for n, groups in listed.items() if "g" in groups] == [coordinator]


# --- one error everywhere -------------------------------------------------------------------------


def test_error_response_mirrors_the_request() -> None:
    cls = message_class("ProduceRequest")
    request = cls(
        acks=-1,
        timeout_ms=1,
        topic_data=[
            struct_class(cls, "topic_data")(
                name="a",
                partition_data=[
                    struct_class(cls, "topic_data", "partition_data")(index=i, records=b"")
                    for i in (0, 4)
                ],
            )
        ],
    )
    response = decode(error_response(0, 11, request, ErrorCode.NOT_LEADER_OR_FOLLOWER), 11)
    assert [
        (t.name, [(p.index, p.error_code) for p in t.partition_responses])
        for t in response.responses
    ] == [("a", [(0, 6), (4, 6)])]
    assert response.node_endpoints == []
    find = message_class("FindCoordinatorRequest")(key_type=0, coordinator_keys=["x", "y"])
    found = decode(error_response(10, 4, find, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS), 4)
    assert [(c.key, c.error_code) for c in found.coordinators] == [("x", 14), ("y", 14)]
    join = message_class("JoinGroupRequest")(group_id="g", protocols=[])
    assert decode(error_response(11, 5, join, ErrorCode.NOT_COORDINATOR), 5).error_code == 16
    fetch_cls = message_class("FetchRequest")
    fetch_request = fetch_cls(
        topics=[
            struct_class(fetch_cls, "topics")(
                topic="t", partitions=[struct_class(fetch_cls, "topics", "partitions")(partition=2)]
            )
        ]
    )
    fetched = decode(error_response(1, 11, fetch_request, ErrorCode.NOT_LEADER_OR_FOLLOWER), 11)
    assert fetched.error_code == 6
    assert [(p.partition_index, p.error_code) for p in fetched.responses[0].partitions] == [(2, 6)]


# --- a running cluster ----------------------------------------------------------------------------


class Client:
    """A blocking kwire.protocol client over one socket."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.conn = ClientConnection("cluster-test")

    def call(self, message: Any, version: int, timeout: float = 10.0) -> Any:
        self.sock.sendall(self.conn.send(message, version))
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            response = self.conn.next_response()
            if response is not None:
                return response.message
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise ConnectionError("closed by the broker")
            self.conn.receive_data(chunk)
        raise TimeoutError

    def close(self) -> None:
        self.sock.close()


def port_of(cluster: Cluster, node: int) -> int:
    return int(cluster.node_bootstrap(node).rsplit(":", 1)[1])


def metadata(client: Client) -> Any:
    return client.call(message_class("MetadataRequest")(topics=None), 12)


def test_a_cluster_serves_every_node_and_survives_a_node_stopping(tmp_path: Path) -> None:
    cluster = Cluster(tmp_path / "data", nodes=3).start()
    clients: list[Client] = []
    try:
        cluster.create_topic("t", partitions=3)
        assert cluster.leaders("t") == [1, 2, 3]
        assert len(cluster.bootstrap.split(",")) == 3
        ports = {n: port_of(cluster, n) for n in (1, 2, 3)}
        assert len(set(ports.values())) == 3
        two = Client(ports[2])
        clients.append(two)
        response = metadata(two)
        assert {(b.node_id, b.port) for b in response.brokers} == {(n, p) for n, p in ports.items()}
        assert cluster.move_leader("t", 0, 2) == 1
        assert cluster.leaders("t") == [2, 2, 3]

        cluster.stop_broker(2)
        with pytest.raises((ConnectionError, OSError)):
            metadata(two)  # every connection to it dropped
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.1", ports[2]), timeout=2).close()
        assert 2 not in cluster.leaders("t")
        assert cluster.leader_epochs("t")[0] == 2 and cluster.leader_epochs("t")[1] == 1
        one = Client(ports[1])
        clients.append(one)
        assert {b.node_id for b in metadata(one).brokers} == {1, 3}
        assert cluster.bootstrap.count(",") == 1

        cluster.start_broker(2)
        assert port_of(cluster, 2) == ports[2]
        again = Client(ports[2])
        clients.append(again)
        assert {b.node_id for b in metadata(again).brokers} == {1, 2, 3}
        with pytest.raises(ValueError):
            cluster.move_leader("t", 0, 9)
    finally:
        for client in clients:
            client.close()
        cluster.stop()


def test_injected_faults(tmp_path: Path) -> None:
    cluster = Cluster(tmp_path / "data", nodes=2).start()
    clients: list[Client] = []
    try:
        ports = {n: port_of(cluster, n) for n in (1, 2)}
        request = message_class("MetadataRequest")(topics=None)
        cluster.inject(3, node_id=1, error="NOT_COORDINATOR", count=1)
        one = Client(ports[1])
        clients.append(one)
        assert one.call(request, 12).topics == []
        cluster.create_topic("t", partitions=2)
        listed = one.call(message_class("MetadataRequest")(topics=None), 12)
        assert [t.name for t in listed.topics] == ["t"]  # the count was one

        cls = message_class("ProduceRequest")
        produce = cls(
            acks=-1,
            timeout_ms=1000,
            topic_data=[
                struct_class(cls, "topic_data")(
                    name="t",
                    partition_data=[
                        struct_class(cls, "topic_data", "partition_data")(
                            index=0, records=records(b"v")
                        )
                    ],
                )
            ],
        )
        cluster.inject(0, error=ErrorCode.NOT_ENOUGH_REPLICAS, count=2)
        for _ in range(2):
            failed = one.call(produce, 9)
            assert failed.responses[0].partition_responses[0].error_code == 19
        assert cluster.end_offsets("t") == [0, 0]  # a failed request changes nothing
        assert one.call(produce, 9).responses[0].partition_responses[0].error_code == 0

        cluster.inject(3, node_id=2, delay_ms=300)
        two = Client(ports[2])
        clients.append(two)
        started = time.monotonic()
        assert [b.node_id for b in metadata(two).brokers] == [1, 2]
        assert time.monotonic() - started >= 0.25
        cluster.clear_faults()
        started = time.monotonic()
        metadata(two)
        assert time.monotonic() - started < 0.25

        cluster.inject(3, node_id=2, error="disconnect")
        with pytest.raises((ConnectionError, OSError)):
            metadata(two)
        assert metadata(one).brokers  # node 1 is not affected
        cluster.clear_faults()
        fresh = Client(ports[2])
        clients.append(fresh)
        assert metadata(fresh).brokers
    finally:
        for client in clients:
            client.close()
        cluster.stop()


def test_cluster_in_a_running_loop(tmp_path: Path) -> None:
    import asyncio

    async def main() -> list[int]:
        cluster = Cluster(tmp_path / "data", nodes=2)
        await cluster.start_async()
        try:
            cluster.create_topic("t", partitions=2)
            await cluster.stop_broker_async(1)
            leaders = cluster.leaders("t")
            await cluster.start_broker_async(1)
            with pytest.raises(RuntimeError):
                cluster.stop_broker(1)  # the blocking form needs another thread
            return leaders
        finally:
            await cluster.stop_async()

    assert asyncio.run(main()) == [2, 2]


def test_the_kwire_cluster_fixture(kwire_cluster: Cluster) -> None:
    assert kwire_cluster.live_nodes == [1, 2, 3]
    kwire_cluster.create_topic("t", partitions=3)
    assert kwire_cluster.leaders("t") == [1, 2, 3]
