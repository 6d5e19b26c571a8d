"""``kwire._lazy.lazy_dataclass``: a class whose dataclass methods are built on first use behaves,
from then on, as the class ``dataclasses.dataclass`` makes: made, compared, hashed, frozen,
subclassed, asked for its fields, copied and unpickled (in this process and in a fresh one, where
an unpickled instance is made without ``__init__``); and every kwire class it defers builds."""

from __future__ import annotations

import dataclasses
import importlib
import pickle
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

import kwire
from kwire._lazy import _Deferred, lazy_dataclass

SRC = Path(kwire.__file__).resolve().parents[1]


def _deferred(cls: type) -> bool:
    return isinstance(vars(cls).get("__dataclass_fields__"), _Deferred)


def make_classes() -> tuple[type, type, type]:
    @lazy_dataclass(frozen=True)
    class Point:
        x: int
        y: int = 0
        tags: tuple[str, ...] = ()

        def norm(self) -> int:
            return abs(self.x) + abs(self.y)

    @lazy_dataclass(frozen=True)
    class Labelled(Point):
        label: str = "p"

    @lazy_dataclass
    class Box:
        items: list[int] = dataclasses.field(default_factory=list)
        size: int = dataclasses.field(default=0, compare=False)

    return Point, Labelled, Box


def test_nothing_is_built_until_first_use() -> None:
    point, labelled, box = make_classes()
    assert all(_deferred(cls) for cls in (point, labelled, box))
    assert "__eq__" not in vars(point) and "__repr__" not in vars(point)
    point(1)
    assert not _deferred(point) and "__eq__" in vars(point)
    assert _deferred(labelled) and _deferred(box)


def test_a_built_class_behaves_as_dataclasses_makes_it() -> None:
    point, labelled, box = make_classes()
    p = point(1, 2)
    assert p == point(1, 2) and p != point(2, 1) and hash(p) == hash(point(1, 2))
    assert repr(p).endswith(".Point(x=1, y=2, tags=())") and p.norm() == 3
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.x = 5  # type: ignore[misc]
    with pytest.raises(TypeError, match="missing 1 required positional argument"):
        point()
    assert dataclasses.replace(p, y=7) == point(1, 7)
    b = box([1])
    b.items.append(2)
    assert b == box([1, 2], size=9) and box().items == [] and box().items is not box().items
    assert labelled(1, label="q") == labelled(1, 0, (), "q")
    assert point.__match_args__ == ("x", "y", "tags")


def test_fields_and_is_dataclass_build_the_class() -> None:
    point, labelled, _ = make_classes()
    assert dataclasses.is_dataclass(labelled)
    assert [f.name for f in dataclasses.fields(labelled)] == ["x", "y", "tags", "label"]
    assert not _deferred(point) and not _deferred(labelled)


def test_a_plain_subclass_and_its_own_init_build_the_base() -> None:
    point, _, _ = make_classes()

    class Origin(point):  # type: ignore[valid-type, misc]
        def __init__(self) -> None:
            super().__init__(0, 0)

    class Named(point):  # type: ignore[valid-type, misc]
        pass

    assert Origin() == Origin() and repr(Named(3)).endswith("Named(x=3, y=0, tags=())")


def test_copies_and_pickles_in_this_process() -> None:
    import copy

    _, labelled, _ = make_classes()
    p = labelled(1, 2, ("a",), "z")
    assert copy.copy(p) == p and copy.deepcopy(p) == p


def test_threads_racing_for_the_first_instance_build_it_once() -> None:
    point, _, _ = make_classes()
    builds = []
    real = dataclasses.dataclass

    def counting(cls: type, **params: object) -> type:
        builds.append(cls)
        return real(cls, **params)  # type: ignore[call-overload, no-any-return]

    made: list[object] = []
    barrier = threading.Barrier(8)

    def first() -> None:
        barrier.wait(timeout=10)
        made.append(point(1))

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(dataclasses, "dataclass", counting)
        threads = [threading.Thread(target=first) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=10)
    assert builds == [point] and len(made) == 8 and len(set(map(repr, made))) == 1


def test_an_instance_unpickled_in_a_fresh_process_is_a_dataclass_instance(tmp_path: Path) -> None:
    (tmp_path / "values_mod.py").write_text(
        textwrap.dedent(
            """
            from __future__ import annotations
            from kwire._lazy import lazy_dataclass

            @lazy_dataclass(frozen=True)
            class Value:
                a: int
                b: str = "x"
            """
        )
    )
    sys.path.insert(0, str(tmp_path))
    try:
        values_mod = importlib.import_module("values_mod")
        data = pickle.dumps([values_mod.Value(1, "y"), values_mod.Value(2)])
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("values_mod", None)
    script = textwrap.dedent(
        """
        import pickle, sys
        import values_mod
        values = pickle.loads(sys.stdin.buffer.read())
        fresh = values_mod.Value(1, "y")
        print(values[0] == fresh, hash(values[0]) == hash(fresh), repr(values[1]))
        """
    )
    env_path = f"{tmp_path}:{SRC}"
    out = subprocess.run(
        [sys.executable, "-c", script],
        input=data,
        capture_output=True,
        timeout=60,
        env={"PYTHONPATH": env_path, "PATH": "/usr/bin:/bin"},
        check=True,
    )
    assert out.stdout.decode().split() == ["True", "True", "Value(a=2,", "b='x')"]


def test_slots_init_false_and_own_init_are_built_at_once() -> None:
    @lazy_dataclass(slots=True)
    class Slotted:
        a: int

    @lazy_dataclass(init=False)
    class NoInit:
        a: int = 0

    @lazy_dataclass
    class OwnInit:
        a: int

        def __init__(self) -> None:
            self.a = 1

    assert "__slots__" in vars(Slotted) and not _deferred(NoInit) and not _deferred(OwnInit)
    assert OwnInit() == OwnInit()


#: run in a fresh interpreter: in this one, earlier tests have built most classes already
EVERY_CLASS_BUILDS = """
import dataclasses, importlib, pkgutil, kwire
from kwire._lazy import _Deferred, build

def deferred(cls):
    return isinstance(vars(cls).get("__dataclass_fields__"), _Deferred)

found = []
for info in pkgutil.walk_packages(kwire.__path__, "kwire."):
    # codegen's classes are no dataclasses; ``__main__`` runs the CLI
    if info.name.startswith("kwire.protocol._generated") or info.name.endswith("__main__"):
        continue
    try:
        module = importlib.import_module(info.name)
    except ImportError:  # an optional extra (pyarrow, numba, pyspark) not installed
        continue
    for value in list(vars(module).values()):
        if isinstance(value, type) and value.__module__ == info.name and deferred(value):
            found.append(value)
for cls in found:
    name = f"{cls.__module__}.{cls.__qualname__}"
    # without a docstring of its own, ``dataclasses`` makes one with ``inspect.signature`` of
    # the class (~2 ms a class at its first use)
    assert vars(cls).get("__doc__"), f"{name} has no docstring"
    build(cls)
    assert dataclasses.is_dataclass(cls) and not deferred(cls), name
print(len(found))
"""


def test_every_deferred_kwire_class_builds() -> None:
    """A class's definition errors (a field without a default after one with, a non-frozen
    subclass of a frozen class) surface when it is built: build every one kwire defers, each
    with a docstring of its own."""
    out = subprocess.run(
        [sys.executable, "-c", EVERY_CLASS_BUILDS], capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert int(out.stdout.split()[-1]) > 80


def test_kwire_defines_its_dataclasses_with_lazy_dataclass() -> None:
    """``dataclasses.dataclass`` itself builds a class at import: kwire's modules use
    ``lazy_dataclass`` (which hands ``slots=True`` classes on at once)."""
    import ast

    offenders = []
    for path in sorted((SRC / "kwire").rglob("*.py")):
        if path.name == "_lazy.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if (
                isinstance(node, ast.ImportFrom)
                and node.module == "dataclasses"
                and any(alias.name == "dataclass" for alias in node.names)
            ):
                offenders.append(f"{path}:{node.lineno}")
            if (
                isinstance(node, ast.Attribute)
                and node.attr == "dataclass"
                and isinstance(node.value, ast.Name)
                and node.value.id == "dataclasses"
            ):
                offenders.append(f"{path}:{node.lineno}")
    assert offenders == []
