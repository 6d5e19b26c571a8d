"""The asyncio client: metadata, offsets and fetches routed to partition leaders, with Kafka's retries.

``AsyncKafkaClient`` keeps one ``BrokerConnection`` per broker and a ``ClusterMetadata``. Every
call retries what Kafka's Java client retries (``kwire.client._errors``): an error meaning stale
metadata refreshes it first, a lost connection is reopened, and the wait between tries grows
exponentially from ``retry.backoff.ms`` to ``retry.backoff.max.ms`` with 20% jitter (KIP-580),
until ``request.timeout.ms`` (per try) and the caller's deadline run out.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import AsyncGenerator, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from kwire.client._config import ClientConfig
from kwire.client._connection import BrokerConnection
from kwire.client._errors import INVALID_METADATA, RETRIABLE, ClientError, KafkaApiError
from kwire.client._fetch import (
    READ_COMMITTED,
    READ_UNCOMMITTED,
    FetchedRange,
    FetchPosition,
    fetch_ahead,
    fetch_request,
    parse_fetch_response,
    scan_fetched,
)
from kwire.client._metadata import BrokerAddress, ClusterMetadata, metadata_request
from kwire.client._produce import (
    CODECS,
    IdempotentSequences,
    build_batch_for,
    parse_produce_response,
    produce_request,
)
from kwire.client._txn import (
    COORDINATOR_MOVED,
    Transaction,
    TransactionError,
    TransactionState,
    txn_error,
)
from kwire.errors import OffsetOutOfRangeError, UnsupportedVersionError
from kwire.protocol import ErrorCode
from kwire.records import BatchBuilder

if TYPE_CHECKING:
    import pyarrow as pa

    from kwire.protocol.messages import (
        AddPartitionsToTxnResponse,
        EndTxnResponse,
        FindCoordinatorResponse,
        InitProducerIdResponse,
        ListOffsetsResponse,
        MetadataResponse,
        OffsetFetchResponse,
        TxnOffsetCommitResponse,
    )

__all__ = ["EARLIEST", "LATEST", "AsyncKafkaClient", "Backoff"]

#: ListOffsets timestamps with a meaning (Kafka's ``ListOffsetsRequest``).
EARLIEST = -2
LATEST = -1


class Backoff:
    """Kafka's ``ExponentialBackoff``: base * 2^attempts, capped, with +-jitter (KIP-580)."""

    def __init__(self, base_ms: int, max_ms: int, rng: random.Random | None = None) -> None:
        self.base_ms = max(base_ms, 1)
        self.max_ms = max(max_ms, self.base_ms)
        self.rng = rng or random.Random()

    def delay(self, attempts: int) -> float:
        """Seconds to wait before try ``attempts + 1``."""
        exp = min(self.base_ms * (2**attempts), self.max_ms)
        jitter = 1 + self.rng.uniform(-0.2, 0.2)
        return float(exp * jitter / 1000)


class AsyncKafkaClient:
    """A client of one Kafka cluster. Use ``async with``, or ``await close()``."""

    def __init__(self, config: ClientConfig, *, rng: random.Random | None = None) -> None:
        self.config = config
        self.metadata = ClusterMetadata()
        self.backoff = Backoff(config.retry_backoff_ms, config.retry_backoff_max_ms, rng)
        self._connections: dict[str, BrokerConnection] = {}
        self._coordinators: dict[tuple[int, str], BrokerAddress] = {}
        self._bootstrapped = False

    async def __aenter__(self) -> AsyncKafkaClient:
        await self.refresh_metadata()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        connections, self._connections = self._connections, {}
        for conn in connections.values():
            await conn.close()

    # ---- connections ---------------------------------------------------------------------------
    async def _connection(self, host: str, port: int) -> BrokerConnection:
        key = f"{host}:{port}"
        conn = self._connections.get(key)
        if conn is None or conn.closed:
            conn = await BrokerConnection.open(host, port, self.config)
            self._connections[key] = conn
        return conn

    async def _any_connection(self) -> BrokerConnection:
        """A connection to a known broker, else to a bootstrap server (each tried in turn)."""
        candidates = [(b.host, b.port) for b in self.metadata.brokers.values()]
        candidates += list(self.config.bootstrap_servers)
        errors = []
        for host, port in dict.fromkeys(candidates):
            try:
                return await self._connection(host, port)
            except ClientError as exc:
                if not exc.retriable:
                    raise  # refused credentials: another broker refuses them too
                errors.append(str(exc))
        raise ClientError("no broker reachable: " + "; ".join(errors))

    async def _retrying(self, attempt: Any, deadline_s: float | None = None) -> Any:
        """Run ``attempt()`` until it succeeds, retrying retriable failures with backoff."""
        deadline = time.monotonic() + (
            deadline_s if deadline_s is not None else self.config.request_timeout_ms / 1000 * 2
        )
        tries = 0
        while True:
            try:
                return await attempt()
            except KafkaApiError as exc:
                if not exc.retriable or time.monotonic() >= deadline:
                    raise
                if exc.error in INVALID_METADATA:
                    await self._refresh_quietly()
            except ClientError as exc:
                if not exc.retriable or time.monotonic() >= deadline:
                    raise
                await self._refresh_quietly()
            await asyncio.sleep(self.backoff.delay(tries))
            tries += 1

    async def _refresh_quietly(self) -> None:
        with contextlib.suppress(ClientError):  # the next attempt says what is wrong
            await self._metadata_once(None)

    # ---- metadata ------------------------------------------------------------------------------
    async def _metadata_once(self, topics: list[str] | None) -> ClusterMetadata:
        conn = await self._any_connection()
        version = conn.versions.pick("MetadataRequest")
        response: MetadataResponse = await conn.request(
            metadata_request(topics, version), version, check=False
        )
        self.metadata = ClusterMetadata.from_response(response)
        return self.metadata

    async def refresh_metadata(self, topics: list[str] | None = None) -> ClusterMetadata:
        """Metadata of ``topics`` (None: every topic), retried while the cluster is unreachable."""
        return await self._retrying(lambda: self._metadata_once(topics))  # type: ignore[no-any-return]

    async def _leader(self, topic: str, partition: int) -> tuple[BrokerAddress, BrokerConnection]:
        leader = self.metadata.leader(topic, partition)
        if leader is None:
            await self._metadata_once(None)
            leader = self.metadata.leader(topic, partition)
        if leader is None:
            error = self.metadata.topic_errors.get(topic)
            if error is None and partition not in self.metadata.partitions.get(topic, {}):
                error = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            raise KafkaApiError(
                error or ErrorCode.LEADER_NOT_AVAILABLE, f"leader of {topic}-{partition}"
            )
        return leader, await self._connection(leader.host, leader.port)

    # ---- ListOffsets ---------------------------------------------------------------------------
    async def list_offsets(
        self,
        partitions: Iterable[tuple[str, int]],
        timestamp: int,
        *,
        read_committed: bool | None = None,
    ) -> dict[tuple[str, int], int]:
        """The offset of ``timestamp`` (or EARLIEST / LATEST) per partition, from its leader.

        A timestamp after the last record answers -1, as Kafka's ``offsetsForTimes`` (None there).
        ``read_committed`` (default: the config's isolation.level): LATEST is the last stable offset.
        """
        committed = self.config.read_committed if read_committed is None else read_committed
        wanted = list(dict.fromkeys(partitions))
        out: dict[tuple[str, int], int] = {}

        async def attempt() -> dict[tuple[str, int], int]:
            # one request per leader for the partitions not answered yet (a retry after a
            # moved leader asks only for those)
            by_leader: dict[int, tuple[BrokerConnection, list[tuple[str, int]]]] = {}
            for topic, partition in wanted:
                if (topic, partition) not in out:
                    leader, conn = await self._leader(topic, partition)
                    by_leader.setdefault(leader.node_id, (conn, []))[1].append((topic, partition))
            for conn, tps in by_leader.values():
                await self._list_offsets_of(conn, tps, timestamp, committed, out)
            return out

        await self._retrying(attempt)
        return {tp: out[tp] for tp in wanted}

    async def _list_offsets_of(
        self,
        conn: BrokerConnection,
        tps: list[tuple[str, int]],
        timestamp: int,
        committed: bool,
        out: dict[tuple[str, int], int],
    ) -> None:
        """One ListOffsets of ``tps`` (all led by ``conn``'s broker) into ``out``; the first
        partition error is raised after the answered partitions are kept."""
        from kwire.protocol.messages import ListOffsetsRequest

        version = conn.versions.pick("ListOffsetsRequest")
        if version == 0 and timestamp >= 0:
            raise ClientError(
                f"the broker at {conn.address} has ListOffsets v0 only: no offsets by timestamp"
            )
        by_topic: dict[str, list[Any]] = {}
        for topic, partition in tps:
            part = ListOffsetsRequest.ListOffsetsPartition(
                partition_index=partition, timestamp=timestamp
            )
            if version == 0:
                part.max_num_offsets = 1
            if version >= 4:
                part.current_leader_epoch = self.metadata.leader_epoch(topic, partition)
            by_topic.setdefault(topic, []).append(part)
        extra: dict[str, Any] = {}
        if version >= 2:
            extra["isolation_level"] = READ_COMMITTED if committed else READ_UNCOMMITTED
        request = ListOffsetsRequest(
            replica_id=-1,
            topics=[
                ListOffsetsRequest.ListOffsetsTopic(name=t, partitions=parts)
                for t, parts in by_topic.items()
            ],
            **extra,
        )
        response: ListOffsetsResponse = await conn.request(request, version, check=False)
        error: KafkaApiError | None = None
        for t in response.topics:
            for p in t.partitions:
                tp = (t.name, p.partition_index)
                if tp not in tps:
                    continue
                if p.error_code:
                    error = error or KafkaApiError(
                        ErrorCode(p.error_code), f"ListOffsets of {tp[0]}-{tp[1]}"
                    )
                elif version == 0:
                    out[tp] = int(p.old_style_offsets[0]) if p.old_style_offsets else -1
                else:
                    out[tp] = int(p.offset)
        if error is not None:
            raise error
        missing = [tp for tp in tps if tp not in out]
        if missing:
            raise ClientError(
                f"ListOffsets answer from {conn.address} lacks "
                + ", ".join(f"{t}-{p}" for t, p in missing)
            )

    # ---- Fetch ---------------------------------------------------------------------------------
    async def fetch_range(
        self,
        topic: str,
        partition: int,
        start: int,
        end: int,
        *,
        columns: Sequence[str],
        read_committed: bool | None = None,
        fail_on_data_loss: bool = True,
    ) -> AsyncGenerator[pa.RecordBatch, None]:
        """Rows of ``topic``-``partition`` with offsets in ``[start, end)``, as Arrow batches.

        Each fetch goes to the partition's current leader; a moved leader is found again. If the
        log start has passed ``start`` (retention, DeleteRecords), ``fail_on_data_loss`` raises
        ``OffsetOutOfRangeError`` naming the partition and the offsets; otherwise reading goes on
        from the log start. Reading stops at ``end`` or at the partition's high watermark (last
        stable offset under read_committed), whichever comes first.
        """
        committed = self.config.read_committed if read_committed is None else read_committed
        position = start
        empty_answers = 0
        # one Fetch kept in flight ahead: sent before this answer is decoded (see _fetch)
        ahead: asyncio.Task[Any] | None = None
        ahead_offset = -1
        try:
            while position < end:
                task, ahead = ahead, None
                if task is not None and ahead_offset == position:
                    fetched = await task
                else:
                    if task is not None:
                        task.cancel()  # fetched ahead for a position the range left
                    fetched = await self._fetch_one(topic, partition, position, committed)
                if fetched.error == ErrorCode.OFFSET_OUT_OF_RANGE:
                    earliest = (await self.list_offsets([(topic, partition)], EARLIEST))[
                        (topic, partition)
                    ]
                    if earliest > position:
                        if fail_on_data_loss:
                            raise OffsetOutOfRangeError(
                                message=f"{topic}-{partition}: offsets {position} to "
                                f"{earliest - 1} are no longer in the log (its start is "
                                f"{earliest}); set failOnDataLoss to false to read on from there"
                            )
                        position = earliest
                        continue
                    raise OffsetOutOfRangeError(
                        message=f"{topic}-{partition}: offset {position} is past the log end"
                    )
                if fetched.error != ErrorCode.NONE:
                    raise KafkaApiError(
                        fetched.error, f"Fetch of {topic}-{partition} at {position}"
                    )
                limit = fetched.last_stable_offset if committed else fetched.high_watermark
                scan = scan_fetched(fetched, start=position, read_committed=committed)
                following = fetch_ahead(position, scan.next_offset, end=end, limit=limit)
                if following is not None:
                    ahead_offset = following
                    ahead = asyncio.ensure_future(
                        self._fetch_one(topic, partition, following, committed)
                    )
                    await asyncio.sleep(0)  # it sends its request before the decode holds the loop
                result = FetchedRange.from_partition(
                    fetched,
                    start=position,
                    end=end,
                    columns=columns,
                    read_committed=committed,
                    scan=scan,
                )
                del fetched  # the answer's buffer goes once its rows are decoded
                if result.rows.num_rows:
                    yield result.rows
                if result.next_offset > position:
                    position = result.next_offset
                    empty_answers = 0
                elif limit >= 0 and position >= limit:
                    return  # nothing more to read before the high watermark / LSO
                else:
                    empty_answers += 1
                    if empty_answers > 3:
                        raise ClientError(
                            f"Fetch of {topic}-{partition} at {position} returned no whole batch "
                            f"{empty_answers} times (a batch larger than max.partition.fetch.bytes?)"
                        )
        finally:
            if ahead is not None:
                ahead.cancel()
                with contextlib.suppress(BaseException):
                    await ahead

    async def _fetch_one(self, topic: str, partition: int, offset: int, committed: bool) -> Any:
        async def attempt() -> Any:
            _, conn = await self._leader(topic, partition)
            version = conn.versions.pick("FetchRequest")
            if version >= 13 and topic not in self.metadata.topic_ids:
                version = 12
            position = FetchPosition(
                topic, partition, offset, self.metadata.leader_epoch(topic, partition)
            )
            request = fetch_request(
                [position],
                version,
                self.metadata,
                isolation_level=READ_COMMITTED if committed else READ_UNCOMMITTED,
                # min_bytes 1: answered as soon as there is data (some brokers, tansu among
                # them, answer a max_wait_ms of 0 with no partitions at all)
                max_wait_ms=self.config.fetch_max_wait_ms,
                max_bytes=self.config.fetch_max_bytes,
                partition_max_bytes=self.config.max_partition_fetch_bytes,
            )
            response = await conn.request(request, version)
            for fetched in parse_fetch_response(response, version, self.metadata):
                if fetched.partition == partition:
                    if fetched.error in RETRIABLE:
                        raise KafkaApiError(fetched.error, f"Fetch of {topic}-{partition}")
                    return fetched
            raise ClientError(f"Fetch answer from {conn.address} lacks {topic}-{partition}")

        return await self._retrying(attempt)

    # ---- Produce -------------------------------------------------------------------------------
    async def init_producer_id(self) -> IdempotentSequences:
        """A new idempotent producer id and epoch (InitProducerId, no transactional id).

        With ``enable.idempotence=false``, or a broker before 0.11 (no InitProducerId), the
        producer is not idempotent: producer id -1, and retries may duplicate, as in Kafka.
        """
        if not self.config.enable_idempotence:
            return IdempotentSequences()

        async def attempt() -> IdempotentSequences:
            from kwire.protocol.messages import InitProducerIdRequest

            conn = await self._any_connection()
            if InitProducerIdRequest.API_KEY is None or not conn.versions.has(
                InitProducerIdRequest.API_KEY
            ):
                return IdempotentSequences()
            version = conn.versions.pick("InitProducerIdRequest")
            extra: dict[str, Any] = (
                {"producer_id": -1, "producer_epoch": -1} if version >= 3 else {}
            )
            request = InitProducerIdRequest(
                transactional_id=None, transaction_timeout_ms=60_000, **extra
            )
            response: InitProducerIdResponse = await conn.request(request, version)
            return IdempotentSequences(response.producer_id, response.producer_epoch)

        return await self._retrying(attempt)  # type: ignore[no-any-return]

    async def produce(
        self,
        topic: str,
        partition: int,
        records: Sequence[tuple[bytes | None, bytes | None, Any, int]],
        *,
        sequences: IdempotentSequences | None = None,
        transaction: Transaction | None = None,
    ) -> int:
        """Append ``(key, value, headers, timestamp_ms)`` records as one batch; its base offset.

        The batch is built once per record format and resent unchanged on retriable errors, so
        with ``sequences`` (an idempotent producer) a retry of a batch the broker already has is
        answered with the first append's offset, never appended twice. With ``transaction`` (an
        open one, ``begin_transaction``) the batch is part of it: its partition is added first
        (AddPartitionsToTxn; with transaction v2 the broker adds it), and read_committed readers
        see it only once the transaction commits.
        """
        if not records:
            raise ValueError("produce needs at least one record")
        if topic not in self.metadata.partitions:
            await self._metadata_once(None)
        if transaction is not None:
            transaction.require_open(f"produce to {topic}-{partition}")
            sequences = transaction.sequences
            await self._add_partitions(transaction, [(topic, partition)])
        built: dict[int, tuple[bytes, int]] = {}

        async def attempt() -> int:
            _, conn = await self._leader(topic, partition)
            top = None
            if transaction is not None and not transaction.transaction_v2:
                top = 11  # v12+ tells a TV2 broker to add the partition itself (KIP-890)
            version = conn.versions.pick("ProduceRequest", max_version=top)
            if version >= 13 and topic not in self.metadata.topic_ids:
                version = 12
            magic = 2 if version >= 3 else 1 if version == 2 else 0
            if magic not in built:
                built[magic] = self._build(
                    topic, partition, records, magic, sequences, transaction is not None
                )
            data, _ = built[magic]
            request = produce_request(
                {(topic, partition): data},
                version,
                acks=self.config.acks,
                timeout_ms=self.config.request_timeout_ms,
                metadata=self.metadata,
                transactional_id=transaction.transactional_id if transaction else None,
            )
            response = await conn.request(request, version)
            result = parse_produce_response(response, version, self.metadata).get(
                (topic, partition)
            )
            if result is None:
                raise ClientError(f"Produce answer from {conn.address} lacks {topic}-{partition}")
            if result.error == ErrorCode.DUPLICATE_SEQUENCE_NUMBER:
                return -1  # appended by an earlier try (brokers before 1.0 say so this way)
            if result.error != ErrorCode.NONE:
                raise KafkaApiError(result.error, f"Produce to {topic}-{partition}", result.message)
            return int(result.base_offset)

        if transaction is None:
            offset: int = await self._retrying(attempt)
        else:
            try:
                offset = await self._retrying(attempt)
            except KafkaApiError as exc:
                error = txn_error(exc.error, exc.where, str(exc))
                raise transaction.failed(error) from exc
            transaction.added([(topic, partition)])
        if sequences is not None and sequences.producer_id >= 0:
            sequences.acknowledged(topic, partition, len(records))
        return offset

    def _build(
        self,
        topic: str,
        partition: int,
        records: Sequence[tuple[bytes | None, bytes | None, Any, int]],
        magic: int,
        sequences: IdempotentSequences | None,
        transactional: bool = False,
    ) -> tuple[bytes, int]:
        if magic == 2:
            return build_batch_for(
                records,
                compression=self.config.compression_type,
                sequences=sequences,
                topic=topic,
                partition=partition,
                transactional=transactional,
            )
        if transactional:
            raise UnsupportedVersionError("transactions need Produce v3+ (Kafka 0.11+)")

        codec = self.config.compression_type
        if codec == "zstd":
            raise ClientError(f"the broker's Produce v{magic} has no zstd (magic 2 only)")
        builder = BatchBuilder(magic, CODECS[codec])
        for key, value, headers, timestamp in records:
            if headers:
                raise ClientError(f"magic {magic} (an old broker) has no record headers")
            builder.append(timestamp=timestamp if magic else -1, key=key, value=value)
        return builder.build(), len(builder)

    # ---- transactions (KIP-98) -----------------------------------------------------------------
    async def _coordinator(self, key: str, key_type: int) -> BrokerConnection:
        """The group (``key_type`` 0) or transaction (1) coordinator of ``key`` (FindCoordinator;
        v4+ asks in batch form, KIP-699). Kept until an error says it moved."""
        from kwire.protocol.messages import FindCoordinatorRequest

        known = self._coordinators.get((key_type, key))
        if known is None:
            conn = await self._any_connection()
            version = conn.versions.pick("FindCoordinatorRequest")
            if key_type and version < 1:
                # v0 finds group coordinators only: a broker before 0.11 has no transactions
                raise UnsupportedVersionError(
                    f"the broker at {conn.address} has no transactions (Kafka 0.11+)"
                )
            if version >= 4:
                request = FindCoordinatorRequest(key_type=key_type, coordinator_keys=[key])
            else:
                request = FindCoordinatorRequest(key=key, key_type=key_type)  # v0: 0, checked
            response: FindCoordinatorResponse = await conn.request(request, version, check=False)
            if version >= 4:
                found = next(iter(response.coordinators), None)
                if found is None:
                    raise ClientError(f"FindCoordinator answer from {conn.address} is empty")
                error, message = ErrorCode(found.error_code), found.error_message
                node_id, host, port = found.node_id, found.host, found.port
            else:
                error = ErrorCode(response.error_code)
                message = getattr(response, "error_message", None)
                node_id, host, port = response.node_id, response.host, response.port
            if error != ErrorCode.NONE:
                raise txn_error(error, f"FindCoordinator of {key!r}", message)
            known = BrokerAddress(node_id, host, port)
            self._coordinators[(key_type, key)] = known
        try:
            return await self._connection(known.host, known.port)
        except ClientError:
            self._coordinators.pop((key_type, key), None)
            raise

    async def _to_coordinator(
        self, key: str, key_type: int, build: Any, check: Any, where: str
    ) -> Any:
        """Send ``build(conn)`` -> (request, version) to ``key``'s coordinator until ``check``
        (the response -> ErrorCode) answers NONE: Kafka's ``TxnRequestHandler`` retries."""

        async def attempt() -> Any:
            conn = await self._coordinator(key, key_type)
            request, version = build(conn)
            try:
                response = await conn.request(request, version, check=False)
            except ClientError:
                self._coordinators.pop((key_type, key), None)
                raise
            error, message = check(response)
            if error == ErrorCode.NONE:
                return response
            if error in COORDINATOR_MOVED:
                self._coordinators.pop((key_type, key), None)
            raise txn_error(error, where, message)

        return await self._retrying(attempt, self.config.request_timeout_ms / 1000 * 4)

    @staticmethod
    def _top_error(response: Any) -> tuple[ErrorCode, str | None]:
        return ErrorCode(response.error_code), getattr(response, "error_message", None)

    async def init_transactions(
        self, transactional_id: str | None = None, *, timeout_ms: int | None = None
    ) -> Transaction:
        """InitProducerId with a transactional id (default: ``transactional.id``): a new epoch,
        which fences every earlier producer of that id and aborts a transaction it left open
        (the coordinator answers CONCURRENT_TRANSACTIONS until the abort is done; retried)."""
        from kwire.protocol.messages import InitProducerIdRequest

        tid = transactional_id or self.config.transactional_id
        if not tid:
            raise ClientError("init_transactions needs a transactional.id")
        txn = Transaction(
            tid, timeout_ms if timeout_ms is not None else self.config.transaction_timeout_ms
        )

        def build(conn: BrokerConnection) -> tuple[Any, int]:
            version = conn.versions.pick("InitProducerIdRequest")
            extra: dict[str, Any] = (
                {"producer_id": -1, "producer_epoch": -1} if version >= 3 else {}
            )
            return InitProducerIdRequest(
                transactional_id=tid, transaction_timeout_ms=txn.timeout_ms, **extra
            ), version

        try:
            response: InitProducerIdResponse = await self._to_coordinator(
                tid, 1, build, self._top_error, f"InitProducerId of {tid!r}"
            )
        except TransactionError as exc:
            raise txn.failed(exc) from None
        conn = await self._coordinator(tid, 1)
        v2 = (
            conn.versions.features.get("transaction.version", 0) >= 2
            and conn.versions.pick("EndTxnRequest") >= 5
        )
        txn.initialized(response.producer_id, response.producer_epoch, transaction_v2=v2)
        return txn

    def begin_transaction(self, txn: Transaction) -> None:
        txn.begin()

    async def _add_partitions(self, txn: Transaction, partitions: list[tuple[str, int]]) -> None:
        """AddPartitionsToTxn (v0-3, the client's versions) for partitions new to ``txn``."""
        from kwire.protocol.messages import AddPartitionsToTxnRequest

        new = txn.to_add(partitions)
        if not new:
            return
        by_topic: dict[str, list[int]] = {}
        for topic, partition in new:
            by_topic.setdefault(topic, []).append(partition)

        def build(conn: BrokerConnection) -> tuple[Any, int]:
            version = conn.versions.pick("AddPartitionsToTxnRequest", max_version=3)
            request = AddPartitionsToTxnRequest(
                v3_and_below_transactional_id=txn.transactional_id,
                v3_and_below_producer_id=txn.producer_id,
                v3_and_below_producer_epoch=txn.producer_epoch,
                v3_and_below_topics=[
                    AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name=t, partitions=p)
                    for t, p in by_topic.items()
                ],
            )
            return request, version

        def check(response: AddPartitionsToTxnResponse) -> tuple[ErrorCode, str | None]:
            errors = [
                ErrorCode(p.partition_error_code)
                for t in response.results_by_topic_v3_and_below
                for p in t.results_by_partition
            ]
            # OPERATION_NOT_ATTEMPTED: another partition of the request failed
            real = [
                e for e in errors if e not in (ErrorCode.NONE, ErrorCode.OPERATION_NOT_ATTEMPTED)
            ]
            return (real[0] if real else ErrorCode.NONE), None

        try:
            await self._to_coordinator(
                txn.transactional_id,
                1,
                build,
                check,
                f"AddPartitionsToTxn of {txn.transactional_id!r}",
            )
        except TransactionError as exc:
            raise txn.failed(exc) from None
        txn.added(new)

    async def send_offsets_to_transaction(
        self,
        txn: Transaction,
        offsets: Mapping[tuple[str, int], tuple[int, str | None]],
        group_id: str,
    ) -> None:
        """Commit ``offsets`` ((topic, partition) -> (offset, metadata)) of ``group_id`` as part of
        ``txn``: AddOffsetsToTxn to the transaction coordinator (not with transaction v2, where
        TxnOffsetCommit v5+ adds the group), then TxnOffsetCommit to the group coordinator."""
        from kwire.protocol.messages import AddOffsetsToTxnRequest, TxnOffsetCommitRequest

        txn.require_open(f"send offsets of {group_id!r}")
        try:
            if group_id not in txn.groups and not txn.transaction_v2:

                def build_add(conn: BrokerConnection) -> tuple[Any, int]:
                    request = AddOffsetsToTxnRequest(
                        transactional_id=txn.transactional_id,
                        producer_id=txn.producer_id,
                        producer_epoch=txn.producer_epoch,
                        group_id=group_id,
                    )
                    return request, conn.versions.pick("AddOffsetsToTxnRequest")

                await self._to_coordinator(
                    txn.transactional_id, 1, build_add, self._top_error, "AddOffsetsToTxn"
                )
            txn.groups.add(group_id)
            by_topic: dict[str, list[Any]] = {}
            for (topic, partition), (offset, meta) in offsets.items():
                by_topic.setdefault(topic, []).append(
                    TxnOffsetCommitRequest.TxnOffsetCommitRequestPartition(
                        partition_index=partition, committed_offset=offset, committed_metadata=meta
                    )
                )

            def build_commit(conn: BrokerConnection) -> tuple[Any, int]:
                top = None if txn.transaction_v2 else 4  # v5+: a TV2 group joins implicitly
                version = conn.versions.pick("TxnOffsetCommitRequest", max_version=top)
                request = TxnOffsetCommitRequest(
                    transactional_id=txn.transactional_id,
                    group_id=group_id,
                    producer_id=txn.producer_id,
                    producer_epoch=txn.producer_epoch,
                    topics=[
                        TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic(name=t, partitions=p)
                        for t, p in by_topic.items()
                    ],
                )
                if version >= 3:
                    request.generation_id, request.member_id = -1, ""
                return request, version

            def check_commit(response: TxnOffsetCommitResponse) -> tuple[ErrorCode, str | None]:
                for t in response.topics:
                    for p in t.partitions:
                        if p.error_code:
                            return ErrorCode(p.error_code), f"{t.name}-{p.partition_index}"
                return ErrorCode.NONE, None

            await self._to_coordinator(group_id, 0, build_commit, check_commit, "TxnOffsetCommit")
        except TransactionError as exc:
            raise txn.failed(exc) from None

    async def end_transaction(self, txn: Transaction, commit: bool) -> None:
        """EndTxn: commit (or abort) ``txn``; the coordinator writes the markers. A transaction
        that added nothing ends without a request (``TransactionManager``'s
        ``transactionStarted`` rule). Fenced: ``ProducerFencedError``."""
        from kwire.protocol.messages import EndTxnRequest

        if commit and txn.state is TransactionState.ABORTABLE_ERROR:
            raise ClientError(
                f"cannot commit: the transaction of {txn.transactional_id!r} failed "
                f"({txn.last_error}); abort it"
            )
        txn.ending(commit)
        if not txn.partitions and not txn.groups and not txn.resumed:
            txn.ended(-1, -1)
            return

        def build(conn: BrokerConnection) -> tuple[Any, int]:
            version = conn.versions.pick(
                "EndTxnRequest", max_version=None if txn.transaction_v2 else 4
            )
            request = EndTxnRequest(
                transactional_id=txn.transactional_id,
                producer_id=txn.producer_id,
                producer_epoch=txn.producer_epoch,
                committed=commit,
            )
            return request, version

        try:
            response: EndTxnResponse = await self._to_coordinator(
                txn.transactional_id,
                1,
                build,
                self._top_error,
                f"EndTxn ({'commit' if commit else 'abort'}) of {txn.transactional_id!r}",
            )
        except TransactionError as exc:
            raise txn.failed(exc) from None
        txn.ended(getattr(response, "producer_id", -1), getattr(response, "producer_epoch", -1))

    async def committed_offsets(
        self, group_id: str, *, require_stable: bool = True
    ) -> dict[tuple[str, int], tuple[int, str | None]]:
        """Every committed offset of ``group_id`` (OffsetFetch of all topics, v2-v7);
        ``require_stable``: wait for pending transactional commits (KIP-447: the coordinator
        answers UNSTABLE_OFFSET_COMMIT, retried, until they are committed or aborted)."""
        from kwire.protocol.messages import OffsetFetchRequest

        def build(conn: BrokerConnection) -> tuple[Any, int]:
            version = conn.versions.pick("OffsetFetchRequest", max_version=7)
            if version < 2:
                raise ClientError("OffsetFetch of every topic needs v2+ (Kafka 0.10.2+)")
            request = OffsetFetchRequest(group_id=group_id, topics=None)
            if version >= 7:
                request.require_stable = require_stable
            return request, version

        def check(response: OffsetFetchResponse) -> tuple[ErrorCode, str | None]:
            if response.error_code:
                return ErrorCode(response.error_code), None
            for t in response.topics:
                for p in t.partitions:
                    if p.error_code:
                        return ErrorCode(p.error_code), f"{t.name}-{p.partition_index}"
            return ErrorCode.NONE, None

        response: OffsetFetchResponse = await self._to_coordinator(
            group_id, 0, build, check, "OffsetFetch"
        )
        return {
            (t.name, p.partition_index): (int(p.committed_offset), p.metadata)
            for t in response.topics
            for p in t.partitions
            if p.committed_offset >= 0
        }
