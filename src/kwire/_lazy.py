"""What kwire builds on first use rather than at import. Dataclasses whose methods are built with
their first instance (``lazy_dataclass``), and names a module loads on first use (PEP 562 module
``__getattr__``), so importing a package costs only what its caller uses: ``kwire.log``,
``kwire.log.storage``, ``kwire.records``, ``kwire.protocol`` and the broker's start-up
(``tests/unit/cli/test_broker_startup_imports.py``) rely on it. ``kwire`` and ``kwire.broker`` keep their own few lines: the pytest plugin's import
must load no module beyond them.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Mapping, MutableMapping
from typing import Any, TypeVar, dataclass_transform, overload

__all__ = ["build", "lazy_dataclass", "lazy_getattr"]


def lazy_getattr(
    namespace: MutableMapping[str, Any], base: str, homes: Mapping[str, str]
) -> Callable[[str], Any]:
    """A module ``__getattr__`` for the module whose ``globals()`` is ``namespace``: a name of
    ``homes`` (name -> module under ``base``) imports that module on first use and is kept in
    the namespace; any other name (a submodule being imported, a probe such as ``__wrapped__``)
    is an ``AttributeError``, left to the import system."""
    owner = namespace["__name__"]

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {owner!r} has no attribute {name!r}")
        # ``__import__``, not ``importlib.import_module``: only the import statement's machinery
        # is what ``-X importtime`` reports, which the start-up imports test reads
        value = getattr(__import__(f"{base}.{home}", fromlist=[name]), name)
        namespace[name] = value
        return value

    return __getattr__


# --- dataclasses built on first use -------------------------------------------------------------

_FIELDS = "__dataclass_fields__"
#: what stands in for a deferred class's own methods until it is built
_STAND_INS = ("__init__", "__setstate__")
_building = threading.RLock()


class _Deferred:
    """Stands as a deferred class's ``__dataclass_fields__`` until the class is built: any look-up
    of it (``dataclasses.fields``, ``is_dataclass``, a subclass's own ``@dataclass``, which reads
    its bases' fields) builds the class first, then answers as the built class does."""

    def __init__(self, cls: type, params: dict[str, Any]) -> None:
        self.cls, self.params = cls, params

    def __get__(self, instance: object, owner: type | None = None) -> Any:
        build(self.cls)
        return getattr(instance if instance is not None else owner, _FIELDS)


def build(cls: type) -> None:
    """Build the dataclass methods of ``cls`` now, if ``lazy_dataclass`` deferred them; idempotent,
    and safe when two threads make the first instance at once."""
    with _building:
        deferred = cls.__dict__.get(_FIELDS)
        if not isinstance(deferred, _Deferred):
            return
        for name in (_FIELDS, *_STAND_INS):
            delattr(cls, name)
        dataclasses.dataclass(cls, **deferred.params)


def _stand_ins(cls: type) -> tuple[Callable[..., None], Callable[[Any, Any], None]]:
    """The deferred class's ``__init__`` (its first instance builds the class, then is made by
    the built ``__init__``) and ``__setstate__`` (an instance unpickled in another process, made
    without ``__init__``, builds the class too; its state goes where pickle puts it)."""

    def __init__(self: Any, /, *args: Any, **kwargs: Any) -> None:
        build(cls)
        cls.__init__(self, *args, **kwargs)  # type: ignore[misc]  # the built one

    def __setstate__(self: Any, state: Any) -> None:
        build(cls)
        setstate = getattr(self, "__setstate__", None)
        if setstate is not None:
            setstate(state)
            return
        # what pickle does for an object without ``__setstate__`` (``load_build``)
        state, slots = state if isinstance(state, tuple) and len(state) == 2 else (state, None)
        if state:
            vars(self).update(state)
        for name, value in (slots or {}).items():
            setattr(self, name, value)

    return __init__, __setstate__


_T = TypeVar("_T")


@overload
def lazy_dataclass(cls: type[_T], /) -> type[_T]: ...


@overload
def lazy_dataclass(
    *,
    init: bool = True,
    repr: bool = True,
    eq: bool = True,
    order: bool = False,
    unsafe_hash: bool = False,
    frozen: bool = False,
    match_args: bool = True,
    kw_only: bool = False,
    slots: bool = False,
) -> Callable[[type[_T]], type[_T]]: ...


@dataclass_transform(field_specifiers=(dataclasses.field, dataclasses.Field))
def lazy_dataclass(cls: type[_T] | None = None, /, **params: Any) -> Any:
    """``dataclasses.dataclass``, with the class's generated methods (``__init__``, ``__repr__``,
    ``__eq__``, ``__hash__``, a frozen class's ``__setattr__``) built when the class is first
    used (its first instance, made or unpickled, or a look-up of its fields) rather than when
    its module is imported. Python 3.11 compiles each generated method with an ``exec`` of its
    own, over 1 ms a class, and most value types a process imports are never made (a broker
    answering its first Metadata makes 20 of the 46 its modules define). Once built, the class
    is the one ``dataclasses.dataclass`` makes, method for method.

    Built at once instead: ``slots=True`` (the dataclass is a new class object, which the module
    must already hold), ``init=False``, and a class with an ``__init__`` or ``__setstate__`` of
    its own. A deferred subclass of a deferred class builds its base with itself
    (``dataclasses`` reads the base's fields)."""

    def wrap(cls: type[_T]) -> type[_T]:
        if (
            params.get("slots")
            or params.get("init") is False
            or any(name in vars(cls) for name in _STAND_INS)
        ):
            return dataclasses.dataclass(cls, **params)
        setattr(cls, _FIELDS, _Deferred(cls, params))
        for name, stand_in in zip(_STAND_INS, _stand_ins(cls), strict=True):
            setattr(cls, name, stand_in)
        return cls

    return wrap if cls is None else wrap(cls)
