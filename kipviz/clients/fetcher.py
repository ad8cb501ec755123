"""The consumer's fetcher, as Kafka's consumer/internals/Fetcher.java, AbstractFetch.java,
FetchCollector.java and CompletedFetch.java.

Full fetches without a session (SessionEpoch -1) to each partition leader, v13+ by topic id;
IsolationLevel 1 for read_committed. Aborted transactions are dropped as CompletedFetch does
(AbortedTransactions by first offset, ABORT markers end them); control batches are never returned
but move the position past them."""
from __future__ import annotations

from typing import NamedTuple

from ..records import read_batches
from ..schema import events as ev
from ..schema.error_codes import NAME
from .base import E, Retry
from .consumer_errors import METADATA_ERRORS, ConsumerError

ISOLATION = {"read_uncommitted": 0, "read_committed": 1}


class ConsumerRecord(NamedTuple):
    """One record poll() returns."""
    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: tuple = ()
    timestamp: int = -1


class Fetcher:
    """One Fetch round over the assigned partitions with a position; moves the positions."""

    def __init__(self, consumer):
        self.consumer = consumer

    def fetch(self, max_records: int) -> list[ConsumerRecord]:
        """One Fetch per partition leader; at most max_records records."""
        c = self.consumer
        api = "Fetch"
        v = c.version(api)
        out: list[ConsumerRecord] = []
        for leader, topics in sorted(self._fetch_plan(v).items()):
            try:
                resp = c.call(api, v, self._fetch_body(topics, v), leader)
            except Retry as r:
                c.did(ev.Retried, api=api, error=NAME.get(r.code, str(r.code)), attempt=1, backoff_ms=0)
                c._metadata.clear()
                continue
            if resp.get("ErrorCode"):
                c.did(ev.FetchFailed, topic=None, partition=None,
                       error=NAME.get(resp["ErrorCode"], str(resp["ErrorCode"])))
                continue
            names = {c._metadata[t]["id"]: t for t in topics if t in c._metadata} if v >= 13 else {}
            for t in resp["Responses"]:
                name = names.get(t.get("TopicId")) if v >= 13 else t.get("Topic")
                for p in t["Partitions"]:
                    out.extend(self._fetched_partition((name, p["PartitionIndex"]), p, max_records - len(out)))
        if out:
            c.did(ev.Fetched, records=len(out), partitions=tuple(sorted({(r.topic, r.partition) for r in out})),
                   isolation="read_committed" if c.isolation else "read_uncommitted")
        return out

    def _fetch_plan(self, v: int) -> dict[int, dict[str, list[int]]]:
        """The assigned partitions with a position, by leader; a partition whose metadata is missing
        (or, from v13, its topic id) drops its topic's metadata to be refetched next poll."""
        c = self.consumer
        by_leader: dict[int, dict[str, list[int]]] = {}
        for t, p in sorted(c._positions):
            if (t, p) not in c._assigned:
                continue
            info = c.topic_info(t)
            if info is None or p not in info["partitions"] or (v >= 13 and info["id"] is None):
                c._metadata.pop(t, None)
                continue
            by_leader.setdefault(info["partitions"][p], {}).setdefault(t, []).append(p)
        return by_leader

    def _fetch_body(self, topics: dict[str, list[int]], v: int) -> dict:
        c = self.consumer
        req_topics = []
        for t, ps in topics.items():
            if v >= 13 and t not in c._metadata:
                continue        # dropped above for one of its partitions: refetched next poll
            entry = {"TopicId": c._metadata[t]["id"]} if v >= 13 else {"Topic": t}
            entry["Partitions"] = [{"Partition": p, "CurrentLeaderEpoch": -1, "FetchOffset": c._positions[(t, p)],
                                    "LastFetchedEpoch": -1, "LogStartOffset": -1, "PartitionMaxBytes": 1048576}
                                   for p in ps]
            req_topics.append(entry)
        return {"ReplicaId": -1, "ReplicaState": {"ReplicaId": -1, "ReplicaEpoch": -1}, "MaxWaitMs": 500,
                "MinBytes": 1, "MaxBytes": 52428800, "IsolationLevel": c.isolation, "SessionId": 0,
                "SessionEpoch": -1, "Topics": req_topics, "ForgottenTopicsData": [], "RackId": ""}

    def _fetched_partition(self, tp: tuple, p: dict, room: int) -> list[ConsumerRecord]:
        """One partition of a Fetch response: its records (at most `room`), or its error acted on."""
        c = self.consumer
        if tp not in c._positions:
            return []
        code = p["ErrorCode"]
        if code in METADATA_ERRORS:
            c.did(ev.FetchFailed, topic=tp[0], partition=tp[1], error=NAME[code])
            c._metadata.pop(tp[0], None)
            return []
        if code == E["OFFSET_OUT_OF_RANGE"]:
            c.did(ev.FetchFailed, topic=tp[0], partition=tp[1], error=NAME[code])
            c._positions.pop(tp, None)
            c.offsets.reset_positions([tp])
            return []
        if code:
            raise c.fail(ConsumerError(code, api="Fetch", partitions=[tp]))
        if room <= 0:
            return []
        return self._records(tp, bytes(p["Records"] or b""), p.get("AbortedTransactions"), room)

    def _records(self, tp, data: bytes, aborted, room: int) -> list[ConsumerRecord]:
        """CompletedFetch: skip records before the position, control batches, and (read_committed)
        the batches of aborted transactions; the position moves past everything consumed."""
        if not data:
            return []
        c = self.consumer
        pos = c._positions[tp]
        batches = read_batches(data)
        pending_aborts = sorted(((a["FirstOffset"], a["ProducerId"]) for a in (aborted or [])), reverse=True)
        aborted_pids: set[int] = set()
        out: list[ConsumerRecord] = []
        for b in batches:
            last = b["base_offset"] + b["last_offset_delta"]
            if last < pos:
                continue
            if c.isolation == 1 and b["producer_id"] >= 0:
                while pending_aborts and pending_aborts[-1][0] <= last:
                    aborted_pids.add(pending_aborts.pop()[1])
                if b["is_control"]:
                    if any((r.get("control") or {}).get("type") == "ABORT" for r in b["records"]):
                        aborted_pids.discard(b["producer_id"])
                elif b["is_transactional"] and b["producer_id"] in aborted_pids:
                    c.did(ev.AbortedSkipped, topic=tp[0], partition=tp[1], producer_id=b["producer_id"],
                           first_offset=b["base_offset"], last_offset=last)
                    pos = last + 1
                    continue
            if b["is_control"]:
                pos = last + 1
                continue
            for r in b["records"]:
                if r["offset"] < pos:
                    continue
                if len(out) >= room:
                    c._positions[tp] = pos
                    return out
                out.append(ConsumerRecord(tp[0], tp[1], r["offset"], r["key"], r["value"],
                                          tuple(r["headers"]), r["timestamp"]))
                pos = r["offset"] + 1
            pos = max(pos, last + 1)
        c._positions[tp] = pos
        return out
