"""The KIP-1289 page's two read-process-write flows as data: which events of a run form the flow,
which of the eight common steps each event belongs to, and on which broker the share-record moves
of a marker happened. kipviz.draw.flows draws what this module decides; nothing here draws.

    runs = flow_runs()                      # (regular Trace, share Trace): the defaults below
    share = share_run("kip1289.marker_forwarded")   # one share-side run (kipviz.draw.flows.share_flow)
    w = flow_window(events)                 # the first committed transaction, from the consumer's read
    steps = classify(events[w.lo:w.hi], clients=(w.consumer, w.producer))   # {seq: step 1-8}
    where = resolved_on(events)             # {seq of a share-record move: broker that made it}

Classification reads typed fields only: request/response API names, state machines and their
states, record topics and control flags, the class of a typed event (EVENT_STEPS: a KIP-1289
staging, a marker sent, forwarded, resolved or unreached; an AddPartitionsToTxn's partitions, the offsets' staging and
resolution), never a text.

Defaults: the regular flow is "txn.read_process_write_commit" on a 3-broker Kafka 4.0 model with
transaction.version 1 (the KIP text's explicit AddPartitionsToTxn and AddOffsetsToTxn); the share
flow is "kip1289.marker_not_colocated" on 3 brokers, KIP-1289 as written (share_marker_routing
"page") with the share partition and its state partition led by different brokers: in-0 is led by
broker 0 and the group's __share_group_state-N by broker 1, the COMMIT marker reaches broker 1, which
does not lead in-0, so the staged records stay TX_PENDING (kipviz.broker.share_txn): the run named
for what it shows, exactly-once broken at step 7 (the same happens to kip1289.happy_commit on 3
brokers with seed 0; on its own single broker it is the happy path)."""
from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from ..errors import KipvizError
from ..schema import events as E
from ..schema.topics import CONSUMER_OFFSETS, INTERNAL_TOPICS, SHARE_GROUP_STATE

__all__ = ["STEPS", "FlowError", "Window", "flow_window", "classify", "resolved_on", "flow_runs", "share_run", "events_of",
           "REGULAR_SCENARIO", "SHARE_SCENARIO"]

STEPS: dict[int, str] = {
    1: "read the input records",
    2: "write the output; the output partition joins the transaction",
    3: "hand the read progress to the transaction; the group's internal partition joins it",
    4: "stage the progress until the marker",
    5: "commit requested: EndTxn(COMMIT), PrepareCommit",
    6: "WriteTxnMarkers: COMMIT markers on every participant",
    7: "the COMMIT marker applies the staged progress",
    8: "transaction complete: CompleteCommit, EndTxn answered",
}
REGULAR_SCENARIO = "txn.read_process_write_commit"
SHARE_SCENARIO = "kip1289.marker_not_colocated"
READS = ("Fetch", "ShareFetch")
# typed event -> flow step
EVENT_STEPS = {E.ShareAckStaged: 4, E.MarkerResolved: 7, E.MarkerForwarded: 7, E.MarkerUnreached: 7,
               E.MarkerSent: 6, E.ShareMarkerSent: 6, E.OffsetsStaged: 4, E.OffsetsResolved: 7}


class FlowError(KipvizError, ValueError):
    """The events hold no read-process-write transaction that commits (or cannot be read)."""


# ---- inputs ------------------------------------------------------------------------------------------
def _run(name: str, seed: int, settings: dict):
    from . import get, run
    try:
        get(name)
    except KeyError as e:
        raise FlowError(e.args[0] if e.args else str(e)) from None
    return run(name, seed=seed, **settings)


def flow_runs(regular=None, share=None, *, seed: int = 0, brokers: int = 3, regular_transaction_version: int = 1):
    """(regular, share): each given one as it is (a Trace, Cluster or event list), a scenario name
    run with `seed` on `brokers` brokers, or None for the default (module docstring); False: not
    run (None in its place)."""
    if regular is False:
        regular = None
    elif regular is None or isinstance(regular, str):
        regular = _run(regular or REGULAR_SCENARIO, seed, {"brokers": brokers, "release": "4.0",
                                                            "transaction_version": regular_transaction_version})
    if share is None or isinstance(share, str):
        share = _run(share or SHARE_SCENARIO, seed, {"brokers": brokers})
    return regular, share


def share_run(share=None, *, seed: int = 0, brokers: int = 3):
    """The share side's run alone: `share` as flow_runs takes it (None: the default scenario)."""
    return flow_runs(False, share, seed=seed, brokers=brokers)[1]


def events_of(x, what: str) -> tuple[list, str]:
    """(events, a label naming where they came from) of a Trace, Cluster or event list."""
    name = getattr(getattr(x, "scenario", None), "name", None)
    evs = getattr(x, "events", x)
    if isinstance(evs, (str, bytes)) or not isinstance(evs, Iterable):
        raise FlowError(f"{what}: expected a Trace, a Cluster, a list of events or a scenario name, "
                        f"not {type(x).__name__}")
    evs = list(evs)
    bad = next((e for e in evs if not isinstance(e, E.Event)), None)
    if bad is not None:
        raise FlowError(f"{what}: {type(bad).__name__} is not a kipviz.schema.events event")
    return evs, name or f"{len(evs)} events"


# ---- which events belong to the flow ----------------------------------------------------------------
class Window(NamedTuple):
    lo: int                 # events[lo:hi] is the flow
    hi: int
    consumer: str           # the client that read the input
    producer: str           # the client whose transaction committed


# size: one window over a flow's events with a branch per event kind: a flat table of cases sharing the window's state
def flow_window(events: list) -> Window:
    """The first transaction that commits, from the consumer's first read after the producer's
    previous EndTxn up to the commit's EndTxn response."""
    reqs: dict = {}
    commit_req = commit_resp = None
    for e in events:
        if isinstance(e, E.RequestReceived) and e.api == "EndTxn":
            reqs[(e.broker, e.client, e.correlation_id)] = e
        elif isinstance(e, E.ResponseSent) and e.api == "EndTxn" and not e.error_codes:
            req = reqs.get((e.broker, e.client, e.correlation_id))
            if req is not None and (req.body or {}).get("Committed"):
                commit_req, commit_resp = req, e
                break
    if commit_resp is None:
        raise FlowError("no transaction commits in these events (no EndTxn(COMMIT) answered without error)")
    index = {id(e): i for i, e in enumerate(events)}
    hi = index[id(commit_resp)] + 1
    producer = commit_req.client
    start = 0
    for i in range(index[id(commit_req)] - 1, -1, -1):
        e = events[i]
        if isinstance(e, E.ResponseSent) and e.api == "EndTxn" and e.client == producer:
            start = i + 1
            break
    first_write = next((i for i in range(start, hi) if isinstance(events[i], E.RequestReceived)
                        and events[i].client == producer and events[i].api not in
                        ("ApiVersions", "Metadata", "FindCoordinator", "InitProducerId")), hi)
    reads = [i for i in range(start, first_write) if isinstance(events[i], E.RequestReceived)
             and events[i].api in READS and events[i].client != producer]
    if not reads:
        raise FlowError(f"no Fetch / ShareFetch before producer {producer!r}'s transaction: not a "
                        "read-process-write loop")
    consumer = events[reads[-1]].client
    lo = next(i for i in reads if events[i].client == consumer)
    return Window(lo, hi, consumer, producer)


def _request_step(api: str | None, offsets_added: bool) -> int | None:
    if api in READS:
        return 1
    if api in ("Produce", "AddPartitionsToTxn"):
        return 2
    if api == "AddOffsetsToTxn":
        return 3
    if api == "TxnOffsetCommit":
        return 4 if offsets_added else 3        # TV2: its broker-side add is step 3
    return {"TxnShareAcknowledge": 3, "EndTxn": 5, "WriteTxnMarkers": 6}.get(api)


def _event_step(e: E.Happened, cur: int | None) -> int | None:
    s = EVENT_STEPS.get(type(e))
    if s is not None:
        return s
    if isinstance(e, E.PartitionAddedToTxn):
        return cur if e.verify_only else (3 if e.topic in INTERNAL_TOPICS else 2)
    if isinstance(e, E.ShareStatePartitionsAdded):
        return 3 if any(t in INTERNAL_TOPICS for t, _ in e.partitions) else 2
    if isinstance(e, E.ShareParticipantsAdded):   # KIP-1289 with the kit's participants: the progress joins
        return 3 if e.share_participants else 2
    return cur


# size: one classification table over a flow's events, first match wins: the order of the cases is the rule
def classify(events: list, clients: Iterable[str] | None = None) -> dict[int, int]:
    """{event seq: step (1-8, see STEPS)} for one flow's events; events in no step are left out.
    A request sets the step its inner events (state changes, records, notes) inherit, unless
    they say more themselves (a marker, a TX_PENDING move, an internal-partition registration, a
    typed event's class). clients: only these clients' requests belong to the flow (others, e.g. a
    checking reader, and what happens while they are handled, are in no step)."""
    only = None if clients is None else set(clients)
    steps: dict[int, int] = {}
    of_request: dict = {}
    cur: int | None = None
    offsets_added = False
    for e in events:
        s: int | None = None
        if isinstance(e, E.RequestReceived):
            api = e.api if only is None or e.client in only else None
            s = _request_step(api, offsets_added)
            offsets_added = offsets_added or api == "AddOffsetsToTxn"
            of_request[(e.broker, e.client, e.correlation_id)] = s
            cur = s
        elif isinstance(e, E.ResponseSent):
            s = of_request.pop((e.broker, e.client, e.correlation_id), None)
            if s == 5:
                s = 8
            elif s == 3 and e.api in ("TxnOffsetCommit", "TxnShareAcknowledge"):
                s = 4
            cur = None
        elif isinstance(e, E.StateChanged):
            if e.machine == "share-record":
                s = {"ACQUIRED": 1, "TX_PENDING": 4}.get(e.to_state) if e.from_state != "TX_PENDING" else 7
                s = s or cur
            elif e.machine == "transaction":
                s = {"PrepareCommit": 5, "CompleteCommit": 8}.get(e.to_state, cur)
            else:
                s = cur
        elif isinstance(e, E.RecordAppended):
            if e.control:
                s = 6
            elif e.topic == CONSUMER_OFFSETS and e.transactional:
                s = 4
            elif e.topic == SHARE_GROUP_STATE and cur in (6, 7):
                s = 7
            else:
                s = cur
        elif isinstance(e, E.Happened):
            s = _event_step(e, cur)
        if s is not None and cur is not None and not isinstance(e, (E.RequestReceived, E.ResponseSent)):
            cur = s                              # what follows inside the request belongs to the new step
        if s is not None:
            steps[e.seq] = s
    return steps


def resolved_on(events: list) -> dict[int, int]:
    """{seq of a share-record move a marker made: the broker whose hook made it}. A marker's moves
    come right before the MarkerResolved that reports them."""
    out: dict[int, int] = {}
    run: list[int] = []
    for e in events:
        if isinstance(e, E.StateChanged) and e.machine == "share-record" and e.from_state == "TX_PENDING":
            run.append(e.seq)
        elif isinstance(e, E.MarkerResolved):
            out.update((s, e.broker) for s in run)
            run = []
        elif not isinstance(e, (E.StateChanged, E.RecordAppended)):
            run = []
    return out
