"""kwire.records: Kafka's record formats (magic 0/1 message sets, magic 2 batches), sans-IO.

``read_batches(buffer)`` iterates the batches of any magic in a bytes-like object without copying
it; each ``Batch`` exposes its header fields and decodes its ``Record`` objects lazily, with keys,
values and header values as ``memoryview`` slices (they keep the buffer alive; ``bytes(view)`` or
``Record.copy()`` detaches). ``BatchBuilder`` writes batches of any magic and codec. Control
records (transaction markers, KRaft) are in ``decode_control_record`` / ``build_control_batch``;
the opt-in typed header values of KIP-82's draft are in ``kwire.records.typed_headers``.
The broker's append path (KIP-31 offsets, Kafka's ``LogValidator``) is ``validate_and_assign``;
conversion between magics, with a report of what was lost, is ``convert`` / ``convert_for_fetch``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from kwire._lazy import lazy_getattr
from kwire.errors import AppendError, RecordError

if TYPE_CHECKING:
    from kwire.records._append import (
        AppendOrigin,
        AppendResult,
        TopicConfig,
        magic_for_message_format_version,
        validate_and_assign,
    )
    from kwire.records._batch import BatchReader, read_batch, read_batches
    from kwire.records._builder import BatchBuilder, build_batch
    from kwire.records._codecs import (
        DEFAULT_MAX_DECOMPRESSED_SIZE,
        Compression,
        compress,
        decompress,
    )
    from kwire.records._control import (
        ControlRecord,
        ControlRecordType,
        EndTransactionMarker,
        build_control_batch,
        build_end_txn_marker,
        decode_control_record,
    )
    from kwire.records._convert import (
        ConversionLoss,
        ConversionResult,
        convert,
        convert_for_fetch,
        magic_for_fetch_version,
        magic_for_produce_version,
    )
    from kwire.records._java import java_string
    from kwire.records._legacy import RECORD_OVERHEAD_V0, InnerEntry, LegacyBatch
    from kwire.records._model import (
        CREATE_TIME,
        LOG_APPEND_TIME,
        NO_TIMESTAMP,
        NO_TIMESTAMP_TYPE,
        Batch,
        Record,
    )
    from kwire.records._sequence import (
        NO_SEQUENCE,
        decrement_sequence,
        increment_sequence,
        last_sequence,
    )
    from kwire.records._v2 import RecordBatch

__all__ = [
    "CREATE_TIME",
    "DEFAULT_MAX_DECOMPRESSED_SIZE",
    "LOG_APPEND_TIME",
    "NO_SEQUENCE",
    "NO_TIMESTAMP",
    "NO_TIMESTAMP_TYPE",
    "RECORD_OVERHEAD_V0",
    "AppendError",
    "AppendOrigin",
    "AppendResult",
    "Batch",
    "BatchBuilder",
    "BatchReader",
    "Compression",
    "ControlRecord",
    "ControlRecordType",
    "ConversionLoss",
    "ConversionResult",
    "EndTransactionMarker",
    "InnerEntry",
    "LegacyBatch",
    "Record",
    "RecordBatch",
    "RecordError",
    "TopicConfig",
    "build_batch",
    "build_control_batch",
    "build_end_txn_marker",
    "compress",
    "convert",
    "convert_for_fetch",
    "decode_control_record",
    "decompress",
    "decrement_sequence",
    "increment_sequence",
    "java_string",
    "last_sequence",
    "magic_for_fetch_version",
    "magic_for_message_format_version",
    "magic_for_produce_version",
    "read_batch",
    "read_batches",
    "validate_and_assign",
]


#: Public name -> the module that defines it, imported on the first use of the name, so importing
#: one submodule (``kwire.log`` needs ``_sequence`` at start) or one name loads only what it uses:
#: the append path (``_append*``) and control records only when a produce or a marker needs them.
_HOME: Final = {
    "AppendOrigin": "_append_types",
    "AppendResult": "_append_types",
    "TopicConfig": "_append_types",
    "magic_for_message_format_version": "_append_types",
    "validate_and_assign": "_append",
    "BatchReader": "_batch",
    "read_batch": "_batch",
    "read_batches": "_batch",
    "BatchBuilder": "_builder",
    "build_batch": "_builder",
    "DEFAULT_MAX_DECOMPRESSED_SIZE": "_codecs",
    "Compression": "_codecs",
    "compress": "_codecs",
    "decompress": "_codecs",
    "ControlRecord": "_control",
    "ControlRecordType": "_control",
    "EndTransactionMarker": "_control",
    "build_control_batch": "_control",
    "build_end_txn_marker": "_control",
    "decode_control_record": "_control",
    "ConversionLoss": "_convert",
    "ConversionResult": "_convert",
    "convert": "_convert",
    "convert_for_fetch": "_convert",
    "magic_for_fetch_version": "_convert",
    "magic_for_produce_version": "_convert",
    "java_string": "_java",
    "RECORD_OVERHEAD_V0": "_legacy",
    "InnerEntry": "_legacy",
    "LegacyBatch": "_legacy",
    "CREATE_TIME": "_model",
    "LOG_APPEND_TIME": "_model",
    "NO_TIMESTAMP": "_model",
    "NO_TIMESTAMP_TYPE": "_model",
    "Batch": "_model",
    "Record": "_model",
    "NO_SEQUENCE": "_sequence",
    "decrement_sequence": "_sequence",
    "increment_sequence": "_sequence",
    "last_sequence": "_sequence",
    "RecordBatch": "_v2",
}

#: The columnar (Arrow) decoder needs the ``arrow`` extra (pyarrow, numpy, numba): it is imported
#: on first use of one of these names, so ``import kwire.records`` stays light.
_COLUMNAR = frozenset(
    {"decode_to_arrow", "decode_columnar", "records_arrow_schema", "records_spark_ddl"}
)


__getattr__ = lazy_getattr(
    globals(), "kwire.records", {**_HOME, **dict.fromkeys(_COLUMNAR, "_columnar")}
)
