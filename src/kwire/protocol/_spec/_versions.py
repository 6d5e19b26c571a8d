"""Kafka's version ranges: ``"none"``, ``"3"``, ``"1-4"``, ``"5+"``, in one immutable type.

Mirrors Kafka's generator ``Versions`` class: an inclusive ``[lowest, highest]`` range of 16-bit
versions where ``"N+"`` means "up to 32767" and ``"none"`` is the empty range. ``intersect`` and
``subtract`` return ranges (``subtract`` refuses results that would not be contiguous, as Kafka's
returns null); ``contains`` takes a version number or another range. All spec semantics that talk
about versions go through this type, nowhere else.
"""

from __future__ import annotations

from collections.abc import Iterator

from kwire._lazy import lazy_dataclass

__all__ = ["MAX_VERSION", "VersionRange"]

MAX_VERSION = 0x7FFF


@lazy_dataclass(frozen=True, slots=True)
class VersionRange:
    """An inclusive range of message versions; empty when ``lowest > highest``."""

    lowest: int = 0
    highest: int = -1

    @classmethod
    def parse(cls, text: str | None, default: VersionRange | None = None) -> VersionRange:
        """Parse ``"none"``, ``"N"``, ``"N-M"`` or ``"N+"``; ``None`` gives ``default``."""
        if text is None:
            if default is None:
                raise ValueError("a version range is required")
            return default
        s = text.strip()
        if s == "none":
            return NONE
        try:
            if s.endswith("+"):
                return cls._checked(int(s[:-1]), MAX_VERSION, text)
            if "-" in s:
                lo, _, hi = s.partition("-")
                return cls._checked(int(lo), int(hi), text)
            v = int(s)
            return cls._checked(v, v, text)
        except ValueError as exc:
            raise ValueError(f"invalid version range {text!r}") from exc

    @classmethod
    def _checked(cls, lo: int, hi: int, text: str) -> VersionRange:
        if not (0 <= lo <= MAX_VERSION and 0 <= hi <= MAX_VERSION) or lo > hi:
            raise ValueError(f"invalid version range {text!r}")
        return cls(lo, hi)

    @classmethod
    def of(cls, lowest: int, highest: int = MAX_VERSION) -> VersionRange:
        return cls(lowest, highest) if lowest <= highest else NONE

    @property
    def empty(self) -> bool:
        return self.lowest > self.highest

    @property
    def open_ended(self) -> bool:
        return not self.empty and self.highest == MAX_VERSION

    def contains(self, other: int | VersionRange) -> bool:
        """``v in range`` for a version; for a range: is it a subset (the empty range always is)."""
        if isinstance(other, int):
            return self.lowest <= other <= self.highest
        if other.empty:
            return True
        return self.lowest <= other.lowest and other.highest <= self.highest

    __contains__ = contains

    def intersect(self, other: VersionRange) -> VersionRange:
        lo, hi = max(self.lowest, other.lowest), min(self.highest, other.highest)
        return VersionRange(lo, hi) if lo <= hi else NONE

    def subtract(self, other: VersionRange) -> VersionRange:
        """The versions of ``self`` not in ``other``; ``ValueError`` if that is not one range."""
        if self.empty or other.empty or other.highest < self.lowest or other.lowest > self.highest:
            return self
        if other.lowest <= self.lowest:
            return VersionRange.of(other.highest + 1, self.highest)
        if other.highest >= self.highest:
            return VersionRange.of(self.lowest, other.lowest - 1)
        raise ValueError(f"{self} minus {other} is not a contiguous range")

    def versions(self, limit: int | None = None) -> range:
        """The versions in this range, the open end clipped to ``limit`` if given."""
        hi = self.highest if limit is None else min(self.highest, limit)
        return range(self.lowest, hi + 1)

    def __iter__(self) -> Iterator[int]:
        return iter(self.versions())

    def __str__(self) -> str:
        if self.empty:
            return "none"
        if self.highest == MAX_VERSION:
            return f"{self.lowest}+"
        if self.lowest == self.highest:
            return str(self.lowest)
        return f"{self.lowest}-{self.highest}"

    def __repr__(self) -> str:
        return f"VersionRange({str(self)!r})"


NONE = VersionRange(0, -1)
