"""UpdateFeatures (API 57, KIP-584/KIP-778/KIP-1022): finalize feature levels of the cluster.

Versions: v0 (2.7) has ``AllowDowngrade``; v1 (3.3) replaces it with ``UpgradeType`` (1 UPGRADE,
2 SAFE_DOWNGRADE, 3 UNSAFE_DOWNGRADE) and adds ``ValidateOnly``; v2 (4.0) drops the per-feature
results from the response (the top-level error says it all).

Follows Kafka's ``FeatureControlManager.updateFeatures`` (KRaft controller): every update is
checked against the levels this node supports (``BrokerFeatures``, the personality's ranges) and
the finalized ones; the request is all or nothing: the first failure is the answer (top level,
and for v0-1 repeated for each feature, as ``UpdateFeaturesResponse.createWithErrors``) and
nothing is written. Accepted levels are ``FeatureLevelRecord``s appended to
``__cluster_metadata`` (fsynced) before the answer; level 0 removes a feature (not
metadata.version). ``validateOnly`` checks without writing. Not modelled: dependencies of a
feature level on a metadata.version above 3.9-IV0 (kwire's log stays at 3.9-IV0, so Kafka's
``FeatureVersion.dependencies`` on 4.x levels cannot hold), metadata.version downgrades (refused,
as ``MetadataVersion.checkIfMetadataChanged`` refuses them across record-version changes), and
kraft.version upgrades (a static quorum here: KIP-853's dynamic quorum is not served).
"""

from __future__ import annotations

from typing import Any, Final

from kwire.broker import _metadata_log as mlog
from kwire.broker._acl import CLUSTER, CLUSTER_NAME, authorize
from kwire.broker._apis import register
from kwire.broker._context import RequestContext
from kwire.broker._state import BrokerState
from kwire.protocol import ErrorCode, message_class, struct_class

__all__ = ["handle_update_features", "validate_update"]

RESPONSE: Final = message_class("UpdateFeaturesResponse")
RESULT: Final = struct_class(RESPONSE, "results")

#: ``FeatureUpdate.UpgradeType``.
UPGRADE: Final = 1
SAFE_DOWNGRADE: Final = 2
UNSAFE_DOWNGRADE: Final = 3
METADATA_VERSION: Final = mlog.METADATA_VERSION_FEATURE
KRAFT_VERSION: Final = "kraft.version"

Failure = tuple[ErrorCode, str | None]


def _invalid(name: str, level: int, why: str) -> Failure:
    """``FeatureControlManager.invalidUpdateVersion``."""
    return (
        ErrorCode.INVALID_UPDATE_VERSION,
        f"Invalid update version {level} for feature {name}. {why}",
    )


def validate_update(state: BrokerState, name: str, level: int, upgrade_type: int) -> Failure | None:
    """Why one update is refused (``FeatureControlManager.updateFeature``), or ``None``."""
    if upgrade_type not in (UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE):
        return ErrorCode.INVALID_REQUEST, f"Unknown upgradeType {upgrade_type}"
    if level < 0:
        return _invalid(name, level, "The lower value for the new range cannot be less than 0.")
    supported = state.personality.supported_features.get(name)
    node = state.node_id
    if supported is None:
        return _invalid(name, level, f"Local controller {node} does not support this feature.")
    lo, hi = supported
    removal = level == 0 and name != METADATA_VERSION
    if not removal and not lo <= level <= hi:
        return _invalid(name, level, f"Local controller {node} only supports versions {lo}-{hi}")
    current = state.metadata_image.features.get(name, 0)
    if level < current:
        if upgrade_type == UPGRADE:
            return _invalid(
                name,
                level,
                "Can't downgrade the version of this feature without setting the upgrade type "
                "to either safe or unsafe downgrade.",
            )
        if name == METADATA_VERSION:
            if upgrade_type == UNSAFE_DOWNGRADE:
                return _invalid(
                    name, level, "Unsafe metadata.version downgrades are not supported."
                )
            return _invalid(
                name,
                level,
                "Refusing to perform the requested downgrade because it might delete metadata "
                "information.",
            )
    elif level > current and upgrade_type != UPGRADE:
        return _invalid(name, level, "Can't downgrade to a newer version.")
    if name == KRAFT_VERSION and level != current:
        return _invalid(name, level, "The quorum is static; kraft.version cannot change.")
    return None


@register(57, 0, 2)
def handle_update_features(state: BrokerState, ctx: RequestContext, request: Any) -> Any:
    version = ctx.api_version
    updates: list[tuple[str, int, int]] = []
    for update in request.feature_updates:
        if version == 0:
            kind = SAFE_DOWNGRADE if update.allow_downgrade else UPGRADE
        else:
            kind = update.upgrade_type
        updates.append((update.feature, update.max_version_level, kind))
    failure: Failure | None = None
    if not authorize(state, ctx, "ALTER", CLUSTER, CLUSTER_NAME):
        failure = ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None
    names = [name for name, _, _ in updates]
    if failure is None:
        duplicate = next((n for n in names if names.count(n) > 1), None)
        if duplicate is not None:
            failure = (
                ErrorCode.INVALID_REQUEST,
                f"Feature {duplicate} was specified more than once.",
            )
    for name, level, kind in updates:
        if failure is not None:
            break
        failure = validate_update(state, name, level, kind)
    if failure is None and not (version >= 1 and request.validate_only):
        changed = {
            name: level
            for name, level, _ in updates
            if state.metadata_image.features.get(name, 0) != level
        }
        state.append_metadata(mlog.feature_level_records(changed))
        if METADATA_VERSION in changed:
            state.metadata_log.set_metadata_version(changed[METADATA_VERSION])
    error, message = failure if failure is not None else (ErrorCode.NONE, None)
    response: Any = RESPONSE(throttle_time_ms=0, error_code=int(error), error_message=message)
    if version < 2:
        response.results = [
            RESULT(feature=name, error_code=int(error), error_message=message) for name in names
        ]
    return response
