"""Classic groups: JoinGroup, SyncGroup, Heartbeat, LeaveGroup and their timers.

Approach: Kafka's ``GroupMetadataManager`` (``classicGroupJoin``, ``classicGroupSync``,
``classicGroupHeartbeat``, ``classicGroupLeave``, the join / sync / heartbeat timers) over the
``ClassicGroup`` model of ``_classic``, driven by requests and ``now_ms`` (style rule 27).

A request that has to wait (a JoinGroup until the rebalance completes, a follower's SyncGroup until
the leader's assignment) gets a ``Waiter``; it is filled when the group moves, and the shard's
``moved`` notifies ``("group", group_id)`` so the server wakes the parked response. Timers (the
initial rebalance delay, the rebalance timeout, session timeouts, KIP-394 pending members) are
deadlines checked by ``run_timers``.

An operation takes ``out``, the list of records it gives (``Write``s), and returns its answer or
waiter; the runtime writes the records once it returns. As in Kafka (whose classic-group operations
append with ``replayRecords`` false), the operation changes the group itself and gives the
``GroupMetadata`` record (key v2, value v3) that describes it; replaying that record rebuilds the
group at start.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING

from kwire.broker.group._classic import (
    COMPLETING_REBALANCE,
    DEAD,
    EMPTY,
    NEW_MEMBER_JOIN_TIMEOUT_MS,
    PREPARING_REBALANCE,
    STABLE,
    Group,
    JoinResult,
    Member,
    SyncResult,
    Waiter,
)
from kwire.broker.group._consumer import ConsumerGroup
from kwire.broker.group._records import (
    GROUP_METADATA_VALUE,
    MEMBER_METADATA,
    Write,
    consumer_group_tombstones,
    group_key,
    versioned,
)
from kwire.protocol import ErrorCode

if TYPE_CHECKING:
    from kwire.broker.group._shard import GroupCoordinator

__all__ = ["ClassicGroups"]

log = logging.getLogger("kwire.broker.group")


class ClassicGroups:
    """The classic groups of one group coordinator (module doc)."""

    def __init__(self, shard: GroupCoordinator) -> None:
        self.shard = shard

    # --- JoinGroup ----------------------------------------------------------------------------

    def request_error(self, group_id: str, session_timeout_ms: int | None = None) -> ErrorCode:
        """What ``GroupCoordinatorService`` rejects before it looks for the group's coordinator
        (so on every node of a cluster; the handlers ask before routing): an empty group id
        (JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetDelete), then JoinGroup's session
        timeout outside ``group.{min,max}.session.timeout.ms``."""
        if not group_id:
            return ErrorCode.INVALID_GROUP_ID
        if session_timeout_ms is not None and not (
            self.shard.conf("group.min.session.timeout.ms")
            <= session_timeout_ms
            <= self.shard.conf("group.max.session.timeout.ms")
        ):
            return ErrorCode.INVALID_SESSION_TIMEOUT
        return ErrorCode.NONE

    def join(
        self,
        out: list[Write],
        group_id: str,
        member_id: str,
        group_instance_id: str | None,
        protocol_type: str,
        protocols: list[tuple[str, bytes]],
        session_timeout_ms: int,
        rebalance_timeout_ms: int,
        client_id: str,
        client_host: str,
        require_known_member_id: bool,
        now_ms: int,
        *,
        supports_skip_assignment: bool = False,
    ) -> Waiter:
        """``GroupMetadataManager.classicGroupJoin``: a waiter, already done or done later.

        ``supports_skip_assignment`` (JoinGroup v9+, KIP-814) lets a static leader that rejoins a
        Stable group keep the group's assignment instead of causing a rebalance."""
        waiter = Waiter()
        error = self.request_error(group_id, session_timeout_ms)
        if error is not ErrorCode.NONE:
            waiter.resolve(JoinResult(error, member_id=member_id))
            return waiter
        self.shard.expire_due(group_id, now_ms)
        found = self.shard.groups.get(group_id)
        if found is None:
            if member_id:
                waiter.resolve(JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id=member_id))
                return waiter
            found = self.shard.groups[group_id] = Group(group_id, state_timestamp=now_ms)
        if isinstance(found, ConsumerGroup):
            if found.members:
                # a classic member cannot join a consumer group that has members (Kafka's
                # ``group.consumer.migration.policy`` disabled)
                waiter.resolve(
                    JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id=member_id)
                )
                return waiter
            # an empty consumer group becomes a classic group (its records are tombstoned); its
            # offsets stay
            out.append(Write(group_id, consumer_group_tombstones(found), now_ms))
            self.shard.consumer.forget(group_id)
            found = self.shard.groups[group_id] = Group(
                group_id,
                state_timestamp=found.created_ms,
                offsets=found.offsets,
                pending_txn=found.pending_txn,
            )
        group = found
        if not self._accept_joining_member(group, member_id):
            # classicGroupJoinToClassicGroup: the group's size before anything else
            group.pending_members.pop(member_id, None)
            if member_id in group.members:
                self._remove_member(group, member_id)
            waiter.resolve(JoinResult(ErrorCode.GROUP_MAX_SIZE_REACHED, member_id=""))
            return waiter
        if group.state == DEAD:
            waiter.resolve(JoinResult(ErrorCode.COORDINATOR_NOT_AVAILABLE, member_id=member_id))
            return waiter
        if not group.supports(protocol_type, protocols):
            waiter.resolve(JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id=member_id))
            return waiter
        if not member_id:
            self._join_unknown(
                out,
                group,
                waiter,
                group_instance_id,
                protocol_type,
                protocols,
                session_timeout_ms,
                rebalance_timeout_ms,
                client_id,
                client_host,
                require_known_member_id,
                now_ms,
                supports_skip_assignment,
            )
        else:
            self._join_known(
                group,
                waiter,
                member_id,
                group_instance_id,
                protocol_type,
                protocols,
                session_timeout_ms,
                rebalance_timeout_ms,
                client_id,
                client_host,
                now_ms,
            )
        self._maybe_complete_join(out, group, now_ms)
        return waiter

    def _join_unknown(
        self,
        out: list[Write],
        group: Group,
        waiter: Waiter,
        instance_id: str | None,
        protocol_type: str,
        protocols: list[tuple[str, bytes]],
        session_timeout_ms: int,
        rebalance_timeout_ms: int,
        client_id: str,
        client_host: str,
        require_known_member_id: bool,
        now_ms: int,
        supports_skip_assignment: bool = False,
    ) -> None:
        new_id = (instance_id or client_id) + "-" + str(self.shard.uuid4())
        if instance_id is not None:
            old_id = group.static_members.get(instance_id)
            if old_id is not None and old_id in group.members:
                self._replace_static_member(
                    out, group, waiter, old_id, new_id, protocols, session_timeout_ms,
                    rebalance_timeout_ms, client_id, client_host, now_ms,
                    supports_skip_assignment,
                )  # fmt: skip
                return
        elif require_known_member_id:
            # KIP-394: the member id comes back with MEMBER_ID_REQUIRED; the member rejoins with it
            group.pending_members[new_id] = now_ms + session_timeout_ms
            waiter.resolve(JoinResult(ErrorCode.MEMBER_ID_REQUIRED, member_id=new_id))
            return
        member = Member(
            new_id, instance_id, client_id, client_host, rebalance_timeout_ms,
            session_timeout_ms, protocol_type, protocols, is_new=True,
        )  # fmt: skip
        self._add_member_and_rebalance(group, member, waiter, now_ms)

    def _replace_static_member(
        self,
        out: list[Write],
        group: Group,
        waiter: Waiter,
        old_id: str,
        new_id: str,
        protocols: list[tuple[str, bytes]],
        session_timeout_ms: int,
        rebalance_timeout_ms: int,
        client_id: str,
        client_host: str,
        now_ms: int,
        supports_skip_assignment: bool = False,
    ) -> None:
        """``updateStaticMemberThenRebalanceOrCompleteJoin``: a known instance rejoins with a
        new member id; the old one is fenced (``ClassicGroup.replaceStaticMember``)."""
        current_leader = group.leader_id
        old = group.members.pop(old_id)
        group.pending_sync.discard(old_id)
        if old.join_waiter is not None:
            old.join_waiter.resolve(JoinResult(ErrorCode.FENCED_INSTANCE_ID, member_id=old_id))
        if old.sync_waiter is not None:
            old.sync_waiter.resolve(SyncResult(ErrorCode.FENCED_INSTANCE_ID))
        old.join_waiter = old.sync_waiter = None
        # the new member keeps the old one's client id and host (replaceStaticMember), and takes
        # the request's protocols and timeouts (updateMember)
        member = Member(
            new_id, old.group_instance_id, old.client_id, old.client_host, rebalance_timeout_ms,
            session_timeout_ms, old.protocol_type, protocols, assignment=old.assignment,
        )  # fmt: skip
        group.members[new_id] = member
        assert old.group_instance_id is not None
        group.static_members[old.group_instance_id] = new_id
        if group.leader_id == old_id:
            group.leader_id = new_id
        member.heartbeat_deadline = now_ms + old.session_timeout_ms
        if group.state == STABLE and group.select_protocol() == group.protocol_name:
            # The next generation would select the same protocol: no rebalance, the member keeps
            # its assignment under the new id (KIP-345; the subscription bytes may differ, a
            # restarted consumer owns nothing yet). From JoinGroup v9 (KIP-814) a returning leader
            # is told so and skips the assignment; before v9 every returning member, the leader
            # too, is answered as a follower (the leader field names the old leader id), so it
            # syncs and gets its old assignment; the other members see nothing.
            self._store_group(out, group, now_ms)
            result = self._join_result(group, member, ErrorCode.NONE)
            if supports_skip_assignment:
                result.skip_assignment = group.leader_id == new_id
            else:
                result.members = []
                result.leader = current_leader or ""
            waiter.resolve(result)
            return
        member.join_waiter = waiter
        if group.state in (STABLE, COMPLETING_REBALANCE):
            # Stable: the protocol changes; CompletingRebalance: the leader may have assigned to
            # the old member id, so a new generation is needed
            self._prepare_rebalance(group, now_ms)

    def _accept_joining_member(self, group: Group, member_id: str) -> bool:
        """``GroupMetadataManager.acceptJoiningMember``: while preparing a rebalance the members
        awaiting a join count (the last to rejoin are kicked out if the limit went down);
        otherwise the members."""
        limit = self.shard.conf("group.max.size")
        member = group.members.get(member_id)
        if group.state in (EMPTY, DEAD):
            return True
        if group.state == PREPARING_REBALANCE:
            if member is not None and member.join_waiter is not None:
                return True
            awaiting = sum(1 for m in group.members.values() if m.join_waiter is not None)
            return awaiting < limit
        return member is not None or len(group.members) < limit

    def _join_known(
        self,
        group: Group,
        waiter: Waiter,
        member_id: str,
        instance_id: str | None,
        protocol_type: str,
        protocols: list[tuple[str, bytes]],
        session_timeout_ms: int,
        rebalance_timeout_ms: int,
        client_id: str,
        client_host: str,
        now_ms: int,
    ) -> None:
        if member_id in group.pending_members:
            del group.pending_members[member_id]
            member = Member(
                member_id, instance_id, client_id, client_host, rebalance_timeout_ms,
                session_timeout_ms, protocol_type, protocols, is_new=True,
            )  # fmt: skip
            self._add_member_and_rebalance(group, member, waiter, now_ms)
            return
        error = self.validate_member(group, member_id, instance_id)
        if error is not ErrorCode.NONE:
            waiter.resolve(JoinResult(error, member_id=member_id))
            return
        member = group.members[member_id]
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.session_timeout_ms = session_timeout_ms
        member.client_id = client_id
        if group.state == PREPARING_REBALANCE:
            self._update_member_and_rebalance(group, member, protocols, waiter, now_ms)
        elif group.state == COMPLETING_REBALANCE:
            if member.matches(protocols):
                # the member lost the join response: send it again
                waiter.resolve(self._join_result(group, member, ErrorCode.NONE))
            else:
                self._update_member_and_rebalance(group, member, protocols, waiter, now_ms)
        elif group.state == STABLE:
            if group.leader_id == member_id or not member.matches(protocols):
                self._update_member_and_rebalance(group, member, protocols, waiter, now_ms)
            else:
                waiter.resolve(self._join_result(group, member, ErrorCode.NONE))
        else:
            waiter.resolve(JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id=member_id))

    def validate_member(self, group: Group, member_id: str, instance_id: str | None) -> ErrorCode:
        """``ClassicGroup.validateMember``: the instance id first (unknown, or mapped to another
        member id: fenced), then the member id."""
        if instance_id is not None:
            known = group.static_members.get(instance_id)
            if known is None:
                return ErrorCode.UNKNOWN_MEMBER_ID
            if known != member_id:
                return ErrorCode.FENCED_INSTANCE_ID
        if member_id not in group.members:
            return ErrorCode.UNKNOWN_MEMBER_ID
        return ErrorCode.NONE

    def _add_member_and_rebalance(
        self, group: Group, member: Member, waiter: Waiter, now_ms: int
    ) -> None:
        member.join_waiter = waiter
        member.heartbeat_deadline = now_ms + NEW_MEMBER_JOIN_TIMEOUT_MS
        group.members[member.member_id] = member
        if member.group_instance_id is not None:
            group.static_members[member.group_instance_id] = member.member_id
        if group.protocol_type is None or group.is_empty() or len(group.members) == 1:
            group.protocol_type = member.protocol_type
        group.new_member_added = True
        if group.state != PREPARING_REBALANCE:
            self._prepare_rebalance(group, now_ms)

    def _update_member_and_rebalance(
        self,
        group: Group,
        member: Member,
        protocols: list[tuple[str, bytes]],
        waiter: Waiter,
        now_ms: int,
    ) -> None:
        member.protocols = protocols
        if member.join_waiter is not None and member.join_waiter is not waiter:
            member.join_waiter.resolve(
                JoinResult(ErrorCode.REBALANCE_IN_PROGRESS, member_id=member.member_id)
            )
        member.join_waiter = waiter
        if group.state in (STABLE, COMPLETING_REBALANCE, EMPTY):
            self._prepare_rebalance(group, now_ms)

    def _prepare_rebalance(self, group: Group, now_ms: int) -> None:
        """``prepareRebalance``: cancel the sync phase, start the join phase and its timer."""
        if group.state == COMPLETING_REBALANCE:
            for member in group.members.values():
                member.assignment = b""
                if member.sync_waiter is not None:
                    member.sync_waiter.resolve(SyncResult(ErrorCode.REBALANCE_IN_PROGRESS))
                    member.sync_waiter = None
        group.pending_sync.clear()  # removeSyncExpiration
        initial = group.state == EMPTY
        group.state = PREPARING_REBALANCE
        group.state_timestamp = now_ms
        timeout = max((m.rebalance_timeout_ms for m in group.members.values()), default=0)
        delay = self.shard.conf("group.initial.rebalance.delay.ms")
        if initial and delay > 0:
            # InitialDelayedJoin: wait for more members, up to the rebalance timeout
            group.in_initial_delay = True
            group.new_member_added = False
            group.rebalance_deadline = now_ms + delay
            group.initial_delay_remaining = max(timeout - delay, 0)
        else:
            group.in_initial_delay = False
            group.rebalance_deadline = now_ms + timeout
        self.shard.moved(group.group_id)

    def _maybe_complete_join(self, out: list[Write], group: Group, now_ms: int) -> None:
        if group.state == PREPARING_REBALANCE and not group.in_initial_delay and group.all_joined():
            self._complete_join(out, group, now_ms)

    def _complete_join(self, out: list[Write], group: Group, now_ms: int) -> None:
        """``completeClassicGroupJoin``: drop who did not rejoin, next generation, answer all."""
        for member in list(group.members.values()):
            if member.join_waiter is None:
                self._remove_member(group, member.member_id)
        group.pending_members.clear()
        group.generation_id += 1
        group.rebalance_deadline = None
        group.in_initial_delay = False
        group.state_timestamp = now_ms
        if group.is_empty():
            group.state = EMPTY
            group.protocol_name = None
            group.leader_id = None
            self._store_group(out, group, now_ms)
            self.shard.moved(group.group_id)
            return
        if group.leader_id not in group.members or (
            group.members[group.leader_id].join_waiter is None
        ):
            group.leader_id = next(iter(group.members))
        group.protocol_name = group.select_protocol()
        group.state = COMPLETING_REBALANCE
        # every member must sync within the rebalance timeout (KIP-814's pending sync timer)
        group.rebalance_deadline = now_ms + max(
            m.rebalance_timeout_ms for m in group.members.values()
        )
        group.pending_sync = set(group.members)
        for member in group.members.values():
            waiter = member.join_waiter
            member.join_waiter = None
            member.is_new = False
            member.heartbeat_deadline = now_ms + member.session_timeout_ms
            if waiter is not None:
                waiter.resolve(self._join_result(group, member, ErrorCode.NONE))
        self.shard.moved(group.group_id)

    def _join_result(self, group: Group, member: Member, error: ErrorCode) -> JoinResult:
        members: list[tuple[str, str | None, bytes]] = []
        if member.member_id == group.leader_id:
            members = [
                (m.member_id, m.group_instance_id, m.metadata(group.protocol_name))
                for m in group.members.values()
            ]
        return JoinResult(
            error,
            generation_id=group.generation_id,
            protocol_type=group.protocol_type,
            protocol_name=group.protocol_name,
            leader=group.leader_id or "",
            member_id=member.member_id,
            members=members,
        )

    # --- SyncGroup ----------------------------------------------------------------------------

    def sync(
        self,
        out: list[Write],
        group_id: str,
        generation_id: int,
        member_id: str,
        group_instance_id: str | None,
        protocol_type: str | None,
        protocol_name: str | None,
        assignments: Iterable[tuple[str, bytes]],
        now_ms: int,
    ) -> Waiter:
        """``GroupMetadataManager.classicGroupSync``."""
        waiter = Waiter()
        if self.request_error(group_id) is not ErrorCode.NONE:
            waiter.resolve(SyncResult(ErrorCode.INVALID_GROUP_ID))
            return waiter
        self.shard.expire_due(group_id, now_ms)
        group = self.shard.classic_group(group_id)  # a consumer group has no classic members
        if group is None or group.state == DEAD:
            waiter.resolve(SyncResult(ErrorCode.UNKNOWN_MEMBER_ID))
            return waiter
        error = self.validate_member(group, member_id, group_instance_id)
        if error is ErrorCode.NONE and generation_id != group.generation_id:
            error = ErrorCode.ILLEGAL_GENERATION
        if error is ErrorCode.NONE and (
            (protocol_type is not None and protocol_type != group.protocol_type)
            or (protocol_name is not None and protocol_name != group.protocol_name)
        ):
            error = ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        if error is not ErrorCode.NONE:
            waiter.resolve(SyncResult(error))
            return waiter
        member = group.members[member_id]
        if group.state == EMPTY:
            waiter.resolve(SyncResult(ErrorCode.UNKNOWN_MEMBER_ID))
        elif group.state == PREPARING_REBALANCE:
            waiter.resolve(SyncResult(ErrorCode.REBALANCE_IN_PROGRESS))
        elif group.state == STABLE:
            member.heartbeat_deadline = now_ms + member.session_timeout_ms
            self._synced(group, member_id)
            waiter.resolve(self._sync_result(group, member))
        else:  # CompletingRebalance
            member.heartbeat_deadline = now_ms + member.session_timeout_ms
            self._synced(group, member_id)
            if member.sync_waiter is not None:
                member.sync_waiter.resolve(SyncResult(ErrorCode.REBALANCE_IN_PROGRESS))
            member.sync_waiter = waiter
            if member_id == group.leader_id:
                given = dict(assignments)
                for m in group.members.values():
                    m.assignment = bytes(given.get(m.member_id, b""))
                group.state = STABLE
                group.state_timestamp = now_ms
                self._store_group(out, group, now_ms)
                for m in group.members.values():
                    if m.sync_waiter is not None:
                        m.sync_waiter.resolve(self._sync_result(group, m))
                        m.sync_waiter = None
                self.shard.moved(group.group_id)
        return waiter

    @staticmethod
    def _synced(group: Group, member_id: str) -> None:
        """``removePendingSyncMember``: the sync timer ends when every member has synced."""
        group.pending_sync.discard(member_id)
        if not group.pending_sync:
            group.rebalance_deadline = None

    @staticmethod
    def _sync_result(group: Group, member: Member) -> SyncResult:
        return SyncResult(
            ErrorCode.NONE, group.protocol_type, group.protocol_name, member.assignment
        )

    # --- Heartbeat and LeaveGroup -------------------------------------------------------------

    def heartbeat(
        self,
        group_id: str,
        generation_id: int,
        member_id: str,
        group_instance_id: str | None,
        now_ms: int,
    ) -> ErrorCode:
        """``GroupMetadataManager.classicGroupHeartbeat``."""
        if self.request_error(group_id) is not ErrorCode.NONE:
            return ErrorCode.INVALID_GROUP_ID
        self.shard.expire_due(group_id, now_ms)
        group = self.shard.classic_group(group_id)  # a consumer group has no classic members
        if group is None or group.state == DEAD:
            return ErrorCode.UNKNOWN_MEMBER_ID
        # validateClassicGroupHeartbeat: member, generation; then the state
        error = self.validate_member(group, member_id, group_instance_id)
        if error is not ErrorCode.NONE:
            return error
        if generation_id != group.generation_id:
            return ErrorCode.ILLEGAL_GENERATION
        if group.state == EMPTY:
            return ErrorCode.UNKNOWN_MEMBER_ID
        member = group.members[member_id]
        member.heartbeat_deadline = now_ms + member.session_timeout_ms
        if group.state == PREPARING_REBALANCE:
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    def leave(
        self, out: list[Write], group_id: str, members: list[tuple[str, str | None]], now_ms: int
    ) -> tuple[ErrorCode, list[tuple[str, str | None, ErrorCode]]]:
        """``classicGroupLeave``: the top-level error and one error per leaving member."""
        if self.request_error(group_id) is not ErrorCode.NONE:
            return ErrorCode.INVALID_GROUP_ID, []
        self.shard.expire_due(group_id, now_ms)
        group = self.shard.classic_group(group_id)  # a consumer group has no classic members
        if group is None or group.state == DEAD:
            # the service answers a missing group member by member
            return ErrorCode.NONE, [(m, i, ErrorCode.UNKNOWN_MEMBER_ID) for m, i in members]
        results: list[tuple[str, str | None, ErrorCode]] = []
        left = False
        # classicGroupLeaveToClassicGroup; every answer echoes the request's member id (the
        # admin client matches its removals by (member id, instance id), the member id empty)
        for member_id, instance_id in members:
            error = ErrorCode.NONE
            if not member_id:  # removal by instance id (Admin.removeMembersFromConsumerGroup)
                known = group.static_members.get(instance_id) if instance_id is not None else None
                if known is None:
                    error = ErrorCode.UNKNOWN_MEMBER_ID
                else:
                    self._remove_member(group, known)
            elif member_id in group.pending_members:
                del group.pending_members[member_id]
            else:
                error = self.validate_member(group, member_id, instance_id)
                if error is ErrorCode.NONE:
                    self._remove_member(group, member_id)
            results.append((member_id, instance_id, error))
            left = left or error is ErrorCode.NONE
        if left:
            self._after_removal(out, group, now_ms)
        return ErrorCode.NONE, results

    def _remove_member(self, group: Group, member_id: str) -> None:
        member = group.members.pop(member_id)
        group.pending_sync.discard(member_id)
        instance_id = member.group_instance_id
        if instance_id is not None and group.static_members.get(instance_id) == member_id:
            del group.static_members[instance_id]
        if member.join_waiter is not None:
            member.join_waiter.resolve(JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id=member_id))
        if member.sync_waiter is not None:
            member.sync_waiter.resolve(SyncResult(ErrorCode.UNKNOWN_MEMBER_ID))
        member.join_waiter = member.sync_waiter = None
        if group.leader_id == member_id:
            group.leader_id = next(iter(group.members), None)  # a new leader is chosen on join

    def _after_removal(self, out: list[Write], group: Group, now_ms: int) -> None:
        """``removeMemberAndUpdateClassicGroup``."""
        if group.state in (STABLE, COMPLETING_REBALANCE):
            self._prepare_rebalance(group, now_ms)
        if group.state == PREPARING_REBALANCE:
            self._maybe_complete_join(out, group, now_ms)

    # --- timers -------------------------------------------------------------------------------

    def run_timers(self, out: list[Write], group: Group, now_ms: int) -> None:
        """The group's due timers: pending members, sessions, the rebalance deadline."""
        changed = False
        for pending, expiry in list(group.pending_members.items()):
            if now_ms >= expiry:
                del group.pending_members[pending]
                changed = True
        for member in list(group.members.values()):
            if member.join_waiter is not None or member.sync_waiter is not None:
                continue  # ClassicGroupMember.shouldKeepAlive
            if now_ms >= member.heartbeat_deadline:
                log.info("member %s of group %s expired", member.member_id, group.group_id)
                self._remove_member(group, member.member_id)
                changed = True
        if changed:
            self._after_removal(out, group, now_ms)
        deadline = group.rebalance_deadline
        if deadline is not None and now_ms >= deadline:
            if group.state == PREPARING_REBALANCE:
                if (
                    group.in_initial_delay
                    and group.new_member_added
                    and group.initial_delay_remaining > 0
                ):
                    delay = min(
                        self.shard.conf("group.initial.rebalance.delay.ms"),
                        group.initial_delay_remaining,
                    )
                    group.initial_delay_remaining -= delay
                    group.new_member_added = False
                    group.rebalance_deadline = now_ms + delay
                else:
                    group.in_initial_delay = False
                    self._complete_join(out, group, now_ms)
            elif group.state in (COMPLETING_REBALANCE, STABLE) and group.pending_sync:
                # expirePendingSync: drop who did not sync in time, rebalance again
                for member_id in sorted(group.pending_sync):
                    if member_id in group.members:
                        self._remove_member(group, member_id)
                group.pending_sync.clear()
                self._prepare_rebalance(group, now_ms)
                self._maybe_complete_join(out, group, now_ms)
            else:
                group.rebalance_deadline = None

    # --- the record -------------------------------------------------------------------------------

    def _store_group(self, out: list[Write], group: Group, now_ms: int) -> None:
        """``GroupCoordinatorRecordHelpers.newGroupMetadataRecord`` (value v3)."""
        members = [
            MEMBER_METADATA(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                client_id=m.client_id,
                client_host=m.client_host,
                rebalance_timeout=m.rebalance_timeout_ms,
                session_timeout=m.session_timeout_ms,
                subscription=m.metadata(group.protocol_name),
                assignment=m.assignment,
            )
            for m in group.members.values()
        ]
        value = GROUP_METADATA_VALUE(
            protocol_type=group.protocol_type or "",
            generation=group.generation_id,
            protocol=group.protocol_name,
            leader=group.leader_id,
            current_state_timestamp=now_ms,
            members=members,
        )
        out.append(
            Write(group.group_id, [(group_key(group.group_id), versioned(value, 3))], now_ms)
        )
