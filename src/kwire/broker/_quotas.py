"""Client quotas: produce and fetch byte rates and request-time quotas per user and client id.

Approach, after Kafka 3.9's ``ClientQuotaManager``, ``ClientRequestQuotaManager`` and
``QuotaUtils``, sans-IO (the time is an argument):

- ``WindowedRate`` is Kafka's ``Rate`` over a ``WindowedSum``: ``quota.window.num`` (11) samples
  of ``quota.window.size.seconds`` (1 s) each; an old sample is reset once it is
  ``samples * window`` old, and the rate divides by the elapsed time since the oldest sample, at
  least ``samples - 1`` whole windows (``Rate.windowSize``: a first burst is not a huge rate).
- A request is recorded first, then the rate is measured; above the bound the throttle time is
  ``QuotaUtils.throttleTime``: ``(rate - bound) / bound * windowSize``, rounded as Java's
  ``Math.round``; request-time throttles are capped at one window
  (``ClientRequestQuotaManager.maxThrottleTimeMs``).
- Quota entities are maps of entity type (``user``, ``client-id``, ``ip``) to a name, ``None``
  being ``<default>``. The sensor a request is recorded in, and its bound, follow
  ``DefaultQuotaCallback``: /users/<u>/clients/<c>, /users/<u>/clients/<default>, /users/<u>,
  /users/<default>/clients/<c>, /users/<default>/clients/<default>, /users/<default>,
  /clients/<c>, /clients/<default>; clients sharing a user quota share its sensor.
- ``quota_kind`` without any entity for it records nothing (Kafka's ``quotasEnabled``): a broker
  without quotas does no quota work at all.

DescribeClientQuotas (48) and AlterClientQuotas (49) follow ``ClientQuotasImage.describe`` and
``ClientQuotaControlManager.alterClientQuotas`` (KRaft): validation errors per entity, only changed
values become records. The quotas are kept as a KRaft node keeps them: ``ClientQuotaRecord``s in
``__cluster_metadata`` (``_metadata_log``), appended and fsynced before the response, replayed at
start. ``ip`` quotas (``connection_creation_rate``) and ``controller_mutation_rate`` are stored
and described; kwire does not enforce them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import field
from typing import TYPE_CHECKING, Any, Final

from kwire._lazy import lazy_dataclass
from kwire.broker._acl import CLUSTER, CLUSTER_NAME, authorize
from kwire.broker._apis import on_startup, register
from kwire.broker._context import RequestContext
from kwire.broker._state import BrokerState
from kwire.protocol import ErrorCode, messages

if TYPE_CHECKING:
    from kwire.protocol.messages import AlterClientQuotasRequest, DescribeClientQuotasRequest

__all__ = [
    "CONSUMER_BYTE_RATE",
    "PRODUCER_BYTE_RATE",
    "REQUEST_PERCENTAGE",
    "ClientQuotas",
    "Entity",
    "WindowedRate",
    "client_quotas",
    "entity",
]

USER: Final = "user"
CLIENT_ID: Final = "client-id"
IP: Final = "ip"
PRODUCER_BYTE_RATE: Final = "producer_byte_rate"
CONSUMER_BYTE_RATE: Final = "consumer_byte_rate"
REQUEST_PERCENTAGE: Final = "request_percentage"
CONTROLLER_MUTATION_RATE: Final = "controller_mutation_rate"
CONNECTION_CREATION_RATE: Final = "connection_creation_rate"

#: ``QuotaConfigs``: the keys each entity kind takes, and their ConfigDef type.
_USER_CLIENT_KEYS: Final = {
    PRODUCER_BYTE_RATE: "LONG",
    CONSUMER_BYTE_RATE: "LONG",
    REQUEST_PERCENTAGE: "DOUBLE",
    CONTROLLER_MUTATION_RATE: "DOUBLE",
}
_IP_KEYS: Final = {CONNECTION_CREATION_RATE: "INT"}
#: ``ClientQuotaManagerConfig`` defaults (``quota.window.num``, ``quota.window.size.seconds``).
DEFAULT_WINDOW_NUM: Final = 11
DEFAULT_WINDOW_SECONDS: Final = 1
_NANOS_TO_PERCENTAGE: Final = 100.0 / 1_000_000_000  # ClientRequestQuotaManager

#: A quota entity: sorted ``(entity type, name)`` pairs; a ``None`` name is ``<default>``.
Entity = tuple[tuple[str, str | None], ...]


def entity(user: str | bool | None = False, client_id: str | bool | None = False) -> Entity:
    """The entity of a user and/or client id (``None``: ``<default>``; ``False``: absent)."""
    parts: list[tuple[str, str | None]] = []
    if client_id is not False:
        parts.append((CLIENT_ID, None if client_id is None else str(client_id)))
    if user is not False:
        parts.append((USER, None if user is None else str(user)))
    return tuple(parts)


def java_round(x: float) -> int:
    """``Math.round``: half up."""
    return math.floor(x + 0.5)


# --- the rate (Kafka's Rate over a WindowedSum) ---------------------------------------------


class _Sample:
    __slots__ = ("count", "start_ms", "value")

    def __init__(self, now_ms: int) -> None:
        self.start_ms = now_ms
        self.count = 0
        self.value = 0.0

    def reset(self, now_ms: int) -> None:
        self.start_ms = now_ms
        self.count = 0
        self.value = 0.0


class WindowedRate:
    """Kafka's ``Rate(WindowedSum)`` with ``samples`` windows of ``window_ms`` (module doc)."""

    __slots__ = ("_current", "_samples", "samples", "window_ms")

    def __init__(
        self, samples: int = DEFAULT_WINDOW_NUM, window_ms: int = DEFAULT_WINDOW_SECONDS * 1000
    ) -> None:
        self.samples = samples
        self.window_ms = window_ms
        self._samples: list[_Sample] = []
        self._current = 0

    def _now_sample(self, now_ms: int) -> _Sample:
        if not self._samples:
            self._samples.append(_Sample(now_ms))
        return self._samples[self._current]

    def record(self, value: float, now_ms: int) -> None:
        """``SampledStat.record``: a complete sample (one window old) starts the next one."""
        sample = self._now_sample(now_ms)
        if now_ms - sample.start_ms >= self.window_ms:
            self._current = (self._current + 1) % self.samples
            if self._current >= len(self._samples):
                sample = _Sample(now_ms)
                self._samples.append(sample)
            else:
                sample = self._samples[self._current]
                sample.reset(now_ms)
        sample.value += value
        sample.count += 1

    def _purge(self, now_ms: int) -> None:
        expire = self.samples * self.window_ms
        for sample in self._samples:
            if now_ms - sample.start_ms >= expire:
                sample.reset(now_ms)

    def window_size(self, now_ms: int) -> int:
        """``Rate.windowSize``: ms since the oldest sample, at least ``samples - 1`` windows."""
        self._purge(now_ms)
        oldest = self._now_sample(now_ms) if not self._samples else self._samples[0]
        for sample in self._samples:
            if sample.start_ms < oldest.start_ms:
                oldest = sample
        elapsed = now_ms - oldest.start_ms
        full = elapsed // self.window_ms
        least = self.samples - 1
        if full < least:
            elapsed += (least - full) * self.window_ms
        return elapsed

    def total(self, now_ms: int) -> float:
        self._purge(now_ms)
        return sum(s.value for s in self._samples)

    def measure(self, now_ms: int) -> float:
        """The rate per second."""
        value = self.total(now_ms)
        return value / (self.window_size(now_ms) / 1000.0)


# --- quota managers ---------------------------------------------------------------------------


@lazy_dataclass
class QuotaKind:
    """One quota key's entities and sensors (Kafka: one ``ClientQuotaManager``)."""

    key: str
    samples: int
    window_ms: int
    max_throttle_ms: int | None = None
    #: entity -> bound
    bounds: dict[Entity, float] = field(default_factory=dict)
    #: (user tag, client-id tag) -> the sensor's rate
    sensors: dict[tuple[str, str], WindowedRate] = field(default_factory=dict)
    #: (user tag, client-id tag) -> throttle time handed out so far (ms), for the metrics
    throttled_ms: dict[tuple[str, str], int] = field(default_factory=dict)

    def metric_tags(self, user: str, client_id: str) -> tuple[str, str]:
        """``DefaultQuotaCallback.quotaMetricTags``: the sensor a request is recorded in."""
        b = self.bounds
        if entity(user, client_id) in b or entity(user, None) in b:
            return (user, client_id)
        if entity(user) in b:
            return (user, "")
        if entity(None, client_id) in b or entity(None, None) in b:
            return (user, client_id)
        if entity(None) in b:
            return (user, "")
        return ("", client_id)

    def limit(self, tags: tuple[str, str]) -> float | None:
        """``DefaultQuotaCallback.quotaLimit``."""
        user, client_id = tags
        b = self.bounds
        found: float | None = None
        if user and client_id:
            for e in (
                entity(user, client_id),
                entity(user, None),
                entity(None, client_id),
                entity(None, None),
            ):
                found = b.get(e)
                if found is not None:
                    break
        elif user:
            found = b.get(entity(user))
            if found is None:
                found = b.get(entity(None))
        elif client_id:
            found = b.get(entity(client_id=client_id))
            if found is None:
                found = b.get(entity(client_id=None))
        return found

    def record(self, user: str, client_id: str, value: float, now_ms: int) -> int:
        """Record ``value`` and return the throttle time in ms (0 within the quota)."""
        tags = self.metric_tags(user, client_id)
        sensor = self.sensors.get(tags)
        if sensor is None:
            sensor = self.sensors[tags] = WindowedRate(self.samples, self.window_ms)
        sensor.record(value, now_ms)
        bound = self.limit(tags)
        if bound is None:
            return 0
        rate = sensor.measure(now_ms)
        if rate <= bound:
            return 0
        if bound <= 0:
            throttle = self.window_ms * self.samples
        else:
            throttle = java_round((rate - bound) / bound * sensor.window_size(now_ms))
        if self.max_throttle_ms is not None:
            throttle = min(throttle, self.max_throttle_ms)
        self.throttled_ms[tags] = self.throttled_ms.get(tags, 0) + throttle
        return throttle


class ClientQuotas:
    """Every quota entity's values and the managers that enforce them (``state.services``)."""

    def __init__(
        self, samples: int = DEFAULT_WINDOW_NUM, window_seconds: int = DEFAULT_WINDOW_SECONDS
    ) -> None:
        self.samples = samples
        self.window_ms = window_seconds * 1000
        #: entity -> quota key -> value
        self.entities: dict[Entity, dict[str, float]] = {}
        self.kinds: dict[str, QuotaKind] = {}
        #: whether any enforced quota is configured (the request hook's fast path)
        self.active = False

    def replay(self, ent: Entity, key: str, value: float | None) -> None:
        """Set (or with ``None`` remove) one quota value (Kafka's ``replay(ClientQuotaRecord)``)."""
        values = self.entities.setdefault(ent, {})
        if value is None:
            values.pop(key, None)
            if not values:
                del self.entities[ent]
        else:
            values[key] = value
        kind = self.kinds.get(key)
        if kind is None and value is not None and key in _ENFORCED:
            kind = self.kinds[key] = QuotaKind(
                key,
                self.samples,
                self.window_ms,
                self.window_ms if key == REQUEST_PERCENTAGE else None,
            )
        if kind is not None and all(t in (USER, CLIENT_ID) for t, _ in ent):
            if value is None:
                kind.bounds.pop(ent, None)
            else:
                kind.bounds[ent] = value
        self.active = any(k.bounds for k in self.kinds.values())

    def record(self, key: str, user: str, client_id: str, value: float, now_ms: int) -> int:
        """Record usage of the ``key`` quota; the throttle time in ms."""
        kind = self.kinds.get(key)
        if kind is None or not kind.bounds:
            return 0
        return kind.record(user, client_id, value, now_ms)

    def record_request_time(self, user: str, client_id: str, nanos: int, now_ms: int) -> int:
        """``ClientRequestQuotaManager``: handler time as a percentage of one thread."""
        return self.record(
            REQUEST_PERCENTAGE, user, client_id, nanos * _NANOS_TO_PERCENTAGE, now_ms
        )


_ENFORCED: Final = frozenset({PRODUCER_BYTE_RATE, CONSUMER_BYTE_RATE, REQUEST_PERCENTAGE})


def client_quotas(state: BrokerState) -> ClientQuotas:
    """The state's quotas (``state.services.quotas``), made on first use."""
    found = state.services.quotas
    if found is not None:
        return found
    config = state.static_config
    quotas = ClientQuotas(
        int(config.get("quota.window.num", DEFAULT_WINDOW_NUM)),
        int(config.get("quota.window.size.seconds", DEFAULT_WINDOW_SECONDS)),
    )
    state.services.quotas = quotas
    return quotas


# --- persistence: ClientQuotaRecords in __cluster_metadata -------------------------------------


def _quota_record(ent: Entity, key: str, value: float | None) -> tuple[Any, int]:
    from kwire.protocol.messages import ClientQuotaRecord

    data = ClientQuotaRecord.EntityData
    return (
        ClientQuotaRecord(
            entity=[data(entity_type=t, entity_name=n) for t, n in ent],
            key=key,
            value=0.0 if value is None else value,
            remove=value is None,
        ),
        0,
    )


@on_startup
def _load_quotas(state: BrokerState) -> None:
    """The client quotas the metadata log's ``ClientQuotaRecord``s left in the image."""
    quotas = client_quotas(state)
    for ent, values in state.metadata_image.client_quotas.items():
        for key, value in values.items():
            quotas.replay(ent, key, value)


def alter_quotas(state: BrokerState, ent: Entity, values: Mapping[str, float | None]) -> None:
    """Set (``None``: remove) quota values of one entity, durably (``Broker.alter_client_quotas``)."""
    quotas = client_quotas(state)
    current = quotas.entities.get(ent, {})
    records = [
        _quota_record(ent, k, v)
        for k, v in values.items()
        if (v is None and k in current) or (v is not None and current.get(k) != v)
    ]
    if records:
        state.append_metadata(records)
    for k, v in values.items():
        if v is not None or k in quotas.entities.get(ent, {}):
            quotas.replay(ent, k, v)


# --- DescribeClientQuotas / AlterClientQuotas -------------------------------------------------

# The two APIs' message classes are looked up when they run: the quotas themselves are needed at
# start (every connection's throttling), their generated codecs only by these APIs.
MATCH_EXACT: Final = 0
MATCH_DEFAULT: Final = 1
MATCH_SPECIFIED: Final = 2


class _QuotaError(Exception):
    def __init__(self, error: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error = error
        self.message = message


def _entity_text(pairs: Iterable[tuple[str, str | None]]) -> str:
    """``ClientQuotaEntity.toString``: ``ClientQuotaEntity(entries={user=alice})``."""
    inner = ", ".join(f"{t}={n}" for t, n in pairs)
    return f"ClientQuotaEntity(entries={{{inner}}})"


def describe(quotas: ClientQuotas, components: Iterable[Any], strict: bool) -> list[Any]:
    """``ClientQuotasImage.describe``: the matching entities (``_QuotaError`` when invalid)."""
    exact: dict[str, str | None] = {}
    specified: set[str] = set()
    for c in components:
        kind = c.entity_type
        if not kind:
            raise _QuotaError(ErrorCode.INVALID_REQUEST, "Invalid empty entity type.")
        if kind in exact or kind in specified:
            raise _QuotaError(
                ErrorCode.INVALID_REQUEST,
                f"Entity type {kind} cannot appear more than once in the filter.",
            )
        if kind not in (IP, USER, CLIENT_ID):
            raise _QuotaError(ErrorCode.UNSUPPORTED_VERSION, f"Unsupported entity type {kind}")
        if c.match_type == MATCH_EXACT:
            if c.match is None:
                raise _QuotaError(
                    ErrorCode.INVALID_REQUEST,
                    "Request specified MATCH_TYPE_EXACT, but set match string to null.",
                )
            exact[kind] = c.match
        elif c.match_type == MATCH_DEFAULT:
            if c.match is not None:
                raise _QuotaError(
                    ErrorCode.INVALID_REQUEST,
                    "Request specified MATCH_TYPE_DEFAULT, but also specified a match string.",
                )
            exact[kind] = None
        elif c.match_type == MATCH_SPECIFIED:
            if c.match is not None:
                raise _QuotaError(
                    ErrorCode.INVALID_REQUEST,
                    "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.",
                )
            specified.add(kind)
        else:
            raise _QuotaError(ErrorCode.UNSUPPORTED_VERSION, f"Unknown match type {c.match_type}")
    wanted = set(exact) | specified
    if IP in wanted and (USER in wanted or CLIENT_ID in wanted):
        raise _QuotaError(
            ErrorCode.INVALID_REQUEST,
            "Invalid entity filter component combination. IP filter component should not be "
            "used with user or clientId filter component.",
        )
    out = []
    for ent, values in quotas.entities.items():
        names = dict(ent)
        if strict and len(names) != len(wanted):
            continue
        if any(k not in names or names[k] != v for k, v in exact.items()):
            continue
        if any(names.get(k) is None for k in specified):  # a specified name, not <default>
            continue
        out.append(
            messages.DescribeClientQuotasResponse.EntryData(
                entity=[
                    messages.DescribeClientQuotasResponse.EntityData(entity_type=t, entity_name=n)
                    for t, n in ent
                ],
                values=[
                    messages.DescribeClientQuotasResponse.ValueData(key=k, value=v)
                    for k, v in sorted(values.items())
                ],
            )
        )
    return out


@register(48, 0, 1)
def handle_describe_client_quotas(
    state: BrokerState, ctx: RequestContext, request: DescribeClientQuotasRequest
) -> Any:
    if not authorize(state, ctx, "DESCRIBE_CONFIGS", CLUSTER, CLUSTER_NAME):
        error = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        return messages.DescribeClientQuotasResponse(
            throttle_time_ms=0,
            error_code=error,
            error_message="Cluster authorization failed.",
            entries=None,
        )
    try:
        entries = describe(client_quotas(state), request.components, bool(request.strict))
    except _QuotaError as exc:
        return messages.DescribeClientQuotasResponse(
            throttle_time_ms=0, error_code=exc.error, error_message=exc.message, entries=None
        )
    return messages.DescribeClientQuotasResponse(
        throttle_time_ms=0, error_code=0, error_message=None, entries=entries
    )


def _validate_entity(pairs: list[tuple[str, str | None]]) -> Entity:
    """``ClientQuotaControlManager.validateEntity`` and ``configKeysForEntityType``."""
    if not pairs:
        raise _QuotaError(ErrorCode.INVALID_REQUEST, "Invalid empty client quota entity")
    seen: dict[str, str | None] = {}
    for kind, name in pairs:
        if kind in seen:
            raise _QuotaError(
                ErrorCode.INVALID_REQUEST,
                f"Invalid empty client quota entity, duplicate entity entry {kind}",
            )
        if kind not in (USER, CLIENT_ID, IP):
            raise _QuotaError(
                ErrorCode.INVALID_REQUEST, f"Unhandled client quota entity type: {kind}"
            )
        seen[kind] = name
        if name is not None and not name:
            raise _QuotaError(ErrorCode.INVALID_REQUEST, f"Empty {kind} not supported")
    if IP in seen and len(seen) > 1:
        raise _QuotaError(ErrorCode.INVALID_REQUEST, "Invalid empty client quota entity")
    ip = seen.get(IP)
    if IP in seen and ip is not None and not _valid_ip(ip):
        raise _QuotaError(ErrorCode.INVALID_REQUEST, f"{ip} is not a valid IP or resolvable host.")
    return tuple(sorted(seen.items()))


def _valid_ip(text: str) -> bool:
    import ipaddress  # here: only AlterClientQuotas for an IP needs it, not a broker's start

    try:
        ipaddress.ip_address(text)
    except ValueError:
        return text == "localhost"  # InetAddress.getByName resolves names; kwire does not look up
    return True


def _validate_value(keys: Mapping[str, str], key: str, value: float) -> None:
    """``ClientQuotaControlManager.validateQuotaKeyValue``."""
    kind = keys.get(key)
    if kind is None:
        raise _QuotaError(ErrorCode.INVALID_REQUEST, f"Invalid configuration key {key}")
    if kind == "LONG":
        epsilon = 1e-6
        if abs(float(math.trunc(value + epsilon)) - value) > epsilon:
            raise _QuotaError(
                ErrorCode.INVALID_REQUEST, f"Configuration {key} must be a Long value"
            )
    elif kind == "INT":
        if value > 2**31 - 1:
            raise _QuotaError(
                ErrorCode.INVALID_REQUEST, f"Proposed value for {key} is too large for an INT."
            )
        if value < -(2**31):
            raise _QuotaError(
                ErrorCode.INVALID_REQUEST, f"Proposed value for {key} is too small for an INT."
            )
        if abs(float(math.trunc(value)) - value) > 1e-6:
            raise _QuotaError(
                ErrorCode.INVALID_REQUEST, f"Configuration {key} must be an Integer value"
            )


def _alter_entity(
    quotas: ClientQuotas, pairs: list[tuple[str, str | None]], ops: Iterable[Any]
) -> tuple[Entity, dict[str, float | None]]:
    ent = _validate_entity(pairs)
    keys = _IP_KEYS if ent and ent[0][0] == IP else _USER_CLIENT_KEYS
    changes: dict[str, float | None] = {}
    for op in ops:
        if op.remove:
            changes[op.key] = None
        else:
            _validate_value(keys, op.key, op.value)
            changes[op.key] = float(op.value)
    return ent, changes


@register(49, 0, 1)
def handle_alter_client_quotas(
    state: BrokerState, ctx: RequestContext, request: AlterClientQuotasRequest
) -> Any:
    """``ClientQuotaControlManager.alterClientQuotas``: per entity, all or nothing."""
    quotas = client_quotas(state)
    allowed = authorize(state, ctx, "ALTER_CONFIGS", CLUSTER, CLUSTER_NAME)
    results = []
    planned: list[tuple[Entity, dict[str, float | None]]] = []
    seen: set[frozenset[tuple[str, str | None]]] = set()
    for entry in request.entries:
        pairs = [(e.entity_type, e.entity_name) for e in entry.entity]
        error, message = ErrorCode.NONE, None
        try:
            if not allowed:
                raise _QuotaError(
                    ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed."
                )
            keys = [op.key for op in entry.ops]
            key_set = frozenset(pairs)
            duplicate = next((k for i, k in enumerate(keys) if k in keys[:i]), None)
            if duplicate is not None or key_set in seen:
                # (sic) Kafka reports a duplicate key, and then the entity, as "Ignoring duplicate
                # entity"
                raise _QuotaError(
                    ErrorCode.INVALID_REQUEST, f"Ignoring duplicate entity {_entity_text(pairs)}"
                )
            seen.add(key_set)
            planned.append(_alter_entity(quotas, pairs, entry.ops))
        except _QuotaError as exc:
            error, message = exc.error, exc.message
        results.append(
            messages.AlterClientQuotasResponse.EntryData(
                error_code=error,
                error_message=message,
                entity=[
                    messages.AlterClientQuotasResponse.EntityData(entity_type=t, entity_name=n)
                    for t, n in pairs
                ],
            )
        )
    if not request.validate_only:
        for ent, changes in planned:
            alter_quotas(state, ent, changes)
    return messages.AlterClientQuotasResponse(throttle_time_ms=0, entries=results)
