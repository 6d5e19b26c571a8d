"""Server-side assignors of KIP-848 consumer groups: Kafka's ``UniformAssignor`` and ``RangeAssignor``.

Approach: pure functions from the members' subscriptions (and their current target, for
stickiness) and the subscribed topics' sizes to a new target assignment; no group state, no
records. ``ASSIGNORS`` maps the short names of ``group.consumer.assignors`` to them.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from typing import Final

__all__ = ["ASSIGNORS", "Assignment", "AssignorMembers", "freeze", "range_assign", "uniform_assign"]

#: topic id -> partitions
Assignment = dict[uuid.UUID, frozenset[int]]


def freeze(assignment: Mapping[uuid.UUID, Iterable[int]]) -> Assignment:
    """An assignment without its empty topics, its partition sets frozen."""
    return {t: frozenset(ps) for t, ps in assignment.items() if ps}


#: member id -> (subscribed topic ids, current target assignment, instance id)
AssignorMembers = Mapping[str, tuple[frozenset[uuid.UUID], Assignment, str | None]]


def uniform_assign(
    members: AssignorMembers, topics: Mapping[uuid.UUID, int]
) -> dict[str, Assignment]:
    """``UniformAssignor``: balanced (sizes differ by at most one among members that could take a
    partition) and sticky (a member keeps what it had while that stays balanced)."""
    if not members:
        return {}
    out: dict[str, dict[uuid.UUID, set[int]]] = {m: {} for m in members}
    load = dict.fromkeys(members, 0)
    owner: dict[tuple[uuid.UUID, int], str] = {}
    all_partitions = [(t, p) for t in sorted(topics) for p in range(topics[t])]
    eligible = {t: sorted(m for m, (subs, _, _) in members.items() if t in subs) for t in topics}
    # quota of a homogeneous group: keep at most ceil(P/M) of the previous assignment
    homogeneous = len({subs for subs, _, _ in members.values()}) == 1
    extra = 0
    quota = 0
    if homogeneous:
        count = sum(1 for t, _ in all_partitions if eligible[t])
        quota, extra = divmod(count, len(members))
    for member_id in sorted(members):
        subs, previous, _ = members[member_id]
        kept = [
            (t, p)
            for t in sorted(previous)
            if t in subs and t in topics
            for p in sorted(previous[t])
            if p < topics[t]
        ]
        if homogeneous:
            limit = quota
            if len(kept) > quota and extra > 0:
                limit += 1
                extra -= 1
            kept = kept[:limit]
        for t, p in kept:
            out[member_id].setdefault(t, set()).add(p)
            owner[t, p] = member_id
            load[member_id] += 1
    for t, p in all_partitions:
        if (t, p) in owner or not eligible[t]:
            continue
        target = min(eligible[t], key=lambda m: (load[m], m))
        out[target].setdefault(t, set()).add(p)
        owner[t, p] = target
        load[target] += 1
    # balance: move a partition from a member to a subscribed one that has two fewer
    for _ in range(len(all_partitions) * max(len(members), 1)):
        moved = False
        for (t, p), member_id in sorted(owner.items(), key=lambda kv: (-load[kv[1]], kv[0])):
            lightest = min(eligible[t], key=lambda m: (load[m], m))
            if load[member_id] - load[lightest] > 1:
                out[member_id][t].discard(p)
                out[lightest].setdefault(t, set()).add(p)
                owner[t, p] = lightest
                load[member_id] -= 1
                load[lightest] += 1
                moved = True
                break
        if not moved:
            break
    return {m: freeze(a) for m, a in out.items()}


def range_assign(
    members: AssignorMembers, topics: Mapping[uuid.UUID, int]
) -> dict[str, Assignment]:
    """``RangeAssignor``: per topic, contiguous ranges to the subscribed members in a stable order
    (instance id, else member id), the first ``n % m`` one partition more; members subscribed to
    the same co-partitioned topics get the same partition numbers."""
    out: dict[str, dict[uuid.UUID, set[int]]] = {m: {} for m in members}
    for topic_id in sorted(topics):
        subscribed = sorted(
            (m for m, (subs, _, _) in members.items() if topic_id in subs),
            key=lambda m: (members[m][2] or m, m),
        )
        if not subscribed:
            continue
        count = topics[topic_id]
        each, extra = divmod(count, len(subscribed))
        start = 0
        for index, member_id in enumerate(subscribed):
            size = each + (1 if index < extra else 0)
            if size:
                out[member_id][topic_id] = set(range(start, start + size))
            start += size
    return {m: freeze(a) for m, a in out.items()}


ASSIGNORS: Final = {"uniform": uniform_assign, "range": range_assign}
