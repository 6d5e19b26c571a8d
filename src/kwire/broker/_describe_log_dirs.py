"""DescribeLogDirs (API 35): the node's log directories, their sizes and the replicas in each.

Versions: v1 (Kafka 2.0) the same as v0 (the throttle applied after the answer); v2 flexible; v3
a top-level error code; v4 (KIP-827) each directory's total and usable bytes.

Follows ``ReplicaManager.describeLogDirs``: the data directory, then the other ``log.dirs``.
"""

from __future__ import annotations

import logging
from typing import Any, Final

from kwire.broker._acl import (
    CLUSTER,
    authorize,
)
from kwire.broker._alter_replica_log_dirs import log_dirs
from kwire.broker._apis import register
from kwire.broker._context import RequestContext
from kwire.broker._routing import serving_node
from kwire.broker._state import BrokerState
from kwire.protocol import ErrorCode
from kwire.protocol.messages import (
    DescribeLogDirsRequest,
    DescribeLogDirsResponse,
)

log = logging.getLogger("kwire.broker")

__all__ = ["handle_describe_log_dirs"]


DESCRIBE_LOG_DIRS_RESPONSE: Final = DescribeLogDirsResponse


DESCRIBE_LOG_DIRS_RESULT: Final = DescribeLogDirsResponse.DescribeLogDirsResult


DESCRIBE_LOG_DIRS_TOPIC: Final = DescribeLogDirsResponse.DescribeLogDirsTopic


DESCRIBE_LOG_DIRS_PARTITION: Final = DescribeLogDirsResponse.DescribeLogDirsPartition


@register(35, 0, 5)
def handle_describe_log_dirs(
    state: BrokerState, ctx: RequestContext, request: DescribeLogDirsRequest
) -> Any:
    """DescribeLogDirs (``ReplicaManager.describeLogDirs``): every log directory of the node (the
    data directory, then the other ``log.dirs``) with its sizes and the replicas this node holds
    in it (in an in-process cluster, the partitions it leads)."""
    if not authorize(state, ctx, "DESCRIBE", CLUSTER, "kafka-cluster"):
        error = int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
        return DESCRIBE_LOG_DIRS_RESPONSE(throttle_time_ms=0, error_code=error, results=[])
    node = serving_node(state, ctx)
    wanted: set[tuple[str, int]] | None = None
    if request.topics is not None:
        wanted = {(t.topic, p) for t in request.topics for p in t.partitions}
    results = []
    for data_dir, path in zip(state.data_dirs, log_dirs(state), strict=True):
        topics = []
        for topic in state.topics.values():
            parts = [
                DESCRIBE_LOG_DIRS_PARTITION(
                    partition_index=p.index,
                    partition_size=p.log.size_in_bytes(),
                    offset_lag=0,
                    is_future_key=False,
                )
                for p in topic.partitions
                if p.leader_id == node
                and state.log_dir_of(p) is data_dir
                and (wanted is None or (topic.name, p.index) in wanted)
            ]
            if parts:
                topics.append(DESCRIBE_LOG_DIRS_TOPIC(name=topic.name, partitions=parts))
        try:
            if data_dir.offline:
                raise OSError(path)
            total_bytes, usable_bytes = data_dir.disk_usage()
        except OSError:
            results.append(
                DESCRIBE_LOG_DIRS_RESULT(
                    error_code=int(ErrorCode.KAFKA_STORAGE_ERROR), log_dir=path, topics=[]
                )
            )
            continue
        results.append(
            DESCRIBE_LOG_DIRS_RESULT(
                error_code=0,
                log_dir=path,
                topics=topics,
                total_bytes=total_bytes,
                usable_bytes=usable_bytes,
                is_cordoned=False,
            )
        )
    return DESCRIBE_LOG_DIRS_RESPONSE(throttle_time_ms=0, error_code=0, results=results)
