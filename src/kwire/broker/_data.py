"""Handlers of the data path: Produce, ListOffsets, InitProducerId, OffsetForLeaderEpoch
(Fetch, Metadata and ApiVersions have their own modules).

Each follows the matching ``KafkaApis.handle*`` method of Kafka 3.9 and ``ReplicaManager`` for
what happens per partition; each partition has one replica, its leader, so its ISR is the leader
and an append is replicated (the high watermark moves) as soon as the log has it, whatever
``acks`` asks for. In an in-process cluster a partition request to a node that does not lead the
partition gets NOT_LEADER_OR_FOLLOWER (``_routing``).
"""

from __future__ import annotations

import functools
import struct
import uuid
from collections.abc import Callable
from typing import Any, Final

from kwire._lazy import lazy_dataclass
from kwire.broker._acl import (
    CLUSTER,
    TOPIC,
    TRANSACTIONAL_ID,
    authorize,
    authorize_any,
)
from kwire.broker._apis import CLOSE_CONNECTION, register
from kwire.broker._context import RequestContext
from kwire.broker._partition_check import partition_or_error
from kwire.broker._routing import node_endpoints
from kwire.broker._state import BrokerState, Partition, Topic
from kwire.errors import DecompressedSizeError, KwireError
from kwire.log.storage import KafkaStorageError, ProducerStateError
from kwire.protocol import ErrorCode
from kwire.protocol.messages import (
    InitProducerIdRequest,
    InitProducerIdResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
    ProduceRequest,
    ProduceResponse,
)
from kwire.records import DEFAULT_MAX_DECOMPRESSED_SIZE, AppendError, AppendResult

__all__ = [
    "Prevalidated",
    "handle_init_producer_id",
    "handle_list_offsets",
    "handle_offset_for_leader_epoch",
    "handle_produce",
    "topic_by_id_or_name",
    "validation_jobs",
]

PRODUCE: Final = 0
_INT32: Final = struct.Struct(">i")

PRODUCE_RESPONSE: Final = ProduceResponse
PRODUCE_TOPIC: Final = ProduceResponse.TopicProduceResponse
PRODUCE_PARTITION: Final = ProduceResponse.PartitionProduceResponse
PRODUCE_RECORD_ERROR: Final = ProduceResponse.BatchIndexAndErrorMessage
PRODUCE_CURRENT_LEADER: Final = ProduceResponse.LeaderIdAndEpoch
PRODUCE_NODE_ENDPOINT: Final = ProduceResponse.NodeEndpoint
LIST_OFFSETS_RESPONSE: Final = ListOffsetsResponse
LIST_OFFSETS_TOPIC: Final = ListOffsetsResponse.ListOffsetsTopicResponse
LIST_OFFSETS_PARTITION: Final = ListOffsetsResponse.ListOffsetsPartitionResponse
INIT_PRODUCER_ID_RESPONSE: Final = InitProducerIdResponse
EPOCH_RESPONSE: Final = OffsetForLeaderEpochResponse
EPOCH_TOPIC: Final = OffsetForLeaderEpochResponse.OffsetForLeaderTopicResult
EPOCH_PARTITION: Final = OffsetForLeaderEpochResponse.EpochEndOffset

# ListOffsets special timestamps (Kafka's ListOffsetsRequest constants)
LATEST: Final = -1
EARLIEST: Final = -2
MAX_TIMESTAMP: Final = -3
EARLIEST_LOCAL: Final = -4
LATEST_TIERED: Final = -5

READ_COMMITTED: Final = 1


# --- shared rules -----------------------------------------------------------------------------


def topic_by_id_or_name(
    state: BrokerState, name: str | None, topic_id: uuid.UUID | None, by_id: bool
) -> Topic | None:
    if by_id:
        return state.topics_by_id.get(topic_id) if topic_id is not None else None
    return state.topics.get(name or "")


# --- Produce ----------------------------------------------------------------------------------


def _produce_error(index: int, error: ErrorCode, message: str | None = None) -> Any:
    return PRODUCE_PARTITION(
        index=index,
        error_code=int(error),
        base_offset=-1,
        log_append_time_ms=-1,
        log_start_offset=-1,
        record_errors=[],
        error_message=message,
    )


@lazy_dataclass(frozen=True)
class Prevalidated:
    """One partition's Produce records validated ahead, off the event loop: what
    ``LiveLog.validate_for_append`` returned (or raised), and what it was computed against, so
    the handler uses it only if the log, its config and the leader epoch are still the same."""

    log: Any
    config: Any
    leader_epoch: int
    outcome: AppendResult | Exception


def _compressed(records: Any) -> bool:
    """Whether any batch (header only) of a Produce's records is compressed."""
    view = memoryview(records).cast("B") if not isinstance(records, bytes) else records
    position, end = 0, len(view)
    while position + 23 <= end:
        length = _INT32.unpack_from(view, position + 8)[0]
        magic = view[position + 16]
        attributes = view[position + 22] if magic >= 2 else view[position + 17]
        if attributes & 0x07:
            return True
        if length <= 0:
            return False
        position += 12 + length
    return False


def validation_jobs(
    state: BrokerState, ctx: RequestContext, request: Any
) -> list[tuple[tuple[int, int], Callable[..., Prevalidated | None]]]:
    """The costly part of a Produce, as jobs a server may run on worker threads before the
    handler: validating compressed records (decompression and the record walk; Kafka does it
    on its pool of request handler threads). Keys are (topic, partition) positions in the
    request; the handler finds the results in ``ctx.validated``. Only partitions the handler
    will append to (known, led here, writable by the principal) get a job."""
    if ctx.api_key != PRODUCE or request.acks not in (0, 1, -1):
        return []
    version = ctx.api_version
    jobs: list[tuple[tuple[int, int], Callable[..., Prevalidated | None]]] = []
    for ti, topic_data in enumerate(request.topic_data):
        topic = topic_by_id_or_name(state, topic_data.name, topic_data.topic_id, version >= 13)
        if topic is None or topic.internal:
            continue
        for pi, pdata in enumerate(topic_data.partition_data):
            records = pdata.records
            if not records or not _compressed(records):
                continue
            error, partition = partition_or_error(
                state, ctx, topic.name, pdata.index, operation="WRITE"
            )
            if error is not ErrorCode.NONE or partition is None:
                continue
            jobs.append(
                (
                    (ti, pi),
                    functools.partial(
                        validate_ahead,
                        partition.log,
                        records,
                        partition.leader_epoch,
                        state.now_ms(),
                        version,
                    ),
                )
            )
    return jobs


def validate_ahead(
    log: Any,
    records: Any,
    leader_epoch: int,
    now_ms: int,
    version: int,
    max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
) -> Prevalidated | None:
    """A validation job's work; ``None`` when the records decompress beyond a
    ``max_decompressed_size`` below the log's own cap (a budget: run it again without one)."""
    config = log.config
    outcome: AppendResult | Exception
    try:
        outcome = log.validate_for_append(
            records,
            now_ms=now_ms,
            leader_epoch=leader_epoch,
            produce_version=version,
            max_decompressed_size=max_decompressed_size,
        )
    except (KwireError, ProducerStateError) as exc:
        if max_decompressed_size < DEFAULT_MAX_DECOMPRESSED_SIZE and _over_budget(exc):
            return None
        outcome = exc
    return Prevalidated(log, config, leader_epoch, outcome)


def _over_budget(exc: BaseException) -> bool:
    """Whether ``exc`` comes of decompressing beyond a cap (the records layer wraps it)."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, DecompressedSizeError):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def append_to_partition(
    state: BrokerState,
    partition: Partition,
    records: Any,
    version: int,
    now_ms: int,
    validated: Prevalidated | None = None,
) -> Any:
    """Append one partition's records; the ``PartitionProduceResponse`` Kafka would send."""
    index = partition.index
    ahead: AppendResult | Exception | None = None
    if (
        validated is not None
        and validated.log is partition.log
        and validated.config is partition.log.config
        and validated.leader_epoch == partition.leader_epoch
    ):
        ahead = validated.outcome
    if partition.topic.internal:
        return _produce_error(
            index,
            ErrorCode.INVALID_TOPIC_EXCEPTION,
            f"Cannot append to internal topic {partition.topic.name}",
        )
    if records is None:
        records = b""
    try:
        if isinstance(ahead, Exception):
            raise ahead
        info = state.append(partition, records, now_ms, produce_version=version, validated=ahead)
    except AppendError as exc:
        response = _produce_error(index, ErrorCode(exc.error_code), exc.message)
        response.record_errors = [
            PRODUCE_RECORD_ERROR(batch_index=e.index, batch_index_error_message=e.message)
            for e in exc.record_errors
        ]
        return response
    except ProducerStateError as exc:
        return _produce_error(index, ErrorCode(exc.error_code), str(exc))
    except KafkaStorageError as exc:
        # ReplicaManager.appendToLocalLog: the log directory went offline (now or before).
        return _produce_error(index, ErrorCode.KAFKA_STORAGE_ERROR, exc.message)
    except KwireError as exc:
        return _produce_error(index, ErrorCode.CORRUPT_MESSAGE, str(exc))
    return PRODUCE_PARTITION(
        index=index,
        error_code=0,
        base_offset=info.first_offset,
        log_append_time_ms=info.log_append_time,
        log_start_offset=partition.log.log_start_offset,
        record_errors=[],
        error_message=None,
    )


@register(0, 0, 13)
def handle_produce(state: BrokerState, ctx: RequestContext, request: ProduceRequest) -> Any:
    """Produce (``KafkaApis.handleProduceRequest`` and ``ReplicaManager.appendRecords``); v12+
    with ``transaction.version`` 2 adds a transactional batch's partition to its transaction."""
    version = ctx.api_version
    by_id = version >= 13
    now = state.now_ms()
    accepted_min = state.personality.accepted.get(0, (0, 0))[0]
    blanket: ErrorCode | None = None
    if version < accepted_min:
        blanket = ErrorCode.UNSUPPORTED_VERSION  # 4.x advertises v0 yet refuses v0-2 (KAFKA-18659)
    elif request.acks not in (0, 1, -1):
        blanket = ErrorCode.INVALID_REQUIRED_ACKS
    elif request.transactional_id is not None and not authorize(
        state, ctx, "WRITE", TRANSACTIONAL_ID, request.transactional_id
    ):
        blanket = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    responses = []
    moved: set[int] = set()  # the leaders NOT_LEADER_OR_FOLLOWER answers point to (KIP-951)
    ahead = ctx.validated or {}
    for ti, topic_data in enumerate(request.topic_data):
        topic = topic_by_id_or_name(state, topic_data.name, topic_data.topic_id, by_id)
        # a topic id no topic has is UNKNOWN_TOPIC_ID before authorisation (there is no name)
        name = topic.name if topic is not None else None if by_id else topic_data.name
        parts = []
        for pi, pdata in enumerate(topic_data.partition_data):
            if blanket is not None:
                parts.append(_produce_error(pdata.index, blanket))
                continue
            error, partition = partition_or_error(
                state, ctx, name, pdata.index, operation="WRITE", by_id=by_id
            )
            if partition is None or error is not ErrorCode.NONE:
                if error is ErrorCode.NOT_LEADER_OR_FOLLOWER and partition is not None:
                    parts.append(_not_leader(pdata.index, partition, version, moved))
                else:
                    parts.append(_produce_error(pdata.index, error))
                continue
            if request.transactional_id is not None and _uses_transaction_v2(state, version):
                from kwire.broker._txn_apis import add_partition_for_produce

                added = add_partition_for_produce(
                    state,
                    request.transactional_id,
                    partition.topic.name,
                    pdata.index,
                    pdata.records,
                )
                if added is not ErrorCode.NONE:
                    parts.append(_produce_error(pdata.index, added))
                    continue
            validated = ahead.get((ti, pi))
            parts.append(
                append_to_partition(state, partition, pdata.records, version, now, validated)
            )
        responses.append(
            PRODUCE_TOPIC(
                name=topic_data.name, topic_id=topic_data.topic_id, partition_responses=parts
            )
        )
    if request.acks == 0:
        # No response for acks=0; an error closes the connection instead, the only way the
        # producer learns of it (KafkaApis.handleProduceRequest).
        failed = any(p.error_code for t in responses for p in t.partition_responses)
        return CLOSE_CONNECTION if failed else None
    response: Any = PRODUCE_RESPONSE(responses=responses, throttle_time_ms=0)
    if moved and version >= 10:
        response.node_endpoints = node_endpoints(state, ctx, moved, PRODUCE_NODE_ENDPOINT)
    return response


def _uses_transaction_v2(state: BrokerState, version: int) -> bool:
    # imported on first use, by transactional requests only: a broker without transactions
    # never loads the transaction coordinator (and a Produce pays no import statement)
    from kwire.broker._txn_apis import uses_transaction_v2

    return uses_transaction_v2(state, version, 12)


def _not_leader(index: int, partition: Partition, version: int, moved: set[int]) -> Any:
    """NOT_LEADER_OR_FOLLOWER; from v10 with the current leader (KIP-951)."""
    out = _produce_error(index, ErrorCode.NOT_LEADER_OR_FOLLOWER)
    if version >= 10:
        out.current_leader = PRODUCE_CURRENT_LEADER(
            leader_id=partition.leader_id, leader_epoch=partition.leader_epoch
        )
        moved.add(partition.leader_id)
    return out


# --- ListOffsets ------------------------------------------------------------------------------


def _list_offset(partition: Partition, timestamp: int, isolation: int) -> tuple[int, int, int]:
    """(offset, timestamp, leader epoch) for one ListOffsets query, as ``UnifiedLog.fetchOffsetByTimestamp``."""
    live = partition.log
    if timestamp == LATEST:
        end = partition.last_stable_offset() if isolation == READ_COMMITTED else live.high_watermark
        return end, -1, partition.leader_epoch
    if timestamp in (EARLIEST, EARLIEST_LOCAL):
        return live.log_start_offset, -1, -1
    if timestamp == LATEST_TIERED:
        return -1, -1, -1
    if timestamp == MAX_TIMESTAMP:
        found = live.max_timestamp_and_offset()
        if found is None:
            return -1, -1, -1
        offset, ts, epoch = found
        return offset, ts, epoch
    hit = live.offset_for_timestamp(timestamp)
    if hit is None:
        return -1, -1, -1
    offset, ts, epoch = hit
    return offset, ts, epoch


@register(2, 0, 10)
def handle_list_offsets(
    state: BrokerState, ctx: RequestContext, request: ListOffsetsRequest
) -> Any:
    version = ctx.api_version
    isolation = request.isolation_level if version >= 2 else 0
    topics = []
    for wanted in request.topics:
        parts = []
        for req in wanted.partitions:
            out = LIST_OFFSETS_PARTITION(partition_index=req.partition_index, error_code=0)
            error, partition = partition_or_error(
                state,
                ctx,
                wanted.name,
                req.partition_index,
                operation="DESCRIBE",
                current_leader_epoch=req.current_leader_epoch if version >= 4 else -1,
            )
            if partition is None or error is not ErrorCode.NONE:
                out.error_code = int(error)
                out.timestamp, out.offset, out.leader_epoch = -1, -1, -1
                parts.append(out)
                continue
            if version == 0:
                out.old_style_offsets = _old_style_offsets(
                    partition, req.timestamp, req.max_num_offsets
                )
            else:
                offset, ts, epoch = _list_offset(partition, req.timestamp, isolation)
                if req.timestamp < LATEST_TIERED or (
                    version < 7 and req.timestamp == MAX_TIMESTAMP
                ):
                    out.error_code = int(ErrorCode.UNSUPPORTED_VERSION)
                    offset, ts, epoch = -1, -1, -1
                out.offset, out.timestamp = offset, ts
                if version >= 4:
                    out.leader_epoch = epoch
            parts.append(out)
        topics.append(LIST_OFFSETS_TOPIC(name=wanted.name, partitions=parts))
    return LIST_OFFSETS_RESPONSE(throttle_time_ms=0, topics=topics)


def _old_style_offsets(partition: Partition, timestamp: int, max_num: int) -> list[int]:
    """ListOffsets v0: segment base offsets before ``timestamp``, newest first (``fetchOffsetsBefore``)."""
    live = partition.log
    if timestamp == LATEST:
        offsets = [live.high_watermark]
    elif timestamp == EARLIEST:
        offsets = [live.log_start_offset]
    else:
        hit = live.offset_for_timestamp(timestamp)
        offsets = [live.high_watermark if hit is None else hit[0]]
    return offsets[: max(max_num, 0)]


# --- InitProducerId ---------------------------------------------------------------------------


@register(22, 0, 5)
def handle_init_producer_id(
    state: BrokerState, ctx: RequestContext, request: InitProducerIdRequest
) -> Any:
    """InitProducerId for idempotent producers: a new producer id, epoch 0, every time.

    That is what Kafka's ``TransactionCoordinator.handleInitProducerId`` does without a
    transactional id (a KIP-360 bump request gets a fresh id too). A transactional id goes to
    the transaction coordinator (``_txn_apis``).
    """
    if request.transactional_id is not None and not authorize(
        state, ctx, "WRITE", TRANSACTIONAL_ID, request.transactional_id
    ):
        return INIT_PRODUCER_ID_RESPONSE(
            error_code=int(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
            producer_id=-1,
            producer_epoch=-1,
        )
    if request.transactional_id is None and not (
        authorize(state, ctx, "IDEMPOTENT_WRITE", CLUSTER, "kafka-cluster")
        or authorize_any(state, ctx, "WRITE", TOPIC)
    ):
        return INIT_PRODUCER_ID_RESPONSE(
            error_code=int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED),
            producer_id=-1,
            producer_epoch=-1,
        )
    if request.transactional_id is not None:
        from kwire.broker._txn_apis import init_transactional_producer_id

        return init_transactional_producer_id(state, ctx, request)
    return INIT_PRODUCER_ID_RESPONSE(
        throttle_time_ms=0, error_code=0, producer_id=state.allocate_producer_id(), producer_epoch=0
    )


# --- OffsetForLeaderEpoch ---------------------------------------------------------------------


@register(23, 0, 4)
def handle_offset_for_leader_epoch(
    state: BrokerState, ctx: RequestContext, request: OffsetForLeaderEpochRequest
) -> Any:
    version = ctx.api_version
    topics = []
    for wanted in request.topics:
        parts = []
        for req in wanted.partitions:
            out = EPOCH_PARTITION(
                partition=req.partition, error_code=0, leader_epoch=-1, end_offset=-1
            )
            error, partition = partition_or_error(
                state,
                ctx,
                wanted.topic,
                req.partition,
                operation="DESCRIBE",
                current_leader_epoch=req.current_leader_epoch if version >= 2 else -1,
            )
            if partition is None or error is not ErrorCode.NONE:
                out.error_code = int(error)
            else:
                out.leader_epoch, out.end_offset = partition.log.end_offset_for_epoch(
                    req.leader_epoch
                )
            parts.append(out)
        topics.append(EPOCH_TOPIC(topic=wanted.topic, partitions=parts))
    return EPOCH_RESPONSE(throttle_time_ms=0, topics=topics)
