"""Kafka's internal topic names (clients/src/main/java/org/apache/kafka/common/internals/Topic.java:
GROUP_METADATA_TOPIC_NAME, TRANSACTION_STATE_TOPIC_NAME, SHARE_GROUP_STATE_TOPIC_NAME): the broker
creates them, the drawings tell their records apart. The one home of these names: everything else
imports them from here."""
from __future__ import annotations

CONSUMER_OFFSETS = "__consumer_offsets"
TRANSACTION_STATE = "__transaction_state"
SHARE_GROUP_STATE = "__share_group_state"
INTERNAL_TOPICS = (CONSUMER_OFFSETS, TRANSACTION_STATE, SHARE_GROUP_STATE)
# the coordinator role (kipviz.schema.coordinators) that writes each one
OWNER_ROLE = {CONSUMER_OFFSETS: "group", TRANSACTION_STATE: "transaction", SHARE_GROUP_STATE: "share"}
