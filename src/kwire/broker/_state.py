"""The broker's state: topics, partitions and their live logs, producer ids, the clock.

Approach: ``BrokerState`` is what request handlers read and change; it holds no sockets and
takes the time from an injected ``Clock`` (tests advance a ``ManualClock``). Partitions own a
``kwire.log.LiveLog`` each; the files are ``kwire.log``'s business. Topic names follow Kafka's
``Topic.validate`` rules; topic ids are random v4 UUIDs, as KRaft controllers make them.

Topic names, ids, partition counts, config overrides and the next producer id block are kept as
a KRaft node keeps them, as metadata records in ``__cluster_metadata-0`` (``_metadata_log``):
every change is appended and fsynced before it is answered, and replayed at start. The internal
``__cluster_metadata`` topic is not a ``Topic`` (Kafka hides it). SCRAM credentials and ACLs are
there too: their stores (``_sasl``, ``_acl``) read ``metadata_image`` and write through
``append_metadata``. A ``kwire-metadata.json`` left
by an older kwire is read once, written into the metadata log, and renamed
``kwire-metadata.json.migrated``. The partition folders, their ``partition.metadata`` and the
checkpoint files are exactly Kafka's.
"""

from __future__ import annotations

import logging
import os
import random
import re
import time
import uuid
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from dataclasses import field
from typing import Final, Literal, Protocol

from kwire._lazy import lazy_dataclass
from kwire._wire import random_uuid, random_uuid_text
from kwire.broker import _metadata_image as mimage
from kwire.broker import _metadata_log as mlog
from kwire.broker._config import (
    ConfigError,
    log_config,
    resolve_broker_configs,
    validate_topic_configs,
)
from kwire.broker._releases import Personality
from kwire.broker._services import Services
from kwire.log.internal_topics import COORDINATOR_TOPICS, partition_for
from kwire.log.storage import (
    DataDir,
    KafkaStorageError,
    LiveLog,
    LogAppendInfo,
    read_legacy_json,
    retire_legacy_file,
)
from kwire.protocol import ErrorCode
from kwire.records import AppendOrigin, AppendResult

__all__ = [
    "BrokerError",
    "BrokerState",
    "Clock",
    "ManualClock",
    "Partition",
    "SystemClock",
    "Topic",
    "check_leader_epoch",
    "partition_for",
    "validate_topic_name",
]

log = logging.getLogger("kwire.broker")

#: What kwire kept before the metadata log (read once at start, then renamed ``.migrated``).
METADATA_FILE: Final = "kwire-metadata.json"
MAX_TOPIC_NAME: Final = 249
_LEGAL_TOPIC: Final = re.compile(r"^[a-zA-Z0-9._-]+$")
INTERNAL_TOPICS: Final = COORDINATOR_TOPICS


class Clock(Protocol):
    def now_ms(self) -> int: ...


class SystemClock:
    """Wall-clock milliseconds (Kafka's ``Time.SYSTEM.milliseconds()``)."""

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000


class ManualClock:
    """A clock the tests move by hand."""

    def __init__(self, now_ms: int = 1_700_000_000_000) -> None:
        self._now = now_ms

    def now_ms(self) -> int:
        return self._now

    def advance(self, ms: int) -> None:
        self._now += ms


class BrokerError(Exception):
    """A request-level failure carrying the Kafka error to answer with."""

    def __init__(self, error: ErrorCode, message: str | None = None) -> None:
        self.error = error
        self.message = message
        super().__init__(f"{error.name}: {message}" if message else error.name)


def validate_topic_name(name: str) -> None:
    """Kafka's ``Topic.validate``: raise ``BrokerError(INVALID_TOPIC_EXCEPTION)`` when illegal."""
    if not name:
        raise BrokerError(
            ErrorCode.INVALID_TOPIC_EXCEPTION, "Topic name is illegal, it can't be empty"
        )
    if name in (".", ".."):
        raise BrokerError(ErrorCode.INVALID_TOPIC_EXCEPTION, 'Topic name cannot be "." or ".."')
    if len(name) > MAX_TOPIC_NAME:
        raise BrokerError(
            ErrorCode.INVALID_TOPIC_EXCEPTION,
            f"Topic name is illegal, it can't be longer than {MAX_TOPIC_NAME} characters, "
            f"topic name: {name}",
        )
    if not _LEGAL_TOPIC.match(name):
        raise BrokerError(
            ErrorCode.INVALID_TOPIC_EXCEPTION,
            f'Topic name "{name}" is illegal, it contains a character other than ASCII '
            "alphanumerics, '.', '_' and '-'",
        )


@lazy_dataclass(eq=False)
class Partition:
    """One partition: its log, its leader's node id and leader epoch (bumped on every move)."""

    topic: Topic
    index: int
    log: LiveLog
    leader_epoch: int = 0
    leader_id: int = 1

    @property
    def high_watermark(self) -> int:
        return self.log.high_watermark

    def append(
        self,
        records: bytes | bytearray | memoryview,
        now_ms: int,
        *,
        origin: AppendOrigin = AppendOrigin.CLIENT,
        produce_version: int | None = None,
        validated: AppendResult | None = None,
    ) -> LogAppendInfo:
        """Append as the leader, at its leader epoch, then apply the high-watermark rule: this
        process holds the only replica, the whole ISR, so the high watermark follows the log end
        at once (``Partition.appendRecordsToLeader`` then ``maybeIncrementLeaderHW``). Callers
        go through ``BrokerState.append``, which also wakes the parked fetches."""
        info = self.log.append_as_leader(
            records,
            now_ms=now_ms,
            leader_epoch=self.leader_epoch,
            origin=origin,
            produce_version=produce_version,
            validated=validated,
        )
        if not info.duplicate and info.last_offset >= 0:
            self.log.high_watermark = self.log.log_end_offset
        return info

    def last_stable_offset(self) -> int:
        """The first offset of the oldest open transaction, else the high watermark."""
        unstable = self.log.first_unstable_offset()
        hw = self.log.high_watermark
        return hw if unstable is None else min(unstable, hw)


def check_leader_epoch(partition: Partition, current_leader_epoch: int) -> ErrorCode:
    """Kafka's ``Partition.checkCurrentLeaderEpoch``: -1 skips the check (handlers reach it
    through ``_partition_check.partition_or_error``)."""
    if current_leader_epoch == -1 or current_leader_epoch == partition.leader_epoch:
        return ErrorCode.NONE
    if current_leader_epoch < partition.leader_epoch:
        return ErrorCode.FENCED_LEADER_EPOCH
    return ErrorCode.UNKNOWN_LEADER_EPOCH


@lazy_dataclass(eq=False)
class Topic:
    """A topic the broker serves: its name, id, configs and partitions."""

    name: str
    topic_id: uuid.UUID
    configs: dict[str, str]
    partitions: list[Partition] = field(default_factory=list)

    @property
    def internal(self) -> bool:
        return self.name in INTERNAL_TOPICS


def _first_leaders(first: int, leaders: Sequence[int] | None) -> dict[int, tuple[int, int]] | None:
    """Chosen leaders of partitions ``first``, ``first + 1``, ... at leader epoch 0."""
    if leaders is None:
        return None
    return {first + i: (leader, 0) for i, leader in enumerate(leaders)}


class BrokerState:
    """Topics and partitions of one node, over one data directory (see the module doc)."""

    def __init__(
        self,
        data_dir: str | os.PathLike[str],
        *,
        personality: Personality,
        node_id: int = 1,
        host: str = "127.0.0.1",
        port: int = 9092,
        static_config: Mapping[str, str] | None = None,
        clock: Clock | None = None,
        cluster_id: str | None = None,
        nodes: Sequence[int] | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.path = os.fspath(data_dir)
        #: Where every random choice of the broker comes from (ids of topics, the cluster, fetch
        #: sessions, ...): a test that seeds it replays the same decisions.
        self.random = random.Random() if rng is None else rng
        self.personality = personality
        self.node_id = node_id
        #: Every node of the cluster (an in-process cluster has several; see ``_cluster``) ...
        self.nodes: list[int] = sorted(set(nodes or [node_id]))
        #: ... and the live ones: node id -> listener name -> advertised (host, port); a node
        #: whose listeners are not up yet has no endpoints (handlers use the request's own).
        self.live_brokers: dict[int, dict[str, tuple[str, int]]] = {n: {} for n in self.nodes}
        self._placed = 0  # round-robin cursor of leader placement
        self.host = host
        self.port = port
        self.clock: Clock = clock or SystemClock()
        self.static_config: dict[str, str] = dict(personality.default_broker_config())
        self.static_config.update(static_config or {})
        for name, value in self.static_config.items():
            definition = resolve_broker_configs({}).get(name)
            if definition is not None:
                definition.definition.validate(value)
        self.topics: dict[str, Topic] = {}
        self.topics_by_id: dict[uuid.UUID, Topic] = {}
        self.next_producer_id = 1000
        self._listeners: list[Callable[[Hashable], None]] = []
        self._tickers: list[Callable[[int], None]] = []
        self._deletion_listeners: list[Callable[[Topic], None]] = []
        #: Coordinators and other services that plug into the state, as named fields.
        self.services = Services()
        legacy = self._read_metadata()
        meta = legacy or {}
        #: Every log directory (``log.dirs``, JBOD): the data directory first (it also holds
        #: ``__cluster_metadata``, Kafka's ``metadata.log.dir``), then the others, each with
        #: its own ``meta.properties`` (directory id), ``.lock`` and checkpoints; their
        #: ``meta.properties`` are read once and checked together (``DataDir.open_all``).
        self.data_dirs: list[DataDir] = DataDir.open_all(
            [self.path, *self._extra_log_dirs()],
            cluster_id=cluster_id or str(meta.get("cluster_id") or "") or None,
            node_id=node_id,
            new_cluster_id=lambda: random_uuid_text(self.random),
        )
        self.data_dir = self.data_dirs[0]
        self.cluster_id: str = self.data_dir.cluster_id
        self.next_producer_id = int(str(meta.get("next_producer_id", self.next_producer_id)))
        started = time.monotonic()
        self._load_topics(meta.get("topics", {}), migrate_json=legacy is not None)
        self._log_loaded(started)
        self._next_producer_expiry = self.now_ms() + self.broker_int(
            "producer.id.expiration.check.interval.ms"
        )

    # --- time and config ----------------------------------------------------------------------

    def now_ms(self) -> int:
        return self.clock.now_ms()

    def uuid4(self) -> uuid.UUID:
        """A random (version 4) UUID drawn from ``self.random``."""
        return random_uuid(self.random)

    def dynamic_broker_configs(self, resource: str) -> dict[str, str]:
        """The dynamic broker configs of a BROKER resource (``""``: the cluster-wide default,
        else a node id), as ConfigRecords in ``__cluster_metadata`` hold them."""
        metadata = getattr(self, "_metadata", None)
        return {} if metadata is None else metadata.image.broker_configs(resource)

    @property
    def broker_settings(self) -> dict[str, str]:
        """The broker settings in force: static, under the cluster-wide dynamic defaults, under
        this node's dynamic configs (Kafka's ``DynamicBrokerConfig`` precedence)."""
        return {
            **self.static_config,
            **self.dynamic_broker_configs(""),
            **self.dynamic_broker_configs(str(self.node_id)),
        }

    def broker_config(self, name: str) -> str | None:
        value = resolve_broker_configs(self.broker_settings)[name].value
        return None if value is None else str(value)

    def broker_int(self, name: str) -> int:
        value = self.broker_config(name)
        assert value is not None, name
        return int(value)

    @property
    def compiled_append_walk(self) -> bool | Literal["auto"]:
        """``kwire.append.compiled.walk``: numba's walk on append, off unless asked for."""
        value = self.static_config.get("kwire.append.compiled.walk", "false").lower()
        return "auto" if value == "auto" else value == "true"

    @property
    def auto_create_topics(self) -> bool:
        return (self.broker_config("auto.create.topics.enable") or "true").lower() == "true"

    # --- notifications and timers (the server wakes parked requests, runs tickers) ------------

    def on_notify(self, listener: Callable[[Hashable], None]) -> None:
        self._listeners.append(listener)

    def notify(self, key: Hashable) -> None:
        """Wake the parked requests (``Deferred``) waiting on ``key``."""
        for listener in self._listeners:
            listener(key)

    def appended(self, partition: Partition) -> None:
        """A partition grew: wake the fetches waiting on it."""
        self.notify(partition)

    def append(
        self,
        partition: Partition,
        records: bytes | bytearray | memoryview,
        now_ms: int,
        *,
        origin: AppendOrigin = AppendOrigin.CLIENT,
        produce_version: int | None = None,
        validated: AppendResult | None = None,
    ) -> LogAppendInfo:
        """The one way records reach a partition: ``Partition.append`` (the high-watermark
        rule), then the fetches parked on it wake."""
        info = partition.append(
            records, now_ms, origin=origin, produce_version=produce_version, validated=validated
        )
        if not info.duplicate and info.last_offset >= 0:
            self.appended(partition)
        return info

    def append_as_coordinator(self, partition: Partition, records: bytes, now_ms: int) -> None:
        """Append a coordinator's records (or transaction markers) to an internal or data
        partition."""
        self.append(partition, records, now_ms, origin=AppendOrigin.COORDINATOR)

    def add_ticker(self, ticker: Callable[[int], None]) -> None:
        """Run ``ticker(now_ms)`` periodically (every 100 ms: session timeouts, expiries)."""
        self._tickers.append(ticker)

    def on_topic_deleted(self, listener: Callable[[Topic], None]) -> None:
        """Call ``listener(topic)`` after a topic is deleted: the services that keep state of
        it clean up (Kafka's coordinators' ``onTopicsDeleted``, from the metadata publisher)."""
        self._deletion_listeners.append(listener)

    def run_tickers(self) -> None:
        now = self.now_ms()
        if now >= self._next_producer_expiry:
            self._next_producer_expiry = now + self.broker_int(
                "producer.id.expiration.check.interval.ms"
            )
            self.remove_expired_producers(now)
        for ticker in self._tickers:
            ticker(now)

    def remove_expired_producers(self, now_ms: int) -> int:
        """Kafka's producer-id expiration task (every ``producer.id.expiration.check.interval.ms``):
        every partition drops the producer ids idle for ``producer.id.expiration.ms`` that have
        no ongoing transaction. The number dropped."""
        return sum(len(p.log.remove_expired_producers(now_ms)) for p in self.iter_partitions())

    # --- topics -------------------------------------------------------------------------------

    def topic(self, name: str) -> Topic | None:
        return self.topics.get(name)

    def partition(self, topic: str, index: int) -> Partition | None:
        found = self.topics.get(topic)
        if found is None or not 0 <= index < len(found.partitions):
            return None
        return found.partitions[index]

    def iter_partitions(self) -> Iterator[Partition]:
        for topic in self.topics.values():
            yield from topic.partitions

    def check_new_topic(self, name: str, partitions: int, configs: Mapping[str, str]) -> None:
        """Raise ``BrokerError`` with Kafka's error for a topic that cannot be created."""
        validate_topic_name(name)
        if name in self.topics:
            raise BrokerError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
        clash = self._collision(name)
        if clash is not None:
            raise BrokerError(
                ErrorCode.INVALID_TOPIC_EXCEPTION,
                f"Topic '{name}' collides with existing topic: {clash}",
            )
        if partitions < 1:
            raise BrokerError(
                ErrorCode.INVALID_PARTITIONS,
                "Number of partitions was set to an invalid non-positive value.",
            )
        try:
            validate_topic_configs(configs)
        except ConfigError as exc:
            raise BrokerError(ErrorCode.INVALID_CONFIG, str(exc)) from None

    def _collision(self, name: str) -> str | None:
        """An existing topic whose name differs only by '.' versus '_' (Kafka's metrics clash)."""
        key = name.replace(".", "_")
        for existing in self.topics:
            if existing != name and existing.replace(".", "_") == key:
                return existing
        return None

    def create_topic(
        self,
        name: str,
        partitions: int | None = None,
        configs: Mapping[str, str] | None = None,
        *,
        leaders: Sequence[int] | None = None,
    ) -> Topic:
        """Create a topic (Kafka's checks first); ``partitions`` defaults to ``num.partitions``;
        ``leaders``: each partition's leader (a manual assignment), else round-robin."""
        count = (
            partitions
            if partitions is not None and partitions > 0
            else self.broker_int("num.partitions")
        )
        configs = dict(configs or {})
        self.check_new_topic(name, count, configs)
        topic = Topic(name, self.uuid4(), configs)
        self.topics[name] = topic
        self.topics_by_id[topic.topic_id] = topic
        self._add_partitions(topic, count, _first_leaders(0, leaders), new=True)
        self._write_metadata()
        log.info("created topic %s with %d partitions", name, count)
        return topic

    def _add_partitions(
        self,
        topic: Topic,
        count: int,
        leaders: Mapping[int, tuple[int, int]] | None = None,
        *,
        new: bool = False,
    ) -> None:
        """Open the logs of partitions up to ``count``; ``leaders`` (index -> (leader, epoch),
        from the metadata log) keeps a leader that is live, else leaders go round-robin."""
        config = log_config(topic.configs, self.broker_settings)
        now = self.now_ms()
        expiration = self.broker_int("producer.id.expiration.ms")
        walk = self.compiled_append_walk
        for index in range(len(topic.partitions), count):
            live = self._log_dir_for(topic, index).open_log(
                topic.name,
                index,
                config,
                now_ms=now,
                topic_id=topic.topic_id.bytes,
                producer_id_expiration_ms=expiration,
                new=new,
            )
            # The only replica is the whole ISR: as a leader becoming leader (Kafka's
            # maybeIncrementLeaderHW), the high watermark moves from the checkpoint to the log end.
            # Records appended before a crash but never acknowledged become visible, as in Kafka.
            live.high_watermark = live.log_end_offset
            live.compiled_validation = walk
            leader, epoch = (leaders or {}).get(index, (-1, 0))
            if leader not in self.live_brokers:
                leader = self.place_leader()
            topic.partitions.append(Partition(topic, index, live, epoch, leader))

    def _log_loaded(self, started: float) -> None:
        """``LogManager.loadLogs``' summary: how many logs, how long, which directories had not
        shut down cleanly (their logs recovered what was past their recovery points)."""
        logs = [p.log for p in self.iter_partitions()]
        unclean = [
            d.path
            for d in self.data_dirs
            if not d.had_clean_shutdown and any(x.log_dir == d.path for x in logs)
        ]
        log.info(
            "loaded %d logs in %d ms%s",
            len(logs),
            (time.monotonic() - started) * 1000,
            f" (unclean log dirs: {', '.join(unclean)})" if unclean else "",
        )

    def _extra_log_dirs(self) -> list[str]:
        """The ``log.dirs`` entries besides the data directory (absolute, each once)."""
        root = os.path.abspath(self.path)
        out: list[str] = []
        for entry in (self.static_config.get("log.dirs") or "").split(","):
            path = os.path.abspath(entry.strip()) if entry.strip() else ""
            if path and path != root and path not in out:
                out.append(path)
        return out

    def log_dir_of(self, partition: Partition) -> DataDir:
        """The log directory holding ``partition``'s log."""
        for data_dir in self.data_dirs:
            if data_dir.path == partition.log.log_dir:
                return data_dir
        return self.data_dir

    def _log_dir_for(self, topic: Topic, index: int) -> DataDir:
        """Where a partition's log opens: the directory that has its folder, else the one with
        the fewest partitions, the first of equals (``LogManager.nextLogDirs``)."""
        if len(self.data_dirs) == 1:
            return self.data_dir
        for data_dir in self.data_dirs:
            if data_dir.has_partition_dir(topic.name, index):
                return data_dir
        logs = [p.log for p in self.iter_partitions()]
        if self.topics.get(topic.name) is not topic:
            logs += [p.log for p in topic.partitions]
        counts = {d.path: 0 for d in self.data_dirs}
        for live in logs:
            if live.log_dir in counts:
                counts[live.log_dir] += 1
        return min(self.data_dirs, key=lambda d: counts[d.path])

    def move_to_log_dir(self, partition: Partition, target: DataDir) -> None:
        """AlterReplicaLogDirs' move: ``partition``'s log goes to ``target`` (another of the
        node's log directories), where it is reopened; the partition keeps serving from there."""
        if self.log_dir_of(partition) is target:
            return
        topic = partition.topic
        partition.log = target.adopt(
            partition.log,
            log_config(topic.configs, self.broker_settings),
            self.now_ms(),
            topic_id=topic.topic_id.bytes,
            producer_id_expiration_ms=self.broker_int("producer.id.expiration.ms"),
        )
        partition.log.high_watermark = partition.log.log_end_offset
        partition.log.compiled_validation = self.compiled_append_walk
        self.write_checkpoints()
        self.notify(partition)

    # --- leadership (several nodes in one process: ``_cluster``) ------------------------------

    def place_leader(self, exclude: int | None = None) -> int:
        """The next live node, round-robin (-1 when no node is live)."""
        live = [n for n in sorted(self.live_brokers) if n != exclude]
        if not live:
            return -1
        node = live[self._placed % len(live)]
        self._placed += 1
        return node

    def move_leader(self, partition: Partition, to_node: int) -> None:
        """Make ``to_node`` the partition's leader: a new leader epoch, started at the log end
        in the leader epoch cache, and a PartitionChangeRecord; parked fetches wake."""
        partition.leader_id = to_node
        partition.leader_epoch += 1
        partition.log.assign_leader_epoch(partition.leader_epoch)
        record = mimage.partition_change_record(partition.topic.topic_id, partition.index, to_node)
        self._metadata.append([record], self.now_ms())
        log.info(
            "%s-%d: leader %d, epoch %d",
            partition.topic.name,
            partition.index,
            to_node,
            partition.leader_epoch,
        )
        self.notify(partition)

    def broker_started(
        self,
        node_id: int,
        endpoints: Mapping[str, tuple[str, int]],
        protocols: Mapping[str, str] | None = None,
    ) -> None:
        """A node's listeners are up: it is registered in the metadata log with them (unless it
        is already, with the same endpoints, unfenced); partitions without a leader get one.
        ``protocols``: listener name -> security protocol (default: the name)."""
        self.live_brokers[node_id] = dict(endpoints)
        registered = [
            (
                name,
                host,
                port,
                mimage.SECURITY_PROTOCOL_IDS.get((protocols or {}).get(name, name), 0),
            )
            for name, (host, port) in endpoints.items()
        ]
        self._metadata.register(node_id, registered, self.now_ms())
        for partition in self.iter_partitions():
            if partition.leader_id not in self.live_brokers:
                self.move_leader(partition, self.place_leader())

    def broker_stopped(self, node_id: int) -> None:
        """A node is gone: it is fenced, and the partitions it led move to the live nodes
        (round-robin)."""
        self.live_brokers.pop(node_id, None)
        self._metadata.fence(node_id, self.now_ms())
        for partition in self.iter_partitions():
            if partition.leader_id == node_id:
                target = self.place_leader()
                if target != -1:
                    self.move_leader(partition, target)

    def create_partitions(
        self, name: str, count: int, leaders: Sequence[int] | None = None
    ) -> None:
        """Grow a topic to ``count`` partitions; ``leaders``: the new ones' leaders."""
        topic = self.topics[name]
        self._add_partitions(topic, count, _first_leaders(len(topic.partitions), leaders))
        self._write_metadata()

    def delete_topic(self, name: str) -> None:
        topic = self.topics.pop(name)
        self.topics_by_id.pop(topic.topic_id, None)
        for partition in topic.partitions:
            partition.log.delete()
        self._write_metadata()
        log.info("deleted topic %s", name)
        for partition in topic.partitions:
            # the fetches parked on it answer now (ReplicaManager.stopPartitions completes the
            # delayed fetches of a partition it removes): UNKNOWN_TOPIC_OR_PARTITION
            self.notify(partition)
        for (
            listener
        ) in self._deletion_listeners:  # the coordinators: committed offsets, share state
            listener(topic)

    def set_topic_configs(self, name: str, configs: Mapping[str, str]) -> None:
        """Replace a topic's overrides (validated by the caller) and reconfigure its logs."""
        topic = self.topics[name]
        topic.configs = dict(configs)
        config = log_config(topic.configs, self.broker_settings)
        for partition in topic.partitions:
            partition.log.update_config(config)
        self._write_metadata()

    def set_dynamic_broker_configs(self, resource: str, configs: Mapping[str, str]) -> None:
        """Replace the dynamic configs of a BROKER resource (validated by the caller): durable
        as ConfigRecords first, then applied to every topic's logs (Kafka's
        ``DynamicLogConfig.reconfigure``: a topic's own overrides still win)."""
        old = self.dynamic_broker_configs(resource)
        records = mimage.config_records(mimage.CONFIG_BROKER, resource, old, configs)
        if not records:
            return
        self.append_metadata(records)
        settings = self.broker_settings
        for topic in self.topics.values():
            config = log_config(topic.configs, settings)
            for partition in topic.partitions:
                partition.log.update_config(config)
        log.info("dynamic broker configs of %r: %s", resource or "<default>", dict(configs))

    # --- the metadata log (SCRAM credentials, ACLs) -------------------------------------------

    @property
    def metadata_image(self) -> mimage.MetadataImage:
        """What replaying ``__cluster_metadata`` gave, kept current by every append."""
        return self._metadata.image

    @property
    def metadata_log(self) -> mlog.MetadataLog:
        """``__cluster_metadata-0`` and its quorum (leader, epoch) as this node leads it."""
        return self._metadata

    @property
    def finalized_features(self) -> dict[str, int]:
        """The cluster's finalized feature levels (``FeatureLevelRecord`` in the metadata log),
        limited to the features this release's broker knows (a level 0 feature is absent)."""
        known = self.personality.supported_features
        return {k: v for k, v in self._metadata.image.features.items() if k in known}

    def feature_level(self, name: str) -> int:
        """A feature's finalized level, 0 when it is not finalized (Kafka's ``FeaturesImage``)."""
        return self.finalized_features.get(name, 0)

    def append_metadata(self, records: list[mimage.Record]) -> None:
        """Append ``records`` to ``__cluster_metadata`` as one batch and fsync it (then they are
        in ``metadata_image``): a change is durable before it is answered."""
        self._metadata.append(records, self.now_ms())

    # --- producer ids -------------------------------------------------------------------------

    def allocate_producer_id(self) -> int:
        pid = self.next_producer_id
        self.next_producer_id += 1
        self._write_metadata()
        return pid

    # --- housekeeping -------------------------------------------------------------------------

    def _logs_by_dir(self) -> list[tuple[DataDir, list[LiveLog]]]:
        logs = [p.log for p in self.iter_partitions()]
        return [(d, [lg for lg in logs if lg.log_dir == d.path]) for d in self.data_dirs]

    def write_checkpoints(self) -> None:
        for data_dir, logs in self._logs_by_dir():
            data_dir.write_checkpoints(logs)

    @property
    def offline(self) -> bool:
        """An I/O error took the data directory offline (``LogDirFailureChannel``): every log
        answers KAFKA_STORAGE_ERROR until the process restarts and recovers it."""
        return self.data_dir.offline

    def close(self) -> None:
        """Flush, checkpoint and close every log, and mark the shutdown clean (no recovery next).
        An offline data directory only has its descriptors closed (Kafka's halt writes nothing):
        the next start recovers every log."""
        by_dir = self._logs_by_dir()
        if self.offline:
            self._metadata.close()
            for data_dir, logs in by_dir:
                data_dir.close(logs)
            return
        try:
            self._write_metadata(close=True)
        except KafkaStorageError:
            log.error("the metadata log failed at shutdown; the next start recovers")
            self._metadata.close()
        for data_dir, logs in by_dir:
            try:
                data_dir.close(logs)
            except KafkaStorageError:
                log.error("a log in %s failed at shutdown; the next start recovers", data_dir.path)

    # --- persistence --------------------------------------------------------------------------

    def _read_metadata(self) -> dict[str, object] | None:
        """What an older kwire left in ``kwire-metadata.json`` (migrated at start), if any."""
        data = read_legacy_json(self.path, METADATA_FILE)
        if data is None:
            return None
        if not isinstance(data, dict):
            raise ValueError(f"{os.path.join(self.path, METADATA_FILE)} is not a JSON object")
        return data

    def _write_metadata(self, *, close: bool = False) -> None:
        """Append what changed since the last call to ``__cluster_metadata`` (fsynced): the
        topics' records, and a new producer id block once ``next_producer_id`` passes the
        allocated ones (``close=True`` also closes the metadata log)."""
        metadata = self._metadata
        now = self.now_ms()
        topics = {
            t.name: mimage.TopicState(
                t.topic_id,
                len(t.partitions),
                dict(t.configs),
                tuple(p.leader_id for p in t.partitions),
            )
            for t in self.topics.values()
        }
        metadata.append(mimage.changes(metadata.image, metadata.node, topics), now)
        if self.next_producer_id > max(metadata.image.next_producer_id, self._first_producer_id):
            # The id just handed out (next_producer_id - 1) opens a new block of 1000.
            metadata.allocate_producer_ids(now, at_least=self.next_producer_id - 1)
        if close:
            metadata.close()

    def _load_topics(self, topics: object, *, migrate_json: bool) -> None:
        """Open ``__cluster_metadata`` and build the topics from its image; a fresh metadata log
        takes the topics of an older kwire's ``kwire-metadata.json`` (``topics``) instead."""
        self._metadata = mlog.MetadataLog.open(
            self.path,
            node_id=self.node_id,
            directory_id=self.data_dir.directory_id,
            release=self.personality.release,
            now_ms=self.now_ms(),
            host=self.host,
            port=self.port,
            failure_channel=self.data_dir.failures,
            features=self.personality.finalized_features,
        )
        image = self._metadata.image
        migrate = isinstance(topics, dict) and bool(topics) and not image.topics
        if migrate and isinstance(topics, dict):
            for name, entry in sorted(topics.items()):
                topic = Topic(name, uuid.UUID(entry["topic_id"]), dict(entry.get("configs", {})))
                self.topics[name] = topic
                self.topics_by_id[topic.topic_id] = topic
                self._add_partitions(topic, int(entry["partitions"]))
        else:
            for name, found in sorted(image.topics.items()):
                topic = Topic(name, found.topic_id, image.topic_configs(name))
                self.topics[name] = topic
                self.topics_by_id[topic.topic_id] = topic
                leaders = {i: (p.leader, p.leader_epoch) for i, p in found.partitions.items()}
                self._add_partitions(topic, len(found.partitions), leaders)
        # Ids below the image's next block were handed out before; never again.
        self.next_producer_id = max(self.next_producer_id, image.next_producer_id)
        self._first_producer_id = self.next_producer_id
        if migrate_json:
            if self.next_producer_id > image.next_producer_id:
                # The JSON's counter: reserve up to it, so no id below it is handed out again.
                self._metadata.append(
                    [
                        mimage.producer_ids_record(
                            self.node_id, self._metadata.broker_epoch, self.next_producer_id
                        )
                    ],
                    self.now_ms(),
                )
            self._write_metadata()
            retire_legacy_file(self.path, METADATA_FILE)
            log.info("migrated %s into the metadata log", METADATA_FILE)
