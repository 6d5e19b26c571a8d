"""Kafka's small text files in a partition folder: ``leader-epoch-checkpoint`` and ``partition.metadata``.

Approach: both are line-oriented text that Kafka's ``CheckpointFile`` / ``PartitionMetadataFile``
write with ``\\n`` line ends.

- ``leader-epoch-checkpoint``: line 1 the version (0), line 2 the entry count, then one
  ``"<epoch> <start offset>"`` line per entry (fields split on whitespace). Kafka rejects another
  version ("Unrecognised version"), a malformed line, and a count that does not match.
- ``partition.metadata``: ``version: 0`` then ``topic_id: <base64url UUID>``.

Readers take ``str`` or bytes-like and raise ``DecodeError`` with the line number (as ``path``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final, NamedTuple

from kwire._lazy import lazy_dataclass
from kwire._wire import uuid_from_text, uuid_text
from kwire.errors import DecodeError
from kwire.log._index import BytesLike

__all__ = [
    "EpochEntry",
    "PartitionMetadata",
    "encode_leader_epoch_checkpoint",
    "encode_partition_metadata",
    "read_leader_epoch_checkpoint",
    "read_partition_metadata",
]

LEADER_EPOCH_CHECKPOINT_VERSION: Final = 0
PARTITION_METADATA_VERSION: Final = 0


class EpochEntry(NamedTuple):
    """The leader ``epoch`` that began at ``start_offset``."""

    epoch: int
    start_offset: int


def _text(data: str | BytesLike, what: str) -> str:
    if isinstance(data, str):
        return data
    try:
        return bytes(data).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DecodeError(f"{what} is not UTF-8 text", offset=exc.start) from None


def _int(token: str, what: str, line: int) -> int:
    token = token.strip()
    # Java's Integer.parseInt / Long.parseLong: optional sign, ASCII digits.
    body = token[1:] if token[:1] in "+-" else token
    if not body or not body.isascii() or not body.isdigit():
        raise DecodeError(f"malformed {what}: {token!r}", path=f"line {line}")
    return int(token)


def read_leader_epoch_checkpoint(data: str | BytesLike) -> list[EpochEntry]:
    """The ``(epoch, start_offset)`` entries of a ``leader-epoch-checkpoint`` (empty file: none)."""
    lines = _text(data, "leader-epoch-checkpoint").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if not lines:
        return []
    version = _int(lines[0], "version", 1)
    if version != LEADER_EPOCH_CHECKPOINT_VERSION:
        raise DecodeError(
            f"Unrecognised version:{version}, expected version: {LEADER_EPOCH_CHECKPOINT_VERSION}",
            path="line 1",
        )
    if len(lines) < 2:
        raise DecodeError("missing the entry count", path="line 2")
    expected = _int(lines[1], "entry count", 2)
    entries = []
    for number, line in enumerate(lines[2:], start=3):
        tokens = line.split()
        if len(tokens) != 2:
            raise DecodeError(f"Malformed line in checkpoint file: {line!r}", path=f"line {number}")
        entries.append(
            EpochEntry(_int(tokens[0], "epoch", number), _int(tokens[1], "offset", number))
        )
    if len(entries) != expected:
        raise DecodeError(
            f"Expected {expected} entries in checkpoint file, but found only {len(entries)}",
            path=f"line {len(lines)}",
        )
    return entries


def encode_leader_epoch_checkpoint(entries: Iterable[EpochEntry]) -> str:
    items = list(entries)
    lines = [str(LEADER_EPOCH_CHECKPOINT_VERSION), str(len(items))]
    lines += [f"{e.epoch} {e.start_offset}" for e in items]
    return "\n".join(lines) + "\n"


@lazy_dataclass(frozen=True)
class PartitionMetadata:
    """A partition directory's ``partition.metadata`` file (Kafka's ``PartitionMetadata``):
    its version and topic id."""

    version: int
    #: The topic id as Kafka prints it (base64url without padding, 22 characters).
    topic_id: str

    @property
    def topic_id_bytes(self) -> bytes:
        return uuid_from_text(self.topic_id)


def read_partition_metadata(data: str | BytesLike) -> PartitionMetadata:
    fields: dict[str, str] = {}
    for number, line in enumerate(_text(data, "partition.metadata").splitlines(), start=1):
        if not line.strip():
            continue
        key, sep, value = line.partition(":")
        if not sep:
            raise DecodeError(
                f"Malformed line in partition.metadata: {line!r}", path=f"line {number}"
            )
        fields[key.strip()] = value.strip()
    if "version" not in fields or "topic_id" not in fields:
        raise DecodeError("partition.metadata needs 'version' and 'topic_id' lines")
    version = _int(fields["version"], "version", 1)
    if version != PARTITION_METADATA_VERSION:
        raise DecodeError(
            f"Unrecognised version:{version}, expected version: {PARTITION_METADATA_VERSION}",
            path="line 1",
        )
    topic_id = fields["topic_id"]
    try:
        uuid_from_text(topic_id)
    except ValueError:
        raise DecodeError(f"topic_id {topic_id!r} is not a base64url UUID", path="line 2") from None
    return PartitionMetadata(version=version, topic_id=topic_id)


def encode_partition_metadata(topic_id: bytes) -> str:
    if len(topic_id) != 16:
        raise ValueError("a topic id is 16 bytes")
    text = uuid_text(topic_id)
    return f"version: {PARTITION_METADATA_VERSION}\ntopic_id: {text}\n"
