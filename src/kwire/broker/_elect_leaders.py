"""ElectLeaders (API 43): elect the preferred (or, unclean, any) replica as a partition's leader.

Versions: v0 (Kafka 2.2, KIP-183 over the wire) elects preferred leaders only; v1 (2.4,
KIP-460) adds ``ElectionType`` (0 preferred, 1 unclean) and a top-level error code; v2 is the
flexible form. A null topic list means every partition, and then only the partitions an
election changed (or failed for) are reported.

Follows ``ReplicationControlManager.electLeaders``/``electLeader``: a partition whose leader is
its preferred replica (preferred) or that has a leader (unclean) answers ELECTION_NOT_NEEDED.
Every kwire partition has one replica, its leader, which moves with it (``_cluster``), so a
partition with a leader never needs an election; one without (every node stopped) has no
replica to elect.
"""

from __future__ import annotations

from typing import Any, Final

from kwire.broker._acl import CLUSTER, CLUSTER_NAME, authorize
from kwire.broker._apis import register
from kwire.broker._context import RequestContext
from kwire.broker._state import BrokerState
from kwire.protocol import ErrorCode
from kwire.protocol.messages import ElectLeadersRequest, ElectLeadersResponse

__all__ = ["handle_elect_leaders"]

RESPONSE: Final = ElectLeadersResponse
RESULT: Final = ElectLeadersResponse.ReplicaElectionResult
PARTITION: Final = ElectLeadersResponse.PartitionResult

PREFERRED: Final = 0  # ElectionType.PREFERRED
UNCLEAN: Final = 1  # ElectionType.UNCLEAN


def _elect(
    state: BrokerState, topic: str, index: int, election: int
) -> tuple[ErrorCode, str | None]:
    """(error, message) of one partition's election (``electLeader``)."""
    found = state.topics.get(topic)
    if found is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"No such topic as {topic}"
    partition = state.partition(topic, index)
    if partition is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"No such partition as {topic}-{index}"
    if partition.leader_id in state.live_brokers:
        # the leader is the one replica: preferred, and present
        return ErrorCode.ELECTION_NOT_NEEDED, ErrorCode.ELECTION_NOT_NEEDED.message
    error = (
        ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE
        if election == PREFERRED
        else ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE
    )
    return error, error.message


def _result(index: int, error: ErrorCode, message: str | None) -> Any:
    return PARTITION(partition_id=index, error_code=int(error), error_message=message)


@register(43, 0, 2)
def handle_elect_leaders(
    state: BrokerState, ctx: RequestContext, request: ElectLeadersRequest
) -> Any:
    election = request.election_type if ctx.api_version >= 1 else PREFERRED
    wanted = request.topic_partitions
    if not authorize(state, ctx, "ALTER", CLUSTER, CLUSTER_NAME):
        # KafkaApis.handleElectLeaders: every partition asked for carries the error
        error = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        return RESPONSE(
            throttle_time_ms=0,
            error_code=int(error) if ctx.api_version >= 1 else 0,  # a v1+ field
            replica_election_results=[
                RESULT(
                    topic=t.topic, partition_result=[_result(p, error, None) for p in t.partitions]
                )
                for t in wanted or []
            ],
        )
    if election not in (PREFERRED, UNCLEAN):
        return RESPONSE(
            throttle_time_ms=0,
            error_code=int(ErrorCode.INVALID_REQUEST),
            replica_election_results=[],
        )
    results = []
    if wanted is None:
        for topic in state.topics.values():
            parts = [
                _result(p.index, *found)
                for p in topic.partitions
                if (found := _elect(state, topic.name, p.index, election))[0]
                is not ErrorCode.ELECTION_NOT_NEEDED
            ]
            if parts:
                results.append(RESULT(topic=topic.name, partition_result=parts))
    else:
        for t in wanted:
            parts = [_result(p, *_elect(state, t.topic, p, election)) for p in t.partitions]
            results.append(RESULT(topic=t.topic, partition_result=parts))
    return RESPONSE(throttle_time_ms=0, error_code=0, replica_election_results=results)
