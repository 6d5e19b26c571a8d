"""Which node answers what in an in-process cluster, and answers made of one error code.

Approach: the nodes of a ``kwire.broker.Cluster`` share one ``BrokerState`` (topics, logs,
coordinators, one data directory), so routing is all that differs between them, and it is
decided here from the request's ``RequestContext.node_id`` (the node whose listener received it):

- a partition request (Produce, Fetch, ListOffsets, OffsetForLeaderEpoch, DeleteRecords) is served
  by the partition's leader only (``Partition.leader_id``); elsewhere NOT_LEADER_OR_FOLLOWER, as
  Kafka's ``ReplicaManager.getPartitionOrException`` on a follower (after the leader epoch check,
  ``Partition.getLocalLog``), with KIP-951's ``current_leader`` and ``node_endpoints``;
- a coordinator request is served by the node leading the coordinator's partition of
  ``__consumer_offsets`` (groups) or ``__transaction_state`` (transactional ids), as Kafka's
  coordinators load only the partitions their node leads; elsewhere NOT_COORDINATOR. Each handler
  asks here (``coordinated_elsewhere``, ``not_coordinator``) where Kafka's ``KafkaApis`` hands
  the request to its coordinator: after the API's own checks (the group's, transactional id's and
  topics' ACLs), so a principal without them gets the authorization error on every node, and a
  batch answers key by key (the coordinators themselves do not change);
- ``error_response`` builds any API's response with one error code in every ``error_code`` field,
  its arrays mirroring the request's (Kafka's ``AbstractRequest.getErrorResponse``, generic over
  kwire's message metadata): NOT_COORDINATOR answers and injected faults (``Faults``) use it.

A single broker is a one-node cluster: every partition and coordinator is its own, so nothing here
changes its answers.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any, Final

from kwire._lazy import lazy_dataclass
from kwire.broker._context import RequestContext
from kwire.broker._state import BrokerState, Partition, partition_for
from kwire.protocol import ErrorCode, KafkaMessage, message_class
from kwire.protocol._runtime import KafkaStruct, fields_at

__all__ = [
    "DISCONNECT",
    "Fault",
    "Faults",
    "coordinated_elsewhere",
    "coordinator_node",
    "endpoint",
    "error_response",
    "leader_error",
    "live_nodes",
    "not_coordinator",
    "serving_node",
]

GROUP_KEY: Final = 0
TRANSACTION_KEY: Final = 1
DISCONNECT: Final = "disconnect"


def serving_node(state: BrokerState, ctx: RequestContext) -> int:
    """The node answering ``ctx``'s request."""
    return state.node_id if ctx.node_id is None else ctx.node_id


def clustered(state: BrokerState) -> bool:
    return len(state.nodes) > 1


def endpoint(state: BrokerState, ctx: RequestContext, node: int) -> tuple[str, int] | None:
    """``node``'s advertised (host, port) on the listener the request came in on (``None``: not
    live, or no such listener)."""
    endpoints = state.live_brokers.get(node)
    if endpoints is None:
        return None
    if node == serving_node(state, ctx):
        return ctx.listener_host, ctx.listener_port
    return endpoints.get(ctx.listener_name)


def live_nodes(state: BrokerState, ctx: RequestContext) -> list[tuple[int, str, int]]:
    """(node id, host, port) of every live node with the request's listener, by id."""
    out = []
    for node in sorted(state.live_brokers):
        found = endpoint(state, ctx, node)
        if found is not None:
            out.append((node, found[0], found[1]))
    return out


def leader_error(state: BrokerState, ctx: RequestContext, partition: Partition) -> ErrorCode:
    """NOT_LEADER_OR_FOLLOWER when the serving node does not lead ``partition``; handlers reach
    it through ``_partition_check.partition_or_error``, which orders it after the epoch check."""
    if partition.leader_id == serving_node(state, ctx):
        return ErrorCode.NONE
    return ErrorCode.NOT_LEADER_OR_FOLLOWER


def node_endpoints(state: BrokerState, ctx: RequestContext, nodes: Iterable[int], cls: Any) -> Any:
    """KIP-951's ``NodeEndpoint`` entries (struct ``cls``) for the live ones of ``nodes``."""
    out = []
    for node in sorted(set(nodes)):
        found = endpoint(state, ctx, node)
        if found is not None:
            out.append(cls(node_id=node, host=found[0], port=found[1], rack=None))
    return out


# --- coordinators -------------------------------------------------------------------------------


def coordinator_partition(
    state: BrokerState, key_type: int, key: str, *, create: bool
) -> Partition | None:
    """The ``__consumer_offsets`` / ``__transaction_state`` partition of a group or
    transactional id; ``None`` when the topic does not exist (and ``create`` is false)."""
    if key_type == GROUP_KEY:
        from kwire.broker.group import GROUP_TOPIC, group_coordinator

        if create:
            return group_coordinator(state).offsets_partition(key)
        topic = state.topics.get(GROUP_TOPIC)
    else:
        from kwire.broker._txn import TRANSACTION_TOPIC, coordinator_for

        if create:
            return coordinator_for(state)._log_partition(key)
        topic = state.topics.get(TRANSACTION_TOPIC)
    if topic is None or not topic.partitions:
        return None
    return topic.partitions[partition_for(key, len(topic.partitions))]


def coordinator_node(state: BrokerState, key_type: int, key: str) -> int:
    """The node coordinating a group or transactional id (its partition's leader); a cluster
    creates the internal topic on the first lookup, as Kafka's FindCoordinator does."""
    if not clustered(state):
        return state.node_id
    partition = coordinator_partition(state, key_type, key, create=True)
    return state.node_id if partition is None else partition.leader_id


def coordinated_elsewhere(
    state: BrokerState, ctx: RequestContext, key_type: int, key: str | None
) -> bool:
    """The group or transactional id is coordinated by another node than the one serving the
    request (NOT_COORDINATOR); not while its internal topic does not exist yet."""
    if not clustered(state):
        return False
    partition = coordinator_partition(state, key_type, key or "", create=False)
    return partition is not None and partition.leader_id != serving_node(state, ctx)


def not_coordinator(
    state: BrokerState, ctx: RequestContext, request: Any, key_type: int, key: str | None
) -> KafkaMessage | None:
    """The whole request's NOT_COORDINATOR answer when its one group or transactional id is
    coordinated elsewhere (``None``: this node coordinates it). Handlers call it once their
    authorization passed, where Kafka's call their coordinator."""
    if not coordinated_elsewhere(state, ctx, key_type, key):
        return None
    return error_response(ctx.api_key, ctx.api_version, request, ErrorCode.NOT_COORDINATOR)


# --- one error everywhere -----------------------------------------------------------------------

#: Names a key field goes by in requests, for a response field of that name.
_KEY_ALIASES: Final = {
    "name": ("name", "topic"),
    "topic": ("topic", "name"),
    "topic_id": ("topic_id",),
    "index": ("index", "partition_index", "partition"),
    "partition_index": ("partition_index", "partition", "index"),
    "partition": ("partition", "partition_index", "index"),
    "group_id": ("group_id",),
    "key": ("key",),
    "transactional_id": ("transactional_id",),
    "resource_type": ("resource_type",),
    "resource_name": ("resource_name",),
}
#: String elements of a request array that become this field of the response's struct.
_STRING_KEYS: Final = ("key", "group_id", "name", "transactional_id", "topic")


def error_response(api_key: int, version: int, request: Any, error: ErrorCode) -> KafkaMessage:
    """The response to ``request`` with ``error`` in every error code field (see the module
    doc): arrays of topics, partitions, groups, ... mirror the request's, keyed as it named them;
    every other field keeps its default."""
    cls = message_class(api_key=api_key, kind="response")
    out = _mirror(cls, request, version, error, top=True)
    assert isinstance(out, KafkaMessage)
    return out


def _mirror(cls: type[KafkaStruct], source: Any, version: int, error: ErrorCode, top: bool) -> Any:
    out = cls()
    for f in fields_at(cls, version):
        if f.attr == "error_code" or f.attr.endswith("_error_code"):
            setattr(out, f.attr, int(error))
        elif f.struct is not None and f.is_array:
            setattr(out, f.attr, _mirror_array(f.struct, f.attr, source, version, error))
        elif f.struct is not None:
            if f.tag is None:  # tagged structs (KIP-951's current leader) keep their default
                setattr(out, f.attr, _mirror(f.struct, source, version, error, top=False))
        elif not top and isinstance(source, KafkaStruct):
            value = _key_value(source, f.attr)
            if value is not None:
                setattr(out, f.attr, value)
        elif not top and isinstance(source, str) and f.attr in _STRING_KEYS:
            setattr(out, f.attr, source)
    return out


def _key_value(source: KafkaStruct, attr: str) -> Any:
    for name in _KEY_ALIASES.get(attr, ()):
        value = getattr(source, name, None)
        if value is not None and isinstance(value, (str, int, uuid.UUID)):
            return value
    return None


def _mirror_array(
    cls: type[KafkaStruct], attr: str, source: Any, version: int, error: ErrorCode
) -> list[Any]:
    """The request array a response array answers: the one of the same name, else ``topics``
    / ``partitions`` / the only array, if its elements carry one of the struct's keys."""
    if not isinstance(source, KafkaStruct):
        return []
    arrays = {
        f.attr: getattr(source, f.attr)
        for f in fields_at(type(source), version)
        if f.is_array and isinstance(getattr(source, f.attr, None), list)
    }
    chosen: list[Any] | None = arrays.get(attr)
    if chosen is None:
        for name in ("topics", "partitions"):
            if name in arrays:
                chosen = arrays[name]
                break
        else:
            if len(arrays) == 1:
                chosen = next(iter(arrays.values()))
    if not chosen:
        return []
    sample = chosen[0]
    keys = [f.attr for f in fields_at(cls, version) if f.struct is None and not f.is_array]
    if isinstance(sample, str):
        if not any(k in _STRING_KEYS for k in keys):
            return []
    elif isinstance(sample, int) and not isinstance(sample, bool):
        if not any(k in ("partition_index", "partition", "index") for k in keys):
            return []
        return [_int_key(cls, version, value, error) for value in chosen]
    elif not isinstance(sample, KafkaStruct) or not any(
        _key_value(sample, k) is not None for k in keys
    ):
        return []
    return [_mirror(cls, element, version, error, top=False) for element in chosen]


def _int_key(cls: type[KafkaStruct], version: int, value: int, error: ErrorCode) -> Any:
    """A response struct for a bare partition number of the request."""
    out = _mirror(cls, None, version, error, top=False)
    for f in fields_at(cls, version):
        if f.attr in ("partition_index", "partition", "index"):
            setattr(out, f.attr, value)
            break
    return out


# --- injected faults ----------------------------------------------------------------------------


@lazy_dataclass
class Fault:
    """Delay or fail requests of one API (on one node, or on all): ``delay_ms`` first, then
    ``error`` (an error code answered everywhere, ``"disconnect"``, or ``None``: answer
    normally); ``count`` requests, or every one while set (``None``)."""

    api_key: int
    node_id: int | None = None
    delay_ms: int = 0
    error: ErrorCode | str | None = None
    count: int | None = None


class Faults:
    """The faults injected into a cluster; the servers ask ``take`` before each request."""

    def __init__(self) -> None:
        self.rules: list[Fault] = []

    def add(self, fault: Fault) -> None:
        self.rules.append(fault)

    def clear(self) -> None:
        self.rules.clear()

    def take(self, api_key: int, node_id: int) -> Fault | None:
        """The first fault matching a request, counted down (and dropped when spent)."""
        for fault in self.rules:
            if fault.api_key != api_key or fault.node_id not in (None, node_id):
                continue
            if fault.count is not None:
                fault.count -= 1
                if fault.count <= 0:
                    self.rules.remove(fault)
            return fault
        return None
