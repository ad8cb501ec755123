"""The coordinators' states, reconstructed from what crossed the wire (docs/explain.md, "States").

The capture's requests and answers are read in time order and each observation fires a row of the
same state tables the broker model executes (kipviz.broker.tables): transaction, classic-group and
share-record. The result is a list of the kit's typed events (RequestReceived, ResponseSent,
StateChanged), so the scenarios' own pictures draw it: kipviz.draw.animate.Animation for the
machines and kipviz.draw.record_strip for share partitions.

What each observation means (OBSERVED, one row per API):

- InitProducerId answered: the transactional id's epoch moves on (init-producer-id); an open
  transaction is fenced and aborted first (init-producer-id, fence-abort, then markers-written
  once the answer is a success: TransactionCoordinator.scala handleInitProducerId);
- AddPartitionsToTxn / AddOffsetsToTxn (v0-v3, the client's) / a transactional Produce v12+ on a
  new partition: add-partitions / add-offsets / implicit-add;
- EndTxn answered: end-txn-commit or end-txn-abort; markers-written when a control batch of that
  producer id shows up in a Fetch answer (or, not seen, before the coordinator accepts the next step);
- JoinGroup with a member id: member-joined or member-rejoined; its answer: join-complete, with the
  generation, leader and (in the leader's answer) every member's subscription (ConsumerProtocol);
  the leader's SyncGroup: leader-synced; each SyncGroup answer: that member's assignment;
  LeaveGroup: member-left (and join-complete-empty when no member is left);
- ShareFetch answers: acquire per AcquiredRecords offset (an offset acquired again without an
  acknowledgement first had its lock expire: lock-expired); ShareFetch / ShareAcknowledge
  acknowledgements answered without error: accept / release / reject / gap (release at the
  delivery limit: release-at-limit).

KIP-848 consumer groups are kept as data only (each member's epochs and assignments from
ConsumerGroupHeartbeat answers): the group's state (Assigning, Reconciling, ...) depends on its
group epoch and target assignment, which no answer carries. A row the table does not allow from
the reconstructed state is not forced: it is listed in `unexplained` (the capture began mid-way,
or a step was not captured)."""
from __future__ import annotations

from dataclasses import dataclass, field

from ..broker.machine import Machine
from ..broker.tables import classic_group as CG
from ..broker.tables import share_record as SR
from ..broker.tables import transaction as TX
from ..records.consumer_protocol import decode_assignment, decode_subscription
from ..records.header import HEADER_SIZE, batch_size, batch_summary, split_batches
from ..schema import events as E
from ..schema.error_codes import CODE
from ..schema.topics import CONSUMER_OFFSETS

MAX_RANGE = 100_000     # offsets one AcquiredRecords / acknowledgement batch may span here (a damaged capture's can span 2**63)
DELIVERY_LIMIT = 5      # group.share.delivery.count.limit's default (GroupConfig / ShareGroupConfig.java)
CONCURRENT = CODE["CONCURRENT_TRANSACTIONS"]
MEMBER_ID_REQUIRED = CODE["MEMBER_ID_REQUIRED"]


def _ms(t) -> int:
    return int(round(t * 1000))


def _ok(body: dict | None) -> bool:
    return body is not None and not body.get("ErrorCode")


@dataclass
class Generation:
    """One classic group generation: its leader, members' subscriptions and assignments."""
    generation: int
    protocol: str | None
    leader: str | None
    members: dict[str, list[str]] = field(default_factory=dict)           # member id -> topics subscribed
    assignments: dict[str, list[tuple[str, int]]] = field(default_factory=dict)


@dataclass
class Transaction:
    """One transactional id: its producer ids and epochs, and the partitions of each transaction."""
    transactional_id: str
    producers: list[tuple[int, int]] = field(default_factory=list)        # (producer id, epoch) per InitProducerId
    partitions: set[tuple[str, int]] = field(default_factory=set)         # of the open transaction
    outcomes: list[str] = field(default_factory=list)                     # "commit" / "abort" per EndTxn


class Rebuild:
    """Reads exchanges in time order and fires the tables' rows (see the module docstring)."""

    def __init__(self, exchanges):
        self.exchanges = exchanges
        self.events: list[E.Event] = []
        self.machines: dict[tuple[str, str], Machine] = {}
        self.transactions: dict[str, Transaction] = {}
        self.by_producer: dict[int, str] = {}
        self.generations: dict[str, list[Generation]] = {}
        self.consumer_members: dict[str, dict[str, list[tuple[int, int, list]]]] = {}
        self.topic_names: dict[object, str] = {}
        self.delivered: dict[str, int] = {}                                # share-record key -> delivery count
        self.unexplained: list[str] = []
        self.brokers: dict[str, int] = {}
        self.now = 0

    # ---- events ----------------------------------------------------------------------------------
    def _emit(self, **fields) -> None:
        self.events.append(E.StateChanged(len(self.events), self.now, **fields))

    def fire(self, table, key: str, event: str, i: int) -> bool:
        """Fire `event` on the instance `key` of `table` (made on first use) at exchange #i; False,
        and a line in `unexplained`, when the table has no such row from its current state."""
        m = self.machines.get((table.name, key))
        if m is None:
            m = self.machines[(table.name, key)] = Machine(table, key, self._emit)
        if not m.can(event):
            self.unexplained.append(f"#{i}: {table.name} {key} is {m.state} (as reconstructed), "
                                    f"which has no '{event}' row")
            return False
        m.fire(event)
        return True

    def state(self, table, key: str) -> str:
        """The rebuilt state of one instance (the table's initial state before any change)."""
        m = self.machines.get((table.name, key))
        return m.state if m is not None else table.initial

    def run(self) -> None:
        """Read every request and answer in time order, emitting the typed events into `events`."""
        steps = []
        for i, ex in enumerate(self.exchanges):
            if ex.get("request") is None or ex.get("time") is None or ex.get("connection") is None:
                continue
            # in the capture's own order (microseconds): an answer and the request it prompted often share a millisecond
            steps.append((ex["time"], 0, i))
            if ex.get("response") is not None and ex.get("response_time") is not None:
                steps.append((max(ex["time"], ex["response_time"]), 1, i))
        for at, side, i in sorted(steps):
            self.now = t = _ms(at)
            ex = self.exchanges[i]
            req = ex["request"]
            b = self.brokers.setdefault(ex["server"], len(self.brokers))
            if side == 0:
                self.events.append(E.RequestReceived(len(self.events), t, b, ex["client"], req["api"],
                                                     req["version"], ex["correlation_id"], req["body"]))
            handler = OBSERVED.get(req["api"])
            if handler is not None:
                handler[side](self, i, req["body"], (ex.get("response") or {}).get("body"), req["version"])
            if side == 1:
                self.events.append(E.ResponseSent(len(self.events), t, b, ex["client"], req["api"], req["version"],
                                                  ex["correlation_id"], ex["response"]["body"], ()))

    # ---- transactions --------------------------------------------------------------------------------
    def _txn(self, tid: str) -> Transaction:
        return self.transactions.setdefault(tid, Transaction(tid))

    def _complete(self, tid: str, i: int) -> None:
        """The markers of a prepared transaction are written (seen, or implied by the next step)."""
        if self.state(TX.TABLE, tid) in ("PrepareCommit", "PrepareAbort"):
            self.fire(TX.TABLE, tid, "markers-written", i)
            self._txn(tid).partitions.clear()

    def _init_producer_id(self, i, req, resp, v) -> None:
        tid = req.get("TransactionalId")
        if not tid or resp is None:
            return
        code = resp.get("ErrorCode", 0)
        if code not in (0, CONCURRENT):
            return
        if self.state(TX.TABLE, tid) == "Ongoing":
            self.fire(TX.TABLE, tid, "init-producer-id", i)
            self.fire(TX.TABLE, tid, "fence-abort", i)
            self._txn(tid).outcomes.append("abort (fenced by InitProducerId)")
        if code == 0:
            self._complete(tid, i)
            self.fire(TX.TABLE, tid, "init-producer-id", i)
            self._txn(tid).producers.append((resp["ProducerId"], resp["ProducerEpoch"]))
            self.by_producer[resp["ProducerId"]] = tid

    def _add(self, tid: str, event: str, parts, i: int) -> None:
        self._complete(tid, i)
        self.fire(TX.TABLE, tid, event, i)
        self._txn(tid).partitions.update(parts)

    def _add_partitions(self, i, req, resp, v) -> None:
        tid = req.get("V3AndBelowTransactionalId") or req.get("TransactionalId")
        if not tid or resp is None or v >= 4:        # v4+ is broker to coordinator (KIP-890)
            return
        results = resp.get("ResultsByTopicV3AndBelow") or resp.get("Results") or []
        if any(p.get("PartitionErrorCode") for t in results for p in t.get("ResultsByPartition") or t.get("Results") or []):
            return
        topics = req.get("V3AndBelowTopics") or req.get("Topics") or []
        self._add(tid, "add-partitions", {(t["Name"], p) for t in topics for p in t.get("Partitions") or []}, i)

    def _add_offsets(self, i, req, resp, v) -> None:
        if req.get("TransactionalId") and _ok(resp):
            self._add(req["TransactionalId"], "add-offsets", {(CONSUMER_OFFSETS, req.get("GroupId"))}, i)

    def _produce(self, i, req, resp, v) -> None:
        tid = req.get("TransactionalId")
        if not tid or v < 12 or resp is None:          # before v12 AddPartitionsToTxn adds them (KIP-890)
            return
        parts = {(t.get("Name"), p["Index"]) for t in req.get("TopicData") or [] for p in t.get("PartitionData") or []}
        if self.state(TX.TABLE, tid) != "Ongoing" or not parts <= self._txn(tid).partitions:
            self._add(tid, "implicit-add", parts, i)

    def _end_txn(self, i, req, resp, v) -> None:
        tid = req.get("TransactionalId")
        if not tid or not _ok(resp):
            return
        commit = bool(req.get("Committed"))
        if self.fire(TX.TABLE, tid, "end-txn-commit" if commit else "end-txn-abort", i):
            self._txn(tid).outcomes.append("commit" if commit else "abort")

    def _fetched(self, i, req, resp, v) -> None:
        for t in (resp or {}).get("Responses") or ():
            for p in t.get("Partitions") or ():
                raw = p.get("Records")
                for b in split_batches(raw) if raw else ():
                    if len(b) < HEADER_SIZE or len(b) != batch_size(b):
                        continue
                    _, _, pid, _, _, control, _ = batch_summary(b)
                    if control and pid in self.by_producer:
                        self._complete(self.by_producer[pid], i)

    # ---- classic groups -----------------------------------------------------------------------------
    def _gen(self, gid: str) -> Generation | None:
        gens = self.generations.get(gid)
        return gens[-1] if gens else None

    def _join_group(self, i, req, resp, v) -> None:
        gid, mid = req.get("GroupId"), req.get("MemberId") or ""
        if not gid or resp is None or resp.get("ErrorCode") == MEMBER_ID_REQUIRED:
            return
        state = self.state(CG.TABLE, gid)
        if state == "PreparingRebalance":
            return                                     # it joins the rebalance under way
        gen = self._gen(gid)
        known = gen is not None and mid in gen.members and state != "Empty"
        self.fire(CG.TABLE, gid, "member-rejoined" if known else "member-joined", i)

    def _joined(self, i, req, resp, v) -> None:
        gid = req.get("GroupId")
        if not gid or not _ok(resp):
            return
        gens = self.generations.setdefault(gid, [])
        if not gens or gens[-1].generation != resp["GenerationId"]:
            if self.state(CG.TABLE, gid) == "PreparingRebalance":
                self.fire(CG.TABLE, gid, "join-complete", i)
            gens.append(Generation(resp["GenerationId"], resp.get("ProtocolName"), resp.get("Leader")))
        gen = gens[-1]
        gen.members.setdefault(resp.get("MemberId"), [])
        for m in resp.get("Members") or ():
            gen.members[m["MemberId"]] = _topics(decode_subscription, m.get("Metadata"))

    def _sync_group(self, i, req, resp, v) -> None:
        gid, gen = req.get("GroupId"), self._gen(req.get("GroupId") or "")
        if gen is not None and _ok(resp) and req.get("MemberId") == gen.leader \
                and self.state(CG.TABLE, gid) == "CompletingRebalance":
            self.fire(CG.TABLE, gid, "leader-synced", i)

    def _synced(self, i, req, resp, v) -> None:
        gen = self._gen(req.get("GroupId") or "")
        if gen is not None and _ok(resp) and req.get("GenerationId") == gen.generation:
            gen.assignments[req.get("MemberId")] = sorted(_topics(decode_assignment, resp.get("Assignment")))

    def _leave_group(self, i, req, resp, v) -> None:
        gid, gen = req.get("GroupId"), self._gen(req.get("GroupId") or "")
        if not gid or not _ok(resp) or gen is None:
            return
        leaving = {m.get("MemberId") for m in req.get("Members") or ()} | ({req["MemberId"]} if req.get("MemberId") else set())
        staying = set(gen.members) - leaving
        if self.state(CG.TABLE, gid) in ("Stable", "CompletingRebalance") and leaving & set(gen.members):
            self.fire(CG.TABLE, gid, "member-left", i)
            if not staying:
                self.fire(CG.TABLE, gid, "join-complete-empty", i)

    # ---- KIP-848 consumer groups (data only) ---------------------------------------------------------
    def _heartbeat_848(self, i, req, resp, v) -> None:
        if not _ok(resp) or not req.get("GroupId"):
            return
        mid = resp.get("MemberId") or req.get("MemberId")
        a = resp.get("Assignment")
        parts = None if a is None else sorted((self.topic_names.get(tp["TopicId"], str(tp["TopicId"])), p)
                                              for tp in a.get("TopicPartitions") or () for p in tp["Partitions"])
        hist = self.consumer_members.setdefault(req["GroupId"], {}).setdefault(mid, [])
        hist.append((self.now, resp.get("MemberEpoch"), parts))

    def _metadata(self, i, req, resp, v) -> None:
        for t in (resp or {}).get("Topics") or ():
            if t.get("TopicId") is not None and t.get("Name"):
                self.topic_names[t["TopicId"]] = t["Name"]

    # ---- share groups ------------------------------------------------------------------------------
    def _share_key(self, gid, topic_id, partition, offset) -> str:
        return f"{gid}/{self.topic_names.get(topic_id, str(topic_id))}-{partition}@{offset}"

    def _plausible(self, r: dict, i: int) -> bool:
        n = r["LastOffset"] - r["FirstOffset"] + 1
        if 0 <= n <= MAX_RANGE:
            return True
        self.unexplained.append(f"#{i}: offsets {r['FirstOffset']}..{r['LastOffset']} are not followed "
                                f"(more than {MAX_RANGE:,} in one range)")
        return False

    # size: request topics -> partitions -> batches -> offsets, each level checked against its answer; flat, it reads in order
    def _share_acks(self, i, req, resp, v) -> None:
        gid = req.get("GroupId")
        if not gid or resp is None or resp.get("ErrorCode"):
            return
        answered = {(t.get("TopicId"), p.get("PartitionIndex")): p for t in resp.get("Responses") or ()
                    for p in t.get("Partitions") or ()}
        for t in req.get("Topics") or ():
            for p in t.get("Partitions") or ():
                got = answered.get((t.get("TopicId"), p.get("PartitionIndex")), {})
                if got.get("ErrorCode") or got.get("AcknowledgeErrorCode"):
                    continue
                for b in p.get("AcknowledgementBatches") or ():
                    if not self._plausible(b, i):
                        continue
                    types = list(b.get("AcknowledgeTypes") or ())
                    for n, off in enumerate(range(b["FirstOffset"], b["LastOffset"] + 1)):
                        ack = types[0] if len(types) == 1 else (types[n] if n < len(types) else None)
                        event = SR.ACK_EVENTS.get(ack)
                        key = self._share_key(gid, t.get("TopicId"), p.get("PartitionIndex"), off)
                        if event == "release" and self.delivered.get(key, 0) >= DELIVERY_LIMIT:
                            event = "release-at-limit"
                        if event is not None:
                            self.fire(SR.TABLE, key, event, i)

    def _share_acquired(self, i, req, resp, v) -> None:
        gid = req.get("GroupId")
        if not gid or resp is None or resp.get("ErrorCode"):
            return
        for t in resp.get("Responses") or ():
            for p in t.get("Partitions") or ():
                for a in p.get("AcquiredRecords") or ():
                    if not self._plausible(a, i):
                        continue
                    for off in range(a["FirstOffset"], a["LastOffset"] + 1):
                        key = self._share_key(gid, t.get("TopicId"), p.get("PartitionIndex"), off)
                        if self.state(SR.TABLE, key) == "ACQUIRED":
                            self.fire(SR.TABLE, key, "lock-expired", i)     # not on the wire: delivered again
                        if self.fire(SR.TABLE, key, "acquire", i):
                            self.delivered[key] = a.get("DeliveryCount", self.delivered.get(key, 0) + 1)


def _topics(decode, blob) -> list:
    try:
        out = decode(bytes(blob)) if blob else []
    except Exception:  # noqa: BLE001 - another protocol's metadata: not ConsumerProtocol
        return []
    return sorted(out)


def _nothing(*_a) -> None:
    return None


# api -> (on its request, on its answer); the request side also knows the answer (the capture has both)
OBSERVED = {
    "InitProducerId": (Rebuild._init_producer_id, _nothing),
    "AddPartitionsToTxn": (Rebuild._add_partitions, _nothing),
    "AddOffsetsToTxn": (Rebuild._add_offsets, _nothing),
    "Produce": (Rebuild._produce, _nothing),
    "EndTxn": (Rebuild._end_txn, _nothing),
    "Fetch": (_nothing, Rebuild._fetched),
    "JoinGroup": (Rebuild._join_group, Rebuild._joined),
    "SyncGroup": (Rebuild._sync_group, Rebuild._synced),
    "LeaveGroup": (Rebuild._leave_group, _nothing),
    "ConsumerGroupHeartbeat": (_nothing, Rebuild._heartbeat_848),
    "Metadata": (_nothing, Rebuild._metadata),
    "ShareFetch": (Rebuild._share_acks, Rebuild._share_acquired),
    "ShareAcknowledge": (Rebuild._share_acks, _nothing),
}
