"""What a topic's settings do to a produced batch (the parts of Kafka's Partition.appendRecordsToLeader,
UnifiedLog.analyzeAndValidateRecords and LogValidator the model plays), as small functions the
data path calls:

  - min.insync.replicas: an acks=-1 write to a partition with fewer in-sync replicas is refused
    (NOT_ENOUGH_REPLICAS; core/src/main/scala/kafka/cluster/Partition.scala appendRecordsToLeader);
  - max.message.bytes: a larger batch is MESSAGE_TOO_LARGE (UnifiedLog.analyzeAndValidateRecords);
  - message.timestamp.type=LogAppendTime: the stored batch says LogAppendTime with the broker's time
    as its max timestamp, and the Produce answer carries that time (LogAppendTimeMs); CreateTime: -1
    (storage/src/main/java/org/apache/kafka/storage/internals/log/LogValidator.java);
  - compression.type: a codec other than producer is the codec the log stores the batch with: the
    broker recompresses when it differs from the producer's (LogValidator's non-in-place path);
    producer keeps the producer's codec (the log's own choice of how it stores batches);
  - cleanup.policy with compact: a record without a key is INVALID_RECORD, one RecordError per
    such record (LogValidator.validateKey; RecordValidationException's message)."""
from __future__ import annotations

from .log_config import cleanup_policy, topic_value

CODEC = {"uncompressed": "none", "gzip": "gzip", "snappy": "snappy", "lz4": "lz4", "zstd": "zstd"}


def max_message_bytes(cluster, topic) -> int:
    return topic_value(cluster, topic, "max.message.bytes")


def min_isr_problem(cluster, topic, log, acks: int, replicas: list[int]) -> str | None:
    """The NOT_ENOUGH_REPLICAS message for an acks=-1 write below min.insync.replicas, or None."""
    if acks != -1:
        return None
    min_isr = topic_value(cluster, topic, "min.insync.replicas")
    isr = [b for b in replicas if b not in cluster.down]
    if len(isr) >= min_isr:
        return None
    return (f"The size of the current ISR {set(isr) or '{}'} is insufficient to satisfy the min.isr requirement of "
            f"{min_isr} for partition {topic.name}-{log.partition}")


def stored_form(cluster, topic) -> tuple[str | None, str]:
    """(the codec the log stores the batch with -- None: as the log would for the producer's --,
    the batch's timestamp type)."""
    codec = topic_value(cluster, topic, "compression.type")
    return CODEC.get(codec), topic_value(cluster, topic, "message.timestamp.type")


def key_errors(cluster, topic, records: list[dict], partition_name: str) -> list[dict]:
    """Produce's RecordErrors for the records without a key, when the topic is compacted."""
    if "compact" not in cleanup_policy(cluster, topic):
        return []
    return [{"BatchIndex": i, "BatchIndexErrorMessage":
             f"Compacted topic cannot accept message without key in topic partition {partition_name}"}
            for i, r in enumerate(records) if r["key"] is None]


def record_errors_message(errors: list[dict]) -> str:
    """The InvalidRecordException's message LogValidator.processRecordErrors builds."""
    shown = ", ".join(f"RecordError(batchIndex={e['BatchIndex']}, message='{e['BatchIndexErrorMessage']}')"
                      for e in errors[:3])
    return (f"One or more records have been rejected due to {len(errors)} record errors in total, and only "
            f"showing the first three errors at most: [{shown}]")
