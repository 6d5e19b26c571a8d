"""AlterReplicaLogDirs (API 34, KIP-113): move a broker's replicas between its log directories.

Versions: v0 (Kafka 1.1); v1 (2.0) changed only throttling (the response before the throttle);
v2 (2.6) is the flexible form. Kafka 4.0 removed v0 (KIP-896).

Follows ``KafkaApis.handleAlterReplicaLogDirsRequest`` and ``ReplicaManager.alterReplicaLogDirs``:
a directory that is not one of the broker's log dirs (compared as absolute paths, as
``LogManager.isLogDirOnline``) is LOG_DIR_NOT_FOUND; a partition unknown to the cluster is
UNKNOWN_TOPIC_OR_PARTITION, one this node holds no replica of REPLICA_NOT_AVAILABLE; the
directory a replica is in already is a move with nothing to do (NONE). kwire runs one log dir,
the data directory (``DescribeLogDirs`` reports the same path), so no replica ever moves.
"""

from __future__ import annotations

import os
from typing import Any, Final

from kwire.broker._acl import CLUSTER, CLUSTER_NAME, authorize
from kwire.broker._apis import register
from kwire.broker._context import RequestContext
from kwire.broker._routing import serving_node
from kwire.broker._state import BrokerState
from kwire.protocol import ErrorCode
from kwire.protocol.messages import AlterReplicaLogDirsRequest, AlterReplicaLogDirsResponse

__all__ = ["handle_alter_replica_log_dirs", "log_dirs"]

RESPONSE: Final = AlterReplicaLogDirsResponse
TOPIC_RESULT: Final = AlterReplicaLogDirsResponse.AlterReplicaLogDirTopicResult
PARTITION_RESULT: Final = AlterReplicaLogDirsResponse.AlterReplicaLogDirPartitionResult


def log_dirs(state: BrokerState) -> list[str]:
    """The node's log directories as absolute paths (``log.dirs``: the one data directory)."""
    return [os.path.abspath(state.path)]


def _alter(state: BrokerState, node: int, path: str, topic: str, index: int) -> ErrorCode:
    if path not in log_dirs(state):
        return ErrorCode.LOG_DIR_NOT_FOUND
    partition = state.partition(topic, index)
    if partition is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    if partition.leader_id != node:
        return ErrorCode.REPLICA_NOT_AVAILABLE  # NotLeaderOrFollower, kept for compatibility
    return ErrorCode.NONE  # already in ``path``: no future replica to create


@register(34, 0, 2)
def handle_alter_replica_log_dirs(
    state: BrokerState, ctx: RequestContext, request: AlterReplicaLogDirsRequest
) -> Any:
    authorized = authorize(state, ctx, "ALTER", CLUSTER, CLUSTER_NAME)
    node = serving_node(state, ctx)
    results: dict[str, list[Any]] = {}
    for wanted in request.dirs:
        for topic in wanted.topics:
            for index in topic.partitions:
                error = (
                    _alter(state, node, wanted.path, topic.name, index)
                    if authorized
                    else ErrorCode.CLUSTER_AUTHORIZATION_FAILED
                )
                results.setdefault(topic.name, []).append(
                    PARTITION_RESULT(partition_index=index, error_code=int(error))
                )
    return RESPONSE(
        throttle_time_ms=0,
        results=[
            TOPIC_RESULT(topic_name=name, partitions=parts) for name, parts in results.items()
        ],
    )
