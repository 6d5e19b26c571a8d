"""``share.version`` gates the share-group APIs (Kafka's ``isShareGroupProtocolEnabled``): each
request goes through the broker's dispatch (guards, then handler) as the server sends it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kwire.broker import BrokerState, ManualClock, RequestContext, personality
from kwire.broker._apis import dispatch, implemented_versions
from kwire.protocol import (
    ErrorCode,
    decode_request_frame,
    decode_response_frame,
    encode_request_frame,
    encode_response_frame,
    message_class,
    struct_class,
)

NOW = 1_700_000_000_000
UPDATE = struct_class("UpdateFeaturesRequest", "feature_updates")
OFFSETS_GROUP = struct_class("DescribeShareGroupOffsetsRequest", "groups")
UPGRADE, SAFE_DOWNGRADE = 1, 2


def open_state(path: Path, release: str = "4.3", **config: str) -> BrokerState:
    return BrokerState(
        path,
        personality=personality(release, implemented_versions()),
        clock=ManualClock(NOW),
        static_config=config,
    )


def call(state: BrokerState, name: str, version: int, **fields: Any) -> Any:
    request = message_class(f"{name}Request")(**fields)
    frame = encode_request_frame(request, version, correlation_id=3, client_id="c")
    api_key = request.API_KEY
    assert api_key is not None
    ctx = RequestContext(api_key, version, 3, "c", client_address="127.0.0.1:5555")
    outcome = dispatch(state, ctx, decode_request_frame(frame).message)
    frame = encode_response_frame(outcome, version, correlation_id=3)
    return decode_response_frame(frame, api_key, version).message


def join(state: BrokerState) -> Any:
    return call(
        state,
        "ShareGroupHeartbeat",
        1,
        group_id="sg",
        member_id="m1",
        member_epoch=0,
        subscribed_topic_names=["t"],
    )


def set_share_version(state: BrokerState, level: int, kind: int) -> int:
    response = call(
        state,
        "UpdateFeatures",
        1,
        timeout_ms=1000,
        feature_updates=[
            UPDATE(feature="share.version", max_version_level=level, upgrade_type=kind)
        ],
        validate_only=False,
    )
    return int(response.error_code)


def test_share_version_0_refuses_the_share_apis_until_it_is_1_again(tmp_path: Path) -> None:
    state = open_state(tmp_path / "data")
    try:
        state.create_topic("t", 1)
        assert state.feature_level("share.version") == 1  # a new 4.3 cluster's default
        assert join(state).error_code == 0
        assert set_share_version(state, 0, SAFE_DOWNGRADE) == 0
        assert join(state).error_code == int(ErrorCode.UNSUPPORTED_VERSION)
        offsets = call(
            state,
            "DescribeShareGroupOffsets",
            1,
            groups=[OFFSETS_GROUP(group_id="sg", topics=None)],
        )
        assert [(g.group_id, g.error_code) for g in offsets.groups] == [
            ("sg", int(ErrorCode.UNSUPPORTED_VERSION))
        ]
        # still advertised: Kafka's ApiVersions does not filter on share.version
        versions = call(
            state,
            "ApiVersions",
            3,
            client_software_name="t",
            client_software_version="1",
        )
        assert {k.api_key for k in versions.api_keys} >= {76, 77, 78, 79, 90, 91, 92}
        assert ("share.version", 0) not in [
            (f.name, f.max_version_level) for f in versions.finalized_features
        ]
    finally:
        state.close()
    again = open_state(tmp_path / "data")  # the level is in the metadata log
    try:
        assert join(again).error_code == int(ErrorCode.UNSUPPORTED_VERSION)
        assert set_share_version(again, 1, UPGRADE) == 0
        assert join(again).error_code == 0
    finally:
        again.close()


@pytest.mark.parametrize(
    ("config", "served"), [({}, False), ({"group.share.enable": "true"}, True)]
)
def test_a_4_1_cluster_serves_share_groups_only_when_enabled(
    tmp_path: Path, config: dict[str, str], served: bool
) -> None:
    state = open_state(tmp_path / "data", "4.1", **config)
    try:
        state.create_topic("t", 1)
        assert state.feature_level("share.version") == 0  # a preview in 4.1
        expected = ErrorCode.NONE if served else ErrorCode.UNSUPPORTED_VERSION
        assert join(state).error_code == int(expected)
    finally:
        state.close()
