"""The transaction coordinator's state table (one row per allowed move, named after its cause).

States and ids are Kafka's `TransactionState` (TransactionMetadata.scala:29-163 in the 2024-10
snapshot; the same ids in the later Java port), the id being the `TransactionStatus` int8 of
`TransactionLogValue` in `__transaction_state`:

    0 Empty  1 Ongoing  2 PrepareCommit  3 PrepareAbort  4 CompleteCommit  5 CompleteAbort
    6 Dead   7 PrepareEpochFence

The rows allow exactly Kafka's "valid previous states" (core/src/main/scala/kafka/coordinator/
transaction/TransactionMetadata.scala):

    Empty             <- Empty, CompleteCommit, CompleteAbort
    Ongoing           <- Ongoing, Empty, CompleteCommit, CompleteAbort
    PrepareCommit     <- Ongoing
    PrepareAbort      <- Ongoing, PrepareEpochFence
                         (+ Empty, CompleteCommit, CompleteAbort under transaction version 2)
    CompleteCommit    <- PrepareCommit
    CompleteAbort     <- PrepareAbort
    Dead              <- Empty, CompleteAbort, CompleteCommit
    PrepareEpochFence <- Ongoing

The transaction-version-2 rows (KIP-890 part 2) are enabled only for a transaction run under
TV2: a TV2 client that is unsure of the state may always send EndTxn(abort), and Produce v12+ /
TxnOffsetCommit v5+ add partitions implicitly. They are in Kafka 4.0's TransactionMetadata.scala
and the later Java port (`TransactionState.java`), not in the 2024-10 snapshot.

PrepareEpochFence is a *pending* state in Kafka: it is never written to `__transaction_state`;
the log sees the PrepareAbort that follows it, carrying the bumped epoch."""
from __future__ import annotations

from ..machine import Row, Table

STATE_IDS = {"Empty": 0, "Ongoing": 1, "PrepareCommit": 2, "PrepareAbort": 3, "CompleteCommit": 4,
             "CompleteAbort": 5, "Dead": 6, "PrepareEpochFence": 7}
STATES = tuple(STATE_IDS)
STATE_NAMES = {i: n for n, i in STATE_IDS.items()}

# TransactionMetadata.scala: allowed previous states per state, as released Kafka defines them (TV1)
ALLOWED_PREVIOUS = {
    "Empty": ("Empty", "CompleteCommit", "CompleteAbort"),
    "Ongoing": ("Ongoing", "Empty", "CompleteCommit", "CompleteAbort"),
    "PrepareCommit": ("Ongoing",),
    "PrepareAbort": ("Ongoing", "PrepareEpochFence"),
    "CompleteCommit": ("PrepareCommit",),
    "CompleteAbort": ("PrepareAbort",),
    "Dead": ("Empty", "CompleteAbort", "CompleteCommit"),
    "PrepareEpochFence": ("Ongoing",),
}
# what transaction version 2 adds (KIP-890 part 2)
TV2_ALLOWED_PREVIOUS = {"PrepareAbort": ("Empty", "CompleteCommit", "CompleteAbort")}
# states a transactional id may expire from (TransactionState.isExpirationAllowed)
EXPIRABLE = ("Empty", "CompleteCommit", "CompleteAbort")

TV2 = "transaction version 2"      # Row.note prefix of the rows only a TV2 transaction may take

_IDLE = ("Empty", "CompleteCommit", "CompleteAbort")
_ADDABLE = ("Empty", "Ongoing", "CompleteCommit", "CompleteAbort")


def _rows() -> tuple[Row, ...]:
    rows: list[Row] = []
    for s in _IDLE:
        rows.append(Row(s, "init-producer-id", "Empty", kip="KIP-98",
                        note="InitProducerId: bump the epoch (or rotate the producer id when it is exhausted)"))
    rows.append(Row("Ongoing", "init-producer-id", "PrepareEpochFence", kip="KIP-98",
                    note="InitProducerId while a transaction is open: fence it with epoch+1, abort it, "
                         "answer CONCURRENT_TRANSACTIONS"))
    rows.append(Row("Ongoing", "init-producer-id-keep-prepared", "Ongoing", status="accepted", kip="KIP-939",
                    note="InitProducerId v6 with Enable2Pc and KeepPreparedTxn: the open transaction is "
                         "kept for an external transaction manager, the epoch moves on"))
    rows.append(Row("Ongoing", "timeout-fence", "PrepareEpochFence", kip="KIP-98",
                    note="txnStartTimestamp + transaction.timeout.ms < now (abort scan every 10 s): epoch+1"))
    rows.append(Row("PrepareEpochFence", "fence-abort", "PrepareAbort", kip="KIP-98",
                    note="the coordinator aborts the fenced transaction itself"))
    for s in _ADDABLE:
        rows.append(Row(s, "add-partitions", "Ongoing", kip="KIP-98", note="AddPartitionsToTxn"))
    for s in _ADDABLE:
        rows.append(Row(s, "add-offsets", "Ongoing", kip="KIP-98",
                        note="AddOffsetsToTxn: the group's __consumer_offsets partition"))
    for s in _ADDABLE:
        rows.append(Row(s, "implicit-add", "Ongoing", kip="KIP-890",
                        note=f"{TV2}: Produce v12+ / TxnOffsetCommit v5+ add the partition themselves"))
    rows.append(Row("Ongoing", "end-txn-commit", "PrepareCommit", kip="KIP-98", note="EndTxn(commit)"))
    rows.append(Row("Ongoing", "end-txn-abort", "PrepareAbort", kip="KIP-98", note="EndTxn(abort)"))
    for s in _IDLE:
        rows.append(Row(s, "end-txn-abort", "PrepareAbort", kip="KIP-890",
                        note=f"{TV2}: EndTxn(abort) without an open transaction still bumps the epoch"))
    rows.append(Row("PrepareCommit", "markers-written", "CompleteCommit", kip="KIP-98",
                    note="COMMIT markers written to every partition of the transaction"))
    rows.append(Row("PrepareAbort", "markers-written", "CompleteAbort", kip="KIP-98",
                    note="ABORT markers written to every partition of the transaction"))
    for s in EXPIRABLE:
        rows.append(Row(s, "transactional-id-expired", "Dead", kip="KIP-98",
                        note="idle longer than transactional.id.expiration.ms (7 days): tombstone"))
    return tuple(rows)


TABLE = Table(
    name="transaction",
    states=STATES,
    initial="Empty",
    rows=_rows(),
    state_ids=STATE_IDS,
    source="core/src/main/scala/kafka/coordinator/transaction/TransactionMetadata.scala "
           "(TransactionState.java in the later Java port)",
    terminal=("Dead",),
)


def is_tv2_only(row: Row) -> bool:
    return row.note.startswith(TV2)


def enabled_for(tv2: bool | object):
    """Machine `enabled` callback: the TV2 rows only when `tv2` (a bool, or an object with a
    truthy `.tv2` attribute read at each transition) says so."""
    def enabled(row: Row) -> bool:
        flag = tv2 if isinstance(tv2, bool) else bool(getattr(tv2, "tv2", False))
        return flag or not is_tv2_only(row)
    return enabled
