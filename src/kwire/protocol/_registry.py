"""Finding message classes: the bundled generated modules, or code compiled from any spec directory.

``message_class`` looks a class up by spec name or by ``(api_key, kind)``. The bundled registry
imports ``kwire.protocol._generated.<module>`` lazily through the generated index. ``load_specs``
loads and validates a user's spec directory and compiles the same emitter's output with ``exec``,
one module (a request and its response) at a time, on first use.
"""

from __future__ import annotations

import types
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, cast

from kwire.errors import SpecError
from kwire.protocol._bundled import bundled_specs
from kwire.protocol._extension_points import tag_header_names
from kwire.protocol._runtime import AnyMessage, AnyStruct, KafkaStruct, KField, fields_at

if TYPE_CHECKING:
    from pathlib import Path

    from kwire.protocol._spec import MessageSpec

__all__ = ["ProtocolRegistry", "inspect", "load_specs", "message_class", "struct_class"]

_KINDS = ("request", "response")


class ProtocolRegistry:
    """Message classes for one set of specs (``message_class``, ``names``, ``spec``)."""

    def __init__(self, specs: dict[str, MessageSpec], kafka_version: str = "unknown") -> None:
        self._specs = specs
        self.kafka_version = kafka_version
        self._classes: dict[str, type[AnyMessage]] = {}
        self._api: dict[tuple[int, str], str] = {
            (s.api_key, s.type): s.name
            for s in specs.values()
            if s.api_key is not None and s.type in _KINDS
        }

    def names(self) -> list[str]:
        """Every message name, sorted."""
        return sorted(self._specs)

    def _has(self, name: str) -> bool:
        return name in self._specs

    def spec(self, name: str) -> MessageSpec:
        try:
            return self._specs[name]
        except KeyError:
            raise KeyError(f"no message named {name!r}") from None

    def message_class(
        self, name: str | None = None, *, api_key: int | None = None, kind: str | None = None
    ) -> type[AnyMessage]:
        """The class for a message, by spec name or by ``api_key`` and ``kind``."""
        if name is None:
            if api_key is None or kind not in _KINDS:
                raise TypeError(
                    "message_class needs a name, or api_key= and kind='request'|'response'"
                )
            try:
                name = self._api[(api_key, kind)]
            except KeyError:
                raise KeyError(f"no {kind} with API key {api_key}") from None
        elif api_key is not None or kind is not None:
            raise TypeError("give either a name or api_key= and kind=, not both")
        cls = self._classes.get(name)
        if cls is None:
            if not self._has(name):
                raise KeyError(f"no message named {name!r}")
            cls = self._load(name)
            self._classes[name] = cls
        return cls

    def _load(self, name: str) -> type[AnyMessage]:
        from kwire.protocol._codegen import EmitOptions, emit_module, group_modules

        groups = group_modules(self._specs)
        for mod, group in groups.items():
            if any(s.name == name for s in group):
                source = emit_module(
                    group, EmitOptions(kafka_version=self.kafka_version, header=True)
                )
                module = types.ModuleType(f"kwire.protocol._dynamic_{id(self):x}.{mod}")
                code = compile(source, f"<kwire generated {mod}.py>", "exec")
                exec(code, module.__dict__)
                for s in group:
                    cls = getattr(module, s.name)
                    self._classes[s.name] = cls
                return self._classes[name]
        raise KeyError(name)  # pragma: no cover - spec() checked it


class _BundledRegistry(ProtocolRegistry):
    """The committed generated modules for the bundled Kafka specs."""

    def __init__(self) -> None:
        from kwire.protocol._generated import API_KEYS, KAFKA_VERSION, MODULES

        self._modules = MODULES
        self._specs = {}
        self.kafka_version = KAFKA_VERSION
        self._classes = {}
        self._api = dict(API_KEYS)

    def names(self) -> list[str]:
        return sorted(self._modules)

    def _has(self, name: str) -> bool:
        # the generated index, not the specs: a name check must not parse 241 JSON files
        return name in self._modules

    def spec(self, name: str) -> MessageSpec:
        try:
            return bundled_specs()[name]
        except KeyError:
            raise KeyError(f"no message named {name!r}") from None

    def _load(self, name: str) -> type[AnyMessage]:
        return self._import(name)

    def message_class(
        self, name: str | None = None, *, api_key: int | None = None, kind: str | None = None
    ) -> type[AnyMessage]:
        if name is not None and api_key is None and kind is None:
            cls = self._classes.get(name)
            if cls is not None:
                return cls
        return super().message_class(name, api_key=api_key, kind=kind)

    def _import(self, name: str) -> type[AnyMessage]:
        # ``__import__`` (the import statement's machinery) rather than ``importlib.import_module``:
        # only the former is reported by ``-X importtime``, which the broker's start-up test reads.
        path = f"kwire.protocol._generated.{self._modules[name]}"
        module = __import__(path, fromlist=[name])
        cls: type[AnyMessage] = getattr(module, name)
        return cls


_BUNDLED: _BundledRegistry | None = None


def bundled_registry() -> ProtocolRegistry:
    global _BUNDLED
    if _BUNDLED is None:
        _BUNDLED = _BundledRegistry()
    return _BUNDLED


def message_class(
    name: str | None = None, *, api_key: int | None = None, kind: str | None = None
) -> type[AnyMessage]:
    """The generated class of a bundled message (Kafka 3.9.1 + 4.3.1).

    ``message_class("MetadataResponse")`` or ``message_class(api_key=3, kind="response")``.
    """
    return bundled_registry().message_class(name, api_key=api_key, kind=kind)


def load_specs(
    path: str | Path | Mapping[str, MessageSpec], *, tag_header: str | None = None
) -> ProtocolRegistry:
    """Load and validate a directory of Kafka JSON specs (e.g. a Kafka checkout's
    ``clients/src/main/resources/common/message``) and return a registry with ``message_class``.

    ``path`` may also be specs already loaded (name -> ``MessageSpec``, e.g. built with
    ``parse_spec``). ``tag_header="interleaved"`` (a kwire extension:
    the interleaved tag header of KIP-482's first draft) writes and reads
    every message's tag headers in the draft's interleaved form, whatever the specs say;
    ``"kip482"`` forces Kafka's form.

    Raises ``SpecError`` naming the file and field for a spec that breaks Kafka's rules.
    """
    if tag_header is not None and tag_header not in tag_header_names():
        names = ", ".join(tag_header_names())
        raise ValueError(f"tag_header must be one of {names}, not {tag_header!r}")
    version = "unknown"
    if isinstance(path, Mapping):
        specs = dict(path)
        where = "the given specs"
    else:
        from pathlib import Path

        from kwire.protocol._spec import load_spec_dir  # the JSON loader only for a spec dir

        specs = load_spec_dir(path)
        where = str(path)
        source = Path(path) / "SOURCE"
        if source.is_file():
            for line in source.read_text().splitlines():
                if line.startswith("kafka_version:"):
                    version = line.split(":", 1)[1].strip()
    if not specs:
        raise SpecError(f"{where}: no *.json message specs found")
    if tag_header is not None:
        specs = {name: replace(s, tag_header=tag_header) for name, s in specs.items()}
    return ProtocolRegistry(specs, version)


def inspect(cls: type[KafkaStruct] | str, version: int) -> tuple[KField, ...]:
    """The fields of a message (class or bundled name) or struct class present at ``version``."""
    if isinstance(cls, str):
        cls = message_class(cls)
    return tuple(fields_at(cls, version))


def struct_class(cls: type[KafkaStruct] | str, *path: str) -> type[AnyStruct]:
    """The struct class reached from ``cls`` through the fields named by ``path``.

    ``struct_class("FetchResponse", "responses", "partitions")`` is the class of a fetch
    response's partition entries, so code that builds messages needs no generated module names.
    """
    current: type[KafkaStruct] = message_class(cls) if isinstance(cls, str) else cls
    for name in path:
        for field in current.__kafka_fields__:
            if field.attr == name and field.struct is not None:
                current = field.struct
                break
        else:
            raise KeyError(f"{current.__name__} has no struct field {name!r}")
    # a generated struct class, typed as one found by name: its fields are the caller's to know
    return cast("type[AnyStruct]", current)
