"""Builders for record batches of any magic and codec (Kafka's ``MemoryRecordsBuilder``).

Approach: ``append`` only validates and stores the record; ``build``/``build_into`` encodes
everything in one pass into one ``bytearray`` (v2: records, then the 61-byte header around them,
CRC32C last; magic 0/1: one entry per record, or one compressed wrapper around an inner set).

What Kafka's builder does, and so does this one:

- v2: baseTimestamp is the first record's timestamp, timestamp deltas are relative to it;
  maxTimestamp is the largest record timestamp, or the log-append time under LogAppendTime
  (records keep their own timestamps in the deltas, readers replace them by maxTimestamp).
- magic 1 under LogAppendTime: every message's timestamp is the log-append time.
- magic 1 compressed: inner offsets are relative to the base offset (KIP-31), the wrapper's
  offset is the last offset and its timestamp the largest inner one (or the log-append time).
- magic 0 compressed: inner offsets absolute, wrapper offset the last offset, no timestamps.
- Offsets must increase; headers need magic 2; zstd needs magic 2.
"""

from __future__ import annotations

from collections.abc import Iterable

from kwire._wire import INT32_MAX
from kwire.errors import EncodeError, UnsupportedCodecError
from kwire.records._codecs import Compression, compress
from kwire.records._legacy import ATTR_TIMESTAMP_TYPE, encode_message
from kwire.records._model import CREATE_TIME, LOG_APPEND_TIME, NO_TIMESTAMP, Batch
from kwire.records._v2 import _SMALL, encode_batch, encode_headers, zigzag_bytes

__all__ = ["BatchBuilder", "build_batch"]

BytesLike = bytes | bytearray | memoryview
HeaderInput = tuple[str, BytesLike | None]


class BatchBuilder:
    """Collects records, then writes one batch (v2) or message set (magic 0/1).

    ``append`` returns the offset given to the record: ``offset`` if passed (offsets must increase
    and be >= ``base_offset``; gaps are allowed, as compaction leaves them), else the next one.
    ``log_append_time`` is required with ``timestamp_type=LOG_APPEND_TIME``.
    ``compression_level`` is Kafka's ``compression.<codec>.level`` (KIP-390; None = default).
    """

    __slots__ = (
        "_base_ts",
        "_body",
        "_count",
        "_max_ts",
        "_records",
        "base_offset",
        "base_sequence",
        "compression",
        "compression_level",
        "delete_horizon_ms",
        "is_control",
        "is_transactional",
        "log_append_time",
        "magic",
        "next_offset",
        "partition_leader_epoch",
        "producer_epoch",
        "producer_id",
        "timestamp_type",
    )

    def __init__(
        self,
        magic: int = 2,
        compression: int = Compression.NONE,
        *,
        base_offset: int = 0,
        timestamp_type: int = CREATE_TIME,
        log_append_time: int | None = None,
        producer_id: int = -1,
        producer_epoch: int = -1,
        base_sequence: int = -1,
        is_transactional: bool = False,
        is_control: bool = False,
        partition_leader_epoch: int = -1,
        delete_horizon_ms: int | None = None,
        compression_level: int | None = None,
    ) -> None:
        if magic not in (0, 1, 2):
            raise EncodeError(f"unknown magic {magic}")
        if compression not in (0, 1, 2, 3, 4):
            raise UnsupportedCodecError(f"unknown compression codec id {compression}")
        if compression == Compression.ZSTD and magic < 2:
            raise UnsupportedCodecError(f"zstd compression needs magic 2, not magic {magic}")
        if timestamp_type not in (CREATE_TIME, LOG_APPEND_TIME):
            raise EncodeError(f"unknown timestamp type {timestamp_type}")
        if timestamp_type == LOG_APPEND_TIME and magic > 0 and log_append_time is None:
            raise EncodeError("timestamp_type=LOG_APPEND_TIME needs log_append_time")
        if magic < 2 and (
            is_transactional
            or is_control
            or producer_id != -1
            or producer_epoch != -1
            or base_sequence != -1
            or partition_leader_epoch != -1
            or delete_horizon_ms is not None
        ):
            raise EncodeError(
                f"magic {magic} has no producer state, control/transactional flags, "
                "partition leader epoch or delete horizon"
            )
        self.magic = magic
        self.compression = Compression(compression)
        self.base_offset = base_offset
        self.next_offset = base_offset
        self.timestamp_type = timestamp_type if magic > 0 else CREATE_TIME
        self.log_append_time = log_append_time
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.base_sequence = base_sequence
        self.is_transactional = is_transactional
        self.is_control = is_control
        self.partition_leader_epoch = partition_leader_epoch
        self.delete_horizon_ms = delete_horizon_ms
        self.compression_level = compression_level
        # legacy formats: the records, encoded at build(); v2: encoded as they are appended
        self._records: list[tuple[int, int, BytesLike | None, BytesLike | None]] = []
        self._body = bytearray()
        self._count = 0
        self._base_ts: int | None = delete_horizon_ms  # Kafka: the delete horizon is the base
        self._max_ts = NO_TIMESTAMP

    @classmethod
    def like(
        cls,
        batch: Batch,
        compression: int,
        *,
        base_offset: int,
        timestamp_type: int,
        log_append_time: int | None,
        partition_leader_epoch: int | None = None,
        keep_control: bool = True,
    ) -> BatchBuilder:
        """A magic 2 builder that keeps ``batch``'s producer state (Kafka's rebuilt batches).

        Copies producer id, epoch, base sequence and the transactional flag, and (``keep_control``)
        the control flag, the delete horizon and the partition leader epoch, unless
        ``partition_leader_epoch`` is given (the append path stamps the leader's own).
        """
        return cls(
            2,
            compression,
            base_offset=base_offset,
            timestamp_type=timestamp_type,
            log_append_time=log_append_time,
            producer_id=batch.producer_id,
            producer_epoch=batch.producer_epoch,
            base_sequence=batch.base_sequence,
            is_transactional=batch.is_transactional,
            is_control=keep_control and batch.is_control,
            partition_leader_epoch=(
                batch.partition_leader_epoch
                if partition_leader_epoch is None
                else partition_leader_epoch
            ),
            delete_horizon_ms=(
                batch.base_timestamp if keep_control and batch.has_delete_horizon else None
            ),
        )

    def __len__(self) -> int:
        return self._count

    def append(
        self,
        offset: int | None = None,
        timestamp: int = NO_TIMESTAMP,
        key: BytesLike | None = None,
        value: BytesLike | None = None,
        headers: Iterable[HeaderInput] = (),
    ) -> int:
        """Add one record; returns its offset."""
        nxt = self.next_offset
        if offset is None:
            offset = nxt
        elif offset < nxt:
            raise EncodeError(
                f"offset {offset} does not follow the previous offset {nxt - 1} "
                "(offsets must increase and be >= base_offset)"
            )
        if timestamp < 0 and timestamp != NO_TIMESTAMP:
            raise EncodeError(f"invalid negative timestamp {timestamp}")
        if self.magic != 2:
            if headers:
                raise EncodeError(f"magic {self.magic} does not support record headers")
            self._records.append((offset, timestamp, key, value))
        else:
            # v2: encode now (one pass, no per-record tuples kept). These lines are
            # _v2.encode_record inlined: calling it costs ~14% of encoding time (measured), so
            # both stay, and a property test checks they write the same bytes.
            off_delta = offset - self.base_offset
            if off_delta > INT32_MAX:
                raise EncodeError(f"offset delta {off_delta} does not fit a v2 batch")
            base_ts = self._base_ts
            if base_ts is None:
                base_ts = self._base_ts = timestamp
            if timestamp > self._max_ts:
                self._max_ts = timestamp
            ts_delta = timestamp - base_ts
            small = _SMALL
            if key is None:
                kpart = b"\x01"
                key = b""
            else:
                n = len(key)
                kpart = small[n + 1] if n <= 16383 else zigzag_bytes(n)
            if value is None:
                vpart = b"\x01"
                value = b""
            else:
                n = len(value)
                vpart = small[n + 1] if n <= 16383 else zigzag_bytes(n)
            body = b"".join(
                (
                    b"\x00",
                    small[ts_delta + 1] if -1 <= ts_delta <= 16383 else zigzag_bytes(ts_delta),
                    small[off_delta + 1] if off_delta <= 16383 else zigzag_bytes(off_delta),
                    kpart,
                    key,
                    vpart,
                    value,
                    encode_headers(headers) if headers else b"\x00",
                )
            )
            n = len(body)
            out = self._body
            out += small[n + 1] if n <= 16383 else zigzag_bytes(n)
            out += body
        self._count += 1
        self.next_offset = offset + 1
        return offset

    def build(self) -> bytes:
        """The encoded batch (v2) or message set (magic 0/1); ``b""`` when no record was added."""
        out = bytearray()
        self.build_into(out)
        return bytes(out)

    def build_into(self, out: bytearray) -> int:
        """Append the encoding to ``out``; returns the number of bytes written."""
        start = len(out)
        if not self._count:
            return 0
        if self.magic == 2:
            self._build_v2(out)
        elif self.compression == Compression.NONE:
            self._build_legacy_plain(out)
        else:
            self._build_legacy_wrapper(out)
        return len(out) - start

    def _build_v2(self, out: bytearray) -> None:
        assert self._base_ts is not None
        max_ts = self._max_ts
        if self.timestamp_type == LOG_APPEND_TIME:
            assert self.log_append_time is not None
            max_ts = self.log_append_time
        encode_batch(
            out,
            self._body,
            count=self._count,
            base_offset=self.base_offset,
            last_offset_delta=self.next_offset - 1 - self.base_offset,
            base_timestamp=self._base_ts,
            max_timestamp=max_ts,
            compression=self.compression,
            timestamp_type=self.timestamp_type,
            is_transactional=self.is_transactional,
            is_control=self.is_control,
            delete_horizon=self.delete_horizon_ms is not None,
            producer_id=self.producer_id,
            producer_epoch=self.producer_epoch,
            base_sequence=self.base_sequence,
            partition_leader_epoch=self.partition_leader_epoch,
            compression_level=self.compression_level,
        )

    def _legacy_attrs(self) -> int:
        if self.magic == 1 and self.timestamp_type == LOG_APPEND_TIME:
            return ATTR_TIMESTAMP_TYPE
        return 0

    def _legacy_timestamp(self, ts: int) -> int:
        if self.magic == 1 and self.timestamp_type == LOG_APPEND_TIME:
            assert self.log_append_time is not None
            return self.log_append_time
        return ts

    def _build_legacy_plain(self, out: bytearray) -> None:
        magic = self.magic
        attrs = self._legacy_attrs()
        for offset, ts, key, value in self._records:
            encode_message(
                out,
                offset=offset,
                magic=magic,
                attributes=attrs,
                timestamp=self._legacy_timestamp(ts),
                key=key,
                value=value,
            )

    def _build_legacy_wrapper(self, out: bytearray) -> None:
        magic = self.magic
        attrs = self._legacy_attrs()
        inner = bytearray()
        base = self.base_offset
        max_ts = NO_TIMESTAMP
        for offset, ts, key, value in self._records:
            stamp = self._legacy_timestamp(ts)
            max_ts = max(max_ts, stamp)
            encode_message(
                inner,
                offset=offset - base if magic == 1 else offset,
                magic=magic,
                attributes=attrs,
                timestamp=stamp,
                key=key,
                value=value,
            )
        encode_message(
            out,
            offset=self._records[-1][0],
            magic=magic,
            attributes=attrs | self.compression,
            timestamp=max_ts,
            key=None,
            value=compress(self.compression, inner, magic=magic, level=self.compression_level),
        )


def build_batch(
    records: Iterable[tuple[int | None, int, BytesLike | None, BytesLike | None]]
    | Iterable[tuple[int | None, int, BytesLike | None, BytesLike | None, Iterable[HeaderInput]]],
    magic: int = 2,
    compression: int = Compression.NONE,
    **options: int | bool | None,
) -> bytes:
    """One-shot: ``BatchBuilder(magic, compression, **options)`` fed with
    ``(offset, timestamp, key, value[, headers])`` tuples, then built.
    """
    builder = BatchBuilder(magic, compression, **options)  # type: ignore[arg-type]
    for rec in records:
        builder.append(*rec)
    return builder.build()
