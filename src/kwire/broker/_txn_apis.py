"""Handlers of the transaction APIs: InitProducerId (transactional), AddPartitionsToTxn,
AddOffsetsToTxn, EndTxn, DescribeProducers, DescribeTransactions, ListTransactions.

Each follows the matching ``KafkaApis.handle*`` method of Kafka 3.9 (request checks, errors by
version) and hands the transaction to the coordinator (``_txn.TransactionCoordinator``), which
this module starts on first use. WriteTxnMarkers (api 27) is inter-broker and not served: this
single node writes its markers itself, and an API in the handler table would be advertised to
clients.

AddPartitionsToTxn checks as ``KafkaApis.handleAddPartitionsToTxnRequest``: a client's request
(v0-3) needs WRITE on the transactional id, then each partition goes through
``_partition_check.partition_or_error`` with WRITE (TOPIC_AUTHORIZATION_FAILED before
UNKNOWN_TOPIC_OR_PARTITION; internal topics are never authorised), and any failure leaves the
others OPERATION_NOT_ATTEMPTED; a broker's batch (v4+) needs CLUSTER_ACTION on the cluster instead
(else the request's CLUSTER_AUTHORIZATION_FAILED) and no topic or transactional-id ACL. Only after
these checks does a transaction coordinated by another node get NOT_COORDINATOR for its
partitions (the coordinator's answer, ``TransactionStateManager.getTransactionState``). The other
transaction APIs likewise ask ``_routing`` once their ACLs passed: InitProducerId, AddOffsetsToTxn
and EndTxn for the whole request, DescribeTransactions id by id.

DescribeProducers answers on a node hosting the partition (``ReplicaManager.activeProducerState``
via ``getPartitionOrError``: NOT_LEADER_OR_FOLLOWER elsewhere); a kwire partition's one replica is
its leader, as Metadata says, so another node answers NOT_LEADER_OR_FOLLOWER and Java Admin's
``DescribeProducersOptions.brokerId`` of a non-replica fails as on Kafka.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final

from kwire.broker._acl import CLUSTER, CLUSTER_NAME, GROUP, TOPIC, TRANSACTIONAL_ID, authorize
from kwire.broker._apis import on_startup, register
from kwire.broker._context import RequestContext
from kwire.broker._partition_check import partition_or_error
from kwire.broker._routing import TRANSACTION_KEY, coordinated_elsewhere, not_coordinator
from kwire.broker._state import BrokerError, BrokerState, validate_topic_name
from kwire.broker._txn import (
    TRANSACTION_TOPIC,
    TopicPartition,
    TransactionMetadata,
    coordinator_for,
)
from kwire.broker._txn_shard import TransactionShard
from kwire.errors import KwireError
from kwire.log.internal_topics import CONSUMER_OFFSETS, TRANSACTION_STATE
from kwire.protocol import ErrorCode
from kwire.protocol.messages import (
    AddOffsetsToTxnRequest,
    AddOffsetsToTxnResponse,
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    DescribeProducersRequest,
    DescribeProducersResponse,
    DescribeTransactionsRequest,
    DescribeTransactionsResponse,
    EndTxnRequest,
    EndTxnResponse,
    InitProducerIdRequest,
    InitProducerIdResponse,
    ListTransactionsRequest,
    ListTransactionsResponse,
)
from kwire.records import read_batches

__all__ = [
    "add_group_partition_for_commit",
    "add_partition_for_produce",
    "handle_add_offsets_to_txn",
    "handle_add_partitions_to_txn",
    "handle_describe_producers",
    "handle_describe_transactions",
    "handle_end_txn",
    "handle_list_transactions",
    "init_transactional_producer_id",
    "uses_transaction_v2",
]

ADD_PARTITIONS_RESULT: Final = AddPartitionsToTxnResponse.AddPartitionsToTxnResult
ADD_PARTITIONS_TOPIC: Final = AddPartitionsToTxnResponse.AddPartitionsToTxnTopicResult
ADD_PARTITIONS_PARTITION: Final = AddPartitionsToTxnResponse.AddPartitionsToTxnPartitionResult
PRODUCERS_TOPIC: Final = DescribeProducersResponse.TopicResponse
PRODUCERS_PARTITION: Final = DescribeProducersResponse.PartitionResponse
PRODUCER_STATE: Final = DescribeProducersResponse.ProducerState
DESCRIBE_TXN_STATE: Final = DescribeTransactionsResponse.TransactionState
DESCRIBE_TXN_TOPIC: Final = DescribeTransactionsResponse.TopicData
LIST_TXN_STATE: Final = ListTransactionsResponse.TransactionState

TRANSACTION_VERSION: Final = "transaction.version"
NO_PRODUCER_ID: Final = -1
NO_PRODUCER_EPOCH: Final = -1


def _fenced_for(error: ErrorCode, version: int, first_version: int) -> ErrorCode:
    """Versions before PRODUCER_FENCED existed (KIP-588) get INVALID_PRODUCER_EPOCH instead."""
    if error is ErrorCode.PRODUCER_FENCED and version < first_version:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    return error


# --- InitProducerId (the transactional case; _data.handle_init_producer_id delegates here) -----


def init_transactional_producer_id(
    state: BrokerState, ctx: RequestContext, request: InitProducerIdRequest
) -> InitProducerIdResponse:
    """``KafkaApis.handleInitProducerIdRequest`` with a transactional id."""
    version = ctx.api_version

    def answer(
        error: ErrorCode, pid: int = NO_PRODUCER_ID, epoch: int = NO_PRODUCER_EPOCH
    ) -> InitProducerIdResponse:
        return InitProducerIdResponse(
            throttle_time_ms=0,
            error_code=int(_fenced_for(error, version, 4)),
            producer_id=pid,
            producer_epoch=epoch,
        )

    if version >= 6 and (request.enable2_pc or request.keep_prepared_txn):
        # KIP-939's two-phase commit needs transaction.two.phase.commit.enable, off here.
        return answer(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    expected: tuple[int, int] | None = None
    if version >= 3:
        pid, epoch = request.producer_id, request.producer_epoch
        if (pid == NO_PRODUCER_ID) != (epoch == NO_PRODUCER_EPOCH):
            return answer(ErrorCode.INVALID_REQUEST)
        if pid != NO_PRODUCER_ID:
            expected = (pid, epoch)
    coordinator = coordinator_for(state)
    # handleInitProducerId: the request's checks, then the transaction's coordinator
    invalid = coordinator.shard.init_error(
        request.transactional_id or "", request.transaction_timeout_ms
    )
    if invalid is not ErrorCode.NONE:
        return answer(invalid)
    elsewhere = not_coordinator(state, ctx, request, TRANSACTION_KEY, request.transactional_id)
    if elsewhere is not None:
        assert isinstance(elsewhere, InitProducerIdResponse)
        return elsewhere
    result = coordinator.init_producer_id(
        request.transactional_id or "", request.transaction_timeout_ms, expected, state.now_ms()
    )
    return answer(result.error, result.producer_id, result.producer_epoch)


# --- AddPartitionsToTxn -----------------------------------------------------------------------


def _topic_results(
    errors: dict[TopicPartition, ErrorCode],
) -> list[AddPartitionsToTxnResponse.AddPartitionsToTxnTopicResult]:
    by_topic: dict[str, list[AddPartitionsToTxnResponse.AddPartitionsToTxnPartitionResult]] = {}
    for (topic, index), error in errors.items():
        by_topic.setdefault(topic, []).append(
            ADD_PARTITIONS_PARTITION(partition_index=index, partition_error_code=int(error))
        )
    return [ADD_PARTITIONS_TOPIC(name=t, results_by_partition=ps) for t, ps in by_topic.items()]


def _requested_partitions(
    topics: Iterable[AddPartitionsToTxnRequest.AddPartitionsToTxnTopic],
) -> list[TopicPartition]:
    out: list[TopicPartition] = []
    for topic in topics:
        for index in topic.partitions:
            if (topic.name, index) not in out:
                out.append((topic.name, index))
    return out


@on_startup
def _load_transactions(state: BrokerState) -> None:
    """Load an existing ``__transaction_state`` when the broker starts, so that open
    transactions time out (and prepared ones complete) without waiting for a client."""
    if TRANSACTION_TOPIC in state.topics:
        coordinator_for(state)


@register(24, 0, 5)
def handle_add_partitions_to_txn(
    state: BrokerState, ctx: RequestContext, request: AddPartitionsToTxnRequest
) -> AddPartitionsToTxnResponse:
    """AddPartitionsToTxn: v0-3 from producers, v4+ batched (brokers verifying, KIP-890)."""
    version = ctx.api_version
    if version < 4:
        transactions = [
            (
                request.v3_and_below_transactional_id,
                request.v3_and_below_producer_id,
                request.v3_and_below_producer_epoch,
                False,
                _requested_partitions(request.v3_and_below_topics),
            )
        ]
    else:
        transactions = [
            (
                t.transactional_id,
                t.producer_id,
                t.producer_epoch,
                bool(t.verify_only),
                _requested_partitions(t.topics),
            )
            for t in request.transactions
        ]
    client = version < 4
    if not client and not authorize(state, ctx, "CLUSTER_ACTION", CLUSTER, CLUSTER_NAME):
        return AddPartitionsToTxnResponse(
            throttle_time_ms=0,
            error_code=int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED),
            results_by_transaction=[],
        )
    coordinator = coordinator_for(state)
    now = state.now_ms()
    results: list[tuple[str, dict[TopicPartition, ErrorCode]]] = []
    for txn_id, pid, epoch, verify_only, partitions in transactions:
        failed: dict[TopicPartition, ErrorCode] = {}
        if client and not authorize(state, ctx, "WRITE", TRANSACTIONAL_ID, txn_id):
            denied = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
            results.append((txn_id, dict.fromkeys(partitions, denied)))
            continue
        for topic, index in partitions:
            if client and topic in (CONSUMER_OFFSETS, TRANSACTION_STATE):
                # Kafka authorizes client versions on non-internal topics only.
                error = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            else:
                error, _ = partition_or_error(
                    state,
                    ctx,
                    topic,
                    index,
                    operation="WRITE" if client else None,
                    require_leader=False,
                )
            if error is not ErrorCode.NONE:
                failed[(topic, index)] = error
        if failed:
            errors = {tp: failed.get(tp, ErrorCode.OPERATION_NOT_ATTEMPTED) for tp in partitions}
        elif coordinated_elsewhere(state, ctx, TRANSACTION_KEY, txn_id):
            errors = dict.fromkeys(partitions, ErrorCode.NOT_COORDINATOR)
        elif verify_only:
            errors = coordinator.verify_partitions(txn_id, pid, epoch, partitions)
        else:
            error = coordinator.add_partitions(txn_id, pid, epoch, partitions, now)
            error = _fenced_for(error, version, 2)
            errors = dict.fromkeys(partitions, error)
        results.append((txn_id, errors))
    if version < 4:
        return AddPartitionsToTxnResponse(
            throttle_time_ms=0, results_by_topic_v3_and_below=_topic_results(results[0][1])
        )
    return AddPartitionsToTxnResponse(
        throttle_time_ms=0,
        error_code=0,
        results_by_transaction=[
            ADD_PARTITIONS_RESULT(transactional_id=txn_id, topic_results=_topic_results(errors))
            for txn_id, errors in results
        ],
    )


# --- AddOffsetsToTxn --------------------------------------------------------------------------


@register(25, 0, 4)
def handle_add_offsets_to_txn(
    state: BrokerState, ctx: RequestContext, request: AddOffsetsToTxnRequest
) -> AddOffsetsToTxnResponse:
    """AddOffsetsToTxn: the group's ``__consumer_offsets`` partition joins the transaction."""
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
            return AddOffsetsToTxnResponse(throttle_time_ms=0, error_code=int(denied))
    if TransactionShard.id_error(request.transactional_id) is ErrorCode.NONE and (
        coordinated_elsewhere(state, ctx, TRANSACTION_KEY, request.transactional_id)
    ):  # an empty id is the coordinator's INVALID_REQUEST on any node
        return AddOffsetsToTxnResponse(
            throttle_time_ms=0, error_code=int(ErrorCode.NOT_COORDINATOR)
        )
    coordinator = coordinator_for(state)
    partition = coordinator.group_partition(request.group_id)
    error = coordinator.add_partitions(
        request.transactional_id,
        request.producer_id,
        request.producer_epoch,
        [partition],
        state.now_ms(),
    )
    return AddOffsetsToTxnResponse(
        throttle_time_ms=0, error_code=int(_fenced_for(error, ctx.api_version, 2))
    )


# --- EndTxn -----------------------------------------------------------------------------------


def uses_transaction_v2(state: BrokerState, version: int, first_version: int) -> bool:
    """KIP-890 part 2 applies: the request is of a TV2 version (EndTxn v5, Produce v12) and
    ``transaction.version`` 2 is finalized (``TransactionVersion.supportsEpochBump``)."""
    return version >= first_version and state.feature_level(TRANSACTION_VERSION) >= 2


def add_partition_for_produce(
    state: BrokerState,
    transactional_id: str,
    topic: str,
    index: int,
    records: bytes | memoryview | None,
) -> ErrorCode:
    """Produce v12+ with TV2: the broker adds the partition of a transactional batch to the
    transaction itself (``ReplicaManager`` through ``AddPartitionsToTxnManager``, add mode, no
    AddPartitionsToTxn from the client). A stale epoch is fenced: the coordinator's
    PRODUCER_FENCED is answered as INVALID_PRODUCER_EPOCH, as ``AddPartitionsToTxnManager``
    maps it for the produce path."""
    if records is None:
        return ErrorCode.NONE
    try:
        batch = next(iter(read_batches(records)), None)
    except KwireError:
        return ErrorCode.NONE  # the append answers CORRUPT_MESSAGE
    if batch is None or batch.magic < 2 or not batch.is_transactional:
        return ErrorCode.NONE
    error = coordinator_for(state).add_partitions(
        transactional_id,
        batch.producer_id,
        batch.producer_epoch,
        [(topic, index)],
        state.now_ms(),
    )
    if error is ErrorCode.PRODUCER_FENCED:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    return error


def add_group_partition_for_commit(
    state: BrokerState, transactional_id: str, group_id: str, producer_id: int, producer_epoch: int
) -> ErrorCode:
    """TxnOffsetCommit v5+ with TV2: the group's ``__consumer_offsets`` partition joins the
    transaction without AddOffsetsToTxn (``KafkaApis.handleTxnOffsetCommitRequest`` verifying in
    add mode); errors as for Produce."""
    coordinator = coordinator_for(state)
    error = coordinator.add_partitions(
        transactional_id,
        producer_id,
        producer_epoch,
        [coordinator.group_partition(group_id)],
        state.now_ms(),
    )
    return ErrorCode.INVALID_PRODUCER_EPOCH if error is ErrorCode.PRODUCER_FENCED else error


@register(26, 0, 5)
def handle_end_txn(
    state: BrokerState, ctx: RequestContext, request: EndTxnRequest
) -> EndTxnResponse:
    """EndTxn: commit or abort (markers written before the answer). v5 (KIP-890 part 2, with
    ``transaction.version`` 2 finalized): the epoch is bumped and the response carries the
    producer id and epoch to use next."""
    if not authorize(state, ctx, "WRITE", TRANSACTIONAL_ID, request.transactional_id):
        error = int(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        return EndTxnResponse(throttle_time_ms=0, error_code=error)
    if TransactionShard.id_error(request.transactional_id) is ErrorCode.NONE and (
        coordinated_elsewhere(state, ctx, TRANSACTION_KEY, request.transactional_id)
    ):  # an empty id is the coordinator's INVALID_REQUEST on any node
        return EndTxnResponse(throttle_time_ms=0, error_code=int(ErrorCode.NOT_COORDINATOR))
    result = coordinator_for(state).end_txn(
        request.transactional_id,
        request.producer_id,
        request.producer_epoch,
        bool(request.committed),
        state.now_ms(),
        epoch_bump=uses_transaction_v2(state, ctx.api_version, 5),
    )
    response = EndTxnResponse(
        throttle_time_ms=0, error_code=int(_fenced_for(result.error, ctx.api_version, 2))
    )
    if ctx.api_version >= 5:
        response.producer_id, response.producer_epoch = result.producer_id, result.producer_epoch
    return response


# --- DescribeProducers ------------------------------------------------------------------------


@register(61, 0, 0)
def handle_describe_producers(
    state: BrokerState, ctx: RequestContext, request: DescribeProducersRequest
) -> DescribeProducersResponse:
    """DescribeProducers: each partition's producer state (``Partition.activeProducerState``)."""
    topics = []
    for wanted in request.topics:
        topic_error: tuple[ErrorCode, str | None] | None = None
        try:
            validate_topic_name(wanted.name)
        except BrokerError as exc:
            topic_error = (exc.error, exc.message)
        parts = []
        for index in wanted.partition_indexes:
            out = PRODUCERS_PARTITION(partition_index=index, error_code=0, active_producers=[])
            if topic_error is not None:
                out.error_code, out.error_message = int(topic_error[0]), topic_error[1]
                parts.append(out)
                continue
            # ReplicaManager.activeProducerState answers on a replica; a kwire partition's one
            # replica is its leader, elsewhere NOT_LEADER_OR_FOLLOWER (no epoch in the request).
            error, partition = partition_or_error(state, ctx, wanted.name, index, operation="READ")
            if partition is None or error is not ErrorCode.NONE:
                out.error_code = int(error)
            else:
                out.active_producers = [
                    PRODUCER_STATE(
                        producer_id=pid,
                        producer_epoch=entry.producer_epoch,
                        last_sequence=entry.last_seq,
                        last_timestamp=entry.last_timestamp,
                        coordinator_epoch=entry.coordinator_epoch,
                        current_txn_start_offset=(
                            -1
                            if entry.current_txn_first_offset is None
                            else entry.current_txn_first_offset
                        ),
                    )
                    for pid, entry in sorted(partition.log.producer_state().items())
                ]
            parts.append(out)
        topics.append(PRODUCERS_TOPIC(name=wanted.name, partitions=parts))
    return DescribeProducersResponse(throttle_time_ms=0, topics=topics)


# --- DescribeTransactions / ListTransactions --------------------------------------------------


@register(65, 0, 0)
def handle_describe_transactions(
    state: BrokerState, ctx: RequestContext, request: DescribeTransactionsRequest
) -> DescribeTransactionsResponse:
    coordinator = coordinator_for(state)
    states = []
    for txn_id in request.transactional_ids:
        out = DESCRIBE_TXN_STATE(transactional_id=txn_id, error_code=0, topics=[])
        # KafkaApis.handleDescribeTransactionsRequest: the ACL, then the id's coordinator
        found: ErrorCode | TransactionMetadata
        if not authorize(state, ctx, "DESCRIBE", TRANSACTIONAL_ID, txn_id):
            found = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        elif TransactionShard.id_error(txn_id) is ErrorCode.NONE and coordinated_elsewhere(
            state, ctx, TRANSACTION_KEY, txn_id
        ):
            found = ErrorCode.NOT_COORDINATOR
        else:
            found = coordinator.describe(txn_id)
        if isinstance(found, ErrorCode):
            out.error_code = int(found)
            out.transaction_state = ""
            out.producer_id, out.producer_epoch = NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        else:
            # KafkaApis.handleDescribeTransactionsRequest: only the topics the principal may
            # describe (the others' names stay hidden)
            by_topic: dict[str, list[int]] = {}
            for topic, index in sorted(found.partitions):
                if authorize(state, ctx, "DESCRIBE", TOPIC, topic):
                    by_topic.setdefault(topic, []).append(index)
            out.topics = [DESCRIBE_TXN_TOPIC(topic=t, partitions=ps) for t, ps in by_topic.items()]
            out.transaction_state = found.state.kafka_name
            out.transaction_timeout_ms = found.timeout_ms
            out.transaction_start_time_ms = found.start_ms
            out.producer_id = found.producer_id
            out.producer_epoch = found.producer_epoch
        states.append(out)
    return DescribeTransactionsResponse(throttle_time_ms=0, transaction_states=states)


@register(66, 0, 2)
def handle_list_transactions(
    state: BrokerState, ctx: RequestContext, request: ListTransactionsRequest
) -> ListTransactionsResponse:
    """ListTransactions: state and producer id filters, v1 duration, v2 transactional id regex."""
    version = ctx.api_version
    pattern = request.transactional_id_pattern if version >= 2 else None
    try:
        found, unknown = coordinator_for(state).list_transactions(
            producer_ids=request.producer_id_filters,
            states=request.state_filters,
            duration_ms=request.duration_filter if version >= 1 else -1,
            pattern=pattern,
            now_ms=state.now_ms(),
        )
    except re.error:
        return ListTransactionsResponse(
            throttle_time_ms=0,
            error_code=int(ErrorCode.INVALID_REQUEST),
            unknown_state_filters=[],
            transaction_states=[],
        )
    return ListTransactionsResponse(
        throttle_time_ms=0,
        error_code=0,
        unknown_state_filters=unknown,
        transaction_states=[
            LIST_TXN_STATE(
                transactional_id=m.transactional_id,
                producer_id=m.producer_id,
                transaction_state=m.state.kafka_name,
            )
            for m in sorted(found, key=lambda m: m.transactional_id)
            if authorize(state, ctx, "DESCRIBE", TRANSACTIONAL_ID, m.transactional_id)
        ],
    )
