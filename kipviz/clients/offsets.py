"""The consumer's positions and committed offsets, as Kafka's consumer/internals/
OffsetsRequestManager.java (positions: the committed offset, else ListOffsets per
auto.offset.reset) and CommitRequestManager.java / ConsumerCoordinator.java (OffsetFetch,
OffsetCommit).

* positions: OffsetFetch (RequireStable when read_committed, like Java; v9+ with the member id and
  epoch for a KIP-848 member; v10 by topic id). A partition answered UNSTABLE_OFFSET_COMMIT (a
  transaction holds offsets for it) is retried at the next poll; no committed offset -> ListOffsets
  per auto_offset_reset ("earliest" by default here; Kafka's default is "latest").
* commit: OffsetCommit at the negotiated version (v10 by topic id) with the generation (classic) or
  member epoch (KIP-848, which needs v9+). STALE_MEMBER_EPOCH is retried once after a heartbeat;
  UNKNOWN_MEMBER_ID / ILLEGAL_GENERATION / FENCED_MEMBER_EPOCH raise CommitFailedError,
  REBALANCE_IN_PROGRESS RebalanceInProgressError."""
from __future__ import annotations

from ..schema import events as ev
from ..schema.error_codes import NAME
from .base import E, Retry
from .consumer_errors import (
    COORDINATOR_ERRORS,
    METADATA_ERRORS,
    CommitFailedError,
    ConsumerError,
    RebalanceInProgressError,
)

RESET = {"earliest": -2, "latest": -1}
UNSTABLE = "UNSTABLE_OFFSET_COMMIT"


class Offsets:
    """Finds the positions of newly assigned partitions, reads and commits the group's offsets."""

    def __init__(self, consumer):
        self.consumer = consumer

    # ---- OffsetFetch ---------------------------------------------------------------------------------
    def _member_fields(self) -> tuple[str | None, int]:
        """(member id, epoch) OffsetFetch v9+ carries: only a KIP-848 member sends them."""
        c = self.consumer
        if c.protocol == "consumer" and not c._manual and c.member_epoch > 0:
            return c.member_id, c.member_epoch
        return None, -1

    def fetch_once(self, tps: list[tuple[str, int]], require_stable: bool) -> dict:
        """{tp: offset | None | "UNSTABLE_OFFSET_COMMIT"}; raises Retry / ConsumerError."""
        c = self.consumer
        api = "OffsetFetch"
        v = c.version(api)
        by_topic: dict[str, list[int]] = {}
        for t, p in tps:
            by_topic.setdefault(t, []).append(p)
        ids = c.topic_ids(by_topic) if v >= 10 else {}
        topics = [({"TopicId": ids[t]} if v >= 10 else {"Name": t}) | {"PartitionIndexes": ps}
                  for t, ps in by_topic.items()]
        member, epoch = self._member_fields()
        if v >= 8:
            body = {"Groups": [{"GroupId": c.group_id, "MemberId": member, "MemberEpoch": epoch,
                                "Topics": topics}], "RequireStable": require_stable}
        else:
            body = {"GroupId": c.group_id, "Topics": topics, "RequireStable": require_stable}
        resp = c.coordinator_call(api, v, body)
        g = resp["Groups"][0] if v >= 8 else resp
        code = g.get("ErrorCode", 0)
        if code == E["GROUP_ID_NOT_FOUND"]:
            return dict.fromkeys(tps)
        if code:
            self._group_error(code, epoch)
        names = {tid: t for t, tid in ids.items()}
        out = {}
        for t in g["Topics"]:
            name = names.get(t.get("TopicId")) if v >= 10 else t.get("Name")
            for p in t["Partitions"]:
                tp = (name, p["PartitionIndex"])
                pc = p["ErrorCode"]
                if pc == E[UNSTABLE]:
                    out[tp] = UNSTABLE
                elif pc in COORDINATOR_ERRORS:
                    raise Retry(pc, refresh="coordinator")
                elif pc in METADATA_ERRORS:
                    raise Retry(pc, refresh="metadata")
                elif pc:
                    raise c.fail(ConsumerError(pc, api=api, partitions=[tp]))
                else:
                    out[tp] = None if p["CommittedOffset"] < 0 else p["CommittedOffset"]
        return out

    def _group_error(self, code: int, epoch: int) -> None:
        """OffsetFetch's group-level error (not GROUP_ID_NOT_FOUND): always raises, Retry or ConsumerError."""
        c = self.consumer
        if code in COORDINATOR_ERRORS:
            raise Retry(code, refresh="coordinator")
        if code == E["STALE_MEMBER_EPOCH"]:
            c.did(ev.OffsetFetchStaleEpoch, member_epoch=epoch)
            c.retrying("ConsumerGroupHeartbeat", c.kip848_membership().heartbeat)
            raise Retry(code)
        if code == E["UNKNOWN_MEMBER_ID"]:
            c.kip848_membership().fenced(code, "OffsetFetch")
            raise c.fail(ConsumerError(code, "the member left the group; it rejoins at the next poll",
                                         api="OffsetFetch"))
        raise c.fail(ConsumerError(code, api="OffsetFetch"))

    def committed(self, partitions=None, *, require_stable: bool | None = None) -> dict:
        """The group's committed offsets (Consumer.committed)."""
        c = self.consumer
        if c.group_id is None:
            raise ConsumerError("INVALID_GROUP_ID", "no group id")
        tps = sorted({tuple(tp) for tp in (c._assigned if partitions is None else partitions)})
        if not tps:
            return {}
        stable = c.isolation == 1 if require_stable is None else require_stable
        out = c.retrying("OffsetFetch", lambda: self.fetch_once(tps, stable))
        unstable = [tp for tp, o in out.items() if o == UNSTABLE]
        if unstable:
            raise c.fail(ConsumerError(UNSTABLE, "a transaction holds offsets for "
                                         f"{unstable}", api="OffsetFetch", partitions=unstable))
        return out

    # ---- positions -----------------------------------------------------------------------------------
    def init_positions(self) -> None:
        """A position for every assigned partition without one: committed offset, else auto.offset.reset."""
        c = self.consumer
        need = sorted(tp for tp in c._assigned if tp not in c._positions)
        if not need:
            return
        committed = {}
        if c.group_id is not None:
            try:
                committed = c.retrying("OffsetFetch", lambda: self.fetch_once(need, c.isolation == 1))
            except ConsumerError as e:
                if e.error != "UNKNOWN_MEMBER_ID":
                    raise
                return                  # fenced: the partitions are gone, the next poll rejoins
        reset = []
        for tp in need:
            if tp not in c._assigned:     # lost while fetching (fenced, rebalanced)
                continue
            got = committed.get(tp)
            if got == UNSTABLE:
                c.did(ev.OffsetUnstable, topic=tp[0], partition=tp[1],
                       reason="UNSTABLE_OFFSET_COMMIT: a transaction holds offsets; retried at the next poll")
            elif got is None:
                reset.append(tp)
            else:
                c._positions[tp] = got
                c.did(ev.PositionSet, topic=tp[0], partition=tp[1], offset=got, source="committed")
        if reset:
            self.reset_positions(reset)

    def reset_positions(self, tps: list[tuple[str, int]]) -> None:
        """ListOffsets per auto.offset.reset for `tps` (OffsetsRequestManager.java resetPositionsIfNeeded)."""
        c = self.consumer
        if c.auto_offset_reset == "none":
            raise c.fail(ConsumerError("OFFSET_OUT_OF_RANGE", f"no committed offset for {tps} and "
                                         "auto.offset.reset=none", partitions=tps))
        ts = RESET[c.auto_offset_reset]
        api = "ListOffsets"

        def attempt():
            v = c.version(api)
            by_leader: dict[int, dict[str, list[int]]] = {}
            for t, p in tps:
                info = c.topic_info(t)
                if info is None or p not in info["partitions"]:
                    raise Retry(E["UNKNOWN_TOPIC_OR_PARTITION"], refresh="metadata")
                by_leader.setdefault(info["partitions"][p], {}).setdefault(t, []).append(p)
            found = {}
            for leader, topics in sorted(by_leader.items()):
                resp = c.call(api, v, {"ReplicaId": -1, "IsolationLevel": c.isolation, "TimeoutMs": 30000,
                                        "Topics": [{"Name": t, "Partitions": [
                                            {"PartitionIndex": p, "CurrentLeaderEpoch": -1, "Timestamp": ts,
                                             "MaxNumOffsets": 1} for p in ps]} for t, ps in topics.items()]},
                               leader)
                for t in resp["Topics"]:
                    for p in t["Partitions"]:
                        if p["ErrorCode"] in METADATA_ERRORS:
                            raise Retry(p["ErrorCode"], refresh="metadata")
                        if p["ErrorCode"]:
                            raise c.fail(ConsumerError(p["ErrorCode"], api=api,
                                                         partitions=[(t["Name"], p["PartitionIndex"])]))
                        off = p["Offset"] if v >= 1 else (p.get("OldStyleOffsets") or [0])[0]
                        found[(t["Name"], p["PartitionIndex"])] = off
            return found
        for tp, off in sorted(c.retrying(api, attempt).items()):
            if tp in c._assigned:
                c._positions[tp] = off
                c.did(ev.PositionSet, topic=tp[0], partition=tp[1], offset=off,
                       source=f"auto.offset.reset={c.auto_offset_reset}")

    # ---- OffsetCommit --------------------------------------------------------------------------------
    def commit(self, offsets: dict | None = None) -> dict[tuple[str, int], int]:
        """OffsetCommit, synchronous (Consumer.commit)."""
        c = self.consumer
        if offsets is None:
            offsets = {tp: pos for tp, pos in c._positions.items() if tp in c._assigned}
        pending = {tuple(tp): (o if isinstance(o, tuple) else (int(o), "")) for tp, o in offsets.items()}
        if not pending:
            return {}
        done = dict(pending)
        stale = [0]
        c.retrying("OffsetCommit", lambda: self._commit_once(pending, stale))
        c.did(ev.Committed, offsets=tuple((t, p, o) for (t, p), (o, _) in sorted(done.items())),
               generation=c.group_metadata()["generation_id"])
        return {tp: o for tp, (o, _) in done.items()}

    def _commit_once(self, pending: dict, stale: list) -> None:
        c = self.consumer
        api = "OffsetCommit"
        member_protocol = c.protocol == "consumer" and not c._manual
        v = c.version(api, floor=9 if member_protocol and c.member_epoch > 0 else None)
        by_topic: dict[str, list[dict]] = {}
        for (t, p), (off, meta) in sorted(pending.items()):
            by_topic.setdefault(t, []).append({"PartitionIndex": p, "CommittedOffset": off,
                                               "CommittedLeaderEpoch": -1, "CommittedMetadata": meta,
                                               "CommitTimestamp": -1})
        ids = c.topic_ids(by_topic) if v >= 10 else {}
        gm = c.group_metadata()
        topics = [({"TopicId": ids[t]} if v >= 10 else {"Name": t}) | {"Partitions": ps} for t, ps in by_topic.items()]
        resp = c.coordinator_call(api, v, {
            "GroupId": c.group_id, "GenerationIdOrMemberEpoch": gm["generation_id"], "MemberId": gm["member_id"],
            "GroupInstanceId": c.group_instance_id, "RetentionTimeMs": -1, "Topics": topics})
        names = {tid: t for t, tid in ids.items()}
        retry = None
        for t in resp["Topics"]:
            name = names.get(t.get("TopicId")) if v >= 10 else t.get("Name")
            for p in t["Partitions"]:
                tp, code = (name, p["PartitionIndex"]), p["ErrorCode"]
                if code == 0:
                    pending.pop(tp, None)
                    continue
                c.did(ev.CommitFailed, topic=tp[0], partition=tp[1], error=NAME.get(code, str(code)), version=v)
                retry = self._commit_error(tp, code, pending, stale)
        if pending:
            raise retry or Retry(E["UNKNOWN_SERVER_ERROR"])

    def _commit_error(self, tp: tuple, code: int, pending: dict, stale: list) -> Retry:
        """One partition's OffsetCommit error: the Retry to raise once every partition is read, or
        (the group refused the commit, a rebalance, anything else) raised now."""
        c = self.consumer
        api = "OffsetCommit"
        if code in COORDINATOR_ERRORS:
            return Retry(code, refresh="coordinator")
        if code in METADATA_ERRORS:
            return Retry(code, refresh="metadata")
        if code == E["STALE_MEMBER_EPOCH"] and stale[0] == 0:
            stale[0] += 1      # refresh the epoch with a heartbeat, then commit again
            c.retrying("ConsumerGroupHeartbeat", c.kip848_membership().heartbeat)
            return Retry(code)
        if code in (E["UNKNOWN_MEMBER_ID"], E["ILLEGAL_GENERATION"], E["FENCED_MEMBER_EPOCH"],
                    E["STALE_MEMBER_EPOCH"], E["FENCED_INSTANCE_ID"]):
            raise c.fail(CommitFailedError(code, "the group refused the commit", api=api,
                                             partitions=sorted(pending)))
        if code == E["REBALANCE_IN_PROGRESS"]:
            c.membership.request_rejoin("REBALANCE_IN_PROGRESS")
            raise c.fail(RebalanceInProgressError(code, api=api, partitions=sorted(pending)))
        raise c.fail(ConsumerError(code, api=api, partitions=[tp]))
