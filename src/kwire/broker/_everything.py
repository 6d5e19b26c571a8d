"""Everything ``kwire.broker`` offers, loaded at once: the handler modules (they register
themselves in ``HANDLERS``) and the public names. The package loads this module on the first name
it is asked for, so that importing the package (the pytest plugin does) costs nothing."""

# the handler modules register themselves (``_apis.register``)
import kwire.broker._acl
import kwire.broker._admin
import kwire.broker._alter_partition_reassignments
import kwire.broker._alter_replica_log_dirs
import kwire.broker._alter_share_group_offsets
import kwire.broker._cleaner
import kwire.broker._data
import kwire.broker._delete_share_group_offsets
import kwire.broker._delete_share_group_state
import kwire.broker._describe_quorum
import kwire.broker._describe_share_group_offsets
import kwire.broker._describe_topic_partitions
import kwire.broker._elect_leaders
import kwire.broker._fetch
import kwire.broker._group_apis
import kwire.broker._initialize_share_group_state
import kwire.broker._list_partition_reassignments
import kwire.broker._quotas
import kwire.broker._read_share_group_state
import kwire.broker._read_share_group_state_summary
import kwire.broker._routing
import kwire.broker._sasl
import kwire.broker._share_acknowledge
import kwire.broker._share_feature
import kwire.broker._share_fetch
import kwire.broker._share_group_describe
import kwire.broker._share_group_heartbeat
import kwire.broker._streams_group_apis
import kwire.broker._txn_apis
import kwire.broker._update_features
import kwire.broker._write_share_group_state  # noqa: F401
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
