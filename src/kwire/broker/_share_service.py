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

from kwire.broker import _metadata_image as mimage
from kwire.broker._apis import on_startup
from kwire.broker._context import RequestContext
from kwire.broker._partition_check import partition_or_error
from kwire.broker._share_coordinator import (
    Changes,
    apply,
    delete_state,
    on_topic_deleted,
    write_state,
)
from kwire.broker._share_group import DEFAULTS, GROUP_CONFIG_DEFAULTS, ShareCoordinator
from kwire.broker._share_partition import RELEASE, RENEW
from kwire.broker._share_state import STATE_TOPIC, replay, state_batches
from kwire.broker._state import BrokerState, Topic
from kwire.protocol import ErrorCode

__all__ = [
    "GROUP_RESOURCE",
    "acknowledge",
    "alter_group_configs",
    "client_host",
    "delete_share_group",
    "describe_group_configs",
    "flush_share_state",
    "group_config",
    "list_share_groups",
    "share_coordinator",
    "share_group_exists",
    "share_key",
    "topic_metadata",
]

SERVICE: Final = "share"
Key = tuple[str, uuid.UUID, int]


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
    found = state.services.share
    if found is not None:
        return found
    conf = {k: state.static_config[k] for k in DEFAULTS if k in state.static_config}
    coordinator = ShareCoordinator(conf, released=lambda gid: state.notify(share_key(gid)))
    state.services.share = coordinator
    for (kind, group_id), configs in state.metadata_image.configs.items():
        duration = configs.get("share.record.lock.duration.ms")
        if kind == GROUP_RESOURCE and duration is not None:
            coordinator.set_lock_duration(group_id, int(duration))

    def tick(now_ms: int) -> None:
        coordinator.expire(now_ms, topic_metadata(state))
        coordinator.expire_locks(now_ms)
        flush_share_state(state)

    state.add_ticker(tick)

    def topic_deleted(topic: Topic) -> None:
        changes = Changes()
        on_topic_deleted(coordinator, changes, topic.topic_id)
        if changes.records or changes.reset:
            apply(state, coordinator, changes)

    state.on_topic_deleted(topic_deleted)
    return coordinator


def acknowledge(
    state: BrokerState,
    ctx: RequestContext,
    coordinator: ShareCoordinator,
    group_id: str,
    member_id: str,
    topic_id: uuid.UUID,
    index: int,
    batches: Iterable[Any],
    renew: bool,
) -> ErrorCode:
    """Apply one partition's acknowledgement batches (``SharePartitionManager.acknowledge``):
    the first error stops the partition's remaining batches. RENEW needs ``IsRenewAck`` (v2).

    The topic needs READ, as for fetching (``KafkaApis.handleAcknowledgements``, for both
    ShareAcknowledge and ShareFetch's piggy-backed acknowledgements)."""
    topic = state.topics_by_id.get(topic_id)
    error, _ = partition_or_error(
        state,
        ctx,
        None if topic is None else topic.name,
        index,
        operation="READ",
        by_id=True,
        require_leader=False,
    )
    if error is not ErrorCode.NONE:
        return error
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
    return state.services.share


def share_group_exists(state: BrokerState, group_id: str) -> bool:
    found = _existing(state)
    return found is not None and group_id in found.groups


def list_share_groups(state: BrokerState) -> list[tuple[str, str]]:
    """(group id, state) of every share group."""
    found = _existing(state)
    return [] if found is None else [(g.group_id, g.state) for g in found.groups.values()]


def delete_share_group(state: BrokerState, group_id: str) -> ErrorCode:
    found = _existing(state)
    if found is None:
        return ErrorCode.GROUP_ID_NOT_FOUND
    error = found.delete_group(group_id)
    if error is ErrorCode.NONE:
        _delete_state(state, found, group_id)
    return error


# --- group configs (``GroupConfig``): IncrementalAlterConfigs / DescribeConfigs on GROUP --------

#: ``ConfigResource.Type.GROUP``: the resource type of group configs on the wire and in the
#: metadata log's ConfigRecords, where Kafka keeps them (and so does kwire: they survive restarts).
GROUP_RESOURCE: Final = 32
_RESETS: Final = ("latest", "earliest")


def group_config(state: BrokerState, group_id: str, name: str) -> str:
    """A group config of ``group_id``: its override, else the default."""
    found = state.metadata_image.configs.get((GROUP_RESOURCE, group_id), {})
    value = found.get(name)
    if value is not None:
        return value
    if name == "share.record.lock.duration.ms":
        return str(share_coordinator(state).conf("group.share.record.lock.duration.ms"))
    return GROUP_CONFIG_DEFAULTS[name]


def _check_group_config(state: BrokerState, name: str, value: str | None) -> str | None:
    """Kafka's ``GroupConfig.validate`` wording for a bad name or value, else None."""
    if name not in (*GROUP_CONFIG_DEFAULTS, "share.record.lock.duration.ms"):
        return f"Unknown group config name: {name}"
    if value is None:
        return None
    if name == "share.auto.offset.reset" and value not in _RESETS:
        return f"Invalid value {value} for configuration {name}: String must be one of: " + (
            ", ".join(_RESETS)
        )
    if name == "share.isolation.level" and value not in ("read_committed", "read_uncommitted"):
        return (
            f"Invalid value {value} for configuration {name}: String must be one of: "
            "read_committed, read_uncommitted"
        )
    if name == "share.record.lock.duration.ms":
        lo = int(state.static_config.get("group.share.min.record.lock.duration.ms", "15000"))
        hi = int(state.static_config.get("group.share.max.record.lock.duration.ms", "60000"))
        try:
            number = int(value)
        except ValueError:
            return f"Invalid value {value} for configuration {name}: Not a number of type INT"
        if not lo <= number <= hi:
            return f"{name} must be greater than or equal to {lo} and less than or equal to {hi}"
    return None


def alter_group_configs(
    state: BrokerState,
    group_id: str,
    ops: Iterable[tuple[int, str, str | None]],
    validate_only: bool,
) -> str | None:
    """IncrementalAlterConfigs of a GROUP resource: ``ops`` as (operation, name, value) with SET 0
    and DELETE 1 (APPEND and SUBTRACT need LIST configs; group configs have none). The error
    message (INVALID_CONFIG), or None once applied."""
    current = dict(state.metadata_image.configs.get((GROUP_RESOURCE, group_id), {}))
    new = dict(current)
    for operation, name, value in ops:
        if operation not in (0, 1):
            return f"Can't APPEND or SUBTRACT to key {name} because its type is not LIST."
        problem = _check_group_config(state, name, value if operation == 0 else None)
        if problem is not None:
            return problem
        if operation == 0 and value is not None:
            new[name] = value
        else:
            new.pop(name, None)
    if not validate_only and new != current:
        state.append_metadata(mimage.config_records(GROUP_RESOURCE, group_id, current, new))
        coordinator = share_coordinator(state)
        if "share.record.lock.duration.ms" in new or "share.record.lock.duration.ms" in current:
            duration = int(group_config(state, group_id, "share.record.lock.duration.ms"))
            coordinator.set_lock_duration(group_id, duration)
    return None


def describe_group_configs(state: BrokerState, group_id: str) -> list[tuple[str, str, bool]]:
    """(name, value, is default) of every group config kwire serves."""
    found = state.metadata_image.configs.get((GROUP_RESOURCE, group_id), {})
    names = sorted((*GROUP_CONFIG_DEFAULTS, "share.record.lock.duration.ms"))
    return [(n, group_config(state, group_id, n), n not in found) for n in names]


# --- persistence: __share_group_state (``_share_state``) ---------------------------------------


def flush_share_state(state: BrokerState) -> None:
    """Write a snapshot of every share partition that changed since its last one (acknowledged,
    released, initialized): what a restart must not lose. The leader writes its whole in-flight
    state through the share coordinator's ``write_state``, as Kafka's leader calls the persister."""
    coordinator = share_coordinator(state)
    changes = Changes()
    for key, share in coordinator.partitions.items():
        if not share.initialized or coordinator.written.get(key) == share.changes:
            continue
        stored = coordinator.stored.get(key)
        topic = state.topics_by_id.get(key[1])
        leader_epoch = (
            topic.partitions[key[2]].leader_epoch
            if topic is not None and key[2] < len(topic.partitions)
            else 0
        )
        problem = write_state(
            state,
            coordinator,
            changes,
            key,
            state_epoch=0 if stored is None else stored.state_epoch,
            leader_epoch=max(leader_epoch, -1 if stored is None else stored.leader_epoch),
            start_offset=share.start_offset,
            batches=state_batches(share),
            replace=True,
        )
        if problem is None:
            coordinator.written[key] = share.changes
    if changes.records:
        apply(state, coordinator, changes)


def _delete_state(state: BrokerState, coordinator: ShareCoordinator, group_id: str) -> None:
    changes = Changes()
    for key in [k for k in coordinator.stored if k[0] == group_id]:
        delete_state(state, coordinator, changes, key)
    apply(state, coordinator, changes)


@on_startup
def _load_share_state(state: BrokerState) -> None:
    """Replay ``__share_group_state`` when the broker starts (``ShareCoordinatorShard.replay``):
    share partitions then resume where they were."""
    topic = state.topics.get(STATE_TOPIC)
    if topic is None:
        return
    coordinator = share_coordinator(state)
    for partition in topic.partitions:
        for batch in partition.log.iter_batches():
            if batch.is_control:
                continue
            for record in batch:
                if record.key is not None:
                    replay(
                        coordinator.stored,
                        bytes(record.key),
                        None if record.value is None else bytes(record.value),
                    )
