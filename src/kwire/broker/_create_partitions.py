"""CreatePartitions (API 37): more partitions for existing topics.

Versions: v1 (Kafka 2.0) the same as v0 (the throttle applied after the answer); v2 flexible; v3
may answer THROTTLING_QUOTA_EXCEEDED (KIP-599).

Follows ``ControllerApis.createPartitions`` and ``ReplicationControlManager``: a count that does
not grow the topic, or a manual assignment that does not fit a one-broker cluster, is refused
with Kafka's messages (the assignment rules in ``_admin``).
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Final

from kwire.broker._acl import (
    TOPIC,
    authorize,
)
from kwire.broker._admin import _ApiError, _check_manual_assignment
from kwire.broker._apis import register
from kwire.broker._context import RequestContext
from kwire.broker._state import BrokerState, Topic
from kwire.protocol import ErrorCode
from kwire.protocol.messages import (
    CreatePartitionsRequest,
    CreatePartitionsResponse,
)

__all__ = ["handle_create_partitions"]


CREATE_PARTITIONS_RESPONSE: Final = CreatePartitionsResponse


CREATE_PARTITIONS_RESULT: Final = CreatePartitionsResponse.CreatePartitionsTopicResult


def _check_new_partitions(state: BrokerState, wanted: Any) -> tuple[Topic, list[int] | None]:
    """The topic and the leaders of the new partitions when ``wanted`` assigns them
    (``ReplicationControlManager.createPartitions``)."""
    topic = state.topics.get(wanted.name)
    if topic is None:
        raise _ApiError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    current = len(topic.partitions)
    if wanted.count == current:
        raise _ApiError(ErrorCode.INVALID_PARTITIONS, f"Topic already has {current} partition(s).")
    if wanted.count < current:
        raise _ApiError(
            ErrorCode.INVALID_PARTITIONS,
            f"The topic {wanted.name} currently has {current} partition(s); {wanted.count} "
            "would not be an increase.",
        )
    additional = wanted.count - current
    if wanted.assignments is not None:
        if len(wanted.assignments) != additional:
            raise _ApiError(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                f"Attempted to add {additional} additional partition(s), but only "
                f"{len(wanted.assignments)} assignment(s) were specified.",
            )
        # Every partition of a kwire topic has one replica: the factor new ones must match.
        return topic, [
            _check_manual_assignment(state, assignment.broker_ids, 1, current + i)
            for i, assignment in enumerate(wanted.assignments)
        ]
    return topic, None


@register(37, 0, 3)
def handle_create_partitions(
    state: BrokerState, ctx: RequestContext, request: CreatePartitionsRequest
) -> Any:
    """CreatePartitions (``ControllerApis.createPartitions``, ``ReplicationControlManager``)."""
    counts = Counter(t.name for t in request.topics)
    results = [
        CREATE_PARTITIONS_RESULT(
            name=name,
            error_code=int(ErrorCode.INVALID_REQUEST),
            error_message="Duplicate topic name.",
        )
        for name, count in counts.items()
        if count > 1
    ]
    for wanted in request.topics:
        if counts[wanted.name] > 1:
            continue
        if not authorize(state, ctx, "ALTER", TOPIC, wanted.name):
            error = int(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
            results.append(
                CREATE_PARTITIONS_RESULT(name=wanted.name, error_code=error, error_message=None)
            )
            continue
        try:
            topic, leaders = _check_new_partitions(state, wanted)
            if not request.validate_only:
                state.create_partitions(topic.name, wanted.count, leaders)
        except _ApiError as exc:
            results.append(
                CREATE_PARTITIONS_RESULT(
                    name=wanted.name, error_code=int(exc.error), error_message=exc.message
                )
            )
            continue
        results.append(CREATE_PARTITIONS_RESULT(name=wanted.name, error_code=0, error_message=None))
    return CREATE_PARTITIONS_RESPONSE(throttle_time_ms=0, results=results)
