"""DeleteTopics (API 20): topics removed, by name or by id.

Versions: v1 (Kafka 1.0) a throttle time; v4 flexible; v5 an error message per topic and
THROTTLING_QUOTA_EXCEEDED (KIP-599); v6 topics named by id (KIP-516), answered with their ids.

Follows ``ControllerApis.deleteTopics``: internal topics are not refused (a KRaft controller
deletes ``__consumer_offsets`` when asked).
"""

from __future__ import annotations

import uuid
from typing import Any, Final

from kwire.broker._acl import (
    TOPIC,
    authorize,
)
from kwire.broker._admin import ZERO_UUID
from kwire.broker._apis import register
from kwire.broker._context import RequestContext
from kwire.broker._state import BrokerState, Topic
from kwire.protocol import ErrorCode
from kwire.protocol.messages import (
    DeleteTopicsRequest,
    DeleteTopicsResponse,
)

__all__ = ["handle_delete_topics"]


DELETE_TOPICS_RESPONSE: Final = DeleteTopicsResponse


DELETE_TOPICS_RESULT: Final = DeleteTopicsResponse.DeletableTopicResult


def _deleted(name: str | None, topic_id: uuid.UUID, error: ErrorCode, message: str | None) -> Any:
    return DELETE_TOPICS_RESULT(
        name=name, topic_id=topic_id, error_code=int(error), error_message=message
    )


@register(20, 0, 6)
def handle_delete_topics(
    state: BrokerState, ctx: RequestContext, request: DeleteTopicsRequest
) -> Any:
    """DeleteTopics (``ControllerApis.deleteTopics``): by name, or by id from v6.

    Internal topics are not refused: a KRaft controller deletes ``__consumer_offsets`` when
    asked (only the ZooKeeper-era paths refused it).
    """
    version = ctx.api_version
    wanted: list[tuple[str | None, uuid.UUID]] = (
        [(t.name, t.topic_id) for t in request.topics]
        if version >= 6
        else [(name, ZERO_UUID) for name in request.topic_names]
    )
    if (state.broker_config("delete.topic.enable") or "true").lower() != "true":
        # DeleteTopicsRequest.getErrorResponse: every topic, no message
        error = ErrorCode.INVALID_REQUEST if version < 3 else ErrorCode.TOPIC_DELETION_DISABLED
        return DELETE_TOPICS_RESPONSE(
            throttle_time_ms=0,
            responses=[_deleted(name, tid, error, None) for name, tid in wanted],
        )
    responses: list[Any] = []
    names: dict[str, None] = {}
    duplicate_names: dict[str, None] = {}
    ids: dict[uuid.UUID, None] = {}
    duplicate_ids: dict[uuid.UUID, None] = {}

    def add_name(name: str) -> None:
        if name in duplicate_names or name in names:
            duplicate_names[name] = None
            names.pop(name, None)
        else:
            names[name] = None

    for name, topic_id in wanted:
        if name is None:
            if topic_id == ZERO_UUID:
                responses.append(
                    _deleted(
                        None,
                        ZERO_UUID,
                        ErrorCode.INVALID_REQUEST,
                        "Neither topic name nor id were specified.",
                    )
                )
            elif topic_id in duplicate_ids or topic_id in ids:
                duplicate_ids[topic_id] = None
                ids.pop(topic_id, None)
            else:
                ids[topic_id] = None
        elif topic_id == ZERO_UUID:
            add_name(name)
        else:
            responses.append(
                _deleted(
                    name,
                    topic_id,
                    ErrorCode.INVALID_REQUEST,
                    "You may not specify both topic name and topic id.",
                )
            )
    for name in duplicate_names:
        responses.append(
            _deleted(name, ZERO_UUID, ErrorCode.INVALID_REQUEST, "Duplicate topic name.")
        )
    for topic_id in duplicate_ids:
        responses.append(_deleted(None, topic_id, ErrorCode.INVALID_REQUEST, "Duplicate topic id."))
    to_delete: dict[uuid.UUID, Topic] = {}
    for topic_id in ids:
        found = state.topics_by_id.get(topic_id)
        if found is None or not authorize(state, ctx, "DESCRIBE", TOPIC, found.name):
            responses.append(_deleted(None, topic_id, ErrorCode.UNKNOWN_TOPIC_ID, None))
        elif not authorize(state, ctx, "DELETE", TOPIC, found.name):
            error = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            responses.append(_deleted(None, topic_id, error, None))
        else:
            to_delete[topic_id] = found
    for name in names:
        found = state.topics.get(name)
        if not authorize(state, ctx, "DELETE", TOPIC, name):
            error = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            responses.append(_deleted(name, ZERO_UUID, error, None))
            continue
        if found is None:
            responses.append(_deleted(name, ZERO_UUID, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None))
            continue
        topic_id = found.topic_id
        if topic_id in duplicate_ids or topic_id in to_delete:
            duplicate_ids[topic_id] = None
            to_delete.pop(topic_id, None)
            responses.append(
                _deleted(
                    name,
                    topic_id,
                    ErrorCode.INVALID_REQUEST,
                    "The provided topic name maps to an ID that was already supplied.",
                )
            )
        else:
            to_delete[topic_id] = found
    for topic_id, topic in to_delete.items():
        state.delete_topic(topic.name)
        responses.append(_deleted(topic.name, topic_id, ErrorCode.NONE, None))
    return DELETE_TOPICS_RESPONSE(throttle_time_ms=0, responses=responses)
