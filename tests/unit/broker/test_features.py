"""Finalized features: ApiVersions v3+ and UpdateFeatures (API 57), through the wire.

Kafka's rules (``FeatureControlManager.updateFeatures``): levels within the node's supported
range, downgrades only with SAFE/UNSAFE_DOWNGRADE, metadata.version never downgraded, all or
nothing, ``validateOnly`` writes nothing; accepted levels are FeatureLevelRecords in
``__cluster_metadata``, replayed at the next start.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kwire.broker import BrokerState
from kwire.broker import _metadata_log as mlog
from kwire.protocol import ErrorCode, message_class, struct_class
from tests.unit.broker.test_txn import call, make_state

UPDATE = message_class("UpdateFeaturesRequest")
FEATURE_UPDATE = struct_class(UPDATE, "feature_updates")


def finalized(state: BrokerState) -> tuple[dict[str, int], int]:
    response = call(
        state,
        "ApiVersions",
        4,
        client_software_name="test",
        client_software_version="1",
    )
    levels = {f.name: f.max_version_level for f in response.finalized_features}
    return levels, response.finalized_features_epoch


def update(state: BrokerState, version: int = 1, validate_only: bool = False, **levels: Any) -> Any:
    """``levels``: feature (dots as underscores) -> level or (level, upgrade type)."""
    updates = []
    for key, value in levels.items():
        level, kind = value if isinstance(value, tuple) else (value, 1)
        fields: dict[str, Any] = {"feature": key.replace("_", "."), "max_version_level": level}
        if version == 0:
            fields["allow_downgrade"] = kind != 1
        else:
            fields["upgrade_type"] = kind
        updates.append(FEATURE_UPDATE(**fields))
    extra = {"validate_only": validate_only} if version >= 1 else {}
    return call(
        state, "UpdateFeatures", version, timeout_ms=60_000, feature_updates=updates, **extra
    )


def test_a_new_4x_cluster_finalizes_kafkas_defaults(tmp_path: Path) -> None:
    state = make_state(tmp_path / "d", "4.3")
    try:
        levels, epoch = finalized(state)
        assert levels == {
            "metadata.version": 21,
            "transaction.version": 2,
            "group.version": 1,
            "eligible.leader.replicas.version": 1,
            "share.version": 1,
            "streams.version": 1,
        }
        assert epoch > 0
        # The records are in __cluster_metadata and bootstrap.checkpoint, as kafka-storage
        # format writes them: metadata.version first, then the other features above level 0.
        assert state.metadata_image.features["transaction.version"] == 2
        bootstrap = mlog.read_snapshot((tmp_path / "d" / "bootstrap.checkpoint").read_bytes())
        assert [(m.name, m.feature_level) for m, _ in bootstrap] == [
            ("metadata.version", 21),
            ("eligible.leader.replicas.version", 1),
            ("group.version", 1),
            ("share.version", 1),
            ("streams.version", 1),
            ("transaction.version", 2),
        ]
    finally:
        state.close()
    old = make_state(tmp_path / "e", "3.9")
    try:
        assert finalized(old)[0] == {"metadata.version": 21}
    finally:
        old.close()


def test_downgrade_rules_and_persistence(tmp_path: Path) -> None:
    state = make_state(tmp_path / "d", "4.0")
    try:
        # A plain UPGRADE to a lower level is refused, and nothing is written.
        r = update(state, transaction_version=1)
        assert r.error_code == ErrorCode.INVALID_UPDATE_VERSION
        assert "safe or unsafe downgrade" in r.error_message
        assert [(x.feature, x.error_code) for x in r.results] == [
            ("transaction.version", ErrorCode.INVALID_UPDATE_VERSION)
        ]
        # validateOnly: accepted, not applied.
        r = update(state, validate_only=True, transaction_version=(1, 2))
        assert r.error_code == 0
        assert finalized(state)[0]["transaction.version"] == 2
        _, before = finalized(state)
        r = update(state, transaction_version=(0, 3), group_version=(1, 1))
        assert r.error_code == 0 and [x.error_code for x in r.results] == [0, 0]
        levels, after = finalized(state)
        assert "transaction.version" not in levels and after > before
        # All or nothing: one bad update and the good one is not applied either.
        r = update(state, transaction_version=2, group_version=5)
        assert r.error_code == ErrorCode.INVALID_UPDATE_VERSION
        assert "only supports versions 0-1" in r.error_message
        assert "transaction.version" not in finalized(state)[0]
        # v2 (4.0) answers without per-feature results; an upgrade back to TV2.
        r = update(state, version=2, transaction_version=2)
        assert r.error_code == 0
        # Unknown feature (level 0 only), unknown upgrade type, downgrade "to a newer version".
        r = update(state, no_such_feature=1)
        assert r.error_code == ErrorCode.INVALID_UPDATE_VERSION
        assert r.error_message.endswith("Local controller 1 does not support this feature.")
        r = update(state, group_version=(1, 7))
        assert r.error_code == ErrorCode.INVALID_UPDATE_VERSION
        assert "does not support the given upgrade type" in r.error_message
        r = update(state, eligible_leader_replicas_version=(1, 2))
        assert "Can't downgrade to a newer version." in r.error_message
        # metadata.version is never downgraded here.
        r = update(state, metadata_version=(20, 2))
        assert r.error_code == ErrorCode.INVALID_UPDATE_VERSION
        assert "Retry using UNSAFE_DOWNGRADE" in r.error_message
        r = update(state, metadata_version=(20, 3))
        assert r.error_message == (
            "Invalid metadata.version 20. Unsafe metadata downgrade is not supported in this version."
        )
        # v0: AllowDowngrade means a safe downgrade.
        assert update(state, version=0, group_version=(0, 2)).error_code == 0
    finally:
        state.close()
    again = make_state(tmp_path / "d", "4.0")
    try:
        levels = finalized(again)[0]
        assert levels == {"metadata.version": 21, "transaction.version": 2}
    finally:
        again.close()


def test_an_older_log_gets_the_new_cluster_levels_once(tmp_path: Path) -> None:
    """A metadata log with only metadata.version (an older kwire, or a 3.9 personality) opened
    by a 4.x broker gains the 4.x levels; a level an UpdateFeatures set (0 included) stays."""
    old = make_state(tmp_path / "d", "3.9")
    old.close()
    state = make_state(tmp_path / "d", "4.0")
    try:
        assert finalized(state)[0] == {
            "metadata.version": 21,
            "transaction.version": 2,
            "group.version": 1,
        }
        assert update(state, group_version=(0, 2)).error_code == 0
    finally:
        state.close()
    again = make_state(tmp_path / "d", "4.0")
    try:
        assert "group.version" not in finalized(again)[0]
    finally:
        again.close()


def test_before_4_0_each_feature_is_answered_on_its_own(tmp_path: Path) -> None:
    """3.3-3.9's controller: per-feature results, the top level NONE, the valid ones applied."""
    state = make_state(tmp_path / "d", "3.9")
    try:
        r = update(state, metadata_version=21, kraft_version=3)
        assert r.error_code == 0
        results = {x.feature: (x.error_code, x.error_message) for x in r.results}
        assert results["metadata.version"] == (0, None)
        assert results["kraft.version"] == (
            ErrorCode.INVALID_UPDATE_VERSION,
            "Invalid update version 3 for feature kraft.version. "
            "Local controller 1 only supports versions 0-1",
        )
        assert finalized(state)[0] == {"metadata.version": 21}
    finally:
        state.close()
