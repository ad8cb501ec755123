"""Kafka's internal topic names (clients/src/main/java/org/apache/kafka/common/internals/Topic.java:
GROUP_METADATA_TOPIC_NAME, TRANSACTION_STATE_TOPIC_NAME, SHARE_GROUP_STATE_TOPIC_NAME): the broker
creates them, the drawings tell their records apart."""
from __future__ import annotations

INTERNAL_TOPICS = ("__consumer_offsets", "__transaction_state", "__share_group_state")
