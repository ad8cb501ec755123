"""KIP-1289 (PROPOSED, voting): a transactional producer stages share-group acknowledgements in
its transaction with TxnShareAcknowledge, one request per share-partition leader (the KIP's
additions to producer/internals/TransactionManager.java)."""
from __future__ import annotations

from ..schema import events as ev
from ..schema.error_codes import NAME, RETRIABLE
from .base import NETWORK_EXCEPTION, E, Retry
from .producer_errors import (
    FENCED,
    OPERATION_NOT_ATTEMPTED_CODE,
    AbortableError,
    CommitFailedError,
    FatalError,
    IllegalStateError,
    ProducerError,
    ProducerFencedError,
    UnsupportedVersionError,
)


class TxnShareAcks:
    """Producer.send_share_acknowledgements_to_transaction and its TxnShareAcknowledge requests."""

    def __init__(self, producer):
        self.producer = producer

    def send(self, acknowledgements: dict, share_group_metadata) -> None:
        """KIP-1289 (proposed, voting): stage share-group acknowledgements in this transaction.

        acknowledgements: {(topic name or topic id, partition): [(offset, type), ...]} or
        {(..., partition): {offset: type}} (the share consumer's pending acks, e.g.
        ShareConsumer.transactional_acknowledgements()), or lists of AcknowledgementBatch dicts.
        Only ACCEPT (1) and REJECT (3) are valid; the broker answers INVALID_RECORD_STATE otherwise.
        share_group_metadata: ShareConsumer.share_group_metadata() ({group_id, member_id,
        member_epoch}, dict or object).

        One TxnShareAcknowledge per share-partition leader (found through Metadata). If the
        broker does not advertise TxnShareAcknowledge (share.version 1, old broker) this raises
        UnsupportedVersionError at once, with no bytes sent and the transaction still open, so the
        caller can abort it (KIP-1289 corner case 9). Model simplification: the call waits for the
        answers (Kafka's Sender would report errors at commit/abort); STALE_MEMBER_EPOCH /
        UNKNOWN_MEMBER_ID raise CommitFailedError and INVALID_RECORD_STATE AbortableError
        (abortable), PRODUCER_FENCED / INVALID_PRODUCER_EPOCH ProducerFencedError (fatal)."""
        pr = self.producer
        api = "TxnShareAcknowledge"
        if not pr.transactional_id:
            raise IllegalStateError("not a transactional producer (no transactional.id)")
        pr.require("IN_TRANSACTION", what="send share acknowledgements")
        gm = _share_group_metadata(share_group_metadata)
        pr.api_versions()
        theirs = pr.broker_versions.get(api)
        if theirs is None or pr.client_max(api) < theirs[0]:
            err = UnsupportedVersionError("UNSUPPORTED_VERSION", f"the broker does not advertise {api} "
                                          "(share.version < 2 or an old broker); KIP-1289 is proposed", api=api)
            pr.last_error = err
            pr.did(ev.ClientError, error=err.error, code=err.code, api=api, error_class=type(err).__name__,
                    synchronous=True, bytes_sent=0)
            raise err
        pending = {(tp[0], tp[1]): _ack_map(v) for tp, v in acknowledgements.items()}
        pending = {k: v for k, v in pending.items() if v}
        if not pending:
            return
        n = sum(len(v) for v in pending.values())
        try:
            pr.retrying(api, lambda: self._once(pending, gm))
        except ProducerError as e:
            pr.did(ev.ShareAcksFailed, group_id=gm["group_id"], error=e.error, records=n)
            raise
        pr.transactions.started = True
        pr.did(ev.ShareAcksSent, group_id=gm["group_id"], member_id=gm["member_id"],
                member_epoch=gm["member_epoch"], records=n)

    def _topic_by_key(self, key) -> tuple[str, object] | None:
        """(name, topic id) for a topic given by name or id (Metadata for all topics if an id is new)."""
        pr = self.producer
        if isinstance(key, str):
            info = pr.topic_info(key)
            return (key, info["id"]) if info and info["id"] is not None else None
        if key not in pr._names:
            v = pr.choose_version("Metadata")
            resp = pr.call("Metadata", v, {"Topics": None, "AllowAutoTopicCreation": False,
                                            "IncludeClusterAuthorizedOperations": False,
                                            "IncludeTopicAuthorizedOperations": False}, pr.bootstrap_broker)
            for t in resp["Topics"]:
                if t["ErrorCode"] or t.get("Name") is None or t.get("TopicId") is None:
                    continue
                pr._names[t["TopicId"]] = t["Name"]
                pr._metadata[t["Name"]] = {"id": t["TopicId"], "partitions": {
                    x["PartitionIndex"]: x["LeaderId"] for x in t["Partitions"]}, **pr.metadata_extra(v)}
        name = pr._names.get(key)
        return (name, key) if name is not None and pr.topic_info(name) is not None else None

    def _by_leader(self, pending: dict) -> dict[int, dict]:
        """The pending acknowledgements' partitions by leader ({leader: {key: topic id}}); a partition
        the metadata does not know: Retry after a metadata refresh."""
        pr = self.producer
        by_leader: dict[int, dict] = {}
        for key in list(pending):
            found = self._topic_by_key(key[0])
            info = pr.topic_info(found[0]) if found else None
            if info is None or key[1] not in info["partitions"]:
                raise Retry(E["UNKNOWN_TOPIC_OR_PARTITION"], refresh="metadata")
            by_leader.setdefault(info["partitions"][key[1]], {})[key] = found[1]
        return by_leader

    def _once(self, pending: dict, gm: dict) -> None:
        pr = self.producer
        api = "TxnShareAcknowledge"
        v = pr.choose_version(api)
        retry = None
        for leader, keys in sorted(self._by_leader(pending).items()):
            topics: dict = {}
            for key, tid in keys.items():
                topics.setdefault(tid, []).append({"PartitionIndex": key[1],
                                                   "AcknowledgementBatches": _ack_batches(pending[key])})
            resp = pr.call(api, v, {"TransactionalId": pr.transactional_id, "GroupId": gm["group_id"],
                                     "ProducerId": pr.producer_id, "ProducerEpoch": pr.producer_epoch,
                                     "MemberId": gm["member_id"], "MemberEpoch": gm["member_epoch"],
                                     "Topics": [{"TopicId": tid, "Partitions": ps} for tid, ps in topics.items()]},
                              leader)
            code = resp["ErrorCode"]
            if code:
                self._error(code, api)
            codes = [p["ErrorCode"] for t in resp["Responses"] for p in t["Partitions"]]
            real = [c for c in codes if c and c != OPERATION_NOT_ATTEMPTED_CODE]
            if not real and not any(codes):
                for key in keys:
                    pending.pop(key, None)
                continue
            bad = real[0] if real else OPERATION_NOT_ATTEMPTED_CODE
            pr.did(ev.TxnShareAckFailed, error=NAME.get(bad, str(bad)), version=v, broker=leader)
            if bad in (E["NOT_LEADER_OR_FOLLOWER"], E["UNKNOWN_TOPIC_OR_PARTITION"], E["UNKNOWN_TOPIC_ID"]):
                retry = bad
                continue
            if bad in RETRIABLE:
                retry = bad
                continue
            raise pr.fail(AbortableError(bad, api=api))
        if pending:
            raise Retry(E["UNKNOWN_SERVER_ERROR"] if retry is None else retry, refresh="metadata")

    def _error(self, code: int, api: str) -> None:
        pr = self.producer
        if code in FENCED:
            raise pr.fail(ProducerFencedError(code, api=api))
        if code in (E["STALE_MEMBER_EPOCH"], E["UNKNOWN_MEMBER_ID"]):
            raise pr.fail(CommitFailedError(code, api=api))
        if code in (E["CONCURRENT_TRANSACTIONS"], E["COORDINATOR_LOAD_IN_PROGRESS"], E["COORDINATOR_NOT_AVAILABLE"],
                    E["NOT_COORDINATOR"], NETWORK_EXCEPTION):
            raise Retry(code)
        if code in (E["GROUP_AUTHORIZATION_FAILED"], E["TOPIC_AUTHORIZATION_FAILED"], E["TRANSACTION_ABORTABLE"],
                    E["INVALID_PRODUCER_ID_MAPPING"], E["INVALID_RECORD_STATE"]):
            raise pr.fail(AbortableError(code, api=api))
        raise pr.fail(FatalError(code, api=api))


def _share_group_metadata(gm) -> dict:
    """ShareGroupMetadata (KIP-1289, proposed): {group_id, member_id, member_epoch}."""
    get = gm.get if isinstance(gm, dict) else (lambda k, d=None: getattr(gm, k, d))
    if get("group_id") is None:
        raise IllegalStateError("share_group_metadata needs a group_id")
    return {"group_id": get("group_id"), "member_id": get("member_id", "") or "",
            "member_epoch": get("member_epoch", 0)}


def _ack_map(acks) -> dict[int, int] | list[dict]:
    """{offset: type} from [(offset, type)], {offset: type}; AcknowledgementBatch dicts pass through."""
    if isinstance(acks, dict):
        return {int(o): int(t) for o, t in acks.items()}
    acks = list(acks)
    if acks and isinstance(acks[0], dict):
        return acks
    return {int(o): int(t) for o, t in acks}


def _ack_batches(acks) -> list[dict]:
    """Runs of consecutive offsets with one type -> AcknowledgementBatches (one type per batch)."""
    if isinstance(acks, list):
        return acks
    out: list[dict] = []
    for o, t in sorted(acks.items()):
        if out and out[-1]["LastOffset"] == o - 1 and out[-1]["AcknowledgeTypes"] == [t]:
            out[-1]["LastOffset"] = o
        else:
            out.append({"FirstOffset": o, "LastOffset": o, "AcknowledgeTypes": [t]})
    return out
