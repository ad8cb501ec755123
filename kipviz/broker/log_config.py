"""Topic configs as Kafka 4.4's LogConfig defines and validates them, and the broker configs the
model describes: one fact table (names, types, defaults, validators, broker synonyms, a short
description in the kit's words) read by CreateTopics, AlterConfigs, IncrementalAlterConfigs,
DescribeConfigs and the code the settings act on (retention, Produce).

Sources: storage/src/main/java/org/apache/kafka/storage/internals/log/LogConfig.java (the topic
ConfigDef, validateNames, validate), clients/.../common/config/TopicConfig.java (names; Kafka's own
documentation strings are longer than the kit's), server-common/.../config/ServerTopicConfigSynonyms.java
(the broker settings behind each topic setting, in priority order),
server/.../config/DynamicBrokerConfig.java (which broker settings can change at run time and
brokerConfigSynonyms), clients/.../common/config/ConfigDef.java (how a value parses and the
messages of a bad one).

Resolution of a topic setting, highest first: the topic's own value (DYNAMIC_TOPIC_CONFIG), the
broker's dynamic value (DYNAMIC_BROKER_CONFIG, per broker id), the cluster-wide dynamic default
(DYNAMIC_DEFAULT_BROKER_CONFIG), the broker's static server.properties value (STATIC_BROKER_CONFIG:
the kit's ClusterConfig fields that differ from Kafka's default), Kafka's default (DEFAULT_CONFIG).
Tiered storage is off in the model, as on a broker without remote.log.storage.system.enable."""
from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal
from functools import lru_cache

# DescribeConfigsResponse ConfigSource ids (ConfigEntry.ConfigSource) and ConfigType ids
DYNAMIC_TOPIC, DYNAMIC_BROKER, DYNAMIC_DEFAULT_BROKER, STATIC_BROKER, DEFAULT, DYNAMIC_BROKER_LOGGER, \
    CLIENT_METRICS, DYNAMIC_GROUP = 1, 2, 3, 4, 5, 6, 7, 8
CONFIG_TYPE = {"BOOLEAN": 1, "STRING": 2, "INT": 3, "SHORT": 4, "LONG": 5, "DOUBLE": 6, "LIST": 7, "CLASS": 8,
               "PASSWORD": 9}
LONG_MAX = 2**63 - 1
_INT = re.compile(r"[+-]?[0-9]+\Z")
_DOUBLE = re.compile(r"[+-]?(NaN|Infinity|([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?)[fFdD]?\Z")
_COMMA = re.compile(r"\s*,\s*")
_REPLICA = re.compile(r"([0-9]+:[0-9]+)?\Z")


class ConfigError(ValueError):
    """A rejected setting: `message` is Kafka's text (ConfigException / InvalidConfigurationException)."""


@dataclass(frozen=True, slots=True)
class Key:
    """One setting: ConfigDef's type, default (None: no default), validator and Kafka's synonyms."""
    name: str
    type: str                      # BOOLEAN STRING INT SHORT LONG DOUBLE LIST
    default: object
    check: tuple = ()              # ("min", n) ("between", lo, hi) ("in", ...) ("list_in", ...) ("gzip",) ("replicas",)
    synonyms: tuple[str, ...] = ()  # broker settings behind a topic setting (ServerTopicConfigSynonyms)
    doc: str = ""
    internal: bool = False         # defineInternal: valid, never described
    dynamic: bool = False          # broker setting: in ALL_DYNAMIC_CONFIGS (DescribeConfigs ReadOnly: not this)

    @property
    def config_type(self) -> int:
        return CONFIG_TYPE[self.type]


def _k(name, type_, default, check=(), synonyms=(), doc="", **kw) -> Key:
    return Key(name, type_, default, tuple(check), tuple(synonyms), doc, **kw)


# LogConfig's CONFIG, in its order (Kafka 4.4). The kit's one-line descriptions.
TOPIC_CONFIGS: dict[str, Key] = {k.name: k for k in (
    _k("segment.bytes", "INT", 1073741824, ("min", 1048576), ("log.segment.bytes",),
       "Largest size of one segment file; the log rolls a new segment past it."),
    _k("segment.ms", "LONG", 604800000, ("min", 1), ("log.roll.ms", "log.roll.hours"),
       "Longest time before the active segment is rolled, even if not full."),
    _k("segment.jitter.ms", "LONG", 0, ("min", 0), ("log.roll.jitter.ms", "log.roll.jitter.hours"),
       "Random time subtracted from segment.ms so partitions do not all roll at once."),
    _k("segment.index.bytes", "INT", 10485760, ("min", 4), ("log.index.size.max.bytes",),
       "Size of each segment's offset index."),
    _k("flush.messages", "LONG", LONG_MAX, ("min", 1), ("log.flush.interval.messages",),
       "Records written before the log is forced to disk (default: leave it to the OS)."),
    _k("flush.ms", "LONG", LONG_MAX, ("min", 0), ("log.flush.interval.ms", "log.flush.scheduler.interval.ms"),
       "Time after which the log is forced to disk (default: leave it to the OS)."),
    _k("retention.bytes", "LONG", -1, (), ("log.retention.bytes",),
       "Bytes a partition may hold before its oldest segments are deleted (cleanup.policy=delete); -1: no limit."),
    _k("retention.ms", "LONG", 604800000, ("min", -1), ("log.retention.ms", "log.retention.minutes", "log.retention.hours"),
       "Age after which a segment is deleted (cleanup.policy=delete); -1: no limit."),
    _k("max.message.bytes", "INT", 1048588, ("min", 0), ("message.max.bytes",),
       "Largest record batch the topic accepts; a larger produced batch gets MESSAGE_TOO_LARGE."),
    _k("index.interval.bytes", "INT", 4096, ("min", 0), ("log.index.interval.bytes",),
       "Bytes between two entries of the offset index."),
    _k("delete.retention.ms", "LONG", 86400000, ("min", 0), ("log.cleaner.delete.retention.ms",),
       "How long a compacted topic keeps tombstones (and transaction markers) after cleaning."),
    _k("min.compaction.lag.ms", "LONG", 0, ("min", 0), ("log.cleaner.min.compaction.lag.ms",),
       "Minimum age of a record before compaction may remove it."),
    _k("max.compaction.lag.ms", "LONG", LONG_MAX, ("min", 1), ("log.cleaner.max.compaction.lag.ms",),
       "Maximum time a record may stay uncompacted."),
    _k("file.delete.delay.ms", "LONG", 60000, ("min", 0), ("log.segment.delete.delay.ms",),
       "Wait before a deleted segment's files are removed from disk."),
    _k("min.cleanable.dirty.ratio", "DOUBLE", 0.5, ("between", 0, 1), ("log.cleaner.min.cleanable.ratio",),
       "Share of uncleaned log above which the cleaner compacts the partition."),
    _k("cleanup.policy", "LIST", ["delete"], ("list_in", "compact", "delete"), ("log.cleanup.policy",),
       "delete (retention removes old segments), compact (the newest record per key is kept), or both."),
    _k("unclean.leader.election.enable", "BOOLEAN", False, (), ("unclean.leader.election.enable",),
       "Whether a replica outside the ISR may become leader (losing records) when no ISR replica is alive."),
    _k("min.insync.replicas", "INT", 1, ("min", 1), ("min.insync.replicas",),
       "In-sync replicas an acks=all write needs; fewer: NOT_ENOUGH_REPLICAS."),
    _k("compression.type", "STRING", "producer",
       ("in", "uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"), ("compression.type",),
       "The codec the log stores batches with; producer keeps the producer's, others recompress."),
    _k("compression.gzip.level", "INT", -1, ("gzip",), ("compression.gzip.level",),
       "gzip level when the log recompresses to gzip."),
    _k("compression.lz4.level", "INT", 9, ("between", 1, 17), ("compression.lz4.level",),
       "lz4 level when the log recompresses to lz4."),
    _k("compression.zstd.level", "INT", 3, ("between", -131072, 22), ("compression.zstd.level",),
       "zstd level when the log recompresses to zstd."),
    _k("preallocate", "BOOLEAN", False, (), ("log.preallocate",),
       "Whether segment files are preallocated on disk."),
    _k("message.timestamp.type", "STRING", "CreateTime", ("in", "CreateTime", "LogAppendTime"),
       ("log.message.timestamp.type",),
       "CreateTime keeps the producer's timestamps; LogAppendTime stamps each batch with the broker's time."),
    _k("message.timestamp.before.max.ms", "LONG", LONG_MAX, ("min", 0), ("log.message.timestamp.before.max.ms",),
       "How far in the past a CreateTime timestamp may be; older: INVALID_TIMESTAMP."),
    _k("message.timestamp.after.max.ms", "LONG", 3600000, ("min", 0), ("log.message.timestamp.after.max.ms",),
       "How far in the future a CreateTime timestamp may be; later: INVALID_TIMESTAMP."),
    _k("leader.replication.throttled.replicas", "LIST", [], ("replicas",), (),
       "Replicas whose replication is throttled on the leader: partition:broker pairs, or *."),
    _k("follower.replication.throttled.replicas", "LIST", [], ("replicas",), (),
       "Replicas whose replication is throttled on the follower: partition:broker pairs, or *."),
    _k("remote.storage.enable", "BOOLEAN", False, (), (),
       "Tier old segments to remote storage (needs tiered storage on the brokers; off in the model)."),
    _k("local.retention.ms", "LONG", -2, ("min", -2), ("log.local.retention.ms",),
       "With tiered storage: age after which local segments go (-2: retention.ms)."),
    _k("local.retention.bytes", "LONG", -2, ("min", -2), ("log.local.retention.bytes",),
       "With tiered storage: local bytes kept (-2: retention.bytes)."),
    _k("remote.log.copy.disable", "BOOLEAN", False, (), (),
       "With tiered storage: stop copying new segments to remote storage."),
    _k("remote.copy.lag.ms", "LONG", 0, ("min", -1), ("log.remote.copy.lag.ms",),
       "With tiered storage: how long a segment waits before it is uploaded (KIP-1241)."),
    _k("remote.copy.lag.bytes", "LONG", -1, ("min", -1), ("log.remote.copy.lag.bytes",),
       "With tiered storage: local bytes kept before segments are uploaded (KIP-1241)."),
    _k("remote.log.delete.on.disable", "BOOLEAN", False, (), (),
       "With tiered storage: delete the remote data when remote.storage.enable is turned off."),
    _k("errors.deadletterqueue.group.enable", "BOOLEAN", False, (), (),
       "Whether share groups may use this topic as their dead-letter queue (KIP-1191)."),
    _k("internal.segment.bytes", "INT", None, (), (), "segment.bytes without its lower bound, for tests.",
       internal=True),
)}

# Kafka's defaults of the broker settings behind topic settings (KafkaConfig.defaultValues: the
# static default a synonym list ends with; settings with a null default are absent).
BROKER_DEFAULTS: dict[str, str] = {
    "log.segment.bytes": "1073741824", "log.roll.hours": "168", "log.roll.jitter.hours": "0",
    "log.index.size.max.bytes": "10485760", "log.flush.interval.messages": str(LONG_MAX),
    "log.flush.scheduler.interval.ms": str(LONG_MAX), "log.retention.bytes": "-1", "log.retention.hours": "168",
    "message.max.bytes": "1048588", "log.index.interval.bytes": "4096",
    "log.cleaner.delete.retention.ms": "86400000", "log.cleaner.min.compaction.lag.ms": "0",
    "log.cleaner.max.compaction.lag.ms": str(LONG_MAX), "log.segment.delete.delay.ms": "60000",
    "log.cleaner.min.cleanable.ratio": "0.5", "log.cleanup.policy": "delete",
    "unclean.leader.election.enable": "false", "min.insync.replicas": "1", "compression.type": "producer",
    "compression.gzip.level": "-1", "compression.lz4.level": "9", "compression.zstd.level": "3",
    "log.preallocate": "false", "log.message.timestamp.type": "CreateTime",
    "log.message.timestamp.before.max.ms": str(LONG_MAX), "log.message.timestamp.after.max.ms": "3600000",
    "log.local.retention.ms": "-2", "log.local.retention.bytes": "-2", "log.remote.copy.lag.ms": "0",
    "log.remote.copy.lag.bytes": "-1",
}
# the broker setting of a synonym in hours or minutes, turned into the topic setting's milliseconds
_SCALE = {"log.roll.hours": 3600000, "log.roll.jitter.hours": 3600000, "log.retention.hours": 3600000,
          "log.retention.minutes": 60000}

# ClusterConfig fields that are the broker's static server.properties values of a setting, with
# Kafka's default: a field set away from it is shown as STATIC_BROKER_CONFIG
STATIC_FIELDS = {
    "log.retention.ms": ("log_retention_ms", "604800000"), "log.retention.bytes": ("log_retention_bytes", "-1"),
    "log.segment.bytes": ("log_segment_bytes", "1073741824"), "message.max.bytes": ("message_max_bytes", "1048588"),
    "auto.create.topics.enable": ("auto_create_topics", "true"), "num.partitions": ("default_partitions", "1"),
    "offsets.topic.num.partitions": ("offsets_topic_partitions", "50"),
    "transaction.state.log.num.partitions": ("transaction_topic_partitions", "50"),
    "share.coordinator.state.topic.num.partitions": ("share_state_topic_partitions", "50"),
    "transaction.max.timeout.ms": ("transaction_max_timeout_ms", "900000"),
    "transactional.id.expiration.ms": ("transactional_id_expiration_ms", "604800000"),
    "producer.id.expiration.ms": ("producer_id_expiration_ms", "86400000"),
    "group.consumer.session.timeout.ms": ("group_consumer_session_timeout_ms", "45000"),
    "group.consumer.heartbeat.interval.ms": ("group_consumer_heartbeat_interval_ms", "5000"),
    "group.share.session.timeout.ms": ("group_share_session_timeout_ms", "45000"),
    "group.share.heartbeat.interval.ms": ("group_share_heartbeat_interval_ms", "5000"),
    "group.share.record.lock.duration.ms": ("group_share_record_lock_duration_ms", "30000"),
    "group.share.delivery.count.limit": ("group_share_delivery_count_limit", "5"),
    "group.share.partition.max.record.locks": ("group_share_partition_max_record_locks", "200"),
    "offset.metadata.max.bytes": ("offset_metadata_max_bytes", "4096"),
    "log.retention.check.interval.ms": ("log_retention_check_interval_ms", "300000"),
    "allow.everyone.if.no.acl.found": ("allow_everyone_if_no_acl_found", "false"),
}


# ---- parsing and validating (ConfigDef.parseType and the validators) ------------------------------
def parse(key: Key, raw: str, checked: bool = True):
    """ConfigDef.parseType + (if `checked`) the key's validator: the typed value, or ConfigError with
    Kafka's text. Values already in force (a topic's stored settings, the kit's broker settings,
    which may go below Kafka's bounds on purpose, e.g. small segments) are read unchecked."""
    name, t = key.name, key.type
    text = raw.strip()
    if t == "BOOLEAN":
        if text.lower() not in ("true", "false"):
            raise ConfigError(f"Invalid value {raw} for configuration {name}: Expected value to be either true or false")
        value = text.lower() == "true"
    elif t in ("INT", "LONG", "SHORT"):
        bits = {"INT": 31, "LONG": 63, "SHORT": 15}[t]
        if not _INT.match(text) or not -2**bits <= int(text) < 2**bits:
            raise ConfigError(f"Invalid value {raw} for configuration {name}: Not a number of type {t}")
        value = int(text)
    elif t == "DOUBLE":
        if not _DOUBLE.match(text):
            raise ConfigError(f"Invalid value {raw} for configuration {name}: Not a number of type {t}")
        value = float(text.rstrip("fFdD").replace("Infinity", "inf"))
    elif t == "LIST":
        value = [] if not text else _COMMA.split(text)
    else:
        value = text
    if checked:
        _check(key, value)
    return value


# size: ConfigDef's validators, one branch each, so their messages read side by side with ConfigDef.java
def _check(key: Key, value) -> None:
    if not key.check:
        return
    name, kind, args = key.name, key.check[0], key.check[1:]
    shown = to_string(key, value)
    if kind in ("min", "between"):
        if value < args[0]:
            raise ConfigError(f"Invalid value {shown} for configuration {name}: Value must be at least {args[0]}")
        if kind == "between" and value > args[1]:
            raise ConfigError(f"Invalid value {shown} for configuration {name}: Value must be no more than {args[1]}")
    elif kind == "in":
        if value not in args:
            raise ConfigError(f"Invalid value {value} for configuration {name}: String must be one of: {', '.join(args)}")
    elif kind == "list_in":
        if len(set(value)) != len(value):
            raise ConfigError(f"Configuration '{name}' values must not be duplicated.")
        for v in value:
            if v == "":
                raise ConfigError(f"Configuration '{name}' values must not be empty.")
            if v not in args:
                raise ConfigError(f"Invalid value {v} for configuration {name}: String must be one of: {', '.join(args)}")
    elif kind == "gzip":
        if value > 9 or (value < 1 and value != -1):
            raise ConfigError(f"Invalid value {value} for configuration {name}: Value must be between 1 and 9 or equal to -1")
    elif kind == "replicas":
        parts = [v.strip() for v in value]
        if not (all(_REPLICA.match(p) for p in parts) or "".join(parts) == "*"):
            raise ConfigError(f"Invalid value [{', '.join(value)}] for configuration {name}: {name} must be the literal "
                              "'*' or a list of replicas in the following format: [partitionId]:[brokerId],"
                              "[partitionId]:[brokerId],...")


def _java_double(x: float) -> str:
    """Double.toString: 0.5 -> "0.5", 1.0 -> "1.0", 1e-05 -> "1.0E-5"."""
    if x != x:
        return "NaN"
    if x in (float("inf"), float("-inf")):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0 or 1e-3 <= abs(x) < 1e7:
        s = repr(x)
        return s if "." in s or "e" in s else s + ".0"
    sign, digits, exponent = Decimal(repr(x)).normalize().as_tuple()
    text = "".join(map(str, digits))
    mant = text[0] + "." + (text[1:] or "0")
    return f"{'-' if sign else ''}{mant}E{len(text) + exponent - 1}"


def to_string(key: Key, value) -> str:
    """ConfigDef.convertToString."""
    if value is None:
        return None
    if key.type == "LIST":
        return ",".join(value)
    if key.type == "BOOLEAN":
        return "true" if value else "false"
    if key.type == "DOUBLE":
        return _java_double(value)
    return str(value)


def validate_topic(configs: dict[str, str | None]) -> None:
    """ControllerConfigurationValidator.validate(TOPIC) -> LogConfig.validate: null values, unknown
    names, each value's type and range, then the cross-setting rules. ConfigError if refused."""
    nulls = [n for n, v in configs.items() if v is None]
    if nulls:
        raise ConfigError(f"Null value not supported for topic configs: {','.join(nulls)}")
    for name in configs:                                  # LogConfig.validateNames
        if name not in TOPIC_CONFIGS:
            raise ConfigError(f"Unknown topic config name: {name}")
    parsed = {}
    for name, key in TOPIC_CONFIGS.items():               # ConfigDef.parse, in definition order
        if name in configs:
            parsed[name] = parse(key, configs[name])
    lo = parsed.get("min.compaction.lag.ms", 0)
    hi = parsed.get("max.compaction.lag.ms", LONG_MAX)
    if lo > hi:                                            # LogConfig.validateValues
        raise ConfigError(f"conflict topic config setting min.compaction.lag.ms ({lo}) > "
                          f"max.compaction.lag.ms ({hi})")
    if parsed.get("remote.storage.enable"):                # validateRemoteStorageOnlyIfSystemEnabled
        raise ConfigError("Tiered Storage functionality is disabled in the broker. Topic cannot be configured "
                          "with remote log storage.")


# ---- resolution -----------------------------------------------------------------------------------
def dynamic_broker(cluster) -> dict[str, dict[str, str]]:
    """The dynamic broker settings AlterConfigs has set: {"" (cluster default) or broker id: {name: value}}."""
    store = cluster.__dict__.get("broker_configs")
    if store is None:
        store = cluster.broker_configs = {}
    return store


_PER_BROKER = ("broker.id", "node.id", "process.roles", "advertised.listeners")


def static_value(cluster, name: str, broker: int | None = None) -> str | None:
    """One setting of the broker's server.properties as the kit plays it: a ClusterConfig field set
    away from Kafka's default, the authorizer's super.users, or (for one broker) its id, roles and
    listener; None when server.properties would not name it."""
    cfg = cluster.config
    field_default = STATIC_FIELDS.get(name)
    if field_default is not None:
        v = getattr(cfg, field_default[0])
        v = ("true" if v else "false") if isinstance(v, bool) else ("" if v is None else str(v))
        return v if v and v != field_default[1] else None
    if name == "super.users":
        return ";".join(cfg.super_users) or None
    if broker is not None and name in _PER_BROKER:
        if name == "advertised.listeners":       # one NAME://host:port per listener, PLAINTEXT first
            names = ["PLAINTEXT", *(n for n, by_broker in cfg.named_listeners.items() if broker in by_broker)]
            return ",".join("{}://{}:{}".format(n, *cfg.advertised(broker, n)) for n in names)
        return "broker,controller" if name == "process.roles" else str(broker)
    return None


def static_broker(cluster, broker: int | None = None) -> dict[str, str]:
    """Every setting static_value names."""
    names = [*STATIC_FIELDS, "super.users", *(_PER_BROKER if broker is not None else ())]
    return {n: v for n in names if (v := static_value(cluster, n, broker)) is not None}


def broker_synonyms(cluster, names, broker: int | None, first: str | None = None) -> list[tuple[str, str, int]]:
    """ConfigHelper.configSynonyms: (name, value, source) of each of `names` that is set, dynamic
    per-broker first, then the dynamic cluster default, static, Kafka's default; the list starts at
    the first synonym named `first` (default names[0]): the ones before it are dropped."""
    dyn = cluster.__dict__.get("broker_configs") or {}
    found = []
    if dyn:
        for values, source in ((dyn.get(str(broker), {}) if broker is not None else {}, DYNAMIC_BROKER),
                               (dyn.get("", {}), DYNAMIC_DEFAULT_BROKER)):
            found += [(n, values[n], source) for n in names if n in values]
    for n in names:
        v = static_value(cluster, n, broker)
        if v is not None:
            found.append((n, v, STATIC_BROKER))
    found += [(n, BROKER_DEFAULTS[n], DEFAULT) for n in names if n in BROKER_DEFAULTS]
    first = first or names[0]
    while found and found[0][0] != first:
        found.pop(0)
    return found


def topic_entry(cluster, configs: dict, name: str, broker: int | None = None) -> tuple[object, int, list]:
    """(typed value, source, synonyms) of one topic setting, given the topic's own `configs`, as
    DescribeConfigs answers it (ConfigHelper.createTopicConfigEntry)."""
    key = TOPIC_CONFIGS[name]
    synonyms = broker_synonyms(cluster, key.synonyms, broker) if key.synonyms else []
    own = configs.get(name)
    if own is not None:
        synonyms = [(name, to_string(key, _in_force(name, own)), DYNAMIC_TOPIC)] + synonyms
    if synonyms:
        n, raw, source = synonyms[0]
        value = _in_force(name, raw) if n == name else _from_broker(key, n, raw)
    else:
        value, source = key.default, DEFAULT
    return value, source, synonyms


@lru_cache(maxsize=4096)
def _in_force(name: str, raw: str):
    """A value already in force, parsed (unchecked); lists come back as tuples (shared, immutable)."""
    key = TOPIC_CONFIGS.get(name) or BROKER_CONFIGS[name]
    value = parse(key, raw, checked=False)
    return tuple(value) if isinstance(value, list) else value


def _from_broker(key: Key, broker_name: str, raw: str):
    if broker_name in _SCALE:
        return int(raw) * _SCALE[broker_name]
    return _in_force(key.name, raw)


def topic_value(cluster, topic, name: str, broker: int | None = None):
    """The setting in force for `topic` (its own value, else the broker's)."""
    return topic_entry(cluster, topic.configs, name, broker)[0]


def segment_bytes(cluster, topic) -> int:
    """The segment size in force: internal.segment.bytes when set, else segment.bytes
    (LogConfig.segmentSize)."""
    raw = topic.configs.get("internal.segment.bytes")
    return int(raw) if raw is not None else topic_value(cluster, topic, "segment.bytes")


def cleanup_policy(cluster, topic) -> list[str]:
    """cleanup.policy of the topic: ["delete"], ["compact"], both, or [] (neither). The log cleaner
    (kipviz.broker.cleaner) compacts when "compact" is in it; retention deletes when "delete" is."""
    return topic_value(cluster, topic, "cleanup.policy")


def effective_topic_configs(cluster, configs: dict) -> list[dict]:
    """CreateTopics' Configs of a created topic: every topic setting in force, by name
    (ReplicationControlManager.createTopic -> computeEffectiveTopicConfigs)."""
    out = []
    for name in sorted(n for n, k in TOPIC_CONFIGS.items() if not k.internal or n in configs):
        key = TOPIC_CONFIGS[name]
        value, source, _ = topic_entry(cluster, configs, name)
        out.append({"Name": name, "Value": to_string(key, value), "ReadOnly": False, "ConfigSource": source,
                    "IsSensitive": False})
    return out


# ---- broker settings the model describes ----------------------------------------------------------
def _b(name, type_, doc) -> Key:
    return Key(name, type_, BROKER_DEFAULTS.get(name), (), (name,), doc)


# A broker lists every KafkaConfig setting (a few hundred); the model lists the ones it plays, plus
# the dynamic log settings behind topic settings (DynamicLogConfig.RECONFIGURABLE_CONFIGS). Defaults
# are Kafka's as strings (None: no default).
BROKER_CONFIGS: dict[str, Key] = {k.name: k for k in (
    _b("broker.id", "INT", "This broker's id (the same as node.id in KRaft)."),
    _b("node.id", "INT", "This node's id in the KRaft quorum."),
    _b("process.roles", "LIST", "broker, controller or both."),
    _b("advertised.listeners", "LIST", "NAME://host:port per listener: where a client that came in on it is told to connect."),
    _b("auto.create.topics.enable", "BOOLEAN", "Whether a Metadata request may create a missing topic."),
    _b("num.partitions", "INT", "Partitions of a topic created without a count."),
    _b("offsets.topic.num.partitions", "INT", "Partitions of __consumer_offsets."),
    _b("transaction.state.log.num.partitions", "INT", "Partitions of __transaction_state."),
    _b("share.coordinator.state.topic.num.partitions", "INT", "Partitions of __share_group_state."),
    _b("transaction.max.timeout.ms", "INT", "Largest transaction.timeout.ms a producer may ask for."),
    _b("transactional.id.expiration.ms", "INT", "Idle time after which a transactional id is forgotten."),
    _b("producer.id.expiration.ms", "INT", "Idle time after which a producer's state is forgotten."),
    _b("group.consumer.session.timeout.ms", "INT", "Session timeout of consumer-protocol group members."),
    _b("group.consumer.heartbeat.interval.ms", "INT", "Heartbeat interval of consumer-protocol members."),
    _b("group.share.session.timeout.ms", "INT", "Session timeout of share group members."),
    _b("group.share.heartbeat.interval.ms", "INT", "Heartbeat interval of share group members."),
    _b("group.share.record.lock.duration.ms", "INT", "How long a share consumer holds acquired records."),
    _b("group.share.delivery.count.limit", "INT", "Deliveries before a share record is archived."),
    _b("group.share.partition.max.record.locks", "INT", "Records a share partition may have acquired at once."),
    _b("offset.metadata.max.bytes", "INT", "Largest metadata string of a committed offset."),
    _b("log.retention.check.interval.ms", "LONG", "How often retention deletes old segments."),
    _b("log.retention.minutes", "INT", "Retention in minutes, if log.retention.ms is not set."),
    _b("log.retention.hours", "INT", "Retention in hours, if neither log.retention.ms nor .minutes is set."),
    _b("log.roll.hours", "INT", "Segment roll time in hours, if log.roll.ms is not set."),
    _b("super.users", "STRING", "Principals the authorizer allows everything (;-separated)."),
    _b("allow.everyone.if.no.acl.found", "BOOLEAN", "Allow when no ACL names the resource."),
)}
BROKER_DEFAULTS.update({"auto.create.topics.enable": "true", "num.partitions": "1",
                        "offsets.topic.num.partitions": "50", "transaction.state.log.num.partitions": "50",
                        "share.coordinator.state.topic.num.partitions": "50", "transaction.max.timeout.ms": "900000",
                        "transactional.id.expiration.ms": "604800000", "producer.id.expiration.ms": "86400000",
                        "group.consumer.session.timeout.ms": "45000", "group.consumer.heartbeat.interval.ms": "5000",
                        "group.share.session.timeout.ms": "45000", "group.share.heartbeat.interval.ms": "5000",
                        "group.share.record.lock.duration.ms": "30000", "group.share.delivery.count.limit": "5",
                        "group.share.partition.max.record.locks": "200", "offset.metadata.max.bytes": "4096",
                        "log.retention.check.interval.ms": "300000", "allow.everyone.if.no.acl.found": "false",
                        "broker.id": "-1", "node.id": "-1"})
BROKER_CONFIGS = {n: Key(n, k.type, BROKER_DEFAULTS.get(n), (), k.synonyms, k.doc)
                  for n, k in BROKER_CONFIGS.items()}
for _key in TOPIC_CONFIGS.values():
    if _key.synonyms and not _key.internal:
        _n = _key.synonyms[0]
        # brokerConfigSynonyms: the retention, roll and flush groups; every other setting is its own
        _group = _key.synonyms if _n in ("log.retention.ms", "log.roll.ms", "log.roll.jitter.ms",
                                         "log.flush.interval.ms") else (_n,)
        BROKER_CONFIGS[_n] = Key(_n, _key.type, BROKER_DEFAULTS.get(_n), _key.check, _group, _key.doc)
for _n in ("log.retention.minutes", "log.retention.hours"):
    BROKER_CONFIGS[_n] = Key(_n, "INT", BROKER_DEFAULTS.get(_n), (), ("log.retention.ms", "log.retention.minutes",
                                                                      "log.retention.hours"), BROKER_CONFIGS[_n].doc)
BROKER_CONFIGS["log.roll.hours"] = Key("log.roll.hours", "INT", "168", (), ("log.roll.ms", "log.roll.hours"),
                                       BROKER_CONFIGS["log.roll.hours"].doc)
del _key, _n, _group

# DynamicBrokerConfig.AllDynamicConfigs (core/src/main/scala/kafka/server/DynamicBrokerConfig.scala), the
# part of it among the settings the kit describes. A broker entry is ReadOnly exactly when its own name
# is not in it (ConfigHelper.createBrokerConfigEntry: readOnly = !AllDynamicConfigs.contains(name); a
# synonym does not count, so log.retention.hours is read-only while log.retention.ms is not), and only
# these may be altered (DynamicBrokerConfig.validateConfigs: "Cannot update these configs dynamically").
#   DynamicLogConfig.ReconfigurableConfigs: ServerTopicConfigSynonyms.TOPIC_CONFIG_SYNONYMS' values, each
#     topic setting's first broker synonym;
#   DynamicProducerStateManagerConfig: producer.id.expiration.ms, transaction.partition.verification.enable.
# Not in it (read-only), among the described: broker.id, node.id, process.roles, the coordinators'
# settings (GroupCoordinatorConfig.RECONFIGURABLE_CONFIGS names none of them), the authorizer's, and
# advertised.listeners: DynamicListenerConfig.ReconfigurableConfigs lost it in Kafka 4.0 (KAFKA-18405,
# apache/kafka#18508: KRaft cannot re-register a broker's endpoints at runtime), so 4.x brokers answer
# it ReadOnly=true (Update Mode read-only in the 4.x broker config docs).
DYNAMIC_PRODUCER_STATE = frozenset({"producer.id.expiration.ms", "transaction.partition.verification.enable"})
ALL_DYNAMIC_CONFIGS = frozenset(
    {k.synonyms[0] for k in TOPIC_CONFIGS.values() if k.synonyms and not k.internal} | DYNAMIC_PRODUCER_STATE)
BROKER_CONFIGS = {n: Key(k.name, k.type, k.default, k.check, k.synonyms, k.doc, k.internal,
                         dynamic=n in ALL_DYNAMIC_CONFIGS) for n, k in BROKER_CONFIGS.items()}


def broker_entry(cluster, name: str, broker: int | None) -> tuple[str | None, int, list]:
    """(value, source, synonyms) of a broker setting as DescribeConfigs answers it for `broker`
    (None: the cluster-wide defaults resource, which lists dynamic defaults only)
    (ConfigHelper.createBrokerConfigEntry)."""
    key = BROKER_CONFIGS[name]
    synonyms = broker_synonyms(cluster, key.synonyms or (name,), broker, first=name)
    if broker is None:
        synonyms = [s for s in synonyms if s[2] == DYNAMIC_DEFAULT_BROKER]
    value = next((v for n, v, _ in synonyms if n == name), None)
    if value is None and broker is not None:
        value = key.default
    return value, (synonyms[0][2] if synonyms else DEFAULT), synonyms
