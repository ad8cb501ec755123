"""The KIP-1289 corner-case faults of the share-group EOS workload (kipviz.workloads.share_eos), as
data: FAULTS holds one FaultKind per kind (its corner case, how it is armed, what it does, its
injector), and FaultRunner, the one small runner, fires them on a workload's schedule.

FAULTS: `faults` is a list of Fault(at, kind, params) (or (at, kind[, params]) tuples or dicts).
`at` is a step number. A fault with a `point` fires at that point of the next iteration of its
worker (params["worker"], default the worker of step `at`) that reaches it -- after-poll,
after-produce, after-snapshot (between shareGroupMetadata() and the staging call), after-stage,
after-commit; the others fire at the start of step `at`. Every firing is recorded as a
FaultInjected event and as a row of WorkloadResult.faults. Kinds (KIP-1289 corner case in brackets; the table
FAULTS holds each as data):

  broker-crash (1)            crash `broker` (default 0: the share-partition leader; ACQUIRED and
                              TX_PENDING live in its memory) at `point` (after-stage | after-poll |
                              idle), restart it `down_ms` later on the virtual clock
  coordinator-unavailable (2) the next `count` broker-internal AddPartitionsToTxn registrations of
                              __share_group_state-N fail with COORDINATOR_NOT_AVAILABLE /
                              NOT_COORDINATOR (wraps ShareTransactions.add_state_partitions,
                              as scenario kip1289.case02 does)
  zombie-producer (3)         at `point` (after-produce | after-stage) a new producer instance with
                              the worker's transactional id initialises; the old one carries on and
                              is fenced; the worker adopts the new one
  duplicate-marker (5)        the last commit's WriteTxnMarkers are sent again (WriteTxnMarkers v2,
                              TransactionVersion 2) right after it (`when` now) or during the
                              worker's next staged transaction (`when` next-stage)
  lock-expiry (6)             the worker stalls past the acquisition lock at `point` (after-poll |
                              after-produce): its staging then finds the records gone (released
                              KIP-932 behaviour)
  lock-expiry-tx-pending (6)  the worker stalls past the lock while its acks are TX_PENDING, then
                              commits: the KIP's case 6 (the lock reverts TX_PENDING, the late
                              marker is filtered) -- the output is committed and the record is
                              redelivered: a duplicate the KIP does not list as a window (NOT in
                              DEFAULT_KINDS)
  transaction-timeout (7)     the worker's process dies after staging; time jumps past
                              transaction.timeout.ms so the coordinator aborts; it restarts later
  rebalance (8)               between shareGroupMetadata() and the call a member joins and the
                              worker heartbeats: STALE_MEMBER_EPOCH
  old-broker (9)              share.version goes to 1 for `steps` steps (no TxnShareAcknowledge
                              advertised); refused while any record is TX_PENDING, as the KIP's
                              downgrade rule says
  invalid-ack-type (10)       one acknowledgement in the transaction is RELEASE / RENEW / GAP
  partial-failure (11)        the staging call also names offsets of another partition that are not
                              in flight: all or nothing
  share-state-leader-change (12)  after staging, leadership of the staged records'
                              __share_group_state-N moves (`to_broker`); it returns after the step
  marker-never-arrives (13)   after staging, the markers for __share_group_state-N are held; the
                              worker commits (or aborts: `outcome`), stalls past the lock, then the
                              markers are released (they arrive late and resolve nothing)
  concurrent-epochs (14)      before the worker's staging, an old in-flight TxnShareAcknowledge
                              with the previous producer epoch arrives (PRODUCER_FENCED)"""
from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

from ..broker.share_txn import pending as tx_pending
from ..clients.share_consumer import ShareConsumer
from ..records import share_coordinator_partition
from ..schema import events as ev
from ..schema.error_codes import CODE, NAME
from ..schema.topics import SHARE_GROUP_STATE

STATUS = "proposed"
KIP = "KIP-1289"
SHARE_STATE = SHARE_GROUP_STATE
POINTS = ("after-poll", "after-produce", "after-snapshot", "after-stage", "after-commit")


class WorkerDied(Exception):
    """A fault killed the worker's process (it restarts later)."""


class IterationDone(Exception):
    """The iteration ended early on purpose (a fault ended the transaction itself)."""


@dataclass(frozen=True)
class FaultKind:
    """One kind of fault: its KIP-1289 corner case, the point of the worker's iteration it is armed
    at by default (None: it fires at the start of its step), what it does, and its injector
    inject(runner, params, row, worker, point, ctx)."""
    kind: str
    case: int
    point: str | None
    does: str
    inject: Callable


# ---- the injectors: one per kind ---------------------------------------------------------------------------
def _broker_crash(run: "FaultRunner", p: dict, row: dict, w, point: str, ctx: dict):
    c = run.cluster
    b = p.get("broker", 0) % run.wl.brokers
    if b in c.down:
        return run.fired(row, w, f"broker {b} is already down", applied=False)
    down = p.get("down_ms", 300)
    c.crash_broker(b)
    c.clock.schedule(c.now + down, lambda: run.restart(b))
    return run.fired(row, w, f"broker {b} crashed at {point}, restarts in {down} ms")



def _coordinator_unavailable(run: "FaultRunner", p: dict, row: dict, w, point: str, ctx: dict):
    n = p.get("count", 2)
    errs = [("COORDINATOR_NOT_AVAILABLE", "NOT_COORDINATOR")[i % 2] for i in range(n)]
    run.fail_registrations(errs)
    return run.fired(row, w, f"the next {n} share-state registrations fail ({', '.join(sorted(set(errs)))})")



def _zombie_producer(run: "FaultRunner", p: dict, row: dict, w, point: str, ctx: dict):
    old = ctx["pr"]
    new = run.wl.new_producer(w)
    if new is None:
        w.pr = old
        return run.fired(row, w, "the new instance could not initialise", applied=False)
    return run.fired(row, w, f"new instance {new.client_id} (epoch {new.producer_epoch}) fenced "
                               f"{old.client_id} (epoch {old.producer_epoch}) at {point}")



def _duplicate_marker(run: "FaultRunner", p: dict, row: dict, w, point: str, ctx: dict):
    c = run.cluster
    pid = ctx["pid"]
    markers = [(e.topic, e.partition, e.producer_id, e.producer_epoch, e.record.get("type") == "COMMIT")
               for e in c.events[ctx["mark"]:]
               if e.__class__.__name__ == "RecordAppended" and e.control and e.producer_id == pid]
    if p.get("when", "now") == "next-stage":
        w.dup_markers = [markers, row]
        return run.fired(row, w, f"{len(markers)} marker(s) will be sent again during the next staging")
    codes = run.send_markers(markers)
    return run.fired(row, w, f"{len(markers)} marker(s) sent again: {codes}")



def _lock_expiry(run: "FaultRunner", p: dict, row: dict, w, point: str, ctx: dict):
    c = run.cluster
    ms = c.config.group_share_record_lock_duration_ms + 1 + p.get("extra_ms", 0)
    run.fired(row, w, f"worker stalls {ms} ms at {point}")
    run.wl.sleep(ms)
    return None



def _transaction_timeout(run: "FaultRunner", p: dict, row: dict, w, point: str, ctx: dict):
    c = run.cluster
    w.alive, w.retry = False, []
    w.revive_at = run.wl.step + p.get("restart_after_steps", len(run.wl.workers))
    ms = run.wl.txn_timeout_ms + c.config.transaction_abort_timed_out_interval_ms + 1
    run.fired(row, w, f"worker process died at {point}; {ms} ms pass")
    run.wl.stats["workers_died"] += 1
    run.wl.sleep(ms)
    raise WorkerDied



def _rebalance(run: "FaultRunner", p: dict, row: dict, w, point: str, ctx: dict):
    c = run.cluster
    if 0 in c.down:             # (the ShareConsumer model cannot heartbeat a down broker)
        return run.fired(row, w, "the share coordinator's broker is down", applied=False)
    run.wl.extra_members += 1
    x = ShareConsumer(c, run.wl.group, client_id=f"rebalancer-{run.wl.extra_members}")
    x.subscribe([run.wl.input])
    x.heartbeat()
    ctx["extra"].append(x)
    before = w.sc.member_epoch
    run.wl.heartbeat(w, force=True)
    return run.fired(row, w, f"a member joined; member epoch {before} -> {w.sc.member_epoch} after "
                               f"the snapshot (epoch {ctx['gm']['member_epoch']})")



def _old_broker(run: "FaultRunner", p: dict, row: dict, w, point: str, ctx: dict):
    c = run.cluster
    if tx_pending(c):
        return run.fired(row, w, "downgrade refused: records are TX_PENDING", applied=False)
    c.features.finalize("share.version", 1, tell=False)      # the fault's FaultInjected tells it
    run.old_broker_until = run.wl.step + max(1, p.get("steps", 3))
    return run.fired(row, w, f"share.version 2 -> 1 until step {run.old_broker_until}")



def _invalid_ack_type(run: "FaultRunner", p: dict, row: dict, w, point: str, ctx: dict):
    acks = {k: dict(v) for k, v in ctx["acks"].items()}
    if not acks:
        return run.fired(row, w, "no acknowledgement to spoil", applied=False)
    k = sorted(acks, key=str)[0]
    o = min(acks[k])
    t = p.get("type", 2)
    acks[k][o] = t
    run.fired(row, w, f"offset {o} of {k[0]}-{k[1]} acknowledged with type {t} in the transaction")
    return acks



def _partial_failure(run: "FaultRunner", p: dict, row: dict, w, point: str, ctx: dict):
    c = run.cluster
    acks = {k: dict(v) for k, v in ctx["acks"].items()}
    used = {k[1] for k in acks}
    others = [q for q in range(run.wl.partitions) if q not in used]
    q = others[0] if others else 0
    bogus = c.topics.partition(run.wl.input, q).log_end_offset + 1000
    acks.setdefault((run.wl.input, q), {})[bogus] = 1
    run.fired(row, w, f"the staging also names {run.wl.input}-{q}@{bogus} (not in flight)")
    return acks



def _share_state_leader_change(run: "FaultRunner", p: dict, row: dict, w, point: str, ctx: dict):
    c = run.cluster
    moved = []
    for q in run.staged_state_partitions(ctx["acks"]):
        log = c.topics.partition(SHARE_STATE, q)
        to = p.get("to_broker", (log.leader + 1) % run.wl.brokers) % run.wl.brokers
        run.home.setdefault(q, log.leader)
        c.move_share_state_leader(q, to)
        moved.append(f"{SHARE_STATE}-{q} -> broker {to}")
    return run.fired(row, w, "; ".join(moved) or "nothing staged")



def _marker_never_arrives(run: "FaultRunner", p: dict, row: dict, w, point: str, ctx: dict):
    c = run.cluster
    parts = run.staged_state_partitions(ctx["acks"])
    for q in parts:
        c.txns.markers.hold_for(SHARE_STATE, q)
    outcome = p.get("outcome", "commit")
    run.fired(row, w, f"markers for {', '.join(f'{SHARE_STATE}-{q}' for q in parts)} held; "
                        f"the worker {'commits' if outcome == 'commit' else 'aborts'}")
    pr = ctx["pr"]
    try:
        if outcome == "commit":
            pr.commit_transaction()
            run.wl.stats["transactions_committed"] += 1
        else:
            pr.abort_transaction()
            run.wl.stats["transactions_aborted"] += 1
    finally:
        run.wl.sleep(c.config.group_share_record_lock_duration_ms + 1)
        c.txns.markers.release()
    raise IterationDone



def _concurrent_epochs(run: "FaultRunner", p: dict, row: dict, w, point: str, ctx: dict):
    c = run.cluster
    pr = ctx["pr"]
    body = {"TransactionalId": pr.transactional_id, "GroupId": run.wl.group, "ProducerId": pr.producer_id,
            "ProducerEpoch": pr.producer_epoch - 1, "MemberId": ctx["gm"]["member_id"],
            "MemberEpoch": ctx["gm"]["member_epoch"],
            "Topics": [{"TopicId": run.wl.input_id, "Partitions": [
                {"PartitionIndex": k[1], "AcknowledgementBatches": [
                    {"FirstOffset": o, "LastOffset": o, "AcknowledgeTypes": [t]} for o, t in sorted(v.items())]}
                for k, v in sorted(ctx["acks"].items(), key=lambda kv: kv[0][1])]}]}
    resp = c.call("TxnShareAcknowledge", 0, body, broker=0, client=f"{w.name}-stale-request")
    err = "no answer" if resp is None else NAME.get(resp["ErrorCode"], resp["ErrorCode"])
    return run.fired(row, w, f"a TxnShareAcknowledge at epoch {pr.producer_epoch - 1} (current "
                               f"{pr.producer_epoch}) arrived: {err}")


# kind -> how it is armed (the default point of its worker's iteration; None: at the start of its
# step), what it does and its injector (above); the corner case is KIP-1289's
FAULTS: dict[str, FaultKind] = {k.kind: k for k in (
    FaultKind("broker-crash", 1, "after-stage", "crash a broker (the share-partition leader), restart it later",
              _broker_crash),
    FaultKind("coordinator-unavailable", 2, None, "the next share-state registrations fail", _coordinator_unavailable),
    FaultKind("zombie-producer", 3, "after-produce", "a new producer instance fences the worker's", _zombie_producer),
    FaultKind("duplicate-marker", 5, "after-commit", "the last commit's markers are sent again", _duplicate_marker),
    FaultKind("lock-expiry", 6, "after-produce", "the worker stalls past the acquisition lock", _lock_expiry),
    FaultKind("lock-expiry-tx-pending", 6, "after-stage", "the worker stalls past the lock while TX_PENDING",
              _lock_expiry),
    FaultKind("transaction-timeout", 7, "after-stage", "the worker dies; the coordinator aborts on its timeout",
              _transaction_timeout),
    FaultKind("rebalance", 8, "after-snapshot", "a member joins between shareGroupMetadata() and the staging",
              _rebalance),
    FaultKind("old-broker", 9, None, "share.version 1 for some steps", _old_broker),
    FaultKind("invalid-ack-type", 10, "after-snapshot", "one acknowledgement is RELEASE / RENEW / GAP",
              _invalid_ack_type),
    FaultKind("partial-failure", 11, "after-snapshot", "the staging names records not in flight", _partial_failure),
    FaultKind("share-state-leader-change", 12, "after-stage", "__share_group_state-N's leader moves",
              _share_state_leader_change),
    FaultKind("marker-never-arrives", 13, "after-stage", "the markers are held past the lock", _marker_never_arrives),
    FaultKind("concurrent-epochs", 14, "after-snapshot", "an old TxnShareAcknowledge at the previous epoch arrives",
              _concurrent_epochs),
)}
# kind -> KIP-1289 corner case
FAULT_KINDS = {k: f.case for k, f in FAULTS.items()}
# the faults after which the KIP promises exactly-once except its documented windows (cases 1, 12)
DEFAULT_KINDS = tuple(k for k in FAULT_KINDS if k != "lock-expiry-tx-pending")


@dataclass(frozen=True)
class Fault:
    """One scheduled fault: at step `at`, of `kind` (FAULT_KINDS), with `params`."""
    at: int
    kind: str
    params: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault kind {self.kind!r}; known: {', '.join(FAULT_KINDS)}")
        if not isinstance(self.at, int) or self.at < 0:
            raise ValueError(f"fault step must be an int >= 0, got {self.at!r}")

    @property
    def case(self) -> int:
        return FAULT_KINDS[self.kind]

    @property
    def point(self) -> str | None:
        default = FAULTS[self.kind].point
        if default is None:
            return None
        p = self.params.get("point", default)
        return None if p == "idle" else p

    @classmethod
    def of(cls, x) -> "Fault":
        if isinstance(x, Fault):
            return x
        if isinstance(x, dict):
            return cls(x["at"], x["kind"], dict(x.get("params") or {}))
        at, kind, *rest = x
        return cls(at, kind, dict(rest[0]) if rest and rest[0] else {})


def random_faults(seed, *, steps: int, count: int = 5, kinds=DEFAULT_KINDS, brokers: int = 3,
                  consumers: int | None = None) -> list[Fault]:
    """A reproducible random schedule: `count` faults of `kinds` at steps in [0, steps), with
    random points and parameters (brokers, down times, outcomes)."""
    rng = seed if isinstance(seed, random.Random) else random.Random(seed)
    kinds = list(kinds)
    out = []
    for _ in range(count):
        kind = rng.choice(kinds)
        p: dict = {}
        if kind == "broker-crash":
            p = {"broker": rng.randrange(brokers), "point": rng.choice(("after-stage", "after-poll", "idle")),
                 "down_ms": rng.choice((50, 300, 1500, 5000))}
        elif kind == "coordinator-unavailable":
            p = {"count": rng.choice((1, 2, 3, 30))}
        elif kind == "zombie-producer":
            p = {"point": rng.choice(("after-produce", "after-stage"))}
        elif kind == "duplicate-marker":
            p = {"when": rng.choice(("now", "next-stage"))}
        elif kind == "lock-expiry":
            p = {"point": rng.choice(("after-poll", "after-produce"))}
        elif kind == "old-broker":
            p = {"steps": rng.choice((1, 3, 10))}
        elif kind == "invalid-ack-type":
            p = {"type": rng.choice((0, 2, 4))}
        elif kind == "share-state-leader-change":
            p = {"to_broker": rng.randrange(brokers)}
        elif kind == "marker-never-arrives":
            p = {"outcome": rng.choice(("commit", "abort"))}
        if consumers and rng.random() < 0.5:
            p["worker"] = rng.randrange(consumers)
        out.append(Fault(rng.randrange(max(1, steps)), kind, p))
    return sorted(out, key=lambda f: f.at)

class FaultRunner:
    """Runs one workload's fault schedule (`wl`: a ShareEosWorkload): fires or arms each fault when
    its step comes, fires the armed ones at their point, keeps the rows, and heals before the drain."""

    def __init__(self, wl, schedule: list[Fault]):
        self.wl, self.cluster = wl, wl.cluster
        self.schedule = schedule
        self.next = 0                            # the first fault of `schedule` not yet due
        self.rows: list[dict] = []               # WorkloadResult.faults
        self.registration_errors: list[str] = []
        self.old_broker_until: int | None = None
        self.home: dict[int, int] = {}           # share-state partitions a fault moved -> their broker

    def fire_due(self) -> None:
        """Arm (on its worker) or fire (at once) every fault due at the workload's step."""
        while self.next < len(self.schedule) and self.schedule[self.next].at <= self.wl.step:
            f = self.schedule[self.next]
            self.next += 1
            row = {"at": f.at, "kind": f.kind, "case": f.case, "params": dict(f.params), "fired_step": None,
                   "worker": None, "applied": False, "outcome": "not reached"}
            self.rows.append(row)
            if f.point is None:
                self.apply(f, row, None, "idle", {})
            else:
                w = self.wl.workers[f.params.get("worker", f.at) % len(self.wl.workers)]
                row["worker"] = w.name
                w.armed.append((f, row))
        if self.old_broker_until is not None and self.wl.step >= self.old_broker_until:
            self.restore_share_version()

    def hook(self, w, point: str, **ctx):
        """Worker `w` reached `point`: fire what is armed there; returns acknowledgements a fault changed."""
        out = None
        if point == "after-stage" and w.dup_markers:
            (markers, row), w.dup_markers = w.dup_markers, []
            codes = self.send_markers(markers)
            row["outcome"] += f"; sent while the next transaction's acks are TX_PENDING: {codes}"
            self.cluster.emit(ev.FaultInjected, fault="duplicate-marker", case=5, worker=w.name,
                              outcome=f"{len(markers)} marker(s) of the previous transaction sent again: {codes}")
        for f, row in list(w.armed):
            if f.point == point:
                w.armed.remove((f, row))
                got = self.apply(f, row, w, point, ctx)
                if got is not None:
                    out = ctx["acks"] = got
        return out

    def fired(self, row: dict, w, outcome: str, applied: bool = True) -> None:
        """Record a firing: its row and a FaultInjected event."""
        row.update(fired_step=self.wl.step, applied=applied, outcome=outcome)
        if w is not None:
            row["worker"] = w.name
        self.wl.stats["faults_fired"] += applied
        self.cluster.emit(ev.FaultInjected, fault=row["kind"], case=row["case"], outcome=outcome,
                          worker=row["worker"], params=tuple(row["params"].items()))

    def apply(self, f: Fault, row: dict, w, point: str, ctx: dict):
        """Inject fault `f` at `point` (its kind's injector, FAULTS); returns what that kind hands back."""
        return FAULTS[f.kind].inject(self, f.params, row, w, point, ctx)

    def staged_state_partitions(self, acks: dict) -> list[int]:
        """The __share_group_state-N partitions of the input partitions in `acks`."""
        n = self.cluster.config.share_state_topic_partitions
        return sorted({share_coordinator_partition(self.wl.group, self.wl.input_id, k[1], n) for k in acks})

    def send_markers(self, markers) -> list[str]:
        """Send (topic, partition, producer id, epoch, commit) markers again; their error names."""
        c = self.cluster
        codes = []
        for topic, part, pid, epoch, commit in markers:
            log = c.topics.partition(topic, part)
            resp = c.call("WriteTxnMarkers", 2, {"Markers": [{
                "ProducerId": pid, "ProducerEpoch": epoch, "TransactionResult": commit,
                "Topics": [{"Name": topic, "PartitionIndexes": [part]}], "CoordinatorEpoch": 0,
                "TransactionVersion": 2}]}, broker=log.leader, client="duplicate-markers")
            if resp is None:
                codes.append(f"{topic}-{part}: no answer")
            else:
                code = resp["Markers"][0]["Topics"][0]["Partitions"][0]["ErrorCode"]
                codes.append(f"{topic}-{part}: {NAME.get(code, code)}")
        return codes

    def fail_registrations(self, errors: list[str]) -> None:
        """Scenario kip1289.case02's fault: the broker-internal registration answers these errors."""
        txns = self.cluster.txns
        if not self.registration_errors and "add_state_partitions" not in txns.share.__dict__:
            real = txns.share.add_state_partitions
            queue = self.registration_errors

            def registration(transactional_id, producer_id, producer_epoch, partitions, **kw):
                if queue:
                    err = queue.pop(0)
                    self.cluster.emit(ev.RegistrationFailed, error=err)
                    return CODE[err]
                return real(transactional_id, producer_id, producer_epoch, partitions, **kw)
            txns.share.add_state_partitions = registration
        self.registration_errors.extend(errors)

    def restart(self, b: int) -> None:
        """Restart broker `b` if it is still down (a broker-crash fault's timer)."""
        if b in self.cluster.down:
            self.cluster.restart_broker(b)

    def restore_share_version(self) -> None:
        """The old-broker fault ends: share.version is finalized at 2 again."""
        self.old_broker_until = None
        if self.cluster.features.level("share.version") != 2:
            self.cluster.features.finalize("share.version", 2, by="workload", how="the old-broker fault ends",
                                           status=STATUS, kip=KIP)

    def return_state_leaders(self) -> None:
        """After the step that moved a share-state leader (case 12): leadership returns home (a
        preferred-leader election). While it is away KIP-1289 as written would lose every later
        staging of the share partitions it serves (no longer co-located), which is not case 12."""
        for q, home in sorted(self.home.items()):
            self.cluster.move_share_state_leader(q, home)
        self.home.clear()

    def heal(self) -> None:
        """Before draining: every scheduled fault that has not fired is dropped, crashed brokers
        restart, held markers go out, share.version is back to 2, registrations succeed."""
        for w in self.wl.workers:
            w.armed.clear()
        for f in self.schedule[self.next:]:
            self.rows.append({"at": f.at, "kind": f.kind, "case": f.case, "params": dict(f.params),
                              "fired_step": None, "worker": None, "applied": False, "outcome": "not reached"})
        self.next = len(self.schedule)
        for b in sorted(self.cluster.down):
            self.cluster.restart_broker(b)
        txns = self.cluster.__dict__.get("txns")
        if txns is not None and (txns.markers.held_partitions or txns.markers.hold):
            txns.markers.release()
        self.restore_share_version()
        self.registration_errors.clear()
