"""DescribeConfigs: the settings admin clients read (confluent-kafka's and kafka-python's
describe_configs, the Java Admin's describeConfigs), after released Kafka's
`KafkaApis.handleDescribeConfigsRequest` -> `ConfigHelper.describeConfigs`
(core/src/main/scala/kafka/server/ConfigHelper.scala):

    TOPIC (2)   DESCRIBE_CONFIGS on the topic, else TOPIC_AUTHORIZATION_FAILED; unknown topic ->
                UNKNOWN_TOPIC_OR_PARTITION; the topic-level settings the model plays (all defaults).
    BROKER (4)  DESCRIBE_CONFIGS on the cluster, else CLUSTER_AUTHORIZATION_FAILED; the name is this
                broker's id or "" (the cluster-wide defaults); another id -> INVALID_REQUEST
                ("Unexpected broker id"), as the admin client sends each broker resource to that broker.
    GROUP (32)  DESCRIBE_CONFIGS on the group; the group settings (GroupConfig), with a group's own
                share.auto.offset.reset (ClusterConfig.share_group_offset_reset) as a dynamic value.
    other       INVALID_REQUEST.

Only the settings the model has are listed (a real broker lists a few hundred); synonyms and
documentation are not sent."""
from __future__ import annotations

from ...schema.error_codes import CODE
from ..error_rows import rows
from . import Request, handles
from .metadata import CLUSTER_RESOURCE

TOPIC, BROKER, GROUP = 2, 4, 32
DYNAMIC_TOPIC, STATIC_BROKER, DEFAULT, DYNAMIC_GROUP = 1, 4, 5, 8         # ConfigEntry.ConfigSource ids
BOOLEAN, STRING, INT, LONG, LIST = 1, 2, 3, 5, 7                          # ConfigType ids


def _topic_settings(cluster, topic) -> list[tuple]:
    # LogConfig / ServerLogConfigs defaults; retention from the topic's own setting or the broker's
    # log.retention.* (kipviz.broker.retention); the model does not compact
    cfg, own = cluster.config, topic.configs

    def ret(key, default, ctype):
        return (key, str(own.get(key, default)), ctype, DYNAMIC_TOPIC if key in own else DEFAULT)
    return [("cleanup.policy", "delete", LIST, DEFAULT), ("compression.type", "producer", STRING, DEFAULT),
            ("max.message.bytes", "1048588", INT, DEFAULT), ("message.timestamp.type", "CreateTime", STRING, DEFAULT),
            ("min.insync.replicas", "1", INT, DEFAULT), ret("retention.ms", cfg.log_retention_ms, LONG),
            ret("retention.bytes", cfg.log_retention_bytes, LONG),
            ret("segment.bytes", cfg.log_segment_bytes, INT)]


def _broker_settings(cluster, broker: int | None) -> list[tuple]:
    cfg = cluster.config
    out = []
    if broker is not None:
        host, port = cfg.advertised(broker)
        out += [("broker.id", str(broker), INT, STATIC_BROKER), ("node.id", str(broker), INT, STATIC_BROKER),
                ("advertised.listeners", f"PLAINTEXT://{host}:{port}", LIST, STATIC_BROKER)]
    out += [("auto.create.topics.enable", str(cfg.auto_create_topics).lower(), BOOLEAN, DEFAULT),
            ("num.partitions", str(cfg.default_partitions), INT, DEFAULT),
            ("offsets.topic.num.partitions", str(cfg.offsets_topic_partitions), INT, DEFAULT),
            ("transaction.state.log.num.partitions", str(cfg.transaction_topic_partitions), INT, DEFAULT),
            ("share.coordinator.state.topic.num.partitions", str(cfg.share_state_topic_partitions), INT, DEFAULT),
            ("log.retention.bytes", str(cfg.log_retention_bytes), LONG, DEFAULT),
            ("log.retention.ms", str(cfg.log_retention_ms), LONG, DEFAULT),
            ("log.segment.bytes", str(cfg.log_segment_bytes), INT, DEFAULT),
            ("transaction.max.timeout.ms", str(cfg.transaction_max_timeout_ms), INT, DEFAULT),
            ("group.consumer.session.timeout.ms", str(cfg.group_consumer_session_timeout_ms), INT, DEFAULT),
            ("group.consumer.heartbeat.interval.ms", str(cfg.group_consumer_heartbeat_interval_ms), INT, DEFAULT),
            ("group.share.record.lock.duration.ms", str(cfg.group_share_record_lock_duration_ms), INT, DEFAULT),
            ("group.share.delivery.count.limit", str(cfg.group_share_delivery_count_limit), INT, DEFAULT),
            ("group.share.partition.max.record.locks", str(cfg.group_share_partition_max_record_locks), INT, DEFAULT)]
    return out


def _group_settings(cluster, group: str) -> list[tuple]:
    cfg = cluster.config
    own = group in cfg.share_group_offset_reset
    return [("share.auto.offset.reset", cfg.share_offset_reset(group), STRING, DYNAMIC_GROUP if own else DEFAULT),
            ("share.record.lock.duration.ms", str(cfg.group_share_record_lock_duration_ms), INT, DEFAULT),
            ("consumer.session.timeout.ms", str(cfg.group_consumer_session_timeout_ms), INT, DEFAULT),
            ("consumer.heartbeat.interval.ms", str(cfg.group_consumer_heartbeat_interval_ms), INT, DEFAULT),
            ("share.session.timeout.ms", str(cfg.group_share_session_timeout_ms), INT, DEFAULT),
            ("share.heartbeat.interval.ms", str(cfg.group_share_heartbeat_interval_ms), INT, DEFAULT)]


def _describe(cluster, req: Request, res: dict) -> dict:
    rtype, name = res.get("ResourceType"), res.get("ResourceName") or ""
    out = {"ErrorCode": 0, "ErrorMessage": None, "ResourceType": rtype, "ResourceName": name, "Configs": []}

    def fail(code: str, message: str | None = None) -> dict:
        out.update(ErrorCode=CODE[code], ErrorMessage=message)
        return out

    if rtype == TOPIC:
        if not cluster.authorized(req.principal, "TOPIC", name, "DESCRIBE_CONFIGS"):
            return fail("TOPIC_AUTHORIZATION_FAILED")
        topic = cluster.topics.get(name)
        if topic is None:
            return fail("UNKNOWN_TOPIC_OR_PARTITION", f"Topic {name} does not exist.")
        settings = _topic_settings(cluster, topic)
    elif rtype == BROKER:
        if not cluster.authorized(req.principal, "CLUSTER", CLUSTER_RESOURCE, "DESCRIBE_CONFIGS"):
            return fail("CLUSTER_AUTHORIZATION_FAILED")
        if name and name != str(req.broker):
            return fail("INVALID_REQUEST", f"Unexpected broker id, expected {req.broker} or empty string, "
                                           f"but received {name}")
        settings = _broker_settings(cluster, req.broker if name else None)
    elif rtype == GROUP:
        if not cluster.authorized(req.principal, "GROUP", name, "DESCRIBE_CONFIGS"):
            return fail("GROUP_AUTHORIZATION_FAILED")
        settings = _group_settings(cluster, name)
    else:
        return fail("INVALID_REQUEST", f"Unsupported resource type: {rtype}")
    # ConfigHelper.createResponseConfig: null or an EMPTY key list means every setting (kafka-python sends [])
    keys = res.get("ConfigurationKeys")
    for key, value, ctype, source in settings:
        if not keys or key in keys:
            entry = {"Name": key, "Value": value, "ReadOnly": rtype == BROKER, "IsSensitive": False}
            if req.version == 0:
                entry["IsDefault"] = source == DEFAULT
            else:
                entry.update(ConfigSource=source, Synonyms=[])
            if req.version >= 3:
                entry.update(ConfigType=ctype, Documentation=None)
            out["Configs"].append(entry)
    return out


# The errors DescribeConfigs can return (kipviz.broker.api_errors reads ERRORS)
ERRORS = {"DescribeConfigs": rows(0, (
    "CLUSTER_AUTHORIZATION_FAILED", "TOPIC_AUTHORIZATION_FAILED", "GROUP_AUTHORIZATION_FAILED",
    "UNKNOWN_TOPIC_OR_PARTITION", "INVALID_REQUEST"), "KafkaApis.handleDescribeConfigsRequest, "
                                                     "ConfigHelper.describeConfigs")}


@handles("DescribeConfigs")
def describe_configs(cluster, req: Request) -> dict:
    return {"ThrottleTimeMs": 0, "Results": [_describe(cluster, req, r) for r in req.body.get("Resources") or []]}
