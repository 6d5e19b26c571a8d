"""Avro datums (Confluent's payloads, without the wire-format prefix) straight into Arrow arrays.

Approach. fastavro decodes one datum into one Python dict; building Arrow columns from those
dicts costs as much again. Here the schema becomes a small node table (preorder: kind, null-union
branch, enum size, fixed size, children) and one numba kernel, the same for every schema and
compiled once per machine (cached on disk), interprets it datum by datum with an explicit stack,
appending to each Arrow column's region of four flat numpy buffers (values, validity, list and
string offsets, string data), sized from the previous batch and grown (the batch resumed at the
datum that did not fit) when a column runs out of room. The regions become Arrow arrays with
``from_buffers``: no Python object per record. The kernel decodes a whole batch in one call with
no call per datum or value: numba takes and drops a reference on every array argument of every
call, which cost more than the decoding. A datum that does not decode (truncated, a bad union branch or enum index, a length past
the end) rolls its columns back to where the datum started, becomes a null row, and is reported by
position; the caller decides (`_corrupt_record`, FAILFAST). Strings are checked for UTF-8 once per
column (Arrow's validation).

What the compiled path covers: null-unions of one type, records, enums, arrays, maps, fixed, and
the primitives with the logical types date, timestamp-millis/-micros (and the local- ones) and
uuid. A datum written with an older schema is decoded with that writer schema and resolved on
the Arrow columns (``ResolvingAvroDecoder``, Avro's schema resolution: fields added with defaults,
removed, promoted). Anything else (general unions, decimals, recursive schemas, pairs of schemas
the columns cannot resolve) goes through fastavro's ``schemaless_reader`` (writer and reader
schema), one datum at a time, into ``pa.array`` of the same Arrow type: the reference path, also
what the benchmark compares against (bench/bench_avro.py).
"""

from __future__ import annotations

import io
import json
import threading
from collections.abc import Callable, Sequence
from dataclasses import field
from typing import TYPE_CHECKING, Any, Final

import numpy as np

from kwire._lazy import lazy_dataclass
from kwire.errors import KwireError

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "AvroDecoder",
    "ResolvingAvroDecoder",
    "UnsupportedAvro",
    "avro_arrow_type",
    "decode_avro_loop",
    "parse_avro",
]


class UnsupportedAvro(KwireError):
    """The schema has a shape the compiled decoder (or the Arrow mapping) does not cover."""


def parse_avro(
    schema: str | dict[str, Any] | list[Any], named: dict[str, Any] | None = None
) -> Any:
    """fastavro's parsed schema (named types of ``named``, from schema references, resolvable)."""
    import fastavro

    doc = json.loads(schema) if isinstance(schema, str) else schema
    return fastavro.parse_schema(doc, named_schemas=named if named is not None else {})


def _expand(parsed: Any) -> Any:
    from fastavro.schema import expand_schema

    try:
        return expand_schema(parsed)
    except RecursionError as exc:  # a recursive record
        raise UnsupportedAvro("recursive Avro schemas are not supported") from exc


def _type_name(s: Any) -> str:
    if isinstance(s, str):
        return s
    if isinstance(s, list):
        return "union"
    return str(s["type"])


def _nullable_branch(union: list[Any]) -> tuple[int, Any] | None:
    """(index of "null", the other branch) for ``["null", T]`` / ``[T, "null"]``; else None."""
    names = [_type_name(b) for b in union]
    if len(union) == 2 and names.count("null") == 1:
        i = names.index("null")
        return i, union[1 - i]
    return None


def avro_arrow_type(schema: Any) -> pa.DataType:
    """The Arrow type (Spark-compatible) of an expanded Avro schema; every field nullable."""
    import pyarrow as pa

    s = schema
    if isinstance(s, list):
        if len(s) == 1:
            return avro_arrow_type(s[0])
        nb = _nullable_branch(s)
        if nb is None:
            raise UnsupportedAvro(f"Avro union {[_type_name(b) for b in s]} has no Spark type")
        return avro_arrow_type(nb[1])
    if isinstance(s, str):
        s = {"type": s}
    t = s["type"]
    if isinstance(t, (dict, list)):
        return avro_arrow_type(t)
    logical = s.get("logicalType")
    if t == "record" or t == "error":
        return pa.struct(
            [pa.field(f["name"], avro_arrow_type(f["type"]), nullable=True) for f in s["fields"]]
        )
    if t == "enum":
        return pa.string()
    if t == "array":
        return pa.list_(pa.field("element", avro_arrow_type(s["items"]), nullable=True))
    if t == "map":
        return pa.map_(pa.string(), pa.field("value", avro_arrow_type(s["values"]), nullable=True))
    if logical == "decimal" and t in ("bytes", "fixed"):
        return pa.decimal128(int(s["precision"]), int(s.get("scale", 0)))
    if t == "fixed":
        return pa.binary()
    if t == "int":
        return pa.date32() if logical == "date" else pa.int32()
    if t == "long":
        if logical in (
            "timestamp-millis",
            "timestamp-micros",
            "local-timestamp-millis",
            "local-timestamp-micros",
        ):
            return pa.timestamp("us", tz="UTC")
        return pa.int64()
    simple = {
        "boolean": pa.bool_(),
        "float": pa.float32(),
        "double": pa.float64(),
        "string": pa.string(),
        "bytes": pa.binary(),
    }
    if t in simple:
        return simple[t]
    raise UnsupportedAvro(f"Avro type {t!r} has no Spark type")


# ---- the reference path: fastavro, one datum at a time ------------------------------------------


def _to_arrow_value(value: Any) -> Any:
    """fastavro's Python values into what ``pa.array`` takes for our Arrow types."""
    import uuid

    if isinstance(value, dict):
        return {k: _to_arrow_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_to_arrow_value(v) for v in value]
    if isinstance(value, uuid.UUID):
        return str(value)
    return value


def decode_avro_loop(
    payloads: Sequence[bytes | memoryview | None],
    writer: Any,
    reader: Any,
    arrow_type: pa.DataType,
) -> tuple[pa.Array, dict[int, str]]:
    """Per-datum fastavro decode (with schema resolution) into one Arrow array.

    Returns the array (null where a datum is None or fails) and {index: reason} for failures.
    """
    import pyarrow as pa
    from fastavro import schemaless_reader

    values: list[Any] = []
    errors: dict[int, str] = {}
    maps = _has_map(arrow_type)
    for i, payload in enumerate(payloads):
        if payload is None:
            values.append(None)
            continue
        try:
            value = schemaless_reader(io.BytesIO(payload), writer, reader)
        except Exception as exc:  # fastavro raises EOFError, ValueError, SchemaResolutionError...
            errors[i] = f"Avro: {type(exc).__name__}: {exc}"
            values.append(None)
        else:
            values.append(_to_arrow_value(value) if maps or _needs_fix(value) else value)
    try:
        return pa.array(values, type=arrow_type), errors
    except (pa.ArrowException, TypeError, ValueError, OverflowError):
        pass
    fixed: list[Any] = []  # find the rows Arrow refuses, one by one
    for i, value in enumerate(values):
        try:
            pa.array([value], type=arrow_type)
        except (pa.ArrowException, TypeError, ValueError, OverflowError) as exc:
            errors[i] = f"Avro: value does not fit {arrow_type}: {exc}"
            value = None
        fixed.append(value)
    return pa.array(fixed, type=arrow_type), errors


def _has_map(t: Any) -> bool:
    import pyarrow as pa

    if pa.types.is_map(t):
        return True
    if pa.types.is_struct(t):
        return any(_has_map(t.field(i).type) for i in range(t.num_fields))
    if pa.types.is_list(t):
        return _has_map(t.value_type)
    return False


def _needs_fix(value: Any) -> bool:
    import uuid

    if isinstance(value, dict):
        return any(_needs_fix(v) for v in value.values())
    if isinstance(value, list):
        return any(_needs_fix(v) for v in value)
    return isinstance(value, uuid.UUID)


# ---- the compiled path ---------------------------------------------------------------------------
#
# One kernel for every schema, compiled once per machine (numba, cached on disk like the records
# layer's kernels): the schema becomes a small node table (``prog``: kind, null-union branch, enum
# size, fixed size, children) that a walk with an explicit stack interprets datum by datum,
# appending to the columns' regions of flat buffers (``cs`` says where each column's are).
# (Generating and compiling source per schema was tried first: no faster, and a minute of numba
# compile per schema.)

# Node kinds
_I32, _I64, _BOOL, _F32, _F64, _VAR, _LIST, _STRUCT, _ENUM = range(9)
_K_KIND, _K_NULL, _K_NSYM, _K_FIXED, _K_FIRST, _K_COUNT, _K_END = range(7)
# A column's state (a row of ``cs``): items and data bytes so far, where its regions of the flat
# buffers start and how many items / bytes they hold
_C_COUNT, _C_DNS, _C_VBASE, _C_VCAP, _C_OBASE, _C_DBASE, _C_DCAP = range(7)
# A frame of the decoding stack: the open record or list, its next child, items left in the block
_S_NODE, _S_KID, _S_LEFT = range(3)
_MAX_DEPTH = 512


@lazy_dataclass
class _Node:
    """One node of an Avro schema compiled for the columnar decoder: its kind, column and
    Arrow type, with its children."""

    kind: int
    col: int
    arrow: Any  # the node's Arrow type
    children: list[_Node] = field(default_factory=list)
    null_index: int = -1  # >= 0: a ["null", T] union; the branch index of null
    symbols: list[str] | None = None  # enum
    fixed_size: int = -1  # fixed
    logical: str | None = None
    is_map: bool = False
    utf8: bool = False


class _Planner:
    """The node table of a schema (nodes numbered in preorder; children listed in ``kids``)."""

    def __init__(self) -> None:
        self.nodes: list[_Node] = []

    def node(self, s: Any) -> _Node:
        null_index = -1
        if isinstance(s, list):
            if len(s) == 1:
                s = s[0]
            else:
                nb = _nullable_branch(s)
                if nb is None:
                    raise UnsupportedAvro("general unions use the fastavro path")
                null_index, s = nb
        if isinstance(s, str):
            s = {"type": s}
        if isinstance(s["type"], (dict, list)):
            inner = self.node(s["type"])
            if null_index >= 0:
                if inner.null_index >= 0:
                    raise UnsupportedAvro("nested null unions")
                inner.null_index = null_index
            return inner
        t = s["type"]
        logical = s.get("logicalType")
        if logical == "decimal":
            raise UnsupportedAvro("decimals use the fastavro path")
        n = _Node(-1, len(self.nodes), avro_arrow_type(s), null_index=null_index, logical=logical)
        self.nodes.append(n)
        if t in ("record", "error"):
            n.kind = _STRUCT
            n.children = [self.node(f["type"]) for f in s["fields"]]
        elif t == "array":
            n.kind = _LIST
            n.children = [self.node(s["items"])]
        elif t == "map":
            n.kind = _LIST
            n.is_map = True
            n.children = [self.node("string"), self.node(s["values"])]
        else:
            kinds = {
                "int": _I32,
                "long": _I64,
                "boolean": _BOOL,
                "float": _F32,
                "double": _F64,
                "string": _VAR,
                "bytes": _VAR,
                "fixed": _VAR,
                "enum": _ENUM,
            }
            if t not in kinds:
                raise UnsupportedAvro(f"Avro type {t!r} uses the fastavro path")
            n.kind = kinds[t]
            n.utf8 = t == "string"
            if t == "enum":
                n.symbols = list(s["symbols"])
            if t == "fixed":
                n.fixed_size = int(s["size"])
        return n

    def tables(self) -> tuple[np.ndarray, np.ndarray]:
        prog = np.zeros((len(self.nodes), 7), np.int64)
        kids: list[int] = []

        def end(n: _Node) -> int:  # preorder: a subtree is the range [col, end)
            return end(n.children[-1]) if n.children else n.col + 1

        for n in self.nodes:
            prog[n.col] = (
                n.kind,
                n.null_index,
                len(n.symbols) if n.symbols is not None else -1,
                n.fixed_size,
                len(kids),
                len(n.children),
                end(n),
            )
            kids.extend(c.col for c in n.children)
        return prog, np.array(kids or [0], np.int64)


def _rlong(buf: Any, pos: int, end: int) -> tuple[int, int]:
    # Avro's zigzag varint (at most 10 bytes); the shift right is a logical one, so longs of any
    # magnitude come back (an arithmetic shift breaks those past +-2^62)
    result = 0
    shift = 0
    while True:
        if pos >= end or shift > 63:
            raise ValueError()
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            break
        shift += 7
    return ((result >> 1) & 0x7FFFFFFFFFFFFFFF) ^ -(result & 1), pos


def _full(over: Any, c: int, data: int) -> None:
    """Column ``c`` is out of room for items (``data`` 0) or data bytes (1): note it for the
    caller, which grows it and resumes."""
    over[0] = c + 1
    over[1] = data
    raise ValueError()


def _null(
    prog: Any, kids: Any, c: int, cs: Any, vals: Any, masks: Any, offs: Any, over: Any
) -> None:
    """Append a null to column ``c`` and to its descendants (struct children keep the length;
    a list below gets an empty list, its items nothing). Iterative: nodes are in preorder."""
    d = c
    stop = prog[c, _K_END]
    while d < stop:
        kind = prog[d, _K_KIND]
        n = cs[d, _C_COUNT]
        if n >= cs[d, _C_VCAP]:
            _full(over, d, 0)
        masks[cs[d, _C_VBASE] + n] = 0
        vals[cs[d, _C_VBASE] + n] = 0
        nxt = d + 1
        if kind == _VAR:
            offs[cs[d, _C_OBASE] + n + 1] = cs[d, _C_DNS]
        elif kind == _LIST:
            offs[cs[d, _C_OBASE] + n + 1] = cs[kids[prog[d, _K_FIRST]], _C_COUNT]
            nxt = prog[d, _K_END]
        cs[d, _C_COUNT] = n + 1
        d = nxt


def _block(buf: Any, pos: int, end: int) -> tuple[int, int]:
    """An array/map block's item count (0 ends the value); the position after its header."""
    cnt, pos = _rlong(buf, pos, end)
    if cnt < 0:  # a block with its byte size
        cnt = -cnt
        _, pos = _rlong(buf, pos, end)
    if cnt > end - pos + 65536:  # no datum this size holds that many items
        raise ValueError()
    return cnt, pos


def _dec(
    prog: Any,
    kids: Any,
    buf: Any,
    starts: Any,
    ends: Any,
    row: int,
    status: Any,
    cs: Any,
    vals: Any,
    masks: Any,
    offs: Any,
    datas: Any,
    over: Any,
    stack: Any,
    saved: Any,
) -> None:
    """Decode the datums from ``row`` on, each with an explicit stack of open records and lists
    (numba cannot cache recursive functions). Before each datum its row goes to ``over[2]`` and
    the columns' counts to ``saved``, for the caller to roll back to when it raises.

    Everything is decoded here, without a function per datum or per value: numba counts a
    reference to every array argument of every call it makes, and calls with the buffers as
    arguments cost more than the decoding itself."""
    rows = starts.shape[0]
    ncols = prog.shape[0]
    for i in range(row, rows):
        over[2] = i
        for col in range(ncols):
            saved[col, 0] = cs[col, _C_COUNT]
            saved[col, 1] = cs[col, _C_DNS]
        pos = starts[i]
        if pos < 0:  # a null row (the root, column 0, is not below a list: it has room)
            _null(prog, kids, 0, cs, vals, masks, offs, over)
            continue
        end = ends[i]
        depth = 0
        c = 0  # the node to enter next
        done = False
        while not done:
            # enter node c: its union branch, then a leaf value or a new frame
            entered = True
            ni = prog[c, _K_NULL]
            if ni >= 0:
                b, pos = _rlong(buf, pos, end)
                if b == ni:
                    _null(prog, kids, c, cs, vals, masks, offs, over)
                    entered = False
                elif b != 1 - ni:
                    raise ValueError()
            if entered:
                kind = prog[c, _K_KIND]
                if kind in (_STRUCT, _LIST):
                    left = 1
                    if kind == _LIST:
                        left, pos = _block(buf, pos, end)
                    if depth >= _MAX_DEPTH:
                        raise ValueError()
                    stack[depth, _S_NODE] = c
                    stack[depth, _S_KID] = 0
                    stack[depth, _S_LEFT] = left
                    depth += 1
                else:  # a leaf: numbers (floats as bit patterns) to vals, bytes to datas
                    n = cs[c, _C_COUNT]
                    if n >= cs[c, _C_VCAP]:
                        _full(over, c, 0)
                    at = cs[c, _C_VBASE] + n
                    if kind in (_I32, _I64, _ENUM):
                        x, pos = _rlong(buf, pos, end)
                        if kind == _I32 and (x < -2147483648 or x > 2147483647):
                            raise ValueError()
                        if kind == _ENUM and (x < 0 or x >= prog[c, _K_NSYM]):
                            raise ValueError()
                        vals[at] = x
                    elif kind in (_F64, _F32):
                        size = 8 if kind == _F64 else 4
                        if pos + size > end:
                            raise ValueError()
                        bits = 0
                        for k in range(size):
                            bits |= int(buf[pos + k]) << (8 * k)
                        vals[at] = bits
                        pos += size
                    elif kind == _BOOL:
                        if pos >= end:
                            raise ValueError()
                        vals[at] = 1 if buf[pos] else 0
                        pos += 1
                    else:  # _VAR
                        ln = prog[c, _K_FIXED]
                        if ln < 0:
                            ln, pos = _rlong(buf, pos, end)
                        if ln < 0 or pos + ln > end:
                            raise ValueError()
                        dn = cs[c, _C_DNS]
                        if dn + ln > cs[c, _C_DCAP]:
                            _full(over, c, 1)
                        start = cs[c, _C_DBASE] + dn
                        for k in range(ln):
                            datas[start + k] = buf[pos + k]
                        cs[c, _C_DNS] = dn + ln
                        pos += ln
                        offs[cs[c, _C_OBASE] + n + 1] = dn + ln
                    masks[at] = 1
                    cs[c, _C_COUNT] = n + 1
            # find the next node to enter, closing finished frames
            while True:
                if depth == 0:
                    done = True
                    break
                f = depth - 1
                p = stack[f, _S_NODE]
                first = prog[p, _K_FIRST]
                nkids = prog[p, _K_COUNT]
                if prog[p, _K_KIND] == _LIST:
                    if stack[f, _S_LEFT] > 0 and stack[f, _S_KID] == nkids:  # one item done
                        stack[f, _S_KID] = 0
                        stack[f, _S_LEFT] -= 1
                        if stack[f, _S_LEFT] == 0:
                            stack[f, _S_LEFT], pos = _block(buf, pos, end)
                    if stack[f, _S_LEFT] > 0:
                        c = kids[first + stack[f, _S_KID]]
                        stack[f, _S_KID] += 1
                        break
                    n = cs[p, _C_COUNT]
                    if n >= cs[p, _C_VCAP]:
                        _full(over, p, 0)
                    offs[cs[p, _C_OBASE] + n + 1] = cs[kids[first], _C_COUNT]
                else:
                    if stack[f, _S_KID] < nkids:
                        c = kids[first + stack[f, _S_KID]]
                        stack[f, _S_KID] += 1
                        break
                    n = cs[p, _C_COUNT]
                    if n >= cs[p, _C_VCAP]:
                        _full(over, p, 0)
                masks[cs[p, _C_VBASE] + n] = 1
                cs[p, _C_COUNT] = n + 1
                depth -= 1
        status[i] = 1


def avro_kernel(
    prog: Any,
    kids: Any,
    buf: Any,
    starts: Any,
    ends: Any,
    row: int,
    status: Any,
    cs: Any,
    vals: Any,
    masks: Any,
    offs: Any,
    datas: Any,
    over: Any,
) -> int:
    """Decode ``buf[starts[i]:ends[i]]`` for i from ``row`` on (a start < 0 is a null row).

    Every column ``c`` (a node) has a fixed region of the flat buffers, and its row of ``cs``
    (``_C_*``) says where: ``vals``/``masks`` from ``VBASE`` (``VCAP`` items), ``offs`` from
    ``OBASE`` (``VCAP + 1``), ``datas`` from ``DBASE`` (``DCAP`` bytes); ``COUNT``/``DNS`` are its
    items and data bytes so far. Sets ``status[i]`` (1 decoded, 0 failed: rolled back and a null
    row). Returns the row it stopped at: the end, or a row whose datum did not fit (``over[0]`` =
    column + 1), rolled back, for the caller to resume at with that column grown.
    """
    rows = starts.shape[0]
    ncols = prog.shape[0]
    saved = np.zeros((ncols, 2), np.int64)
    stack = np.zeros((_MAX_DEPTH, 3), np.int64)
    over[0] = 0
    while row < rows:
        try:
            _dec(
                prog,
                kids,
                buf,
                starts,
                ends,
                row,
                status,
                cs,
                vals,
                masks,
                offs,
                datas,
                over,
                stack,
                saved,
            )
            row = rows
        except Exception:
            i = over[2]
            for c in range(ncols):
                cs[c, _C_COUNT] = saved[c, 0]
                cs[c, _C_DNS] = saved[c, 1]
            if over[0] != 0:
                return int(i)
            _null(prog, kids, 0, cs, vals, masks, offs, over)  # a failed datum: a null row
            status[i] = 0
            row = i + 1
    return int(rows)


_JIT_LOCK = threading.Lock()
_KERNEL: Callable[..., Any] | None = None


def _kernel() -> Callable[..., Any]:
    """``avro_kernel`` compiled by numba (cached on disk), or plain Python without numba."""
    global _KERNEL
    with _JIT_LOCK:
        if _KERNEL is None:
            g = globals()
            try:
                import numba
            except ImportError:  # pragma: no cover - numba is part of the spark extra
                _KERNEL = avro_kernel
            else:
                from kwire.records._columnar_kernels import numba_cache_dir

                numba_cache_dir()  # sets NUMBA_CACHE_DIR when unset (a writable place)
                for name in ("_rlong", "_full", "_null", "_block", "_dec"):
                    g[name] = numba.njit(g[name], cache=True, nogil=True)
                _KERNEL = numba.njit(avro_kernel, cache=True, nogil=True)
        return _KERNEL


def _bitmap(valid: np.ndarray) -> Any:
    import pyarrow as pa

    return pa.py_buffer(np.packbits(valid.astype(bool), bitorder="little"))


def _under_list(nodes: list[_Node]) -> list[bool]:
    """Per column: whether it is below a list (its item count is not the row count)."""
    below = [False] * len(nodes)

    def mark(n: _Node, inside: bool) -> None:
        below[n.col] = inside
        for child in n.children:
            mark(child, inside or n.kind == _LIST)

    if nodes:
        mark(nodes[0], False)
    return below


class AvroDecoder:
    """Datums written with ``schema`` (an expanded Avro schema) into one Arrow array.

    The columns' buffers are regions of four flat arrays sized before each batch: a column not
    below a list has exactly one item per row; the others start from what the last batch needed
    per row, and a column that runs out of room is grown and the batch resumed at the datum that
    did not fit (nothing is decoded twice but that datum).
    """

    def __init__(self, schema: Any) -> None:
        planner = _Planner()
        self.root = planner.node(schema)
        self.nodes = planner.nodes
        self.prog, self.kids = planner.tables()
        self.arrow_type = self.root.arrow
        self._below = np.array(_under_list(self.nodes), bool)
        self._is_var = np.array([n.kind == _VAR for n in self.nodes], bool)
        self._items_per_row = np.where(self._below, 2.0, 1.0)  # learned from each batch
        self._bytes_per_byte = np.where(self._is_var, 1.0, 0.0)  # data bytes per payload byte

    def decode(
        self, data: np.ndarray, starts: np.ndarray, ends: np.ndarray
    ) -> tuple[pa.Array, np.ndarray]:
        """Decode ``data[starts[i]:ends[i]]`` for every i (a start < 0: a null row).

        Returns the Arrow array and a status per row (1 decoded, 0 failed and null). Raises
        ``pa.ArrowInvalid`` if a string is not UTF-8 (the caller then uses the fastavro path).
        """
        starts = starts.astype(np.int64)
        ends = ends.astype(np.int64)
        rows = len(starts)
        payload = int(np.sum(np.where(starts >= 0, ends - starts, 0))) if rows else 0
        vcap = np.where(self._below, np.ceil(self._items_per_row * rows * 1.25) + 16, rows)
        dcap = np.ceil(self._bytes_per_byte * payload * 1.1) + np.where(self._is_var, 64, 0)
        status = np.zeros(rows, np.uint8)
        over = np.zeros(3, np.int64)  # the column out of room, items or data, the row
        buffers = _Buffers(vcap.astype(np.int64), dcap.astype(np.int64))
        kernel = _kernel()
        row = 0
        while True:
            row = kernel(
                self.prog, self.kids, data, starts, ends, row, status, buffers.cs,
                buffers.vals, buffers.masks, buffers.offs, buffers.datas, over,
            )  # fmt: skip
            if row >= rows:
                break
            c = int(over[0]) - 1
            cs = buffers.cs
            vcap, dcap = cs[:, _C_VCAP].copy(), cs[:, _C_DCAP].copy()
            # at least double it, or to what the rows so far say the batch needs
            share = rows / max(row, 1) * 1.25
            if over[1] == 0:
                vcap[c] = max(2 * vcap[c] + 16, int(cs[c, _C_COUNT] * share) + 16)
            else:
                need = int(ends[row] - starts[row])
                dcap[c] = max(2 * dcap[c] + need, int(cs[c, _C_DNS] * share) + need)
            buffers = buffers.regrown(vcap, dcap)
        counts, dns = buffers.cs[:, _C_COUNT], buffers.cs[:, _C_DNS]
        if rows:
            self._items_per_row = np.where(self._below, counts / rows, 1.0)
        if payload:
            self._bytes_per_byte = dns / payload
        columns = {n.col: buffers.column(n.col) for n in self.nodes}
        array = self._build(self.root, columns)
        if _has_string(self.root):
            array.validate(full=True)
        return array, status

    def _build(self, n: _Node, columns: dict[int, tuple[Any, ...]]) -> pa.Array:
        import pyarrow as pa
        import pyarrow.compute as pc

        count, valid, values, offsets, data = columns[n.col]
        nulls = count - int(np.count_nonzero(valid))
        bitmap = _bitmap(valid) if nulls else None
        mask = pa.array(valid == 0) if nulls else None
        if n.kind in (_I32, _I64, _BOOL, _ENUM, _F32, _F64):
            if n.kind == _BOOL:
                return pa.array(values.astype(bool), mask=None if not nulls else valid == 0)
            if n.kind == _F64:
                return pa.Array.from_buffers(
                    pa.float64(), count, [bitmap, pa.py_buffer(values.view(np.float64))], nulls
                )
            if n.kind == _F32:
                raw32 = values.astype(np.uint32).view(np.float32)
                return pa.Array.from_buffers(
                    pa.float32(), count, [bitmap, pa.py_buffer(raw32)], nulls
                )
            dtype = pa.int64() if n.kind == _I64 else pa.int32()
            raw = values if n.kind == _I64 else values.astype(np.int32)
            arr = pa.Array.from_buffers(dtype, count, [bitmap, pa.py_buffer(raw)], nulls)
            if n.symbols is not None:
                return pc.take(pa.array(n.symbols, pa.string()), arr)
            if n.logical == "date":
                return arr.cast(pa.date32())
            if n.logical in ("timestamp-millis", "local-timestamp-millis"):
                arr = pc.multiply(arr, 1000)
            if n.logical is not None and "timestamp" in n.logical:
                return arr.cast(pa.timestamp("us", tz="UTC"))
            return arr
        if n.kind == _VAR:
            dtype = pa.string() if n.utf8 else pa.binary()
            return pa.Array.from_buffers(
                dtype, count, [bitmap, pa.py_buffer(offsets), pa.py_buffer(data)], nulls
            )
        if n.kind == _LIST:
            off = pa.array(offsets, pa.int32())
            if n.is_map:
                keys = self._build(n.children[0], columns)
                items = self._build(n.children[1], columns)
                return pa.MapArray.from_arrays(off, keys, items, type=n.arrow, mask=mask)
            child = self._build(n.children[0], columns)
            return pa.ListArray.from_arrays(off, child, type=n.arrow, mask=mask)
        children = [self._build(child, columns) for child in n.children]
        return pa.StructArray.from_arrays(children, fields=list(n.arrow), mask=mask)


class _Buffers:
    """The flat buffers of every column and the columns' state (``cs``, a row per column): the
    regions laid out from the capacities."""

    def __init__(self, vcap: np.ndarray, dcap: np.ndarray) -> None:
        ncols = len(vcap)
        self.cs = cs = np.zeros((ncols, 7), np.int64)
        cs[:, _C_VCAP] = vcap
        cs[:, _C_DCAP] = dcap
        cs[1:, _C_VBASE] = np.cumsum(vcap)[:-1]
        cs[:, _C_OBASE] = cs[:, _C_VBASE] + np.arange(ncols)  # one more offset each
        cs[1:, _C_DBASE] = np.cumsum(dcap)[:-1]
        total = int(vcap.sum())
        self.vals = np.empty(total, np.int64)
        self.masks = np.empty(total, np.uint8)
        self.offs = np.zeros(total + ncols, np.int32)
        self.datas = np.empty(int(dcap.sum()), np.uint8)

    def regrown(self, vcap: np.ndarray, dcap: np.ndarray) -> _Buffers:
        """New buffers with the given capacities, holding what these hold so far."""
        grown = _Buffers(vcap, dcap)
        grown.cs[:, _C_COUNT] = self.cs[:, _C_COUNT]
        grown.cs[:, _C_DNS] = self.cs[:, _C_DNS]
        for c in range(len(vcap)):
            (_, was_valid, was_vals, was_offs, was_data) = self.column(c)
            (_, valid, values, offsets, data) = grown.column(c)
            valid[:] = was_valid
            values[:] = was_vals
            offsets[:] = was_offs
            data[:] = was_data
        return grown

    def column(self, c: int) -> tuple[int, Any, Any, Any, Any]:
        """(items, validity, values, offsets, data) of column ``c`` so far: views, not copies."""
        count, dn, v, _, o, d, _ = (int(x) for x in self.cs[c])
        return (
            count,
            self.masks[v : v + count],
            self.vals[v : v + count],
            self.offs[o : o + count + 1],
            self.datas[d : d + dn],
        )


# ---- Avro schema resolution on the decoded columns ---------------------------------------------
#
# A datum written with an older schema is decoded with the compiled kernel and the writer's
# schema, then the writer's Arrow column is resolved into the reader's, column by column (Avro's
# schema resolution): reader fields the writer lacks become their default (found by fastavro, so
# bytes, enums and logical types come out as fastavro gives them), writer fields the reader lacks
# are dropped, numbers are promoted (int to long, float or double; long to float or double; float
# to double), strings and bytes convert, enum symbols the reader lacks take the reader's default.
# Whatever a pair of schemas needs beyond that (a nullable writer field the reader requires, an
# enum symbol without a default, general unions, aliases of named types) raises UnsupportedAvro
# and the pair goes through fastavro, the reference path.

_PROMOTIONS: Final = {
    ("int", "long"),
    ("int", "float"),
    ("int", "double"),
    ("long", "float"),
    ("long", "double"),
    ("float", "double"),
    ("string", "bytes"),
    ("bytes", "string"),
}
Resolution = Callable[["pa.Array"], "pa.Array"]


def _unwrap(s: Any) -> tuple[bool, Any]:
    """(nullable, the schema without its null branch) of an expanded schema."""
    if isinstance(s, list):
        if len(s) == 1:
            return _unwrap(s[0])
        nb = _nullable_branch(s)
        if nb is None:
            raise UnsupportedAvro("general unions resolve through fastavro")
        return True, _unwrap(nb[1])[1]
    if isinstance(s, str):
        return False, {"type": s}
    if isinstance(s["type"], (dict, list)):
        nullable, inner = _unwrap(s["type"])
        return nullable, inner
    return False, s


def _default_value(field_schema: Any, record_name: str) -> Any:
    """The reader's default of a field as fastavro resolves it (from an empty writer record)."""
    from fastavro import parse_schema, schemaless_reader

    if "default" not in field_schema:
        raise UnsupportedAvro(f"reader field {field_schema['name']!r} has no default")
    writer = parse_schema({"type": "record", "name": record_name, "fields": []})
    reader = parse_schema({"type": "record", "name": record_name, "fields": [field_schema]})
    value = schemaless_reader(io.BytesIO(b""), writer, reader)[field_schema["name"]]  # type: ignore[index,call-overload]
    return _to_arrow_value(value)


def _list_parts(array: pa.Array) -> tuple[pa.Array, int, int, pa.Array | None]:
    """A list (or map) array's offsets rebased to 0, where its items start and how many, and its
    null mask: what a new list of resolved items over the same rows needs."""
    import pyarrow.compute as pc

    offsets = array.offsets
    start = offsets[0].as_py()
    mask = array.is_null() if array.null_count else None
    return pc.subtract(offsets, offsets[0]), start, offsets[-1].as_py() - start, mask


def avro_resolution(writer: Any, reader: Any) -> Resolution:
    """The function from an Arrow column decoded with the (expanded) ``writer`` schema to the
    column of the ``reader`` schema; UnsupportedAvro when the pair needs fastavro."""
    import pyarrow as pa
    import pyarrow.compute as pc

    w_nullable, w = _unwrap(writer)
    r_nullable, r = _unwrap(reader)
    if w_nullable and not r_nullable:
        raise UnsupportedAvro("a nullable writer value for a reader that requires one")
    wt, rt = w["type"], r["type"]
    target = avro_arrow_type(r)
    if wt in ("record", "error") and rt in ("record", "error"):
        if w.get("name") != r.get("name") and w.get("name") not in r.get("aliases", ()):
            raise UnsupportedAvro("record names differ")
        by_name = {f["name"]: f for f in w["fields"]}
        steps: list[tuple[str | None, Any]] = []
        for rf in r["fields"]:
            names = [rf["name"], *rf.get("aliases", ())]
            wf = next((by_name[n] for n in names if n in by_name), None)
            if wf is None:
                steps.append((None, _default_value(rf, str(r.get("name", "R")))))
            else:
                steps.append((wf["name"], avro_resolution(wf["type"], rf["type"])))

        def record(array: pa.Array) -> pa.Array:
            children = []
            for (source, how), field in zip(steps, target, strict=True):
                if source is None:
                    children.append(pa.array([how] * len(array), field.type))
                else:
                    children.append(how(array.field(source)))
            return pa.StructArray.from_arrays(
                children, fields=list(target), mask=array.is_null() if array.null_count else None
            )

        return record
    if wt == "array" and rt == "array":
        items = avro_resolution(w["items"], r["items"])

        def listed(array: pa.Array) -> pa.Array:
            offsets, start, length, mask = _list_parts(array)
            values = items(array.values.slice(start, length))
            return pa.ListArray.from_arrays(offsets, values, type=target, mask=mask)

        return listed
    if wt == "map" and rt == "map":
        values_of = avro_resolution(w["values"], r["values"])

        def mapped(array: pa.Array) -> pa.Array:
            offsets, start, length, mask = _list_parts(array)
            keys = array.keys.slice(start, length)
            items = values_of(array.items.slice(start, length))
            return pa.MapArray.from_arrays(offsets, keys, items, type=target, mask=mask)

        return mapped
    if wt == "enum" and rt == "enum":
        missing = set(w["symbols"]) - set(r["symbols"])
        if not missing:
            return lambda array: array
        if "default" not in r:
            raise UnsupportedAvro("writer enum symbols the reader lacks, without a default")
        fallback = pa.scalar(r["default"], pa.string())
        known = pa.array(r["symbols"], pa.string())
        return lambda array: pc.if_else(
            pc.or_(pc.is_in(array, known), pc.is_null(array)), array, fallback
        )
    if wt == "fixed" and rt == "fixed":
        if w.get("size") != r.get("size") or w.get("name") != r.get("name"):
            raise UnsupportedAvro("fixed types differ")
        return lambda array: array
    if wt in ("record", "error", "array", "map", "enum", "fixed") or rt in (
        "record",
        "error",
        "array",
        "map",
        "enum",
        "fixed",
    ):
        raise UnsupportedAvro(f"Avro {wt} does not resolve to {rt} here")
    source = avro_arrow_type(w)
    if wt == rt and source == target:
        return lambda array: array
    if (wt, rt) not in _PROMOTIONS or w.get("logicalType") or r.get("logicalType"):
        raise UnsupportedAvro(f"Avro {wt} does not promote to {rt} here")
    return lambda array: array.cast(target)


class ResolvingAvroDecoder:
    """Datums written with ``writer`` decoded by the compiled kernel, then resolved into the
    Arrow column of ``reader`` (both expanded schemas); UnsupportedAvro when it cannot."""

    def __init__(self, writer: Any, reader: Any) -> None:
        self.decoder = AvroDecoder(writer)
        self.resolve = avro_resolution(writer, reader)
        self.arrow_type = avro_arrow_type(reader)

    def decode(
        self, data: np.ndarray, starts: np.ndarray, ends: np.ndarray
    ) -> tuple[pa.Array, np.ndarray]:
        """As ``AvroDecoder.decode``; raises ``pa.ArrowInvalid`` where a conversion fails (bytes
        that are not UTF-8 for a string), for the caller to take the fastavro path."""
        array, status = self.decoder.decode(data, starts, ends)
        return self.resolve(array), status


def _has_string(n: _Node) -> bool:
    return n.utf8 or any(_has_string(c) for c in n.children)
