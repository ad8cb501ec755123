"""The classic group protocol: JoinGroup, SyncGroup, Heartbeat, LeaveGroup, generations, session
and rebalance timeouts (Kafka: GroupMetadataManager.java classicGroupJoin / classicGroupSync /
classicGroupHeartbeat / classicGroupLeave and classic/ClassicGroup.java)."""
from __future__ import annotations

import uuid as _uuid

from ...schema import events as ev
from ...schema.error_codes import CODE
from ..tables import classic_group as CG
from .metadata import GroupMetadataManager
from .model import (
    CLASSIC_NEW_MEMBER_JOIN_TIMEOUT_MS,
    GROUP_METADATA_VALUE_VERSION,
    NONE,
    PARKED,
    UNKNOWN_MEMBER_ID,
    ClassicGroup,
    ClassicMember,
    ConsumerGroup,
)


class ClassicProtocol:
    """GroupMetadataManager.classicGroup*: the classic (eager) rebalance protocol, over the group
    table of `metadata`."""
    metadata: GroupMetadataManager

    def __init__(self, cluster, metadata: GroupMetadataManager):
        self.cluster = cluster
        self.metadata = metadata
        self.groups = metadata.groups          # the group table (one dict, shared)
        self._current = None                   # the request being handled (see _answer)

    def _classic_fire(self, g: ClassicGroup, event: str) -> None:
        g.previous_state = g.state
        g.machine.fire(event)
        g.state_ts = self.cluster.now

    def join_group(self, req, b: dict):
        """classicGroupJoin; returns a JoinGroupResponse body or PARKED."""
        prev, self._current = self._current, req
        try:
            return self._join_group(req, b)
        finally:
            self._current = prev

    def _join_group(self, req, b: dict):
        gid, member_id = b["GroupId"], b["MemberId"]
        instance_id = b.get("GroupInstanceId")
        unknown = member_id == UNKNOWN_MEMBER_ID
        g = self.groups.get(gid)
        if g is not None and isinstance(g, ConsumerGroup):
            if g.members or not unknown:
                # classicGroupJoinToConsumerGroup (a classic member inside a consumer group) is not
                # modelled; such a JoinGroup is refused like a protocol mismatch.
                self.cluster.emit(ev.ClassicJoinRefused, group=gid)
                return {"ErrorCode": CODE["INCONSISTENT_GROUP_PROTOCOL"], "MemberId": member_id}
            self.metadata.remove_group(g, "replaced-by-classic")
            g = None
        if g is None and self.metadata.share_group(gid) is not None:
            return {"ErrorCode": CODE["INCONSISTENT_GROUP_PROTOCOL"], "MemberId": member_id}
        if g is None:
            if not unknown:
                return {"ErrorCode": CODE["UNKNOWN_MEMBER_ID"], "MemberId": member_id}
            g = self.metadata.new_classic_group(gid)
        protocols = [(p["Name"], bytes(p["Metadata"])) for p in b.get("Protocols", [])]
        rebalance_timeout = b.get("RebalanceTimeoutMs", -1)
        if req.version == 0 or rebalance_timeout == -1:
            rebalance_timeout = b["SessionTimeoutMs"]    # v0 has no rebalance timeout
        args = dict(session_timeout=b["SessionTimeoutMs"], rebalance_timeout=rebalance_timeout,
                    protocol_type=b["ProtocolType"], protocols=protocols,
                    client_id=(req.header.get("ClientId") or ""), reason=b.get("Reason"))
        if unknown:
            return self._join_new_member(req, g, instance_id, args)
        return self._join_existing_member(req, g, member_id, instance_id, args)

    def _join_new_member(self, req, g: ClassicGroup, instance_id, a):
        if g.state == CG.DEAD:
            return {"ErrorCode": CODE["COORDINATOR_NOT_AVAILABLE"], "MemberId": UNKNOWN_MEMBER_ID}
        if not g.supports(a["protocol_type"], a["protocols"]):
            return {"ErrorCode": CODE["INCONSISTENT_GROUP_PROTOCOL"], "MemberId": UNKNOWN_MEMBER_ID}
        u = _uuid.UUID(int=self.cluster.rng.getrandbits(128), version=4)
        new_id = f"{instance_id if instance_id is not None else a['client_id']}-{u}"
        if instance_id is not None:
            old_id = g.static_members.get(instance_id)
            if old_id is not None and old_id in g.members:
                # a static member restarted: the new member id replaces the old one (which is fenced)
                old = g.members.pop(old_id)
                self.metadata.cancel(old.timer)
                if old.join_req is not None:
                    self.metadata.complete(old.join_req, "JoinGroupResponse",
                                   {"ErrorCode": CODE["FENCED_INSTANCE_ID"], "MemberId": old_id})
                    old.join_req = None
                if g.leader == old_id:
                    g.leader = new_id
                g.pending_sync.discard(old_id)
                self.cluster.emit(ev.StaticMemberReplaced, group=g.group_id, instance_id=instance_id, member=new_id,
                                  old_member=old_id, group_type="classic")
            g.static_members[instance_id] = new_id
            return self._add_member_and_rebalance(req, g, new_id, instance_id, a)
        if req.version >= 4:     # JoinGroupRequest.requiresKnownMemberId
            self.metadata.cancel(g.pending_members.get(new_id))
            g.pending_members[new_id] = self.metadata.schedule(
                a["session_timeout"], lambda: self._expire_pending(g.group_id, new_id))
            self.cluster.emit(ev.MemberIdRequired, group=g.group_id, member=new_id)
            return {"ErrorCode": CODE["MEMBER_ID_REQUIRED"], "MemberId": new_id}
        return self._add_member_and_rebalance(req, g, new_id, None, a)

    def _join_existing_member(self, req, g: ClassicGroup, member_id, instance_id, a):
        if g.state == CG.DEAD:
            return {"ErrorCode": CODE["COORDINATOR_NOT_AVAILABLE"], "MemberId": member_id}
        if not g.supports(a["protocol_type"], a["protocols"]):
            return {"ErrorCode": CODE["INCONSISTENT_GROUP_PROTOCOL"], "MemberId": member_id}
        if member_id in g.pending_members and instance_id is None:
            self.metadata.cancel(g.pending_members.pop(member_id))
            return self._add_member_and_rebalance(req, g, member_id, None, a)
        err = g.validate_member(member_id, instance_id)
        if err:
            return {"ErrorCode": CODE[err], "MemberId": member_id}
        m = g.members[member_id]
        if g.state == CG.PREPARING:
            return self._update_member_and_rebalance(req, g, m, a, "member-rejoined")
        if g.state == CG.COMPLETING:
            if m.matches(a["protocols"]):
                return self._join_response(g, m, with_members=g.leader == member_id)
            return self._update_member_and_rebalance(req, g, m, a, "member-rejoined")
        if g.state == CG.STABLE:
            if g.leader == member_id or not m.matches(a["protocols"]):
                return self._update_member_and_rebalance(req, g, m, a, "member-rejoined")
            return self._join_response(g, m, with_members=False)
        return {"ErrorCode": CODE["UNKNOWN_MEMBER_ID"], "MemberId": member_id}

    def _join_response(self, g: ClassicGroup, m: ClassicMember, with_members: bool) -> dict:
        members = []
        if with_members:
            members = [{"MemberId": x.member_id, "GroupInstanceId": x.instance_id,
                        "Metadata": x.metadata(g.protocol_name)} for x in g.members.values()]
        return {"ErrorCode": NONE, "GenerationId": g.generation, "ProtocolType": g.protocol_type,
                "ProtocolName": g.protocol_name, "Leader": g.leader or "", "SkipAssignment": False,
                "MemberId": m.member_id, "Members": members}

    def _add_member_and_rebalance(self, req, g: ClassicGroup, member_id, instance_id, a):
        m = ClassicMember(member_id, instance_id, a["client_id"], "/127.0.0.1", a["rebalance_timeout"],
                          a["session_timeout"], a["protocol_type"], a["protocols"], join_req=req, is_new=True)
        if g.state == CG.PREPARING and g.previous_state == CG.EMPTY:
            g.new_member_added = True
        if not g.members:
            g.protocol_type = a["protocol_type"]
        g.members[member_id] = m
        if g.leader is None:
            g.leader = member_id
        self.reschedule_member(g, m, CLASSIC_NEW_MEMBER_JOIN_TIMEOUT_MS)
        self.cluster.emit(ev.MemberJoined, group=g.group_id, member=member_id, group_type="classic",
                          reason=a.get("reason"))
        self._maybe_prepare_rebalance_or_complete_join(g, "member-joined")
        return PARKED if m.join_req is req else self._take_answer(m)

    def _update_member_and_rebalance(self, req, g: ClassicGroup, m: ClassicMember, a, cause: str):
        m.protocols = a["protocols"]
        m.rebalance_timeout = a["rebalance_timeout"]
        m.session_timeout = a["session_timeout"]
        if m.join_req is not None and m.join_req is not req:
            self.cluster.emit(ev.JoinSuperseded, group=g.group_id, member=m.member_id)
        m.join_req = req
        self._maybe_prepare_rebalance_or_complete_join(g, cause)
        return PARKED if m.join_req is req else self._take_answer(m)

    def _take_answer(self, m: ClassicMember):
        """The join completed inside this request: its answer was stored instead of parked."""
        ans, m.answer = m.answer, None
        return ans if ans is not None else PARKED

    def _maybe_prepare_rebalance_or_complete_join(self, g: ClassicGroup, cause: str) -> None:
        if g.state in (CG.STABLE, CG.COMPLETING, CG.EMPTY):
            self._prepare_rebalance(g, cause)
        else:
            self._maybe_complete_join(g)

    def _prepare_rebalance(self, g: ClassicGroup, cause: str) -> None:
        if g.state == CG.COMPLETING:
            self._reset_and_propagate_assignment_error(g, "REBALANCE_IN_PROGRESS")
        self.metadata.cancel(g.sync_timer)
        g.sync_timer = None
        initial = g.state == CG.EMPTY
        self._classic_fire(g, cause)
        self.cluster.emit(ev.RebalancePrepared, group=g.group_id, generation=g.generation, cause=cause,
                          reason=CG.REBALANCE_CAUSES.get(cause, cause))
        if initial:
            delay = self.cluster.config.group_initial_rebalance_delay_ms
            remaining = max(g.rebalance_timeout() - delay, 0)
            g.new_member_added = False
            if delay <= 0:
                self._complete_join(g)
            else:
                self.metadata.cancel(g.join_timer)
                g.join_timer = self.metadata.schedule(delay, lambda: self._initial_delay_expired(g, delay, remaining))
            return
        if g.all_joined():
            self._complete_join(g)
        else:
            self.metadata.cancel(g.join_timer)
            g.join_timer = self.metadata.schedule(g.rebalance_timeout(), lambda: self._join_timeout(g))

    def _initial_delay_expired(self, g: ClassicGroup, delay: int, remaining: int) -> None:
        if self.groups.get(g.group_id) is not g or g.state != CG.PREPARING:
            return
        if g.new_member_added and remaining > 0:
            g.new_member_added = False
            step = min(delay, remaining)
            g.join_timer = self.metadata.schedule(step, lambda: self._initial_delay_expired(g, delay, remaining - step))
        else:
            self._complete_join(g)

    def _join_timeout(self, g: ClassicGroup) -> None:
        if self.groups.get(g.group_id) is g and g.state == CG.PREPARING:
            self._complete_join(g)

    def _maybe_complete_join(self, g: ClassicGroup) -> None:
        if g.state == CG.PREPARING and g.all_joined() and g.previous_state != CG.EMPTY:
            self._complete_join(g)

    def _complete_join(self, g: ClassicGroup) -> None:
        """completeClassicGroupJoin + ClassicGroup.initNextGeneration."""
        self.metadata.cancel(g.join_timer)
        g.join_timer = None
        for m in [m for m in g.members.values() if m.join_req is None and m.instance_id is None]:
            self._remove_member(g, m, notify=False)
            self.cluster.emit(ev.MemberRemoved, group=g.group_id, member=m.member_id, cause="rejoin-timeout")
        if g.members and (g.leader not in g.members or g.members[g.leader].join_req is None):
            joined = [m for m in g.members.values() if m.join_req is not None]
            if joined:
                g.leader = joined[0].member_id
            else:
                # no member rejoined: postpone until session timeouts remove them
                g.join_timer = self.metadata.schedule(g.rebalance_timeout(), lambda: self._join_timeout(g))
                return
        g.generation += 1
        g.pending_sync.clear()
        if not g.members:
            g.protocol_name = None
            g.leader = None
            self._classic_fire(g, "join-complete-empty")
            self._write_group_metadata(g, {})
            self.cluster.emit(ev.GenerationEmpty, group=g.group_id, generation=g.generation)
            return
        g.protocol_name = g.select_protocol()
        self._classic_fire(g, "join-complete")
        self.cluster.emit(ev.GenerationCompleted, group=g.group_id, generation=g.generation,
                          protocol=g.protocol_name, leader=g.leader, members=tuple(g.members))
        for m in list(g.members.values()):
            if m.join_req is None:
                continue       # a static member that did not rejoin keeps its place silently
            body = self._join_response(g, m, with_members=m.member_id == g.leader)
            req, m.join_req = m.join_req, None
            self.reschedule_member(g, m)
            m.is_new = False
            g.pending_sync.add(m.member_id)
            self._answer(req, m, "JoinGroupResponse", body)
        gen = g.generation
        g.sync_timer = self.metadata.schedule(g.rebalance_timeout(), lambda: self._expire_pending_sync(g, gen))

    def _answer(self, req, m, message: str, body: dict) -> None:
        """Complete a member's parked request; if it is the request being handled right now, hand the
        body back to the handler instead (the response then goes out the normal way)."""
        if req is self._current:
            m.answer = body
        else:
            self.metadata.complete(req, message, body)


    def _reset_and_propagate_assignment_error(self, g: ClassicGroup, error: str) -> None:
        for m in g.members.values():
            m.assignment = b""
            if m.sync_req is not None:
                req, m.sync_req = m.sync_req, None
                self._answer(req, m, "SyncGroupResponse", {"ErrorCode": CODE[error], "Assignment": b""})

    def _expire_pending_sync(self, g: ClassicGroup, generation: int) -> None:
        if self.groups.get(g.group_id) is not g or generation != g.generation:
            return
        if g.state in (CG.COMPLETING, CG.STABLE) and g.pending_sync:
            gone = sorted(g.pending_sync)
            for mid in gone:
                m = g.members.get(mid)
                if m is not None:
                    self._remove_member(g, m, notify=True)
            g.pending_sync.clear()
            self.cluster.emit(ev.SyncExpired, group=g.group_id, members=tuple(gone))
            self._prepare_rebalance(g, "sync-expired")

    def reschedule_member(self, g: ClassicGroup, m: ClassicMember, timeout: int | None = None) -> None:
        """rescheduleClassicGroupMemberHeartbeat: the member's session timer starts again."""
        self.metadata.cancel(m.timer)
        mid = m.member_id
        m.timer = self.metadata.schedule(m.session_timeout if timeout is None else timeout,
                                 lambda: self._expire_member(g, mid))

    def _expire_member(self, g: ClassicGroup, member_id: str) -> None:
        """expireClassicGroupMemberHeartbeat."""
        if self.groups.get(g.group_id) is not g or g.state == CG.DEAD:
            return
        m = g.members.get(member_id)
        if m is None:
            return
        satisfied = not m.is_new and (m.join_req is not None or m.sync_req is not None)
        if satisfied:
            return
        self.cluster.emit(ev.MemberRemoved, group=g.group_id, member=member_id, cause="session-timeout",
                          timeout_ms=m.session_timeout)
        self._remove_member(g, m, notify=True)
        if g.state in (CG.STABLE, CG.COMPLETING):
            self._maybe_prepare_rebalance_or_complete_join(g, "member-expired")
        elif g.state == CG.PREPARING and g.all_joined():
            self._complete_join(g)

    def _expire_pending(self, group_id: str, member_id: str) -> None:
        g = self.groups.get(group_id)
        if isinstance(g, ClassicGroup) and member_id in g.pending_members:
            del g.pending_members[member_id]
            self.cluster.emit(ev.MemberRemoved, group=group_id, member=member_id, cause="pending-timeout")
            if g.state == CG.PREPARING and g.all_joined():
                self._complete_join(g)

    def _remove_member(self, g: ClassicGroup, m: ClassicMember, notify: bool) -> None:
        self.metadata.cancel(m.timer)
        if notify and m.join_req is not None:
            self._answer(m.join_req, m, "JoinGroupResponse",
                         {"ErrorCode": CODE["UNKNOWN_MEMBER_ID"], "MemberId": UNKNOWN_MEMBER_ID})
        if notify and m.sync_req is not None:
            self._answer(m.sync_req, m, "SyncGroupResponse", {"ErrorCode": CODE["UNKNOWN_MEMBER_ID"]})
        m.join_req = m.sync_req = None
        g.members.pop(m.member_id, None)
        g.pending_sync.discard(m.member_id)
        if m.instance_id is not None and g.static_members.get(m.instance_id) == m.member_id:
            del g.static_members[m.instance_id]
        if g.leader == m.member_id:
            g.leader = next(iter(g.members), None)

    def sync_group(self, req, b: dict):
        """classicGroupSync; returns a SyncGroupResponse body or PARKED."""
        prev, self._current = self._current, req
        try:
            return self._sync_group(req, b)
        finally:
            self._current = prev

    def _sync_group(self, req, b: dict):
        gid, member_id = b["GroupId"], b["MemberId"]
        g = self.groups.get(gid)
        if g is None or not isinstance(g, ClassicGroup) or g.is_empty():
            return {"ErrorCode": CODE["UNKNOWN_MEMBER_ID"]}
        if g.state == CG.DEAD:
            return {"ErrorCode": CODE["COORDINATOR_NOT_AVAILABLE"]}
        err = g.validate_member(member_id, b.get("GroupInstanceId"))
        if err:
            return {"ErrorCode": CODE[err]}
        if b["GenerationId"] != g.generation:
            return {"ErrorCode": CODE["ILLEGAL_GENERATION"]}

        def inconsistent(x, y):
            return x is not None and y is not None and x != y
        if inconsistent(b.get("ProtocolType"), g.protocol_type) or inconsistent(b.get("ProtocolName"),
                                                                               g.protocol_name):
            return {"ErrorCode": CODE["INCONSISTENT_GROUP_PROTOCOL"]}
        if g.state == CG.PREPARING:
            return {"ErrorCode": CODE["REBALANCE_IN_PROGRESS"]}
        m = g.members[member_id]
        if g.state == CG.COMPLETING:
            m.sync_req = req
            g.pending_sync.discard(member_id)
            if member_id == g.leader:
                self._leader_sync(g, b)
            return self._take_answer(m) if m.sync_req is None else PARKED
        # Stable: the current assignment
        g.pending_sync.discard(member_id)
        return self._sync_ok(g, m)

    def _leader_sync(self, g: ClassicGroup, b: dict) -> None:
        """The leader's SyncGroup: store its assignment (an empty one for members it left out), move
        the group to Stable and answer every parked follower."""
        gid = g.group_id
        assignment = {a["MemberId"]: bytes(a["Assignment"]) for a in b.get("Assignments", [])}
        missing = [x for x in g.members if x not in assignment]
        for x in missing:
            assignment[x] = b""
        if missing:
            self.cluster.emit(ev.AssignmentMissing, group=gid, members=tuple(missing))
        self._write_group_metadata(g, assignment)
        for x, data in assignment.items():
            if x in g.members:
                g.members[x].assignment = data
        self._classic_fire(g, "leader-synced")
        for x in g.members.values():
            if x.sync_req is not None:
                r, x.sync_req = x.sync_req, None
                self._answer(r, x, "SyncGroupResponse", self._sync_ok(g, x))

    @staticmethod
    def _sync_ok(g: ClassicGroup, m: ClassicMember) -> dict:
        return {"ErrorCode": NONE, "ProtocolType": g.protocol_type, "ProtocolName": g.protocol_name,
                "Assignment": m.assignment}

    def _write_group_metadata(self, g: ClassicGroup, assignment: dict) -> None:
        members = [{"memberId": m.member_id, "groupInstanceId": m.instance_id, "clientId": m.client_id,
                    "clientHost": m.client_host, "rebalanceTimeout": m.rebalance_timeout,
                    "sessionTimeout": m.session_timeout, "subscription": m.metadata(g.protocol_name),
                    "assignment": assignment.get(m.member_id, b"")} for m in g.members.values()]
        self.metadata.append(g.group_id, "GroupMetadata", {"group": g.group_id},
                     {"protocolType": g.protocol_type or "", "generation": g.generation,
                      "protocol": g.protocol_name, "leader": g.leader, "currentStateTimestamp": self.cluster.now,
                      "members": members}, value_version=GROUP_METADATA_VALUE_VERSION)

    def heartbeat(self, req, b: dict) -> dict:
        """classicGroupHeartbeat."""
        g = self.groups.get(b["GroupId"])
        if g is None or not isinstance(g, ClassicGroup):
            return {"ErrorCode": CODE["UNKNOWN_MEMBER_ID"]}
        if g.state == CG.DEAD:
            return {"ErrorCode": CODE["COORDINATOR_NOT_AVAILABLE"]}
        err = g.validate_member(b["MemberId"], b.get("GroupInstanceId"))
        if err:
            return {"ErrorCode": CODE[err]}
        if b["GenerationId"] != g.generation:
            return {"ErrorCode": CODE["ILLEGAL_GENERATION"]}
        m = g.members[b["MemberId"]]
        if g.state == CG.EMPTY:
            return {"ErrorCode": CODE["UNKNOWN_MEMBER_ID"]}
        self.reschedule_member(g, m)
        if g.state == CG.PREPARING:
            return {"ErrorCode": CODE["REBALANCE_IN_PROGRESS"]}
        return {"ErrorCode": NONE}

    def leave_group(self, req, members: list[dict], gid: str) -> dict:
        """classicGroupLeave: {"ErrorCode", "Members": [...]} (the handler folds v0-2)."""
        g = self.groups.get(gid)
        if g is None or not isinstance(g, ClassicGroup):
            if isinstance(g, ConsumerGroup):
                return self._leave_consumer_group_classic(g, members)
            return {"ErrorCode": CODE["UNKNOWN_MEMBER_ID"], "Members": []}
        if g.state == CG.DEAD:
            return {"ErrorCode": CODE["COORDINATOR_NOT_AVAILABLE"], "Members": []}
        out = []
        for mi in members:
            mid, iid = mi["MemberId"], mi.get("GroupInstanceId")
            resp = {"MemberId": mid, "GroupInstanceId": iid, "ErrorCode": NONE}
            if mid == UNKNOWN_MEMBER_ID:
                if iid is not None and iid in g.static_members and g.static_members[iid] in g.members:
                    self._remove_member(g, g.members[g.static_members[iid]], notify=True)
                else:
                    resp["ErrorCode"] = CODE["UNKNOWN_MEMBER_ID"]
            elif mid in g.pending_members:
                self.metadata.cancel(g.pending_members.pop(mid))
            else:
                err = g.validate_member(mid, iid)
                if err:
                    resp["ErrorCode"] = CODE[err]
                else:
                    self._remove_member(g, g.members[mid], notify=True)
            out.append(resp)
        left = [r["MemberId"] or r["GroupInstanceId"] for r in out if r["ErrorCode"] == NONE]
        if left:
            self.cluster.emit(ev.MembersLeft, group=gid, members=tuple(left))
            if g.state in (CG.STABLE, CG.COMPLETING):
                self._maybe_prepare_rebalance_or_complete_join(g, "member-left")
            elif g.state == CG.PREPARING:
                self._maybe_complete_join(g)
        return {"ErrorCode": NONE, "Members": out}

    def _leave_consumer_group_classic(self, g: ConsumerGroup, members: list[dict]) -> dict:
        # classic-protocol members never exist in this model's consumer groups
        return {"ErrorCode": NONE, "Members": [{"MemberId": m["MemberId"], "GroupInstanceId": m.get("GroupInstanceId"),
                                                "ErrorCode": CODE["UNKNOWN_MEMBER_ID"]} for m in members]}
