"""Everything the model does is recorded as one of these typed events, in order. They are the only
input to sequence diagrams, animations and sample logs.

The envelope (Event: seq, t) and the wire (RequestReceived, ResponseSent), state machines
(StateChanged) and logs (RecordAppended) are below; every other thing that happens is one small
class of its own with typed fields, under Happened (the broker, the coordinators, operators and
workloads) or ClientDid (a client model's decisions). Each says what it is in one sentence
(`text`), built from its fields, and cites the Kafka source it follows. Readers match classes and
read fields; no event carries a free-form dict."""
from __future__ import annotations

from dataclasses import MISSING, asdict, dataclass, field, fields
from typing import ClassVar, NamedTuple


@dataclass(frozen=True, slots=True)
class Event:
    seq: int
    t: int                    # virtual time, ms

    @property
    def kind(self) -> str:
        return type(self).__name__

    def to_dict(self) -> dict:
        return {"kind": self.kind, **asdict(self)}


@dataclass(frozen=True, slots=True)
class RequestReceived(Event):
    broker: int
    client: str
    api: str
    version: int
    correlation_id: int
    body: dict
    frame: bytes = field(repr=False, default=b"")


@dataclass(frozen=True, slots=True)
class ResponseSent(Event):
    broker: int
    client: str
    api: str
    version: int
    correlation_id: int
    body: dict
    error_codes: tuple[int, ...] = ()         # distinct non-zero ErrorCodes anywhere in the body
    frame: bytes = field(repr=False, default=b"")


@dataclass(frozen=True, slots=True)
class StateChanged(Event):
    machine: str              # table name, e.g. "transaction", "classic-group", "consumer-member"
    key: str                  # which instance: a transactional id, a group id, "group/member"
    from_state: str
    to_state: str
    cause: str                # the event of the table row that fired
    status: str = "released"  # released / accepted / proposed: the row's label


@dataclass(frozen=True, slots=True)
class RecordAppended(Event):
    topic: str
    partition: int
    offset: int
    record: dict              # decoded view (internal-topic record, data record or control marker)
    key: bytes | None = field(repr=False, default=None)
    value: bytes | None = field(repr=False, default=None)
    producer_id: int = -1
    producer_epoch: int = -1
    transactional: bool = False
    control: bool = False
    broker: int = 0


@dataclass(frozen=True, slots=True)
class Happened(Event):
    """Base of the typed things that happen. `SAYS` is the sentence, formatted with the event's
    fields (a class whose sentence needs more overrides `text`)."""
    SAYS: ClassVar[str] = ""

    @property
    def text(self) -> str:
        return self.SAYS.format_map({f.name: getattr(self, f.name) for f in fields(self)})


@dataclass(frozen=True, slots=True)
class ClientDid(Happened):
    """Base of a client model's decisions (a version chosen, a retry, a rebalance step)."""
    client: str


# ---- the broker and the cluster --------------------------------------------------------------------


# ---- groups (classic, consumer, share) and offsets ------------------------------------------------


# ---- transactions and KIP-1289 --------------------------------------------------------------------

_KIT = "share_marker_routing={routing}: kit's suggestion, not KIP-1289"


@dataclass(frozen=True, slots=True)
class ProducerIdRenewed(Happened):
    """InitProducerId found the epoch exhausted and gave the transactional id a new producer id
    (core/.../transaction/TransactionCoordinator.scala: handleInitProducerId)."""
    transactional_id: str
    old_producer_id: int
    new_producer_id: int
    epoch: int
    SAYS: ClassVar[str] = "{transactional_id}: epoch {epoch} exhausted, new producer id {new_producer_id}"


@dataclass(frozen=True, slots=True)
class TransactionTimedOut(Happened):
    """An Ongoing transaction ran past transaction.timeout.ms and is aborted
    (core/.../transaction/TransactionStateManager.scala: timedOutTransactions)."""
    transactional_id: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    started: int
    SAYS: ClassVar[str] = "{transactional_id}: transaction timed out after {timeout_ms} ms, aborting"


@dataclass(frozen=True, slots=True)
class PartitionAddedToTxn(Happened):
    """A broker's own AddPartitionsToTxn (add, or verifyOnly) for one partition, for a Produce or
    TxnOffsetCommit (core/.../server/AddPartitionsToTxnManager.scala: addOrVerifyTransaction)."""
    version: int
    verify_only: bool
    transactional_id: str | None
    producer_id: int
    producer_epoch: int
    topic: str
    partition: int
    via: str
    error_code: int
    coordinator: int | None

    @property
    def text(self) -> str:
        return (f"AddPartitionsToTxn v{self.version} ({'verifyOnly' if self.verify_only else 'add'}) "
                f"for {self.topic}-{self.partition} from {self.via}")


@dataclass(frozen=True, slots=True)
class MarkersHeldBack(Happened):
    """A scenario's fault: the coordinator's markers for one partition do not reach its leader
    (core/.../transaction/TransactionMarkerChannelManager.scala is where they would queue)."""
    topic: str
    partition: int
    SAYS: ClassVar[str] = "markers for {topic}-{partition} held back"


@dataclass(frozen=True, slots=True)
class MarkerDropped(Happened):
    """No leader for a partition of the transaction (it is gone): its marker is dropped
    (core/.../transaction/TransactionMarkerChannelManager.scala: addTxnMarkersToBrokerQueue)."""
    transactional_id: str
    topic: str
    partition: int
    SAYS: ClassVar[str] = "{transactional_id}: no marker for {topic}-{partition} (partition gone)"


@dataclass(frozen=True, slots=True)
class MarkerSent(Happened):
    """The transaction coordinator's WriteTxnMarkers to one partition's leader
    (core/.../transaction/TransactionMarkerChannelManager.scala)."""
    broker: int
    coordinator: int
    transactional_id: str
    topic: str
    partition: int
    marker: str
    producer_id: int
    producer_epoch: int
    SAYS: ClassVar[str] = "WriteTxnMarkers {marker} -> broker {broker}: {topic}-{partition}"


@dataclass(frozen=True, slots=True)
class ShareAckRejected(Happened):
    """TxnShareAcknowledge failed on a partition: nothing staged, all or nothing (KIP-1289, proposed;
    docs/modelling-a-kip.md)."""
    group: str
    member: str
    transactional_id: str
    status: str = "proposed"
    kip: str = "KIP-1289"
    SAYS: ClassVar[str] = "TxnShareAcknowledge rejected, nothing staged (KIP-1289, proposed)"


@dataclass(frozen=True, slots=True)
class ShareAckStaged(Happened):
    """TxnShareAcknowledge moved acquired records to TX_PENDING under the producer's id and epoch
    (KIP-1289, proposed; the staging side of share-partition leader, kipviz.broker.share_txn)."""
    group: str
    member: str
    transactional_id: str
    producer_id: int
    producer_epoch: int
    records: int
    state_partitions: tuple[tuple[str, int], ...]
    broker: int
    status: str = "proposed"
    kip: str = "KIP-1289"
    SAYS: ClassVar[str] = "TxnShareAcknowledge staged {records} record(s) in TX_PENDING (KIP-1289, proposed)"


@dataclass(frozen=True, slots=True)
class ShareStatePartitionsAdded(Happened):
    """The share-partition leader's broker-internal AddPartitionsToTxn of __share_group_state-N
    (KIP-1289, proposed; as AddPartitionsToTxnManager.scala's TV2 implicit add)."""
    transactional_id: str
    producer_id: int
    producer_epoch: int
    partitions: tuple[tuple[str, int], ...]
    via: str
    error_code: int
    coordinator: int
    status: str = "proposed"
    kip: str = "KIP-1289"

    @property
    def text(self) -> str:
        return (f"AddPartitionsToTxn (broker-internal, KIP-1289 proposed) for "
                f"{', '.join(f'{t}-{p}' for t, p in self.partitions)} from {self.via}")


@dataclass(frozen=True, slots=True)
class ShareParticipantsAdded(Happened):
    """share_marker_routing "participants" (the kit's suggestion, not KIP-1289): share partitions
    registered as transaction participants (as AddPartitionsToTxnManager.scala's implicit add)."""
    transactional_id: str
    producer_id: int
    producer_epoch: int
    broker: int
    via: str
    share_participants: tuple[tuple[str, str, int], ...]     # (group, topic id, partition)
    share_partitions: tuple[str, ...]                        # "group/topic-partition"
    error_code: int
    coordinator: int
    suggestion: str = "kit"
    status: str = "proposed"
    kip: str = "KIP-1289"

    @property
    def text(self) -> str:
        return (f"AddPartitionsToTxn (broker-internal) registers share partition(s) "
                f"{', '.join(self.share_partitions)} as participants from {self.via} on broker {self.broker} "
                f"(share_marker_routing=participants: kit's suggestion, not KIP-1289)")


@dataclass(frozen=True, slots=True)
class ShareMarkerSent(Happened):
    """share_marker_routing "participants" (the kit's suggestion, not KIP-1289): the coordinator's
    WriteTxnMarkers to a share partition's leader (as TransactionMarkerChannelManager.scala's)."""
    broker: int
    coordinator: int
    transactional_id: str
    group: str
    topic: str
    partition: int
    marker: str
    producer_id: int
    producer_epoch: int
    suggestion: str = "kit"
    status: str = "proposed"
    kip: str = "KIP-1289"
    SAYS: ClassVar[str] = ("WriteTxnMarkers {marker} -> broker {broker}: share partition {group}/{topic}-{partition} "
                           "(share_marker_routing=participants: kit's suggestion, not KIP-1289)")


@dataclass(frozen=True, slots=True)
class ShareMarkerDropped(Happened):
    """share_marker_routing "participants": the share partition's topic is gone, its marker dropped
    (as TransactionMarkerChannelManager.scala does for a partition with no leader)."""
    transactional_id: str
    group: str
    topic_id: str
    partition: int
    suggestion: str = "kit"
    SAYS: ClassVar[str] = "{transactional_id}: no marker for share partition {group}/{topic_id}-{partition} (partition gone)"


@dataclass(frozen=True, slots=True)
class MarkerForwarded(Happened):
    """share_marker_routing "forward-to-leader" (the kit's suggestion, not KIP-1289): the broker that
    received a marker on __share_group_state-`partition` forwards it to a share partition's leader."""
    partition: int            # of __share_group_state
    marker_broker: int        # the broker that received the marker
    broker: int               # the share partitions' leader it goes to
    share_partitions: str     # "topic-p, ..."
    producer_id: int
    producer_epoch: int | None
    commit: bool
    routing: str = "forward-to-leader"
    suggestion: str = "kit"
    status: str = "proposed"
    kip: str = "KIP-1289"

    @property
    def marker(self) -> str:
        return "COMMIT" if self.commit else "ABORT"

    @property
    def text(self) -> str:
        return (f"broker {self.marker_broker} forwards the {self.marker} marker of __share_group_state-"
                f"{self.partition} to broker {self.broker}, leader of {self.share_partitions} "
                f"({_KIT.format(routing=self.routing)})")


@dataclass(frozen=True, slots=True)
class MarkerResolved(Happened):
    """A KIP-1289 marker reached a broker and resolved `records` TX_PENDING records (0: `reason` says
    why none); the KIP's hook on __share_group_state-N (`participant` False: `partition` is N) or the
    kit's participant marker (True: `partition` is the share partition's) (kipviz.broker.share_txn)."""
    broker: int
    marker_broker: int
    partition: int
    producer_id: int
    producer_epoch: int | None
    commit: bool
    routing: str
    records: int
    share_partitions: str = ""            # the state-partition hook: "topic-p, ..." it reached
    group: str | None = None              # a participant marker: the share partition
    topic: str | None = None
    offsets: tuple[int, ...] = ()
    reason: str = ""                      # why nothing moved
    forwarded_by: int | None = None
    participant: bool = False
    missing: bool = False                 # a participant marker for a share partition that is not there
    topic_id: str = ""
    status: str = "proposed"
    kip: str = "KIP-1289"

    @property
    def marker(self) -> str:
        return "COMMIT" if self.commit else "ABORT"

    @property
    def suggestion(self) -> str | None:
        """"kit" when the kit's suggestion (not KIP-1289) carried the marker here."""
        return "kit" if self.participant or self.forwarded_by is not None else None

    @property
    def text(self) -> str:
        m, b = self.marker, self.broker
        if self.participant:
            how = f"({_KIT.format(routing=self.routing)})"
            if self.missing:
                return (f"{m} marker for share partition {self.group}/{self.topic_id}-{self.partition} on broker "
                        f"{b}: no such share partition {how}")
            name = f"{self.group}/{self.topic}-{self.partition}"
            if self.records:
                return (f"{m} marker for share partition {name}: broker {b}, its leader, resolved {self.records} "
                        f"TX_PENDING record(s) {how} (KIP-1289, proposed)")
            return f"{m} marker for share partition {name} resolved nothing on broker {b}: {self.reason} {how} (KIP-1289, proposed)"
        where = f"__share_group_state-{self.partition}"
        how = "" if self.forwarded_by is None else \
            f" (forwarded by broker {self.forwarded_by}: kit's suggestion, not KIP-1289)"
        if self.records:
            return (f"{m} marker on {where}: broker {b} resolved {self.records} TX_PENDING record(s) of "
                    f"{self.share_partitions}{how} (KIP-1289, proposed)")
        return f"{m} marker on {where} resolved nothing on broker {b}{how}: {self.reason} (KIP-1289, proposed)"


class Unreached(NamedTuple):
    """Records of one share partition a KIP-1289 marker did not reach (MarkerUnreached.unreached)."""
    group: str
    topic: str
    partition: int
    offsets: tuple[int, ...]
    leader: int | None
    reason: str                        # "not-colocated" or "leader-change" (corner case 12)
    staged_state_leader_epoch: int
    state_leader_epoch: int


@dataclass(frozen=True, slots=True)
class MarkerUnreached(Happened):
    """A KIP-1289 marker on __share_group_state-`partition` reached `broker` only, and the records it
    would have resolved are on share partitions led elsewhere (KIP-1289 as written: the hook
    resolves the SharePartition instances of the receiving broker; kipviz.broker.share_txn)."""
    broker: int
    partition: int
    producer_id: int
    producer_epoch: int | None
    commit: bool
    routing: str
    unreached: tuple[Unreached, ...]
    records: int = 0
    status: str = "proposed"
    kip: str = "KIP-1289"

    @property
    def marker(self) -> str:
        return "COMMIT" if self.commit else "ABORT"

    @property
    def text(self) -> str:
        where = f"__share_group_state-{self.partition}"
        said = "; ".join(_unreached_text(u, self.broker, where) for u in self.unreached)
        return f"{self.marker} marker on {where} resolved nothing on broker {self.broker} for {said} (KIP-1289, proposed)"


def _unreached_text(u: Unreached, receiver: int, where: str) -> str:
    head = f"{u.topic}-{u.partition} @{','.join(map(str, u.offsets))}, led by broker {u.leader}"
    if u.reason == "leader-change":
        return (f"{head}: staged under share-state leader epoch {u.staged_state_leader_epoch}, the leader is now "
                f"at {u.state_leader_epoch}: {where}'s leader changed since the staging, the new leader broker "
                f"{receiver} does not hold that TX_PENDING (corner case 12); the records stay TX_PENDING until their "
                "lock expires")
    return (f"{head}, not by broker {receiver}: KIP-1289's hook resolves only the SharePartition instances on "
            "the broker that receives the marker, so these stay TX_PENDING until their lock expires, are "
            "redelivered and processed again (share partition and state partition not co-located: no window "
            "the KIP lists)")


@dataclass(frozen=True, slots=True)
class AcquisitionLockExpired(Happened):
    """Acquired records whose acquisition lock ran out go back to AVAILABLE (TX_PENDING first to
    ACQUIRED, KIP-1289 corner case 6) (core/.../server/share/SharePartition.java: acquisitionLockTimerTask)."""
    group: str
    topic: str
    partition: int
    offsets: tuple[int, ...]
    SAYS: ClassVar[str] = "acquisition lock expired on {topic}-{partition}"


@dataclass(frozen=True, slots=True)
class SharePartitionReloaded(Happened):
    """A share partition rebuilt from __share_group_state (a new leader, a restart): in-flight records
    back to AVAILABLE (core/.../server/share/SharePartition.java: maybeInitialize)."""
    group: str
    topic: str
    partition: int
    why: str
    offsets: tuple[int, ...]           # the records that were in flight (ACQUIRED or TX_PENDING)
    spso: int
    state_epoch: int

    @property
    def text(self) -> str:
        return (f"share partition {self.group}/{self.topic}-{self.partition} reloaded from __share_group_state "
                f"after {self.why}: {len(self.offsets)} in-flight record(s) back to AVAILABLE")


@dataclass(frozen=True, slots=True)
class ShareGroupCreated(Happened):
    """The first ShareGroupHeartbeat of a new group id creates the group
    (group-coordinator/.../GroupMetadataManager.java: shareGroupHeartbeat)."""
    group: str
    SAYS: ClassVar[str] = "share group {group} created"


@dataclass(frozen=True, slots=True)
class ShareMemberJoined(Happened):
    """A member joined a share group; the group epoch is bumped
    (group-coordinator/.../GroupMetadataManager.java: shareGroupHeartbeat)."""
    group: str
    member: str
    group_epoch: int
    SAYS: ClassVar[str] = "{member} joined share group {group}"


@dataclass(frozen=True, slots=True)
class ShareMemberRemoved(Happened):
    """A member left a share group, or its session timed out; the group epoch is bumped
    (group-coordinator/.../GroupMetadataManager.java: shareGroupFenceMember)."""
    group: str
    member: str
    group_epoch: int
    why: str
    SAYS: ClassVar[str] = "{member} removed from share group {group}: {why}"


# ---- clients ---------------------------------------------------------------------------------------


# ---- operators, scenarios and workloads ------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FeatureLevelChanged(Happened):
    """A finalized feature level changed (metadata/.../controller/FeatureControlManager.java:
    updateFeatures); `by` the operator (kafka-features.sh upgrade) or a workload's fault ending;
    `how` is the parenthesis of the sentence."""
    feature: str
    level: int
    previous: int
    by: str                    # "operator" or "workload"
    how: str
    status: str = "released"
    kip: str = ""

    @property
    def text(self) -> str:
        if self.by == "operator":
            return f"operator: {self.feature} finalized at {self.level} ({self.how})"
        return f"{self.feature} {self.previous} -> {self.level} ({self.how})"


@dataclass(frozen=True, slots=True)
class FaultInjected(Happened):
    """A workload's or scenario's fault fired (kipviz.workloads.share_eos: the KIP-1289 corner case
    it exercises, `case`, and what happened, `outcome`; docs/modelling-a-kip.md)."""
    fault: str
    case: int
    outcome: str
    worker: str | None = None
    params: tuple[tuple[str, object], ...] = ()
    status: str = "proposed"
    kip: str = "KIP-1289"
    SAYS: ClassVar[str] = "fault: {fault} (KIP-1289 corner case {case}): {outcome}"


@dataclass(frozen=True, slots=True)
class RegistrationFailed(Happened):
    """A fault: the transaction coordinator answers the broker-internal AddPartitionsToTxn of
    KIP-1289's staging with `error` (corner case 2, proposed; kipviz.broker.share_txn)."""
    error: str
    case: int = 2
    status: str = "proposed"
    kip: str = "KIP-1289"
    SAYS: ClassVar[str] = ("fault: the transaction coordinator answers the broker-internal AddPartitionsToTxn "
                           "with {error} (KIP-1289 corner case 2, proposed)")


@dataclass(frozen=True, slots=True)
class WorkloadLayout(Happened):
    """Where ShareEosWorkload placed its partitions: the input and its __share_group_state-N led by one
    broker, co-located on purpose (kipviz.workloads.share_eos)."""
    input: str
    partitions: int
    share_leader: int
    state_partitions: tuple[int, ...]
    routing: str

    @property
    def text(self) -> str:
        return (f"workload layout: {self.input}-0..{self.partitions - 1} and "
                f"{', '.join(f'__share_group_state-{q}' for q in self.state_partitions)} led by broker "
                f"{self.share_leader} (co-located on purpose; marker routing {self.routing!r})")


@dataclass(frozen=True, slots=True)
class ScenarioLayout(Happened):
    """Where a KIP-1289 scenario placed its input partition and its __share_group_state-N
    (kipviz.scenarios.kip1289_errors)."""
    input: str
    state_partition: int
    share_leader: int
    state_leader: int
    colocated: bool

    @property
    def text(self) -> str:
        return (f"layout for this scenario: {self.input}-0 led by broker {self.share_leader}, __share_group_state-"
                f"{self.state_partition} by broker {self.state_leader} "
                f"({'co-located' if self.colocated else 'not co-located'}, placed on purpose)")


@dataclass(frozen=True, slots=True)
class ClientCrashed(Happened):
    """A scenario stops a client process: its clients send nothing more (no heartbeats, no commit)."""
    client: str
    how: str
    SAYS: ClassVar[str] = "{client} crashed ({how})"


@dataclass(frozen=True, slots=True)
class ClientAction(Event):
    """A decision a client model took (version chosen, fallback, retry, abort)."""
    client: str
    action: str
    detail: dict


@dataclass(frozen=True, slots=True)
class Note(Event):
    text: str
    detail: dict = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class LogCleaned(Event):
    """One pass of the log cleaner over a partition (kipviz.broker.cleaner): the batches held below
    offset rewritten_end (whole segments) were rewritten as batches_after batches; the offset map
    covered the dirty offsets [first_dirty_offset, end_offset); kept: the offsets below
    rewritten_end holding a record (or marker) after the pass, as (first, last) runs."""
    topic: str
    partition: int
    first_dirty_offset: int
    end_offset: int
    batches_before: int
    batches_after: int
    bytes_before: int
    bytes_after: int
    records_before: int
    records_removed: int
    log_start_offset: int
    rewritten_end: int = 0
    kept: tuple = ()


class _Factory:
    """The default of a field with a default_factory (dataclasses' own __init__ marks it alike)."""

    def __repr__(self) -> str:
        return "<factory>"


_FACTORY = _Factory()


def _slot_init(cls):
    """An __init__ for frozen slotted event class `cls` that fills each slot through its
    descriptor. The one @dataclass writes calls object.__setattr__ by name for every field, which
    made up about 40 % of creating an event; events are created several times per record. The
    instances stay frozen: assignment still raises FrozenInstanceError."""
    env, params, body = {"_FACTORY": _FACTORY}, [], []
    for i, f in enumerate(fields(cls)):
        env[f"_s{i}"] = getattr(cls, f.name).__set__       # the slot's member descriptor
        if f.default is not MISSING:
            env[f"_d{i}"] = f.default
            params.append(f"{f.name}=_d{i}")
        elif f.default_factory is not MISSING:
            env[f"_f{i}"] = f.default_factory
            params.append(f"{f.name}=_FACTORY")
            body.append(f"    if {f.name} is _FACTORY: {f.name} = _f{i}()")
        else:
            params.append(f.name)
        body.append(f"    _s{i}(self, {f.name})")
    exec(f"def __init__(self, {', '.join(params)}):\n" + "\n".join(body), env)   # noqa: S102 - built from field names
    init = env["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    return init


def event_classes() -> dict[str, type[Event]]:
    """Every event class of this module by its kind (the class name), the envelope and the bases
    left out. (Read from the module, not __subclasses__: a slotted dataclass is a copy of the class
    first defined, which stays among the subclasses.)"""
    return {name: cls for name, cls in sorted(globals().items()) if not name.startswith("_")
            and isinstance(cls, type) and issubclass(cls, Event) and cls not in (Event, Happened, ClientDid)}


for _cls in (Event, Happened, ClientDid, *event_classes().values()):
    _cls.__init__ = _slot_init(_cls)
del _cls
