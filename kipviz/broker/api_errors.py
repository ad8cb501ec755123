"""Errors each version of an RPC can return, as data the model's handlers declare: one row per
error with the first (and last) version the broker answers it at. `errors_by_version(api)` turns the
rows into {version: [error names]} for the versions the kit defines; the review, the wire explorer
and notebooks read it (one path).

Sources: Kafka's request/response schema comments and the handlers they describe
(clients/src/main/resources/common/message/*Response.json "Version N adds ..." notes,
core/src/main/scala/kafka/server/KafkaApis.scala); KIP-1319 for TxnOffsetCommit v6 (FACTS (h));
KIP-1289's page (seed 004) for the proposed TxnShareAcknowledge, whose rows must cover every code
broker/share_txn.stage can answer. tests/test_api_errors.py checks every error any scenario's
broker answers against these rows, and the schema comments of Kafka 4.3 that name an error code."""
from __future__ import annotations

from .error_codes import ERRORS

__all__ = ["ERROR_ROWS", "errors_by_version", "new_errors", "APIS"]

_AUTH_TXN = ("TRANSACTIONAL_ID_AUTHORIZATION_FAILED",)
_COORD = ("COORDINATOR_NOT_AVAILABLE", "NOT_COORDINATOR", "COORDINATOR_LOAD_IN_PROGRESS")


def _rows(since: int, names, source: str, until: int | None = None) -> list[tuple]:
    return [(n, since, until, source) for n in names]


# api -> [(error name, first version, last version or None, source)]
ERROR_ROWS: dict[str, list[tuple]] = {
    "Produce": _rows(0, ("UNKNOWN_TOPIC_OR_PARTITION", "NOT_LEADER_OR_FOLLOWER", "MESSAGE_TOO_LARGE", "CORRUPT_MESSAGE",
                         "INVALID_REQUIRED_ACKS", "NOT_ENOUGH_REPLICAS", "REQUEST_TIMED_OUT",
                         "TOPIC_AUTHORIZATION_FAILED"), "ProduceResponse.json")
    + _rows(3, ("OUT_OF_ORDER_SEQUENCE_NUMBER", "DUPLICATE_SEQUENCE_NUMBER", "INVALID_PRODUCER_EPOCH",
                "INVALID_TXN_STATE", "INVALID_PRODUCER_ID_MAPPING") + _AUTH_TXN, "KIP-98 (Produce v3)")
    + _rows(4, ("KAFKA_STORAGE_ERROR",), "ProduceResponse.json: 'Version 4 added KAFKA_STORAGE_ERROR'")
    + _rows(8, ("INVALID_RECORD",), "KIP-467 (Produce v8)")
    + _rows(11, ("TRANSACTION_ABORTABLE",), "KIP-890 (Produce v11)")
    + _rows(13, ("UNKNOWN_TOPIC_ID",), "KIP-516 (Produce v13, ProduceResponse.json: 'May return UNKNOWN_TOPIC_ID')"),
    "Fetch": _rows(0, ("UNKNOWN_TOPIC_OR_PARTITION", "NOT_LEADER_OR_FOLLOWER", "OFFSET_OUT_OF_RANGE",
                       "TOPIC_AUTHORIZATION_FAILED"), "FetchResponse.json")
    + _rows(6, ("KAFKA_STORAGE_ERROR",), "FetchResponse.json: 'Starting in version 6, we may return KAFKA_STORAGE_ERROR'")
    + _rows(7, ("FETCH_SESSION_ID_NOT_FOUND", "INVALID_FETCH_SESSION_EPOCH"), "KIP-227 (Fetch v7)")
    + _rows(9, ("FENCED_LEADER_EPOCH", "UNKNOWN_LEADER_EPOCH"), "KIP-320 (Fetch v9)")
    + _rows(13, ("UNKNOWN_TOPIC_ID", "INCONSISTENT_TOPIC_ID"), "KIP-516 (Fetch v13)"),
    "InitProducerId": _rows(0, _COORD + _AUTH_TXN + ("CONCURRENT_TRANSACTIONS", "INVALID_TRANSACTION_TIMEOUT"),
                            "InitProducerIdResponse.json")
    + _rows(3, ("INVALID_PRODUCER_EPOCH",), "KIP-360 (InitProducerId v3)")
    + _rows(4, ("PRODUCER_FENCED",), "InitProducerIdResponse.json (KIP-588, v4)")
    + _rows(5, ("TRANSACTION_ABORTABLE",), "KIP-890 (InitProducerId v5)"),
    "AddPartitionsToTxn": _rows(0, _COORD + _AUTH_TXN + ("CONCURRENT_TRANSACTIONS", "INVALID_PRODUCER_EPOCH",
                                                          "INVALID_PRODUCER_ID_MAPPING", "INVALID_TXN_STATE",
                                                          "TOPIC_AUTHORIZATION_FAILED", "OPERATION_NOT_ATTEMPTED",
                                                          "UNKNOWN_TOPIC_OR_PARTITION"),
                                "AddPartitionsToTxnResponse.json")
    + _rows(2, ("PRODUCER_FENCED",), "KIP-588 (AddPartitionsToTxn v2)")
    + _rows(5, ("TRANSACTION_ABORTABLE",), "KIP-890 (AddPartitionsToTxn v5)"),
    "EndTxn": _rows(0, _COORD + _AUTH_TXN + ("CONCURRENT_TRANSACTIONS", "INVALID_PRODUCER_EPOCH",
                                             "INVALID_PRODUCER_ID_MAPPING", "INVALID_TXN_STATE"),
                    "EndTxnResponse.json")
    + _rows(2, ("PRODUCER_FENCED",), "KIP-588 (EndTxn v2)")
    + _rows(4, ("TRANSACTION_ABORTABLE",), "KIP-890 (EndTxn v4)"),
    "TxnOffsetCommit": _rows(0, _COORD + _AUTH_TXN + ("GROUP_AUTHORIZATION_FAILED", "TOPIC_AUTHORIZATION_FAILED",
                                                      "INVALID_PRODUCER_EPOCH", "UNKNOWN_TOPIC_OR_PARTITION",
                                                      "OFFSET_METADATA_TOO_LARGE", "INVALID_COMMIT_OFFSET_SIZE"),
                             "TxnOffsetCommitResponse.json")
    + _rows(3, ("UNKNOWN_MEMBER_ID", "ILLEGAL_GENERATION", "FENCED_INSTANCE_ID"), "KIP-447 (TxnOffsetCommit v3)")
    + _rows(4, ("TRANSACTION_ABORTABLE",), "KIP-890 (TxnOffsetCommit v4)")
    + _rows(6, ("GROUP_ID_NOT_FOUND", "STALE_MEMBER_EPOCH", "UNKNOWN_TOPIC_ID"), "KIP-1319 (TxnOffsetCommit v6)"),
    "ShareFetch": _rows(0, ("UNKNOWN_TOPIC_ID", "UNKNOWN_TOPIC_OR_PARTITION", "NOT_LEADER_OR_FOLLOWER",
                            "TOPIC_AUTHORIZATION_FAILED", "GROUP_AUTHORIZATION_FAILED", "UNKNOWN_MEMBER_ID",
                            "SHARE_SESSION_NOT_FOUND", "INVALID_SHARE_SESSION_EPOCH", "INVALID_RECORD_STATE",
                            "INVALID_REQUEST", "KAFKA_STORAGE_ERROR"), "KIP-932 ShareFetchResponse.json"),
    "ShareAcknowledge": _rows(0, ("UNKNOWN_TOPIC_ID", "UNKNOWN_TOPIC_OR_PARTITION", "NOT_LEADER_OR_FOLLOWER",
                                  "TOPIC_AUTHORIZATION_FAILED", "GROUP_AUTHORIZATION_FAILED", "UNKNOWN_MEMBER_ID",
                                  "SHARE_SESSION_NOT_FOUND", "INVALID_SHARE_SESSION_EPOCH", "INVALID_RECORD_STATE",
                                  "INVALID_REQUEST", "KAFKA_STORAGE_ERROR"), "KIP-932 ShareAcknowledgeResponse.json"),
    # KIP-1289 (PROPOSED): what broker/share_txn.stage answers, plus the page's list
    "TxnShareAcknowledge": _rows(0, ("INVALID_REQUEST", "UNSUPPORTED_VERSION", "GROUP_AUTHORIZATION_FAILED",
                                     "TOPIC_AUTHORIZATION_FAILED", "TRANSACTIONAL_ID_NOT_FOUND",
                                     "INVALID_PRODUCER_ID_MAPPING", "PRODUCER_FENCED", "INVALID_PRODUCER_EPOCH",
                                     "INVALID_TXN_STATE", "UNKNOWN_MEMBER_ID", "STALE_MEMBER_EPOCH",
                                     "UNKNOWN_TOPIC_ID", "UNKNOWN_TOPIC_OR_PARTITION", "NOT_LEADER_OR_FOLLOWER",
                                     "INVALID_RECORD_STATE", "OPERATION_NOT_ATTEMPTED") + _AUTH_TXN + _COORD,
                                 "broker/share_txn.stage (KIP-1289 page)"),
}

#: errors KIP-1289's page lists for TxnShareAcknowledge that the model never answers (a departure)
PAGE_ONLY = {"TxnShareAcknowledge": ("TRANSACTION_ABORTABLE", "KAFKA_STORAGE_ERROR")}

APIS = tuple(ERROR_ROWS)


def _versions(api: str) -> list[int]:
    from ..schema import registry
    try:
        return list(registry.get(api + "Request").versions)
    except Exception:      # an RPC the kit has no definition of: the versions the rows name
        rows = ERROR_ROWS.get(api, [])
        return list(range(0, max((r[1] for r in rows), default=0) + 1))


def errors_by_version(api: str) -> dict[int, list[str]]:
    """{version: sorted error names the broker can answer at that version} (NONE not listed).
    An API without rows raises KeyError naming the ones that have them."""
    if api not in ERROR_ROWS:
        raise KeyError(f"no error table for {api!r}; known: {', '.join(APIS)}")
    out = {}
    for v in _versions(api):
        out[v] = sorted({n for n, lo, hi, _ in ERROR_ROWS[api] if lo <= v and (hi is None or v <= hi)})
    return out


def new_errors(api: str, old: int, new: int) -> dict[str, list[str]]:
    """What changes between two versions: {"added": [...], "removed": [...]}, with sources."""
    t = errors_by_version(api)
    a, b = set(t.get(old, ())), set(t.get(new, ()))
    return {"added": sorted(b - a), "removed": sorted(a - b)}


def error_diff(api: str, a: int, b: int) -> list[dict]:
    """Rows {path "(errors)", change "error added"/"error removed", detail "NAME (source)"} for a
    version diff; none for an RPC without an error table."""
    if api not in ERROR_ROWS:
        return []
    d = new_errors(api, a, b)
    return ([{"path": "(errors)", "change": "error added", "detail": f"{n} ({source_of(api, n)})"}
             for n in d["added"]] +
            [{"path": "(errors)", "change": "error removed", "detail": n} for n in d["removed"]])


def source_of(api: str, error: str) -> str:
    return next((s for n, _, _, s in ERROR_ROWS.get(api, []) if n == error), "")


def _check() -> None:
    unknown = {n for rows in ERROR_ROWS.values() for n, *_ in rows if n not in ERRORS}
    if unknown:
        raise AssertionError(f"error names not in error_codes.ERRORS: {sorted(unknown)}")


_check()
