"""The streams groups' assignor and reconciliation: a group's target tasks, and each member's
next step towards its target.

The assignor is a simplified ``StickyTaskAssignor`` (docs/broker.md): each active task stays with
its previous owner while that owner stays under the balanced quota, the rest go to the least
loaded members (ties by member id); ``num.standby.replicas`` standbys of each stateful task go to
the least loaded members of other processes; no warm-up tasks (Kafka's sticky assignor makes
them only with ``acceptable.recovery.lag``-driven task movement, which kwire does not model).
``reconcile`` follows ``streams.CurrentAssignmentBuilder.computeNextAssignment``: revoked active
tasks first, then an active task only once no other member owns it; standby and warm-up tasks
are given at once.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace

from kwire.broker.group._streams_group import (
    EMPTY_TASKS,
    MEMBER_STABLE,
    UNRELEASED_TASKS,
    UNREVOKED_TASKS,
    StreamsGroup,
    StreamsMember,
    Tasks,
    _freeze,
    _minus,
)

__all__ = ["reconcile", "sticky_assign"]


def sticky_assign(
    members: Mapping[str, StreamsMember],
    previous: Mapping[str, Tasks],
    tasks: Mapping[str, int],
    stateful: Iterable[str],
    num_standby: int,
) -> dict[str, Tasks]:
    """A simplified ``StickyTaskAssignor`` (module doc): members by id, tasks by (subtopology,
    partition)."""
    ids = sorted(members)
    if not ids:
        return {}
    all_tasks = [(s, p) for s in sorted(tasks) for p in range(tasks[s])]
    quota = -(-len(all_tasks) // len(ids))  # ceil: the most any member may keep
    active: dict[str, dict[str, set[int]]] = {m: {} for m in ids}
    load = dict.fromkeys(ids, 0)
    owner: dict[tuple[str, int], str] = {}
    for m in ids:  # stickiness: previous owners keep what fits their quota
        for s, ps in sorted(previous.get(m, EMPTY_TASKS).active.items()):
            for p in sorted(ps):
                if (s, p) in owner or p >= tasks.get(s, 0) or load[m] >= quota:
                    continue
                owner[(s, p)] = m
                active[m].setdefault(s, set()).add(p)
                load[m] += 1
    for task in all_tasks:
        if task in owner:
            continue
        m = min(ids, key=lambda x: (load[x], x))
        owner[task] = m
        active[m].setdefault(task[0], set()).add(task[1])
        load[m] += 1
    standby: dict[str, dict[str, set[int]]] = {m: {} for m in ids}
    stateful_set = set(stateful)
    for s, p in all_tasks:
        if s not in stateful_set:
            continue
        used = {members[owner[(s, p)]].process_id}
        for _ in range(num_standby):
            candidates = [m for m in ids if members[m].process_id not in used]
            if not candidates:
                break
            m = min(candidates, key=lambda x: (load[x], x))
            standby[m].setdefault(s, set()).add(p)
            load[m] += 1
            used.add(members[m].process_id)
    return {m: Tasks(_freeze(active[m]), _freeze(standby[m])) for m in ids}


def reconcile(
    group: StreamsGroup, member: StreamsMember, target: Tasks, owned: Tasks | None
) -> StreamsMember:
    """The member's next step toward its target (``CurrentAssignmentBuilder.build``)."""
    epoch = group.assignment_epoch
    if member.state == MEMBER_STABLE and member.member_epoch == epoch:
        return member
    if member.state == UNREVOKED_TASKS:
        # ``ownsRevokedTasks``: unknown (null owned tasks) counts as still owning
        pending = member.pending_revocation
        if owned is None or not owned.intersect(pending).is_empty():
            return member
    revoked = member.assigned.minus(target)
    if not revoked.is_empty():
        return replace(
            member,
            state=UNREVOKED_TASKS,
            assigned=member.assigned.intersect(target),
            pending_revocation=revoked,
        )
    unreleased = {
        s: frozenset(p for p in ps if group.active_owner(s, p, member.member_id))
        for s, ps in target.active.items()
    }
    given = Tasks(_minus(target.active, unreleased), target.standby, target.warmup)
    return replace(
        member,
        member_epoch=epoch,
        previous_member_epoch=(
            member.member_epoch if epoch != member.member_epoch else member.previous_member_epoch
        ),
        state=UNRELEASED_TASKS if _freeze(unreleased) else MEMBER_STABLE,
        assigned=given,
        pending_revocation=EMPTY_TASKS,
    )
