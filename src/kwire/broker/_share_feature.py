"""``share.version``: share groups are served only while the cluster has them enabled (KIP-932).

After ``KafkaApis.isShareGroupProtocolEnabled`` (Kafka 4.1+): the share-group APIs
(ShareGroupHeartbeat 76, ShareGroupDescribe 77, ShareFetch 78, ShareAcknowledge 79, the share
coordinator's 83-87, DescribeShareGroupOffsets 90, AlterShareGroupOffsets 91,
DeleteShareGroupOffsets 92) answer UNSUPPORTED_VERSION (each API's ``getErrorResponse``: every
error code of the response) unless the finalized ``share.version`` is at least 1
(``ShareVersion.SV_1.supportsShareGroups``) or the internal broker setting
``group.share.enable=true`` (``ShareGroupConfig``, for tests) turns them on. A new 4.2+ cluster
finalizes SV_1 (``_releases``); 4.1 ships it as a preview, off by default; UpdateFeatures moves it.
The APIs stay advertised whatever the level, as Kafka's ``ApiVersionsResponse.filterApis``
filters only telemetry (franz-go's table of 4.1 lists 76-79 although a new 4.1 cluster leaves
share.version at 0). When share groups go off, the share sessions close and the records they
hold are released (``SharePartitionManager.onShareVersionToggle``).
"""

from __future__ import annotations

from typing import Any, Final

from kwire.broker._context import RequestContext
from kwire.broker._routing import error_response
from kwire.broker._state import BrokerState
from kwire.protocol import ErrorCode

__all__ = ["SHARE_VERSION", "share_gate", "share_groups_enabled"]

SHARE_VERSION: Final = "share.version"


def share_groups_enabled(state: BrokerState) -> bool:
    if state.static_config.get("group.share.enable", "false").lower() == "true":
        return True
    return state.feature_level(SHARE_VERSION) >= 1


def share_gate(state: BrokerState, ctx: RequestContext, request: Any) -> Any:
    """The guard of the share APIs (``_apis.GUARD_TABLE`` names them): UNSUPPORTED_VERSION while
    share groups are off."""
    if share_groups_enabled(state):
        return None
    coordinator = state.services.share
    if coordinator is not None and coordinator.sessions:
        for group_id, member_id, _ in list(coordinator.sessions):
            coordinator.close_session(group_id, member_id)
    return error_response(ctx.api_key, ctx.api_version, request, ErrorCode.UNSUPPORTED_VERSION)
