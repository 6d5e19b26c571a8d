"""``kwire dump``'s record decoders: Kafka's ``--key-decoder-class`` / ``--value-decoder-class``
decoders and the topic decoders (``--offsets-decoder``, ``--transaction-log-decoder``,
``--cluster-metadata-decoder``, ``--share-group-state-decoder``) as Kafka 3.9 / 4.x print them.
What a record of an internal topic holds is ``kwire.log.internal_topics``; this module only
writes it as Kafka's tool does (Jackson's JSON, the transaction log's text).
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable, Mapping
from typing import Any, Final

from kwire.errors import KwireError
from kwire.log.internal_topics import (
    OFFSETS_RECORD_TYPES,
    SHARE_STATE_RECORD_TYPES,
    coordinator_record_json,
    read_version,
    transaction_log_text,
)
from kwire.records import (
    Record,
    java_string,
)

__all__ = ["DECODERS", "RECORD_PARSERS", "SPECIAL_DECODERS", "Decoder"]

STRING_DECODER: Final = "org.apache.kafka.tools.api.StringDecoder"
INTEGER_DECODER: Final = "org.apache.kafka.tools.api.IntegerDecoder"
LONG_DECODER: Final = "org.apache.kafka.tools.api.LongDecoder"
DEFAULT_DECODER: Final = "org.apache.kafka.tools.api.DefaultDecoder"
#: Kafka 3.8+ maps the deprecated kafka.serializer decoders, printing a notice each time.
DEPRECATED_DECODERS: Final = {
    "kafka.serializer.StringDecoder": STRING_DECODER,
    "kafka.serializer.LongDecoder": LONG_DECODER,
    "kafka.serializer.IntegerDecoder": INTEGER_DECODER,
    "kafka.serializer.DefaultDecoder": DEFAULT_DECODER,
}
SPECIAL_DECODERS: Final = (
    "offsets_decoder",
    "transaction_log_decoder",
    "cluster_metadata_decoder",
    "remote_log_metadata_decoder",
    "share_group_state_decoder",
)

Decoder = Callable[[bytes], str]


# -- decoders -------------------------------------------------------------------------------------


def _integer(data: bytes) -> str:
    if len(data) < 4:
        raise ValueError(f"IntegerDecoder needs 4 bytes, got {len(data)}")
    return str(struct.unpack_from(">i", data)[0])


def _long(data: bytes) -> str:
    if len(data) < 8:
        raise ValueError(f"LongDecoder needs 8 bytes, got {len(data)}")
    return str(struct.unpack_from(">q", data)[0])


def _raw(data: bytes) -> str:
    # Kafka prints a byte[]'s identity ("[B@1b6d3586"); kwire prints the bytes in hex instead.
    return data.hex()


DECODERS: Final[dict[str, Decoder]] = {
    STRING_DECODER: java_string,
    INTEGER_DECODER: _integer,
    LONG_DECODER: _long,
    DEFAULT_DECODER: _raw,
}


# -- coordinator topics: --offsets-decoder, --transaction-log-decoder ------------------------------
#
# Kafka's MessageParser: a record to (key, payload), either None (not printed). The data records of
# __consumer_offsets and __transaction_state are version-prefixed: the key's first int16 is the
# record type (CoordinatorRecordSerde) or key version, the value's its message version.

RecordParser = Callable[[Record], tuple[str | None, str | None]]


def _jackson(doc: Any) -> str:
    """``doc`` as Jackson's ``JsonNode.toString`` writes it: compact, non-ASCII as is, control
    characters as ``\\uXXXX`` with upper-case hex digits (Python writes lower-case)."""
    text = json.dumps(doc, separators=(",", ":"), ensure_ascii=False)
    if "\\u" not in text:
        return text
    out: list[str] = []
    i = 0
    while i < len(text):
        if text[i] != "\\":
            out.append(text[i])
            i += 1
        elif text[i + 1] == "u":
            out.append("\\u" + text[i + 2 : i + 6].upper())
            i += 6
        else:
            out.append(text[i : i + 2])
            i += 2
    return "".join(out)


def _coordinator_parse(
    record: Record, record_types: Mapping[int, str], topic_decoder: str
) -> tuple[str | None, str | None]:
    """Kafka's ``CoordinatorRecordMessageParser``: key ``{"type":"<record type>","data":{...}}``,
    payload ``{"version":"<v>","data":{...}}`` (the messages' JsonConverter JSON), ``<DELETE>``
    for a tombstone."""
    if record.key is None:
        # Kafka throws this RuntimeException (the tool stops); kwire reports it and goes on.
        raise ValueError(
            f"Failed to decode message at offset {record.offset} using {topic_decoder} "
            "(message had a missing key)"
        )
    value = None if record.value is None else bytes(record.value)
    try:
        decoded = coordinator_record_json(record_types, bytes(record.key), value)
    except ValueError as exc:
        return f"Error at offset {record.offset}, skipping. {exc}", None
    if decoded is None:
        record_type = read_version(bytes(record.key))[0]
        return f"Unknown record type {record_type} at offset {record.offset}, skipping.", None
    _, _, key_doc, value_doc = decoded
    if value_doc is None:
        return _jackson(key_doc), "<DELETE>"
    return _jackson(key_doc), _jackson(value_doc)


def _offsets_parse(record: Record) -> tuple[str | None, str | None]:
    """Kafka 3.9's ``DumpLogSegments.OffsetsMessageParser`` (``--offsets-decoder``)."""
    return _coordinator_parse(record, OFFSETS_RECORD_TYPES, "offset topic decoder")


def _share_group_state_parse(record: Record) -> tuple[str | None, str | None]:
    """Kafka 4.x's ``ShareGroupStateMessageParser`` (``--share-group-state-decoder``)."""
    return _coordinator_parse(record, SHARE_STATE_RECORD_TYPES, "share group state topic decoder")


def _transaction_log_parse(record: Record) -> tuple[str | None, str | None]:
    """Kafka 3.9's ``TransactionLog.formatRecordKeyAndValue`` (``--transaction-log-decoder``)."""
    if record.key is None:
        raise ValueError(f"the record at offset {record.offset} has no key")
    value = None if record.value is None else bytes(record.value)
    return transaction_log_text(bytes(record.key), value)


def _cluster_metadata_parse(record: Record) -> tuple[str | None, str | None]:
    """Kafka 3.9's ``ClusterMetadataLogMessageParser`` (``--cluster-metadata-decoder``): no key,
    the payload ``{"type":"TOPIC_RECORD","version":0,"data":{...}}``, or ``Error at <offset>,
    skipping. <why>`` for a value that is not a metadata record."""
    from kwire.broker import metadata_record_json

    try:
        return None, metadata_record_json(b"" if record.value is None else bytes(record.value))
    except (KwireError, ValueError) as exc:
        return None, f"Error at {record.offset}, skipping. {exc}"


#: The topic-specific decoder options kwire implements, in the order Kafka picks among them.
RECORD_PARSERS: Final[dict[str, RecordParser]] = {
    "offsets_decoder": _offsets_parse,
    "transaction_log_decoder": _transaction_log_parse,
    "cluster_metadata_decoder": _cluster_metadata_parse,
    "share_group_state_decoder": _share_group_state_parse,
}

SPECIAL_DECODER_HELP: Final = {
    "offsets_decoder": "decode __consumer_offsets records (offset commits, group metadata, "
    "consumer group records) as JSON, as Kafka's OffsetsMessageParser",
    "transaction_log_decoder": "decode __transaction_state records (transaction metadata), as "
    "Kafka's TransactionLogMessageParser",
    "cluster_metadata_decoder": "decode __cluster_metadata records (KRaft metadata) as JSON, as "
    "Kafka's ClusterMetadataLogMessageParser",
    "share_group_state_decoder": "decode __share_group_state records (share-partition state) as "
    "JSON, as Kafka 4.x's ShareGroupStateMessageParser",
}
