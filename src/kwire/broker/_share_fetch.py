"""ShareFetch (API 78): acquire records of a share group's partitions, acknowledging on the way.

Versions: v0 was 4.0's early access; v1 (4.1) adds ``MaxRecords``, ``BatchSize`` and the
response's ``AcquisitionLockTimeoutMs``; v2 (4.2) adds ``ShareAcquireMode`` (0 batch-optimized,
1 record-limit) and ``IsRenewAck`` (the RENEW acknowledgement type). Kafka 4.1 serves v1, 4.2+
v1-v2.

After ``KafkaApis.handleShareFetchRequest`` and ``SharePartitionManager``: the share session is
resolved first (``_share_group.ShareCoordinator.session``), the piggybacked acknowledgements are
applied, then each partition of the session acquires from its ``SharePartition``, reading whole
batches from the log at the partition's next fetch offset up to the high watermark; the response
carries those batches and the ``AcquiredRecords`` ranges (the client delivers only offsets in
them). With nothing acquired the response waits up to ``MaxWaitMs``, woken when a partition grows
or records of the group are released. Epoch -1 only acknowledges, then closes the session and
releases what the member still holds. A partition is initialized at its first fetch from the
group's ``share.auto.offset.reset`` (latest: the high watermark; earliest: the log start); one
whose start offset fell below the log start (retention) moves up to it. With the group config
``share.isolation.level=read_committed`` reads stop at the last stable offset and batches of
aborted transactions are skipped like control batches.
"""

from __future__ import annotations

import uuid
from typing import Any, Final

from kwire.broker._acl import GROUP, authorize
from kwire.broker._apis import Deferred, register
from kwire.broker._context import RequestContext
from kwire.broker._partition_check import partition_or_error
from kwire.broker._routing import node_endpoints, serving_node
from kwire.broker._share_group import FINAL_EPOCH, ShareCoordinator, ShareSession
from kwire.broker._share_service import (
    acknowledge,
    flush_share_state,
    group_config,
    share_coordinator,
    share_key,
)
from kwire.broker._state import BrokerState
from kwire.log import OffsetOutOfRangeError
from kwire.protocol import ErrorCode
from kwire.protocol.messages import ShareFetchRequest, ShareFetchResponse
from kwire.records import read_batches

__all__ = ["handle_share_fetch"]

RESPONSE: Final = ShareFetchResponse
TOPIC_RESPONSE: Final = ShareFetchResponse.ShareFetchableTopicResponse
PARTITION: Final = ShareFetchResponse.PartitionData
LEADER: Final = ShareFetchResponse.LeaderIdAndEpoch
ACQUIRED: Final = ShareFetchResponse.AcquiredRecords
NODE_ENDPOINT: Final = ShareFetchResponse.NodeEndpoint

RECORD_LIMIT: Final = 1  # ShareAcquireMode
DEFAULT_MAX_RECORDS: Final = 500  # v0 has no MaxRecords (the client's max.poll.records default)

Key = tuple[uuid.UUID, int]


def _error_response(error: ErrorCode, message: str | None = None) -> Any:
    return RESPONSE(
        throttle_time_ms=0,
        error_code=int(error),
        error_message=message,
        acquisition_lock_timeout_ms=0,
        responses=[],
        node_endpoints=[],
    )


class _Fetch:
    """One ShareFetch: the acquisition pass, run again while the response waits."""

    def __init__(
        self,
        state: BrokerState,
        ctx: RequestContext,
        request: ShareFetchRequest,
        coordinator: ShareCoordinator,
        session: ShareSession,
        acks: dict[Key, ErrorCode],
    ) -> None:
        self.state = state
        self.ctx = ctx
        self.request = request
        self.coordinator = coordinator
        self.session = session
        self.acks = acks
        self.full = request.share_session_epoch == 0
        version = ctx.api_version
        self.max_records = request.max_records if version >= 1 else DEFAULT_MAX_RECORDS
        if self.max_records <= 0:
            self.max_records = DEFAULT_MAX_RECORDS
        self.record_limit = version >= 2 and request.share_acquire_mode == RECORD_LIMIT
        self.moved: set[int] = set()

    def read(self, final: bool) -> Any:
        budget = self.max_records
        bytes_left = max(self.request.max_bytes, 1)
        outputs: list[tuple[Key, Any, bool]] = []
        got = False
        for key in (
            list(self.session.partitions) if self.request.share_session_epoch != FINAL_EPOCH else []
        ):
            out, count, size = self._partition(key, budget, bytes_left)
            budget -= count
            bytes_left -= size
            got = got or count > 0 or out.error_code != 0
            outputs.append((key, out, count > 0 or out.error_code != 0))
        for key in self.acks:
            if key not in self.session.partitions:
                outputs.append((key, self._empty(key), True))
        flush_share_state(self.state)  # acknowledgements, initializations
        if not got and not final:
            return None
        return self._response(outputs)

    def _empty(self, key: Key) -> Any:
        topic = self.state.topics_by_id.get(key[0])
        partition = (
            topic.partitions[key[1]]
            if topic is not None and 0 <= key[1] < len(topic.partitions)
            else None
        )
        ack = self.acks.get(key, ErrorCode.NONE)
        return PARTITION(
            partition_index=key[1],
            error_code=0,
            error_message=None,
            acknowledge_error_code=int(ack),
            acknowledge_error_message=None if ack is ErrorCode.NONE else ack.message,
            current_leader=LEADER(
                leader_id=partition.leader_id if partition else -1,
                leader_epoch=partition.leader_epoch if partition else -1,
            ),
            records=b"",
            acquired_records=[],
        )

    def _partition(self, key: Key, budget: int, bytes_left: int) -> tuple[Any, int, int]:
        """The partition's response, the number of offsets acquired and the bytes sent."""
        out = self._empty(key)
        topic = self.state.topics_by_id.get(key[0])
        error, partition = partition_or_error(
            self.state,
            self.ctx,
            None if topic is None else topic.name,
            key[1],
            operation="READ",
            by_id=True,
        )
        if partition is None or error is not ErrorCode.NONE:
            out.error_code = int(error)
            if partition is not None:  # led elsewhere: its leader rides along (KIP-951)
                self.moved.add(partition.leader_id)
            return out, 0, 0
        if budget <= 0 or bytes_left <= 0:
            return out, 0, 0
        group_id = self.session.group_id
        share = self.coordinator.share_partition(group_id, key[0], key[1])
        live = partition.log
        if not share.initialized:
            reset = group_config(self.state, group_id, "share.auto.offset.reset")
            share.initialize(live.log_start_offset if reset == "earliest" else live.high_watermark)
        if share.start_offset < live.log_start_offset:
            # Records deleted by retention are gone from the share partition too.
            share.skip_to(live.log_start_offset)
        if not share.can_acquire():
            return out, 0, 0
        offset = share.next_fetch_offset()
        committed = group_config(self.state, group_id, "share.isolation.level") == "read_committed"
        limit = partition.last_stable_offset() if committed else live.high_watermark
        try:
            data = live.read(offset, bytes_left, max_offset=limit, min_one_message=True)
        except OffsetOutOfRangeError:
            return out, 0, 0
        if data.size == 0:
            return out, 0, 0
        batches = list(read_batches(data.read_bytes()))
        aborted = (
            live.aborted_transactions(offset, batches[-1].last_offset + 1) if committed else []
        )

        def skipped(b: Any) -> bool:
            """A control batch, or (read_committed) a batch of an aborted transaction: never
            delivered, a gap (``SharePartition`` filters aborted batches the same way)."""
            return b.is_control or (
                b.is_transactional
                and any(
                    t.producer_id == b.producer_id
                    and t.first_offset <= b.base_offset <= t.last_offset
                    for t in aborted
                )
            )

        ranges = share.acquire(
            self.session.member_id,
            [(b.base_offset, b.last_offset, skipped(b)) for b in batches],
            budget,
            self.state.now_ms(),
            record_limit=self.record_limit,
        )
        if not ranges:
            return out, 0, 0
        sent = [
            bytes(b)
            for b in batches
            if not skipped(b)
            and any(
                r.first_offset <= b.last_offset and b.base_offset <= r.last_offset for r in ranges
            )
        ]
        out.records = b"".join(sent)
        out.acquired_records = [
            ACQUIRED(
                first_offset=r.first_offset,
                last_offset=r.last_offset,
                delivery_count=r.delivery_count,
            )
            for r in ranges
        ]
        count = sum(r.last_offset - r.first_offset + 1 for r in ranges)
        return out, count, len(out.records)

    def _response(self, outputs: list[tuple[Key, Any, bool]]) -> Any:
        by_topic: dict[uuid.UUID, list[Any]] = {}
        for key, out, changed in outputs:
            if self.full or changed or key in self.acks:
                by_topic.setdefault(key[0], []).append(out)
        return RESPONSE(
            throttle_time_ms=0,
            error_code=0,
            error_message=None,
            acquisition_lock_timeout_ms=self.coordinator.lock_duration(self.session.group_id),
            responses=[
                TOPIC_RESPONSE(topic_id=tid, partitions=parts) for tid, parts in by_topic.items()
            ],
            node_endpoints=node_endpoints(self.state, self.ctx, self.moved, NODE_ENDPOINT),
        )


@register(78, 1, 2)
def handle_share_fetch(state: BrokerState, ctx: RequestContext, request: ShareFetchRequest) -> Any:
    group_id = request.group_id
    if not group_id or not request.member_id:
        return _error_response(ErrorCode.INVALID_REQUEST, "GroupId and MemberId are required.")
    if not authorize(state, ctx, "READ", GROUP, group_id):
        return _error_response(ErrorCode.GROUP_AUTHORIZATION_FAILED)
    coordinator = share_coordinator(state)
    epoch = request.share_session_epoch
    node = serving_node(state, ctx)
    error, session = coordinator.session(group_id, request.member_id, epoch, node)
    if session is None:
        return _error_response(error)
    renew = ctx.api_version >= 2 and request.is_renew_ack
    acks: dict[Key, ErrorCode] = {}
    for topic in request.topics:
        for p in topic.partitions:
            key = (topic.topic_id, p.partition_index)
            if epoch != FINAL_EPOCH:
                session.partitions[key] = None
            if p.acknowledgement_batches:
                acks[key] = acknowledge(
                    state,
                    ctx,
                    coordinator,
                    group_id,
                    request.member_id,
                    topic.topic_id,
                    p.partition_index,
                    p.acknowledgement_batches,
                    renew,
                )
    for forgotten in request.forgotten_topics_data:
        for index in forgotten.partitions:
            session.partitions.pop((forgotten.topic_id, index), None)
    fetch = _Fetch(state, ctx, request, coordinator, session, acks)
    if epoch == FINAL_EPOCH:
        response = fetch.read(final=True)
        coordinator.close_session(group_id, request.member_id, node)
        flush_share_state(state)
        return response
    if request.max_wait_ms <= 0:
        return fetch.read(final=True)
    response = fetch.read(final=False)
    if response is not None:
        return response
    keys: set[Any] = {share_key(group_id)}
    for topic_id, index in session.partitions:
        found = state.topics_by_id.get(topic_id)
        if found is not None and 0 <= index < len(found.partitions):
            keys.add(found.partitions[index])
    return Deferred(state.now_ms() + request.max_wait_ms, keys, fetch.read)
