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

# The package's own namespace is filled on first use (``__getattr__`` below): `import kwire.broker`
# (which the pytest plugin's import implies) must not load the broker, 200+ ms and 100+ modules.
from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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


_loading = False


def __getattr__(name: str) -> Any:
    global _loading
    # Only a public name loads the broker. Any other (a submodule being imported, as in
    # ``from kwire.broker import _metadata_log``; probes such as ``__wrapped__``) is left to the
    # import system, so that a submodule imported first imports only what it needs.
    if name not in __all__ or _loading:
        raise AttributeError(f"module 'kwire.broker' has no attribute {name!r}")
    _loading = True
    try:
        import kwire.broker._everything as everything
    finally:
        _loading = False
    namespace = globals()
    namespace.update((n, getattr(everything, n)) for n in __all__)
    return namespace[name]
