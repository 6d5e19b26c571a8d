"""UpdateFeatures (API 57, KIP-584/KIP-778/KIP-1022): finalize feature levels of the cluster.

Versions: v0 (2.7) has ``AllowDowngrade``; v1 (3.3) replaces it with ``UpgradeType`` (1 UPGRADE,
2 SAFE_DOWNGRADE, 3 UNSAFE_DOWNGRADE) and adds ``ValidateOnly``; v2 (4.0) drops the per-feature
results from the response (the top-level error says it all).

Follows Kafka's ``FeatureControlManager.updateFeatures`` (KRaft controller): every update is
checked against the levels this node supports (``BrokerFeatures``, the personality's ranges; a
feature it does not know supports level 0 only) and the finalized ones. On 4.x the request is
all or nothing: the first failure is the answer (top level, and for v0-1 repeated for each
feature, ``UpdateFeaturesResponse.createWithErrors``) and nothing is written; 3.3-3.9 answer each
feature on its own (top level NONE) and apply the valid ones. Accepted levels are
``FeatureLevelRecord``s appended to ``__cluster_metadata`` (fsynced) before the answer; level 0
removes a feature (not metadata.version). ``validateOnly`` checks without writing. Not modelled: dependencies of a
feature level on a metadata.version above 3.9-IV0 (kwire's log stays at 3.9-IV0, so Kafka's
``FeatureVersion.dependencies`` on 4.x levels cannot hold), metadata.version downgrades (refused,
as ``MetadataVersion.checkIfMetadataChanged`` refuses them across record-version changes), and
kraft.version upgrades (a static quorum here: KIP-853's dynamic quorum is not served).
"""

from __future__ import annotations

from typing import Any, Final

from kwire.broker import _metadata_image as mimage
from kwire.broker._acl import CLUSTER, CLUSTER_NAME, authorize
from kwire.broker._apis import register
from kwire.broker._context import RequestContext
from kwire.broker._state import BrokerState
from kwire.protocol import ErrorCode
from kwire.protocol.messages import UpdateFeaturesRequest, UpdateFeaturesResponse

__all__ = ["handle_update_features", "validate_update"]

RESPONSE: Final = UpdateFeaturesResponse
RESULT: Final = UpdateFeaturesResponse.UpdatableFeatureResult

#: ``FeatureUpdate.UpgradeType``.
UPGRADE: Final = 1
SAFE_DOWNGRADE: Final = 2
UNSAFE_DOWNGRADE: Final = 3
METADATA_VERSION: Final = mimage.METADATA_VERSION_FEATURE
KRAFT_VERSION: Final = "kraft.version"

Failure = tuple[ErrorCode, str | None]


def _invalid(name: str, level: int, why: str) -> Failure:
    """``FeatureControlManager.invalidUpdateVersion``."""
    return (
        ErrorCode.INVALID_UPDATE_VERSION,
        f"Invalid update version {level} for feature {name}. {why}",
    )


def _range_text(lo: int, hi: int) -> str:
    """Kafka's ``VersionRange.toString``."""
    return str(lo) if lo == hi else f"{lo}-{hi}"


def validate_update(state: BrokerState, name: str, level: int, upgrade_type: int) -> Failure | None:
    """Why one update is refused (``FeatureControlManager.updateFeature``), or ``None``."""
    if upgrade_type not in (UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE):
        return _invalid(name, level, "The controller does not support the given upgrade type.")
    current = state.metadata_image.features.get(name, 0)
    if level < 0:
        return _invalid(name, level, "A feature version cannot be less than 0.")
    # QuorumFeatures.reasonNotSupported: a feature this node does not know is DISABLED (0-0).
    lo, hi = state.personality.supported_features.get(name, (0, 0))
    if not lo <= level <= hi:
        node = state.node_id
        if hi == 0:
            return _invalid(name, level, f"Local controller {node} does not support this feature.")
        return _invalid(
            name, level, f"Local controller {node} only supports versions {_range_text(lo, hi)}"
        )
    if level < current and upgrade_type == UPGRADE:
        return _invalid(
            name,
            level,
            "Can't downgrade the version of this feature without setting the upgrade type to "
            "either safe or unsafe downgrade.",
        )
    if level > current and upgrade_type != UPGRADE:
        return _invalid(name, level, "Can't downgrade to a newer version.")
    if name == METADATA_VERSION and level < current:
        # updateMetadataVersion: every level kwire writes changed the records
        # (MetadataVersion.checkIfMetadataChanged), so a downgrade is refused.
        if upgrade_type == UNSAFE_DOWNGRADE:
            why = "Unsafe metadata downgrade is not supported in this version."
        else:
            why = (
                "Refusing to perform the requested downgrade because it might delete metadata "
                "information. Retry using UNSAFE_DOWNGRADE if you want to force the downgrade "
                "to proceed."
            )
        return ErrorCode.INVALID_UPDATE_VERSION, f"Invalid metadata.version {level}. {why}"
    if name == KRAFT_VERSION and level != current:
        return _invalid(name, level, "The quorum is static; kraft.version cannot change.")
    return None


@register(57, 0, 2)
def handle_update_features(
    state: BrokerState, ctx: RequestContext, request: UpdateFeaturesRequest
) -> Any:
    version = ctx.api_version
    # The request as the controller reads it: a map by feature name (a repeated name: the last).
    updates: dict[str, tuple[int, int]] = {}
    for update in request.feature_updates:
        if version == 0:
            kind = SAFE_DOWNGRADE if update.allow_downgrade else UPGRADE
        else:
            kind = update.upgrade_type
        updates[update.feature] = (update.max_version_level, kind)
    validate_only = version >= 1 and bool(request.validate_only)
    if not authorize(state, ctx, "ALTER", CLUSTER, CLUSTER_NAME):
        denied = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        return _response(version, (denied, None), dict.fromkeys(updates, (denied, None)))
    results = {name: validate_update(state, name, *spec) for name, spec in updates.items()}
    if _releases_from_4_0(state):
        # Kafka 4.x: all or nothing, the first failure answers for every feature.
        failure = next((f for f in results.values() if f is not None), None)
        accepted = {} if failure is not None else dict(updates)
        top: Failure = failure if failure is not None else (ErrorCode.NONE, None)
        per_feature: dict[str, Failure] = dict.fromkeys(updates, top)
    else:
        # 3.3-3.9: each feature on its own, the valid ones applied, the top level NONE.
        accepted = {n: spec for n, spec in updates.items() if results[n] is None}
        top = (ErrorCode.NONE, None)
        per_feature = {
            n: r if r is not None else (ErrorCode.NONE, None) for n, r in results.items()
        }
    # Kafka writes a record for every accepted update, unchanged levels included.
    changed = {name: level for name, (level, _) in accepted.items()}
    if changed and not validate_only:
        state.append_metadata(mimage.feature_level_records(changed))
        if METADATA_VERSION in changed:
            state.metadata_log.set_metadata_version(changed[METADATA_VERSION])
    return _response(version, top, per_feature)


def _releases_from_4_0(state: BrokerState) -> bool:
    return int(state.personality.release.split(".")[0]) >= 4


def _response(version: int, top: Failure, per_feature: dict[str, Failure]) -> Any:
    response: Any = RESPONSE(throttle_time_ms=0, error_code=int(top[0]), error_message=top[1])
    if version < 2:
        response.results = [
            RESULT(feature=name, error_code=int(error), error_message=message)
            for name, (error, message) in per_feature.items()
        ]
    return response
