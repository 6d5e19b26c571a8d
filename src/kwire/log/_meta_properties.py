"""``meta.properties``, the identity file of a log directory (Kafka's ``MetaProperties`` and
``MetaPropertiesEnsemble``), defined here once: every reader and writer goes through it.

Approach: ``MetaProperties`` is the parsed file (sans-IO ``parse`` / ``to_text``): ``version`` 0
(ZooKeeper mode: the node is ``broker.id``, everything optional; an absent ``version`` means 0)
or 1 (KRaft: ``cluster.id`` and ``node.id`` required), and an optional ``directory.id``. Written
as Java's ``Properties.store`` writes it (``PropertiesUtils.writePropertiesFile``): a ``#`` line,
a ``#<date>`` line, then the keys sorted, through ``write_atomic``. ``verify_ensemble`` is
``MetaPropertiesEnsemble.verify`` over the directories of one node: every ``cluster.id`` and node
id equal, no directory id twice, none reserved, with Kafka's messages. ``read_meta_properties``
reads one directory's file (None when it has none); a broker reads each once at start.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from typing import Final

from kwire._lazy import lazy_dataclass
from kwire._wire import uuid_from_text, uuid_text
from kwire.log._writer import write_atomic

__all__ = [
    "META_PROPERTIES",
    "MetaProperties",
    "meta_properties_node_id",
    "read_meta_properties",
    "verify_ensemble",
]

META_PROPERTIES: Final = "meta.properties"
_VERSION: Final = "version"
_CLUSTER_ID: Final = "cluster.id"
_NODE_ID: Final = "node.id"
_BROKER_ID: Final = "broker.id"
_DIRECTORY_ID: Final = "directory.id"
#: ``DirectoryId.UNASSIGNED``, ``LOST`` and ``MIGRATING``: Uuids 0, 1 and 2 (``DirectoryId.reserved``).
_RESERVED_DIRECTORY_IDS: Final = frozenset(uuid_text(i.to_bytes(16, "big")) for i in range(3))
_DAYS: Final = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_MONTHS: Final = (
    "Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split()  # noqa: SIM905
)


def _read_properties(text: str) -> dict[str, str]:
    """``java.util.Properties.load`` for the lines a ``meta.properties`` holds."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped[0] in "#!":
            continue
        key, sep, value = stripped.partition("=")
        if not sep:
            key, _, value = stripped.partition(":")
        out[key.strip()] = value.strip()
    return out


def _java_date(epoch_s: float) -> str:
    """``java.util.Date.toString`` in UTC, the second comment line of ``Properties.store``."""
    t = time.gmtime(epoch_s)
    return (
        f"{_DAYS[t.tm_wday]} {_MONTHS[t.tm_mon - 1]} {t.tm_mday:02d} "
        f"{t.tm_hour:02d}:{t.tm_min:02d}:{t.tm_sec:02d} UTC {t.tm_year}"
    )


def _required_int(props: Mapping[str, str], key: str) -> int:
    """``PropertiesUtils.loadRequiredIntProp``."""
    value = props.get(key)
    if value is None:
        raise ValueError(f"Failed to find required property {key}.")
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"Unable to read {key} as a base-10 number.") from None


@lazy_dataclass(frozen=True)
class MetaProperties:
    """One ``meta.properties`` (Kafka's ``MetaProperties``); see the module doc."""

    version: int
    cluster_id: str | None
    node_id: int | None
    directory_id: str | None = None

    @classmethod
    def parse(cls, text: str) -> MetaProperties:
        """``MetaProperties.Builder(Properties).build()``: ``ValueError`` with Kafka's message
        for a file Kafka refuses."""
        props = _read_properties(text)
        number = props.get(_VERSION, "0")
        try:
            version = int(number)
        except ValueError:
            raise ValueError(f"Invalid meta.properties version string '{number}'") from None
        if version not in (0, 1):
            raise ValueError(f"Unknown meta.properties version number {version}")
        node_id: int | None = None
        if version == 0:
            if _BROKER_ID in props:
                node_id = _required_int(props, _BROKER_ID)
        else:
            node_id = _required_int(props, _NODE_ID)
        directory_id = props.get(_DIRECTORY_ID)
        if directory_id is not None:
            try:
                uuid_from_text(directory_id)
            except ValueError as exc:
                raise ValueError(f"Unable to read {_DIRECTORY_ID} as a Uuid: {exc}") from None
        cluster_id = props.get(_CLUSTER_ID)
        if version == 1 and cluster_id is None:
            raise ValueError(f"{_CLUSTER_ID} was not found.")
        return cls(version, cluster_id, node_id, directory_id)

    def to_text(self, now_s: float | None = None) -> str:
        """The file as Kafka writes it (``toProperties`` then ``Properties.store``: the keys
        sorted, after the two comment lines)."""
        props = {_VERSION: str(self.version)}
        if self.cluster_id is not None:
            props[_CLUSTER_ID] = self.cluster_id
        if self.node_id is not None:
            props[_BROKER_ID if self.version == 0 else _NODE_ID] = str(self.node_id)
        if self.directory_id is not None:
            props[_DIRECTORY_ID] = self.directory_id
        date = _java_date(time.time() if now_s is None else now_s)
        return f"#\n#{date}\n" + "".join(f"{k}={props[k]}\n" for k in sorted(props))

    def write(self, log_dir: str) -> None:
        """Write ``<log_dir>/meta.properties`` (``write_atomic``: a temporary file, fsynced,
        renamed, the directory fsynced, as ``writePropertiesFile(..., fsync=true)``)."""
        write_atomic(meta_properties_path(log_dir), self.to_text())


def meta_properties_path(log_dir: str) -> str:
    return os.path.join(log_dir, META_PROPERTIES)


def read_meta_properties(log_dir: str) -> MetaProperties | None:
    """``<log_dir>/meta.properties`` parsed, or None when the directory has none."""
    try:
        with open(meta_properties_path(log_dir), encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        return None
    return MetaProperties.parse(text)


def meta_properties_node_id(text: str) -> int | None:
    """The node a ``meta.properties`` text names (``node.id``, or ``broker.id`` in v0); None when
    it names none or is not one Kafka reads (a reader that only wants the node, such as the Spark
    stream's high watermark, goes on without it)."""
    try:
        return MetaProperties.parse(text).node_id
    except ValueError:
        return None


def verify_ensemble(
    props: Mapping[str, MetaProperties],
    *,
    cluster_id: str | None = None,
    node_id: int | None = None,
    kraft: bool = False,
) -> None:
    """``MetaPropertiesEnsemble.verify``: the ``meta.properties`` of a node's log directories
    (directory -> file) agree. ``cluster_id`` / ``node_id``: what is expected (None: the first
    file that names one sets it); ``kraft``: only v1 files (a kwire broker is KRaft only, and
    never converts a ZooKeeper-mode directory). ``ValueError`` with Kafka's message otherwise."""
    seen: dict[str, str] = {}
    for log_dir, meta in props.items():
        path = meta_properties_path(log_dir)
        if kraft and meta.version != 1:
            raise ValueError(f"{path}: only KRaft meta.properties (version=1) is supported")
        if meta.cluster_id is None:
            if meta.version == 1:
                raise ValueError(f"cluster.id was not specified in the v1 file: {path}")
        elif cluster_id is None:
            cluster_id = meta.cluster_id
        elif meta.cluster_id != cluster_id:
            raise ValueError(
                f"Invalid cluster.id in: {path}. Expected {cluster_id}, but read {meta.cluster_id}"
            )
        if meta.node_id is None:
            if meta.version == 1:
                raise ValueError(f"node.id was not specified in {path}")
        elif node_id is None:
            node_id = meta.node_id
        elif meta.node_id != node_id:
            raise ValueError(
                f"Stored node id {meta.node_id} doesn't match previous node id {node_id} in "
                f"{path}. If you moved your data, make sure your configured node id matches. If "
                "you intend to create a new node, you should remove all data in your data "
                "directories."
            )
        if meta.directory_id is not None:
            if meta.directory_id in _RESERVED_DIRECTORY_IDS:
                # (sic: Kafka's message)
                raise ValueError(
                    f"Invalid resrved directory ID {meta.directory_id} found in {log_dir}"
                )
            previous = seen.setdefault(meta.directory_id, log_dir)
            if previous != log_dir:
                raise ValueError(
                    f"Duplicate directory ID Optional[{meta.directory_id}] found. It was the ID "
                    f"of {previous}, but also of {log_dir}"
                )
