"""The data path: Produce, Fetch and ListOffsets, after released Kafka (`KafkaApis`,
`ReplicaManager`, `UnifiedLog`/`ProducerStateManager`), with topic ids (KIP-516's page).

    Produce      one v2 record batch per partition, appended to the leader's PartitionLog (one
                 RecordAppended event per record). v13 names topics by TopicId: an unknown or
                 deleted id gets UNKNOWN_TOPIC_ID, so a producer holding the id of a deleted topic
                 cannot write into a new topic that reuses the name. Transactional batches are first
                 checked by the transaction coordinator (cluster.txns.check_produce, KIP-890);
                 idempotent batches go through the producer-state checks (epoch, sequence,
                 duplicate batches are answered with their first offset and not written again).
                 The log keeps the producer's batch as LogValidator does (kept_as_sent, stored_batch):
                 its records and timestamps as sent, offsets and leader epoch assigned; the
                 topic's compression.type and message.timestamp.type (LogAppendTime) as
                 kipviz.broker.log_validator says.
    Fetch        the stored batches from the fetch offset up to the high watermark
                 (read_uncommitted) or the last stable offset (read_committed, with the aborted
                 transactions of the range). v13+ names topics by TopicId (stale id ->
                 UNKNOWN_TOPIC_ID: the stale-read case of KIP-516).
    ListOffsets  -1 latest (read_committed: the LSO), -2 earliest, -3 max timestamp, -4 earliest
                 local, -5/-6 tiered (no tiered storage: -1), other values: the first record at or
                 after that timestamp.

Not simulated: replication (the high watermark is the log end; the log start is 0 unless log
retention moved it, kipviz.broker.retention), incremental
fetch sessions (a broker with no session slots: SessionId 0 is answered, an incremental request
gets FETCH_SESSION_ID_NOT_FOUND), long polling unless ClusterConfig.long_poll (MaxWaitMs/MinBytes:
answered at once) and the message.timestamp.before/after.max.ms checks."""
from __future__ import annotations

from collections import deque

from ...errors import DecodeError
from ...records import RecordLimitError, read_batches, write_batch
from ...records.header import (
    COMPRESSION_MASK,
    HEADER_SIZE,
    MAGIC_OFFSET,
    batch_size,
    is_transactional,
    read_header,
    restamp,
)
from ...schema import events as ev
from ...schema.error_codes import CODE
from ...uuids import ZERO_UUID
from .. import log_validator
from ..deferred import DEFERRED
from ..error_rows import kafka_only, rows
from ..topics import changes
from . import CLOSE, Request, handles
from .metadata import (
    CLUSTER_RESOURCE,
    epoch_error,
    is_zero,
    leader_alive,
    log_of,
    model_state,
    node,
    replicas_of,
    shape,
)

NONE = 0
NO_OFFSET = -1
NO_TIMESTAMP = -1
INT32_MAX = 2**31 - 1
MAX_DUPLICATE_BATCHES = 5            # ProducerStateEntry.NUM_BATCHES_TO_RETAIN

# ListOffsets special timestamps (ListOffsetsRequest)
LATEST, EARLIEST, MAX_TIMESTAMP, EARLIEST_LOCAL, LATEST_TIERED, EARLIEST_PENDING_UPLOAD = -1, -2, -3, -4, -5, -6
DEBUGGING_REPLICA_ID = -2


def _resolve_topic(cluster, v: int, entry: dict, id_from: int, name_key: str):
    """(topic or None, name, unknown-topic code) for a request topic named by id from `id_from`."""
    if v >= id_from:
        tid = entry.get("TopicId")
        t = None if is_zero(tid) else cluster.topics.live(tid)
        return t, (t.name if t else None), CODE["UNKNOWN_TOPIC_ID"]
    name = entry.get(name_key)
    return cluster.topics.get(name), name, CODE["UNKNOWN_TOPIC_OR_PARTITION"]


def _leader_hint(cluster, log) -> dict:
    alive = leader_alive(cluster, log)
    return {"LeaderId": log.leader if alive else -1, "LeaderEpoch": log.leader_epoch if alive else -1}


# ---- Produce ----------------------------------------------------------------------------------------
# size: ProduceRequest.validateRecords and LogValidator's checks in Kafka's order, the first failing one answers
def _parse_records(records, version: int, config, records_left: int, max_bytes: int | None = None):
    """ProduceRequest.validateRecords + the log validator: (batch, 0) or (None, error code, message).
    `records_left`: how many more records this Produce may append (ClusterConfig.max_produce_records)."""
    if not records:
        return None, CODE["INVALID_RECORD"], (f"Produce requests with version {version} must have at least "
                                             "one record batch per partition")
    if len(records) > MAGIC_OFFSET and records[MAGIC_OFFSET] != 2:
        return None, CODE["INVALID_RECORD"], (f"Produce requests with version {version} are only allowed to "
                                             "contain record batches with magic version 2")
    if len(records) >= 12:
        # UnifiedLog.analyzeAndValidateRecords: a batch larger than message.max.bytes, before its CRC
        size = batch_size(records)
        limit = config.message_max_bytes if max_bytes is None else max_bytes     # the topic's max.message.bytes
        if limit < size <= len(records):
            return None, CODE["MESSAGE_TOO_LARGE"], (f"The record batch size in the append is {size} bytes which "
                                                     f"exceeds the maximum configured value of {limit}.")
    head = read_header(records, 0) if len(records) >= HEADER_SIZE else None
    if head is not None and head[5] & COMPRESSION_MASK and head[12] > records_left:
        # a compressed batch announcing more records than this Produce may append is refused
        # before it is decompressed (a 6 KB zstd batch can hold 9.6M records)
        return None, CODE["MESSAGE_TOO_LARGE"], (
            f"kipviz limit: one Produce appends at most {config.max_produce_records} records and headers "
            f"(ClusterConfig.max_produce_records): RecordsCount {head[12]} passes the {records_left} left")
    try:
        batches = read_batches(records, strict=True, max_records=records_left)
    except RecordLimitError as e:
        return None, CODE["MESSAGE_TOO_LARGE"], (f"kipviz limit: one Produce appends at most "
                                                 f"{config.max_produce_records} records and headers "
                                                 f"(ClusterConfig.max_produce_records): {e}")
    except DecodeError as e:
        if "cramjam" in str(e):
            return None, CODE["UNSUPPORTED_COMPRESSION_TYPE"], str(e)
        return None, CODE["CORRUPT_MESSAGE"], str(e)
    if len(batches) != 1:
        return None, CODE["INVALID_RECORD"], (f"Produce requests with version {version} are only allowed to "
                                             "contain exactly one record batch per partition")
    b = batches[0]
    if version < 7 and b["compression"] == "zstd":
        return None, CODE["UNSUPPORTED_COMPRESSION_TYPE"], (f"Produce requests with version {version} are not "
                                                           "allowed to use ZStandard compression")
    if b["is_control"]:
        return None, CODE["INVALID_RECORD"], "Clients are not allowed to write control records"
    if not b["records"]:
        return None, CODE["INVALID_RECORD"], "Record batch has no records"
    if b["is_transactional"] and b["producer_id"] < 0:
        return None, CODE["INVALID_RECORD"], "A transactional batch needs a producer id"
    if b["producer_id"] >= 0 and b["base_sequence"] < 0:
        return None, CODE["INVALID_RECORD"], (f"Invalid sequence number {b['base_sequence']} in record batch "
                                             f"with producerId {b['producer_id']}")
    return b, NONE, None


def kept_as_sent(batch: dict, codec: str | None = None) -> bool:
    """Whether the log keeps the produced `batch` (read strictly) in place, as LogValidator does:
    an uncompressed batch stored uncompressed always (assignOffsetsNonCompressed); otherwise when
    the topic stores the producer's codec (compression.type producer, or the same codec) and the
    records' offset deltas are 0, 1, 2, ... (validateMessagesAndAssignOffsetsCompressed's
    inPlaceAssignment). Otherwise the batch is built again (buildRecordsAndAssignOffsets), with
    the topic's codec. `codec`: log_validator.stored_form's (None: the producer's)."""
    if codec not in (None, batch["compression"]):
        return False
    if batch["compression"] == "none":
        return True
    return all(r["offset_delta"] == i for i, r in enumerate(batch["records"]))


def stored_batch(batch: dict, raw: bytes, base: int, leader_epoch: int, codec: str | None = None,
                 timestamp_type: str = "CreateTime", now: int = -1) -> bytes:
    """The bytes the log stores for a produced batch at offset `base`: the producer's batch with
    its base offset, partition leader epoch and max timestamp assigned in place, or, where
    LogValidator rebuilds it, the same records (their own timestamps) with consecutive offsets and
    the topic's codec (`codec`; None: the producer's). LogAppendTime: the batch says so and its
    max timestamp is `now` (setMaxTimestamp(LOG_APPEND_TIME, now); the records keep theirs)."""
    records = batch["records"]
    lat = timestamp_type == "LogAppendTime"
    max_ts = now if lat else max(r["timestamp"] for r in records)
    if kept_as_sent(batch, codec):
        return restamp(raw, base, leader_epoch, max_ts, lat)
    return write_batch([(r["key"], r["value"], r["headers"], r["timestamp"]) for r in records],
                       base_offset=base, partition_leader_epoch=leader_epoch,
                       compression=batch["compression"] if codec is None else codec,
                       timestamp_type=timestamp_type, max_timestamp=max_ts,
                       producer_id=batch["producer_id"], producer_epoch=batch["producer_epoch"],
                       base_sequence=batch["base_sequence"], is_transactional=batch["is_transactional"])


def _in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == INT32_MAX)


def _producer_check(cluster, log, batch) -> tuple[int, int | None, str | None]:
    """ProducerStateManager for an idempotent/transactional batch: (code, duplicate's base offset,
    message). The current epoch is that of the producer's last entry in the log (a data batch or a
    transaction marker, so a TV2 marker's epoch bump counts); a new epoch starts at sequence 0."""
    pid, epoch = batch["producer_id"], batch["producer_epoch"]
    first_seq = batch["base_sequence"]
    last_seq = (first_seq + batch["last_offset_delta"]) % (INT32_MAX + 1)
    producers = model_state(cluster)["producers"]
    key = (log.topic_id, log.partition, pid)
    entry = producers.get(key)
    log_epoch = log.last_epoch(pid)
    if entry is None or (log_epoch is not None and log_epoch != entry["epoch"]):
        entry = {"epoch": log_epoch if log_epoch is not None else -1, "batches": deque(maxlen=MAX_DUPLICATE_BATCHES)}
    current = entry["epoch"]
    if current >= 0 and epoch < current:
        return (CODE["INVALID_PRODUCER_EPOCH"], None,
                f"Epoch of producer {pid} is {epoch}, which is smaller than the last seen epoch {current}")
    if epoch == current:
        for b_first, b_last, b_offset in entry["batches"]:
            if b_first == first_seq and b_last == last_seq:
                return NONE, b_offset, None
    if epoch != current:
        if first_seq != 0 and current >= 0:
            return (CODE["OUT_OF_ORDER_SEQUENCE_NUMBER"], None,
                    f"Invalid sequence number for new epoch of producer {pid}: {epoch} (request epoch), "
                    f"{first_seq} (seq. number), {current} (current producer epoch)")
    elif entry["batches"] and not _in_sequence(entry["batches"][-1][1], first_seq):
        return (CODE["OUT_OF_ORDER_SEQUENCE_NUMBER"], None,
                f"Out of order sequence number for producer {pid}: {first_seq} (incoming seq. number), "
                f"{entry['batches'][-1][1]} (current end sequence number)")
    elif not entry["batches"] and current >= 0 and first_seq != 0:
        return (CODE["OUT_OF_ORDER_SEQUENCE_NUMBER"], None,
                f"Out of order sequence number for producer {pid}: {first_seq} (incoming seq. number), "
                "-1 (current end sequence number)")
    return NONE, None, None


def _record_producer(cluster, log, batch, base_offset: int) -> None:
    pid = batch["producer_id"]
    producers = model_state(cluster)["producers"]
    key = (log.topic_id, log.partition, pid)
    entry = producers.get(key)
    if entry is None or entry["epoch"] != batch["producer_epoch"]:
        entry = producers[key] = {"epoch": batch["producer_epoch"], "batches": deque(maxlen=MAX_DUPLICATE_BATCHES)}
    first = batch["base_sequence"]
    entry["batches"].append((first, (first + batch["last_offset_delta"]) % (INT32_MAX + 1), base_offset))
    entry["t"] = cluster.now


def expire_producers(cluster) -> int:
    """ProducerStateManager.removeExpiredProducers: forget the producer state (epoch, last batches)
    of producers idle for producer.id.expiration.ms and with no open transaction on the partition,
    so a long-running server's producer table stays bounded. Returns how many went."""
    from ..log_config import broker_entry
    producers = model_state(cluster)["producers"]
    # a dynamic setting (DynamicProducerStateManagerConfig): what AlterConfigs set, else server.properties;
    # the model keeps one producer table, so broker 0's value (or the cluster default) rules
    in_force = broker_entry(cluster, "producer.id.expiration.ms", 0)[0]
    limit = cluster.now - (int(in_force) if in_force is not None else cluster.config.producer_id_expiration_ms)
    gone = []
    for (tid, p, pid), entry in producers.items():
        if entry.get("t", cluster.now) < limit:
            topic = cluster.topics.live(tid)
            log = topic.partitions[p] if topic is not None and p < len(topic.partitions) else None
            if log is None or pid not in log.open_txns:
                gone.append((tid, p, pid))
    for k in gone:
        del producers[k]
    return len(gone)


def _txn_check(cluster, txn_id, batch, topic: str, partition: int, version: int) -> int:
    """Ask the transaction coordinator whether this producer may write this partition
    (KIP-890 verification, or the implicit add of Produce v12+ under transaction version 2)."""
    try:
        txns = cluster.txns
    except ModuleNotFoundError as e:
        if e.name != "kipviz.broker.transactions":
            raise
        return NONE          # HOOK: no transaction coordinator in this build: the write is accepted
    check = getattr(txns, "check_produce", None)
    if check is None:
        return NONE          # HOOK: as above
    return check(txn_id, batch["producer_id"], batch["producer_epoch"], topic, partition, version=version)


# size: one partition of Produce in ReplicaManager's order of checks, first failing check wins, to compare side by side
def _produce_partition(cluster, req: Request, topic, name, unknown_code, pd: dict, acks: int,
                       txn_id, budget: list) -> dict:
    v = req.version
    idx = pd.get("Index", -1)
    out = {"Index": idx, "ErrorCode": NONE, "BaseOffset": NO_OFFSET, "LogAppendTimeMs": -1,
           "LogStartOffset": -1, "RecordErrors": [], "ErrorMessage": None,
           "CurrentLeader": {"LeaderId": -1, "LeaderEpoch": -1}}

    def fail(code, message=None):
        out.update(ErrorCode=code, ErrorMessage=message)
        return out

    if name is None:
        return fail(unknown_code)
    if not cluster.authorized(req.principal, "TOPIC", name, "WRITE"):
        return fail(CODE["TOPIC_AUTHORIZATION_FAILED"])
    log = log_of(topic, idx)
    if log is None:
        return fail(CODE["UNKNOWN_TOPIC_OR_PARTITION"])
    batch, code, message = _parse_records(pd.get("Records"), v, cluster.config, budget[0],
                                          log_validator.max_message_bytes(cluster, topic))
    if code:
        return fail(code, message)
    if batch["last_offset_delta"] + 1 != len(batch["records"]):
        # LogValidator.validateBatch: the batch's offset range must match its record count
        first = batch["base_offset"]
        return fail(CODE["INVALID_RECORD"], f"Inconsistent batch offset range [{first}, "
                    f"{first + batch['last_offset_delta']}] and count of records {len(batch['records'])} "
                    f"in topic partition {name}-{idx}")
    if acks not in (-1, 0, 1):
        return fail(CODE["INVALID_REQUIRED_ACKS"])
    if topic.internal:
        return fail(CODE["INVALID_TOPIC_EXCEPTION"], f"Cannot append to internal topic {name}")
    if log.leader != req.broker or not leader_alive(cluster, log):
        out["CurrentLeader"] = _leader_hint(cluster, log)
        return fail(CODE["NOT_LEADER_OR_FOLLOWER"])
    short = log_validator.min_isr_problem(cluster, topic, log, acks, replicas_of(cluster, topic, log))
    if short:
        return fail(CODE["NOT_ENOUGH_REPLICAS"], short)
    errors = log_validator.key_errors(cluster, topic, batch["records"], f"{name}-{idx}")
    if errors:
        out["RecordErrors"] = errors
        return fail(CODE["INVALID_RECORD"], log_validator.record_errors_message(errors))
    if batch["is_transactional"]:
        code = _txn_check(cluster, txn_id, batch, name, idx, v)
        if code:
            return fail(code)
    if batch["producer_id"] >= 0:
        code, duplicate_of, message = _producer_check(cluster, log, batch)
        if code:
            return fail(code, message)
        if duplicate_of is not None:
            cluster.emit(ev.DuplicateBatch, topic=name, partition=idx, producer_id=batch["producer_id"],
                         base_sequence=batch["base_sequence"], offset=duplicate_of)
            out.update(BaseOffset=duplicate_of, LogStartOffset=log.log_start_offset)
            return out
    records = batch["records"]
    budget[0] -= len(records) + sum(len(r["headers"]) for r in records)   # read_batches' count
    codec, ts_type = log_validator.stored_form(cluster, topic)
    now = cluster.now
    base = log.append_batch(stored_batch(batch, pd["Records"], log.log_end_offset, log.leader_epoch,
                                         codec, ts_type, now), seq=cluster.next_seq)
    if batch["producer_id"] >= 0:
        _record_producer(cluster, log, batch, base)
    pid, epoch, txn = batch["producer_id"], batch["producer_epoch"], batch["is_transactional"]
    # cluster.emit(RecordAppended, topic, partition, offset, record, key, value, producer_id,
    # producer_epoch, transactional, control, broker) per record, inlined (seq = next_seq + i)
    # "timestamp": the record's as a consumer reads it (CreateTime: the producer's; LogAppendTime:
    # the broker's), "client_timestamp": as sent
    events, seq, appended, leader = cluster.events, cluster.next_seq, ev.RecordAppended, log.leader
    lat = ts_type == "LogAppendTime"
    for i, r in enumerate(records):
        key, value = r["key"], r["value"]
        events.append(appended(seq + i, now, name, idx, base + i,
                               {"kind": "data", "key": key, "value": value, "headers": r["headers"],
                                "timestamp": now if lat else r["timestamp"], "client_timestamp": r["timestamp"]},
                               key, value, pid, epoch, txn, False, leader))
    out.update(BaseOffset=base, LogStartOffset=log.log_start_offset,
               LogAppendTimeMs=now if ts_type == "LogAppendTime" else -1)
    return out


# The errors Produce can return, by version (kipviz.broker.api_errors reads ERRORS; the judge in
# tests/test_api_errors.py checks every code the handler below can answer is declared here).
ERRORS = {}
ERRORS["Produce"] = (
    rows(0, ("UNKNOWN_TOPIC_OR_PARTITION", "NOT_LEADER_OR_FOLLOWER", "MESSAGE_TOO_LARGE", "CORRUPT_MESSAGE",
             "INVALID_REQUIRED_ACKS", "NOT_ENOUGH_REPLICAS", "TOPIC_AUTHORIZATION_FAILED"), "ProduceResponse.json")
    + kafka_only(0, ("REQUEST_TIMED_OUT",), "ProduceResponse.json",
                 "the model answers acks=-1 once the batch is appended: no followers to wait for")
    + rows(0, ("INVALID_TOPIC_EXCEPTION",), "ReplicaManager.appendToLocalLog: no client appends to an internal topic")
    # also the kit's answer when a codec library is missing (cramjam), at any version
    + rows(0, ("UNSUPPORTED_COMPRESSION_TYPE",), "ProduceRequest.validateRecords: zstd needs v7+ (KIP-110)", until=6)
    + rows(3, ("OUT_OF_ORDER_SEQUENCE_NUMBER", "INVALID_PRODUCER_EPOCH", "INVALID_TXN_STATE",
               "INVALID_PRODUCER_ID_MAPPING", "TRANSACTIONAL_ID_AUTHORIZATION_FAILED"), "KIP-98 (Produce v3)")
    + kafka_only(3, ("DUPLICATE_SEQUENCE_NUMBER",), "KIP-98 (Produce v3)",
                 "a retried batch among the producer's last five is answered NONE with its first offset "
                 "(ProducerStateManager), so the model never names it")
    + kafka_only(4, ("KAFKA_STORAGE_ERROR",), "ProduceResponse.json: 'Version 4 added KAFKA_STORAGE_ERROR'",
                 "the model has no log directories to fail")
    + rows(8, ("INVALID_RECORD",), "KIP-467 (Produce v8)")
    + rows(11, ("TRANSACTION_ABORTABLE",), "KIP-890 (Produce v11)")
    + rows(13, ("UNKNOWN_TOPIC_ID",), "KIP-516 (Produce v13, ProduceResponse.json: 'May return UNKNOWN_TOPIC_ID')"))


# size: Produce's request-level checks then the per-partition loop, as KafkaApis.handleProduceRequest, check by check side by side
@handles("Produce")
def produce(cluster, req: Request) -> dict:
    v, body = req.version, req.body
    acks = body.get("Acks", -1)
    txn_id = body.get("TransactionalId")
    topic_data = body.get("TopicData") or []
    responses = []

    def forced(code):
        return [{"Name": t.get("Name"), "TopicId": t.get("TopicId") or ZERO_UUID,
                 "PartitionResponses": [{"Index": pd.get("Index", -1), "ErrorCode": code, "BaseOffset": NO_OFFSET,
                                         "LogStartOffset": -1} for pd in t.get("PartitionData") or []]}
                for t in topic_data]

    # RequestUtils.hasTransactionalRecords: the whole request needs WRITE on the transactional id
    has_txn = False
    for t in topic_data:
        for pd in t.get("PartitionData") or []:
            recs = pd.get("Records")
            if recs and is_transactional(recs):
                has_txn = True
    if has_txn and (txn_id is None
                    or not cluster.authorized(req.principal, "TRANSACTIONAL_ID", txn_id, "WRITE")):
        return shape("ProduceResponse", v, {"Responses": forced(CODE["TRANSACTIONAL_ID_AUTHORIZATION_FAILED"]),
                                            "ThrottleTimeMs": 0})
    leaders = set()
    budget = [cluster.config.max_produce_records]     # records this request may still append
    for t in topic_data:
        topic, name, unknown = _resolve_topic(cluster, v, t, 13, "Name")
        parts = []
        for pd in t.get("PartitionData") or []:
            r = _produce_partition(cluster, req, topic, name, unknown, pd, acks, txn_id, budget)
            if r["ErrorCode"] == CODE["NOT_LEADER_OR_FOLLOWER"] and r["CurrentLeader"]["LeaderId"] >= 0:
                leaders.add(r["CurrentLeader"]["LeaderId"])
            parts.append(r)
        responses.append({"Name": t.get("Name"), "TopicId": t.get("TopicId") or ZERO_UUID,
                          "PartitionResponses": parts})
    if acks == 0:
        # KafkaApis.handleProduceRequest: "no operation needed if producer request.required.acks = 0"
        # (KafkaApis.scala handleProduceRequest): nothing is sent; with an error the connection is closed instead, so the
        # client refreshes its metadata
        if any(p["ErrorCode"] for t in responses for p in t["PartitionResponses"]):
            return CLOSE
        return None
    return shape("ProduceResponse", v, {"Responses": responses, "ThrottleTimeMs": 0,
                                        "NodeEndpoints": [node(cluster, b, req.listener) for b in sorted(leaders)]})


# ---- Fetch ------------------------------------------------------------------------------------------
def aborted_transactions(log, start: int, end: int) -> list[dict]:
    """The aborted transactions whose records overlap [start, end): producer id and first offset
    (the broker's aborted-transaction index, PartitionLog.aborted_transactions)."""
    return log.aborted_transactions(start, end)


def _fetch_partition(cluster, req: Request, topic, name, unknown_code, fp: dict, isolation: int,
                     follower: bool, budget: list) -> dict:
    idx = fp.get("Partition", -1)
    out = {"PartitionIndex": idx, "ErrorCode": NONE, "HighWatermark": -1, "LastStableOffset": -1,
           "LogStartOffset": -1, "AbortedTransactions": None, "PreferredReadReplica": -1, "Records": b"",
           "CurrentLeader": {"LeaderId": -1, "LeaderEpoch": -1}}

    def fail(code):
        out["ErrorCode"] = code
        return out

    if name is None:
        return fail(unknown_code)
    if not follower and not cluster.authorized(req.principal, "TOPIC", name, "READ"):
        return fail(CODE["TOPIC_AUTHORIZATION_FAILED"])
    log = log_of(topic, idx)
    if log is None:
        return fail(CODE["UNKNOWN_TOPIC_OR_PARTITION"])
    code = epoch_error(log, fp.get("CurrentLeaderEpoch", -1))
    if code:
        return fail(code)
    if log.leader != req.broker or not leader_alive(cluster, log):
        out["CurrentLeader"] = _leader_hint(cluster, log)
        return fail(CODE["NOT_LEADER_OR_FOLLOWER"])
    hw = log.log_end_offset                     # no replication: everything is replicated at once
    lso = log.last_stable_offset
    offset = fp.get("FetchOffset", 0)
    start = log.log_start_offset               # log retention moves it up (kipviz.broker.retention)
    if offset < start or offset > log.log_end_offset:
        out.update(HighWatermark=hw, LastStableOffset=lso, LogStartOffset=start)
        return fail(CODE["OFFSET_OUT_OF_RANGE"])
    upper = log.log_end_offset if follower else (lso if isolation == 1 else hw)
    limit = max(fp.get("PartitionMaxBytes", INT32_MAX), 0)
    # the held batches from the one holding `offset`, read from the log's store in one go
    i = j = log.find(offset)
    size, end = 0, offset
    while j < len(log.batches):
        first, last, *_, n = log.batch_numbers(j)
        if first >= upper:
            break
        # KIP-74: the first batch of the response is returned even if it exceeds the limits
        if (size + n > limit or n > budget[0]) and (j > i or budget[1]):
            break
        size += n
        budget[0] -= n
        budget[1] = True
        end = last + 1
        j += 1
    out.update(HighWatermark=hw, LastStableOffset=lso, LogStartOffset=start, Records=log.read(i, j))
    if isolation == 1 and not follower:
        out["AbortedTransactions"] = aborted_transactions(log, offset, end)
    return out


ERRORS["Fetch"] = (
    rows(0, ("UNKNOWN_TOPIC_OR_PARTITION", "NOT_LEADER_OR_FOLLOWER", "OFFSET_OUT_OF_RANGE",
             "TOPIC_AUTHORIZATION_FAILED"), "FetchResponse.json")
    + rows(4, ("INVALID_REQUEST",), "the kit's answer to an IsolationLevel other than 0 or 1 (v4 adds the field; "
                                   "Kafka's IsolationLevel.forId rejects it)")
    + kafka_only(6, ("KAFKA_STORAGE_ERROR",), "FetchResponse.json: 'Starting in version 6, we may return "
                                             "KAFKA_STORAGE_ERROR'", "the model has no log directories to fail")
    + rows(7, ("FETCH_SESSION_ID_NOT_FOUND",), "KIP-227 (Fetch v7)")
    + kafka_only(7, ("INVALID_FETCH_SESSION_EPOCH",), "KIP-227 (Fetch v7)",
                 "the model never creates an incremental fetch session (a broker without free session slots), "
                 "so any session id is FETCH_SESSION_ID_NOT_FOUND")
    + rows(9, ("FENCED_LEADER_EPOCH", "UNKNOWN_LEADER_EPOCH"), "KIP-320 (Fetch v9)")
    + rows(13, ("UNKNOWN_TOPIC_ID",), "KIP-516 (Fetch v13)")
    + kafka_only(13, ("INCONSISTENT_TOPIC_ID",), "KIP-516 (Fetch v13)",
                 "the model finds a v13+ topic by its id alone, so the id never disagrees with the log's "
                 "(Kafka: Partition.checkTopicId)"))


@handles("Fetch")
def fetch(cluster, req: Request):
    """ReplicaManager.fetchMessages: answered at once when MaxWaitMs <= 0, when MinBytes are readable
    or on any error; otherwise held (DelayedFetch) until MinBytes arrive or MaxWaitMs passes -- with
    ClusterConfig.long_poll (kipviz serve); the scenarios answer at once."""
    out = _fetch(cluster, req)
    wait, min_bytes = req.body.get("MaxWaitMs", 0), req.body.get("MinBytes", 1)
    if not cluster.config.long_poll or wait <= 0 or _ready(out, min_bytes):
        return out

    def attempt(final: bool):
        again = _fetch(cluster, req)
        return again if final or _ready(again, min_bytes) else None
    cluster.delayed.hold(req, wait, attempt, key=fetch_key)
    return DEFERRED


def fetch_key(cluster) -> tuple[int, int]:
    """What a held Fetch waits on: DelayedFetch is completed by new data, a moved log start or a
    topic change (topics.changes) or its MaxWaitMs; a crashed or restarted broker changes the answer too."""
    return changes(), len(cluster.down)


def _ready(out: dict, min_bytes: int) -> bool:
    if out.get("ErrorCode"):
        return True
    size = 0
    for t in out.get("Responses") or []:
        for p in t.get("Partitions") or []:
            if p.get("ErrorCode"):
                return True
            size += len(p.get("Records") or b"")
    return size >= max(min_bytes, 1)


def _fetch(cluster, req: Request) -> dict:
    v, body = req.version, req.body
    top = {"ThrottleTimeMs": 0, "ErrorCode": NONE, "SessionId": 0, "Responses": [], "NodeEndpoints": []}
    isolation = body.get("IsolationLevel", 0)
    if isolation not in (0, 1):
        top["ErrorCode"] = CODE["INVALID_REQUEST"]
        return shape("FetchResponse", v, top)
    session_epoch = body.get("SessionEpoch", -1)
    if session_epoch not in (-1, 0):
        # no incremental fetch session is ever created here (a broker without free session slots)
        top["ErrorCode"] = CODE["FETCH_SESSION_ID_NOT_FOUND"]
        return shape("FetchResponse", v, top)
    replica_id = body["ReplicaState"]["ReplicaId"] if v >= 15 and body.get("ReplicaState") else body.get(
        "ReplicaId", -1)
    follower = replica_id >= 0
    topics = body.get("Topics") or []
    if follower and not cluster.authorized(req.principal, "CLUSTER", CLUSTER_RESOURCE, "CLUSTER_ACTION"):
        for t in topics:
            top["Responses"].append({"Topic": t.get("Topic"), "TopicId": t.get("TopicId") or ZERO_UUID,
                                     "Partitions": [{"PartitionIndex": p.get("Partition", -1),
                                                     "ErrorCode": CODE["TOPIC_AUTHORIZATION_FAILED"],
                                                     "HighWatermark": -1, "LastStableOffset": -1,
                                                     "LogStartOffset": -1, "Records": b""}
                                                    for p in t.get("Partitions") or []]})
        return shape("FetchResponse", v, top)
    budget = [max(body.get("MaxBytes", INT32_MAX), 0), False]   # bytes left, anything returned yet
    leaders = set()
    for t in topics:
        topic, name, unknown = _resolve_topic(cluster, v, t, 13, "Topic")
        parts = []
        for fp in t.get("Partitions") or []:
            r = _fetch_partition(cluster, req, topic, name, unknown, fp, isolation, follower, budget)
            if r["ErrorCode"] == CODE["NOT_LEADER_OR_FOLLOWER"] and r["CurrentLeader"]["LeaderId"] >= 0:
                leaders.add(r["CurrentLeader"]["LeaderId"])
            parts.append(r)
        top["Responses"].append({"Topic": t.get("Topic"), "TopicId": t.get("TopicId") or ZERO_UUID,
                                 "Partitions": parts})
    top["NodeEndpoints"] = [node(cluster, b, req.listener) for b in sorted(leaders)]
    return shape("FetchResponse", v, top)


# ---- ListOffsets ------------------------------------------------------------------------------------
def _list_offset(cluster, req: Request, topic, name, lp: dict, isolation: int, replica_id: int) -> dict:
    v = req.version
    idx = lp.get("PartitionIndex", -1)
    out = {"PartitionIndex": idx, "ErrorCode": NONE, "Timestamp": NO_TIMESTAMP, "Offset": NO_OFFSET,
           "LeaderEpoch": -1, "OldStyleOffsets": []}
    if not cluster.authorized(req.principal, "TOPIC", name, "DESCRIBE"):
        out["ErrorCode"] = CODE["TOPIC_AUTHORIZATION_FAILED"]
        return out
    log = log_of(topic, idx)
    if log is None:
        out["ErrorCode"] = CODE["UNKNOWN_TOPIC_OR_PARTITION"]
        return out
    code = epoch_error(log, lp.get("CurrentLeaderEpoch", -1))
    if not code and replica_id != DEBUGGING_REPLICA_ID and (log.leader != req.broker
                                                           or not leader_alive(cluster, log)):
        code = CODE["NOT_LEADER_OR_FOLLOWER"]
    if code:
        out["ErrorCode"] = code
        return out
    ts = lp.get("Timestamp", LATEST)
    hw = log.log_end_offset
    if v == 0:
        # legacy: the log end plus segment start offsets (modelled as one segment at the log start)
        start = log.log_start_offset
        offsets = [hw, start] if ts == LATEST and hw > start else [start]
        out["OldStyleOffsets"] = offsets[:max(lp.get("MaxNumOffsets", 1), 0)]
        return out
    last_fetchable = log.last_stable_offset if isolation == 1 else hw
    epoch = log.leader_epoch
    if ts == LATEST:
        out.update(Offset=last_fetchable, LeaderEpoch=epoch)
    elif ts in (EARLIEST, EARLIEST_LOCAL):
        out.update(Offset=log.log_start_offset, LeaderEpoch=epoch)
    elif ts in (LATEST_TIERED, EARLIEST_PENDING_UPLOAD):
        pass                                        # no tiered storage: not found
    elif ts == MAX_TIMESTAMP:
        best = log.max_timestamp_record()
        if best is not None and best[1] < last_fetchable:
            out.update(Timestamp=best[0], Offset=best[1], LeaderEpoch=epoch)
    else:
        found = log.first_record_at_or_after(ts)
        if found is not None and found[1] < last_fetchable:
            out.update(Timestamp=found[0], Offset=found[1], LeaderEpoch=epoch)
    return out


ERRORS["ListOffsets"] = (
    rows(0, ("UNKNOWN_TOPIC_OR_PARTITION", "NOT_LEADER_OR_FOLLOWER", "TOPIC_AUTHORIZATION_FAILED"),
         "KafkaApis.handleListOffsetRequest")
    + rows(1, ("INVALID_REQUEST",), "KafkaApis.handleListOffsetRequestV1AndAbove: a partition listed twice; v2+ "
                                    "an IsolationLevel other than 0 or 1")
    + rows(4, ("FENCED_LEADER_EPOCH", "UNKNOWN_LEADER_EPOCH"), "KIP-320 (ListOffsets v4 CurrentLeaderEpoch)")
    + kafka_only(5, ("OFFSET_NOT_AVAILABLE",), "KIP-207 (ListOffsetsResponse.json v5)",
                 "a new leader in the model knows its high watermark at once"))


@handles("ListOffsets")
def list_offsets(cluster, req: Request) -> dict:
    v, body = req.version, req.body
    isolation = body.get("IsolationLevel", 0) if v >= 2 else 0
    replica_id = body.get("ReplicaId", -1)
    seen, responses = set(), []
    requested = body.get("Topics") or []
    duplicates = set()
    for t in requested:
        for lp in t.get("Partitions") or []:
            key = (t.get("Name"), lp.get("PartitionIndex"))
            if key in seen:
                duplicates.add(key)
            seen.add(key)
    for t in requested:
        name = t.get("Name")
        topic = cluster.topics.get(name)
        parts = []
        for lp in t.get("Partitions") or []:
            if v >= 1 and (name, lp.get("PartitionIndex")) in duplicates:
                parts.append({"PartitionIndex": lp.get("PartitionIndex"), "ErrorCode": CODE["INVALID_REQUEST"],
                              "Timestamp": NO_TIMESTAMP, "Offset": NO_OFFSET, "LeaderEpoch": -1})
            elif isolation not in (0, 1):
                parts.append({"PartitionIndex": lp.get("PartitionIndex"), "ErrorCode": CODE["INVALID_REQUEST"],
                              "Timestamp": NO_TIMESTAMP, "Offset": NO_OFFSET, "LeaderEpoch": -1})
            else:
                parts.append(_list_offset(cluster, req, topic, name, lp, isolation, replica_id))
        responses.append({"Name": name, "Partitions": parts})
    return shape("ListOffsetsResponse", v, {"ThrottleTimeMs": 0, "Topics": responses})
