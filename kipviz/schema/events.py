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
from typing import ClassVar


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


# ---- clients ---------------------------------------------------------------------------------------


# ---- operators, scenarios and workloads ------------------------------------------------------------


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
