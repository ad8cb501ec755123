"""The consumer group protocol (KIP-848): ConsumerGroupHeartbeat, member epochs, server-side
assignment, reconciliation, fencing and ConsumerGroupDescribe (Kafka: GroupMetadataManager.java
consumerGroupHeartbeat, modern/consumer/CurrentAssignmentBuilder.java, modern/TargetAssignmentBuilder.java)."""
from __future__ import annotations

import re

from ...schema import events as ev
from ...schema.error_codes import CODE
from ...uuids import random_uuid, to_kafka_str
from ..tables import classic_group as CG
from ..tables import consumer_group as KG
from ..tables import consumer_member as KM
from .metadata import GroupMetadataManager
from .model import (
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    NONE,
    ConsumerGroup,
    ConsumerMember,
    GroupError,
    copy_assignment,
    topic_partitions,
)


class ConsumerProtocol:
    """GroupMetadataManager.consumerGroup*: the KIP-848 consumer protocol, over the group table of
    `metadata`."""
    metadata: GroupMetadataManager

    def __init__(self, cluster, metadata: GroupMetadataManager):
        self.cluster = cluster
        self.metadata = metadata
        self.groups = metadata.groups          # the group table (one dict, shared)

    def _update_group_state(self, g: ConsumerGroup) -> None:
        """ConsumerGroup.maybeUpdateGroupState, run after each replayed record."""
        if g.state == KG.DEAD:
            return
        if not g.members:
            event = "no-members"
        elif g.group_epoch > g.assignment_epoch:
            event = "epoch-ahead-of-assignment"
        elif any(not m.reconciled_to(g.assignment_epoch) for m in g.members.values()):
            event = "member-not-reconciled"
        else:
            event = "all-members-reconciled"
        if KG.CONDITIONS[event][0] != g.state:
            g.machine.fire(event)

    def _subscription_metadata(self, g: ConsumerGroup, members=None) -> dict:
        names = set()
        for m in (members if members is not None else g.members.values()):
            names.update(self._subscribed_names(m))
        out = {}
        for n in sorted(names):
            t = self.cluster.topics.get(n)
            if t is not None:
                out[n] = (t.topic_id, len(t.partitions))
        return out

    def _subscribed_names(self, m: ConsumerMember) -> set[str]:
        names = set(m.subscribed)
        if m.regex:
            try:
                pat = re.compile(m.regex)
            except re.error:
                pat = None
            if pat is not None:
                names.update(n for n, t in self.cluster.topics.by_name.items()
                             if not t.internal and pat.fullmatch(n))
        return names

    def consumer_group_heartbeat(self, req, b: dict) -> dict:
        """GroupMetadataManager.consumerGroupHeartbeat: a leave (epoch -1/-2) or a heartbeat."""
        epoch = b["MemberEpoch"]
        if epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
            return self._consumer_leave(b)
        return self._consumer_heartbeat(req, b)

    def _get_or_create_consumer_group(self, gid: str, create: bool):
        g = self.groups.get(gid)
        if g is None:
            if self.metadata.share_group(gid) is not None:
                raise GroupError("GROUP_ID_NOT_FOUND", f"Group {gid} is not a consumer group.")
            if not create:
                raise GroupError("GROUP_ID_NOT_FOUND", f"Consumer group {gid} not found.")
            return None                  # created once the request validated
        if isinstance(g, ConsumerGroup):
            return g
        if create and g.state == CG.EMPTY:
            return "replace-classic"
        raise GroupError("GROUP_ID_NOT_FOUND", f"Group {gid} is not a consumer group.")

    # consumerGroupHeartbeat, in Kafka's stages (GroupMetadataManager.consumerGroupHeartbeat):
    # validate the request, find the group and member (nothing changes before this passes), create
    # what must exist, update the member and maybe bump the group epoch, compute a new target
    # assignment, reconcile the member, schedule its session timeout, build the response.
    def _consumer_heartbeat(self, req, b: dict) -> dict:
        gid, member_id, epoch = b["GroupId"], b["MemberId"], b["MemberEpoch"]
        instance_id = b.get("InstanceId")
        owned = b.get("TopicPartitions")
        owned_map = None if owned is None else {tp["TopicId"]: set(tp["Partitions"]) for tp in owned}
        create = epoch == 0
        found = self._get_or_create_consumer_group(gid, create)
        g = found if isinstance(found, ConsumerGroup) else None
        if not member_id:
            member_id = to_kafka_str(random_uuid(self.cluster.rng))    # v0: the coordinator picks it
        regex = b.get("SubscribedTopicRegex")
        self._check_regex(regex)
        if instance_id is None:
            member, replace_static = self._dynamic_member(g, gid, member_id, epoch, owned, create), None
        else:
            member, replace_static = self._static_member(g, member_id, instance_id, epoch, owned, create)
        # ---- the request is valid: create what must exist ----
        if found == "replace-classic":
            self.metadata.remove_group(self.groups[gid], "replaced-by-consumer")
        if g is None:
            g = ConsumerGroup(gid, self.metadata.machine(KG.TABLE, gid), self.cluster.now)
            self.groups[gid] = g
            self.cluster.emit(ev.GroupCreated, group=gid, group_type="consumer",
                              partition=self.metadata.partition_for(gid))
        old_meta = None if member is None else member.metadata_tuple()
        old_subs = None if member is None else (tuple(member.subscribed), member.regex)
        old_assigned = None if member is None else copy_assignment(member.assigned)
        if replace_static is not None:
            member = self._replace_static_member(g, replace_static, member_id)
        if member is None:
            member = ConsumerMember(member_id, self.metadata.machine(KM.TABLE, f"{gid}/{member_id}"))
            g.members[member_id] = member
            self.cluster.emit(ev.MemberJoined, group=gid, member=member_id, group_type="consumer")
        # ---- 1. update the member; bump the group epoch if subscriptions changed ----
        self._update_member(member, req, b, instance_id, regex)
        self._maybe_bump_group_epoch(g, member, old_meta, old_subs)
        # ---- 2. a new target assignment for the new group epoch ----
        if g.group_epoch > g.assignment_epoch:
            self._update_target_assignment(g)
        # ---- 3. reconcile this member towards its target ----
        self._reconcile(g, member, owned_map)
        self._schedule_session_timeout(g, member)
        full = epoch == 0 or (b.get("RebalanceTimeoutMs", -1) != -1
                              and (b.get("SubscribedTopicNames") is not None or regex is not None)
                              and owned is not None)
        body = {"ErrorCode": NONE, "ErrorMessage": None, "MemberId": member.member_id,
                "MemberEpoch": member.epoch,
                "HeartbeatIntervalMs": self.cluster.config.group_consumer_heartbeat_interval_ms,
                "Assignment": None}
        if full or old_assigned != copy_assignment(member.assigned):
            body["Assignment"] = {"TopicPartitions": topic_partitions(member.assigned)}
        return body

    @staticmethod
    def _check_regex(regex: str | None) -> None:
        """throwIfConsumerGroupHeartbeatRequestIsInvalid: SubscribedTopicRegex must compile."""
        if regex is not None and regex != "":
            try:
                re.compile(regex)
            except re.error as e:
                raise GroupError("INVALID_REGULAR_EXPRESSION", f"SubscribedTopicRegex `{regex}` is not a valid "
                                 f"regular expression: {e}.") from None

    def _dynamic_member(self, g, gid: str, member_id: str, epoch: int, owned, create: bool):
        """getOrMaybeSubscribeDynamicConsumerGroupMember: the member (None if it joins) after the epoch check."""
        member = g.members.get(member_id) if g is not None else None
        if member is None and not create:
            raise GroupError("UNKNOWN_MEMBER_ID", f"Member {member_id} is not a member of group {gid}.")
        if member is not None:
            self._check_member_epoch(member, epoch, owned)
        return member

    def _static_member(self, g, member_id: str, instance_id: str, epoch: int, owned, create: bool):
        """getOrMaybeSubscribeStaticConsumerGroupMember: (member or None, static member to replace or None)."""
        static = g.static_member(instance_id) if g is not None else None
        if create:
            if static is not None and static.member_id != member_id:
                if static.epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH:
                    raise GroupError("UNRELEASED_INSTANCE_ID",
                                     f"Static member {member_id} with instance id {instance_id} cannot join the "
                                     f"group because the instance id is owned by {static.member_id} member.")
                return None, static
            member = static if static is not None else (g.members.get(member_id) if g is not None else None)
        else:
            if static is None:
                raise GroupError("UNKNOWN_MEMBER_ID", f"Instance id {instance_id} is unknown.")
            if static.member_id != member_id:
                raise GroupError("FENCED_INSTANCE_ID", f"Static member {member_id} with instance id "
                                 f"{instance_id} was fenced by member {static.member_id}.")
            member = static
        if member is not None:
            self._check_member_epoch(member, epoch, owned)
        return member, None

    @staticmethod
    def _update_member(member: ConsumerMember, req, b: dict, instance_id, regex) -> None:
        """ConsumerGroupMember.Builder.maybeUpdate*: the fields the request sets."""
        if instance_id is not None:
            member.instance_id = instance_id
        if b.get("RackId") is not None:
            member.rack_id = b["RackId"]
        if b.get("RebalanceTimeoutMs", -1) != -1:
            member.rebalance_timeout = b["RebalanceTimeoutMs"]
        if b.get("ServerAssignor") is not None:
            member.server_assignor = b["ServerAssignor"]
        if b.get("SubscribedTopicNames") is not None:
            member.subscribed = sorted(b["SubscribedTopicNames"])
        if regex is not None:
            member.regex = regex or None
        member.client_id = req.header.get("ClientId") or ""
        member.client_host = "/127.0.0.1"

    def _maybe_bump_group_epoch(self, g: ConsumerGroup, member: ConsumerMember, old_meta, old_subs) -> None:
        """Write the member's metadata if it changed; bump the group epoch if subscriptions or the
        subscribed topics' metadata changed (or the group is new)."""
        gid = g.group_id
        bump = g.group_epoch == 0
        if old_meta is None or member.metadata_tuple() != old_meta:
            self._write_member_metadata(g, member)
            self._update_group_state(g)
            if old_subs is None or (tuple(member.subscribed), member.regex) != old_subs:
                bump = True
        new_meta = self._subscription_metadata(g)
        if new_meta != g.subscription_metadata:
            bump = True
        if bump:
            g.subscription_metadata = new_meta
            g.group_epoch += 1
            self.metadata.append(gid, "ConsumerGroupMetadata", {"GroupId": gid},
                         {"Epoch": g.group_epoch, "CreationTimeMs": g.created_ms})
            self._update_group_state(g)
            self.cluster.emit(ev.GroupEpochBumped, group=gid, epoch=g.group_epoch)

    @staticmethod
    def _check_member_epoch(member: ConsumerMember, received: int, owned) -> None:
        """throwIfConsumerGroupMemberEpochIsInvalid (group-coordinator/.../GroupMetadataManager.java)."""
        if received > member.epoch:
            raise GroupError("FENCED_MEMBER_EPOCH", f"The consumer group member has a greater member epoch "
                             f"({received}) than the one known by the group coordinator ({member.epoch}). "
                             "The member must abandon all its partitions and rejoin.")
        if received < member.epoch:
            subset = owned is not None and all(
                tp["TopicId"] in member.assigned and set(tp["Partitions"]) <= member.assigned[tp["TopicId"]]
                for tp in owned)
            if received != member.previous_epoch or not subset:
                raise GroupError("FENCED_MEMBER_EPOCH", f"The consumer group member has a smaller member epoch "
                                 f"({received}) than the one known by the group coordinator ({member.epoch}). "
                                 "The member must abandon all its partitions and rejoin.")

    def _replace_static_member(self, g: ConsumerGroup, old: ConsumerMember, new_id: str) -> ConsumerMember:
        gid = g.group_id
        self.metadata.cancel(old.session_timer)
        self.metadata.cancel(old.rebalance_timer)
        self._member_tombstones(gid, old.member_id)
        del g.members[old.member_id]
        new = ConsumerMember(new_id, self.metadata.machine(KM.TABLE, f"{gid}/{new_id}", state=old.state),
                             instance_id=old.instance_id, rack_id=old.rack_id, client_id=old.client_id,
                             client_host=old.client_host, rebalance_timeout=old.rebalance_timeout,
                             subscribed=list(old.subscribed), regex=old.regex, server_assignor=old.server_assignor,
                             epoch=0, previous_epoch=0, assigned=copy_assignment(old.assigned),
                             pending_revocation=copy_assignment(old.pending_revocation))
        g.members[new_id] = new
        g.target[new_id] = g.target.pop(old.member_id, {})
        self._write_member_metadata(g, new)
        self.metadata.append(gid, "ConsumerGroupTargetAssignmentMember", {"GroupId": gid, "MemberId": new_id},
                     {"TopicPartitions": topic_partitions(g.target[new_id])})
        self._write_current_assignment(g, new)
        self._update_group_state(g)
        self.cluster.emit(ev.StaticMemberReplaced, group=gid, instance_id=old.instance_id, member=new_id,
                          old_member=old.member_id, group_type="consumer")
        return new

    def _write_member_metadata(self, g: ConsumerGroup, m: ConsumerMember) -> None:
        self.metadata.append(g.group_id, "ConsumerGroupMemberMetadata", {"GroupId": g.group_id, "MemberId": m.member_id},
                     {"InstanceId": m.instance_id, "RackId": m.rack_id, "ClientId": m.client_id,
                      "ClientHost": m.client_host, "SubscribedTopicNames": list(m.subscribed),
                      "SubscribedTopicRegex": m.regex, "RebalanceTimeoutMs": m.rebalance_timeout,
                      "ServerAssignor": m.server_assignor, "ClassicMemberMetadata": None})

    def _write_current_assignment(self, g: ConsumerGroup, m: ConsumerMember) -> None:
        self.metadata.append(g.group_id, "ConsumerGroupCurrentMemberAssignment",
                     {"GroupId": g.group_id, "MemberId": m.member_id},
                     {"MemberEpoch": m.epoch, "PreviousMemberEpoch": m.previous_epoch,
                      "State": KM.STATE_IDS[m.state], "AssignedPartitions": topic_partitions(m.assigned),
                      "PartitionsPendingRevocation": topic_partitions(m.pending_revocation)})

    def _member_tombstones(self, gid: str, member_id: str) -> None:
        for rec in ("ConsumerGroupCurrentMemberAssignment", "ConsumerGroupTargetAssignmentMember",
                    "ConsumerGroupMemberMetadata"):
            self.metadata.append(gid, rec, {"GroupId": gid, "MemberId": member_id}, None)

    # ---- assignment ----------------------------------------------------------------------------
    def _assign(self, g: ConsumerGroup) -> dict[str, dict]:
        """The server-side assignor: "uniform" (sticky, balanced per topic, the default) or "range"
        (contiguous ranges per topic over members sorted by id). A deterministic simplification of
        Kafka's UniformAssignor/RangeAssignor (group-coordinator/.../assignor/)."""
        assignor = g.preferred_assignor()
        members = sorted(g.members)
        out: dict[str, dict] = {m: {} for m in members}
        for name, (tid, n) in sorted(g.subscription_metadata.items()):
            subs = [m for m in members if name in self._subscribed_names(g.members[m])]
            if not subs:
                continue
            if assignor == "range":
                _assign_range(out, tid, n, subs)
            else:
                _assign_uniform(out, tid, n, subs, g.target)
        return out

    def _update_target_assignment(self, g: ConsumerGroup) -> None:
        gid = g.group_id
        new = self._assign(g)
        for mid in sorted(new):
            if copy_assignment(new[mid]) != copy_assignment(g.target.get(mid, {})):
                self.metadata.append(gid, "ConsumerGroupTargetAssignmentMember", {"GroupId": gid, "MemberId": mid},
                             {"TopicPartitions": topic_partitions(new[mid])})
        g.target = {m: copy_assignment(a) for m, a in new.items()}
        g.assignment_epoch = g.group_epoch
        self.metadata.append(gid, "ConsumerGroupTargetAssignmentMetadata", {"GroupId": gid},
                     {"AssignmentEpoch": g.assignment_epoch, "AssignmentTimestamp": self.cluster.now})
        self.cluster.emit(ev.TargetAssignmentComputed, group=gid, epoch=g.assignment_epoch,
                          assignor=g.preferred_assignor(),
                          target=tuple((m, _as_pairs(a)) for m, a in g.target.items()))
        self._update_group_state(g)

    def _reconcile(self, g: ConsumerGroup, m: ConsumerMember, owned: dict | None) -> None:
        """maybeReconcile + CurrentAssignmentBuilder.build."""
        target_epoch = g.assignment_epoch
        if m.reconciled_to(target_epoch):
            return
        before = (m.state, m.epoch, m.previous_epoch, copy_assignment(m.assigned), copy_assignment(m.pending_revocation))
        if m.state == KM.STABLE:
            result = self._next_assignment(g, m, m.epoch, m.assigned)
        elif m.state == KM.UNREVOKED:
            still = owned is None or any(p in owned.get(t, ()) for t, ps in m.pending_revocation.items() for p in ps)
            result = None if still else self._next_assignment(g, m, m.epoch + 1, m.assigned)
        elif m.state == KM.UNRELEASED:
            result = self._next_assignment(g, m, m.epoch, m.assigned)
        else:     # Unknown
            if owned is None or any(owned.values()):
                raise GroupError("FENCED_MEMBER_EPOCH", "The consumer group member is in a unknown state. "
                                 "The member must abandon all its partitions and rejoin.")
            result = self._next_assignment(g, m, target_epoch, m.assigned)
        if result is None:
            return
        event, epoch, assigned, revoking = result
        if (KM.OUTCOMES[event][0], epoch, copy_assignment(assigned), copy_assignment(revoking)) == (before[0], before[1], before[3],
                                                                                 before[4]):
            return
        if epoch != m.epoch:
            m.previous_epoch, m.epoch = m.epoch, epoch
        m.assigned, m.pending_revocation = copy_assignment(assigned), copy_assignment(revoking)
        m.machine.fire(event)
        self._write_current_assignment(g, m)
        self._update_group_state(g)
        self.cluster.emit(ev.MemberReconciled, group=g.group_id, member=m.member_id, state=m.state, epoch=m.epoch,
                          assigned=_as_pairs(m.assigned), revoking=_as_pairs(m.pending_revocation))
        self.metadata.cancel(m.rebalance_timer)
        m.rebalance_timer = None
        if m.state == KM.UNREVOKED and m.rebalance_timeout > 0:
            mid, ep = m.member_id, m.epoch
            m.rebalance_timer = self.metadata.schedule(m.rebalance_timeout, lambda: self._revocation_timeout(g, mid, ep))

    def _next_assignment(self, g: ConsumerGroup, m: ConsumerMember, epoch: int, current: dict):
        """CurrentAssignmentBuilder.computeNextAssignment -> (event, epoch, assigned, revoking)."""
        target = g.target.get(m.member_id, {})
        assigned, revoking, pending = {}, {}, {}
        unreleased = False
        for tid in set(target) | set(current):
            tgt = target.get(tid, set())
            cur = current.get(tid, set())
            keep = cur & tgt
            rev = cur - keep
            add = tgt - keep
            blocked = {p for p in add if g.owner_epoch(tid, p, exclude=m.member_id) != -1
                       and p not in m.pending_revocation.get(tid, set())}
            if blocked:
                unreleased = True
            add -= blocked
            if keep:
                assigned[tid] = keep
            if rev:
                revoking[tid] = rev
            if add:
                pending[tid] = add
        if revoking:
            return "must-revoke", epoch, assigned, revoking
        if pending:
            for tid, ps in pending.items():
                assigned.setdefault(tid, set()).update(ps)
            return ("awaiting-unreleased" if unreleased else "reconciled"), g.assignment_epoch, assigned, {}
        if unreleased:
            return "awaiting-unreleased", g.assignment_epoch, assigned, {}
        return "reconciled", g.assignment_epoch, assigned, {}

    def _revocation_timeout(self, g: ConsumerGroup, member_id: str, epoch: int) -> None:
        m = g.members.get(member_id) if self.groups.get(g.group_id) is g else None
        if m is not None and m.state == KM.UNREVOKED and m.epoch == epoch:
            self.cluster.emit(ev.MemberFenced, group=g.group_id, member=member_id, cause="revocation-timeout",
                              timeout_ms=m.rebalance_timeout)
            self._fence_member(g, m)

    def _schedule_session_timeout(self, g: ConsumerGroup, m: ConsumerMember) -> None:
        self.metadata.cancel(m.session_timer)
        mid = m.member_id
        m.session_timer = self.metadata.schedule(self.cluster.config.group_consumer_session_timeout_ms,
                                         lambda: self._session_expired(g, mid))

    def _session_expired(self, g: ConsumerGroup, member_id: str) -> None:
        m = g.members.get(member_id) if self.groups.get(g.group_id) is g else None
        if m is not None:
            self.cluster.emit(ev.MemberFenced, group=g.group_id, member=member_id, cause="session-timeout",
                              timeout_ms=self.cluster.config.group_consumer_session_timeout_ms)
            self._fence_member(g, m)

    def _fence_member(self, g: ConsumerGroup, m: ConsumerMember) -> None:
        """consumerGroupFenceMember: tombstones, then a group epoch bump."""
        gid = g.group_id
        self.metadata.cancel(m.session_timer)
        self.metadata.cancel(m.rebalance_timer)
        self._member_tombstones(gid, m.member_id)
        del g.members[m.member_id]
        g.target.pop(m.member_id, None)
        self._update_group_state(g)
        g.subscription_metadata = self._subscription_metadata(g)
        g.group_epoch += 1
        self.metadata.append(gid, "ConsumerGroupMetadata", {"GroupId": gid},
                     {"Epoch": g.group_epoch, "CreationTimeMs": g.created_ms})
        self._update_group_state(g)

    def _consumer_leave(self, b: dict) -> dict:
        gid, member_id, epoch, instance_id = b["GroupId"], b["MemberId"], b["MemberEpoch"], b.get("InstanceId")
        g = self.groups.get(gid)
        if not isinstance(g, ConsumerGroup):
            if g is None and self.metadata.share_group(gid) is None:
                raise GroupError("GROUP_ID_NOT_FOUND", f"Group {gid} not found.")
            raise GroupError("GROUP_ID_NOT_FOUND", f"Group {gid} is not a consumer group.")
        body = {"ErrorCode": NONE, "MemberId": member_id, "MemberEpoch": epoch,
                "HeartbeatIntervalMs": 0, "Assignment": None}
        if instance_id is None:
            m = g.members.get(member_id)
            if m is None:
                raise GroupError("UNKNOWN_MEMBER_ID", f"Member {member_id} is not a member of group {gid}.")
            self.cluster.emit(ev.ConsumerMemberLeft, group=gid, member=member_id)
            self._fence_member(g, m)
            return body
        m = g.static_member(instance_id)
        if m is None:
            raise GroupError("UNKNOWN_MEMBER_ID", f"Instance id {instance_id} is unknown.")
        if m.member_id != member_id:
            raise GroupError("FENCED_INSTANCE_ID", f"Static member {member_id} with instance id {instance_id} "
                             f"was fenced by member {m.member_id}.")
        if epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            m.epoch = LEAVE_GROUP_STATIC_MEMBER_EPOCH
            m.pending_revocation = {}
            self._write_current_assignment(g, m)
            self._update_group_state(g)
            self.cluster.emit(ev.ConsumerMemberLeft, group=gid, member=member_id, instance_id=instance_id,
                              temporary=True)
            return body
        self.cluster.emit(ev.ConsumerMemberLeft, group=gid, member=member_id, instance_id=instance_id)
        self._fence_member(g, m)
        return body

    def consumer_group_describe(self, group_ids: list[str]) -> list[dict]:
        """GroupMetadataManager.consumerGroupDescribe: one entry per group id."""
        out = []
        for gid in group_ids:
            g = self.groups.get(gid)
            if not isinstance(g, ConsumerGroup):
                msg = f"Group {gid} not found." if g is None and self.metadata.share_group(gid) is None \
                    else f"Group {gid} is not a consumer group."
                out.append({"GroupId": gid, "ErrorCode": CODE["GROUP_ID_NOT_FOUND"], "ErrorMessage": msg})
                continue
            out.append({"GroupId": gid, "ErrorCode": NONE, "ErrorMessage": None, "GroupState": g.state,
                        "GroupEpoch": g.group_epoch, "AssignmentEpoch": g.assignment_epoch,
                        "AssignorName": g.preferred_assignor(),
                        "Members": [self._describe_member(g, m) for m in g.members.values()]})
        return out

    def _describe_member(self, g: ConsumerGroup, m: ConsumerMember) -> dict:
        def tps(assign):
            out = []
            for tid, ps in sorted(assign.items(), key=lambda kv: str(kv[0])):
                t = self.cluster.topics.live(tid)
                out.append({"TopicId": tid, "TopicName": t.name if t else "", "Partitions": sorted(ps)})
            return {"TopicPartitions": out}
        return {"MemberId": m.member_id, "InstanceId": m.instance_id, "RackId": m.rack_id,
                "MemberEpoch": m.epoch, "ClientId": m.client_id, "ClientHost": m.client_host,
                "SubscribedTopicNames": list(m.subscribed), "SubscribedTopicRegex": m.regex,
                "Assignment": tps(m.assigned), "TargetAssignment": tps(g.target.get(m.member_id, {})),
                "MemberType": 1}


def _as_pairs(assign: dict) -> tuple[tuple[str, tuple[int, ...]], ...]:
    """An assignment {topic id: partitions} as ((topic id text, sorted partitions), ...), for an event."""
    return tuple((str(t), tuple(sorted(p))) for t, p in assign.items())


def _assign_range(out: dict, tid, n: int, subs: list[str]) -> None:
    """RangeAssignor for one topic: contiguous ranges over the members sorted by id."""
    per, extra = divmod(n, len(subs))
    start = 0
    for i, m in enumerate(subs):
        cnt = per + (1 if i < extra else 0)
        if cnt:
            out[m][tid] = set(range(start, start + cnt))
        start += cnt


def _assign_uniform(out: dict, tid, n: int, subs: list[str], target: dict) -> None:
    """UniformAssignor for one topic: balanced, keeping each member's previous target where it can."""
    quota = {m: n // len(subs) + (1 if i < n % len(subs) else 0) for i, m in enumerate(subs)}
    taken: dict[int, str] = {}
    for m in subs:                               # stickiness: keep the previous target
        keep = sorted(target.get(m, {}).get(tid, set()))
        for p in keep:
            if p < n and p not in taken and sum(1 for v in taken.values() if v == m) < quota[m]:
                taken[p] = m
    for p in range(n):
        if p in taken:
            continue
        m = min(subs, key=lambda x: (sum(1 for v in taken.values() if v == x) - quota[x], subs.index(x)))
        taken[p] = m
    for p, m in taken.items():
        out[m].setdefault(tid, set()).add(p)
