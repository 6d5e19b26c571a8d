"""Names a module loads on first use (PEP 562 module ``__getattr__``), so importing a package
costs only what its caller uses: ``kwire.log``, ``kwire.log.storage``, ``kwire.records``,
``kwire.protocol`` and the broker's start-up (``tests/unit/cli/test_broker_startup_imports.py``)
rely on it. ``kwire`` and ``kwire.broker`` keep their own few lines: the pytest plugin's import
must load no module beyond them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, MutableMapping
from typing import Any

__all__ = ["lazy_getattr"]


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
