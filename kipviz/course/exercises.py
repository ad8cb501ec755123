"""The notebooks' prediction exercises, kept out of the learner's sight.

A learner's cell holds only the question's blank (`answer = ...`); the cell after it, which the
learner does not edit, calls `exercise("03-1").check(answer)`. The expected answer is computed here,
from the kit's own model and codec (or from objects the notebook built, passed as keywords), and
revealed by the check: right or wrong, a hint on a wrong answer, and a "Show solution" element that
stays closed until clicked (an HTML <details>, so it works in JupyterLab and in `kipviz export`).
Text that names an answer (why it is right, what the run showed) lives here too, as `explain`: the
check shows it with the right answer and in the folded solution, never in the notebook's cells.

The cells after the check that show the answer (the run, its tables and pictures) are tagged
{"kipviz": {"outcome": "03-1"}} and stay folded until the right answer (kipviz.course.reveal, which
importing this module installs in a kernel). A "predict" exercise's answer is in no cell above its
check and not in its hint (tests/test_predictions.py reads the notebooks for it); a "read" exercise
asks to read the answer off a table shown above it (its hint still must not name it).

    from kipviz.course.exercises import exercise, EXERCISES
    exercise("03-1").expected()                  # 'UNKNOWN_TOPIC_ID', computed from the scenario
    exercise("03-1").check(...)                  # "Not answered yet", with the solution folded away
"""
from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable

from . import reveal
from .teach import Check, check

__all__ = ["Exercise", "EXERCISES", "exercise", "BROKEN_DRAFT", "SEED_HEX", "tag_reuse_draft"]


@dataclass(frozen=True)
class Exercise:
    """One prediction exercise of a notebook: its hint, how its answer is computed, and its solution."""
    id: str                         # "NN-k": notebook number, exercise number
    hint: str                       # guides without naming the answer (tests/test_predictions.py)
    solve: Callable[..., Any]       # the expected answer, computed (keyword inputs: objects of the notebook)
    solution: str                   # how to find the answer; shown with it under "Show solution"
    explain: str = ""               # why it is the answer; shown with the right answer and in the solution
    inputs: tuple[str, ...] = field(default=())
    kind: str = "predict"           # or "read": the answer is read off a table shown above the question
    unit: str = ""                  # "version": the answer 5 is also written "v5" (tests/test_predictions.py)
    vocabulary: Callable[[], Any] | None = None   # names the text above may use: the question's choices
    runs: tuple[str, ...] = ()      # the scenarios its outcome cells show (traces() runs them)

    def expected(self, **inputs) -> Any:
        """The expected answer, computed from the notebook's objects (TypeError names a missing one)."""
        missing = [n for n in self.inputs if n not in inputs]
        if missing:
            raise TypeError(f"exercise {self.id} needs {', '.join(missing)} from its notebook")
        return self.solve(**{n: inputs[n] for n in self.inputs})

    def check(self, answer, **inputs) -> Check:
        """Check a learner's answer: a Check that says whether it is right, with the hint or the solution."""
        expected = self.expected(**inputs)
        result = check(answer, expected, self.hint, explain=self.explain,
                       solution=" ".join(t for t in (f"The answer is {expected!r}.", self.explain, self.solution) if t))
        if result.ok:
            reveal.answered(self.id)        # its folded outcome opens
        return result

    def traces(self) -> dict:
        """The scenarios its outcome shows, run: {name: Trace} (the notebook need not spell them out
        where a scenario's name would name the answer)."""
        return {name: _run(name) for name in self.runs}


def _ex(id: str, hint: str, solution: str, explain: str = "", inputs: tuple[str, ...] = (), **more):
    def register(fn):
        EXERCISES[id] = Exercise(id, hint, fn, solution, explain, inputs, **more)
        return fn
    return register


EXERCISES: dict[str, Exercise] = {}


reveal.install()


def exercise(id: str) -> Exercise:
    """The exercise with this id ("03-1"); KeyError lists the known ones."""
    try:
        return EXERCISES[id]
    except KeyError:
        raise KeyError(f"no exercise {id!r}; known: {', '.join(sorted(EXERCISES))}") from None


def _run(name: str):
    from .. import scenarios
    return scenarios.run(name)


def _held(trace, prefix: str) -> bool:
    """Whether the scenario's own check starting with `prefix` passed (the model's answer)."""
    matches = [c for c in trace.checks if c.description.startswith(prefix)]
    if len(matches) != 1:
        raise LookupError(f"{trace.name}: {len(matches)} checks start with {prefix!r}")
    return matches[0].passed


def _toc_request(version: int, name_len: int | None = None, *, topic: str = "orders") -> bytes:
    from .. import codec
    from ..records.examples import example_value
    body = example_value("TxnOffsetCommitRequest", 5)
    parts = body["Topics"][0]["Partitions"]
    name = topic if name_len is None else "t" * name_len
    topics = [{"Name": name, "Partitions": parts}] if version < 6 else [{"TopicId": uuid.UUID(int=1), "Partitions": parts}]
    return codec.encode("TxnOffsetCommitRequest", version, dict(body, Topics=topics))


# ---- 00 welcome ------------------------------------------------------------------------------------
@_ex("00-1", hint="A compact string costs one length byte plus its characters; a topic ID costs a fixed 16 bytes.",
     solution="Encode the request at v5 and at v6 with codec.encode and subtract the lengths.",
     explain="16 bytes of ID replace the name's length byte and characters.")
def _welcome_cost():
    return len(_toc_request(6)) - len(_toc_request(5))


# ---- 01 wire format --------------------------------------------------------------------------------
# The seed's example body (TxnOffsetCommit v5), decoded in notebook 01 section 5 (notebooks/src/01_wire_format.py)
SEED_HEX = ("0e74782d6f72646572732d303031116f726465722d70726f636573736f727300000000000000000"
            "00c0000000512636f6e73756d65722d312d6162633132330002076f7264657273020000000300000000"
            "00024b6e0000000c00000000")


@_ex("01-1", hint="Find how many bytes the varint of (length + 1) needs (one varint byte holds 7 bits), "
                  "then add the characters.",
     solution="len(varint.uvarint_bytes(200 + 1)) + 200.")
def _compact_string_200():
    from ..codec import varint
    return len(varint.uvarint_bytes(201)) + 200


@_ex("01-2", hint="Add up the fields before it: each compact string is one length byte plus its characters, "
                  "and ProducerId is an int64.",
     solution='next(s.start for s in codec.annotate("TxnOffsetCommitRequest", 5, data) if s.path == "ProducerEpoch").')
def _producer_epoch_offset():
    from .. import codec
    data = codec.parse_hex(SEED_HEX)
    return next(s.start for s in codec.annotate("TxnOffsetCommitRequest", 5, data) if s.path == "ProducerEpoch")


@_ex("01-3", hint="A name of n characters costs one length byte plus n; compare that with the ID's fixed size, "
                  "then look for the first row whose 'v6 saves' is positive.",
     solution='int(table[table["v6 saves"] > 0]["name length"].min()).',
     explain="From that length on, the name costs more than the 16-byte ID.", kind="read")
def _shortest_name():
    return next(n for n in range(1, 64) if len(_toc_request(6)) < len(_toc_request(5, n)))


# ---- 02 records and logs ---------------------------------------------------------------------------
@_ex("02-1", hint="abs(java_string_hash(id)) % 50, with Kafka's abs (Integer.MIN_VALUE maps to 0).",
     solution='records.kafka_abs(records.java_string_hash("tx-orders-001")) % 50.')
def _txn_partition():
    from .. import records
    return records.kafka_abs(records.java_string_hash("tx-orders-001")) % 50


@_ex("02-2", hint="Look the code up in kipviz.schema.error_codes (name_of); the error is about generations.",
     solution="name_of(22) from kipviz.schema.error_codes.")
def _error_22():
    from ..schema.error_codes import name_of
    return name_of(22)


@_ex("02-3", hint="The cleaner keeps each key's newest record of the cleanable range, which ends where the active "
                  "segment begins; ask which plum records count as plum's newest there, and which are outside it.",
     solution='scenarios.run("compaction.prices").result["plum_records"].',
     explain="The offset map is built without the records of aborted transactions (Kafka's Cleaner, "
             "buildOffsetMapForSegment), so 0.50 at offset 3 is plum's newest in the cleanable range and stays, while "
             "the aborted 9.99 goes; 0.55 is in the active segment, which is never cleaned.")
def _plum_records():
    return _run("compaction.prices").result["plum_records"]


# ---- 03 topic ids ----------------------------------------------------------------------------------
@_ex("03-1", hint="An ID is never given to another topic, and the old one now belongs to none: the error says "
                  "the broker does not recognise what the request names.",
     solution='scenarios.run("kip516.stale_read").result["fetch_by_old_id"].',
     explain="The old ID resolves to no live topic, so the broker answers UNKNOWN_TOPIC_ID instead of "
             "silently reading the new topic of the same name.")
def _stale_fetch():
    return _run("kip516.stale_read").result["fetch_by_old_id"]


@_ex("03-2", hint="v10 names topics by ID, and the old ID is gone: the same error as a Fetch by the old ID.",
     solution='scenarios.run("kip516.delete_recreate_committed_offsets").result["late_commit_by_id"].')
def _late_commit_by_id():
    return _run("kip516.delete_recreate_committed_offsets").result["late_commit_by_id"]


@_ex("03-3", hint="Shipped brokers never delete a log on their own word: the answer keys the partition by the new ID "
                  "and names the mismatch between the two IDs.",
     solution='scenarios.run("kip516.broker_stale_state_released").result["broker1_answer"].',
     explain="The shipped broker refuses the request with INCONSISTENT_TOPIC_ID and keeps the old log and its "
             "partition.metadata, so an operator decides; under the page the stale log leaves at once.")
def _stale_state_released():
    return _run("kip516.broker_stale_state_released").result["broker1_answer"]


# ---- 04 consumer groups ----------------------------------------------------------------------------
@_ex("04-1", hint="Two errors name a bad member epoch: one makes the member give up its partitions and rejoin, "
                  "the other only asks it to retry with its current epoch. Which fits an epoch the coordinator "
                  "never gave out?",
     solution="Send the heartbeat (the check cell does) and read its ErrorCode with name_of.",
     explain="A heartbeat with an epoch the coordinator never gave out is fenced: the member gives up its "
             "partitions and rejoins with epoch 0 (FENCED_MEMBER_EPOCH). STALE_MEMBER_EPOCH is what offset "
             "commits and fetches answer (the table in section 3).",
     inputs=("response",))
def _heartbeat_too_high(response):
    from ..schema.error_codes import name_of
    return name_of(response["ErrorCode"])


@_ex("04-2", hint="Before v9 the coordinator had no error for a missing group: it reuses an older, generation-related one.",
     solution='commit(8, 3, group="no-such-group") — the table\'s "missing group" column at v8.',
     inputs=("error",), kind="read")
def _missing_group_v8(error):
    return error


# ---- 05 TxnOffsetCommit v6 -------------------------------------------------------------------------
@_ex("05-1", hint="The old versions keep the error old producers already know, so they do not treat it as "
                  "fatal; v6 says what happened.",
     solution='the "error" column of the table below for kip1319.group_id_not_found_v5 and _v6.',
     explain="Up to v5 the broker reports a missing group (and a stale member epoch) as ILLEGAL_GENERATION, "
             "the error old producers know; v6 says GROUP_ID_NOT_FOUND (and STALE_MEMBER_EPOCH).",
     runs=tuple(f"kip1319.{c}_v{v}" for c in ("group_id_not_found", "stale_member_epoch") for v in (5, 6)))
def _missing_group_v5_v6():
    return tuple(_run(f"kip1319.group_id_not_found_v{v}").result["error"] for v in (5, 6))


@_ex("05-2", hint="Walk the checks in the order the broker makes them, per topic; the first one that fails "
                  "decides for every partition of that topic, and a later check never runs for it.",
     solution='order.result["v6"] names each topic-partition by its ID (order.result["ids"]): the deleted '
              "secret's ID fails before any ACL is read, the live secret fails its ACL before the broker asks "
              "whether partition 9 exists, and orders reaches the last check.",
     # section 2 teaches the order by naming its three errors; the exercise applies it to three partitions
     vocabulary=lambda: _error_order_v6())
def _error_order_v6():
    t = _run("kip1319.error_order_v6")
    v6, ids = t.result["v6"], t.result["ids"]
    return (v6[f"{ids['secret (deleted)']}-0"], v6[f"{ids['secret']}-9"], v6[f"{ids['orders']}-7"])


@_ex("05-3", hint="The producer and the broker agree on the newest version both of them know: which release "
                  "added v6?",
     explain="v6 arrived with Kafka 4.4: a 4.3 broker serves TxnOffsetCommit up to v5, so the 4.4 producer "
             "sends v5, for the whole request.",
     solution='scenarios.run("kip1319.fallback_old_broker").result["version_sent"].', unit="version")
def _fallback_version():
    return int(_run("kip1319.fallback_old_broker").result["version_sent"])


@_ex("05-4", hint="The broker asks the authorizer one question at a time, in a fixed order, and answers with the "
                  "first refusal: which of the two does KafkaApis ask about before the other?",
     solution='acl_run.result["outsider"] — scenarios.run("acls.txn_offset_commit_order"), check 1.',
     explain="KafkaApis.handleTxnOffsetCommitRequest checks WRITE on the transactional id before READ on the "
             "group, and the topics after both; app, granted its transactional ids only, meets the group check.",
     vocabulary=lambda: ("TRANSACTIONAL_ID_AUTHORIZATION_FAILED", "GROUP_AUTHORIZATION_FAILED"))   # the two choices
def _acl_order():
    return _run("acls.txn_offset_commit_order").result["outsider"]


# ---- 06 share groups -------------------------------------------------------------------------------
@_ex("06-1", hint="Every lock expiry is a failed delivery and raises the record's delivery count; the record is "
                  "archived when the count reaches group.share.delivery.count.limit. What is that limit by default?",
     solution='len(scenarios.run("kip932.lock_expiry_delivery_limit").result["delivery_counts"]).',
     explain="Every lock expiry is a failed delivery; group.share.delivery.count.limit is 5 by default, "
             "so the record is archived after its 5th delivery.")
def _deliveries():
    return len(_run("kip932.lock_expiry_delivery_limit").result["delivery_counts"])


_CASE = "kip1289.case"


def _share_states():
    from ..broker.tables import share_record
    return share_record.TABLE.states


# (id, scenario, hint, solve, how it is computed, explain: what the run shows, revealed with the answer)
for _id, _name, _hint, _solve, _how, _explain in [
    ("06-2", "01_broker_crash_tx_pending",
     "Where does the leader keep TX_PENDING: only in memory, or also in what it writes to __share_group_state? "
     "A restarted leader knows only what was written.",
     lambda t: bool(t.result["redelivered"]), 'bool(case01.result["redelivered"])',
     "TX_PENDING lives only in the leader's memory (KIP-1289 leaves __share_group_state unchanged, and the "
     "persisted state saves a TX_PENDING record as AVAILABLE). The crash wiped it: the records reloaded as "
     "AVAILABLE, came back with a higher delivery count and were processed again. The first attempt's output "
     "had already committed, so each record's output is visible twice: the at-least-once window the KIP "
     "documents."),
    ("06-3", "02_coordinator_unavailable",
     "The broker registers with the transaction coordinator before it stages anything.",
     lambda t: not _held(t, "nothing staged"), "the scenario's check 'nothing staged (registration failed)'",
     "The registration of __share_group_state-N failed before anything was staged, so no record left ACQUIRED: "
     "the error reached the producer, the application aborted and retried. Nothing was lost or duplicated."),
    ("06-4", "03_zombie_producer",
     "B's initialisation bumped the epoch of the transactional id, so A is a zombie: which error does Kafka "
     "give any transactional write of a zombie?",
     lambda t: t.result["error"], 'case03.result["error"]',
     "A's call was refused with PRODUCER_FENCED before anything was staged, as any transactional write of a "
     "zombie is; the new producer staged and committed the same records once."),
    ("06-5", "05_duplicate_marker", "After the first marker, is anything still TX_PENDING for that producer?",
     lambda t: not _held(t, "the duplicate changes nothing"), "the scenario's check 'the duplicate changes nothing'",
     "The repeated marker found nothing in TX_PENDING (a no-op by state); the late copy carried an older epoch "
     "than the new staging (a no-op by epoch). Every record changed state exactly once."),
    ("06-6", "06_lock_expiry_tx_pending",
     "Leaving TX_PENDING is not the ordinary lock expiry: the record first goes where a staging that ends "
     "without a commit sends it (section 3), and only a later expiry hands it to other members.",
     lambda t: next(e.to_state for e in t.events if getattr(e, "machine", "") == "share-record"
                    and e.from_state == "TX_PENDING" and "lock" in e.cause),
     "the first share-record change out of TX_PENDING caused by the lock in case06.events",
     "With the lock expired, TX_PENDING went back to ACQUIRED (where an ABORT sends it) and then AVAILABLE; "
     "another member processed the records. If the stalled producer commits late, its output is a duplicate "
     "the KIP does not list (the run's findings)."),
    ("06-7", "07_txn_timeout", "What do ABORT markers do to TX_PENDING records, and who gets them next?",
     lambda t: not _held(t, "the replacement worker gets every record again"),
     "the scenario's check 'the replacement worker gets every record again'",
     "The coordinator aborted the abandoned transaction, the ABORT marker returned the records to ACQUIRED, and "
     "the next lock cycle made them AVAILABLE for the replacement worker: nothing is lost. This order needs "
     "transaction.timeout.ms below the lock duration (the run's findings)."),
    ("06-8", "08_stale_member_epoch", "The epoch is checked when staging, not at commit.",
     lambda t: t.result["errors"][0], 'case08.result["errors"][0]',
     "The staging call carried an outdated member epoch: STALE_MEMBER_EPOCH, and nothing was staged. The "
     "retry with a fresh share_group_metadata() committed."),
    ("06-9", "09_old_broker", "The producer checks ApiVersions before it builds the request.",
     lambda t: not _held(t, "no TxnShareAcknowledge bytes went over the wire"),
     "the scenario's check 'no TxnShareAcknowledge bytes went over the wire'",
     "No TxnShareAcknowledge bytes went to a broker that does not advertise the RPC: the producer failed "
     "before sending. After the operator finalized share.version 2 the same records were staged and "
     "committed."),
    ("06-10", "10_invalid_ack_type", "Only ACCEPT (1) and REJECT (3) have transactional meaning.",
     lambda t: t.result["errors"]["RELEASE"][0], 'case10.result["errors"]["RELEASE"][0]',
     "RELEASE, RENEW and GAP have no meaning inside a transaction: each was answered INVALID_RECORD_STATE and "
     "nothing was staged."),
    ("06-11", "11_partial_multi_partition", "One call, two partitions: is staging per partition or per call?",
     lambda t: not _held(t, "nothing staged (partial failure)"), "the scenario's check 'nothing staged (partial failure)'",
     "One bad partition failed the whole call: B got INVALID_RECORD_STATE, A OPERATION_NOT_ATTEMPTED, and "
     "neither was staged (all or nothing); only a later, valid call staged."),
    ("06-12", "12_leader_change_share_state",
     "Where does TX_PENDING live, and what happens to it with the old leader (compare case 1)?",
     lambda t: bool(t.result["redelivered"]), 'bool(case12.result["redelivered"])',
     "The COMMIT marker reached the new leader of __share_group_state-N, which never saw the staging: the "
     "records waited for the lock, were redelivered and processed again. At-least-once, as the KIP documents "
     "for this window."),
    ("06-13", "13_markers_never_arrive",
     "Which timer keeps running when no marker comes, and what does a late marker find?",
     lambda t: _held(t, "processed again and committed"), "the scenario's check 'processed again and committed'",
     "The ABORT marker never reached the share-state leader; the lock expiry returned the records anyway, and "
     "the late marker changed nothing. Convergence costs one lock cycle."),
    ("06-14", "14_concurrent_epochs", "A call with the previous epoch after a bump: like a zombie's.",
     lambda t: t.result["stale_error"], 'case14.result["stale_error"]',
     "The old in-flight call (previous epoch) was fenced with PRODUCER_FENCED; the current transaction's "
     "staging stayed untouched."),
]:
    EXERCISES[_id] = Exercise(_id, _hint, (lambda s, n: lambda: s(_run(_CASE + n)))(_solve, _name),
                              f"Computed from the run: {_how}.", _explain,
                              vocabulary=_share_states if _id == "06-6" else None)


# ---- 07 Spark (the notebook's DataFrames are the inputs) ---------------------------------------------
@_ex("07-1", hint="count the fields printSchema shows: key, value, ...",
     solution="len(orders.columns).", inputs=("orders",), kind="read")
def _columns(orders):
    return len(orders.columns)


@_ex("07-2", hint="count the rows named clicks in topic_ids(), deleted ones included",
     solution="kip516.source.topic_ids().filter(\"name = 'clicks'\").count().", inputs=("kip516",), kind="read")
def _clicks_ids(kip516):
    return kip516.source.topic_ids().filter("name = 'clicks'").count()


@_ex("07-3", hint="filter txns on its outcome column and count",
     solution="txns.filter(\"outcome = 'abort'\").count().", inputs=("txns",), kind="read")
def _aborts(txns):
    return txns.filter("outcome = 'abort'").count()


@_ex("07-4", hint="look at the v5 row with answers > 0",
     solution='errs.filter("version = 5 and answers > 0").first()["error"].', inputs=("errs",), kind="read")
def _v5_error(errs):
    return errs.filter("version = 5 and answers > 0").first()["error"]


@_ex("07-5", hint="the record was processed twice and both outputs committed: which kind names that?",
     solution='sorted({r["kind"] for r in faulty.rows}) — one kind.', inputs=("faulty",), kind="read")
def _violation_kind(faulty):
    kinds = sorted({r["kind"] for r in faulty.rows})
    return kinds[0] if len(kinds) == 1 else kinds


# ---- 08 design review ------------------------------------------------------------------------------
# Exercise 2's draft: an invented RPC whose Partitions field has a tag but no taggedVersions.
BROKEN_DRAFT = """{
  "apiKey": 96, "type": "request", "name": "ShareRenewLeaseRequest",
  "validVersions": "0", "flexibleVersions": "0+",
  "fields": [
    { "name": "GroupId", "type": "string", "versions": "0+", "about": "The share group." },
    { "name": "Topics", "type": "[]RenewTopic", "versions": "0+", "about": "Leases per topic.", "fields": [
      { "name": "TopicId", "type": "uuid", "versions": "0+", "about": "The topic id." },
      { "name": "Partitions", "type": "[]int32", "versions": "0+", "tag": 0, "about": "The partitions." }
    ]}
  ]
}"""


@_ex("08-1", hint="KIP-1331 (streams group topology descriptions) added an RPC in 4.4; the history table names it.",
     solution='registry.api_key_history("TxnShareAcknowledge"): the row for key 93 and release 4.4, '
              "or the review's error message for the draft numbered 93.", kind="read")
def _key_93_holder():
    from ..schema.registry import kafka_api_keys
    return kafka_api_keys("4.4")[93]


@_ex("08-2", hint="The review points at the line that names the field in the error.",
     solution="review(broken).findings[0].line.")
def _broken_line():
    from ..review import review
    return review(BROKEN_DRAFT).findings[0].line


def _toc_v7(change) -> str:
    from ..schema import jsonc, registry
    obj = jsonc.loads((registry.DEFS_DIR / "TxnOffsetCommitRequest.json").read_text())
    del obj["kipviz"]
    obj["validVersions"], obj["latestVersionUnstable"] = "0-7", True
    change(obj)
    return json.dumps(obj, indent=2)


@_ex("08-3", hint="Which version added GroupInstanceId, and which is the newest version before the draft's new one?",
     solution="deleted.errors[0].versions_text.",
     explain="GroupInstanceId arrived with v3 (KIP-447) and v6 is the newest released version, so deleting "
             "the field changes the bytes of v3-6; bound its versions instead.")
def _deleted_versions():
    from ..review import review

    def drop(obj):
        obj["fields"] = [f for f in obj["fields"] if f["name"] != "GroupInstanceId"]
    return review(_toc_v7(drop)).errors[0].versions_text


def tag_reuse_draft() -> str:
    """Exercise 4's draft: ApiVersionsResponse v6 ends ZkMigrationReady (tag 3) at v5 and gives tag 3
    to a new field (notebook 08 reviews the same text)."""
    from ..schema import jsonc, registry
    av = jsonc.loads((registry.DEFS_DIR / "ApiVersionsResponse.json").read_text())
    del av["kipviz"]
    av["validVersions"], av["latestVersionUnstable"] = "0-6", True
    zk = next(f for f in av["fields"] if f["name"] == "ZkMigrationReady")
    zk["versions"] = zk["taggedVersions"] = "3-5"
    av["fields"].append({"name": "ControllerReady", "type": "bool", "versions": "6+", "taggedVersions": "6+",
                         "tag": 3, "ignorable": True, "default": "false", "about": "Controller quorum ready."})
    return json.dumps(av, indent=2)


def _rule_ids():
    from ..review import RULES
    return tuple(RULES)


@_ex("08-4", hint="Look at the rules whose usual severity is error.", solution="tags.errors[0].rule.",
     vocabulary=_rule_ids)         # the question's choices: the rule ids section 1's table lists
def _tag_rule():
    from ..review import review
    return review(tag_reuse_draft()).errors[0].rule


# ---- 09 a live cluster (real clients against kipviz.serve) --------------------------------------------
@_ex("09-1", hint="A share group is like a consumer joining a running stream; the broker config "
                  "share.auto.offset.reset says where a group with no state begins (ClusterConfig models Kafka's default).",
     solution="kipviz.broker.ClusterConfig().share_offset_reset(group) — Kafka's GroupConfig "
              "SHARE_AUTO_OFFSET_RESET_DEFAULT; a group's own setting overrides it.",
     explain="As in Kafka, a new share group starts at the latest offset, so the records produced before the "
             "group existed are not delivered; share.auto.offset.reset=earliest for the group changes that.")
def _share_reset_default():
    from ..broker.config import ClusterConfig
    return ClusterConfig().share_offset_reset("a-new-group")


@_ex("09-2", hint="filter txns on its outcome column and count; a transaction librdkafka aborts before "
                  "any record reached a broker never appears in __transaction_state.",
     solution="txns.filter(\"outcome = 'abort'\").count().", inputs=("txns",), kind="read")
def _live_aborts(txns):
    return txns.filter("outcome = 'abort'").count()


# ---- 10 your own traffic (kipviz.explain on captures) --------------------------------------------------
def _refused(name: str, apis: set[str]) -> tuple[str | None, str]:
    """(client id, error name) of the first `apis` answer with an error in a bundled capture."""
    from ..capture import read_pcap
    from ..explain import bundled
    from ..schema.error_codes import error_codes, name_of
    for ex in read_pcap(bundled(name)):
        codes = [c for c in error_codes((ex.get("response") or {}).get("body") or {}) if c]
        if ex.get("api") in apis and codes:
            return ex["request"]["header"].get("ClientId"), name_of(codes[0])
    raise LookupError(f"{name}: no refused {', '.join(sorted(apis))} in the capture")


@_ex("10-1", hint="Find the lane whose Produce is answered with an error (marked red), after the other "
                  "client's InitProducerId for the same transactional id; its lane name starts with its client id.",
     solution="The Produce answered with an error comes from the older instance: the coordinator bumped the "
              "epoch for the newer one's InitProducerId, so the older one's epoch is stale.",
     explain="The newer instance's InitProducerId fenced the older one: its open transaction was aborted and "
             "every write it sends with the old epoch is refused (TransactionCoordinator.scala, handleInitProducerId).",
     kind="read")
def _zombie_client():
    return _refused("zombie_producer", {"Produce"})[0]


@_ex("10-2", hint="Generation 2 was formed without billing-a. Before it compares generations, the coordinator "
                  "checks whether the committing member belongs to the group at all (ClassicGroup.validateOffsetCommit).",
     solution="kipviz.explain.explain(bundled('late_commit')).findings: the late-commit finding names the error "
              "of billing-a's OffsetCommit answer.",
     explain="billing-a was removed from the group when it did not rejoin within the rebalance timeout, so the "
             "coordinator does not know its member id any more; its commit is refused, and billing-b reads "
             "the records billing-a processed again.")
def _late_commit_error():
    return _refused("late_commit", {"OffsetCommit", "TxnOffsetCommit"})[1]
