"""The dispatch table: API key -> handler, and the versions kwire's broker serves.

A handler is a plain function ``handler(state, ctx, request) -> outcome`` (style: Kafka's
``KafkaApis.handle`` switch as one table). The outcome is a response message, ``None`` when no
response is sent (Produce with ``acks=0``), ``CLOSE_CONNECTION`` (acks=0 that failed), or a
``Deferred`` (a long-polling Fetch) that the
server completes later. Handlers never touch sockets; they may ask the state's logs to append or
read, and the logs own the files.

``TABLE`` is written out here, once: each API's module, function and versions. A handler's module
is imported on the first request of its API, so a broker starts with what ApiVersions and
Metadata need. Modules still declare their handlers with ``@register`` (``REGISTERED``), and
``tests/unit/broker/test_dispatch_table.py`` checks the two agree: a new handler module needs its
line in ``TABLE`` (and a coordinator that replays an internal topic, one in ``STARTUP_TABLE``).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Hashable, Iterator, Mapping
from types import MappingProxyType
from typing import Any, Final, NamedTuple, TypeAlias

from kwire._lazy import lazy_dataclass
from kwire.broker._context import RequestContext
from kwire.broker._state import BrokerState
from kwire.log.internal_topics import CONSUMER_OFFSETS, SHARE_GROUP_STATE, TRANSACTION_STATE

__all__ = [
    "CLOSE_CONNECTION",
    "GUARD_TABLE",
    "HANDLERS",
    "REGISTERED",
    "STARTUP",
    "STARTUP_TABLE",
    "TABLE",
    "Deferred",
    "Handler",
    "Outcome",
    "Route",
    "dispatch",
    "handler",
    "implemented_versions",
    "load_handlers",
    "on_startup",
    "register",
    "start",
]


@lazy_dataclass(eq=False)
class Deferred:
    """A response that waits: until ``deadline_ms`` or until one of ``keys`` is notified.

    Keys are whatever the state notifies (``BrokerState.notify``): a ``Partition`` when it grows,
    a coordinator's own keys (a group) when its state moves. ``complete(final)`` recomputes the
    response; it returns it, or ``None`` to keep waiting (never ``None`` when ``final`` is true).
    """

    deadline_ms: int
    keys: set[Hashable]
    complete: Callable[[bool], Any]


class _CloseConnection:
    """The outcome that closes the client's connection instead of answering."""

    def __repr__(self) -> str:
        return "CLOSE_CONNECTION"


CLOSE_CONNECTION: Final = _CloseConnection()

Outcome: TypeAlias = Any  # a response message, None, CLOSE_CONNECTION, or a Deferred
Handler: TypeAlias = Callable[[BrokerState, RequestContext, Any], Outcome]


class Route(NamedTuple):
    """Where the handler of one API lives, and the versions kwire serves."""

    module: str
    function: str
    lowest: int
    highest: int


_DATA: Final = "kwire.broker._data"
_GROUP: Final = "kwire.broker._group_apis"
_CLASSIC: Final = "kwire.broker._classic_group_apis"
_CONSUMER: Final = "kwire.broker._consumer_group_apis"
_OFFSETS: Final = "kwire.broker._offset_apis"
_TXN: Final = "kwire.broker._txn_apis"
_ACL: Final = "kwire.broker._acl"
_SASL: Final = "kwire.broker._sasl"
_QUOTAS: Final = "kwire.broker._quotas"
_TOKENS: Final = "kwire.broker._delegation_tokens"
_VOTERS: Final = "kwire.broker._raft_voters"
_STREAMS: Final = "kwire.broker._streams_group_apis"

#: API key -> its handler and the versions served: the one dispatch table (kfake's ``Cluster``
#: switch, Kafka's ``KafkaApis.handle``). A handler's module is imported on the first request of
#: its API, so a broker starts with what ApiVersions and Metadata need. Each note says what the
#: versions changed that the handler sees; the rest is in the generated codecs.
#: ``tests/unit/broker/test_dispatch_table.py`` checks every entry against its module.
TABLE: Final[Mapping[int, Route]] = MappingProxyType(
    {
        # v3 record batches (magic 2) and transactional ids; v9 flexible; v13 topic ids
        0: Route(_DATA, "handle_produce", 0, 13),
        # v4 isolation level; v7 fetch sessions (KIP-227); v12 diverging epochs; v13 topic ids
        1: Route("kwire.broker._fetch", "handle_fetch", 0, 17),
        # v1 one offset per partition; v2 isolation level; v4 leader epoch; v7 max timestamp
        2: Route(_DATA, "handle_list_offsets", 0, 10),
        # v4 auto-creation asked for; v9 flexible; v10 topic ids; v13 a top-level error
        3: Route("kwire.broker._metadata", "handle_metadata", 0, 13),
        # v1 generation and member ids; v5 no retention time; v7 group instance ids (KIP-345)
        8: Route(_OFFSETS, "handle_offset_commit", 0, 10),
        # v2 every offset of a group; v7 require_stable (KIP-447); v8 many groups
        9: Route(_OFFSETS, "handle_offset_fetch", 0, 10),
        # v1 key types (transactions); v4 many keys at once
        10: Route(_GROUP, "handle_find_coordinator", 0, 6),
        # v4 MEMBER_ID_REQUIRED (KIP-394); v5 static members (KIP-345); v8 a reason
        11: Route(_CLASSIC, "handle_join_group", 0, 9),
        12: Route(_CLASSIC, "handle_heartbeat", 0, 4),
        # v3 many members leave at once (KIP-345)
        13: Route(_CLASSIC, "handle_leave_group", 0, 5),
        # v5 protocol type and name checked (KIP-559)
        14: Route(_CLASSIC, "handle_sync_group", 0, 5),
        # v3 authorized operations; v4 group instance ids
        15: Route(_CLASSIC, "handle_describe_groups", 0, 6),
        # v4 a states filter; v5 a types filter
        16: Route(_GROUP, "handle_list_groups", 0, 5),
        # SaslHandshake: v1 the mechanism's tokens go in SaslAuthenticate
        17: Route(_SASL, "handle_sasl_handshake", 0, 1),
        # v3 flexible, the client's software name and version (KIP-511), features
        18: Route("kwire.broker._api_versions", "handle_api_versions", 0, 4),
        # v1 validate_only; v5 the created topic's configs
        19: Route("kwire.broker._create_topics", "handle_create_topics", 0, 7),
        # v6 topic ids
        20: Route("kwire.broker._delete_topics", "handle_delete_topics", 0, 6),
        21: Route("kwire.broker._delete_records", "handle_delete_records", 0, 2),
        # v3 an existing producer id and epoch (KIP-360)
        22: Route(_DATA, "handle_init_producer_id", 0, 5),
        # v2 the current leader epoch; v3 a replica id
        23: Route(_DATA, "handle_offset_for_leader_epoch", 0, 4),
        # v4 brokers' batches, verify-only (KIP-890)
        24: Route(_TXN, "handle_add_partitions_to_txn", 0, 5),
        25: Route(_TXN, "handle_add_offsets_to_txn", 0, 4),
        # v5 the bumped producer epoch in the answer (KIP-890)
        26: Route(_TXN, "handle_end_txn", 0, 5),
        # v1 KIP-896 minimum (4.0); v2 the transaction version of each marker (KIP-890)
        27: Route("kwire.broker._write_txn_markers", "handle_write_txn_markers", 0, 2),
        # v3 the group's generation and member (KIP-447)
        28: Route(_OFFSETS, "handle_txn_offset_commit", 0, 5),
        # v1 prefixed patterns (KIP-290)
        29: Route(_ACL, "handle_describe_acls", 0, 3),
        30: Route(_ACL, "handle_create_acls", 0, 3),
        31: Route(_ACL, "handle_delete_acls", 0, 3),
        # v1 synonyms; v3 documentation and types
        32: Route("kwire.broker._describe_configs", "handle_describe_configs", 0, 4),
        33: Route("kwire.broker._alter_configs", "handle_alter_configs", 0, 2),
        34: Route("kwire.broker._alter_replica_log_dirs", "handle_alter_replica_log_dirs", 0, 2),
        # v4 total and usable bytes
        35: Route("kwire.broker._describe_log_dirs", "handle_describe_log_dirs", 0, 5),
        # SaslAuthenticate: v1 session lifetime (KIP-368)
        36: Route(_SASL, "handle_sasl_authenticate", 0, 2),
        37: Route("kwire.broker._create_partitions", "handle_create_partitions", 0, 3),
        # delegation tokens (KIP-48): v1 a throttle after errors; v2 flexible; v3 token owners (KIP-373)
        38: Route(_TOKENS, "handle_create_delegation_token", 0, 3),
        39: Route(_TOKENS, "handle_renew_delegation_token", 0, 2),
        40: Route(_TOKENS, "handle_expire_delegation_token", 0, 2),
        41: Route(_TOKENS, "handle_describe_delegation_token", 0, 3),
        42: Route(_GROUP, "handle_delete_groups", 0, 2),
        # v1 election types (KIP-460)
        43: Route("kwire.broker._elect_leaders", "handle_elect_leaders", 0, 2),
        44: Route("kwire.broker._alter_configs", "handle_incremental_alter_configs", 0, 1),
        45: Route(
            "kwire.broker._alter_partition_reassignments",
            "handle_alter_partition_reassignments",
            0,
            1,
        ),
        46: Route(
            "kwire.broker._list_partition_reassignments",
            "handle_list_partition_reassignments",
            0,
            0,
        ),
        47: Route(_OFFSETS, "handle_offset_delete", 0, 0),
        48: Route(_QUOTAS, "handle_describe_client_quotas", 0, 1),
        49: Route(_QUOTAS, "handle_alter_client_quotas", 0, 1),
        50: Route(_SASL, "handle_describe_user_scram_credentials", 0, 0),
        51: Route(_SASL, "handle_alter_user_scram_credentials", 0, 0),
        55: Route("kwire.broker._describe_quorum", "handle_describe_quorum", 0, 2),
        57: Route("kwire.broker._update_features", "handle_update_features", 0, 2),
        # v1 the endpoint type (KIP-919)
        60: Route("kwire.broker._describe_cluster", "handle_describe_cluster", 0, 2),
        61: Route(_TXN, "handle_describe_producers", 0, 0),
        64: Route("kwire.broker._unregister_broker", "handle_unregister_broker", 0, 0),
        65: Route(_TXN, "handle_describe_transactions", 0, 0),
        # v1 a duration filter; v2 a transactional id pattern
        66: Route(_TXN, "handle_list_transactions", 0, 2),
        # the consumer group protocol (KIP-848)
        68: Route(_CONSUMER, "handle_consumer_group_heartbeat", 0, 1),
        69: Route(_CONSUMER, "handle_consumer_group_describe", 0, 1),
        # v0 ListClientMetricsResources (KIP-714); v1 ListConfigResources, any resource type
        74: Route("kwire.broker._client_metrics", "handle_list_config_resources", 0, 1),
        75: Route(
            "kwire.broker._describe_topic_partitions", "handle_describe_topic_partitions", 0, 0
        ),
        # share groups (KIP-932), from v1
        76: Route("kwire.broker._share_group_heartbeat", "handle_share_group_heartbeat", 1, 1),
        77: Route("kwire.broker._share_group_describe", "handle_share_group_describe", 1, 1),
        78: Route("kwire.broker._share_fetch", "handle_share_fetch", 1, 2),
        79: Route("kwire.broker._share_acknowledge", "handle_share_acknowledge", 1, 2),
        # KIP-853: refused for the static quorum, as Kafka with kraft.version 0; AddRaftVoter v1
        # AckWhenCommitted
        80: Route(_VOTERS, "handle_add_raft_voter", 0, 1),
        81: Route(_VOTERS, "handle_remove_raft_voter", 0, 0),
        # the share coordinator's state RPCs (KIP-932); v1 of Write and ReadSummary: delivery
        # completed count / lag
        83: Route(
            "kwire.broker._initialize_share_group_state",
            "handle_initialize_share_group_state",
            0,
            0,
        ),
        84: Route("kwire.broker._read_share_group_state", "handle_read_share_group_state", 0, 0),
        85: Route("kwire.broker._write_share_group_state", "handle_write_share_group_state", 0, 1),
        86: Route(
            "kwire.broker._delete_share_group_state", "handle_delete_share_group_state", 0, 0
        ),
        87: Route(
            "kwire.broker._read_share_group_state_summary",
            "handle_read_share_group_state_summary",
            0,
            1,
        ),
        # KIP-1071 (Kafka 4.1 preview, 4.2+): topology, tasks and endpoints; gated on streams.version
        88: Route(_STREAMS, "handle_streams_group_heartbeat", 0, 0),
        89: Route(_STREAMS, "handle_streams_group_describe", 0, 0),
        90: Route(
            "kwire.broker._describe_share_group_offsets",
            "handle_describe_share_group_offsets",
            0,
            1,
        ),
        91: Route(
            "kwire.broker._alter_share_group_offsets", "handle_alter_share_group_offsets", 0, 0
        ),
        92: Route(
            "kwire.broker._delete_share_group_offsets", "handle_delete_share_group_offsets", 0, 0
        ),
    }
)


def handler(api_key: int) -> Handler:
    """The handler of ``api_key``, its module imported on first use (``KeyError``: not served)."""
    found = _LOADED.get(api_key)
    if found is None:
        route = TABLE[api_key]
        found = _LOADED[api_key] = getattr(importlib.import_module(route.module), route.function)
    return found


_LOADED: dict[int, Handler] = {}


class _Handlers(Mapping[int, tuple[Handler, int, int]]):
    """``HANDLERS[key]``: (handler, lowest, highest), read from ``TABLE``, the handler loaded on
    first use."""

    def __getitem__(self, api_key: int) -> tuple[Handler, int, int]:
        route = TABLE[api_key]
        return handler(api_key), route.lowest, route.highest

    def __iter__(self) -> Iterator[int]:
        return iter(TABLE)

    def __len__(self) -> int:
        return len(TABLE)


#: api key -> (handler, lowest version served, highest version served), a view of ``TABLE``
HANDLERS: Final[Mapping[int, tuple[Handler, int, int]]] = _Handlers()

#: What each handler module declared with ``@register`` when it was imported; the test of the
#: table checks it equals ``TABLE``.
REGISTERED: dict[int, tuple[Handler, int, int]] = {}


def register(api_key: int, lowest: int, highest: int) -> Callable[[Handler], Handler]:
    """Declare a handler beside its code; ``TABLE`` is what dispatch reads."""

    def add(handler: Handler) -> Handler:
        REGISTERED[api_key] = (handler, lowest, highest)
        return handler

    return add


Guard: TypeAlias = Callable[[BrokerState, RequestContext, Any], Outcome | None]

#: Checks run before the handlers of the APIs they name, in order: module, function, and the API
#: keys it guards (``None``: every API). One that returns an outcome answers the request instead;
#: ``None`` lets the handler run. UNSUPPORTED_VERSION while a group type's feature is off, before
#: anything its handlers check (``KafkaApis``'s
#: ``isShareGroupProtocolEnabled`` / ``isStreamsGroupProtocolEnabled``): the share-group APIs
#: while ``share.version`` is 0, the streams-group APIs while ``streams.version`` is 0. A guard's
#: module is imported on the first request of an API it guards; an API pays only for its guards.
#: An in-process cluster's NOT_COORDINATOR is no guard: Kafka authorises a coordinator request
#: before its coordinator answers it, so each handler asks ``_routing`` after its own checks.
GUARD_TABLE: Final[tuple[tuple[str, str, frozenset[int] | None], ...]] = (
    (
        "kwire.broker._share_feature",
        "share_gate",
        frozenset({76, 77, 78, 79, 83, 84, 85, 86, 87, 90, 91, 92}),
    ),
    ("kwire.broker._streams_group_apis", "streams_gate", frozenset({88, 89})),
)


def guards(api_key: int) -> tuple[Guard, ...]:
    """The guards of ``GUARD_TABLE`` that requests of ``api_key`` pass, in order."""
    found = _GUARDS.get(api_key)
    if found is None:
        found = _GUARDS[api_key] = tuple(
            getattr(importlib.import_module(module), function)
            for module, function, api_keys in GUARD_TABLE
            if api_keys is None or api_key in api_keys
        )
    return found


_GUARDS: dict[int, tuple[Guard, ...]] = {}


def dispatch(state: BrokerState, ctx: RequestContext, request: Any) -> Outcome:
    """Answer one decoded request: the guards of its API, then the API's handler."""
    api_key = ctx.api_key
    for guard in _GUARDS.get(api_key) or guards(api_key):
        outcome = guard(state, ctx, request)
        if outcome is not None:
            return outcome
    return handler(api_key)(state, ctx, request)


#: Run with the state when a broker starts: coordinators load what their internal topics hold
#: (and start their timers) before the first request, as Kafka's do when they become leaders.
#: Each entry: module, function, and the internal topic it replays (``None``: always run); a
#: coordinator whose topic does not exist yet is not even imported.
STARTUP_TABLE: Final[tuple[tuple[str, str, str | None], ...]] = (
    ("kwire.broker._cleaner", "_start", None),
    (_QUOTAS, "_load_quotas", None),
    (_GROUP, "_load_groups", CONSUMER_OFFSETS),
    (_TXN, "_load_transactions", TRANSACTION_STATE),
    ("kwire.broker._share_service", "_load_share_state", SHARE_GROUP_STATE),
)

#: What handler modules declared with ``@on_startup`` when imported (checked against the table).
STARTUP: list[Callable[[BrokerState], None]] = []


def on_startup(hook: Callable[[BrokerState], None]) -> Callable[[BrokerState], None]:
    STARTUP.append(hook)
    return hook


def start(state: BrokerState) -> None:
    """Run the start-up hooks of ``STARTUP_TABLE`` that the state needs."""
    for module, function, topic in STARTUP_TABLE:
        if topic is None or topic in state.topics:
            getattr(importlib.import_module(module), function)(state)


def load_handlers() -> None:
    """Import every handler module (tests of the table; a broker loads each on first use)."""
    for route in TABLE.values():
        importlib.import_module(route.module)
    for module, _, _ in STARTUP_TABLE:
        importlib.import_module(module)


def implemented_versions() -> dict[int, tuple[int, int]]:
    """API key -> (lowest, highest) version served, from ``TABLE`` (nothing imported)."""
    return {key: (route.lowest, route.highest) for key, route in TABLE.items()}
