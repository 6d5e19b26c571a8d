"""Committed offsets: OffsetCommit (API 8), TxnOffsetCommit (28), OffsetFetch (9) and OffsetDelete
(47).

Versions: OffsetCommit v1 generation and member ids and a commit timestamp, v2 a retention time,
v5 no retention time (the broker's config), v6 leader epochs, v7 group instance ids (KIP-345), v8
flexible, v9 commits from KIP-848 members, v10 topics by id; TxnOffsetCommit v2 leader epochs, v3
member id, group instance id and generation (KIP-447), v4 TRANSACTION_ABORTABLE (KIP-890), v5
for transactions of version 2 (KIP-890); OffsetFetch v2 every offset of a group and a
top-level error, v6 flexible, v7 ``require_stable`` (KIP-447), v8 many groups, v9 KIP-848 member
epochs, v10 topics by id; OffsetDelete v0 only.

Follows ``KafkaApis.handleOffsetCommitRequest`` and its siblings: which errors are per partition
and which per request, then the group coordinator's ``OffsetMetadataManager`` decides. The ACLs
come first: in a cluster a group coordinated by another node gets NOT_COORDINATOR only where
Kafka's handler calls the coordinator (``_routing``), so a commit's partitions of unreadable or
unknown topics keep their errors (and a commit with none left never meets the coordinator), and
OffsetFetch v8+ answers group by group.
"""

from __future__ import annotations

from typing import Any, Final

from kwire.broker._acl import (
    GROUP,
    TOPIC,
    TRANSACTIONAL_ID,
    authorize,
)
from kwire.broker._apis import register
from kwire.broker._context import RequestContext
from kwire.broker._partition_check import partition_or_error
from kwire.broker._routing import GROUP_KEY, coordinated_elsewhere
from kwire.broker._state import BrokerState
from kwire.broker._txn_apis import add_group_partition_for_commit, uses_transaction_v2
from kwire.broker.group import (
    ConsumerGroup,
    GroupCoordinator,
    GroupError,
    OffsetAndMetadata,
    group_coordinator,
)
from kwire.protocol import ZERO_UUID, ErrorCode
from kwire.protocol.messages import (
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetDeleteRequest,
    OffsetDeleteResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    TxnOffsetCommitRequest,
    TxnOffsetCommitResponse,
)

__all__ = [
    "handle_offset_commit",
    "handle_offset_delete",
    "handle_offset_fetch",
    "handle_txn_offset_commit",
]


COMMIT_RESPONSE: Final = OffsetCommitResponse
COMMIT_TOPIC: Final = OffsetCommitResponse.OffsetCommitResponseTopic
COMMIT_PARTITION: Final = OffsetCommitResponse.OffsetCommitResponsePartition
FETCH_RESPONSE: Final = OffsetFetchResponse
FETCH_TOPIC: Final = OffsetFetchResponse.OffsetFetchResponseTopic
FETCH_PARTITION: Final = OffsetFetchResponse.OffsetFetchResponsePartition
FETCH_GROUP: Final = OffsetFetchResponse.OffsetFetchResponseGroup
FETCH_GROUP_TOPIC: Final = OffsetFetchResponse.OffsetFetchResponseTopics
FETCH_GROUP_PARTITION: Final = OffsetFetchResponse.OffsetFetchResponsePartitions
DELETE_OFFSETS_RESPONSE: Final = OffsetDeleteResponse
DELETE_OFFSETS_TOPIC: Final = OffsetDeleteResponse.OffsetDeleteResponseTopic
DELETE_OFFSETS_PARTITION: Final = OffsetDeleteResponse.OffsetDeleteResponsePartition
TXN_COMMIT_RESPONSE: Final = TxnOffsetCommitResponse
TXN_COMMIT_TOPIC: Final = TxnOffsetCommitResponse.TxnOffsetCommitResponseTopic
TXN_COMMIT_PARTITION: Final = TxnOffsetCommitResponse.TxnOffsetCommitResponsePartition


def _topic_error(state: BrokerState, name: str, index: int, ctx: RequestContext) -> ErrorCode:
    """READ on the topic, then the partition exists (``KafkaApis.handleOffsetCommitRequest``:
    ``metadataCache.contains``; the coordinator need not lead it)."""
    error, _ = partition_or_error(state, ctx, name, index, operation="READ", require_leader=False)
    return error


def _collect_offsets(
    state: BrokerState,
    coordinator: GroupCoordinator,
    topics: list[Any],
    names: list[str | None],
    leader_epochs: bool,
    commit_ts: Any,
    expire: Any,
    now: int,
    ctx: RequestContext,
) -> tuple[
    dict[tuple[str, int], OffsetAndMetadata],
    dict[tuple[int, int], ErrorCode],
    set[tuple[int, int]],
]:
    """Valid offsets by partition, errors by (topic index, partition position), and the
    positions whose metadata is too large (an error only when the group accepts the commit:
    ``OffsetMetadataManager`` checks the size after validating the group)."""
    max_metadata = coordinator.conf("offset.metadata.max.bytes")
    good: dict[tuple[str, int], OffsetAndMetadata] = {}
    errors: dict[tuple[int, int], ErrorCode] = {}
    oversized: set[tuple[int, int]] = set()
    for ti, (topic, name) in enumerate(zip(topics, names, strict=True)):
        for pi, p in enumerate(topic.partitions):
            if name is None:
                errors[ti, pi] = ErrorCode.UNKNOWN_TOPIC_ID
                continue
            error = _topic_error(state, name, p.partition_index, ctx)
            metadata = p.committed_metadata
            if error is not ErrorCode.NONE:
                errors[ti, pi] = error
                continue
            # Java's String.length(): UTF-16 code units
            if metadata is not None and len(metadata.encode("utf-16-le")) // 2 > max_metadata:
                oversized.add((ti, pi))
                continue
            ts = commit_ts(p)
            good[name, p.partition_index] = OffsetAndMetadata(
                p.committed_offset,
                p.committed_leader_epoch if leader_epochs else -1,
                metadata or "",
                ts,
                expire(ts),
            )
    return good, errors, oversized


class _NothingLeft(Exception):
    """No partition of a commit passed its topic checks: ``KafkaApis`` answers their errors
    without asking the coordinator."""


def _to_coordinator(
    state: BrokerState,
    ctx: RequestContext,
    topics: list[Any],
    errors: dict[tuple[int, int], ErrorCode],
    group_id: str,
) -> None:
    """After the ACLs, what Kafka's coordinator answers before the commit itself: nothing when no
    partition is left for it (``_NothingLeft``), NOT_COORDINATOR for the partitions left when
    another node coordinates the group (``GroupError``)."""
    if len(errors) == sum(len(t.partitions) for t in topics):
        raise _NothingLeft
    if coordinated_elsewhere(state, ctx, GROUP_KEY, group_id):
        raise GroupError(ErrorCode.NOT_COORDINATOR)


def _partition_error(
    errors: dict[tuple[int, int], ErrorCode],
    oversized: set[tuple[int, int]],
    failed: ErrorCode,
    at: tuple[int, int],
) -> int:
    """A partition's answer: its topic's error, else the group's, else too large metadata."""
    error = errors.get(at, failed)
    if error is ErrorCode.NONE and at in oversized:
        error = ErrorCode.OFFSET_METADATA_TOO_LARGE
    return int(error)


@register(8, 0, 10)
def handle_offset_commit(
    state: BrokerState, ctx: RequestContext, request: OffsetCommitRequest
) -> Any:
    """``KafkaApis.handleOffsetCommitRequest`` + ``OffsetMetadataManager.commitOffset``."""
    version = ctx.api_version
    coordinator = group_coordinator(state)
    now = state.now_ms()
    by_id = version >= 10
    names: list[str | None] = []
    for t in request.topics:
        if by_id:
            found = state.topics_by_id.get(t.topic_id)
            names.append(found.name if found is not None else None)
        else:
            names.append(t.name)
    retention = request.retention_time_ms if 2 <= version <= 4 else -1

    def commit_ts(p: Any) -> int:
        if version == 1 and p.commit_timestamp != -1:
            return int(p.commit_timestamp)
        return now

    def expire(ts: int) -> int:
        # OffsetAndMetadata.fromRequest: only a v2-4 retention time sets an expire timestamp
        return ts + retention if retention != -1 else -1

    good, errors, oversized = _collect_offsets(
        state, coordinator, request.topics, names, version >= 6, commit_ts, expire, now, ctx
    )
    try:
        if not authorize(state, ctx, "READ", GROUP, request.group_id):
            errors.clear()  # every partition: GROUP_AUTHORIZATION_FAILED
            raise GroupError(ErrorCode.GROUP_AUTHORIZATION_FAILED)
        _to_coordinator(state, ctx, request.topics, errors, request.group_id)
        group = coordinator.validate_offset_commit(
            request.group_id,
            request.generation_id_or_member_epoch if version >= 1 else -1,
            request.member_id if version >= 1 else "",
            request.group_instance_id if version >= 7 else None,
            version,
            False,
            now,
        )
    except GroupError as exc:
        failed = exc.error
    except _NothingLeft:
        failed = ErrorCode.NONE
    else:
        failed = ErrorCode.NONE
        coordinator.commit_offsets(group, good, now)
    topics = []
    for ti, t in enumerate(request.topics):
        partitions = [
            COMMIT_PARTITION(
                partition_index=p.partition_index,
                error_code=_partition_error(errors, oversized, failed, (ti, pi)),
            )
            for pi, p in enumerate(t.partitions)
        ]
        topics.append(
            COMMIT_TOPIC(
                name=t.name if not by_id else "",
                topic_id=t.topic_id if by_id else ZERO_UUID,
                partitions=partitions,
            )
        )
    return COMMIT_RESPONSE(throttle_time_ms=0, topics=topics)


@register(28, 0, 5)
def handle_txn_offset_commit(
    state: BrokerState, ctx: RequestContext, request: TxnOffsetCommitRequest
) -> Any:
    """``OffsetMetadataManager.commitTransactionalOffset``: staged until the marker."""
    version = ctx.api_version
    coordinator = group_coordinator(state)
    now = state.now_ms()
    good, errors, oversized = _collect_offsets(
        state,
        coordinator,
        request.topics,
        [t.name for t in request.topics],
        version >= 2,
        lambda p: now,
        lambda ts: -1,
        now,
        ctx,
    )
    failed = ErrorCode.NONE
    try:
        for allowed, denied in (
            (
                authorize(state, ctx, "WRITE", TRANSACTIONAL_ID, request.transactional_id),
                ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
            ),
            (
                authorize(state, ctx, "READ", GROUP, request.group_id),
                ErrorCode.GROUP_AUTHORIZATION_FAILED,
            ),
        ):
            if not allowed:
                errors.clear()
                raise GroupError(denied)
        if not request.group_id:  # GroupCoordinatorService.commitTransactionalOffsets
            raise GroupError(ErrorCode.INVALID_GROUP_ID)
        _to_coordinator(state, ctx, request.topics, errors, request.group_id)
        coordinator.validate_offset_commit(
            request.group_id,
            request.generation_id if version >= 3 else -1,
            request.member_id if version >= 3 else "",
            request.group_instance_id if version >= 3 else None,
            version,
            True,
            now,
        )
        if uses_transaction_v2(state, version, 5):  # KIP-890 part 2: no AddOffsetsToTxn
            added = add_group_partition_for_commit(
                state,
                request.transactional_id,
                request.group_id,
                request.producer_id,
                request.producer_epoch,
            )
            if added is not ErrorCode.NONE:
                errors.clear()
                raise GroupError(added)
    except GroupError as exc:
        failed = exc.error
    except _NothingLeft:
        pass
    else:
        coordinator.stage_txn_offsets(
            request.group_id, request.producer_id, request.producer_epoch, good, now
        )
    topics = [
        TXN_COMMIT_TOPIC(
            name=t.name,
            partitions=[
                TXN_COMMIT_PARTITION(
                    partition_index=p.partition_index,
                    error_code=_partition_error(errors, oversized, failed, (ti, pi)),
                )
                for pi, p in enumerate(t.partitions)
            ],
        )
        for ti, t in enumerate(request.topics)
    ]
    return TXN_COMMIT_RESPONSE(throttle_time_ms=0, topics=topics)


def _fetch_group(
    state: BrokerState,
    coordinator: GroupCoordinator,
    group_id: str,
    topics: list[Any] | None,
    by_id: bool,
    require_stable: bool,
    ctx: RequestContext | None = None,
) -> list[tuple[str | None, Any, list[tuple[int, OffsetAndMetadata | None, ErrorCode]]]]:
    """(topic name, topic id, rows) for one group of an OffsetFetch."""
    wanted: list[tuple[str, list[int] | None]] | None = None
    unknown_ids: list[tuple[Any, list[int]]] = []
    if topics is not None:
        wanted = []
        for t in topics:
            if by_id:
                found = state.topics_by_id.get(t.topic_id)
                if found is None:
                    unknown_ids.append((t.topic_id, list(t.partition_indexes)))
                    continue
                wanted.append((found.name, list(t.partition_indexes)))
            else:
                wanted.append((t.name, list(t.partition_indexes)))
    out: list[tuple[str | None, Any, list[tuple[int, OffsetAndMetadata | None, ErrorCode]]]] = []
    for name, rows in coordinator.fetch_offsets(group_id, wanted, require_stable):
        if ctx is not None and not authorize(state, ctx, "DESCRIBE", TOPIC, name):
            if wanted is None:
                continue  # all topics: the undescribable ones are left out
            rows = [(i, None, ErrorCode.TOPIC_AUTHORIZATION_FAILED) for i, _, _ in rows]
        topic = state.topics.get(name)
        if by_id and topic is None:
            continue  # a deleted topic has no id to answer with
        out.append((name, topic.topic_id if topic is not None else None, rows))
    for topic_id, indexes in unknown_ids:
        out.append((None, topic_id, [(i, None, ErrorCode.UNKNOWN_TOPIC_ID) for i in indexes]))
    return out


@register(9, 0, 10)
def handle_offset_fetch(
    state: BrokerState, ctx: RequestContext, request: OffsetFetchRequest
) -> Any:
    """``KafkaApis.handleOffsetFetchRequest``: one group up to v7, a batch of groups from v8."""
    version = ctx.api_version
    coordinator = group_coordinator(state)
    stable = version >= 7 and bool(request.require_stable)
    if version < 8:
        topics = request.topics
        if version < 2 and topics is None:
            topics = []
        # OffsetFetchResponse(groups, version): a group's error (the ACL's, the coordinator's
        # NOT_COORDINATOR) is the top-level error (v2+) with no topics, whatever was asked
        error = ErrorCode.NONE
        if not authorize(state, ctx, "DESCRIBE", GROUP, request.group_id):
            error = ErrorCode.GROUP_AUTHORIZATION_FAILED
        elif coordinated_elsewhere(state, ctx, GROUP_KEY, request.group_id):
            error = ErrorCode.NOT_COORDINATOR
        if error is not ErrorCode.NONE:
            return FETCH_RESPONSE(throttle_time_ms=0, topics=[], error_code=int(error))
        found = _fetch_group(state, coordinator, request.group_id, topics, False, stable, ctx)
        out_topics = [
            FETCH_TOPIC(
                name=name or "",  # None only for a topic asked by id (v10+)
                partitions=_committed_partitions(FETCH_PARTITION, rows),
            )
            for name, _, rows in found
        ]
        return FETCH_RESPONSE(throttle_time_ms=0, topics=out_topics, error_code=0)
    groups = []
    for g in request.groups:
        error = ErrorCode.NONE
        coordinator.expire_due(g.group_id, state.now_ms())
        holder = coordinator.groups.get(g.group_id)
        if not authorize(state, ctx, "DESCRIBE", GROUP, g.group_id):
            error = ErrorCode.GROUP_AUTHORIZATION_FAILED
        elif coordinated_elsewhere(state, ctx, GROUP_KEY, g.group_id):
            error = ErrorCode.NOT_COORDINATOR
        elif version >= 9 and isinstance(holder, ConsumerGroup):
            error = coordinator.consumer.validate_offset_fetch(holder, g.member_id, g.member_epoch)
        if error is not ErrorCode.NONE:
            groups.append(FETCH_GROUP(group_id=g.group_id, error_code=int(error), topics=[]))
            continue
        found = _fetch_group(state, coordinator, g.group_id, g.topics, version >= 10, stable, ctx)
        groups.append(
            FETCH_GROUP(
                group_id=g.group_id,
                error_code=0,
                topics=[
                    FETCH_GROUP_TOPIC(
                        name=name if version < 10 and name is not None else "",
                        topic_id=topic_id if version >= 10 else ZERO_UUID,
                        partitions=_committed_partitions(FETCH_GROUP_PARTITION, rows),
                    )
                    for name, topic_id, rows in found
                ],
            )
        )
    return FETCH_RESPONSE(throttle_time_ms=0, groups=groups)


@register(47, 0, 0)
def handle_offset_delete(
    state: BrokerState, ctx: RequestContext, request: OffsetDeleteRequest
) -> Any:
    """``KafkaApis.handleOffsetDeleteRequest``: DELETE on the group, then READ on each topic and
    the partition's existence; the partitions failing those checks are answered first (TOPIC_
    AUTHORIZATION_FAILED, UNKNOWN_TOPIC_OR_PARTITION), the coordinator's answers for the others
    merged in after them (``OffsetDeleteResponse.Builder``), unless the coordinator's top-level
    error replaces them all."""
    coordinator = group_coordinator(state)
    if not authorize(state, ctx, "DELETE", GROUP, request.group_id):
        error = int(ErrorCode.GROUP_AUTHORIZATION_FAILED)
        return DELETE_OFFSETS_RESPONSE(error_code=error, throttle_time_ms=0, topics=[])
    wanted: list[tuple[str, int]] = []
    answered: dict[str, list[Any]] = {}  # topic -> its partitions' answers, in Kafka's order
    for t in request.topics:
        for p in t.partitions:
            tp = (t.name, p.partition_index)
            error = _topic_error(state, *tp, ctx)
            if error is not ErrorCode.NONE:
                answered.setdefault(t.name, []).append(
                    DELETE_OFFSETS_PARTITION(
                        partition_index=p.partition_index, error_code=int(error)
                    )
                )
            else:
                wanted.append(tp)
    if coordinator.classic.request_error(request.group_id) is ErrorCode.NONE and (
        coordinated_elsewhere(state, ctx, GROUP_KEY, request.group_id)
    ):  # GroupCoordinatorService.deleteOffsets: an empty group id first, then the coordinator
        error = int(ErrorCode.NOT_COORDINATOR)
        return DELETE_OFFSETS_RESPONSE(error_code=error, throttle_time_ms=0, topics=[])
    group_error, errors = coordinator.delete_offsets(request.group_id, wanted, state.now_ms())
    if group_error is not ErrorCode.NONE:
        return DELETE_OFFSETS_RESPONSE(error_code=int(group_error), throttle_time_ms=0, topics=[])
    for name, index in wanted:
        answered.setdefault(name, []).append(
            DELETE_OFFSETS_PARTITION(
                partition_index=index,
                error_code=int(errors.get((name, index), ErrorCode.NONE)),
            )
        )
    topics = [DELETE_OFFSETS_TOPIC(name=name, partitions=ps) for name, ps in answered.items()]
    return DELETE_OFFSETS_RESPONSE(error_code=0, throttle_time_ms=0, topics=topics)


def _committed_partitions(cls: Any, rows: Any) -> list[Any]:
    """OffsetFetch's partition entries (the single-group shape before v8, per group from v8):
    the committed offset, leader epoch and metadata, or -1 and "" where nothing is committed."""
    return [
        cls(
            partition_index=index,
            committed_offset=om.offset if om else -1,
            committed_leader_epoch=om.leader_epoch if om else -1,
            metadata=om.metadata if om else "",
            error_code=int(error),
        )
        for index, om, error in rows
    ]
