"""kwire.broker: a Kafka broker in Python that real clients use unchanged.

A sans-IO core and an asyncio edge (see docs/broker.md):

- ``BrokerState`` holds topics and partitions over a Kafka data directory (``kwire.log``'s live
  logs); request handlers (one table, ``HANDLERS``) turn a decoded request and the state into a
  response, with no sockets, and take the time from an injected clock;
- ``KafkaServer`` is the asyncio listener (frames, ordering, long-polling fetches, ``sendfile``);
- ``Cluster`` runs several brokers (node ids 1..N) over one shared state in one loop: leaders
  spread over the nodes, moved by hand or when a node stops, faults injected by API;
- ``Broker`` starts and stops it from Python (``start``/``stop`` in a thread,
  ``start_async``/``stop_async`` in a loop); ``kwire broker`` runs it from the shell, and the
  pytest plugin (``kwire.broker.pytest_plugin``) gives tests a ``kwire_broker`` fixture;
- ``personality(release)``: what a broker of any Kafka release from 0.8.0 to 4.3 advertises.
"""

from kwire.broker import (  # noqa: F401  (handlers register themselves)
    _acl,
    _admin,
    _alter_partition_reassignments,
    _alter_replica_log_dirs,
    _cleaner,
    _data,
    _describe_quorum,
    _describe_share_group_offsets,
    _describe_topic_partitions,
    _elect_leaders,
    _fetch,
    _group_apis,
    _list_partition_reassignments,
    _quotas,
    _routing,
    _sasl,
    _share_acknowledge,
    _share_fetch,
    _share_group_describe,
    _share_group_heartbeat,
    _txn_apis,
)
from kwire.broker._apis import HANDLERS, Deferred, implemented_versions
from kwire.broker._broker import Broker
from kwire.broker._cluster import Cluster
from kwire.broker._config import (
    BROKER_CONFIGS,
    TOPIC_CONFIGS,
    ConfigError,
    ConfigSource,
    ConfigType,
)
from kwire.broker._context import RequestContext
from kwire.broker._metadata_log import dump_json as metadata_record_json
from kwire.broker._releases import Personality, personality
from kwire.broker._server import KafkaServer
from kwire.broker._state import (
    BrokerError,
    BrokerState,
    Clock,
    ManualClock,
    Partition,
    SystemClock,
    Topic,
)

__all__ = [
    "BROKER_CONFIGS",
    "HANDLERS",
    "TOPIC_CONFIGS",
    "Broker",
    "BrokerError",
    "BrokerState",
    "Clock",
    "Cluster",
    "ConfigError",
    "ConfigSource",
    "ConfigType",
    "Deferred",
    "KafkaServer",
    "ManualClock",
    "Partition",
    "Personality",
    "RequestContext",
    "SystemClock",
    "Topic",
    "implemented_versions",
    "metadata_record_json",
    "personality",
]
