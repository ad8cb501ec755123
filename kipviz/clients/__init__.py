"""Client-side models that talk to a kipviz Cluster in real frames (sans-IO).

    from kipviz.clients import Consumer, Producer
    p = Producer(cluster, "tx-1")
    p.init_transactions(); p.begin_transaction(); p.send("out", b"k", b"v"); p.commit_transaction()
    c = Consumer(cluster, "g", protocol="consumer")      # KIP-848; "classic" for JoinGroup/SyncGroup
    c.subscribe(["out"]); records = c.poll(); c.commit(); c.close()

Errors: AbortableError (abort the transaction and carry on; CommitFailedError is one),
FatalError (ProducerFencedError, UnsupportedVersionError), RetriesExhaustedError and
IllegalStateError; each carries the Kafka error name (`.error`) and code (`.code`). The consumer
raises ConsumerError, ConsumerCommitFailedError (the group refused a commit) and
RebalanceInProgressError (classic protocol)."""
from .consumer import Consumer, ConsumerRecord
from .consumer_errors import CommitFailedError as ConsumerCommitFailedError
from .consumer_errors import ConsumerError, RebalanceInProgressError
from .producer import Producer, RecordMetadata
from .producer_errors import (
    AbortableError,
    CommitFailedError,
    FatalError,
    IllegalStateError,
    ProducerError,
    ProducerFencedError,
    RetriesExhaustedError,
    UnsupportedVersionError,
    classify_txn_offset_commit_error,
)

__all__ = ["Producer", "ProducerError", "AbortableError", "CommitFailedError", "FatalError",
           "ProducerFencedError", "UnsupportedVersionError", "RetriesExhaustedError", "IllegalStateError",
           "RecordMetadata", "classify_txn_offset_commit_error", "Consumer", "ConsumerRecord", "ConsumerError",
           "ConsumerCommitFailedError", "RebalanceInProgressError"]
