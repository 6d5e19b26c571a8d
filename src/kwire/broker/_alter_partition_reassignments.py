"""AlterPartitionReassignments (API 45, KIP-455): move partitions to other replicas.

Versions: v0 (Kafka 2.4) takes each partition's target replicas (null cancels a reassignment in
progress); v1 (Kafka 4.1, KIP-1102) adds ``AllowReplicationFactorChange`` (false: a target with
another number of replicas is refused with INVALID_REPLICATION_FACTOR), echoed in the response.

Follows ``ReplicationControlManager.alterPartitionReassignments``: unknown topics and partitions
are UNKNOWN_TOPIC_OR_PARTITION, a target is checked as a manual assignment
(``validateManualPartitionAssignment``: not empty, registered nodes, none twice), and a cancel
with nothing in progress is NO_REASSIGNMENT_IN_PROGRESS. Kafka adds the new replicas, waits for
them to join the ISR, then drops the old ones and elects a leader among the target. A kwire
partition has one replica over storage every node shares, so the move completes at once: the
target node leads the partition from a new leader epoch (``BrokerState.move_leader``), and
nothing is left in progress. A target of several replicas is refused (INVALID_REPLICATION_FACTOR:
kwire keeps one replica per partition), as is one on a stopped node (nothing could lead there).
"""

from __future__ import annotations

from typing import Any, Final

from kwire.broker._acl import CLUSTER, CLUSTER_NAME, authorize
from kwire.broker._admin import _ApiError, _check_manual_assignment
from kwire.broker._apis import register
from kwire.broker._context import RequestContext
from kwire.broker._state import BrokerState
from kwire.protocol import ErrorCode
from kwire.protocol.messages import (
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsResponse,
)

__all__ = ["handle_alter_partition_reassignments"]

RESPONSE: Final = AlterPartitionReassignmentsResponse
TOPIC_RESPONSE: Final = AlterPartitionReassignmentsResponse.ReassignableTopicResponse
PARTITION_RESPONSE: Final = AlterPartitionReassignmentsResponse.ReassignablePartitionResponse


def _reassign(
    state: BrokerState, topic: str, index: int, replicas: list[int] | None, allow_rf: bool
) -> None:
    """Move one partition, or raise ``_ApiError`` (``alterPartitionReassignment``)."""
    if topic not in state.topics:
        raise _ApiError(
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Unable to find a topic named {topic}."
        )
    partition = state.partition(topic, index)
    if partition is None:
        raise _ApiError(
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Unable to find partition {topic}:{index}."
        )
    if replicas is None:
        error = ErrorCode.NO_REASSIGNMENT_IN_PROGRESS
        raise _ApiError(error, error.message)
    target = _check_manual_assignment(state, replicas, None, index)
    if len(replicas) != 1:
        if not allow_rf:
            raise _ApiError(
                ErrorCode.INVALID_REPLICATION_FACTOR,
                f"The replication factor is changed from 1 to {len(replicas)}",
            )
        raise _ApiError(
            ErrorCode.INVALID_REPLICATION_FACTOR,
            f"Unable to reassign {topic}-{index} to {len(replicas)} replicas: kwire keeps one "
            "replica per partition.",
        )
    if target != partition.leader_id:
        state.move_leader(partition, target)


@register(45, 0, 1)
def handle_alter_partition_reassignments(
    state: BrokerState, ctx: RequestContext, request: AlterPartitionReassignmentsRequest
) -> Any:
    allow_rf = ctx.api_version < 1 or bool(request.allow_replication_factor_change)
    authorized = authorize(state, ctx, "ALTER", CLUSTER, CLUSTER_NAME)
    responses = []
    for topic in request.topics:
        parts = []
        for wanted in topic.partitions:
            error, message = ErrorCode.NONE, None
            try:
                if not authorized:
                    raise _ApiError(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
                _reassign(state, topic.name, wanted.partition_index, wanted.replicas, allow_rf)
            except _ApiError as exc:
                error, message = exc.error, exc.message
            parts.append(
                PARTITION_RESPONSE(
                    partition_index=wanted.partition_index,
                    error_code=int(error),
                    error_message=message,
                )
            )
        responses.append(TOPIC_RESPONSE(name=topic.name, partitions=parts))
    top = ErrorCode.NONE if authorized else ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    return RESPONSE(
        throttle_time_ms=0,
        allow_replication_factor_change=allow_rf,
        error_code=int(top),
        error_message=None,
        responses=responses,
    )
