"""A topic id's life (KIP-516, released in 2.8): every creation of a name gets a new random id
(Uuid.randomUuid, never ZERO_UUID or ONE_UUID); deletion ends that id for good, so a request by it
answers UNKNOWN_TOPIC_ID even after the name is created again. Executed by Cluster.create_topic /
delete_topic (kipviz.broker.cluster); one instance per id, keyed "name@id".

Source: metadata/src/main/java/org/apache/kafka/controller/ReplicationControlManager.java
(createTopic: Uuid.randomUuid until unused; deleteTopic removes the id with the name)."""
from __future__ import annotations

from ..machine import Row, Table

ABSENT, LIVE, DELETED = "Absent", "Live", "Deleted"

TABLE = Table(
    name="topic-id",
    states=(ABSENT, LIVE, DELETED),
    initial=ABSENT,
    terminal=(DELETED,),
    source="metadata/src/main/java/org/apache/kafka/controller/ReplicationControlManager.java",
    rows=(
        Row(ABSENT, "create", LIVE, kip="KIP-516",
            note="CreateTopics: a new random topic id, also when the name was used before"),
        Row(LIVE, "delete", DELETED, kip="KIP-516",
            note="DeleteTopics: the id is gone for good; requests by it get UNKNOWN_TOPIC_ID"),
    ),
)
