"""KIP-1071 streams groups over a socket: StreamsGroupHeartbeat (88) and StreamsGroupDescribe (89).

Every request is built and encoded by kio 0.6.5 (Kafka 4.3.1's schemas, an independent codec),
sent to a running kwire broker on a loopback port, and kwire's response bytes are decoded by kio.
No client speaks streams groups yet, so the heartbeats are the ones a Kafka Streams member would
send (``StreamsGroupHeartbeatRequestManager``): join with the topology, report the owned tasks,
acknowledge revocations. The coordinator state lives in ``__consumer_offsets`` (records 17-23):
a restarted broker describes the same group.
"""

from __future__ import annotations

import json
import socket
import struct
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import kio_oracle
import pytest

from kwire.broker import Broker
from kwire.cli import main

pytest.importorskip("kio")

from kio.schema.consumer_group_heartbeat.v0 import request as cg_req
from kio.schema.consumer_group_heartbeat.v0 import response as cg_resp
from kio.schema.offset_commit.v9 import request as oc_req
from kio.schema.offset_commit.v9 import response as oc_resp
from kio.schema.request_header.v2.header import RequestHeader
from kio.schema.share_group_heartbeat.v1 import request as sg_req
from kio.schema.share_group_heartbeat.v1 import response as sg_resp
from kio.schema.streams_group_describe.v0 import request as describe_req
from kio.schema.streams_group_describe.v0 import response as describe_resp
from kio.schema.streams_group_heartbeat.v0 import request as hb_req
from kio.schema.streams_group_heartbeat.v0 import response as hb_resp
from kio.schema.update_features.v1 import request as uf_req
from kio.schema.update_features.v1 import response as uf_resp
from kio.static.primitive import i8, i16, i32, i64

GROUP = "app"
CHANGELOG = "app-store-changelog"
NONE, UNKNOWN_MEMBER_ID, UNSUPPORTED_VERSION, GROUP_ID_NOT_FOUND = 0, 25, 35, 69
FENCED_MEMBER_EPOCH, STALE_MEMBER_EPOCH, STREAMS_INVALID_TOPOLOGY = 110, 113, 130
STREAMS_INVALID_TOPOLOGY_EPOCH, STALE_TOPOLOGY = 131, 0
MISSING_SOURCE_TOPICS, MISSING_INTERNAL_TOPICS = 1, 3


class Wire:
    """One connection: kio-encoded requests out, kio-decoded responses in."""

    def __init__(self, broker: Broker) -> None:
        self.sock = socket.create_connection(("127.0.0.1", broker.port), timeout=10)
        self.correlation = 0

    def close(self) -> None:
        self.sock.close()

    def _read(self, size: int) -> bytes:
        out = b""
        while len(out) < size:
            chunk = self.sock.recv(size - len(out))
            assert chunk, "the broker closed the connection"
            out += chunk
        return out

    def call(self, request: Any, response_cls: Any) -> Any:
        self.correlation += 1
        header = RequestHeader(
            request_api_key=type(request).__api_key__,
            request_api_version=type(request).__version__,
            correlation_id=i32(self.correlation),
            client_id="streams-test",
        )
        payload = kio_oracle.kio_encode(header) + kio_oracle.kio_encode(request)
        self.sock.sendall(struct.pack(">i", len(payload)) + payload)
        (size,) = struct.unpack(">i", self._read(4))
        frame = self._read(size)
        (correlation,) = struct.unpack_from(">i", frame, 0)
        assert correlation == self.correlation
        assert frame[4] == 0  # response header v1: no tagged fields
        return kio_oracle.kio_decode(response_cls, frame[5:])


@pytest.fixture
def start(kwire_broker_factory: Callable[..., Broker], tmp_path: Path) -> Iterator[Any]:
    wires: list[Wire] = []

    def factory(**config: str) -> tuple[Broker, Wire]:
        broker = kwire_broker_factory(tmp_path / "data", kafka_version="4.3", config=config)
        wire = Wire(broker)
        wires.append(wire)
        return broker, wire

    yield factory
    for wire in wires:
        wire.close()


def topology(*subtopology_ids: str) -> hb_req.Topology:
    return hb_req.Topology(
        epoch=i32(1),
        subtopologies=tuple(
            hb_req.Subtopology(
                subtopology_id=sid,
                source_topics=("input",),
                state_changelog_topics=(
                    hb_req.TopicInfo(
                        name=CHANGELOG,
                        partitions=i32(0),
                        replication_factor=i16(0),
                        topic_configs=(hb_req.KeyValue(key="cleanup.policy", value="compact"),),
                    ),
                ),
                repartition_source_topics=(),
                copartition_groups=(),
            )
            for sid in subtopology_ids
        ),
    )


def tasks(*partitions: int) -> tuple[hb_req.TaskIds, ...]:
    return (hb_req.TaskIds(subtopology_id="0", partitions=tuple(i32(p) for p in partitions)),)


def heartbeat(
    wire: Wire,
    member: str,
    epoch: int,
    owned: tuple[int, ...] | None = (),
    topo: hb_req.Topology | None = None,
    group: str = GROUP,
) -> Any:
    joining = epoch == 0
    request = hb_req.StreamsGroupHeartbeatRequest(
        group_id=group,
        member_id=member,
        member_epoch=i32(epoch),
        endpoint_information_epoch=i32(0),
        rebalance_timeout=timedelta(milliseconds=30000 if joining else -1),
        topology=topo if topo is not None else (topology("0") if joining else None),
        active_tasks=None if owned is None else tasks(*owned) if owned else (),
        standby_tasks=None if owned is None else (),
        warmup_tasks=None if owned is None else (),
        process_id=f"process-{member}" if joining else None,
        user_endpoint=hb_req.Endpoint(host="localhost", port=9000 + len(member))
        if joining
        else None,
        client_tags=() if joining else None,
        task_offsets=None,
        task_end_offsets=None,
    )
    return wire.call(request, hb_resp.StreamsGroupHeartbeatResponse)


def active(response: Any) -> list[int] | None:
    if response.active_tasks is None:
        return None
    return sorted(p for t in response.active_tasks for p in t.partitions)


def describe(wire: Wire, *groups: str) -> Any:
    request = describe_req.StreamsGroupDescribeRequest(
        group_ids=groups or (GROUP,), include_authorized_operations=False
    )
    return wire.call(request, describe_resp.StreamsGroupDescribeResponse).groups


def described_tasks(member: Any) -> list[int]:
    return sorted(p for t in member.assignment.active_tasks for p in t.partitions)


def test_two_members_join_revoke_assign_leave_and_a_restart_keeps_the_group(start: Any) -> None:
    broker, wire = start()
    broker.create_topic("input", 4)

    # A joins: the changelog topic is missing, so the broker creates it and A has no task yet.
    r = heartbeat(wire, "A", 0)
    assert r.error_code == NONE, r.error_message
    assert r.member_id == "A" and r.member_epoch == 1
    assert [s.status_code for s in r.status or ()] == [MISSING_INTERNAL_TOPICS]
    assert active(r) == []
    assert broker.topics()[CHANGELOG] == 4  # as many partitions as the subtopology has tasks

    r = heartbeat(wire, "A", 1)  # the topology is now ready: all four tasks
    assert (r.error_code, r.member_epoch, active(r)) == (NONE, 2, [0, 1, 2, 3])
    assert not r.status

    # B joins: A keeps 0 and 1, B's 2 and 3 are unreleased until A revokes them.
    r = heartbeat(wire, "B", 0)
    assert (r.error_code, r.member_epoch, active(r)) == (NONE, 3, [])
    r = heartbeat(wire, "A", 2, owned=(0, 1, 2, 3))
    assert (r.member_epoch, active(r)) == (2, [0, 1])  # revoke 2, 3 first; the epoch waits
    assert describe(wire)[0].group_state == "Reconciling"
    r = heartbeat(wire, "B", 3)
    assert (r.member_epoch, active(r)) == (3, None)  # still unreleased: nothing new
    r = heartbeat(wire, "A", 2, owned=(0, 1))  # revoked: A moves to the new epoch
    assert (r.member_epoch, active(r)) == (3, [0, 1])
    r = heartbeat(wire, "B", 3)
    assert (r.member_epoch, active(r)) == (3, [2, 3])

    # A stale heartbeat of A's previous epoch owning only assigned tasks is accepted (Kafka's
    # lost-response rule); a greater epoch than the coordinator's is fenced.
    assert heartbeat(wire, "A", 2, owned=(0, 1)).error_code == NONE
    r = heartbeat(wire, "A", 7, owned=(0, 1))
    assert r.error_code == FENCED_MEMBER_EPOCH

    (group,) = describe(wire)
    assert (group.error_code, group.group_state) == (NONE, "Stable")
    assert (group.group_epoch, group.assignment_epoch) == (3, 3)
    assert group.topology.epoch == 1
    (sub,) = group.topology.subtopologies
    assert (sub.subtopology_id, sub.source_topics) == ("0", ("input",))
    assert [(t.name, t.partitions) for t in sub.state_changelog_topics] == [(CHANGELOG, 4)]
    members = {m.member_id: m for m in group.members}
    assert {k: described_tasks(m) for k, m in members.items()} == {"A": [0, 1], "B": [2, 3]}
    assert members["B"].process_id == "process-B" and members["B"].user_endpoint.port == 9001

    # A restart replays the records from __consumer_offsets.
    wire.close()
    broker.stop()
    broker, wire = start()
    (again,) = describe(wire)
    assert (again.group_state, again.group_epoch, again.assignment_epoch) == ("Stable", 3, 3)
    assert {m.member_id: described_tasks(m) for m in again.members} == {"A": [0, 1], "B": [2, 3]}
    assert again.topology == group.topology

    # B leaves; A gets B's tasks at the next epoch.
    r = heartbeat(wire, "B", -1)
    assert (r.error_code, r.member_id, r.member_epoch) == (NONE, "B", -1)
    r = heartbeat(wire, "A", 3, owned=(0, 1))
    assert (r.member_epoch, active(r)) == (4, [0, 1, 2, 3])
    (group,) = describe(wire)
    assert [m.member_id for m in group.members] == ["A"]
    assert heartbeat(wire, "B", 3).error_code == UNKNOWN_MEMBER_ID


def test_unknown_group_invalid_topology_and_describe_errors(start: Any) -> None:
    broker, wire = start()
    broker.create_topic("input", 2)
    r = heartbeat(wire, "A", 1, group="nope")
    assert r.error_code == GROUP_ID_NOT_FOUND
    r = heartbeat(wire, "A", 0, topo=topology("0", "0"))  # subtopology ids must be unique
    assert r.error_code == STREAMS_INVALID_TOPOLOGY and r.error_message
    (missing,) = describe(wire, "nope")
    assert missing.error_code == GROUP_ID_NOT_FOUND
    assert heartbeat(wire, "A", 0).error_code == NONE
    # One id space: a KIP-848 consumer group may not take a streams group's id.
    consumer = cg_req.ConsumerGroupHeartbeatRequest(
        group_id=GROUP,
        member_id="c1",
        member_epoch=i32(0),
        rebalance_timeout=timedelta(milliseconds=30000),
        subscribed_topic_names=("input",),
        server_assignor=None,
        topic_partitions=(),
    )
    answer = wire.call(consumer, cg_resp.ConsumerGroupHeartbeatResponse)
    assert answer.error_code == GROUP_ID_NOT_FOUND


def test_streams_version_gates_both_apis(start: Any) -> None:
    broker, wire = start()
    broker.create_topic("input", 1)

    def set_level(level: int) -> None:
        request = uf_req.UpdateFeaturesRequest(
            timeout=timedelta(seconds=1),
            feature_updates=(
                uf_req.FeatureUpdateKey(
                    feature="streams.version",
                    max_version_level=i16(level),
                    upgrade_type=i8(1 if level else 2),  # UPGRADE, SAFE_DOWNGRADE
                ),
            ),
            validate_only=False,
        )
        assert wire.call(request, uf_resp.UpdateFeaturesResponse).error_code == NONE

    set_level(0)
    assert heartbeat(wire, "A", 0).error_code == UNSUPPORTED_VERSION
    assert describe(wire)[0].error_code == UNSUPPORTED_VERSION
    set_level(1)
    assert heartbeat(wire, "A", 0).error_code == NONE
    assert describe(wire)[0].error_code == NONE


def test_kwire_dump_decodes_the_streams_group_records(
    start: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    broker, wire = start()
    broker.create_topic("input", 2)
    assert heartbeat(wire, "A", 0).error_code == NONE
    assert heartbeat(wire, "A", 1).member_epoch == 2
    logs = sorted(
        str(p)
        for p in Path(broker.data_dir).glob("__consumer_offsets-*/*.log")
        if p.stat().st_size > 0
    )
    assert main(["dump", "--offsets-decoder", "--files", ",".join(logs)]) == 0
    out = capsys.readouterr().out
    found: dict[str, list[Any]] = {}
    for line in out.splitlines():
        if " key: " not in line:
            continue
        key_text, _, payload = line.partition(" key: ")[2].partition(" payload: ")
        key = json.loads(key_text)
        found.setdefault(key["type"], []).append(json.loads(payload)["data"])
    assert sorted(found, key=int) == ["17", "19", "20", "21", "22", "23"]
    assert found["23"][0]["subtopologies"][0]["sourceTopics"] == ["input"]
    assert found["17"][-1]["epoch"] == 2
    current = found["22"][-1]
    assert (current["memberEpoch"], current["activeTasks"]) == (
        2,
        [{"subtopologyId": "0", "partitions": [0, 1]}],
    )


def test_offset_commits_are_checked_against_the_streams_member_epoch(start: Any) -> None:
    """``StreamsGroup.validateOffsetCommit``: a member commits with its member epoch."""
    broker, wire = start()
    broker.create_topic("input", 1)
    assert heartbeat(wire, "A", 0).error_code == NONE
    assert heartbeat(wire, "A", 1).member_epoch == 2

    def commit(member: str, epoch: int) -> int:
        request = oc_req.OffsetCommitRequest(
            group_id=GROUP,
            generation_id_or_member_epoch=i32(epoch),
            member_id=member,
            topics=(
                oc_req.OffsetCommitRequestTopic(
                    name="input",
                    partitions=(
                        oc_req.OffsetCommitRequestPartition(
                            partition_index=i32(0),
                            committed_offset=i64(5),
                            committed_metadata="",
                        ),
                    ),
                ),
            ),
        )
        answer = wire.call(request, oc_resp.OffsetCommitResponse)
        return int(answer.topics[0].partitions[0].error_code)

    assert commit("A", 2) == NONE
    assert commit("A", 1) == STALE_MEMBER_EPOCH
    assert commit("Z", 2) == UNKNOWN_MEMBER_ID
    assert commit("", -1) == UNKNOWN_MEMBER_ID  # an admin commit only into an empty group
    # the group is still a streams group, with its committed offset kept
    assert describe(wire)[0].group_state == "Stable"


def test_missing_source_topics_leave_the_group_not_ready_until_they_exist(start: Any) -> None:
    broker, wire = start()
    r = heartbeat(wire, "A", 0)  # "input" does not exist yet
    assert r.error_code == NONE
    assert [s.status_code for s in r.status or ()] == [MISSING_SOURCE_TOPICS]
    assert "input" in r.status[0].status_detail
    assert active(r) == []
    (group,) = describe(wire)
    assert group.group_state == "NotReady"
    assert group.topology.subtopologies is None  # not configured
    assert CHANGELOG not in broker.topics()  # nothing is created for a topology not configured
    broker.create_topic("input", 3)
    r = heartbeat(wire, "A", r.member_epoch)  # still missing the changelog: created now
    assert [s.status_code for s in r.status or ()] == [MISSING_INTERNAL_TOPICS]
    r = heartbeat(wire, "A", r.member_epoch)
    assert not r.status and active(r) == [0, 1, 2]
    assert describe(wire)[0].group_state == "Stable"


def test_topology_epochs_newer_replaces_older_is_stale_same_must_match(start: Any) -> None:
    """``streamsGroupHeartbeat``: the group keeps the newest topology; a member on an older one
    is told STALE_TOPOLOGY; the same epoch with another topology is STREAMS_INVALID_TOPOLOGY_EPOCH."""
    broker, wire = start()
    broker.create_topic("input", 2)
    broker.create_topic(CHANGELOG, 2)

    def at_epoch(epoch: int, *ids: str) -> hb_req.Topology:
        return hb_req.Topology(epoch=i32(epoch), subtopologies=topology(*ids).subtopologies)

    assert heartbeat(wire, "A", 0, topo=at_epoch(1, "0")).error_code == NONE
    r = heartbeat(wire, "B", 0, topo=at_epoch(1, "1"))
    assert r.error_code == STREAMS_INVALID_TOPOLOGY_EPOCH
    r = heartbeat(wire, "B", 0, topo=at_epoch(2, "0"))  # an upgraded instance
    assert r.error_code == NONE and not r.status
    assert describe(wire)[0].topology.epoch == 2
    r = heartbeat(wire, "C", 0, topo=at_epoch(1, "0"))  # an instance not yet upgraded
    assert r.error_code == NONE
    assert [s.status_code for s in r.status] == [STALE_TOPOLOGY]
    assert "topology epoch 1 is behind the group's topology epoch 2" in r.status[0].status_detail
    members = {m.member_id: m.topology_epoch for m in describe(wire)[0].members}
    assert members == {"A": 1, "B": 2, "C": 1}


def test_share_and_streams_groups_share_one_id_space(start: Any) -> None:
    broker, wire = start()
    broker.create_topic("input", 1)
    assert heartbeat(wire, "A", 0).error_code == NONE

    def share_join(group: str) -> int:
        request = sg_req.ShareGroupHeartbeatRequest(
            group_id=group,
            member_id="s1-member-id-000000000",
            member_epoch=i32(0),
            subscribed_topic_names=("input",),
        )
        return int(wire.call(request, sg_resp.ShareGroupHeartbeatResponse).error_code)

    assert share_join(GROUP) == GROUP_ID_NOT_FOUND
    assert share_join("shared") == NONE
    assert heartbeat(wire, "A", 0, group="shared").error_code == GROUP_ID_NOT_FOUND


def test_list_describe_and_delete_groups_see_a_streams_group(start: Any) -> None:
    """The classic admin APIs on a streams group, as ``GroupMetadataManager`` answers them:
    ListGroups lists it with type and protocol "streams" (not its committed offsets' holder as an
    Empty classic group), DescribeGroups v6 says it is not a classic group, DeleteGroups refuses
    it while it has members and deletes it (records and offsets) once it is empty."""
    from kio.schema.delete_groups.v2 import request as dg_req
    from kio.schema.delete_groups.v2 import response as dg_resp
    from kio.schema.describe_groups.v6 import request as dsc_req
    from kio.schema.describe_groups.v6 import response as dsc_resp
    from kio.schema.list_groups.v5 import request as lg_req
    from kio.schema.list_groups.v5 import response as lg_resp

    broker, wire = start()
    broker.create_topic("input", 1)
    assert heartbeat(wire, "A", 0).error_code == NONE
    assert heartbeat(wire, "A", 1).member_epoch == 2
    commit = oc_req.OffsetCommitRequest(
        group_id=GROUP,
        generation_id_or_member_epoch=i32(2),
        member_id="A",
        topics=(
            oc_req.OffsetCommitRequestTopic(
                name="input",
                partitions=(
                    oc_req.OffsetCommitRequestPartition(
                        partition_index=i32(0), committed_offset=i64(5), committed_metadata=""
                    ),
                ),
            ),
        ),
    )
    assert wire.call(commit, oc_resp.OffsetCommitResponse).topics[0].partitions[0].error_code == 0

    def listed(*types: str) -> list[tuple[str, str, str, str]]:
        request = lg_req.ListGroupsRequest(states_filter=(), types_filter=types)
        groups = wire.call(request, lg_resp.ListGroupsResponse).groups
        return [(g.group_id, g.group_type, g.protocol_type, g.group_state) for g in groups]

    def delete() -> int:
        request = dg_req.DeleteGroupsRequest(groups_names=(GROUP,))
        return int(wire.call(request, dg_resp.DeleteGroupsResponse).results[0].error_code)

    assert listed() == [(GROUP, "streams", "streams", "Stable")]
    assert listed("classic") == []
    request = dsc_req.DescribeGroupsRequest(groups=(GROUP,), include_authorized_operations=False)
    (described,) = wire.call(request, dsc_resp.DescribeGroupsResponse).groups
    assert described.error_code == GROUP_ID_NOT_FOUND
    assert described.error_message == f"Group {GROUP} is not a classic group."

    NON_EMPTY_GROUP = 68
    assert delete() == NON_EMPTY_GROUP
    assert heartbeat(wire, "A", -1).error_code == NONE  # A leaves: the group is empty
    assert listed() == [(GROUP, "streams", "streams", "Empty")]
    assert delete() == NONE
    assert listed() == []
    assert describe(wire)[0].error_code == GROUP_ID_NOT_FOUND

    # gone for good: a restart replays the tombstones
    wire.close()
    broker.stop()
    broker, wire = start()
    assert listed() == []
    assert describe(wire)[0].error_code == GROUP_ID_NOT_FOUND
