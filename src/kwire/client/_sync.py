"""A blocking facade over ``AsyncKafkaClient`` for code that is not async (Spark's executors, scripts).

The client runs on an event loop of its own in this thread: each call runs the coroutine to
completion, and iterators step it batch by batch, so no thread is started and nothing is left
running between calls.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from kwire.client._client import AsyncKafkaClient
from kwire.client._config import ClientConfig
from kwire.client._errors import KafkaApiError
from kwire.client._metadata import ClusterMetadata
from kwire.client._produce import IdempotentSequences
from kwire.client._txn import Transaction
from kwire.protocol import ErrorCode

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["KafkaClient"]


class KafkaClient:
    """``KafkaClient({"bootstrap.servers": "127.0.0.1:9092"})``; use as a context manager."""

    def __init__(self, options: Mapping[str, str] | ClientConfig) -> None:
        config = (
            options if isinstance(options, ClientConfig) else ClientConfig.from_options(options)
        )
        self._loop = asyncio.new_event_loop()
        self._client = AsyncKafkaClient(config)

    @property
    def config(self) -> ClientConfig:
        return self._client.config

    def __enter__(self) -> KafkaClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if not self._loop.is_closed():
            self._loop.run_until_complete(self._client.close())
            self._loop.close()

    def _run(self, coro: Any) -> Any:
        return self._loop.run_until_complete(coro)

    def metadata(self, topics: list[str] | None = None) -> ClusterMetadata:
        return self._run(self._client.refresh_metadata(topics))  # type: ignore[no-any-return]

    def list_offsets(
        self,
        partitions: Iterable[tuple[str, int]],
        timestamp: int,
        *,
        read_committed: bool | None = None,
    ) -> dict[tuple[str, int], int]:
        return self._run(  # type: ignore[no-any-return]
            self._client.list_offsets(partitions, timestamp, read_committed=read_committed)
        )

    def fetch_range(
        self,
        topic: str,
        partition: int,
        start: int,
        end: int,
        *,
        columns: Sequence[str],
        read_committed: bool | None = None,
        fail_on_data_loss: bool = True,
    ) -> Iterator[pa.RecordBatch]:
        """``AsyncKafkaClient.fetch_range``, one Arrow batch per step."""
        if not self._client.metadata.partitions.get(topic):
            self.metadata([topic])
        agen = self._client.fetch_range(
            topic,
            partition,
            start,
            end,
            columns=columns,
            read_committed=read_committed,
            fail_on_data_loss=fail_on_data_loss,
        )
        try:
            while True:
                try:
                    yield self._run(agen.__anext__())
                except StopAsyncIteration:
                    return
        finally:
            if not self._loop.is_closed():  # a generator left open past close() has nothing to free
                self._run(agen.aclose())

    def init_producer_id(self) -> IdempotentSequences:
        return self._run(self._client.init_producer_id())  # type: ignore[no-any-return]

    def produce(
        self,
        topic: str,
        partition: int,
        records: Sequence[tuple[bytes | None, bytes | None, Any, int]],
        *,
        sequences: IdempotentSequences | None = None,
        transaction: Transaction | None = None,
    ) -> int:
        """``AsyncKafkaClient.produce``: one batch, its base offset."""
        return self._run(  # type: ignore[no-any-return]
            self._client.produce(
                topic, partition, records, sequences=sequences, transaction=transaction
            )
        )

    # ---- transactions: ``AsyncKafkaClient``'s, blocking ------------------------------------
    def init_transactions(
        self, transactional_id: str | None = None, *, timeout_ms: int | None = None
    ) -> Transaction:
        return self._run(  # type: ignore[no-any-return]
            self._client.init_transactions(transactional_id, timeout_ms=timeout_ms)
        )

    def begin_transaction(self, txn: Transaction) -> None:
        self._client.begin_transaction(txn)

    def send_offsets_to_transaction(
        self,
        txn: Transaction,
        offsets: Mapping[tuple[str, int], tuple[int, str | None]],
        group_id: str,
    ) -> None:
        self._run(self._client.send_offsets_to_transaction(txn, offsets, group_id))

    def commit_transaction(self, txn: Transaction) -> None:
        self._run(self._client.end_transaction(txn, True))

    def abort_transaction(self, txn: Transaction) -> None:
        self._run(self._client.end_transaction(txn, False))

    def committed_offsets(
        self, group_id: str, *, require_stable: bool = True
    ) -> dict[tuple[str, int], tuple[int, str | None]]:
        return self._run(  # type: ignore[no-any-return]
            self._client.committed_offsets(group_id, require_stable=require_stable)
        )

    def metadata_partition_count(self, topic: str) -> int:
        """How many partitions ``topic`` has (Metadata is asked once per unknown topic)."""
        count = self._client.metadata.partition_count(topic)
        if count == 0:
            count = self.metadata([topic]).partition_count(topic)
        if count == 0:
            error = self._client.metadata.topic_errors.get(
                topic, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            )
            raise KafkaApiError(error, f"Metadata of {topic}")
        return count
