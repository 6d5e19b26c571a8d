"""What the share-group state APIs (83-87) have in common before the share coordinator decides.

After ``KafkaApis.handle*ShareGroupState*Request`` and ``ShareCoordinatorService``: these are
inter-broker APIs (a share-partition leader or the group coordinator calls them through the
persister), so the caller needs CLUSTER_ACTION on the cluster, else every partition answers
CLUSTER_AUTHORIZATION_FAILED; an empty group id is INVALID_GROUP_ID on every partition. The
request's topics and partitions are answered in order, one result each, by the operation
(``_share_coordinator``) whose records are then applied together.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from kwire.broker._acl import CLUSTER, CLUSTER_NAME, authorize
from kwire.broker._context import RequestContext
from kwire.broker._share_coordinator import Changes, StateError, apply
from kwire.broker._share_service import share_coordinator
from kwire.broker._state import BrokerState
from kwire.protocol import ErrorCode

__all__ = ["answer_partitions", "error_result"]

#: (changes, (group, topic id, partition), the request's partition) -> its result
Operation = Callable[[Changes, tuple[str, uuid.UUID, int], Any], Any]


def error_result(result_class: Callable[..., Any]) -> Callable[[int, StateError | None], Any]:
    """The partition result of an API whose result is only an error (Initialize, Write,
    Delete): ``result(partition, problem)``, ``problem`` ``None`` for success."""

    def result(partition: int, problem: StateError | None) -> Any:
        return result_class(
            partition=partition,
            error_code=0 if problem is None else int(problem.error),
            error_message=None if problem is None else problem.message,
        )

    return result


def answer_partitions(
    state: BrokerState,
    ctx: RequestContext,
    request: Any,
    operation: Operation,
    failed: Callable[[int, StateError], Any],
    topic_result: Callable[[uuid.UUID, list[Any]], Any],
) -> list[Any]:
    """Each topic's partition results: ``operation``'s, or ``failed(partition, error)``."""
    refusal: StateError | None = None
    if not authorize(state, ctx, "CLUSTER_ACTION", CLUSTER, CLUSTER_NAME):
        refusal = StateError(
            ErrorCode.CLUSTER_AUTHORIZATION_FAILED, ErrorCode.CLUSTER_AUTHORIZATION_FAILED.message
        )
    elif not request.group_id:
        refusal = StateError(ErrorCode.INVALID_GROUP_ID, ErrorCode.INVALID_GROUP_ID.message)
    changes = Changes()
    results = []
    for topic in request.topics:
        partitions = []
        for p in topic.partitions:
            if refusal is not None:
                partitions.append(failed(p.partition, refusal))
                continue
            key = (request.group_id, topic.topic_id, p.partition)
            partitions.append(operation(changes, key, p))
        results.append(topic_result(topic.topic_id, partitions))
    if changes.records or changes.reset:
        apply(state, share_coordinator(state), changes)
    return results
