"""Client quotas: Kafka's windowed rate and throttle time on a manual clock, quota entity
resolution, and DescribeClientQuotas/AlterClientQuotas through the wire at every version
(validation as Kafka 3.9's ClientQuotaControlManager and ClientQuotasImage, persistence as
ClientQuotaRecords in __cluster_metadata)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kwire.broker import BrokerState, ManualClock, testing
from kwire.broker._metadata_image import decode_record
from kwire.broker._quotas import (
    CONSUMER_BYTE_RATE,
    PRODUCER_BYTE_RATE,
    REQUEST_PERCENTAGE,
    ClientQuotas,
    QuotaKind,
    WindowedRate,
    client_quotas,
    entity,
)
from kwire.protocol import ErrorCode, message_class, struct_class
from kwire.records import read_batches

NOW = 1_700_000_000_000
NONE = int(ErrorCode.NONE)
INVALID_REQUEST = int(ErrorCode.INVALID_REQUEST)


def make_state(path: Path, clock: ManualClock | None = None) -> BrokerState:
    return testing.make_state(path, clock=clock, startup=True)


@pytest.fixture
def state(tmp_path: Path) -> Iterator[BrokerState]:
    s = make_state(tmp_path / "data")
    yield s
    s.close()


def versions(name: str) -> range:
    cls = message_class(f"{name}Request")
    return range(cls.MIN_VERSION, cls.MAX_VERSION + 1)


def call(state: BrokerState, name: str, version: int, /, **fields: Any) -> Any:
    """Request bytes -> handler -> response bytes -> the response a client decodes."""
    assert version in testing.served(name)
    response = testing.call(state, name, version, **fields)
    assert response.throttle_time_ms == 0
    return response


def sub(name: str, *path: str) -> Any:
    return struct_class(message_class(name), *path)


def alter_entry(pairs: list[tuple[str, str | None]], ops: list[tuple[str, float | None]]) -> Any:
    entry = sub("AlterClientQuotasRequest", "entries")
    ent = sub("AlterClientQuotasRequest", "entries", "entity")
    op = sub("AlterClientQuotasRequest", "entries", "ops")
    return entry(
        entity=[ent(entity_type=t, entity_name=n) for t, n in pairs],
        ops=[op(key=k, value=v or 0.0, remove=v is None) for k, v in ops],
    )


def component(kind: str, match_type: int, match: str | None = None) -> Any:
    return sub("DescribeClientQuotasRequest", "components")(
        entity_type=kind, match_type=match_type, match=match
    )


def described(response: Any) -> dict[tuple[tuple[str, str | None], ...], dict[str, float]]:
    assert response.error_code == NONE, response.error_message
    return {
        tuple(sorted((e.entity_type, e.entity_name) for e in entry.entity)): {
            v.key: v.value for v in entry.values
        }
        for entry in response.entries
    }


# --- the rate ---------------------------------------------------------------------------------


def test_first_window_counts_as_eleven_windows() -> None:
    """Rate.windowSize: before samples-1 whole windows passed, the missing ones count as empty."""
    rate = WindowedRate(11, 1000)
    rate.record(1000, NOW)
    assert rate.window_size(NOW) == 10_000
    assert rate.measure(NOW) == pytest.approx(100.0)
    rate.record(1000, NOW + 500)
    assert rate.window_size(NOW + 500) == 10_500
    assert rate.measure(NOW + 500) == pytest.approx(2000 / 10.5)


def test_samples_roll_and_expire() -> None:
    rate = WindowedRate(11, 1000)
    for second in range(20):
        rate.record(100, NOW + second * 1000)
    now = NOW + 19 * 1000
    # 11 samples kept, the oldest started 10 s ago: 1100 bytes over 10 s
    assert rate.total(now) == pytest.approx(1100)
    assert rate.window_size(now) == 10_000
    assert rate.measure(now) == pytest.approx(110.0)
    # 11 windows of silence expire every sample
    later = now + 11_000
    assert rate.total(later) == 0
    assert rate.measure(later) == 0


def test_throttle_time_is_quota_utils() -> None:
    """(rate - bound) / bound * windowSize, Math.round."""
    kind = QuotaKind(PRODUCER_BYTE_RATE, 11, 1000)
    kind.bounds[entity(client_id="app")] = 50.0
    assert kind.record("ANONYMOUS", "app", 400, NOW) == 0  # 40 B/s
    # 1400 bytes over 10.2 s: 137.25 B/s; (137.25 - 50) / 50 * 10200 = 17800
    assert kind.record("ANONYMOUS", "app", 1000, NOW + 200) == 17_800
    assert kind.throttled_ms[("", "app")] == 17_800


def test_request_time_throttle_is_capped_at_one_window() -> None:
    quotas = ClientQuotas()
    quotas.replay(entity(client_id="app"), REQUEST_PERCENTAGE, 1.0)
    # 500 ms of handler time at once: 50 % over 10 s windows, far above 1 %
    assert quotas.record_request_time("ANONYMOUS", "app", 500_000_000, NOW) == 1000


def test_nothing_recorded_without_quotas() -> None:
    quotas = ClientQuotas()
    assert not quotas.active
    assert quotas.record(PRODUCER_BYTE_RATE, "u", "c", 1e12, NOW) == 0
    assert quotas.kinds == {}
    quotas.replay(entity(client_id="c"), CONSUMER_BYTE_RATE, 10.0)
    assert quotas.active
    assert quotas.record(PRODUCER_BYTE_RATE, "u", "c", 1e12, NOW) == 0  # another quota type
    quotas.replay(entity(client_id="c"), CONSUMER_BYTE_RATE, None)
    assert not quotas.active


# --- entity resolution (DefaultQuotaCallback) --------------------------------------------------


@pytest.mark.parametrize(
    ("configured", "tags", "bound"),
    [
        (
            {entity("alice", "app"): 1, entity("alice", None): 2, entity("alice"): 3},
            ("alice", "app"),
            1,
        ),
        ({entity("alice", None): 2, entity("alice"): 3}, ("alice", "app"), 2),
        ({entity("alice"): 3, entity(None, "app"): 4}, ("alice", ""), 3),
        ({entity(None, "app"): 4, entity(None, None): 5, entity(None): 6}, ("alice", "app"), 4),
        ({entity(None, None): 5, entity(None): 6}, ("alice", "app"), 5),
        ({entity(None): 6, entity(client_id="app"): 7}, ("alice", ""), 6),
        ({entity(client_id="app"): 7, entity(client_id=None): 8}, ("", "app"), 7),
        ({entity(client_id=None): 8}, ("", "app"), 8),
        ({entity("bob"): 9}, ("", "app"), None),
        ({entity("bob", "app"): 9}, ("", "app"), None),
    ],
)
def test_entity_resolution_order(
    configured: dict[Any, float], tags: tuple[str, str], bound: float | None
) -> None:
    kind = QuotaKind(PRODUCER_BYTE_RATE, 11, 1000, bounds=dict(configured))
    assert kind.metric_tags("alice", "app") == tags
    assert kind.limit(tags) == bound


def test_clients_of_one_user_share_its_quota() -> None:
    kind = QuotaKind(PRODUCER_BYTE_RATE, 11, 1000, bounds={entity("alice"): 100.0})
    assert kind.record("alice", "a", 900, NOW) == 0
    assert kind.record("alice", "b", 900, NOW) > 0  # the same sensor: 180 B/s
    assert kind.record("bob", "a", 900, NOW) == 0  # no quota for bob
    assert set(kind.sensors) == {("alice", ""), ("", "a")}


# --- DescribeClientQuotas / AlterClientQuotas ---------------------------------------------------


@pytest.mark.parametrize("version", versions("AlterClientQuotas"))
def test_alter_then_describe_every_version(state: BrokerState, version: int) -> None:
    response = call(
        state,
        "AlterClientQuotas",
        version,
        entries=[
            alter_entry([("client-id", "app")], [(PRODUCER_BYTE_RATE, 1024.0)]),
            alter_entry(
                [("user", "alice"), ("client-id", None)],
                [(CONSUMER_BYTE_RATE, 2048.0), (REQUEST_PERCENTAGE, 12.5)],
            ),
            alter_entry([("user", None)], [(PRODUCER_BYTE_RATE, 1e6)]),
            alter_entry([("ip", "10.1.2.3")], [("connection_creation_rate", 30.0)]),
        ],
        validate_only=False,
    )
    assert [e.error_code for e in response.entries] == [NONE] * 4
    assert [(e.entity_type, e.entity_name) for e in response.entries[1].entity] == [
        ("user", "alice"),
        ("client-id", None),
    ]
    for dv in versions("DescribeClientQuotas"):
        everything = call(state, "DescribeClientQuotas", dv, components=[], strict=False)
        assert described(everything) == {
            (("client-id", "app"),): {PRODUCER_BYTE_RATE: 1024.0},
            (("client-id", None), ("user", "alice")): {
                CONSUMER_BYTE_RATE: 2048.0,
                REQUEST_PERCENTAGE: 12.5,
            },
            (("user", None),): {PRODUCER_BYTE_RATE: 1e6},
            (("ip", "10.1.2.3"),): {"connection_creation_rate": 30.0},
        }
        users = call(
            state,
            "DescribeClientQuotas",
            dv,
            components=[component("user", 2)],
            strict=False,
        )
        assert set(described(users)) == {(("client-id", None), ("user", "alice"))}
        defaults = call(
            state, "DescribeClientQuotas", dv, components=[component("user", 1)], strict=True
        )
        assert set(described(defaults)) == {(("user", None),)}
        exact = call(
            state,
            "DescribeClientQuotas",
            dv,
            components=[component("user", 0, "alice")],
            strict=True,
        )
        assert described(exact) == {}  # strict: the entity also names a client id
        loose = call(
            state,
            "DescribeClientQuotas",
            dv,
            components=[component("user", 0, "alice")],
            strict=False,
        )
        assert set(described(loose)) == {(("client-id", None), ("user", "alice"))}
    # removal; a removed key that is not set is no change
    response = call(
        state,
        "AlterClientQuotas",
        version,
        entries=[alter_entry([("client-id", "app")], [(PRODUCER_BYTE_RATE, None), ("x", None)])],
        validate_only=False,
    )
    assert response.entries[0].error_code == NONE
    assert (("client-id", "app"),) not in client_quotas(state).entities


@pytest.mark.parametrize(
    ("pairs", "ops", "message"),
    [
        ([], [(PRODUCER_BYTE_RATE, 1.0)], "Invalid empty client quota entity"),
        (
            [("group", "g")],
            [(PRODUCER_BYTE_RATE, 1.0)],
            "Unhandled client quota entity type: group",
        ),
        ([("user", "")], [(PRODUCER_BYTE_RATE, 1.0)], "Empty user not supported"),
        (
            [("user", "a"), ("user", "b")],
            [(PRODUCER_BYTE_RATE, 1.0)],
            "Invalid empty client quota entity, duplicate entity entry user",
        ),
        (
            [("user", "a"), ("ip", "1.2.3.4")],
            [(PRODUCER_BYTE_RATE, 1.0)],
            "Invalid empty client quota entity",
        ),
        ([("client-id", "a")], [("retention.ms", 1.0)], "Invalid configuration key retention.ms"),
        (
            [("client-id", "a")],
            [(PRODUCER_BYTE_RATE, 1.5)],
            "Configuration producer_byte_rate must be a Long value",
        ),
        (
            [("ip", "1.2.3.4")],
            [(PRODUCER_BYTE_RATE, 1.0)],
            "Invalid configuration key producer_byte_rate",
        ),
        (
            [("ip", "not an ip")],
            [("connection_creation_rate", 1.0)],
            "not an ip is not a valid IP or resolvable host.",
        ),
        (
            [("client-id", "a")],
            [(PRODUCER_BYTE_RATE, 1.0), (PRODUCER_BYTE_RATE, 2.0)],
            "Ignoring duplicate entity ClientQuotaEntity(entries={client-id=a})",
        ),
    ],
)
def test_alter_validation(
    state: BrokerState, pairs: list[tuple[str, str | None]], ops: list[Any], message: str
) -> None:
    for version in versions("AlterClientQuotas"):
        response = call(
            state,
            "AlterClientQuotas",
            version,
            entries=[
                alter_entry(pairs, ops),
                alter_entry([("client-id", "ok")], [(REQUEST_PERCENTAGE, 5.0)]),
            ],
            validate_only=True,
        )
        first, second = response.entries
        assert (first.error_code, first.error_message) == (INVALID_REQUEST, message)
        assert second.error_code == NONE
    assert client_quotas(state).entities == {}  # validate only


@pytest.mark.parametrize(
    ("components", "error", "message"),
    [
        ([component("", 0, "a")], INVALID_REQUEST, "Invalid empty entity type."),
        (
            [component("user", 2), component("user", 0, "a")],
            INVALID_REQUEST,
            "Entity type user cannot appear more than once in the filter.",
        ),
        (
            [component("group", 2)],
            int(ErrorCode.UNSUPPORTED_VERSION),
            "Unsupported entity type group",
        ),
        (
            [component("user", 0)],
            INVALID_REQUEST,
            "Request specified MATCH_TYPE_EXACT, but set match string to null.",
        ),
        (
            [component("user", 1, "a")],
            INVALID_REQUEST,
            "Request specified MATCH_TYPE_DEFAULT, but also specified a match string.",
        ),
        (
            [component("user", 2, "a")],
            INVALID_REQUEST,
            "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.",
        ),
        ([component("user", 7)], int(ErrorCode.UNSUPPORTED_VERSION), "Unknown match type 7"),
        (
            [component("ip", 2), component("client-id", 2)],
            INVALID_REQUEST,
            "Invalid entity filter component combination. IP filter component should not be "
            "used with user or clientId filter component.",
        ),
    ],
)
def test_describe_validation(
    state: BrokerState, components: list[Any], error: int, message: str
) -> None:
    for version in versions("DescribeClientQuotas"):
        response = call(state, "DescribeClientQuotas", version, components=components, strict=False)
        assert (response.error_code, response.error_message) == (error, message)
        assert response.entries is None


def test_quotas_survive_a_restart_as_client_quota_records(tmp_path: Path) -> None:
    state = make_state(tmp_path / "data")
    call(
        state,
        "AlterClientQuotas",
        1,
        entries=[
            alter_entry([("client-id", "app")], [(PRODUCER_BYTE_RATE, 100.0)]),
            alter_entry([("user", "bob")], [(CONSUMER_BYTE_RATE, 5.0), (REQUEST_PERCENTAGE, 1.0)]),
        ],
        validate_only=False,
    )
    call(
        state,
        "AlterClientQuotas",
        1,
        entries=[alter_entry([("user", "bob")], [(REQUEST_PERCENTAGE, None)])],
        validate_only=False,
    )
    state.close()
    names = []
    metadata_dir = tmp_path / "data" / "__cluster_metadata-0"
    for segment in sorted(metadata_dir.glob("*.log")):
        for batch in read_batches(segment.read_bytes()):
            if batch.is_control:
                continue
            for record in batch:
                assert record.value is not None
                message, _ = decode_record(record.value)
                if type(message).__name__ == "ClientQuotaRecord":
                    names.append((message.key, message.remove))
    assert sorted(names) == [
        (CONSUMER_BYTE_RATE, False),
        (PRODUCER_BYTE_RATE, False),
        (REQUEST_PERCENTAGE, False),
        (REQUEST_PERCENTAGE, True),
    ]
    again = make_state(tmp_path / "data")
    try:
        quotas = client_quotas(again)
        assert quotas.entities == {
            entity(client_id="app"): {PRODUCER_BYTE_RATE: 100.0},
            entity("bob"): {CONSUMER_BYTE_RATE: 5.0},
        }
        assert quotas.active
        assert quotas.kinds[PRODUCER_BYTE_RATE].bounds == {entity(client_id="app"): 100.0}
    finally:
        again.close()
