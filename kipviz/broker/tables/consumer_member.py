"""A KIP-848 consumer group member's reconciliation states.

Source (released Kafka): group-coordinator/src/main/java/org/apache/kafka/coordinator/group/
modern/MemberState.java (STABLE 0, UNREVOKED_PARTITIONS 1, UNRELEASED_PARTITIONS 2, UNKNOWN 127 --
the byte stored in ConsumerGroupCurrentMemberAssignmentValue.State) and
modern/consumer/CurrentAssignmentBuilder.java (build / computeNextAssignment), which the
coordinator runs when a member heartbeats and is not yet reconciled to the target assignment:

* partitions to revoke (owned, no longer in the target): -> UnrevokedPartitions, the member keeps
  its epoch until it heartbeats without them (or its rebalance timeout fences it);
* otherwise the member moves to the target assignment epoch; partitions still owned by another
  member are held back: -> UnreleasedPartitions until they are released;
* otherwise -> Stable at the target epoch.

Unknown only exists after a downgrade (a state this version does not know); the member is then
fenced if it still owns partitions, else reconciled from scratch. A new member starts Stable at
epoch 0. Joining and leaving are membership changes (records written, group epoch bumped), not
states of this table, exactly as in Kafka."""
from __future__ import annotations

from ..machine import Row, Table

STABLE, UNREVOKED, UNRELEASED, UNKNOWN = "Stable", "UnrevokedPartitions", "UnreleasedPartitions", "Unknown"
STATE_IDS = {STABLE: 0, UNREVOKED: 1, UNRELEASED: 2, UNKNOWN: 127}

OUTCOMES = {   # event -> (target state, note)
    "must-revoke": (UNREVOKED, "owned partitions left the target: the member must revoke them first "
                               "and stays at its current epoch"),
    "awaiting-unreleased": (UNRELEASED, "moved to the target epoch, but some target partitions are "
                                        "still owned by other members"),
    "reconciled": (STABLE, "moved to the target epoch with its whole target assignment"),
}


def _rows() -> tuple[Row, ...]:
    return tuple(Row(src, ev, to, kip="KIP-848", note=why)
                 for src in (STABLE, UNREVOKED, UNRELEASED, UNKNOWN) for ev, (to, why) in OUTCOMES.items())


TABLE = Table(
    name="consumer-member",
    states=(STABLE, UNREVOKED, UNRELEASED, UNKNOWN),
    initial=STABLE,
    rows=_rows(),
    state_ids=STATE_IDS,
    source="group-coordinator/src/main/java/org/apache/kafka/coordinator/group/modern/MemberState.java; "
           "modern/consumer/CurrentAssignmentBuilder.java",
)
