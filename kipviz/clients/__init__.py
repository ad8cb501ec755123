"""Client-side models that talk to a kipviz Cluster in real frames (sans-IO).

    from kipviz.clients import Producer
    p = Producer(cluster, "tx-1")
    p.init_transactions(); p.begin_transaction(); p.send("out", b"k", b"v"); p.commit_transaction()

Errors: AbortableError (abort the transaction and carry on; CommitFailedError is one),
FatalError (ProducerFencedError, UnsupportedVersionError), RetriesExhaustedError and
IllegalStateError; each carries the Kafka error name (`.error`) and code (`.code`)."""
from .producer import (
    AbortableError,
    CommitFailedError,
    FatalError,
    IllegalStateError,
    Producer,
    ProducerError,
    ProducerFencedError,
    RecordMetadata,
    RetriesExhaustedError,
    UnsupportedVersionError,
    classify_txn_offset_commit_error,
)

__all__ = ["Producer", "ProducerError", "AbortableError", "CommitFailedError", "FatalError",
           "ProducerFencedError", "UnsupportedVersionError", "RetriesExhaustedError", "IllegalStateError",
           "RecordMetadata", "classify_txn_offset_commit_error"]
