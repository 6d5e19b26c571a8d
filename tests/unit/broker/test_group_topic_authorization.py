"""Share and streams group APIs check DESCRIBE on the topics a group uses, as Kafka's ``KafkaApis``
does for KIP-848 consumer groups (KAFKA-18813): ShareGroupDescribe (KAFKA-18817) hides a group
whose members' assignments name a topic the principal may not DESCRIBE; StreamsGroupHeartbeat
(KAFKA-18819) refuses a topology naming such a topic (source, repartition sink, repartition
source, changelog) with TOPIC_AUTHORIZATION_FAILED before the coordinator; StreamsGroupDescribe
hides a group whose topology names one. All three came with the APIs' 4.1 releases.

Requests are encoded, decoded and handled as the server does (``kwire.broker.testing.call``) on a
state with the StandardAuthorizer: a member principal that may use the group and its topics, and
a viewer that may DESCRIBE the group, then the topics too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from acl_grants import SECURED, grant_state

from kwire.broker._acl import GROUP, TOPIC
from kwire.broker.testing import call, make_state
from kwire.protocol import ErrorCode, message_class, struct_class

TOPOLOGY = struct_class(message_class("StreamsGroupHeartbeatRequest"), "topology")
SUBTOPOLOGY = struct_class(
    message_class("StreamsGroupHeartbeatRequest"), "topology", "subtopologies"
)
TOPIC_INFO = struct_class(
    message_class("StreamsGroupHeartbeatRequest"),
    "topology",
    "subtopologies",
    "state_changelog_topics",
)
TAF = ErrorCode.TOPIC_AUTHORIZATION_FAILED
MEMBER, VIEWER = "User:member", "User:viewer"
SHARE_HIDDEN = "The group has described topic(s) that the client is not authorized to describe."
STREAMS_HIDDEN = "The described group uses topics that the client is not authorized to describe."


def test_share_group_describe_hides_a_group_with_undescribable_topics(tmp_path: Path) -> None:
    """``KafkaApis.handleShareGroupDescribe`` (KAFKA-18817): a group whose members' assignments
    name a topic the principal may not DESCRIBE is TOPIC_AUTHORIZATION_FAILED with Kafka's
    message and no members, in its place; the others are described."""
    state = make_state(tmp_path, release="4.3", config=SECURED)
    state.create_topic("assigned", 2)
    grant_state(state, MEMBER, GROUP, "sg", "READ")
    grant_state(state, MEMBER, TOPIC, "assigned", "DESCRIBE")
    for group in ("sg", "empty"):
        grant_state(state, VIEWER, GROUP, group, "DESCRIBE")
    member_id = "00000000-0000-0000-0000-00000000000a"
    joined = call(
        state,
        "ShareGroupHeartbeat",
        1,
        settle=True,
        context={"principal": MEMBER},
        group_id="sg",
        member_id=member_id,
        member_epoch=0,
        subscribed_topic_names=["assigned"],
    )
    assert joined.error_code == 0
    assert [t.partitions for t in joined.assignment.topic_partitions] == [[0, 1]]

    def describe() -> list[Any]:
        response = call(
            state,
            "ShareGroupDescribe",
            1,
            context={"principal": VIEWER},
            group_ids=["sg", "empty"],
            include_authorized_operations=False,
        )
        return sorted(  # the response's order is the coordinator's batches' (tested elsewhere)
            (g.group_id, g.error_code, g.error_message, len(g.members)) for g in response.groups
        )

    empty = ("empty", ErrorCode.GROUP_ID_NOT_FOUND, "Group empty not found.", 0)
    assert describe() == [empty, ("sg", TAF, SHARE_HIDDEN, 0)]
    grant_state(state, VIEWER, TOPIC, "assigned", "DESCRIBE")
    assert describe() == [empty, ("sg", 0, None, 1)]


# a streams topology naming one topic of each kind KafkaApis checks
SOURCE, SINK, CHANGELOG = "st-in", "st-app-rp", "st-app-store-changelog"
STREAMS_TOPICS = (SOURCE, SINK, CHANGELOG)  # SINK is also the repartition source below


def _streams_join(state: Any, principal: str, group: str, member_id: str, **fields: Any) -> Any:
    sub = SUBTOPOLOGY(
        subtopology_id="0",
        source_topics=[SOURCE],
        repartition_sink_topics=[SINK],
        state_changelog_topics=[TOPIC_INFO(name=CHANGELOG, partitions=0, replication_factor=0)],
    )
    down = SUBTOPOLOGY(  # reads what subtopology 0 repartitions
        subtopology_id="1", source_topics=[SINK], repartition_source_topics=[TOPIC_INFO(name=SINK)]
    )
    request: dict[str, Any] = {
        "group_id": group,
        "member_id": member_id,
        "member_epoch": 0,
        "rebalance_timeout_ms": 30000,
        "process_id": "p",
        "topology": TOPOLOGY(epoch=1, subtopologies=[sub, down]),
        "active_tasks": [],
        "standby_tasks": [],
        "warmup_tasks": [],
    }
    request.update(fields)
    return call(state, "StreamsGroupHeartbeat", 0, context={"principal": principal}, **request)


def test_streams_group_heartbeat_needs_describe_on_its_topologys_topics(tmp_path: Path) -> None:
    """``KafkaApis.handleStreamsGroupHeartbeat`` (KAFKA-18819): after READ on the group, a
    topology naming a topic the principal may not DESCRIBE, whether source, repartition sink,
    repartition source or changelog (and whether it exists), is TOPIC_AUTHORIZATION_FAILED with no
    message, before the coordinator and before the request's own checks: no group is made."""
    state = make_state(tmp_path, release="4.3", config=SECURED)
    for name in (SOURCE, SINK, CHANGELOG):
        state.create_topic(name, 1)
    # the repartition topic is both SINK (subtopology 0) and a repartition source (subtopology 1)
    for missing in (SOURCE, SINK, CHANGELOG, "st-unknown"):
        principal = f"User:no-{missing}"
        grant_state(state, principal, GROUP, "app", "READ")
        for name in STREAMS_TOPICS:
            if name != missing:
                grant_state(state, principal, TOPIC, name, "DESCRIBE")
        extra = {}
        if missing == "st-unknown":  # a topic that does not exist needs its ACL too
            sub = SUBTOPOLOGY(subtopology_id="0", source_topics=[SOURCE, missing])
            extra["topology"] = TOPOLOGY(epoch=1, subtopologies=[sub])
        denied = _streams_join(state, principal, "app", "m-1", **extra)
        assert (missing, denied.error_code, denied.error_message) == (missing, TAF, None)
        assert (denied.member_id, denied.member_epoch) == ("", 0)
        invalid = _streams_join(state, principal, "app", "", **extra)  # MemberId can't be empty
        assert (missing, invalid.error_code) == (missing, TAF)
    admin = call(
        state, "StreamsGroupDescribe", 0, context={"principal": "User:admin"}, group_ids=["app"]
    )
    assert [g.error_code for g in admin.groups] == [ErrorCode.GROUP_ID_NOT_FOUND]
    grant_state(state, MEMBER, GROUP, "app", "READ")
    for name in STREAMS_TOPICS:
        grant_state(state, MEMBER, TOPIC, name, "DESCRIBE")
    joined = _streams_join(state, MEMBER, "app", "m-1")
    assert (joined.error_code, joined.member_epoch) == (0, 1)


def test_streams_group_describe_hides_a_group_with_undescribable_topics(tmp_path: Path) -> None:
    """``KafkaApis.handleStreamsGroupDescribe`` (KAFKA-18819): a group whose topology names a topic
    the principal may not DESCRIBE (any kind) is TOPIC_AUTHORIZATION_FAILED with Kafka's message
    and nothing else, in its place; the others are described."""
    state = make_state(tmp_path, release="4.3", config=SECURED)
    for name in STREAMS_TOPICS:
        state.create_topic(name, 1)
    grant_state(state, MEMBER, GROUP, "app", "READ")
    for name in STREAMS_TOPICS:
        grant_state(state, MEMBER, TOPIC, name, "DESCRIBE")
    assert _streams_join(state, MEMBER, "app", "m-1").error_code == 0

    def describe(principal: str) -> list[Any]:
        response = call(
            state,
            "StreamsGroupDescribe",
            0,
            context={"principal": principal},
            group_ids=["app", "none"],
            include_authorized_operations=False,
        )
        return sorted(
            (g.group_id, g.error_code, g.error_message, len(g.members), g.topology is None)
            for g in response.groups
        )

    none = ("none", ErrorCode.GROUP_ID_NOT_FOUND, "Group none not found.", 0, True)
    for missing in STREAMS_TOPICS:
        principal = f"User:no-{missing}"
        for group in ("app", "none"):
            grant_state(state, principal, GROUP, group, "DESCRIBE")
        for name in STREAMS_TOPICS:
            if name != missing:
                grant_state(state, principal, TOPIC, name, "DESCRIBE")
        assert describe(principal) == [("app", TAF, STREAMS_HIDDEN, 0, True), none], missing
        grant_state(state, principal, TOPIC, missing, "DESCRIBE")
        assert describe(principal) == [("app", 0, None, 1, False), none], missing


def test_streams_group_heartbeat_creates_internal_topics_with_create_on_them(
    tmp_path: Path,
) -> None:
    """``KafkaApis.handleStreamsGroupHeartbeat`` (KIP-1071 authorization): the internal topics a
    topology lacks are created with CREATE on the cluster or, failing that, on each of them; a
    principal missing it gets none created and ``Unauthorized to CREATE on topics <names>.``
    after the MISSING_INTERNAL_TOPICS status's detail, and the heartbeat itself succeeds."""
    state = make_state(tmp_path, release="4.3", config=SECURED)
    for name in (SOURCE, SINK):
        state.create_topic(name, 1)
    grant_state(state, MEMBER, GROUP, "app", "READ")
    for name in STREAMS_TOPICS:
        grant_state(state, MEMBER, TOPIC, name, "DESCRIBE")
    joined = _streams_join(state, MEMBER, "app", "m-1")
    assert (joined.error_code, joined.member_epoch) == (0, 1)
    [status] = joined.status
    assert status.status_code == 3  # MISSING_INTERNAL_TOPICS
    assert status.status_detail.endswith(f"; Unauthorized to CREATE on topics {CHANGELOG}.")
    assert state.topic(CHANGELOG) is None
    grant_state(state, MEMBER, TOPIC, CHANGELOG, "CREATE")  # on the topic, not the cluster
    again = _streams_join(state, MEMBER, "app", "m-1", member_epoch=1, topology=None)
    assert again.error_code == 0
    assert "Unauthorized" not in " ".join(s.status_detail for s in again.status)
    assert state.topic(CHANGELOG) is not None
