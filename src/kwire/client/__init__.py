"""kwire.client: a Kafka client for what a data pipeline needs, sans-IO at its core.

The pieces without I/O (``ClusterMetadata``, version negotiation, Fetch request building and the
decoding of fetched bytes into Arrow rows, Kafka's retriable-error rules) sit under an asyncio
edge (``BrokerConnection``, ``AsyncKafkaClient``) and a blocking facade (``KafkaClient``).
Settings use Kafka's client property names (``ClientConfig.from_options``), the ``kafka.*``
options Spark hands to Kafka's Java client. What it does today: bootstrap and Metadata (leaders,
topic ids), ListOffsets (earliest, latest, by timestamp), and Fetch of every version (magic 0/1
and v2, read_committed) into Arrow, Produce (one batch per call, idempotent by default: KIP-98
sequences kept across retries) and transactions (``transactional.id``: InitProducerId, AddPartitionsToTxn
or KIP-890's implicit adds, TxnOffsetCommit, EndTxn; fencing), over PLAINTEXT, TLS and SASL (PLAIN, SCRAM-SHA-256/512), against brokers from 0.8.2 (no
ApiVersions: ``broker.version.fallback``) to 4.x.
"""

from kwire.client._client import EARLIEST, LATEST, AsyncKafkaClient, Backoff
from kwire.client._config import ClientConfig, parse_bootstrap
from kwire.client._connection import BrokerConnection
from kwire.client._errors import (
    INVALID_METADATA,
    RETRIABLE,
    AuthenticationError,
    ClientError,
    ConnectionClosed,
    KafkaApiError,
)
from kwire.client._fetch import FetchedPartition, FetchedRange, FetchPosition
from kwire.client._metadata import BrokerAddress, ClusterMetadata, PartitionMetadata
from kwire.client._produce import IdempotentSequences, default_partition, murmur2
from kwire.client._sync import KafkaClient
from kwire.client._txn import (
    ProducerFencedError,
    Transaction,
    TransactionError,
    TransactionState,
)
from kwire.client._versions import ApiVersionTable

__all__ = [
    "EARLIEST",
    "INVALID_METADATA",
    "LATEST",
    "RETRIABLE",
    "ApiVersionTable",
    "AsyncKafkaClient",
    "AuthenticationError",
    "Backoff",
    "BrokerAddress",
    "BrokerConnection",
    "ClientConfig",
    "ClientError",
    "ClusterMetadata",
    "ConnectionClosed",
    "FetchPosition",
    "FetchedPartition",
    "FetchedRange",
    "IdempotentSequences",
    "KafkaApiError",
    "KafkaClient",
    "PartitionMetadata",
    "ProducerFencedError",
    "Transaction",
    "TransactionError",
    "TransactionState",
    "default_partition",
    "murmur2",
    "parse_bootstrap",
]
