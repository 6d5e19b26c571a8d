"""ListPartitionReassignments (API 46, KIP-455): the reassignments in progress.

Versions: v0 (Kafka 2.4) is the only one: all ongoing reassignments (null topics) or those of
the partitions named; each with its replicas, adding and removing replicas.

Follows ``ReplicationControlManager.listPartitionReassignments``: topics that do not exist are
left out. A kwire reassignment completes when it is made (``_alter_partition_reassignments``:
the storage is shared, there is nothing to copy), so none is ever in progress and the list is
empty, as Kafka's is once its reassignments finish.
"""

from __future__ import annotations

from typing import Any, Final

from kwire.broker._acl import CLUSTER, CLUSTER_NAME, authorize
from kwire.broker._apis import register
from kwire.broker._context import RequestContext
from kwire.broker._state import BrokerState
from kwire.protocol import ErrorCode
from kwire.protocol.messages import (
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsResponse,
)

__all__ = ["handle_list_partition_reassignments"]

RESPONSE: Final = ListPartitionReassignmentsResponse


@register(46, 0, 0)
def handle_list_partition_reassignments(
    state: BrokerState, ctx: RequestContext, request: ListPartitionReassignmentsRequest
) -> Any:
    if not authorize(state, ctx, "DESCRIBE", CLUSTER, CLUSTER_NAME):
        error = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        return RESPONSE(
            throttle_time_ms=0, error_code=int(error), error_message=error.message, topics=[]
        )
    return RESPONSE(throttle_time_ms=0, error_code=0, error_message=None, topics=[])
