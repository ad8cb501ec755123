"""A replica's local log on one broker, with topic ids (KIP-516): created, migrated to a topic id,
moved to deletion, deleted. Executed by kipviz.broker.replicas; drawn from the same rows.

Released rows follow ZooKeeper-mode brokers of Kafka 2.8-3.9 (LeaderAndIsr v5+ and StopReplica
are controller-to-broker RPCs removed with ZooKeeper in 4.0):
core/src/main/scala/kafka/server/ReplicaManager.scala (becomeLeaderOrFollower: a request topic id
that differs from the log's -> INCONSISTENT_TOPIC_ID, the log is kept; a log without an id at the
request's leader epoch -> log.assignTopicId, which writes partition.metadata), stopReplicas and
LogManager.asyncDelete (rename to "topic-partition.uniqueId-delete", removed after
file.delete.delay.ms). Rows labelled "proposed" are the page as written (the KIP-516 page's "Stale state"
and the FULL LeaderAndIsr) and never shipped; they only run when the replica manager's behaviour
is "page" (kipviz.broker.replicas)."""
from __future__ import annotations

from ..machine import Row, Table

ABSENT, NO_ID, ONLINE, DELETING, DELETED = "Absent", "NoTopicId", "Online", "Deleting", "Deleted"
SHIPPED = "shipped in 2.8, removed with ZooKeeper mode in 4.0"
PAGE = "as the KIP-516 page is written; never shipped"

TABLE = Table(
    name="replica",
    states=(ABSENT, NO_ID, ONLINE, DELETING, DELETED),
    initial=ABSENT,
    terminal=(DELETED,),
    source="core/src/main/scala/kafka/server/ReplicaManager.scala (becomeLeaderOrFollower, stopReplicas); "
           "storage/.../checkpoint/PartitionMetadataFile.java; core/.../log/LogManager.scala (asyncDelete)",
    rows=(
        Row(ABSENT, "log-before-topic-ids", NO_ID,
            note="a log a broker wrote before topic ids (before 2.8): no partition.metadata file"),
        Row(ABSENT, "leader-and-isr", ONLINE, kip="KIP-516",
            note=f"LeaderAndIsr v5+ with a topic id creates the log and writes partition.metadata ({SHIPPED})"),
        Row(NO_ID, "topic-id-assigned", ONLINE, kip="KIP-516",
            note=f"migration: LeaderAndIsr carries an id for a log without one; log.assignTopicId writes "
                 f"partition.metadata ({SHIPPED})"),
        Row(ONLINE, "inconsistent-topic-id", ONLINE, kip="KIP-516",
            note=f"a different topic id for a log the broker holds is refused with INCONSISTENT_TOPIC_ID; "
                 f"the old log stays ({SHIPPED})"),
        Row(ONLINE, "stale-topic-id", DELETING, status="proposed", kip="KIP-516",
            note=f"'Stale state': a new topic id for a name the broker holds closes the old log and moves it "
                 f"to log.dir/deleting/{{topic_id}}_{{partition}} ({PAGE})"),
        Row(ONLINE, "absent-from-full", DELETING, status="proposed", kip="KIP-516",
            note=f"a FULL LeaderAndIsr that does not list the partition stages it for deletion ({PAGE}; "
                 f"shipped only for a KRaft controller during the ZooKeeper migration)"),
        Row(NO_ID, "absent-from-full", DELETING, status="proposed", kip="KIP-516",
            note=f"a FULL LeaderAndIsr that does not list the partition stages it for deletion ({PAGE})"),
        Row(ONLINE, "stop-replica-delete", DELETING,
            note="StopReplica with DeletePartition: renamed to topic-partition.uniqueId-delete (by name: "
                 "StopReplica never got a topic id; removed in 4.0)"),
        Row(NO_ID, "stop-replica-delete", DELETING,
            note="StopReplica with DeletePartition (removed in 4.0)"),
        Row(DELETING, "delete-delay-elapsed", DELETED,
            note="the renamed directory is removed after the delay (file.delete.delay.ms, 60000; the page's "
                 "unnamed setting: 4 hours)"),
    ),
)
