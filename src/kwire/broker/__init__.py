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
# (which the pytest plugin's import implies) must not load the broker, and a public name loads only
# its own module: handlers load on the first request of their API (``_apis.TABLE``).
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Final

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
    from kwire.broker._metadata_image import dump_json as metadata_record_json
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


#: Public name -> the module that defines it: the package imports only that module (and what it
#: imports) on the first use of a name, so ``from kwire.broker import Broker`` loads no handler.
_HOME: Final = {
    "BROKER_CONFIGS": "_config",
    "HANDLERS": "_apis",
    "TOPIC_CONFIGS": "_config",
    "Broker": "_broker",
    "BrokerError": "_state",
    "BrokerState": "_state",
    "Clock": "_state",
    "Cluster": "_cluster",
    "ConfigError": "_config",
    "ConfigSource": "_config",
    "ConfigType": "_config",
    "Deferred": "_apis",
    "KafkaServer": "_server",
    "ManualClock": "_state",
    "Partition": "_state",
    "Personality": "_releases",
    "RequestContext": "_context",
    "SystemClock": "_state",
    "Topic": "_state",
    "implemented_versions": "_apis",
    "metadata_record_json": "_metadata_image",
    "personality": "_releases",
}


def __getattr__(name: str) -> Any:
    # Only a public name loads a module. Any other (a submodule being imported, as in
    # ``from kwire.broker import _metadata_log``; probes such as ``__wrapped__``) is left to the
    # import system.
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'kwire.broker' has no attribute {name!r}")
    module = importlib.import_module(f"kwire.broker.{home}")
    value = getattr(module, "dump_json" if name == "metadata_record_json" else name)
    globals()[name] = value
    return value
