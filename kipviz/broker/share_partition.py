"""One share partition (KIP-932): the in-flight records of one (share group, topic partition).

Source: core/src/main/java/kafka/server/share/SharePartition.java. Every record-state
change fires a row of kipviz/broker/tables/share_record.py and is recorded as a StateChanged event
keyed "group/topic-partition@offset".

* acquire(member, max_records): AVAILABLE cached records first, then new log records (put in the
  cache and acquired at once with deliveryCount 1); re-acquiring adds 1 to deliveryCount. The
  in-flight window is group.share.partition.max.record.locks (default 200) from the SPSO. Each
  acquisition starts a lock timer (group.share.record.lock.duration.ms, default 30000) on the virtual
  clock; on expiry still-ACQUIRED records go back to AVAILABLE (ARCHIVED at the delivery limit or
  below the SPSO) and their member is cleared.
* Delivery limit (group.share.delivery.count.limit, default 5): a move to AVAILABLE with
  deliveryCount >= limit becomes ARCHIVED (InFlightState.tryUpdateState); the count is not
  increased for ARCHIVED.
* NEWEST behaviour modelled (KAFKA-17541 [2/2], PR #20837, Nov 2025, docs/facts.md#changes-after-the-kits-source-snapshot): when
  re-acquiring a run of AVAILABLE records whose deliveryCount is already >= 3 only half the run
  (rounded up) is handed out, and on the last attempt (deliveryCount == limit - 1) only one offset.
  OLDER behaviour (the 2024-10 snapshot, Kafka 4.0/4.1): the whole run is re-acquired whatever its
  count. Not modelled: KAFKA-17541 [1/2]'s DeliveryCountOps.DECREASE (a delivery is given back when
  records are released "without real processing"); no source the kit could check says when the broker
  decides that, so every acquisition counts here.
* acknowledge(member, batches): all or nothing -- every batch is validated against a staged copy
  first; an error leaves every record untouched (Kafka's rollbackOrProcessStateUpdates).
* SPSO: moves past the longest run of ACKNOWLEDGED/ARCHIVED records at the start of the cache;
  those records leave the cache.
* TX_PENDING (KIP-1289, proposed) is only reachable through the proposed rows, which the table
  enables at share.version >= 2; the released RPCs never stage it. plan_txn / stage / resolve_txn
  are driven by kipviz/broker/share_txn.py (TxnShareAcknowledge and the WriteTxnMarkers hook). A
  TX_PENDING record keeps its member and its acquisition lock; it is never handed out again; a
  plain ShareAcknowledge of it fails with INVALID_RECORD_STATE (it is not ACQUIRED)."""
from __future__ import annotations

from dataclasses import dataclass

from ..schema.events import AcquisitionLockExpired, SharePartitionReloaded, StateChanged
from ..schema.topics import SHARE_GROUP_STATE
from .tables import share_record as sr

EMPTY_MEMBER = "AAAAAAAAAAAAAAAAAAAAAA"   # Uuid.ZERO_UUID.toString()
# KIP-1289 (proposed): the only ack types allowed inside a transaction, and the row each one
# fires when the COMMIT marker arrives (ACCEPT -> ACKNOWLEDGED, REJECT -> ARCHIVED)
TXN_ACK_EVENTS = {1: "txn-commit-accept", 3: "txn-commit-reject"}


# (state, event, KIP-1289 on) -> the share-record table's row (SharePartition._moves)
_ROWS: dict[tuple, object] = {}
_OWNED = (sr.ACQUIRED, sr.TX_PENDING)       # the states in which a record keeps its member


class AckError(Exception):
    def __init__(self, code_name: str, message: str):
        super().__init__(message)
        self.code_name = code_name


@dataclass(slots=True)
class InFlight:
    state: str = sr.AVAILABLE
    delivery_count: int = 0
    member: str = EMPTY_MEMBER
    lock: int = 0          # token of the acquisition whose timer owns the record
    # KIP-1289 (proposed): who staged the record into TX_PENDING, and with which ack event
    staged_pid: int = -1
    staged_epoch: int = -1
    staged_event: str = ""         # "txn-commit-accept" / "txn-commit-reject"
    staged_at: int = -1
    staged_state_leader_epoch: int = -1   # leader epoch of __share_group_state-N at staging (case 12)
    key: str | None = None         # SharePartition.key(offset), made at the record's first move


class SharePartition:
    def __init__(self, cluster, group_id: str, topic_name: str, topic_id, partition: int):
        self.cluster = cluster
        self.group_id, self.topic, self.topic_id, self.partition = group_id, topic_name, topic_id, partition
        self._key_prefix = f"{group_id}/{topic_name}-{partition}@"     # key(): one per record move
        self.records: dict[int, InFlight] = {}     # offsets spso .. end-1
        self.spso = 0
        self.end = 0                                # first offset not yet in the cache
        self.state_epoch = 0
        self._tokens = 0
        self.offline = False                        # its leader crashed: in-memory state is gone

    # ---- settings --------------------------------------------------------------------------------
    @property
    def limit(self) -> int:
        return self.cluster.config.group_share_delivery_count_limit

    @property
    def lock_ms(self) -> int:
        return self.cluster.config.group_share_record_lock_duration_ms

    def _enabled(self):
        return sr.enabled(self.cluster.features.on("KIP-1289"))

    def key(self, offset: int) -> str:
        return f"{self._key_prefix}{offset}"

    # ---- transitions -----------------------------------------------------------------------------
    def _move(self, offset: int, event: str) -> None:
        self._moves((offset,), event)

    def _moves(self, offsets, event) -> None:
        """Fire the table's row for each offset in order: `event` is one event for all of them or
        a list of one event per offset. One StateChanged each, with consecutive seqs; a run of
        offsets is moved in one call because this is the hot path of long runs (three moves per
        record)."""
        records, prefix, version = self.records, self._key_prefix, self.cluster.features.on("KIP-1289")
        c = self.cluster
        events = c.events
        append = events.append
        seq, now, name = c.events_taken + len(events), c.clock.now, sr.TABLE.name
        same = event if type(event) is str else None
        for i, offset in enumerate(offsets):
            rec = records[offset]
            old = rec.state
            ev = same or event[i]
            row = _ROWS.get((old, ev, version))
            if row is None:        # the table's answer, remembered
                row = _ROWS[(old, ev, version)] = sr.TABLE.next_state(old, ev, self._enabled())
            new = rec.state = row.to_state
            key = rec.key
            if key is None:
                key = rec.key = f"{prefix}{offset}"
            # cluster.emit(StateChanged, ...) inlined: the model's most frequent event
            append(StateChanged(seq + i, now, name, key, old, new, ev, row.status))
            if new not in _OWNED:        # TX_PENDING keeps its owner (KIP-1289)
                rec.member = EMPTY_MEMBER
            if new != sr.TX_PENDING and rec.staged_event:     # staged by a transaction: forget it
                rec.staged_pid, rec.staged_epoch, rec.staged_event, rec.staged_at = -1, -1, "", -1
                rec.staged_state_leader_epoch = -1

    def _release_event(self, offset: int, base: str) -> str:
        rec = self.records[offset]
        return f"{base}-at-limit" if rec.delivery_count >= self.limit or offset < self.spso else base

    # ---- acquisition -----------------------------------------------------------------------------
    def _log(self):
        return self.cluster.topics.partition(self.topic, self.partition)

    def acquire(self, member: str, max_records: int, isolation: int = 0) -> list[int]:
        """Acquire up to max_records offsets for `member`; returns the acquired offsets (in order)."""
        log = self._log()
        if log is None or max_records <= 0:
            return []
        start = log.log_start_offset
        if self.end < start and all(r.state in sr.TERMINAL or r.state == sr.AVAILABLE for r in self.records.values()):
            # log retention deleted records the group had not reached: like SharePartition on
            # OFFSET_OUT_OF_RANGE, the start offset moves to the log start offset
            self.records.clear()
            self.spso = self.end = start
        self._tokens += 1
        token = self._tokens
        got = self._acquire_cached(member, max_records, token)
        self._acquire_new(log, member, max_records, isolation, token, got)
        if got:
            self.cluster.clock.schedule(self.cluster.now + self.lock_ms, lambda: self._expire(token))
        self._advance_spso()
        return got

    def _acquire_cached(self, member: str, max_records: int, token: int) -> list[int]:
        """1. cached AVAILABLE records, run by run (a run = consecutive offsets of equal count)."""
        got: list[int] = []
        off = self.spso
        while off < self.end and len(got) < max_records:
            rec = self.records[off]
            if rec.state != sr.AVAILABLE:
                off += 1
                continue
            run = [off]
            while (run[-1] + 1 < self.end and self.records[run[-1] + 1].state == sr.AVAILABLE
                   and self.records[run[-1] + 1].delivery_count == rec.delivery_count):
                run.append(run[-1] + 1)
            take = run
            if rec.delivery_count >= self.limit - 1:
                take = run[:1]
            elif rec.delivery_count >= 3:
                take = run[:(len(run) + 1) // 2]
            take = take[:max_records - len(got)]
            self._take(take, member, token)
            got.extend(take)
            if len(take) < len(run):      # throttled (or full): the rest waits for a later fetch
                break
            off = run[-1] + 1
        return got

    def _acquire_new(self, log, member: str, max_records: int, isolation: int, token: int, got: list[int]) -> None:
        """2. new records from the log, up to the record-lock window (appended to `got`)."""
        window = self.cluster.config.group_share_partition_max_record_locks
        bound = log.last_stable_offset if isolation == 1 else log.log_end_offset
        if isolation != 1:           # read_uncommitted: the next run of offsets, moved together
            n = min(max_records - len(got), bound - self.end, window - (self.end - self.spso))
            if n > 0:
                new = range(self.end, self.end + n)
                records = self.records
                for o in new:
                    records[o] = InFlight()
                self.end += n
                self._take(new, member, token)
                for o in new:
                    if log.holds(o):
                        got.append(o)
                    else:           # a gap the log cleaner left: no record there (ack type GAP's row)
                        self._move(o, "gap")
        while len(got) < max_records and self.end < bound and self.end - self.spso < window:
            o = self.end
            self.records[o] = InFlight()
            self.end += 1
            self._take((o,), member, token)
            got.append(o)
            if not log.holds(o):
                self._move(o, "gap")        # compaction or retention removed it: archived, never handed out
                got.pop()
            elif isolation == 1:
                entry = log.entries[o]
                if entry.aborted and entry.control is None:
                    self._move(o, "aborted-txn")     # read_committed: never handed to the client
                    got.pop()

    def _take(self, offsets, member: str, token: int) -> None:
        """Acquire a run of offsets for `member` under lock `token`: deliveryCount + 1 each."""
        self._moves(offsets, "acquire")
        records = self.records
        for o in offsets:
            rec = records[o]
            rec.delivery_count += 1
            rec.member = member
            rec.lock = token

    def renew(self, offsets: list[int]) -> None:
        """KIP-1222 RENEW: the records stay ACQUIRED (no transition) under a fresh lock."""
        self._tokens += 1
        token = self._tokens
        for o in offsets:
            self.records[o].lock = token
        self.cluster.clock.schedule(self.cluster.now + self.lock_ms, lambda: self._expire(token))

    def _expire(self, token: int) -> None:
        if self.offline:            # the broker holding the lock timers crashed (reload_from_state)
            return
        moved = []
        for o in range(self.spso, self.end):
            rec = self.records.get(o)
            if rec is not None and rec.lock == token and rec.state in (sr.ACQUIRED, sr.TX_PENDING):
                if rec.state == sr.TX_PENDING:
                    self._move(o, "lock-expired")          # KIP-1289 corner case 6: back to ACQUIRED
                self._move(o, self._release_event(o, "lock-expired"))
                moved.append(o)
        if moved:
            self.cluster.emit(AcquisitionLockExpired, group=self.group_id, topic=self.topic,
                              partition=self.partition, offsets=tuple(moved))
            batches = self.state_batches(moved)
            self._advance_spso()
            self.cluster.shares.persist(self, batches)

    # ---- acknowledgement -------------------------------------------------------------------------
    def plan(self, member: str, batches: list[dict], *, allow_renew: bool = False) -> list[tuple[int, str]]:
        """Validate acknowledgement batches; returns [(offset, event-or-"renew")]. Raises AckError
        (INVALID_REQUEST / INVALID_RECORD_STATE) without touching any record."""
        staged: dict[int, str] = {}
        out: list[tuple[int, str]] = []
        for b in batches:
            first, last, types = b.get("FirstOffset", 0), b.get("LastOffset", -1), list(b.get("AcknowledgeTypes") or [])
            if last < first or not types or (len(types) != 1 and len(types) != last - first + 1):
                raise AckError("INVALID_REQUEST", f"bad acknowledgement batch {first}-{last}")
            if last < self.spso:
                continue                                  # below the SPSO: ignored silently
            if first >= self.end or last >= self.end:
                raise AckError("INVALID_REQUEST", f"offsets {first}-{last} are past the last cached offset")
            for o in range(first, last + 1):
                event = _ack_event(types[0] if len(types) == 1 else types[o - first], allow_renew)
                if o < self.spso:
                    continue
                rec = self.records[o]
                state = staged.get(o, rec.state)
                if state != sr.ACQUIRED or rec.member != member:
                    raise AckError("INVALID_RECORD_STATE",
                                   f"offset {o} is {state} held by {rec.member}, not ACQUIRED by {member}")
                if event == "release" and rec.delivery_count >= self.limit:
                    event = "release-at-limit"
                if event != "renew":
                    staged[o] = sr.TABLE.next_state(sr.ACQUIRED, event).to_state
                out.append((o, event))
        return out

    def apply(self, planned: list[tuple[int, str]]) -> None:
        renew = [o for o, e in planned if e == "renew"]
        moves = [(o, e) for o, e in planned if e != "renew"]
        changed = [o for o, _ in moves]
        self._moves(changed, [e for _, e in moves])
        if renew:
            self.renew(renew)
        batches = self.state_batches(changed)
        self._advance_spso()
        if changed:
            self.cluster.shares.persist(self, batches)

    def acknowledge(self, member: str, batches: list[dict], *, allow_renew: bool = False) -> None:
        self.apply(self.plan(member, batches, allow_renew=allow_renew))

    # ---- KIP-1289 (proposed): transactional acknowledgements -----------------------------------
    def plan_txn(self, member: str, batches: list[dict]) -> list[tuple[int, str]]:
        """Validate TxnShareAcknowledge batches without touching a record: [(offset, commit event)].
        Only ACCEPT (1) and REJECT (3) are allowed in a transaction (the KIP-1289 page's corner case 10);
        every offset must be ACQUIRED by `member`. Raises AckError (INVALID_RECORD_STATE /
        INVALID_REQUEST)."""
        out: list[tuple[int, str]] = []
        seen: set[int] = set()
        for b in batches:
            first, last, types = b.get("FirstOffset", 0), b.get("LastOffset", -1), list(b.get("AcknowledgeTypes") or [])
            if last < first or not types or (len(types) != 1 and len(types) != last - first + 1):
                raise AckError("INVALID_REQUEST", f"bad acknowledgement batch {first}-{last}")
            bad = sorted({t for t in types if t not in TXN_ACK_EVENTS})
            if bad:
                raise AckError("INVALID_RECORD_STATE",
                               f"acknowledge type(s) {bad} not allowed in a transaction (only 1 ACCEPT, 3 REJECT)")
            if first < self.spso or last >= self.end:
                raise AckError("INVALID_RECORD_STATE", f"offsets {first}-{last} are not in flight")
            for o in range(first, last + 1):
                t = types[0] if len(types) == 1 else types[o - first]
                rec = self.records[o]
                if o in seen or rec.state != sr.ACQUIRED or rec.member != member:
                    raise AckError("INVALID_RECORD_STATE",
                                   f"offset {o} is {rec.state} held by {rec.member}, not ACQUIRED by {member}")
                seen.add(o)
                out.append((o, TXN_ACK_EVENTS[t]))
        return out

    def stage(self, planned: list[tuple[int, str]], producer_id: int, producer_epoch: int) -> None:
        """ACQUIRED -> TX_PENDING (txn-stage), remembering the staging producer id/epoch. The
        acquisition lock keeps running (corner case 6); nothing is persisted (corner case 1)."""
        leader_epoch, now, records = self.state_leader_epoch(), self.cluster.now, self.records
        self._moves([o for o, _ in planned], "txn-stage")
        for o, event in planned:
            rec = records[o]
            rec.staged_pid, rec.staged_epoch, rec.staged_event = producer_id, producer_epoch, event
            rec.staged_at = now
            rec.staged_state_leader_epoch = leader_epoch

    def _state_log(self):
        n = self.__dict__.get("_state_partition")
        if n is None:          # fixed for the share partition's life: hashed once
            from ..records import share_coordinator_partition
            n = self._state_partition = share_coordinator_partition(
                self.group_id, self.topic_id, self.partition, self.cluster.config.share_state_topic_partitions)
        return self.cluster.topics.partition(SHARE_GROUP_STATE, n)

    def state_leader_epoch(self) -> int:
        """The leader epoch of this share partition's __share_group_state-N now (-1 if it has no
        log): KIP-1289 stamps each staging with it (corner case 12)."""
        log = self._state_log()
        return log.leader_epoch if log is not None else -1

    def resolve_txn(self, producer_id: int, producer_epoch: int | None, commit: bool, *,
                    any_state_epoch: bool = False) -> list[int]:
        """A COMMIT/ABORT marker for `producer_id`: resolves the TX_PENDING records it staged.
        Filtered per record by state (duplicates) and by (producer id, epoch): under transaction
        version 2 the marker carries an epoch above the staging epoch, so a marker whose epoch is
        not newer than the staging (a late marker of an earlier transaction) is ignored.
        COMMIT persists the outcome as a ShareUpdate; ABORT hands the records back to their member.
        any_state_epoch: the marker was addressed to this share partition itself (share_marker_routing
        "participants", the kit's suggestion), so a later __share_group_state-N leader does not hide
        the staging (no case-12 filter)."""
        leader_epoch = None if any_state_epoch else self.state_leader_epoch()
        hit = [o for o in range(self.spso, self.end)
               if (r := self.records.get(o)) is not None and r.state == sr.TX_PENDING and r.staged_pid == producer_id
               and (producer_epoch is None or producer_epoch > r.staged_epoch)
               and (leader_epoch is None or r.staged_state_leader_epoch == leader_epoch)]
        self._moves(hit, [self.records[o].staged_event for o in hit] if commit else "txn-abort")
        if hit and commit:
            batches = self.state_batches(hit)
            self._advance_spso()
            self.cluster.shares.persist(self, batches)
        return hit

    def reload_from_state(self, why: str = "broker restart") -> list[int]:
        """The share-partition leader restarted (the KIP-1289 page's corner case 1): the in-memory cache is
        rebuilt from the persisted __share_group_state records (the last ShareSnapshot and the
        ShareUpdates after it). ACQUIRED and TX_PENDING were persisted as AVAILABLE (state_batches),
        so every record in flight comes back AVAILABLE (or is fetched again from the log) and is
        redelivered; its lock is gone (old lock timers match no record). Every record whose state
        changes gets a StateChanged with cause "state-reloaded" (not a table row: the record is
        not moved, the broker forgot it; status "proposed" when it leaves TX_PENDING). Returns the
        offsets that left ACQUIRED/TX_PENDING."""
        from ..records import decode_internal
        log = self._state_log()
        start, saved = 0, {}
        for e in (log.entries if log is not None else []):
            if e.control is not None or e.key is None or e.value is None:
                continue
            d = decode_internal(e.key, e.value, SHARE_GROUP_STATE)
            k, v = d["key"], d["value"]
            if (k.get("GroupId"), k.get("TopicId"), k.get("Partition")) != (self.group_id, self.topic_id, self.partition):
                continue
            if d["record"] == "ShareSnapshot":
                saved = {}
            start = v["StartOffset"]
            for b in v["StateBatches"]:
                for o in range(b["FirstOffset"], b["LastOffset"] + 1):
                    saved[o] = (b["DeliveryState"], b["DeliveryCount"])
        by_id = {i: name for name, i in sr.STATE_IDS.items()}
        new: dict[int, InFlight] = {}
        saved = {o: sv for o, sv in saved.items() if o >= start}
        end = max(saved, default=start - 1) + 1
        for o in range(start, end):
            st, n = saved.get(o, (0, 0))
            new[o] = InFlight(state=by_id.get(st, sr.AVAILABLE), delivery_count=n)
        lost = []
        for o, old in sorted(self.records.items()):
            after = new[o].state if o in new else (sr.ACKNOWLEDGED if o < start else sr.AVAILABLE)
            if old.state != after:
                self.cluster.emit(StateChanged, machine=sr.TABLE.name, key=self.key(o), from_state=old.state,
                                  to_state=after, cause="state-reloaded",
                                  status="proposed" if sr.TX_PENDING in (old.state, after) else "released")
            if old.state in (sr.ACQUIRED, sr.TX_PENDING):
                lost.append(o)
        self.records, self.spso, self.end = new, start, end
        self.state_epoch += 1
        self.offline = False
        self._advance_spso()
        self.cluster.emit(SharePartitionReloaded, group=self.group_id, topic=self.topic, partition=self.partition,
                          why=why, offsets=tuple(lost), spso=self.spso, state_epoch=self.state_epoch)
        return lost

    def release_member(self, member: str) -> list[int]:
        """releaseAcquiredRecords(memberId): on leave or share-session close."""
        moved = []
        for o in range(self.spso, self.end):
            rec = self.records[o]
            if rec.state == sr.ACQUIRED and rec.member == member:
                self._move(o, self._release_event(o, "member-left"))
                moved.append(o)
        if moved:
            batches = self.state_batches(moved)
            self._advance_spso()
            self.cluster.shares.persist(self, batches)
        return moved

    # ---- start offset ----------------------------------------------------------------------------
    def _advance_spso(self) -> None:
        while self.spso < self.end and self.records[self.spso].state in sr.TERMINAL:
            del self.records[self.spso]
            self.spso += 1

    def state_batches(self, offsets=None) -> list[dict]:
        """Persisted form: runs of {FirstOffset, LastOffset, DeliveryState, DeliveryCount}. ACQUIRED
        (and TX_PENDING) are never written: they persist as AVAILABLE (0)."""
        offs = sorted(o for o in (self.records if offsets is None else offsets) if o in self.records)
        out: list[dict] = []
        for o in offs:
            rec = self.records[o]
            st = sr.STATE_IDS.get(rec.state, 0) if rec.state in sr.TERMINAL else 0
            last = out[-1] if out else None
            if last and last["LastOffset"] == o - 1 and last["DeliveryState"] == st \
                    and last["DeliveryCount"] == rec.delivery_count:
                last["LastOffset"] = o
            else:
                out.append({"FirstOffset": o, "LastOffset": o, "DeliveryState": st,
                            "DeliveryCount": rec.delivery_count})
        return out

    def acquired_ranges(self, offsets: list[int]) -> list[dict]:
        """AcquiredRecords of a ShareFetch response: consecutive offsets with the same count."""
        out: list[dict] = []
        for o in offsets:
            n = self.records[o].delivery_count
            if out and out[-1]["LastOffset"] == o - 1 and out[-1]["DeliveryCount"] == n:
                out[-1]["LastOffset"] = o
            else:
                out.append({"FirstOffset": o, "LastOffset": o, "DeliveryCount": n})
        return out


def _ack_event(t: int, allow_renew: bool) -> str:
    """The share-record event of acknowledge type `t` (4, RENEW: "renew" where allowed)."""
    if t == 4 and allow_renew:
        return "renew"
    if t in sr.ACK_EVENTS:
        return sr.ACK_EVENTS[t]
    raise AckError("INVALID_REQUEST", f"unknown acknowledge type {t}")
