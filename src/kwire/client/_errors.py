"""The client's error rules: which of a broker's error codes are worth retrying, and which mean the
client's view of the cluster is stale.

Kafka's Java client decides both by exception class: an error is retried when its exception extends
``RetriableException``, and metadata is refreshed first when it extends ``InvalidMetadataException``
(``org.apache.kafka.common.errors``). The two sets below are those classes' error codes, so this
client retries exactly what Kafka's client retries.
"""

from __future__ import annotations

from typing import Final

from kwire.errors import KwireError
from kwire.protocol import ErrorCode

__all__ = [
    "INVALID_METADATA",
    "RETRIABLE",
    "AuthenticationError",
    "ClientError",
    "ConnectionClosed",
    "KafkaApiError",
]

E = ErrorCode

#: Error codes whose exceptions extend ``InvalidMetadataException``: refresh metadata, then retry.
INVALID_METADATA: Final = frozenset(
    {
        E.UNKNOWN_TOPIC_OR_PARTITION,
        E.LEADER_NOT_AVAILABLE,
        E.NOT_LEADER_OR_FOLLOWER,
        E.REPLICA_NOT_AVAILABLE,
        E.KAFKA_STORAGE_ERROR,
        E.FENCED_LEADER_EPOCH,
        E.UNKNOWN_TOPIC_ID,
        E.INCONSISTENT_TOPIC_ID,
        E.NOT_CONTROLLER,
    }
)

#: Error codes whose exceptions extend ``RetriableException`` (a superset of the above).
RETRIABLE: Final = INVALID_METADATA | frozenset(
    {
        E.CORRUPT_MESSAGE,
        E.REQUEST_TIMED_OUT,
        E.NETWORK_EXCEPTION,
        E.COORDINATOR_LOAD_IN_PROGRESS,
        E.COORDINATOR_NOT_AVAILABLE,
        E.NOT_COORDINATOR,
        E.NOT_ENOUGH_REPLICAS,
        E.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
        E.CONCURRENT_TRANSACTIONS,
        E.FETCH_SESSION_ID_NOT_FOUND,
        E.INVALID_FETCH_SESSION_EPOCH,
        E.UNKNOWN_LEADER_EPOCH,
        E.OFFSET_NOT_AVAILABLE,
        E.PREFERRED_LEADER_NOT_AVAILABLE,
        E.UNSTABLE_OFFSET_COMMIT,
        E.THROTTLING_QUOTA_EXCEEDED,
        E.FETCH_SESSION_TOPIC_ID_ERROR,
    }
)


class ClientError(KwireError):
    """A request the client could not complete (connection, timeout, protocol)."""

    @property
    def retriable(self) -> bool:
        """Whether trying again may help (a lost connection, a timeout); see ``KafkaApiError``."""
        return True


class AuthenticationError(ClientError):
    """SASL failed on the client's side (the broker's answer was not the real broker's)."""

    @property
    def retriable(self) -> bool:
        return False


class ConnectionClosed(ClientError):
    """The broker closed the connection (or it could not be opened)."""


class KafkaApiError(ClientError):
    """A broker answered with a Kafka error code; ``error`` names it, ``where`` says for what."""

    def __init__(self, error: ErrorCode, where: str, message: str | None = None) -> None:
        self.error = error
        self.where = where
        detail = f": {message}" if message else ""
        super().__init__(f"{where}: {error.name} ({int(error)}){detail}")

    @property
    def retriable(self) -> bool:
        return self.error in RETRIABLE
