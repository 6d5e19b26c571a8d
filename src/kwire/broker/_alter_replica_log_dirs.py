"""AlterReplicaLogDirs (API 34, KIP-113): move a broker's replicas between its log directories.

Versions: v0 (Kafka 1.1); v1 (2.0) changed only throttling (the response before the throttle);
v2 (2.6) is the flexible form. Kafka 4.0 removed v0 (KIP-896).

Follows ``KafkaApis.handleAlterReplicaLogDirsRequest`` and ``ReplicaManager.alterReplicaLogDirs``:
a directory that is not one of the broker's log dirs (compared as absolute paths, as
``LogManager.isLogDirOnline``) is LOG_DIR_NOT_FOUND, an offline one KAFKA_STORAGE_ERROR; a
partition unknown to the cluster is UNKNOWN_TOPIC_OR_PARTITION, one this node holds no replica of
REPLICA_NOT_AVAILABLE; the directory a replica is in already is a move with nothing to do (NONE).
The log directories are the data directory and the other ``log.dirs`` entries (JBOD); a move to
another one really moves the log: Kafka copies into a ``-future`` replica and swaps it in when it
has caught up, kwire closes the log, moves its folder and reopens it there before answering
(``BrokerState.move_to_log_dir``), so DescribeLogDirs shows it in its new directory at once.
"""

from __future__ import annotations

import os
from typing import Any, Final

from kwire.broker._acl import CLUSTER, CLUSTER_NAME, authorize
from kwire.broker._apis import register
from kwire.broker._context import RequestContext
from kwire.broker._partition_check import partition_or_error
from kwire.broker._state import BrokerState
from kwire.errors import KafkaStorageError
from kwire.protocol import ErrorCode
from kwire.protocol.messages import AlterReplicaLogDirsRequest, AlterReplicaLogDirsResponse

__all__ = ["handle_alter_replica_log_dirs", "log_dirs"]

RESPONSE: Final = AlterReplicaLogDirsResponse
TOPIC_RESULT: Final = AlterReplicaLogDirsResponse.AlterReplicaLogDirTopicResult
PARTITION_RESULT: Final = AlterReplicaLogDirsResponse.AlterReplicaLogDirPartitionResult


def log_dirs(state: BrokerState) -> list[str]:
    """The node's log directories as absolute paths (the data directory, then ``log.dirs``)."""
    return [os.path.abspath(d.path) for d in state.data_dirs]


def _alter(state: BrokerState, ctx: RequestContext, path: str, topic: str, index: int) -> ErrorCode:
    target = next((d for d in state.data_dirs if os.path.abspath(d.path) == path), None)
    if target is None:
        return ErrorCode.LOG_DIR_NOT_FOUND
    if target.offline:
        return ErrorCode.KAFKA_STORAGE_ERROR
    # authorised on the cluster by the handler; a node hosts the replicas it leads
    error, partition = partition_or_error(state, ctx, topic, index, operation=None)
    if error is ErrorCode.NOT_LEADER_OR_FOLLOWER:
        return ErrorCode.REPLICA_NOT_AVAILABLE  # kept for compatibility, as Kafka
    if partition is None or error is not ErrorCode.NONE:
        return error
    try:
        state.move_to_log_dir(partition, target)
    except KafkaStorageError:
        return ErrorCode.KAFKA_STORAGE_ERROR
    return ErrorCode.NONE


@register(34, 0, 2)
def handle_alter_replica_log_dirs(
    state: BrokerState, ctx: RequestContext, request: AlterReplicaLogDirsRequest
) -> Any:
    authorized = authorize(state, ctx, "ALTER", CLUSTER, CLUSTER_NAME)
    results: dict[str, list[Any]] = {}
    for wanted in request.dirs:
        for topic in wanted.topics:
            for index in topic.partitions:
                error = (
                    _alter(state, ctx, wanted.path, topic.name, index)
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
