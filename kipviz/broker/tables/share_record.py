"""The state of one record of a share partition (KIP-932), plus the proposed KIP-1289 TX_PENDING.

Source (released Kafka): core/src/main/java/kafka/server/share/SharePartition.java, enum
RecordState (AVAILABLE 0, ACQUIRED 1, ACKNOWLEDGED 2, ARCHIVED 4 -- there is no id 3) and
RecordState.validateTransition: a state to itself is refused, ACKNOWLEDGED and ARCHIVED are
terminal, AVAILABLE -> ACQUIRED only, ACQUIRED -> AVAILABLE / ACKNOWLEDGED / ARCHIVED.

The events name *why* a move happens (the ack type, the lock timer, a member leaving). The
"-at-limit" events are InFlightState.tryUpdateState's only limit rule: a move to AVAILABLE with
deliveryCount >= group.share.delivery.count.limit becomes a move to ARCHIVED.

Rows with status "proposed" are KIP-1289 (the KIP-1289 page, unmerged): acknowledgements staged inside a
producer transaction sit in TX_PENDING until WriteTxnMarkers commits (ACCEPT -> ACKNOWLEDGED,
REJECT -> ARCHIVED) or aborts (back to ACQUIRED for the same member). KIP-1289 corner case 6: a lock
that expires while TX_PENDING reverts the record to ACQUIRED ("re-acquirable"; a late marker for the
stale staging is filtered by epoch). The model enables them only when share.version >= 2
(`enabled` below)."""
from __future__ import annotations

from ..machine import Row, Table

AVAILABLE, ACQUIRED, ACKNOWLEDGED, ARCHIVED, TX_PENDING = (
    "AVAILABLE", "ACQUIRED", "ACKNOWLEDGED", "ARCHIVED", "TX_PENDING")
STATE_IDS = {AVAILABLE: 0, ACQUIRED: 1, ACKNOWLEDGED: 2, ARCHIVED: 4}
TERMINAL = (ACKNOWLEDGED, ARCHIVED)
# the ack type byte on the wire -> the event it fires (SharePartition.fetchRecordState)
ACK_EVENTS = {0: "gap", 1: "accept", 2: "release", 3: "reject"}

_RELEASED = (
    (AVAILABLE, "acquire", ACQUIRED, "a ShareFetch hands the record out; deliveryCount + 1"),
    (ACQUIRED, "accept", ACKNOWLEDGED, "ack type 1 (ACCEPT)"),
    (ACQUIRED, "release", AVAILABLE, "ack type 2 (RELEASE): redelivered later"),
    (ACQUIRED, "release-at-limit", ARCHIVED, "RELEASE with deliveryCount >= limit"),
    (ACQUIRED, "reject", ARCHIVED, "ack type 3 (REJECT)"),
    (ACQUIRED, "gap", ARCHIVED, "ack type 0 (GAP): no record at this offset"),
    (ACQUIRED, "lock-expired", AVAILABLE, "acquisition lock timed out (releaseAcquisitionLockOnTimeout)"),
    (ACQUIRED, "lock-expired-at-limit", ARCHIVED, "lock timed out at the delivery limit, or below the SPSO"),
    (ACQUIRED, "member-left", AVAILABLE, "releaseAcquiredRecords on leave / share session close"),
    (ACQUIRED, "member-left-at-limit", ARCHIVED, "released at the delivery limit, or below the SPSO"),
    (ACQUIRED, "aborted-txn", ARCHIVED, "read_committed: record of an aborted transaction is archived"),
)

_PROPOSED = (
    (ACQUIRED, "txn-stage", TX_PENDING, "TxnShareAcknowledge stages ACCEPT/REJECT in a transaction"),
    (TX_PENDING, "txn-commit-accept", ACKNOWLEDGED, "COMMIT marker, staged ACCEPT"),
    (TX_PENDING, "txn-commit-reject", ARCHIVED, "COMMIT marker, staged REJECT"),
    (TX_PENDING, "txn-abort", ACQUIRED, "ABORT marker: back to the same member, lock continues"),
    (TX_PENDING, "lock-expired", ACQUIRED, "KIP-1289 corner case 6: lock expiry while TX_PENDING "
                                           "reverts to ACQUIRED (re-acquirable)"),
)

TABLE = Table(
    name="share-record",
    states=(AVAILABLE, ACQUIRED, ACKNOWLEDGED, ARCHIVED, TX_PENDING),
    initial=AVAILABLE,
    rows=tuple(Row(a, e, b, kip="KIP-932", note=n) for a, e, b, n in _RELEASED)
    + tuple(Row(a, e, b, status="proposed", kip="KIP-1289", note=n) for a, e, b, n in _PROPOSED),
    state_ids=STATE_IDS,
    source="core/src/main/java/kafka/server/share/SharePartition.java (RecordState, validateTransition)",
    terminal=TERMINAL,
)


def enabled(proposed: bool):
    """The row filter for a cluster where KIP-1289 is on (`proposed`, kipviz.broker.features: Features.on)
    or not: the proposed rows need it."""
    return lambda r: r.status != "proposed" or proposed
