"""Classic group membership (protocol="classic"), as Kafka's ConsumerCoordinator.java over
AbstractCoordinator.java (consumer/internals/).

JoinGroup (MEMBER_ID_REQUIRED, then again with the id), the leader runs the range assignor on the
members' ConsumerProtocolSubscription v0 and sends the assignments with SyncGroup; Heartbeat every
interval; REBALANCE_IN_PROGRESS means rejoin (eager: every partition is revoked first);
ILLEGAL_GENERATION / UNKNOWN_MEMBER_ID reset the member. A JoinGroup or SyncGroup the coordinator
holds (cluster.handle returns b"") is collected at a later poll from
`cluster.groups.take_responses(client_id)` by its correlation id."""
from __future__ import annotations

import struct

from .. import codec
from ..records.consumer_protocol import (
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
    range_assign,
)
from ..schema import events as ev
from ..schema.error_codes import NAME
from .base import E, Retry
from .consumer_errors import COORDINATOR_ERRORS, ConsumerError
from .membership import Membership

CLASSIC_PROTOCOL = "range"


class ClassicMembership(Membership):
    """A classic-protocol member: JoinGroup / SyncGroup rounds, Heartbeat, LeaveGroup."""

    PROTOCOL = "classic"

    def __init__(self, consumer):
        super().__init__(consumer)
        self.pending: dict[int, tuple[str, int, int]] = {}   # correlation id -> (api, version, sent at)

    @property
    def held_requests(self) -> list[str]:
        """APIs of the JoinGroup / SyncGroup the coordinator is holding."""
        return [api for api, _, _ in self.pending.values()]

    def subscription_changed(self) -> None:
        """A member in the group rejoins with the new subscription."""
        if self.consumer.state in ("STABLE", "SYNCING"):
            self.request_rejoin("subscription changed")

    def closed(self) -> None:
        """Forget the held requests."""
        self.pending.clear()

    def maintain(self) -> None:
        """Collect held answers, then join (JoinGroup, SyncGroup) or heartbeat as due."""
        c = self.consumer
        self._drain()
        for _ in range(6):
            if self.pending:
                return
            if c.state == "JOINING":
                c.retrying("JoinGroup", self._join)
                continue
            if c.state == "STABLE" and self.heartbeat_due():
                c.retrying("Heartbeat", self._heartbeat)
                continue
            return

    def _send_held(self, api: str, version: int, body: dict) -> dict | None:
        """A request the coordinator may hold: its answer now, or None (collected later)."""
        c = self.consumer
        cid, frame = c.encode_frame(api, version, body)
        out = c.send_frame(frame, c.group_coordinator())
        if out:
            return codec.decode_response(out, api, version)["body"]
        self.pending[cid] = (api, version, c.cluster.now)
        c.did(ev.Waiting, api=api, correlation_id=cid, reason="the coordinator holds the request")
        return None

    def _drain(self) -> None:
        c = self.consumer
        for frame in c.cluster.groups.take_responses(c.client_id):
            cid, = struct.unpack_from(">i", frame, 4)
            if cid not in self.pending:
                continue
            api, version, _ = self.pending.pop(cid)
            body = codec.decode_response(frame, api, version)["body"]
            c.did(ev.Answered, api=api, correlation_id=cid)
            (self._on_join if api == "JoinGroup" else self._on_sync)(body)
        limit = c.rebalance_timeout_ms + c.session_timeout_ms
        for cid, (api, _, sent) in list(self.pending.items()):
            if c.cluster.now - sent > limit:
                del self.pending[cid]
                c.did(ev.GaveUp, api=api, correlation_id=cid, reason="no answer within the rebalance timeout")
                self.request_rejoin(f"{api} never answered")

    def _join(self) -> None:
        c = self.consumer
        v = c.version("JoinGroup")
        if c._assigned:     # eager protocol: everything is revoked before rejoining
            c.set_assignment(set(), "rejoin (eager)")
        body = {"GroupId": c.group_id, "SessionTimeoutMs": c.session_timeout_ms,
                "RebalanceTimeoutMs": c.rebalance_timeout_ms, "MemberId": c.member_id,
                "GroupInstanceId": c.group_instance_id, "ProtocolType": "consumer",
                "Protocols": [{"Name": CLASSIC_PROTOCOL, "Metadata": encode_subscription(c._subscription)}],
                "Reason": self.rejoin_reason}
        c.did(ev.JoinSent, member_id=c.member_id, generation=c.generation, reason=self.rejoin_reason)
        c._subscription_changed = False
        resp = self._send_held("JoinGroup", v, body)
        if resp is not None:
            self._on_join(resp)

    def _on_join(self, resp: dict) -> None:
        c = self.consumer
        code = resp["ErrorCode"]
        if code == E["MEMBER_ID_REQUIRED"]:
            c.member_id = resp["MemberId"]
            c.did(ev.MemberIdGiven, member_id=c.member_id, reason="MEMBER_ID_REQUIRED")
            self.request_rejoin("MEMBER_ID_REQUIRED")
            return
        if code in COORDINATOR_ERRORS:
            c._coordinator = None
            self.request_rejoin(NAME[code])
            return
        if code in (E["UNKNOWN_MEMBER_ID"], E["ILLEGAL_GENERATION"]):
            self._reset(NAME[code])
            return
        if code == E["REBALANCE_IN_PROGRESS"]:
            self.request_rejoin(NAME[code])
            return
        if code:
            c.set_state("UNSUBSCRIBED", NAME.get(code, str(code)))
            raise c.fail(ConsumerError(code, api="JoinGroup"))
        c.member_id = resp["MemberId"]
        if resp["GenerationId"] != c.generation:
            c.did(ev.GenerationBumped, previous=c.generation, generation=resp["GenerationId"],
                   leader=resp["Leader"], member_id=c.member_id)
        c.generation = resp["GenerationId"]
        self.rejoin_reason = None
        assignments = self._lead(resp) if resp["Leader"] == c.member_id else []
        c.set_state("SYNCING", "joined")
        v = c.version("SyncGroup")
        body = {"GroupId": c.group_id, "GenerationId": c.generation, "MemberId": c.member_id,
                "GroupInstanceId": c.group_instance_id, "ProtocolType": "consumer",
                "ProtocolName": resp.get("ProtocolName") or CLASSIC_PROTOCOL, "Assignments": assignments}
        out = self._send_held("SyncGroup", v, body)
        if out is not None:
            self._on_sync(out)

    def _lead(self, resp: dict) -> list[dict]:
        """The leader's assignments for SyncGroup (ConsumerCoordinator.java onLeaderElected)."""
        c = self.consumer
        members = {m["MemberId"]: decode_subscription(bytes(m["Metadata"])) for m in resp["Members"]}
        sizes = {}
        for t in sorted({t for ts in members.values() for t in ts}):
            info = c.topic_info(t, refresh=True)
            sizes[t] = len(info["partitions"]) if info else 0
        plan = range_assign(members, sizes)
        c.did(ev.AssignedAsLeader, generation=c.generation, assignor=CLASSIC_PROTOCOL,
               plan=tuple((m, tuple((t, tuple(ps)) for t, ps in a.items())) for m, a in plan.items()))
        return [{"MemberId": m, "Assignment": encode_assignment(a)} for m, a in plan.items()]

    def _on_sync(self, resp: dict) -> None:
        c = self.consumer
        code = resp["ErrorCode"]
        if code == 0:
            c.set_assignment(decode_assignment(bytes(resp["Assignment"])), f"SyncGroup generation "
                              f"{c.generation}")
            c._last_heartbeat = c.cluster.now
            c.set_state("STABLE", "synced")
            return
        if code in (E["UNKNOWN_MEMBER_ID"], E["ILLEGAL_GENERATION"]):
            self._reset(NAME[code])
        elif code in COORDINATOR_ERRORS:
            c._coordinator = None
            self.request_rejoin(NAME[code])
        elif code == E["REBALANCE_IN_PROGRESS"]:
            self.request_rejoin(NAME[code])
        else:
            c.set_state("UNSUBSCRIBED", NAME.get(code, str(code)))
            raise c.fail(ConsumerError(code, api="SyncGroup"))

    def _reset(self, why: str) -> None:
        c = self.consumer
        c.did(ev.GenerationReset, member_id=c.member_id, generation=c.generation, reason=why)
        if why == "UNKNOWN_MEMBER_ID":
            c.member_id = ""
        c.generation = -1
        c.lose_partitions(why)
        self.request_rejoin(why)

    def _heartbeat(self) -> None:
        c = self.consumer
        api = "Heartbeat"
        v = c.version(api)
        resp = c.coordinator_call(api, v, {"GroupId": c.group_id, "GenerationId": c.generation,
                                            "MemberId": c.member_id, "GroupInstanceId": c.group_instance_id})
        c._last_heartbeat = c.cluster.now
        code = resp["ErrorCode"]
        if code == 0:
            return
        if code in COORDINATOR_ERRORS:
            raise Retry(code, refresh="coordinator")
        c.did(ev.HeartbeatFailed, error=NAME.get(code, str(code)), generation=c.generation)
        if code == E["REBALANCE_IN_PROGRESS"]:
            self.request_rejoin("REBALANCE_IN_PROGRESS")
        elif code in (E["UNKNOWN_MEMBER_ID"], E["ILLEGAL_GENERATION"]):
            self._reset(NAME[code])
        else:
            raise c.fail(ConsumerError(code, api=api))

    def leave(self) -> None:
        """LeaveGroup, if the member has a generation."""
        c = self.consumer
        if c.generation < 0:
            return
        api = "LeaveGroup"
        v = c.version(api)
        if v >= 3:
            body = {"GroupId": c.group_id, "Members": [{"MemberId": c.member_id,
                                                        "GroupInstanceId": c.group_instance_id,
                                                        "Reason": "the consumer is being closed"}]}
        else:
            body = {"GroupId": c.group_id, "MemberId": c.member_id}
        resp = c.coordinator_call(api, v, body)
        c.did(ev.Left, member_id=c.member_id, member_epoch=None, generation=c.generation,
               error=NAME.get(resp["ErrorCode"], str(resp["ErrorCode"])))
        c.generation = -1
