"""Fetch: sessions (KIP-227), long polls, byte limits (KIP-74), down-conversion (KIP-31), zero copy.

Approach, after Kafka's ``KafkaApis.handleFetchRequest``, ``FetchSessionCache`` and
``ReplicaManager.fetchMessages``:

- the session is resolved once, when the request arrives: a sessionless full fetch (id 0,
  epoch -1), a new session (epoch 0: the broker answers with a fresh id), or an incremental
  fetch that adds, updates and forgets partitions of a cached session; an unknown id is
  FETCH_SESSION_ID_NOT_FOUND, a wrong epoch INVALID_FETCH_SESSION_EPOCH;
- the read then runs, maybe several times: partitions in request order, each up to its
  ``partition_max_bytes`` and all together up to ``max_bytes``; from v3 the first batch found is
  returned whole even when larger than the limits (``minOneMessage``), before v3 the limits are
  hard. Until ``min_bytes`` are available (and no partition has an error) the response waits up to
  ``max_wait_ms``, woken whenever a fetched partition grows;
- a fetch version that cannot read what is stored gets converted record sets (v0-1 read magic 0,
  v2-3 magic 1), unless ``message.downconversion.enable`` is false (UNSUPPORTED_VERSION); zstd
  needs v10+ (UNSUPPORTED_COMPRESSION_TYPE). Otherwise the records are a ``FileRecords``: slices
  of the segment files that the server sends with ``sendfile``, never copied into Python;
- an incremental session's response holds only the partitions with something new: records, a
  moved high watermark, last stable offset or log start offset, or an error.

Each partition goes through ``_partition_check.partition_or_error`` with READ: below v13 the
topic's name as sent, ``""`` included, is authorised before it is looked up, as
``KafkaApis.handleFetchRequest`` does (only an id no topic has skips authorisation, v13+).
"""

from __future__ import annotations

import random
import uuid
from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import field
from typing import Any, Final

from kwire._lazy import lazy_dataclass
from kwire.broker._apis import Deferred, register
from kwire.broker._context import RequestContext
from kwire.broker._file_records import CONVERT_CHUNK, ConvertedRecords, FileRecords
from kwire.broker._partition_check import partition_or_error
from kwire.broker._routing import node_endpoints, serving_node
from kwire.broker._state import BrokerState, Partition
from kwire.errors import CorruptRecordError, KwireError, UnsupportedCodecError
from kwire.log import OffsetOutOfRangeError
from kwire.log.storage import KafkaStorageError, batch_formats
from kwire.protocol import ZERO_UUID, ErrorCode
from kwire.protocol.messages import FetchRequest, FetchResponse
from kwire.records import Compression, convert_for_fetch, magic_for_fetch_version

__all__ = ["ConvertedRecords", "FetchSessionCache", "FileRecords", "handle_fetch"]

FETCH_RESPONSE: Final = FetchResponse
FETCH_TOPIC: Final = FetchResponse.FetchableTopicResponse
FETCH_PARTITION: Final = FetchResponse.PartitionData
ABORTED_TXN: Final = FetchResponse.AbortedTransaction
CURRENT_LEADER: Final = FetchResponse.LeaderIdAndEpoch
NODE_ENDPOINT: Final = FetchResponse.NodeEndpoint

INITIAL_EPOCH: Final = 0
FINAL_EPOCH: Final = -1
READ_COMMITTED: Final = 1
#: Kafka's ``max.incremental.fetch.session.cache.slots`` default.
MAX_SESSIONS: Final = 1000


# --- sessions ---------------------------------------------------------------------------------


@lazy_dataclass
class CachedPartition:
    """What a session remembers of one partition (Kafka's ``CachedPartition``)."""

    topic: str
    topic_id: uuid.UUID | None
    partition: int
    fetch_offset: int
    max_bytes: int
    current_leader_epoch: int
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1


@lazy_dataclass
class FetchSession:
    """An incremental fetch session (KIP-227, Kafka's ``FetchSession``): its id, the epoch the
    next request carries, and the partitions it caches, in the order responses rotate them."""

    session_id: int
    epoch: int
    partitions: OrderedDict[tuple[str | uuid.UUID, int], CachedPartition] = field(
        default_factory=OrderedDict
    )


def _key(cp: CachedPartition) -> tuple[str | uuid.UUID, int]:
    """A cached partition's key: its topic id from v13 (Kafka's ``TopicIdPartition``), so a
    topic deleted and recreated under the same name is another partition of the session."""
    return (cp.topic_id if cp.topic_id is not None else cp.topic), cp.partition


class FetchSessionCache:
    """The broker's incremental fetch sessions, least recently used evicted first."""

    def __init__(self, rng: random.Random, max_sessions: int = MAX_SESSIONS) -> None:
        self.max_sessions = max_sessions
        self.sessions: OrderedDict[int, FetchSession] = OrderedDict()
        self._random = rng  # the state's (``BrokerState.random``)

    def new_session(self) -> FetchSession:
        while True:
            session_id = self._random.randint(1, 2**31 - 1)
            if session_id not in self.sessions:
                break
        if len(self.sessions) >= self.max_sessions:
            self.sessions.popitem(last=False)
        session = FetchSession(session_id, 1)
        self.sessions[session_id] = session
        return session

    def get(self, session_id: int) -> FetchSession | None:
        session = self.sessions.get(session_id)
        if session is not None:
            self.sessions.move_to_end(session_id)
        return session

    def remove(self, session_id: int) -> None:
        self.sessions.pop(session_id, None)


def _sessions(state: BrokerState, node: int) -> FetchSessionCache:
    """The fetch session cache of a node (each node of an in-process cluster has its own)."""
    caches = state.services.fetch_sessions
    cache = caches.get(node)
    if cache is None:
        cache = caches[node] = FetchSessionCache(state.random)
    return cache


# --- the handler ------------------------------------------------------------------------------


def _topic_name(state: BrokerState, topic: Any, by_id: bool) -> tuple[str | None, uuid.UUID | None]:
    if not by_id:
        return topic.topic, None
    found = state.topics_by_id.get(topic.topic_id)
    return (found.name if found else None), topic.topic_id


def _requested(state: BrokerState, request: Any, by_id: bool) -> list[CachedPartition]:
    out = []
    for topic in request.topics:
        name, topic_id = _topic_name(state, topic, by_id)
        for p in topic.partitions:
            out.append(
                CachedPartition(
                    topic=name if name is not None else "",
                    topic_id=topic_id,
                    partition=p.partition,
                    fetch_offset=p.fetch_offset,
                    max_bytes=p.partition_max_bytes,
                    current_leader_epoch=p.current_leader_epoch,
                )
            )
    return out


def _error_response(error: ErrorCode) -> Any:
    return FETCH_RESPONSE(throttle_time_ms=0, error_code=int(error), session_id=0, responses=[])


@register(1, 0, 17)
def handle_fetch(state: BrokerState, ctx: RequestContext, request: FetchRequest) -> Any:
    version = ctx.api_version
    by_id = version >= 13
    session_id = request.session_id if version >= 7 else 0
    epoch = request.session_epoch if version >= 7 else FINAL_EPOCH
    cache = _sessions(state, serving_node(state, ctx))
    requested = _requested(state, request, by_id)
    session: FetchSession | None = None
    incremental = False
    if session_id == 0 and epoch == INITIAL_EPOCH and version >= 7:
        session = cache.new_session()
        for cp in requested:
            session.partitions[_key(cp)] = cp
        partitions = list(session.partitions.values())
    elif epoch in (INITIAL_EPOCH, FINAL_EPOCH):
        if session_id != 0:
            cache.remove(session_id)  # close the session; this fetch is sessionless
        partitions = requested
    else:
        session = cache.get(session_id)
        if session is None:
            return _error_response(ErrorCode.FETCH_SESSION_ID_NOT_FOUND)
        if session.epoch != epoch:
            return _error_response(ErrorCode.INVALID_FETCH_SESSION_EPOCH)
        session.epoch = epoch + 1 if epoch < 2**31 - 1 else 1
        for cp in requested:
            key = _key(cp)
            old = session.partitions.get(key)
            if old is not None:
                cp.high_watermark = old.high_watermark
                cp.last_stable_offset = old.last_stable_offset
                cp.log_start_offset = old.log_start_offset
            session.partitions[key] = cp
        for forgotten in request.forgotten_topics_data:
            topic: str | uuid.UUID = forgotten.topic_id if by_id else forgotten.topic
            for index in forgotten.partitions:
                session.partitions.pop((topic, index), None)
        partitions = list(session.partitions.values())
        incremental = True

    plan = _FetchPlan(state, ctx, request, partitions, session, incremental)
    response = plan.read(final=request.max_wait_ms <= 0)
    if response is not None:
        return response
    watched: set[Hashable] = {
        p for p in (state.partition(cp.topic, cp.partition) for cp in partitions) if p
    }
    return Deferred(
        deadline_ms=state.now_ms() + request.max_wait_ms,
        keys=watched,
        complete=lambda final: plan.read(final=final),
    )


class _FetchPlan:
    """One fetch's reads, redone until enough bytes are there or the wait is over."""

    def __init__(
        self,
        state: BrokerState,
        ctx: RequestContext,
        request: Any,
        partitions: list[CachedPartition],
        session: FetchSession | None,
        incremental: bool,
    ) -> None:
        self.state = state
        self.ctx = ctx
        self.version = ctx.api_version
        self.request = request
        self.partitions = partitions
        self.session = session
        self.incremental = incremental
        self.isolation = request.isolation_level if self.version >= 4 else 0
        self.max_bytes = request.max_bytes if self.version >= 3 else 2**31 - 1
        self.min_bytes = request.min_bytes
        self.moved: set[int] = set()  # leaders named in current_leader fields (KIP-951)

    def read(self, *, final: bool) -> Any:
        total = 0
        errors = False
        outputs: list[tuple[CachedPartition, Any]] = []
        min_one = self.version >= 3
        for cp in self.partitions:
            out, size = self._read_partition(cp, min_one, self.max_bytes - total)
            if size:
                min_one = False
            total += size
            errors = errors or out.error_code != 0
            outputs.append((cp, out))
        if not final and total < self.min_bytes and not errors:
            self.ctx.release()  # parked: hold no descriptors while waiting
            return None
        return self._response(outputs)

    def _read_partition(self, cp: CachedPartition, min_one: bool, budget: int) -> tuple[Any, int]:
        out = FETCH_PARTITION(
            partition_index=cp.partition,
            error_code=0,
            high_watermark=-1,
            last_stable_offset=-1,
            log_start_offset=-1,
            aborted_transactions=None,
            preferred_read_replica=-1,
            # Empty, never null, on every error path (FetchResponse.partitionResponse:
            # MemoryRecords.EMPTY): librdkafka rejects a null record set and never resets.
            records=b"",
        )
        by_id = self.version >= 13
        name: str | None = cp.topic
        if by_id:
            # Resolved at every read, not when the session cached it: once the id is deleted
            # the partition is UNKNOWN_TOPIC_ID (the client drops it), and a topic recreated
            # under the name is not served to offsets of the old one. None is Kafka's null
            # name, not authorised; by name, "" is authorised like any name.
            found = self.state.topics_by_id.get(cp.topic_id) if cp.topic_id else None
            name = found.name if found is not None else None
        error, partition = partition_or_error(
            self.state,
            self.ctx,
            name,
            cp.partition,
            operation="READ",
            by_id=by_id,
            current_leader_epoch=cp.current_leader_epoch if self.version >= 9 else -1,
        )
        if partition is None:
            out.error_code = int(error)
            return out, 0
        if error in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.FENCED_LEADER_EPOCH):
            if self.version >= 12:  # KIP-951: where the partition is led now
                out.current_leader = CURRENT_LEADER(
                    leader_id=partition.leader_id, leader_epoch=partition.leader_epoch
                )
                self.moved.add(partition.leader_id)
            if error is ErrorCode.NOT_LEADER_OR_FOLLOWER:
                out.error_code = int(error)
                return out, 0
        live = partition.log
        out.high_watermark = live.high_watermark
        out.last_stable_offset = partition.last_stable_offset()
        out.log_start_offset = live.log_start_offset
        if error is not ErrorCode.NONE:
            out.error_code = int(error)
            return out, 0
        max_offset = (
            partition.last_stable_offset()
            if self.isolation == READ_COMMITTED
            else live.high_watermark
        )
        limit = min(cp.max_bytes, max(budget, 0))
        try:
            data = live.read(
                cp.fetch_offset,
                limit,
                max_offset=max_offset,
                min_one_message=min_one,
            )
        except OffsetOutOfRangeError:
            out.error_code = int(ErrorCode.OFFSET_OUT_OF_RANGE)
            return out, 0
        except KafkaStorageError:  # the log dir is offline (ReplicaManager.readFromLog)
            out.error_code = int(ErrorCode.KAFKA_STORAGE_ERROR)
            out.records = b""
            return out, 0
        except CorruptRecordError:  # a segment damaged on disk: this partition's error only
            out.error_code = int(ErrorCode.CORRUPT_MESSAGE)
            out.records = b""
            return out, 0
        if self.isolation == READ_COMMITTED and self.version >= 4:
            aborted = live.aborted_transactions(cp.fetch_offset, cp.fetch_offset + 1 + data.size)
            out.aborted_transactions = [
                ABORTED_TXN(producer_id=a.producer_id, first_offset=a.first_offset) for a in aborted
            ]
        if data.size == 0:
            out.records = b""
            return out, 0
        out.records, size = self._records_for_version(partition, data, out)
        return out, size

    def _records_for_version(self, partition: Partition, data: Any, out: Any) -> tuple[Any, int]:
        """Zero copy whenever the version reads every stored batch as it is: from v10 always,
        below when the batches' magic is one the version reads (Kafka's ``hasMatchingMagic``,
        checked on the headers alone); else a down-conversion, lazy beyond one chunk."""
        if self.version >= 10:
            return self._held(FileRecords(data.slices))
        formats = batch_formats(data.slices)
        if any(codec == Compression.ZSTD for _, codec in formats):
            out.error_code = int(ErrorCode.UNSUPPORTED_COMPRESSION_TYPE)  # zstd needs v10+
            return b"", 0
        if all(magic <= magic_for_fetch_version(self.version) for magic, _ in formats):
            return self._held(FileRecords(data.slices))
        enabled = partition.topic.configs.get("message.downconversion.enable", "true")
        if enabled.lower() != "true":
            out.error_code = int(ErrorCode.UNSUPPORTED_VERSION)
            return b"", 0
        try:
            if data.size > CONVERT_CHUNK:
                return self._held(ConvertedRecords(data.slices, self.version, data.first_offset))
            converted = convert_for_fetch(
                data.read_bytes(), self.version, first_offset=data.first_offset
            )
        except UnsupportedCodecError:
            out.error_code = int(ErrorCode.UNSUPPORTED_COMPRESSION_TYPE)
            return b"", 0
        except KwireError:
            out.error_code = int(ErrorCode.CORRUPT_MESSAGE)
            return b"", 0
        converted_bytes = bytes(converted.records)
        return converted_bytes, len(converted_bytes)

    def _held(self, records: FileRecords) -> tuple[FileRecords, int]:
        """Records on duplicated descriptors: the request holds them from here until the server
        releases it, whether the response is written or not (``RequestContext.release``)."""
        self.ctx.hold(records)
        return records, records.nbytes

    def _response(self, outputs: list[tuple[CachedPartition, Any]]) -> Any:
        topics: list[Any] = []
        by_topic: dict[tuple[str, uuid.UUID | None], Any] = {}
        for cp, out in outputs:
            if self.incremental and not self._changed(cp, out):
                continue
            cp.high_watermark = out.high_watermark
            cp.last_stable_offset = out.last_stable_offset
            cp.log_start_offset = out.log_start_offset
            key = (cp.topic, cp.topic_id)
            entry = by_topic.get(key)
            if entry is None:
                entry = FETCH_TOPIC(
                    topic=cp.topic, topic_id=cp.topic_id or ZERO_UUID, partitions=[]
                )
                by_topic[key] = entry
                topics.append(entry)
            entry.partitions.append(out)
        response: Any = FETCH_RESPONSE(
            throttle_time_ms=0,
            error_code=0,
            session_id=self.session.session_id if self.session is not None else 0,
            responses=topics,
        )
        if self.moved and self.version >= 16:
            response.node_endpoints = node_endpoints(
                self.state, self.ctx, self.moved, NODE_ENDPOINT
            )
        self.moved = set()
        return response

    @staticmethod
    def _changed(cp: CachedPartition, out: Any) -> bool:
        return bool(
            out.error_code != 0
            or _records_size(out.records) > 0
            or out.high_watermark != cp.high_watermark
            or out.last_stable_offset != cp.last_stable_offset
            or out.log_start_offset != cp.log_start_offset
        )


def _records_size(records: Any) -> int:
    if records is None:
        return 0
    if isinstance(records, FileRecords):
        return records.nbytes
    return len(records)
