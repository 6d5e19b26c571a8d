"""WriteTxnMarkers (API 27, KIP-98): the request a transaction coordinator sends to the leaders of
a transaction's partitions to write its COMMIT or ABORT markers.

Versions: v0 (0.11) is the first; v1 (2.8) is the flexible form; v2 (4.1) gives each marker its
transaction version (KIP-890's TV2 markers carry the bumped epoch). Kafka 4.0 removed v0
(KIP-896).

Follows ``KafkaApis.handleWriteTxnMarkersRequest``: CLUSTER_ACTION on the cluster, else every
partition of the request is CLUSTER_AUTHORIZATION_FAILED; a partition this node does not hold is
UNKNOWN_TOPIC_OR_PARTITION (one another node of an in-process cluster leads:
NOT_LEADER_OR_FOLLOWER, as ``ReplicaManager.appendRecords``), one whose topic stores magic 0 or 1
UNSUPPORTED_FOR_MESSAGE_FORMAT; the others get a control batch (``EndTransactionMarker`` with the
coordinator epoch) appended as the coordinator appends (internal topics allowed), whose producer
state checks answer a stale producer epoch (INVALID_PRODUCER_EPOCH) or a stale coordinator epoch
(TRANSACTION_COORDINATOR_FENCED). Once markers are in ``__consumer_offsets`` partitions the group
coordinator settles the producer's pending transactional offsets (``onTransactionCompleted``).
The results are grouped by producer id, then topic, in the order asked. kwire's own transaction
coordinator writes its markers in-process (``_txn``); this API serves other coordinators and
tools. The marker's transaction version (v2) is read but not checked here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from kwire.broker._acl import CLUSTER, CLUSTER_NAME, authorize
from kwire.broker._apis import register
from kwire.broker._context import RequestContext
from kwire.broker._partition_check import partition_or_error
from kwire.broker._state import BrokerState
from kwire.errors import AppendError, KafkaStorageError, KwireError, LogError
from kwire.log.internal_topics import CONSUMER_OFFSETS
from kwire.protocol import ErrorCode
from kwire.protocol.messages import WriteTxnMarkersRequest, WriteTxnMarkersResponse
from kwire.records import build_end_txn_marker

__all__ = ["handle_write_txn_markers"]

RESPONSE: Final = WriteTxnMarkersResponse
MARKER: Final = WriteTxnMarkersResponse.WritableTxnMarkerResult
TOPIC: Final = WriteTxnMarkersResponse.WritableTxnMarkerTopicResult
PARTITION: Final = WriteTxnMarkersResponse.WritableTxnMarkerPartitionResult
GROUP_TOPIC: Final = CONSUMER_OFFSETS

#: producer id -> topic -> partition -> error, in the order asked
Results = dict[int, dict[str, dict[int, ErrorCode]]]


def _write(
    state: BrokerState,
    ctx: RequestContext,
    marker: WriteTxnMarkersRequest.WritableTxnMarker,
    topic: str,
    index: int,
) -> ErrorCode:
    # authorised on the cluster (CLUSTER_ACTION) by the handler, not per topic
    error, partition = partition_or_error(state, ctx, topic, index, operation=None)
    if partition is None or error is not ErrorCode.NONE:
        return error
    if partition.log.config.records.message_format < 2:
        return ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT
    now = state.now_ms()
    batch = build_end_txn_marker(
        bool(marker.transaction_result),
        coordinator_epoch=marker.coordinator_epoch,
        producer_id=marker.producer_id,
        producer_epoch=marker.producer_epoch,
        timestamp=now,
        partition_leader_epoch=partition.leader_epoch,
    )
    try:
        state.append_as_coordinator(partition, batch, now)
    except KafkaStorageError:
        return ErrorCode.KAFKA_STORAGE_ERROR
    except (AppendError, LogError) as exc:
        return ErrorCode(exc.error_code)
    except KwireError:
        return ErrorCode.UNKNOWN_SERVER_ERROR
    return ErrorCode.NONE


@register(27, 0, 2)
def handle_write_txn_markers(
    state: BrokerState, ctx: RequestContext, request: WriteTxnMarkersRequest
) -> WriteTxnMarkersResponse:
    results: Results = {}
    allowed = authorize(state, ctx, "CLUSTER_ACTION", CLUSTER, CLUSTER_NAME)
    group = state.services.group
    complete_txn: Callable[[int, bool], object] | None = getattr(group, "complete_txn", None)
    for marker in request.markers:
        by_topic = results.setdefault(marker.producer_id, {})
        offsets_written = False
        for topic in marker.topics:
            for index in topic.partition_indexes:
                if not allowed:
                    error = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
                else:
                    error = _write(state, ctx, marker, topic.name, index)
                by_topic.setdefault(topic.name, {})[index] = error
                offsets_written |= topic.name == GROUP_TOPIC and error == ErrorCode.NONE
        if offsets_written and complete_txn is not None:
            complete_txn(marker.producer_id, bool(marker.transaction_result))
    return RESPONSE(
        markers=[
            MARKER(
                producer_id=producer_id,
                topics=[
                    TOPIC(
                        name=name,
                        partitions=[
                            PARTITION(partition_index=i, error_code=int(e))
                            for i, e in partitions.items()
                        ],
                    )
                    for name, partitions in by_topic.items()
                ],
            )
            for producer_id, by_topic in results.items()
        ]
    )
