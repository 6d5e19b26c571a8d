"""KIP-848 consumer groups: ConsumerGroupHeartbeat, ConsumerGroupDescribe, and their records.

Approach: a sans-IO state machine beside the classic groups, driven by heartbeats and ``now_ms``
(style rule 27), following Kafka's group-coordinator module
(``GroupMetadataManager.consumerGroupHeartbeat``, ``TargetAssignmentBuilder``) over the model of
``_consumer`` and the assignors of ``_assignors``.

Every decision is a list of records (key versions 3..8, values v0, as
``GroupCoordinatorRecordHelpers`` makes them) handed to the runtime, which appends them to the
group's partition of ``__consumer_offsets`` and then replays them into memory by the same
``replay`` that loads the topic at start, so what survives a restart is exactly what a heartbeat
decided. A consumer group sits in the shard's one map of groups beside the classic ones: both
kinds share group ids, and each holds its committed offsets, as in Kafka.
"""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Final

from kwire.broker.group._assignors import ASSIGNORS, Assignment
from kwire.broker.group._classic import Group
from kwire.broker.group._consumer import (
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    MEMBER_STABLE,
    UNREVOKED_PARTITIONS,
    ConsumerGroup,
    ConsumerGroupError,
    ConsumerMember,
    HeartbeatResult,
    reconcile,
)
from kwire.broker.group._records import (
    CURRENT_KEY,
    CURRENT_VALUE,
    KEY_CURRENT_ASSIGNMENT,
    KEY_MEMBER,
    KEY_METADATA,
    KEY_PARTITION_METADATA,
    KEY_TARGET_MEMBER,
    KEY_TARGET_METADATA,
    MEMBER_KEY,
    MEMBER_VALUE,
    METADATA_KEY,
    METADATA_VALUE,
    PARTITION_METADATA_KEY,
    PARTITION_METADATA_VALUE,
    TARGET_MEMBER_KEY,
    TARGET_MEMBER_VALUE,
    TARGET_METADATA_KEY,
    TARGET_METADATA_VALUE,
    Record,
    Write,
    assignment_of,
    current_assignment_record,
    epoch_record,
    group_key,
    member_record,
    partition_metadata_record,
    target_epoch_record,
    target_member_record,
)
from kwire.protocol import ErrorCode

if TYPE_CHECKING:
    from kwire.broker.group._shard import GroupCoordinator

__all__ = ["ConsumerGroups"]

log = logging.getLogger("kwire.broker.group")

_DEFAULTS: Final = {
    "group.consumer.heartbeat.interval.ms": 5000,
    "group.consumer.session.timeout.ms": 45000,
    "group.consumer.max.size": 2**31 - 1,
}


def _group_and_member(key_version: int, body: memoryview) -> tuple[str, str]:
    """The group and member ids of a consumer-group record key past ``KEY_METADATA`` (the
    partition and target metadata keys name no member: ``""``); each key type decoded as itself."""
    if key_version == KEY_PARTITION_METADATA:
        return PARTITION_METADATA_KEY.decode(body, key_version).group_id, ""
    if key_version == KEY_TARGET_METADATA:
        return TARGET_METADATA_KEY.decode(body, key_version).group_id, ""
    if key_version == KEY_MEMBER:
        member = MEMBER_KEY.decode(body, key_version)
        return member.group_id, member.member_id
    if key_version == KEY_TARGET_MEMBER:
        target = TARGET_MEMBER_KEY.decode(body, key_version)
        return target.group_id, target.member_id
    if key_version == KEY_CURRENT_ASSIGNMENT:
        current = CURRENT_KEY.decode(body, key_version)
        return current.group_id, current.member_id
    raise KeyError(key_version)


class ConsumerGroups:
    """The consumer groups of one group coordinator (module doc)."""

    def __init__(self, shard: GroupCoordinator) -> None:
        self.shard = shard
        # the timers (not state: never written, made again at load): group id -> member id ->
        # its session deadline, and its rebalance deadline with the member epoch it is for
        self.session_deadlines: dict[str, dict[str, int]] = {}
        self.rebalance_deadlines: dict[str, dict[str, tuple[int, int]]] = {}
        # the operations, as the handlers and the timers call them: the runtime writes and
        # replays the records each gives once it returns
        self.heartbeat = shard.runtime.run(self.decide_heartbeat)
        self.fence = shard.runtime.run(self.decide_fence)

    # --- configuration and lookup -------------------------------------------------------------

    def conf(self, name: str) -> int:
        value = self.shard.config.get(name)
        return int(value) if value is not None else int(_DEFAULTS[name])

    @property
    def assignors(self) -> list[str]:
        """``group.consumer.assignors`` (class names or short names); the first is the default."""
        raw = self.shard.config.get("group.consumer.assignors") or "uniform,range"
        names = []
        for item in raw.split(","):
            item = item.strip()
            short = item.rsplit(".", 1)[-1].removesuffix("Assignor").lower()
            if short in ASSIGNORS:
                names.append(short)
        return names or ["uniform", "range"]

    def group(self, group_id: str) -> ConsumerGroup | None:
        group = self.shard.groups.get(group_id)
        return group if isinstance(group, ConsumerGroup) else None

    def all(self) -> list[ConsumerGroup]:
        return [g for g in self.shard.groups.values() if isinstance(g, ConsumerGroup)]

    def _topics(self) -> Mapping[str, Any]:
        state = self.shard.state
        return state.topics if state is not None else {}

    def _topic_name(self, topic_id: uuid.UUID) -> str | None:
        state = self.shard.state
        topic = state.topics_by_id.get(topic_id) if state is not None else None
        return topic.name if topic is not None else None

    def _matching(self, regex: str) -> set[str]:
        try:
            pattern = re.compile(regex)
        except re.error:
            return set()
        return {
            name
            for name, topic in self._topics().items()
            if not getattr(topic, "internal", False) and pattern.fullmatch(name)
        }

    def _member_topics(self, member: ConsumerMember) -> set[str]:
        names = set(member.subscribed_topic_names)
        if member.subscribed_topic_regex:
            names |= self._matching(member.subscribed_topic_regex)
        return names

    def _subscription_metadata(
        self, members: Iterable[ConsumerMember]
    ) -> dict[str, tuple[uuid.UUID, int]]:
        """``computeSubscriptionMetadata``: the subscribed topics that exist, with their sizes."""
        names: set[str] = set()
        for member in members:
            names |= self._member_topics(member)
        topics = self._topics()
        return {
            name: (topics[name].topic_id, len(topics[name].partitions))
            for name in sorted(names)
            if name in topics
        }

    # --- ConsumerGroupHeartbeat ---------------------------------------------------------------

    def decide_heartbeat(
        self,
        out: list[Write],
        version: int,
        group_id: str,
        member_id: str,
        member_epoch: int,
        instance_id: str | None,
        rack_id: str | None,
        rebalance_timeout_ms: int,
        subscribed_topic_names: list[str] | None,
        subscribed_topic_regex: str | None,
        server_assignor: str | None,
        owned: list[tuple[uuid.UUID, list[int]]] | None,
        client_id: str,
        client_host: str,
        now_ms: int,
    ) -> HeartbeatResult:
        """``GroupMetadataManager.consumerGroupHeartbeat``: a result, never an exception."""
        self.shard.expire_due(group_id, now_ms)  # the session timers due by now
        invalid = self.request_error(
            version, group_id, member_id, member_epoch, instance_id, rack_id,
            rebalance_timeout_ms, subscribed_topic_names, subscribed_topic_regex,
            server_assignor, owned,
        )  # fmt: skip
        if invalid is not None:
            return invalid
        try:
            if member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
                return self._leave(out, group_id, instance_id, member_id, member_epoch, now_ms)
            return self._heartbeat(
                out, group_id, member_id, member_epoch, instance_id, rack_id, rebalance_timeout_ms,
                subscribed_topic_names, subscribed_topic_regex, server_assignor, owned,
                client_id, client_host, now_ms,
            )  # fmt: skip
        except ConsumerGroupError as exc:
            return HeartbeatResult(exc.error, exc.message)

    def request_error(
        self,
        version: int,
        group_id: str,
        member_id: str,
        member_epoch: int,
        instance_id: str | None,
        rack_id: str | None,
        rebalance_timeout_ms: int,
        names: list[str] | None,
        regex: str | None,
        assignor: str | None,
        owned: list[tuple[uuid.UUID, list[int]]] | None,
    ) -> HeartbeatResult | None:
        """The heartbeat's answer when the request itself is invalid (``None``: it is not):
        ``throwIfConsumerGroupHeartbeatRequestIsInvalid``. ``GroupCoordinatorService.
        consumerGroupHeartbeat`` checks it before it looks for the group's coordinator (Kafka
        4.1+; 4.0 in the shard), so the handler asks before routing."""

        def invalid(message: str) -> HeartbeatResult:
            return HeartbeatResult(ErrorCode.INVALID_REQUEST, message)

        if group_id == "":
            return invalid("GroupId can't be empty.")
        if instance_id == "":
            return invalid("InstanceId can't be empty.")
        if rack_id == "":
            return invalid("RackId can't be empty.")
        if regex is not None:
            try:
                re.compile(regex)
            except re.error as exc:
                return invalid(
                    f"SubscribedTopicRegex `{regex}` is not a valid regular expression: {exc}."
                )
        # KIP-1082: from v1 the client makes its member id, also when joining
        if (
            version >= 1 or member_epoch > 0 or member_epoch == LEAVE_GROUP_MEMBER_EPOCH
        ) and not member_id:
            return invalid("MemberId can't be empty.")
        if member_epoch == 0:
            if rebalance_timeout_ms == -1:
                return invalid("RebalanceTimeoutMs must be provided in first request.")
            if owned is None or owned:
                return invalid("TopicPartitions must be empty when (re-)joining.")
            if not names and not regex:
                return invalid(
                    "SubscribedTopicNames or SubscribedTopicRegex must be set in first request."
                )
        elif member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            if not member_id:
                return invalid("MemberId can't be empty.")
            if instance_id is None:
                return invalid("InstanceId can't be null.")
        elif member_epoch < 0 and member_epoch != LEAVE_GROUP_MEMBER_EPOCH:
            return invalid("MemberEpoch is invalid.")
        if assignor is not None and assignor not in self.assignors:
            return HeartbeatResult(
                ErrorCode.UNSUPPORTED_ASSIGNOR,
                f"ServerAssignor {assignor} is not supported. Supported assignors: "
                f"{', '.join(self.assignors)}.",
            )
        return None

    def _group_for(self, group_id: str, create: bool, records: list[Record]) -> ConsumerGroup:
        """``getOrMaybeCreateConsumerGroup``: an empty classic group is replaced (tombstoned)."""
        if group_id in self.shard.streams.groups:  # one id space with streams groups
            raise ConsumerGroupError(
                ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group."
            )
        holder = self.shard.groups.get(group_id)
        if holder is None:
            if not create:
                raise ConsumerGroupError(
                    ErrorCode.GROUP_ID_NOT_FOUND, f"Consumer group {group_id} not found."
                )
            return ConsumerGroup(group_id)
        if isinstance(holder, ConsumerGroup):
            return holder
        if create and not holder.members and not holder.pending_members:
            if holder.generation_id > 0 or holder.protocol_type is not None:
                records.append((group_key(group_id), None))
            return ConsumerGroup(group_id)
        raise ConsumerGroupError(
            ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group."
        )

    def _check_epoch(
        self,
        member: ConsumerMember,
        received: int,
        owned: list[tuple[uuid.UUID, list[int]]] | None,
    ) -> None:
        """``throwIfConsumerGroupMemberEpochIsInvalid``: the previous epoch is accepted when the
        member owns a subset of its assignment (the response with the bump was lost)."""
        if received > member.member_epoch:
            raise ConsumerGroupError(
                ErrorCode.FENCED_MEMBER_EPOCH,
                f"The consumer group member has a greater member epoch ({received}) than the one "
                f"known by the group coordinator ({member.member_epoch}). The member must abandon "
                "all its partitions and rejoin.",
            )
        if received < member.member_epoch:
            subset = owned is not None and all(
                p in member.assigned.get(t, frozenset()) for t, ps in owned for p in ps
            )
            if received != member.previous_member_epoch or not subset:
                raise ConsumerGroupError(
                    ErrorCode.FENCED_MEMBER_EPOCH,
                    f"The consumer group member has a smaller member epoch ({received}) than the "
                    f"one known by the group coordinator ({member.member_epoch}). The member must "
                    "abandon all its partitions and rejoin.",
                )

    def _heartbeat(
        self,
        out: list[Write],
        group_id: str,
        member_id: str,
        member_epoch: int,
        instance_id: str | None,
        rack_id: str | None,
        rebalance_timeout_ms: int,
        names: list[str] | None,
        regex: str | None,
        assignor: str | None,
        owned: list[tuple[uuid.UUID, list[int]]] | None,
        client_id: str,
        client_host: str,
        now_ms: int,
    ) -> HeartbeatResult:
        records: list[Record] = []
        create = member_epoch == 0
        group = self._group_for(group_id, create, records)
        if len(group.members) >= self.conf("group.consumer.max.size") and (
            not member_id or member_id not in group.members
        ):
            raise ConsumerGroupError(
                ErrorCode.GROUP_MAX_SIZE_REACHED,
                "The consumer group has reached its maximum capacity of "
                f"{self.conf('group.consumer.max.size')} members.",
            )
        if not member_id:
            member_id = str(self.shard.uuid4()).replace("-", "")[:22]
        replaced: str | None = None
        if instance_id is None:
            member = group.members.get(member_id)
            if member is None:
                if not create:
                    raise ConsumerGroupError(
                        ErrorCode.UNKNOWN_MEMBER_ID,
                        f"Member {member_id} is not a member of group {group_id}.",
                    )
                member = ConsumerMember(member_id)
            self._check_epoch(member, member_epoch, owned)
        else:
            existing_id = group.static_members.get(instance_id)
            existing = group.members.get(existing_id) if existing_id is not None else None
            if create:
                if existing is None:
                    member = group.members.get(member_id) or ConsumerMember(member_id)
                else:
                    if existing.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH:
                        raise ConsumerGroupError(
                            ErrorCode.UNRELEASED_INSTANCE_ID,
                            f"Static member {member_id} with instance id {instance_id} cannot "
                            f"join the group because the instance id is owned by "
                            f"{existing.member_id} member.",
                        )
                    # the rejoining instance takes over the old member's assignment
                    member = replace(
                        existing, member_id=member_id, member_epoch=0, previous_member_epoch=0
                    )
                    if existing.member_id != member_id:
                        replaced = existing.member_id
                        self._remove_records(group, existing.member_id, records)
                        records.append(member_record(group_id, member_id, member))
                        records.append(current_assignment_record(group_id, member_id, member))
                        records.append(
                            target_member_record(
                                group_id, member_id, group.target.get(existing.member_id, {})
                            )
                        )
                    else:
                        records.append(current_assignment_record(group_id, member_id, member))
            else:
                if existing is None:
                    raise ConsumerGroupError(
                        ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown."
                    )
                if existing.member_id != member_id:
                    raise ConsumerGroupError(
                        ErrorCode.FENCED_INSTANCE_ID,
                        f"Static member {member_id} with instance id {instance_id} was fenced by "
                        f"member {existing.member_id}.",
                    )
                member = existing
                self._check_epoch(member, member_epoch, owned)

        # 1. the member's subscription; the group epoch moves when subscriptions or metadata do
        updated = replace(
            member,
            instance_id=instance_id if instance_id is not None else member.instance_id,
            rack_id=rack_id if rack_id is not None else member.rack_id,
            rebalance_timeout_ms=(
                rebalance_timeout_ms if rebalance_timeout_ms != -1 else member.rebalance_timeout_ms
            ),
            server_assignor=assignor if assignor is not None else member.server_assignor,
            subscribed_topic_names=(
                tuple(names) if names is not None else member.subscribed_topic_names
            ),
            subscribed_topic_regex=(
                (regex or None) if regex is not None else member.subscribed_topic_regex
            ),
            client_id=client_id,
            client_host=client_host,
        )
        bump = False
        is_new = member_id not in group.members
        if (is_new and replaced is None) or updated.subscription() != member.subscription():
            records.append(member_record(group_id, member_id, updated))
            bump = (is_new and replaced is None) or (
                updated.subscribed_topic_names != member.subscribed_topic_names
                or updated.subscribed_topic_regex != member.subscribed_topic_regex
            )
        others = [m for mid, m in group.members.items() if mid not in (member_id, replaced)]
        metadata = self._subscription_metadata([*others, updated])
        group_epoch = group.group_epoch
        if metadata != group.subscription_metadata:
            records.append(partition_metadata_record(group_id, metadata))
            bump = True
        if bump:
            group_epoch += 1
            records.append(epoch_record(group_id, group_epoch))
            log.info("[GroupId %s] bumped group epoch to %d", group_id, group_epoch)

        # 2. a new target assignment when the group epoch is ahead of it
        if group_epoch > group.assignment_epoch:
            target = self._new_target(
                group, group_epoch, updated, replaced, others, metadata, records
            )
            target_epoch = group_epoch
        else:
            target_epoch = group.assignment_epoch
            target = group.target.get(member_id) or group.target.get(replaced or "", {})

        # 3. reconcile the member toward the target
        def partition_epoch(topic_id: uuid.UUID, partition: int) -> int:
            owner = group.owners.get((topic_id, partition))
            if owner is None or owner[0] in (member_id, replaced):
                return -1
            return owner[1]

        before = updated
        if not updated.is_reconciled_to(target_epoch):
            updated = reconcile(updated, target_epoch, target, partition_epoch, owned)
            if updated.assignment_state() != before.assignment_state() or is_new:
                records.append(current_assignment_record(group_id, member_id, updated))
        elif is_new:
            records.append(current_assignment_record(group_id, member_id, updated))

        out.append(Write(group_id, records, now_ms, replay=True))
        sessions = self.session_deadlines.setdefault(group_id, {})
        sessions[member_id] = now_ms + self.conf("group.consumer.session.timeout.ms")
        rebalances = self.rebalance_deadlines.setdefault(group_id, {})
        if updated.state == UNREVOKED_PARTITIONS:
            if rebalances.get(member_id, (0, -1))[1] != updated.member_epoch:
                rebalances[member_id] = (
                    now_ms + max(updated.rebalance_timeout_ms, 0),
                    updated.member_epoch,
                )
        else:
            rebalances.pop(member_id, None)

        full = member_epoch == 0 or (
            rebalance_timeout_ms != -1 and names is not None and owned is not None
        )
        changed = updated.assigned != member.assigned or is_new
        return HeartbeatResult(
            member_id=member_id,
            member_epoch=updated.member_epoch,
            heartbeat_interval_ms=self.conf("group.consumer.heartbeat.interval.ms"),
            assignment=updated.assigned if full or changed else None,
        )

    def _new_target(
        self,
        group: ConsumerGroup,
        group_epoch: int,
        updated: ConsumerMember,
        replaced: str | None,
        others: list[ConsumerMember],
        metadata: Mapping[str, tuple[uuid.UUID, int]],
        records: list[Record],
    ) -> Assignment:
        """``TargetAssignmentBuilder.build``: records for the members whose target changed."""
        everyone = {m.member_id: m for m in others}
        everyone[updated.member_id] = updated
        assignor = ConsumerGroup(group.group_id, members=everyone).preferred_assignor(
            self.assignors[0]
        )
        topics = {topic_id: count for topic_id, count in metadata.values()}
        ids = {name: topic_id for name, (topic_id, _) in metadata.items()}
        spec = {}
        for member_id, member in everyone.items():
            subscribed = frozenset(ids[n] for n in self._member_topics(member) if n in ids)
            previous = group.target.get(member_id)
            if previous is None and replaced is not None and member_id == updated.member_id:
                previous = group.target.get(replaced, {})
            spec[member_id] = (subscribed, previous or {}, member.instance_id)
        result = ASSIGNORS[assignor](spec, topics)
        for member_id in sorted(result):
            old = group.target.get(member_id)
            if old is None and member_id == updated.member_id and replaced is not None:
                old = group.target.get(replaced)
            if old != result[member_id]:
                records.append(target_member_record(group.group_id, member_id, result[member_id]))
        records.append(target_epoch_record(group.group_id, group_epoch))
        log.info(
            "[GroupId %s] computed a new target assignment for epoch %d with '%s' assignor",
            group.group_id,
            group_epoch,
            assignor,
        )
        return result.get(updated.member_id, {})

    @staticmethod
    def _remove_records(group: ConsumerGroup, member_id: str, records: list[Record]) -> None:
        """``removeMember``: the member's current, target and subscription tombstones."""
        records.append(current_assignment_record(group.group_id, member_id, None))
        records.append(target_member_record(group.group_id, member_id, None))
        records.append(member_record(group.group_id, member_id, None))

    # --- leaving and fencing ------------------------------------------------------------------

    def _leave(
        self,
        out: list[Write],
        group_id: str,
        instance_id: str | None,
        member_id: str,
        member_epoch: int,
        now_ms: int,
    ) -> HeartbeatResult:
        """``consumerGroupLeave``: -1 leaves; -2 is a static member's temporary leave."""
        group = self._group_for(group_id, False, [])
        if instance_id is None:
            member = group.members.get(member_id)
            if member is None:
                raise ConsumerGroupError(
                    ErrorCode.UNKNOWN_MEMBER_ID,
                    f"Member {member_id} is not a member of group {group_id}.",
                )
            log.info("[GroupId %s] member %s left the consumer group", group_id, member_id)
            self.decide_fence(out, group, member_id, now_ms)
            return HeartbeatResult(member_id=member_id, member_epoch=member_epoch)
        existing_id = group.static_members.get(instance_id)
        if existing_id is None or existing_id not in group.members:
            raise ConsumerGroupError(
                ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown."
            )
        if existing_id != member_id:
            raise ConsumerGroupError(
                ErrorCode.FENCED_INSTANCE_ID,
                f"Static member {member_id} with instance id {instance_id} was fenced by member "
                f"{existing_id}.",
            )
        if member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            member = group.members[member_id]
            leaving = replace(
                member, member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH, pending_revocation={}
            )
            leave = [current_assignment_record(group_id, member_id, leaving)]
            out.append(Write(group_id, leave, now_ms, replay=True))
            return HeartbeatResult(
                member_id=member_id, member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH
            )
        self.decide_fence(out, group, member_id, now_ms)
        return HeartbeatResult(member_id=member_id, member_epoch=member_epoch)

    def decide_fence(
        self, out: list[Write], group: ConsumerGroup, member_id: str, now_ms: int
    ) -> None:
        """``consumerGroupFenceMember``: remove the member and bump the group epoch."""
        records: list[Record] = []
        self._remove_records(group, member_id, records)
        others = [m for mid, m in group.members.items() if mid != member_id]
        metadata = self._subscription_metadata(others)
        if metadata != group.subscription_metadata:
            records.append(partition_metadata_record(group.group_id, metadata))
        records.append(epoch_record(group.group_id, group.group_epoch + 1))
        group_id = group.group_id
        out.append(Write(group_id, records, now_ms, replay=True))
        self._forget_timers(group_id, member_id)
        self.shard.moved(group_id)

    def forget(self, group_id: str) -> None:
        """The group is gone (deleted, or now a classic group): its timers too."""
        self.session_deadlines.pop(group_id, None)
        self.rebalance_deadlines.pop(group_id, None)

    def _forget_timers(self, group_id: str, member_id: str) -> None:
        self.session_deadlines.get(group_id, {}).pop(member_id, None)
        self.rebalance_deadlines.get(group_id, {}).pop(member_id, None)

    def tick(self, now_ms: int) -> None:
        """Session timeouts and rebalance timeouts (a member that does not revoke in time)."""
        for group in self.all():
            self.run_timers(group, now_ms)

    def run_timers(self, group: ConsumerGroup, now_ms: int) -> None:
        """The group's due timers (``tick``, or a request that looks at the group)."""
        for member_id in list(group.members):
            member = group.members.get(member_id)
            if member is None:
                continue
            deadline = self.session_deadlines.get(group.group_id, {}).get(member_id)
            if deadline is not None and now_ms >= deadline:
                log.info(
                    "[GroupId %s] member %s fenced: session timeout", group.group_id, member_id
                )
                self.fence(group, member_id, now_ms)
                group = self.group(group.group_id) or group
                continue
            rebalance = self.rebalance_deadlines.get(group.group_id, {}).get(member_id)
            if (
                rebalance is not None
                and now_ms >= rebalance[0]
                and member.state == UNREVOKED_PARTITIONS
                and member.member_epoch == rebalance[1]
            ):
                log.info(
                    "[GroupId %s] member %s fenced: rebalance timeout",
                    group.group_id,
                    member_id,
                )
                self.fence(group, member_id, now_ms)
                group = self.group(group.group_id) or group

    # --- offsets, deletion --------------------------------------------------------------------

    def validate_offset_commit(
        self,
        group: ConsumerGroup,
        member_id: str,
        member_epoch: int,
        version: int,
        transactional: bool,
    ) -> None:
        """``ConsumerGroup.validateOffsetCommit`` (``OffsetMetadataManager`` turns a stale epoch
        of a transactional commit into ILLEGAL_GENERATION)."""
        if member_epoch < 0 and not group.members:
            return
        member = group.members.get(member_id)
        if member is None:
            raise ConsumerGroupError(ErrorCode.UNKNOWN_MEMBER_ID)
        if not transactional and version < 9:
            raise ConsumerGroupError(
                ErrorCode.UNSUPPORTED_VERSION,
                "OffsetCommit version 9 or above must be used by members using the modern "
                "group protocol",
            )
        if member_epoch != member.member_epoch:
            raise ConsumerGroupError(
                ErrorCode.ILLEGAL_GENERATION if transactional else ErrorCode.STALE_MEMBER_EPOCH
            )

    def validate_offset_fetch(
        self, group: ConsumerGroup, member_id: str | None, member_epoch: int
    ) -> ErrorCode:
        """``ConsumerGroup.validateOffsetFetch``."""
        if member_id is None and member_epoch < 0:
            return ErrorCode.NONE
        member = group.members.get(member_id or "")
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if member_epoch != member.member_epoch:
            return ErrorCode.STALE_MEMBER_EPOCH
        return ErrorCode.NONE

    # --- replay (``GroupMetadataManager.replay``) ---------------------------------------------

    def _loaded(self, group_id: str, now_ms: int) -> ConsumerGroup:
        """The consumer group a record is about; an empty classic group (offsets only) becomes
        one, keeping its offsets."""
        found = self.shard.loaded_group(group_id, now_ms)
        if isinstance(found, ConsumerGroup):
            return found
        group = self.shard.groups[group_id] = ConsumerGroup(
            group_id,
            created_ms=found.state_timestamp,
            offsets=found.offsets,
            pending_txn=found.pending_txn,
        )
        return group

    def replay(self, key_version: int, key: bytes, value: bytes | None, now_ms: int) -> None:
        body = memoryview(key)[2:]
        data = None if value is None else memoryview(value)[2:]
        if key_version == KEY_METADATA:
            k = METADATA_KEY.decode(body, KEY_METADATA)
            if data is None:
                gone = self.shard.groups.get(k.group_id)
                if isinstance(gone, ConsumerGroup):
                    self.forget(k.group_id)
                    if gone.offsets or gone.pending_txn:  # an empty classic group keeps them
                        self.shard.groups[k.group_id] = Group(
                            k.group_id,
                            state_timestamp=gone.created_ms,
                            offsets=gone.offsets,
                            pending_txn=gone.pending_txn,
                        )
                    else:
                        del self.shard.groups[k.group_id]
                return
            group = self._loaded(k.group_id, now_ms)
            group.group_epoch = METADATA_VALUE.decode(data, 0).epoch
            return
        group_id, member_id = _group_and_member(key_version, body)
        if data is None and not isinstance(self.shard.groups.get(group_id), ConsumerGroup):
            return
        group = self._loaded(group_id, now_ms)
        if key_version == KEY_PARTITION_METADATA:
            if data is None:
                group.subscription_metadata = {}
                return
            subscribed = PARTITION_METADATA_VALUE.decode(data, 0)
            group.subscription_metadata = {
                t.topic_name: (t.topic_id, t.num_partitions) for t in subscribed.topics
            }
        elif key_version == KEY_TARGET_METADATA:
            group.assignment_epoch = (
                0 if data is None else TARGET_METADATA_VALUE.decode(data, 0).assignment_epoch
            )
        elif key_version == KEY_TARGET_MEMBER:
            if data is None:
                group.target.pop(member_id, None)
            else:
                target = TARGET_MEMBER_VALUE.decode(data, 0)
                group.target[member_id] = assignment_of(target.topic_partitions)
        elif key_version == KEY_MEMBER:
            self._replay_member(group, member_id, data)
        elif key_version == KEY_CURRENT_ASSIGNMENT:
            self._replay_current(group, member_id, data, now_ms)

    def _replay_member(self, group: ConsumerGroup, member_id: str, data: Any) -> None:
        old = group.members.get(member_id)
        if data is None:
            if old is not None:
                group.remove_owned(old)
                del group.members[member_id]
                if (
                    old.instance_id is not None
                    and group.static_members.get(old.instance_id) == member_id
                ):
                    del group.static_members[old.instance_id]
            self._forget_timers(group.group_id, member_id)
            return
        v = MEMBER_VALUE.decode(data, 0)
        base = old or ConsumerMember(member_id)
        member = replace(
            base,
            instance_id=v.instance_id,
            rack_id=v.rack_id,
            client_id=v.client_id,
            client_host=v.client_host,
            subscribed_topic_names=tuple(v.subscribed_topic_names),
            subscribed_topic_regex=v.subscribed_topic_regex or None,
            rebalance_timeout_ms=v.rebalance_timeout_ms,
            server_assignor=v.server_assignor,
        )
        group.members[member_id] = member
        if member.instance_id is not None:
            group.static_members[member.instance_id] = member_id

    def _replay_current(self, group: ConsumerGroup, member_id: str, data: Any, now_ms: int) -> None:
        old = group.members.get(member_id)
        if old is None:
            if data is None:
                return
            old = group.members[member_id] = ConsumerMember(member_id)
        group.remove_owned(old)
        if data is None:
            new = replace(
                old,
                member_epoch=LEAVE_GROUP_MEMBER_EPOCH,
                previous_member_epoch=-1,
                state=MEMBER_STABLE,
                assigned={},
                pending_revocation={},
            )
        else:
            v = CURRENT_VALUE.decode(data, 0)
            new = replace(
                old,
                member_epoch=v.member_epoch,
                previous_member_epoch=v.previous_member_epoch,
                state=v.state,
                assigned=assignment_of(v.assigned_partitions),
                pending_revocation=assignment_of(v.partitions_pending_revocation),
            )
        group.add_owned(new)
        group.members[member_id] = new
        self.session_deadlines.setdefault(group.group_id, {}).setdefault(
            member_id, now_ms + self.conf("group.consumer.session.timeout.ms")
        )

    # --- describe -----------------------------------------------------------------------------

    def describe_assignment(self, assignment: Assignment) -> list[tuple[uuid.UUID, str, list[int]]]:
        return [
            (t, self._topic_name(t) or "", sorted(ps)) for t, ps in sorted(assignment.items()) if ps
        ]
