"""Wire-size report: what would varint integer fields (a KIP proposal Kafka never shipped) and the
interleaved tag header of KIP-482's first draft save?

Approach. For one message (a bundled spec) and a sample of instances, build variant specs
programmatically from the bundled spec's JSON and compile them with ``load_specs`` (in memory):

- ``nonflex``: the last non-flexible version (KIP-482 not used);
- ``shipped``: the latest (flexible) version as Kafka ships it: the baseline;
- ``varints`` / ``suggested``: a new version (latest + 1) whose chosen integer fields carry a
  varint form-B ``encoding`` (``fixedN`` up to the latest version, the varint from the new one);
  the fields are given (``Topics.Partitions.LeaderId=varint``, field-name paths from the root) or
  suggested from the sample (integer fields whose values are small enough that a varint is shorter);
- ``tagheader``: the latest version with ``"tagHeader": "interleaved"`` (KIP-482's first draft);
- ``both``: the suggested (or given) varints and the interleaved tag header of KIP-482's first
  draft together.

Each instance is copied into each variant's classes (same attributes), encoded and decoded; the
report gives the bytes and the encode/decode time, timed in the same run, relative to ``shipped``.
Sizes are message bodies (no frame or request/response header). Sans-IO: instances in, numbers
out; reading frames and printing tables is the CLI's job. Realistic generators for the report's
built-in cases live here too (``generate``): MetadataResponse for a cluster of N partitions,
FetchResponse, ApiVersionsResponse.
"""

from __future__ import annotations

import copy
import gc
import json
import random
import statistics
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import field
from typing import Any, Final

from kwire._lazy import lazy_dataclass
from kwire.errors import KwireError, UnsupportedVersionError
from kwire.protocol._bundled import SPEC_DIR, message_spec
from kwire.protocol._registry import ProtocolRegistry, load_specs, message_class
from kwire.protocol._runtime import KafkaMessage, KafkaStruct, _new
from kwire.protocol._spec import SpecError, VersionRange, parse_spec, strip_comments
from kwire.protocol.ext.varint_fields import encoded_size

__all__ = [
    "GENERATORS",
    "SEED_002_FIELDS",
    "Case",
    "Measurement",
    "convert",
    "generate",
    "report_case",
    "spec_json",
    "suggest_varints",
    "tag_header_variant",
    "varint_variant",
]

#: The motivating case: MetadataResponsePartition's LeaderId, LeaderEpoch, replica and ISR
#: ids. LeaderId and LeaderEpoch may be -1 (no leader, unknown epoch; LeaderEpoch defaults to it),
#: so they are zigzag varints; broker ids in the arrays are never negative: unsigned.
SEED_002_FIELDS: Final[dict[str, dict[str, str]]] = {
    "MetadataResponse": {
        "Topics.Partitions.LeaderId": "varint",
        "Topics.Partitions.LeaderEpoch": "varint",
        "Topics.Partitions.ReplicaNodes": "unsigned",
        "Topics.Partitions.IsrNodes": "unsigned",
        "Topics.Partitions.OfflineReplicas": "unsigned",
    }
}

_INT_WIDTHS: Final = {"int16": 16, "int32": 32, "int64": 64}


# ------------------------------------------------------------------------------------------------
# Variant specs


def spec_json(name: str) -> dict[str, Any]:
    """A bundled spec's JSON object (comments stripped), to derive variants from."""
    spec = message_spec(name)
    text = (SPEC_DIR / (spec.source or f"{name}.json")).read_text(encoding="utf-8")
    obj: dict[str, Any] = json.loads(strip_comments(text))
    return obj


def _walk_fields(obj: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every field object of a spec, inline structs and common structs included."""
    todo = list(obj.get("fields") or [])
    for c in obj.get("commonStructs") or []:
        todo.extend(c.get("fields") or [])
    while todo:
        f = todo.pop()
        yield f
        todo.extend(f.get("fields") or [])


def _find(obj: dict[str, Any], path: str) -> dict[str, Any]:
    """The field object at a path of field names (``Topics.Partitions.LeaderId``)."""
    commons = {c["name"]: c for c in obj.get("commonStructs") or []}
    fields: list[dict[str, Any]] = obj.get("fields") or []
    found: dict[str, Any] | None = None
    for part in path.split("."):
        found = next((f for f in fields if f.get("name") == part), None)
        if found is None:
            raise KeyError(f"{obj.get('name')} has no field {path} ({part} not found)")
        fields = found.get("fields") or []
        if not fields:
            sname = str(found.get("type", "")).removeprefix("[]")
            fields = (commons.get(sname) or {}).get("fields") or []
    assert found is not None
    return found


def _encoding_name(choice: str, width: int) -> str:
    """``varint`` / ``unsigned`` / ``fixed`` (width from the type) or a full name (``varint32``)."""
    if choice in ("varint", "unsigned", "fixed"):
        return f"{choice}{width}"
    return choice


def varint_variant(obj: dict[str, Any], choices: Mapping[str, str]) -> dict[str, Any]:
    """A copy of spec ``obj`` with a new version (latest + 1) in which the fields at the given paths
    are written with the given varint encoding (form B): ``fixedN`` before, the choice from then.

    Closed version ranges that end at the latest version are extended to the new one, so the new
    version has the same fields as the latest.
    """
    out = copy.deepcopy(obj)
    valid = VersionRange.parse(out["validVersions"])
    latest = valid.highest
    new = latest + 1
    out["validVersions"] = f"{valid.lowest}-{new}"
    for f in _walk_fields(out):
        for key in ("versions", "nullableVersions"):
            text = f.get(key)
            if isinstance(text, str):
                r = VersionRange.parse(text)
                if not r.empty and r.highest == latest:
                    f[key] = f"{r.lowest}+"
    for path, choice in choices.items():
        f = _find(out, path)
        type_text = str(f.get("type", ""))
        base = type_text.removeprefix("[]")
        if base not in _INT_WIDTHS:
            raise SpecError(f"{obj.get('name')}: {path} is {type_text}, not an int16/32/64 field")
        enc = _encoding_name(choice, _INT_WIDTHS[base])
        versions = VersionRange.parse(f.get("versions") or f.get("taggedVersions"))
        if new not in versions:
            raise SpecError(f"{obj.get('name')}: {path} is not in the new version {new}")
        if versions.lowest == new:
            f["encoding"] = enc
        else:
            f["encoding"] = {
                f"{versions.lowest}-{latest}": f"fixed{_INT_WIDTHS[base]}",
                f"{new}+": enc,
            }
    return out


def tag_header_variant(obj: dict[str, Any]) -> dict[str, Any]:
    """A copy of spec ``obj`` with the interleaved tag headers of KIP-482's first draft."""
    out = copy.deepcopy(obj)
    out["tagHeader"] = "interleaved"
    return out


def _registry(obj: dict[str, Any]) -> ProtocolRegistry:
    spec = parse_spec(json.dumps(obj), f"{obj['name']}.json (size-report variant)")
    return load_specs({spec.name: spec})


# ------------------------------------------------------------------------------------------------
# Copying instances between variants, suggesting varint fields


def convert(obj: KafkaStruct, cls: type[KafkaStruct], *, only_version: int | None = None) -> Any:
    """``obj`` as an instance of ``cls``, a class with the same fields (another variant's).

    With ``only_version``, fields absent from that version are reset to their defaults.
    """
    out = _new(cls)
    for f in cls.__kafka_fields__:
        if only_version is not None and only_version not in f.versions:
            object.__setattr__(out, f.attr, f.make_default())
            continue
        value = getattr(obj, f.attr)
        if f.struct is not None and value is not None:
            if f.is_array:
                value = [convert(x, f.struct, only_version=only_version) for x in value]
            else:
                value = convert(value, f.struct, only_version=only_version)
        object.__setattr__(out, f.attr, value)
    object.__setattr__(out, "unknown_tags", obj.unknown_tags)
    return out


@lazy_dataclass
class _Stat:
    """Sampled sizes of one integer field: fixed, zigzag and unsigned varint bytes."""

    fixed: int = 0
    zigzag: int = 0
    unsigned: int = 0
    negative: bool = False
    count: int = 0


def suggest_varints(
    messages: Sequence[KafkaStruct], version: int, *, min_saving: float = 0.1
) -> dict[str, str]:
    """Integer fields (paths) whose sampled values are small enough that a varint is shorter by at
    least ``min_saving`` of their fixed size: ``unsigned`` if no value (and not the default) is
    negative, else ``varint`` (zigzag)."""
    stats: dict[str, _Stat] = {}
    defaults_negative: set[str] = set()

    def walk(obj: Any, cls: type[KafkaStruct], prefix: str) -> None:
        for f in cls.__kafka_fields__:
            if version not in f.versions:
                continue
            value = getattr(obj, f.attr)
            path = f"{prefix}{f.name}"
            if value is None:
                continue
            if f.struct is not None:
                for item in value if f.is_array else [value]:
                    walk(item, f.struct, path + ".")
                continue
            if f.element not in _INT_WIDTHS or f.encodings:
                continue
            if version in f.tagged and f.is_default(value):
                continue  # not written
            if isinstance(f.default, int) and f.default < 0:
                defaults_negative.add(path)
            st = stats.setdefault(path, _Stat())
            width = _INT_WIDTHS[f.element]
            for v in value if f.is_array else [value]:
                st.count += 1
                st.fixed += width // 8
                st.zigzag += encoded_size(f"varint{width}", v)
                if v < 0:
                    st.negative = True
                else:
                    st.unsigned += encoded_size(f"unsigned_varint{width}", v)

    for m in messages:
        walk(m, type(m), "")
    out: dict[str, str] = {}
    for path, st in sorted(stats.items()):
        if not st.count:
            continue
        signed = st.negative or path in defaults_negative
        size = st.zigzag if signed else min(st.zigzag, st.unsigned)
        if size <= st.fixed * (1 - min_saving):
            out[path] = "varint" if signed or st.zigzag <= st.unsigned else "unsigned"
    return out


# ------------------------------------------------------------------------------------------------
# Measuring


@lazy_dataclass
class Measurement:
    """One variant of a case: bytes, and the best encode / decode time over the repeats."""

    key: str
    label: str
    version: int | None
    size: int | None = None
    encode_s: float | None = None
    decode_s: float | None = None
    #: the time of each round (seconds per encode / decode of the whole sample)
    encode_rounds: list[float] = field(default_factory=list)
    decode_rounds: list[float] = field(default_factory=list)
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "variant": self.key,
            "label": self.label,
            "version": self.version,
            "bytes": self.size,
            "encode_seconds": self.encode_s,
            "decode_seconds": self.decode_s,
            "note": self.note,
        }


@lazy_dataclass
class Case:
    """One report case: a message, its sample, and one ``Measurement`` per variant."""

    title: str
    message: str
    count: int
    measurements: list[Measurement] = field(default_factory=list)
    given: dict[str, str] = field(default_factory=dict)
    suggested: dict[str, str] = field(default_factory=dict)

    def baseline(self) -> Measurement | None:
        return next((m for m in self.measurements if m.key == "shipped"), None)

    def to_json(self) -> dict[str, Any]:
        base = self.baseline()
        rows = []
        for m in self.measurements:
            row = m.to_json()
            if base is not None and base.size and m.size is not None:
                row["bytes_vs_shipped"] = m.size / base.size - 1
            if base is not None and m.encode_rounds and base.encode_rounds:
                row["encode_vs_shipped"] = _paired_ratio(m.encode_rounds, base.encode_rounds)
                row["decode_vs_shipped"] = _paired_ratio(m.decode_rounds, base.decode_rounds)
            rows.append(row)
        return {
            "case": self.title,
            "message": self.message,
            "messages": self.count,
            "varints_given": self.given,
            "varints_suggested": self.suggested,
            "variants": rows,
        }


def _timed(fn: Callable[[], object], loops: int) -> float:
    """Seconds per call of ``fn`` over ``loops`` calls; the cyclic GC collected before, paused in."""
    gc.collect()
    gc.disable()
    try:
        t0 = time.perf_counter()
        for _ in range(loops):
            fn()
        return (time.perf_counter() - t0) / loops
    finally:
        gc.enable()


def _loops(fn: Callable[[], object]) -> int:
    """How many calls take 50 ms or more (timeit's autorange)."""
    loops = 1
    while loops < 10**6:
        took = _timed(fn, loops) * loops
        if took >= 0.05:
            break
        loops *= 10 if took < 0.005 else 2
    return loops


@lazy_dataclass
class _Prepared:
    """A measurement ready to time: its encode and decode closures and their loop counts."""

    m: Measurement
    encode: Callable[[], object]
    decode: Callable[[], object]
    loops: tuple[int, int] = (1, 1)


def _prepare(messages: Sequence[KafkaMessage], version: int, m: Measurement) -> _Prepared | None:
    """Encode once (sizes, round-trip check); return the timing closures, or ``None`` with a note."""
    try:
        datas = [msg.encode(version) for msg in messages]
    except UnsupportedVersionError:
        # fields that do not exist at this version: measure the message without them
        cls = type(messages[0])
        messages = [convert(msg, cls, only_version=version) for msg in messages]
        m.note = f"fields absent from v{version} left out"
        datas = [msg.encode(version) for msg in messages]
    except KwireError as exc:
        m.note = f"cannot encode: {exc}"
        return None
    m.size = sum(len(d) for d in datas)
    cls = type(messages[0])
    # every variant must give back the bytes it was given
    if cls.decode(datas[0], version).encode(version) != datas[0]:  # pragma: no cover - a bug
        raise AssertionError(f"{cls.__name__} v{version} does not round-trip")

    def encode_all() -> None:
        for msg in messages:
            msg.encode(version)

    def decode_all() -> None:
        for d in datas:
            cls.decode(d, version)

    return _Prepared(m, encode_all, decode_all)


def _time_rounds(prepared: list[_Prepared], repeat: int) -> None:
    """Time every variant in rounds (variant after variant, ``repeat`` rounds) and keep each one's
    best, so a busy moment of the machine does not land on one variant only."""
    if repeat <= 0:
        return
    for p in prepared:
        p.loops = (_loops(p.encode), _loops(p.decode))
    for _ in range(repeat):
        for p in prepared:
            enc = _timed(p.encode, p.loops[0])
            dec = _timed(p.decode, p.loops[1])
            p.m.encode_rounds.append(enc)
            p.m.decode_rounds.append(dec)
    for p in prepared:
        p.m.encode_s = min(p.m.encode_rounds)
        p.m.decode_s = min(p.m.decode_rounds)


def _paired_ratio(variant: list[float], shipped: list[float]) -> float:
    """The median over rounds of variant / shipped time, each pair timed in the same round: a
    busy spell of the machine then slows both sides of a pair instead of skewing one variant."""
    return statistics.median(v / b for v, b in zip(variant, shipped, strict=True))


def report_case(
    title: str,
    message: str,
    sample: Sequence[KafkaStruct],
    *,
    given: Mapping[str, str] | None = None,
    suggest: bool = True,
    repeat: int = 3,
) -> Case:
    """Measure ``sample`` (instances of the bundled class or any variant's) under every variant.

    ``given``: field paths -> ``varint`` / ``unsigned`` / ``varint32``...; ``None`` uses the default
    set where there is one (MetadataResponse). ``suggest``: also measure a suggested set.
    """
    if not sample:
        raise ValueError(f"{title}: no messages to measure")
    obj = spec_json(message)
    spec = message_spec(message)
    latest = spec.valid_versions.highest
    nonflex = [v for v in spec.versions() if not spec.flexible(v)]
    seed_set = given is None
    if given is None:
        given = SEED_002_FIELDS.get(message, {})
    case = Case(title, message, len(sample), given=dict(given))
    base = _registry(obj)
    base_cls = base.message_class(message)
    msgs = [convert(m, base_cls) for m in sample]
    if suggest:
        case.suggested = suggest_varints(msgs, latest)

    variants: list[tuple[str, str, Callable[[], type[KafkaMessage]], int]] = []
    if nonflex:
        variants.append(("nonflex", "last non-flexible", lambda: base_cls, max(nonflex)))
    variants.append(("shipped", "flexible (shipped)", lambda: base_cls, latest))
    if case.given:
        g = dict(case.given)
        variants.append(
            (
                "varints",
                "flexible + varints (default set)" if seed_set else "flexible + varints (given)",
                lambda: _registry(varint_variant(obj, g)).message_class(message),
                latest + 1,
            )
        )
    if case.suggested:
        s = dict(case.suggested)
        variants.append(
            (
                "suggested",
                "flexible + varints (suggested)",
                lambda: _registry(varint_variant(obj, s)).message_class(message),
                latest + 1,
            )
        )
    variants.append(
        (
            "tagheader",
            "interleaved tag header",
            lambda: _registry(tag_header_variant(obj)).message_class(message),
            latest,
        )
    )
    best = case.suggested or case.given
    if best:
        b = dict(best)
        variants.append(
            (
                "both",
                "varints ("
                + ("suggested" if case.suggested else "given")
                + ") + interleaved header",
                lambda: _registry(tag_header_variant(varint_variant(obj, b))).message_class(
                    message
                ),
                latest + 1,
            )
        )
    prepared: list[_Prepared] = []
    for key, label, make, version in variants:
        m = Measurement(key, label, version)
        case.measurements.append(m)
        try:
            cls = make()
        except (SpecError, KeyError) as exc:
            m.note = f"no variant: {exc}"
            continue
        converted = msgs if cls is base_cls else [convert(x, cls) for x in msgs]
        p = _prepare(converted, version, m)
        if p is not None:
            prepared.append(p)
    _time_rounds(prepared, repeat)
    return case


# ------------------------------------------------------------------------------------------------
# Generators of realistic messages


def _metadata(n: int, rng: random.Random) -> list[KafkaMessage]:
    """A MetadataResponse for a cluster of ``n`` partitions: about 20 partitions a topic, a broker
    per 1,000 partitions (at least 3), replication factor 3, broker ids from 1, leader epochs mostly
    small, 2% of partitions with a shrunk ISR; latest version's fields."""
    cls: Any = message_class("MetadataResponse")
    topic_cls = cls.MetadataResponseTopic
    part_cls = cls.MetadataResponsePartition
    broker_cls = cls.MetadataResponseBroker
    n_brokers = max(3, -(-n // 1000))
    racks = ["us-east-1a", "us-east-1b", "us-east-1c"]
    brokers = [
        broker_cls(
            node_id=i,
            host=f"b{i}.kafka-prod.internal.example.com",
            port=9092,
            rack=racks[i % 3],
        )
        for i in range(1, n_brokers + 1)
    ]
    words = ["orders", "payments", "clicks", "inventory", "users", "audit", "metrics", "events"]
    topics = []
    left = n
    t = 0
    while left > 0:
        size = min(left, rng.choice([1, 3, 6, 12, 24, 24, 32, 48]) if n > 10 else left)
        parts = []
        for p in range(size):
            replicas = rng.sample(range(1, n_brokers + 1), min(3, n_brokers))
            isr = replicas if rng.random() > 0.02 else replicas[:2]
            epoch = int(rng.expovariate(1 / 8)) if rng.random() > 0.01 else rng.randint(100, 5000)
            parts.append(
                part_cls(
                    error_code=0,
                    partition_index=p,
                    leader_id=replicas[0],
                    leader_epoch=epoch,
                    replica_nodes=replicas,
                    isr_nodes=list(isr),
                    offline_replicas=[],
                )
            )
        topics.append(
            topic_cls(
                error_code=0,
                name=f"{rng.choice(words)}.{rng.choice(words)}-v{t % 5}.{t:05d}",
                topic_id=uuid.UUID(int=rng.getrandbits(128)),
                is_internal=False,
                partitions=parts,
            )
        )
        left -= size
        t += 1
    return [
        cls(
            throttle_time_ms=0,
            brokers=brokers,
            cluster_id="Z3sQK7yWS0y8hB3tFQZ7_A",
            controller_id=1,
            topics=topics,
        )
    ]


def _fetch(n: int, rng: random.Random) -> list[KafkaMessage]:
    """A FetchResponse for ``n`` partitions of a fetch session: most partitions without new data,
    a fifth with a small record batch (200 bytes), 3% reporting a new leader (tagged CurrentLeader,
    with NodeEndpoints in versions that have them); offsets in the millions."""
    cls: Any = message_class("FetchResponse")
    topic_cls = cls.FetchableTopicResponse
    part_cls = cls.PartitionData
    leader_cls = cls.LeaderIdAndEpoch
    node_cls = getattr(cls, "NodeEndpoint", None)
    topics = []
    left = n
    t = 0
    leaders: set[int] = set()
    while left > 0:
        size = min(left, rng.choice([1, 6, 12, 24]))
        parts = []
        for p in range(size):
            hw = rng.randint(10**6, 10**9)
            part = part_cls(
                partition_index=p,
                error_code=0,
                high_watermark=hw,
                last_stable_offset=hw,
                log_start_offset=rng.randint(0, hw),
                records=bytes(200) if rng.random() < 0.2 else b"",
            )
            if rng.random() < 0.03:
                leader = rng.randint(1, 6)
                leaders.add(leader)
                part.current_leader = leader_cls(leader_id=leader, leader_epoch=rng.randint(1, 40))
            parts.append(part)
        topics.append(
            topic_cls(
                topic=f"events.stream-{t:04d}",
                topic_id=uuid.UUID(int=rng.getrandbits(128)),
                partitions=parts,
            )
        )
        left -= size
        t += 1
    msg = cls(
        throttle_time_ms=0, error_code=0, session_id=rng.randint(1, 2**31 - 1), responses=topics
    )
    if node_cls is not None and leaders:
        msg.node_endpoints = [
            node_cls(node_id=i, host=f"b{i}.kafka-prod.internal.example.com", port=9092)
            for i in sorted(leaders)
        ]
    return [msg]


def _api_versions(n: int, rng: random.Random) -> list[KafkaMessage]:
    """``n`` ApiVersionsResponses as a broker sends them: every bundled API key with its version
    range, supported and finalized features (tagged fields) and their epoch."""
    cls: Any = message_class("ApiVersionsResponse")
    from kwire.protocol._bundled import bundled_specs

    keys = sorted(
        {
            (s.api_key, s.valid_versions.lowest, s.valid_versions.highest)
            for s in bundled_specs().values()
            if s.type == "request" and s.api_key is not None
        }
    )
    api = cls.ApiVersion
    sup = cls.SupportedFeatureKey
    fin = cls.FinalizedFeatureKey
    out = []
    for _ in range(n):
        out.append(
            cls(
                error_code=0,
                api_keys=[api(api_key=k, min_version=lo, max_version=hi) for k, lo, hi in keys],
                throttle_time_ms=0,
                supported_features=[
                    sup(name="metadata.version", min_version=1, max_version=rng.randint(20, 25)),
                    sup(name="kraft.version", min_version=0, max_version=1),
                ],
                finalized_features_epoch=rng.randint(1000, 10**6),
                finalized_features=[
                    fin(name="metadata.version", max_version_level=21, min_version_level=21)
                ],
            )
        )
    return out


#: name -> (message, generator(n, rng), default n, description)
GENERATORS: Final[
    dict[str, tuple[str, Callable[[int, random.Random], list[KafkaMessage]], int, str]]
] = {
    "metadata": (
        "MetadataResponse",
        _metadata,
        1000,
        "MetadataResponse for a cluster of N partitions",
    ),
    "fetch": ("FetchResponse", _fetch, 1000, "FetchResponse for a fetch session of N partitions"),
    "apiversions": ("ApiVersionsResponse", _api_versions, 1, "N ApiVersionsResponses"),
}


def generate(name: str, n: int | None = None, seed: int = 482) -> tuple[str, list[KafkaMessage]]:
    """``(message name, instances)`` from a built-in generator (seeded: the same every run)."""
    try:
        message, fn, default, _ = GENERATORS[name]
    except KeyError:
        raise KeyError(f"no generator {name!r}; choose from {', '.join(GENERATORS)}") from None
    return message, fn(default if n is None else n, random.Random(seed))
