"""Wiring of the share coordinator (``_share_group``) into a broker's state.

One ``ShareCoordinator`` per broker state, made on first use with the broker's share-group
settings; a ticker (every 100 ms, ``BrokerState.add_ticker``) removes members whose session timed
out and releases records whose acquisition lock ran out, and wakes the share fetches parked on
the group (key ``("share", group_id)``).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any, Final

from kwire.broker._context import RequestContext
from kwire.broker._share_group import DEFAULTS, ShareCoordinator
from kwire.broker._share_partition import RELEASE, RENEW
from kwire.broker._state import BrokerState
from kwire.protocol import ErrorCode

__all__ = ["acknowledge", "client_host", "share_coordinator", "share_key", "topic_metadata"]

SERVICE: Final = "share"


def share_key(group_id: str) -> tuple[str, str]:
    """The key parked share fetches of ``group_id`` wait on (records released)."""
    return (SERVICE, group_id)


def topic_metadata(state: BrokerState) -> dict[str, tuple[uuid.UUID, int]]:
    """Topic name -> (topic id, partition count) of the topics a share group can subscribe to."""
    return {
        t.name: (t.topic_id, len(t.partitions)) for t in state.topics.values() if not t.internal
    }


def client_host(ctx: RequestContext) -> str:
    """Kafka's ``"/" + clientAddress.getHostAddress``."""
    host = ctx.client_address.rsplit(":", 1)[0] if ctx.client_address else "127.0.0.1"
    return "/" + host


def share_coordinator(state: BrokerState) -> ShareCoordinator:
    found = state.services.get(SERVICE)
    if isinstance(found, ShareCoordinator):
        return found
    conf = {k: state.static_config[k] for k in DEFAULTS if k in state.static_config}
    coordinator = ShareCoordinator(conf, released=lambda gid: state.notify(share_key(gid)))
    state.services[SERVICE] = coordinator

    def tick(now_ms: int) -> None:
        coordinator.expire(now_ms, topic_metadata(state))
        coordinator.expire_locks(now_ms)

    state.add_ticker(tick)
    return coordinator


def acknowledge(
    state: BrokerState,
    coordinator: ShareCoordinator,
    group_id: str,
    member_id: str,
    topic_id: uuid.UUID,
    index: int,
    batches: Iterable[Any],
    renew: bool,
) -> ErrorCode:
    """Apply one partition's acknowledgement batches (``SharePartitionManager.acknowledge``):
    the first error stops the partition's remaining batches. RENEW needs ``IsRenewAck`` (v2)."""
    topic = state.topics_by_id.get(topic_id)
    if topic is None:
        return ErrorCode.UNKNOWN_TOPIC_ID
    if not 0 <= index < len(topic.partitions):
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    partition = coordinator.partitions.get((group_id, topic_id, index))
    if partition is None:
        return ErrorCode.INVALID_RECORD_STATE
    released = False
    error = ErrorCode.NONE
    for batch in batches:
        types = list(batch.acknowledge_types)
        if not renew and RENEW in types:
            error = ErrorCode.INVALID_REQUEST
            break
        error = partition.acknowledge(
            member_id, batch.first_offset, batch.last_offset, types, state.now_ms()
        )
        if error is not ErrorCode.NONE:
            break
        released = released or RELEASE in types
    if released:
        state.notify(share_key(group_id))
    return error


# --- what the classic group APIs see of share groups (ListGroups, DescribeGroups, DeleteGroups) -


def _existing(state: BrokerState) -> ShareCoordinator | None:
    found = state.services.get(SERVICE)
    return found if isinstance(found, ShareCoordinator) else None


def share_group_exists(state: BrokerState, group_id: str) -> bool:
    found = _existing(state)
    return found is not None and group_id in found.groups


def list_share_groups(state: BrokerState) -> list[tuple[str, str]]:
    """(group id, state) of every share group."""
    found = _existing(state)
    return [] if found is None else [(g.group_id, g.state) for g in found.groups.values()]


def delete_share_group(state: BrokerState, group_id: str) -> ErrorCode:
    found = _existing(state)
    return ErrorCode.GROUP_ID_NOT_FOUND if found is None else found.delete_group(group_id)
