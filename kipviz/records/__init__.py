"""Kafka's log format and the coordinators' own logs.

    read_batches(data) -> [batch dict, ...]      (.partial / .consumed: see kipviz.records.batch)
    write_batch(records, **header) -> bytes
    write_control_batch(marker="COMMIT", producer_id=..., producer_epoch=..., coordinator_epoch=...)
    annotate_batches(data) -> [Span, ...]
    decode_internal(key, value, topic=None) -> {topic, record, key, value, ...}   (internal topics)
    group_coordinator_partition(group_id) / transaction_coordinator_partition(id) / share_coordinator_partition(...)
"""
from .batch import (
                        MAX_RECORDS,
                        MAX_TOTAL_DECOMPRESSED,
                        Batches,
                        RecordLimitError,
                        annotate_batches,
                        read_batches,
                        write_batch,
)
from .compression import CODEC_NAMES, MAX_DECOMPRESSED
from .control import CONTROL_TYPES, control_key, end_txn_marker_value, parse_control
from .internal import AmbiguousRecordError, annotate_internal, decode_internal, dump_json, encode_internal
from .markers import write_control_batch
from .partition import (
                        group_coordinator_partition,
                        java_string_hash,
                        kafka_abs,
                        partition_for,
                        share_coordinator_key,
                        share_coordinator_partition,
                        transaction_coordinator_partition,
)

__all__ = ["read_batches", "write_batch", "write_control_batch", "annotate_batches", "Batches",
           "RecordLimitError", "MAX_RECORDS", "MAX_TOTAL_DECOMPRESSED",
           "CODEC_NAMES", "MAX_DECOMPRESSED", "CONTROL_TYPES", "control_key", "end_txn_marker_value",
           "parse_control", "decode_internal", "encode_internal", "annotate_internal", "dump_json",
           "AmbiguousRecordError", "java_string_hash", "kafka_abs", "partition_for",
           "group_coordinator_partition", "transaction_coordinator_partition",
           "share_coordinator_key", "share_coordinator_partition"]
