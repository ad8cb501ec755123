"""The classic group's states (the JoinGroup/SyncGroup rebalance protocol) and Kafka's transitions.

Source (released Kafka, the new group coordinator):
* states and the allowed previous state of each one:
  group-coordinator/src/main/java/org/apache/kafka/coordinator/group/classic/ClassicGroupState.java
  (EMPTY <- PREPARING_REBALANCE; PREPARING_REBALANCE <- STABLE, COMPLETING_REBALANCE, EMPTY;
  COMPLETING_REBALANCE <- PREPARING_REBALANCE; STABLE <- COMPLETING_REBALANCE;
  DEAD <- STABLE, PREPARING_REBALANCE, COMPLETING_REBALANCE, EMPTY, DEAD);
* where each move is taken: group-coordinator/.../GroupMetadataManager.java: prepareRebalance
  (-> PreparingRebalance), completeClassicGroupJoin / ClassicGroup.initNextGeneration
  (-> CompletingRebalance, or Empty when nobody rejoined), classicGroupSyncToClassicGroup when the
  leader's assignment is stored (-> Stable), and group removal/conversion (-> Dead).

The events name why Kafka calls prepareRebalance, so an animation can say what started a
rebalance; every (state, event) pair maps to the state ClassicGroupState allows."""
from __future__ import annotations

from ..machine import Row, Table

EMPTY, PREPARING, COMPLETING, STABLE, DEAD = (
    "Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead")

# why GroupMetadataManager.prepareRebalance was called
REBALANCE_CAUSES = {
    "member-joined": "a new member joined (addMemberThenRebalanceOrCompleteJoin)",
    "member-rejoined": "a member rejoined with new metadata, or the leader rejoined "
                       "(updateMemberThenRebalanceOrCompleteJoin)",
    "member-left": "LeaveGroup removed members (classicGroupLeaveToClassicGroup)",
    "member-expired": "a member's session timed out (expireClassicGroupMemberHeartbeat)",
    "sync-expired": "members did not send SyncGroup within the rebalance timeout (expirePendingSync)",
}


def _rows() -> tuple[Row, ...]:
    rows = [Row(src, cause, PREPARING, note=why)
            for cause, why in REBALANCE_CAUSES.items() for src in (STABLE, COMPLETING)]
    rows.append(Row(EMPTY, "member-joined", PREPARING,
                    note="the first member joins: initial rebalance (group.initial.rebalance.delay.ms)"))
    rows += [
        Row(PREPARING, "join-complete", COMPLETING,
            note="every member rejoined (or the rebalance timeout expired): generation+1, protocol "
                 "chosen, JoinGroup responses sent, the leader gets the members"),
        Row(PREPARING, "join-complete-empty", EMPTY,
            note="nobody rejoined: generation+1, no protocol; an empty GroupMetadata record is written"),
        Row(COMPLETING, "leader-synced", STABLE,
            note="the leader's SyncGroup carried the assignment; it is stored (GroupMetadata record) "
                 "and sent to every member"),
    ]
    rows += [Row(s, "group-removed", DEAD, note="the group is deleted or converted to a consumer group")
             for s in (EMPTY, PREPARING, COMPLETING, STABLE, DEAD)]
    return tuple(rows)


TABLE = Table(
    name="classic-group",
    states=(EMPTY, PREPARING, COMPLETING, STABLE, DEAD),
    initial=EMPTY,
    rows=_rows(),
    source="group-coordinator/src/main/java/org/apache/kafka/coordinator/group/classic/ClassicGroupState.java; "
           "GroupMetadataManager.java (prepareRebalance, completeClassicGroupJoin, classicGroupSync)",
    terminal=(DEAD,),
)
