"""The KIP-848 consumer group's states (ConsumerGroupHeartbeat protocol).

Source (released Kafka): group-coordinator/src/main/java/org/apache/kafka/coordinator/group/
modern/consumer/ConsumerGroup.java, enum ConsumerGroupState (EMPTY "Empty", ASSIGNING
"Assigning", RECONCILING "Reconciling", STABLE "Stable", DEAD "Dead") and maybeUpdateGroupState,
which recomputes the state after every replayed record:

    no members                                   -> Empty
    group epoch > target assignment epoch        -> Assigning
    some member not reconciled to the target     -> Reconciling   (state != STABLE or epoch behind)
    otherwise                                    -> Stable

Dead is the state of a group that was removed (deleted, or converted to a classic group). The
state is derived, not validated, so any live state may follow any other; the events name the
condition that maybeUpdateGroupState found."""
from __future__ import annotations

from ..machine import Row, Table

EMPTY, ASSIGNING, RECONCILING, STABLE, DEAD = "Empty", "Assigning", "Reconciling", "Stable", "Dead"

CONDITIONS = {   # event -> (target state, what maybeUpdateGroupState saw)
    "no-members": (EMPTY, "the group has no members"),
    "epoch-ahead-of-assignment": (ASSIGNING, "the group epoch was bumped and the target assignment "
                                             "is not computed for it yet"),
    "member-not-reconciled": (RECONCILING, "the target assignment exists but a member has not reached "
                                           "it (revoking, waiting for released partitions, or behind)"),
    "all-members-reconciled": (STABLE, "every member is Stable at the target assignment epoch"),
}


def _rows() -> tuple[Row, ...]:
    live = (EMPTY, ASSIGNING, RECONCILING, STABLE)
    rows = [Row(src, ev, to, kip="KIP-848", note=why)
            for src in live for ev, (to, why) in CONDITIONS.items() if to != src]
    rows += [Row(s, "group-removed", DEAD, kip="KIP-848",
                 note="the group is deleted or converted to a classic group") for s in live]
    return tuple(rows)


TABLE = Table(
    name="consumer-group",
    states=(EMPTY, ASSIGNING, RECONCILING, STABLE, DEAD),
    initial=EMPTY,
    rows=_rows(),
    source="group-coordinator/src/main/java/org/apache/kafka/coordinator/group/modern/consumer/"
           "ConsumerGroup.java (ConsumerGroupState, maybeUpdateGroupState)",
    terminal=(DEAD,),
)
