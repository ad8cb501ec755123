"""What a capture shows that a learner should know: one Finding per thing, each with the exchanges
(indexes into the capture's exchanges) that show it and a sentence. The detectors are one table,
DETECTORS, run in order; each reads the decoded exchanges only.

- error: every non-zero error code, with its meaning for that API and version (meanings.py);
- fenced: a producer answered INVALID_PRODUCER_EPOCH / PRODUCER_FENCED after its transactional id was
  initialised again (TransactionCoordinator.scala handleInitProducerId bumps the epoch);
- late-commit: an OffsetCommit / TxnOffsetCommit refused because the member is no longer in the
  group's generation (ClassicGroup.validateOffsetCommit, ConsumerGroup.validateOffsetCommit);
- open-transaction: a transaction still open when the capture ends (its partitions' last stable
  offset is held, so read_committed consumers wait: KIP-98);
- sequence: a batch whose sequence number does not follow the producer's previous one on that
  partition (a gap), or repeats it (a retry) (ProducerStateManager.java);
- throttled: a response with ThrottleTimeMs > 0 (KIP-219);
- slow: an answer slower than SLOW_MS that is not a long poll waiting as asked;
- capture: problems with the capture itself (gaps, a start mid-connection, undecodable frames);
- encrypted: a connection that carries TLS, or SASL-wrapped bytes after authentication."""
from __future__ import annotations

import html
from dataclasses import dataclass, field

from ..records.header import HEADER_KEYS, HEADER_SIZE, LOG_OVERHEAD, batch_size, read_header
from ..schema.coordinators import MEMBERSHIP_APIS
from ..schema.error_codes import CODE, NAME, error_codes
from . import meanings

SLOW_MS = 1000.0
FENCING = {CODE["INVALID_PRODUCER_EPOCH"], CODE["PRODUCER_FENCED"]}
OUT_OF_GROUP = {CODE[n] for n in ("ILLEGAL_GENERATION", "UNKNOWN_MEMBER_ID", "FENCED_MEMBER_EPOCH",
                                  "STALE_MEMBER_EPOCH", "FENCED_INSTANCE_ID")}
# requests the broker holds on purpose: answered after MaxWaitMs (or a rebalance), not slow
LONG_POLLS = {"Fetch": "MaxWaitMs", "ShareFetch": "MaxWaitMs", "JoinGroup": None, "SyncGroup": None}


@dataclass
class Finding:
    """One thing the capture shows: its kind, a sentence, and the exchanges that show it."""
    kind: str
    text: str
    exchanges: list[int] = field(default_factory=list)

    def __str__(self) -> str:
        at = ", ".join(f"#{i}" for i in self.exchanges[:8]) + (" ..." if len(self.exchanges) > 8 else "")
        return f"[{self.kind}] {self.text}" + (f" (exchanges {at})" if at else "")


class Findings(list):
    """The `findings` part: a list of Finding, as text and HTML."""

    def kinds(self) -> set[str]:
        """The kinds of finding present."""
        return {f.kind for f in self}

    def __str__(self) -> str:
        return "\n".join(str(f) for f in self) or "nothing to report"

    def _repr_html_(self) -> str:
        e = html.escape
        items = "".join(f"<li><b>{e(f.kind)}</b> {e(f.text)} <small>{e(_at(f))}</small></li>" for f in self)
        return f"<div class='kv-findings'><h3>Findings</h3><ul>{items or '<li>nothing to report</li>'}</ul></div>"


def _at(f: Finding) -> str:
    return ("exchanges " + ", ".join(f"#{i}" for i in f.exchanges[:12])) if f.exchanges else ""


def _req(ex) -> dict:
    return (ex.get("request") or {}).get("body") or {}


def _resp(ex) -> dict:
    return (ex.get("response") or {}).get("body") or {}


def _who(ex) -> str:
    cid = ((ex.get("request") or {}).get("header") or {}).get("ClientId")
    return f"{cid!r} ({ex['client']})" if cid else str(ex["client"])


# ---- the detectors ---------------------------------------------------------------------------------
def errors(exs) -> list[Finding]:
    """Every non-zero error code, one finding per (API, version, code)."""
    seen: dict[tuple, list[int]] = {}
    for i, ex in enumerate(exs):
        if ex.get("response") is None:
            continue
        for code in error_codes(_resp(ex)):
            if code:
                seen.setdefault((ex["api"], ex["version"], code), []).append(i)
    return [Finding("error", f"{api} v{v} answered {len(at)}x " + meanings.sentence(api, v, code), at)
            for (api, v, code), at in seen.items()]


def _init_epochs(exs) -> dict[int, list[tuple[int, str, int]]]:
    """producer id -> [(exchange, transactional id, epoch)] from InitProducerId answers."""
    out: dict[int, list] = {}
    for i, ex in enumerate(exs):
        if ex["api"] == "InitProducerId" and ex.get("response") and not _resp(ex).get("ErrorCode"):
            tid = _req(ex).get("TransactionalId")
            out.setdefault(_resp(ex).get("ProducerId"), []).append((i, tid, _resp(ex).get("ProducerEpoch")))
    return out


def fenced(exs) -> list[Finding]:
    """Producers refused as fenced, with the InitProducerId that fenced them."""
    inits, out = _init_epochs(exs), []
    for i, ex in enumerate(exs):
        if ex.get("response") is None or not FENCING & set(error_codes(_resp(ex))):
            continue
        pid = _req(ex).get("ProducerId")
        if pid is None:
            pid = next((h["producer_id"] for _, _, h in _batch_headers(_req(ex))), None)
        later = [(j, tid, ep) for j, tid, ep in inits.get(pid, [])
                 if j < i and exs[j]["connection"] != ex["connection"]]
        why = (f"transactional id {later[-1][1]!r} was initialised again by {_who(exs[later[-1][0]])} at exchange "
               f"#{later[-1][0]} (epoch {later[-1][2]}), so this instance is a zombie: the coordinator aborted its "
               "transaction and refuses its writes") if later else \
            "a newer instance with the same transactional id took over"
        out.append(Finding("fenced", f"{_who(ex)}'s {ex['api']} for producer id {pid} was refused "
                                     f"({', '.join(NAME[c] for c in FENCING & set(error_codes(_resp(ex))))}): {why}.",
                           [j for j, _, _ in later[-1:]] + [i]))
    return out


def late_commits(exs) -> list[Finding]:
    """Offset commits refused because the member is no longer in the group's generation."""
    out = []
    for i, ex in enumerate(exs):
        if ex["api"] not in ("OffsetCommit", "TxnOffsetCommit") or ex.get("response") is None:
            continue
        bad = OUT_OF_GROUP & set(error_codes(_resp(ex)))
        if not bad:
            continue
        b = _req(ex)
        group, gen = b.get("GroupId"), b.get("GenerationIdOrMemberEpoch", b.get("GenerationId"))
        # the other members' membership exchanges with the group before the refused commit
        moved = [j for j in range(i) if exs[j]["api"] in MEMBERSHIP_APIS and _req(exs[j]).get("GroupId") == group
                 and exs[j]["connection"] != ex["connection"]]
        names = ", ".join(NAME[c] for c in sorted(bad))
        out.append(Finding("late-commit", f"{_who(ex)} committed offsets for group {group!r} as member "
                                          f"{b.get('MemberId')!r} at generation/epoch {gen}, answered {names}: the "
                                          "group had moved on without it (it took too long between polls, or its "
                                          "partitions were revoked), so these offsets are lost and another member "
                                          "reads the same records again.", moved[-3:] + [i]))
    return out


def _batch_headers(body: dict):
    for t in body.get("TopicData") or ():
        for p in t.get("PartitionData") or ():
            raw, pos = p.get("Records") or b"", 0
            while pos + HEADER_SIZE <= len(raw):
                header = dict(zip(HEADER_KEYS, read_header(raw, pos), strict=True))
                yield t.get("Name") or str(t.get("TopicId")), p.get("Index"), header
                pos += max(batch_size(raw, pos), LOG_OVERHEAD + 1)


def sequences(exs) -> list[Finding]:
    """Idempotent batches whose sequence number skips or repeats the previous one."""
    nxt: dict[tuple, tuple[int, int]] = {}
    out = []
    for i, ex in enumerate(exs):
        if ex["api"] != "Produce" or ex.get("request") is None:
            continue
        for topic, part, h in _batch_headers(_req(ex)):
            pid, epoch, seq, count = h["producer_id"], h["producer_epoch"], h["base_sequence"], h["records_count"]
            if pid < 0 or seq < 0:
                continue
            key = (pid, topic, part)
            want = nxt.get(key)
            if want is not None and want[0] == epoch and seq != want[1]:
                what = ("repeats a batch already sent (a retry after a lost or late answer)" if seq < want[1] else
                        f"skips sequence numbers {want[1]}-{seq - 1}: batches are missing")
                out.append(Finding("sequence", f"producer id {pid} epoch {epoch} on {topic}-{part}: batch at "
                                               f"sequence {seq} {what}.", [i]))
            if want is None or want[0] != epoch or seq >= want[1]:
                nxt[key] = (epoch, seq + count)
    return out


def _added(b: dict):
    """(transactional id, producer id, topics) of an AddPartitionsToTxn body: v4+ batches
    transactions (KIP-890), v0-v3 carry one (AddPartitionsToTxnRequest.json)."""
    if b.get("Transactions"):
        return [(t.get("TransactionalId"), t.get("ProducerId"), t.get("Topics") or ()) for t in b["Transactions"]]
    if b.get("V3AndBelowTransactionalId"):
        return [(b["V3AndBelowTransactionalId"], b.get("V3AndBelowProducerId"), b.get("V3AndBelowTopics") or ())]
    return []


def open_transactions(exs) -> list[Finding]:
    """Transactions with partitions added and no EndTxn by the end of the capture."""
    state: dict[str, list] = {}          # transactional id -> [first exchange, producer id, partitions]
    for i, ex in enumerate(exs):
        b, api = _req(ex), ex["api"]
        if api == "InitProducerId" and b.get("TransactionalId"):
            state.pop(b["TransactionalId"], None)            # a fresh init aborts what was open
        elif api == "AddPartitionsToTxn":
            for tid, pid, topics in _added(b):
                parts = state.setdefault(tid, [i, pid, set()])[2]
                parts.update(f"{x.get('Name')}-{p}" for x in topics for p in x.get("Partitions") or ())
        elif api == "Produce" and b.get("TransactionalId"):
            parts = state.setdefault(b["TransactionalId"], [i, None, set()])[2]
            parts.update(f"{t}-{p}" for t, p, _ in _batch_headers(b))
        elif api == "EndTxn" and ex.get("response") and not _resp(ex).get("ErrorCode"):
            state.pop(b.get("TransactionalId"), None)
    return [Finding("open-transaction", f"transactional id {tid!r} still has a transaction open when the capture "
                                        f"ends (partitions {', '.join(sorted(parts)) or 'none seen'}): until it "
                                        "commits, "
                                        "aborts or times out, read_committed consumers stop at its first offset there "
                                        "(the last stable offset is held).", [first])
            for tid, (first, _pid, parts) in state.items()]


def throttled(exs) -> list[Finding]:
    """Responses that ask the client to wait (ThrottleTimeMs > 0)."""
    at = [i for i, ex in enumerate(exs) if (_resp(ex).get("ThrottleTimeMs") or 0) > 0]
    if not at:
        return []
    worst = max(_resp(exs[i])["ThrottleTimeMs"] for i in at)
    return [Finding("throttled", f"{len(at)} response(s) carry ThrottleTimeMs > 0 (up to {worst} ms): a quota was "
                                 "exceeded and the client must wait that long before its next request.", at)]


def slow(exs) -> list[Finding]:
    """Answers slower than SLOW_MS that are not long polls waiting as asked."""
    out = []
    for i, ex in enumerate(exs):
        ms = ex.get("latency_ms")
        if ms is None or ms <= SLOW_MS:
            continue
        if ex["api"] in LONG_POLLS:
            wait = LONG_POLLS[ex["api"]]
            if wait is None or ms <= (_req(ex).get(wait) or 0) + SLOW_MS:
                continue
        out.append(Finding("slow", f"{_who(ex)}'s {ex['api']} v{ex['version']} took {ms:,.0f} ms to be answered.", [i]))
    return out


def capture_problems(exs) -> list[Finding]:
    """Problems with the capture itself (file, gaps, frames that do not decode)."""
    out = [Finding("capture", e) for e in getattr(exs, "file_errors", ())]
    for i, ex in enumerate(exs):
        for e in ex.get("errors") or ():
            if "TLS" not in e:
                out.append(Finding("capture", f"{ex['client']} -> {ex['server']}: {e}", [i]))
    return out


def encrypted(exs) -> list[Finding]:
    """Connections whose bytes are TLS, or SASL-wrapped after authentication."""
    out, sasl = [], set()
    for i, ex in enumerate(exs):
        if ex["api"] == "SaslAuthenticate":
            sasl.add(ex["connection"])
        for e in ex.get("errors") or ():
            if "TLS" in e:
                out.append(Finding("encrypted", f"{ex['client']} -> {ex['server']}: the bytes are TLS, not Kafka: "
                                                "capture where the traffic is plaintext (a PLAINTEXT or SASL_PLAINTEXT "
                                                "listener), or decrypt it first (Wireshark with the TLS keys).", [i]))
            elif ex["connection"] in sasl and "does not decode" in e:
                out.append(Finding("encrypted", f"{ex['client']} -> {ex['server']}: after SASL authentication the "
                                                "frames do not decode: the mechanism wraps them (GSSAPI with "
                                                "integrity or confidentiality), so they cannot be read.", [i]))
    return out


DETECTORS = (errors, fenced, late_commits, open_transactions, sequences, throttled, slow, capture_problems, encrypted)


def find(exs) -> Findings:
    """Every detector's findings over the decoded exchanges, in DETECTORS order."""
    return Findings(f for detect in DETECTORS for f in detect(exs))
