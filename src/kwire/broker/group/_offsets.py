"""Committed offsets: OffsetCommit, TxnOffsetCommit, OffsetFetch, OffsetDelete and retention.

Approach: Kafka's ``OffsetMetadataManager`` over the offsets each ``Group`` holds (classic and
KIP-848 groups each hold their own). A commit is an ``OffsetCommitKey`` v1 + ``OffsetCommitValue``
v3 record (v1 when it carries a retention time), a deletion its tombstone, given to the runtime,
whose replay of them changes the group's offsets, at once as at load; a transactional commit is
written in a transactional batch, staged, and applied by ``complete_txn`` when its marker is
written (the transaction coordinator writes the markers).

Offset retention (KIP-211; ``GroupMetadataManager.cleanupGroupMetadata``,
``OffsetMetadataManager.cleanupExpiredOffsets`` and the groups' ``offsetExpirationCondition``):
every ``offsets.retention.check.interval.ms`` the offsets of topics a group is not subscribed to
expire ``offsets.retention.minutes`` after a base time: for a classic group in Empty, when it
became Empty (its ``currentStateTimestamp``; the commit time when unknown); for a simple group (no
protocol type) and a KIP-848 consumer group, the commit time; a Stable classic ``consumer`` group
whose subscriptions are known expires the offsets of the topics it no longer subscribes to by
commit time; other classic groups expire nothing. An offset committed with an explicit expire
timestamp (OffsetCommit v1..v4 retention time) expires at that time instead; an offset with a
pending transactional commit stays. Each expired offset gets an OffsetCommit tombstone; a group
left empty whose offsets all expired is deleted (GroupMetadata tombstone, or the consumer group's
tombstones), so it leaves ListGroups.

A deleted topic's offsets (``OffsetMetadataManager.onPartitionsDeleted``) get tombstones in every
group, the pending transactional ones too, when the broker deletes the topic.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from kwire.broker.group._classic import COMPLETING_REBALANCE, DEAD, EMPTY, STABLE, Group, GroupError
from kwire.broker.group._consumer import ConsumerGroup, ConsumerGroupError
from kwire.broker.group._records import (
    OffsetAndMetadata,
    Record,
    Write,
    consumer_group_tombstones,
    group_key,
    offset_key,
    offset_record,
)
from kwire.protocol import ErrorCode

if TYPE_CHECKING:
    from kwire.broker.group._shard import GroupCoordinator

__all__ = ["OffsetMetadataManager"]

log = logging.getLogger("kwire.broker.group")


class OffsetMetadataManager:
    """The committed offsets of one group coordinator's groups (module doc)."""

    def __init__(self, shard: GroupCoordinator) -> None:
        self.shard = shard

    # --- offset retention (KIP-211) -----------------------------------------------------------

    def cleanup_group_metadata(self, out: list[Write], now_ms: int) -> int:
        """``cleanupGroupMetadata``: expire offsets (module doc), tombstone them, and delete the
        empty groups whose offsets all expired. The number of offsets expired."""
        retention_ms = self.shard.conf("offsets.retention.minutes") * 60_000
        expired_count = 0
        for group in list(self.shard.groups.values()):
            if group.state == DEAD:
                continue
            expired, all_expired = self._expired_offsets(group, now_ms, retention_ms)
            records: list[Record] = [(offset_key(group.group_id, tp), None) for tp in expired]
            delete = all_expired and (
                not group.members if isinstance(group, ConsumerGroup) else group.state == EMPTY
            )
            if delete:
                if isinstance(group, ConsumerGroup):
                    records += consumer_group_tombstones(group)
                    self.shard.consumer.forget(group.group_id)
                else:
                    records.append((group_key(group.group_id), None))
            if not records:
                continue
            out.append(Write(group.group_id, records, now_ms))
            for tp in expired:
                del group.offsets[tp]
            expired_count += len(expired)
            if expired:
                log.info(
                    "group %s: %d offsets expired (%s)",
                    group.group_id,
                    len(expired),
                    ", ".join(f"{t}-{p}" for t, p in expired),
                )
            if delete:
                log.info("group %s: empty with no offsets left, deleted", group.group_id)
                if isinstance(group, Group):
                    group.state = DEAD
                del self.shard.groups[group.group_id]
                self.shard.moved(group.group_id)
        return expired_count

    def _expired_offsets(
        self, group: Group | ConsumerGroup, now_ms: int, retention_ms: int
    ) -> tuple[list[tuple[str, int]], bool]:
        """``cleanupExpiredOffsets``: the group's expired partitions, and whether all of its
        offsets expired (None of them kept, no transaction pending)."""
        state_time = -1  # the base when Empty since then, else the commit time
        if isinstance(group, ConsumerGroup):  # by commit time
            subscribed = group.subscribed_topic_names() | set(group.subscription_metadata)
        elif not group.protocol_type:  # a simple group: by commit time
            subscribed = set()
        elif group.state == EMPTY:  # since it became Empty (else by commit time)
            subscribed, state_time = set(), group.state_timestamp
        elif group.state == STABLE and (topics := group.subscribed_topics()) is not None:
            subscribed = topics
        else:
            return [], False
        pending: set[tuple[str, int]] = set()
        for staged in group.pending_txn.values():
            pending.update(staged)
        expired: list[tuple[str, int]] = []
        all_expired = not group.pending_txn
        for tp, om in sorted(group.offsets.items()):
            if tp[0] in subscribed or tp in pending:
                all_expired = False
                continue
            if om.expire_timestamp >= 0:
                gone = now_ms >= om.expire_timestamp
            else:
                base = state_time if state_time >= 0 else om.commit_timestamp
                gone = now_ms - base >= retention_ms
            if gone:
                expired.append(tp)
            else:
                all_expired = False
        return expired, all_expired

    # --- deleted topics -----------------------------------------------------------------------

    def on_partitions_deleted(
        self, out: list[Write], partitions: Sequence[tuple[str, int]], now_ms: int
    ) -> int:
        """``OffsetMetadataManager.onPartitionsDeleted``: a tombstone for each offset, committed
        or pending in a transaction, of a deleted partition, in every group, so that a group
        starts a recreated topic from its reset policy, not from the old topic's position. The
        number of offsets deleted."""
        deleted = set(partitions)
        count = 0
        for group in self.shard.groups.values():
            gone = {tp for tp in group.offsets if tp in deleted}
            for staged in group.pending_txn.values():
                gone.update(tp for tp in staged if tp in deleted)
            if not gone:
                continue
            tombstones: list[Record] = [
                (offset_key(group.group_id, tp), None) for tp in sorted(gone)
            ]
            out.append(Write(group.group_id, tombstones, now_ms, replay=True))
            count += len(gone)
        if count:
            log.info(
                "deleted %d offsets of the deleted partitions %s",
                count,
                ", ".join(f"{t}-{p}" for t, p in sorted(deleted)),
            )
        return count

    # --- offsets ------------------------------------------------------------------------------

    def validate_offset_commit(
        self,
        group_id: str,
        generation_id: int,
        member_id: str,
        group_instance_id: str | None,
        version: int,
        transactional: bool,
        now_ms: int,
    ) -> Group | ConsumerGroup:
        """``OffsetMetadataManager.validateOffsetCommit`` / ``ClassicGroup.validateOffsetCommit``."""
        self.shard.expire_due(group_id, now_ms)
        streams = self.shard.streams
        if group_id in streams.groups:  # a streams group's offsets: kept in a classic holder
            error = streams.validate_offset_commit(
                group_id, member_id, generation_id, transactional, now_ms
            )
            if error:
                raise GroupError(ErrorCode(error))
            return self.shard.loaded_group(group_id, now_ms)
        group = self.shard.groups.get(group_id)
        if group is None or group.state == DEAD:
            if generation_id < 0:
                group = self.shard.groups[group_id] = Group(group_id, state_timestamp=now_ms)
                return group
            if transactional:
                raise GroupError(ErrorCode.ILLEGAL_GENERATION)
            raise GroupError(
                ErrorCode.GROUP_ID_NOT_FOUND if version >= 9 else ErrorCode.ILLEGAL_GENERATION
            )
        if isinstance(group, ConsumerGroup):
            try:
                self.shard.consumer.validate_offset_commit(
                    group, member_id, generation_id, version, transactional
                )
            except ConsumerGroupError as exc:
                raise GroupError(exc.error) from None
            return group
        if generation_id < 0 and group.state == EMPTY:
            return group  # a simple (admin / manual) commit
        # the member and its generation first, the group's state last: a member with a stale
        # generation learns ILLEGAL_GENERATION (and rejoins), not REBALANCE_IN_PROGRESS
        if generation_id >= 0 or member_id or group_instance_id is not None:
            error = self.shard.classic.validate_member(group, member_id, group_instance_id)
            if error is not ErrorCode.NONE:
                raise GroupError(error)
            if generation_id != group.generation_id:
                raise GroupError(ErrorCode.ILLEGAL_GENERATION)
        elif not transactional:
            # no member and no generation (OffsetCommit v0): only into an Empty group; a
            # transactional commit without them (TxnOffsetCommit v0-2) is accepted
            raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID)
        if transactional:
            return group  # the group's state does not hold transactional offsets
        if group.state == COMPLETING_REBALANCE:
            raise GroupError(ErrorCode.REBALANCE_IN_PROGRESS)
        # a commit keeps the member's session in Stable and PreparingRebalance
        # (OffsetMetadataManager.commitOffset)
        member = group.members[member_id]
        member.heartbeat_deadline = now_ms + member.session_timeout_ms
        return group

    def commit_offsets(
        self,
        out: list[Write],
        group: Group | ConsumerGroup,
        offsets: Mapping[tuple[str, int], OffsetAndMetadata],
        now_ms: int,
    ) -> None:
        if not offsets:
            return
        records = [offset_record(group.group_id, tp, om) for tp, om in offsets.items()]
        # the replay of the records makes them the group's offsets (``OffsetMetadataManager.replay``)
        out.append(Write(group.group_id, records, now_ms, replay=True))

    def stage_txn_offsets(
        self,
        out: list[Write],
        group_id: str,
        producer_id: int,
        producer_epoch: int,
        offsets: Mapping[tuple[str, int], OffsetAndMetadata],
        now_ms: int | None = None,
    ) -> None:
        """TxnOffsetCommit: offsets that become visible when the transaction commits."""
        now = self.shard.now_ms() if now_ms is None else now_ms
        group = self.shard.groups.get(group_id)
        if group is None:
            group = self.shard.groups[group_id] = Group(group_id, state_timestamp=now)
        if offsets:
            records = [offset_record(group_id, tp, om) for tp, om in offsets.items()]
            out.append(Write(group_id, records, now, producer=(producer_id, producer_epoch)))
        group.pending_txn.setdefault(producer_id, {}).update(offsets)

    def complete_txn(self, producer_id: int, commit: bool) -> None:
        """The transaction's marker is written: apply (commit) or drop its staged offsets."""
        for group in self.shard.groups.values():
            staged = group.pending_txn.pop(producer_id, None)
            if staged and commit:
                group.offsets.update(staged)

    def fetch_offsets(
        self,
        group_id: str,
        wanted: list[tuple[str, list[int] | None]] | None,
        require_stable: bool,
    ) -> list[tuple[str, list[tuple[int, OffsetAndMetadata | None, ErrorCode]]]]:
        """Offsets by topic; ``wanted`` None means every committed offset."""
        group = self.shard.groups.get(group_id)
        offsets = group.offsets if group is not None else {}
        pending: set[tuple[str, int]] = set()
        if require_stable and group is not None:
            for staged in group.pending_txn.values():
                pending.update(staged)
        if wanted is None:
            by_topic: dict[str, list[int]] = {}
            for topic, index in sorted(offsets):
                by_topic.setdefault(topic, []).append(index)
            wanted = [(topic, indexes) for topic, indexes in by_topic.items()]
        out: list[tuple[str, list[tuple[int, OffsetAndMetadata | None, ErrorCode]]]] = []
        for topic, indexes in wanted:
            if indexes is None:
                indexes = sorted(i for t, i in offsets if t == topic)
            rows: list[tuple[int, OffsetAndMetadata | None, ErrorCode]] = []
            for index in indexes:
                if (topic, index) in pending:
                    rows.append((index, None, ErrorCode.UNSTABLE_OFFSET_COMMIT))
                else:
                    rows.append((index, offsets.get((topic, index)), ErrorCode.NONE))
            out.append((topic, rows))
        return out

    def delete_offsets(
        self, out: list[Write], group_id: str, partitions: list[tuple[str, int]], now_ms: int
    ) -> tuple[ErrorCode, dict[tuple[str, int], ErrorCode]]:
        """``OffsetMetadataManager.deleteOffsets``."""
        error = self.shard.classic.request_error(group_id)  # GroupCoordinatorService.deleteOffsets
        if error is not ErrorCode.NONE:
            return error, {}
        self.shard.expire_due(group_id, now_ms)
        group = self.shard.groups.get(group_id)
        if group is None or group.state == DEAD:
            return ErrorCode.GROUP_ID_NOT_FOUND, {}
        subscribed: set[str] = set()
        if isinstance(group, ConsumerGroup):
            subscribed = group.subscribed_topic_names()
        elif not group.is_empty():
            topics = group.subscribed_topics()
            if topics is None:
                return ErrorCode.NON_EMPTY_GROUP, {}
            subscribed = topics
        errors: dict[tuple[str, int], ErrorCode] = {}
        tombstones = []
        for tp in partitions:
            if tp[0] in subscribed:
                errors[tp] = ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC
                continue
            errors[tp] = ErrorCode.NONE
            if tp in group.offsets:
                tombstones.append((offset_key(group_id, tp), None))
        if tombstones:  # their replay removes the offsets
            out.append(Write(group_id, tombstones, now_ms, replay=True))
        return ErrorCode.NONE, errors
