"""DescribeConfigs, AlterConfigs and IncrementalAlterConfigs, after released Kafka 4.4: the broker's
KafkaApis (authorization of DescribeConfigs, core/src/main/scala/kafka/server/ConfigHelper.scala;
the preprocessing of alters, core/src/main/scala/kafka/server/ConfigAdminManager.scala) and the
controller it forwards alters to (core/src/main/scala/kafka/server/ControllerApis.scala,
metadata/src/main/java/org/apache/kafka/controller/ConfigurationControlManager.java,
core/src/main/scala/kafka/server/ControllerConfigurationValidator.scala).

Settings are the fact table of kipviz.broker.log_config: topic configs validated as LogConfig does
(INVALID_CONFIG with Kafka's message, nothing changed), kept per topic (Topic.configs) and described
with source, synonyms and documentation; broker configs described as a 4.4 broker describes its own
(the cluster-wide "" resource lists its dynamic defaults only), the dynamic ones alterable
(kept in Cluster.broker_configs, which topic settings fall back to); group configs (GroupConfig)
with their names and types checked (the broker-side min/max bounds of GroupConfig.validateValues
are not modelled). Resource types: 2 topic, 4 broker, 8 broker logger, 16 client metrics, 32 group."""
from __future__ import annotations

from ...schema import events as ev
from ...schema.error_codes import CODE
from .. import log_config as lc
from ..error_rows import kafka_only, rows
from . import Request, handles
from .metadata import CLUSTER_RESOURCE, MESSAGES, shape, topic_name_problem

TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP = 2, 4, 8, 16, 32
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
OP_NAMES = {SET: "SET", DELETE: "DELETE", APPEND: "APPEND", SUBTRACT: "SUBTRACT"}
_TYPE_NAMES = {TOPIC: "TOPIC", BROKER: "BROKER", BROKER_LOGGER: "BROKER_LOGGER", CLIENT_METRICS: "CLIENT_METRICS",
               GROUP: "GROUP"}

# GroupConfig's names and types (group-coordinator/.../coordinator/group/GroupConfig.java), with
# the ConfigDef lower bounds; the model plays the first six (ClusterConfig) and keeps the rest.
GROUP_CONFIGS: dict[str, lc.Key] = {k.name: k for k in (
    lc.Key("share.auto.offset.reset", "STRING", "latest", (), (), "Where a share group with no state starts: "
           "latest, earliest or by_duration:<ISO-8601 duration>."),
    lc.Key("share.record.lock.duration.ms", "INT", 30000, ("min", 1000), (), "How long a share consumer holds "
           "acquired records in this group."),
    lc.Key("consumer.session.timeout.ms", "INT", 45000, ("min", 1), (), "Session timeout of this consumer group."),
    lc.Key("consumer.heartbeat.interval.ms", "INT", 5000, ("min", 1), (), "Heartbeat interval of this consumer group."),
    lc.Key("share.session.timeout.ms", "INT", 45000, ("min", 1), (), "Session timeout of this share group."),
    lc.Key("share.heartbeat.interval.ms", "INT", 5000, ("min", 1), (), "Heartbeat interval of this share group."),
    lc.Key("consumer.assignment.interval.ms", "INT", 1000, ("min", 0), (), "Consumer group assignment interval."),
    lc.Key("share.delivery.count.limit", "INT", 5, ("min", 2), (), "Deliveries before a record is archived."),
    lc.Key("share.partition.max.record.locks", "INT", 2000, ("min", 100), (), "In-flight records per share partition."),
    lc.Key("share.isolation.level", "STRING", "read_uncommitted", ("in", "read_committed", "read_uncommitted"), (),
           "Which records a share group reads."),
    lc.Key("share.renew.acknowledge.enable", "BOOLEAN", True, (), (), "Whether RENEW acknowledgements are allowed."),
    lc.Key("share.assignment.interval.ms", "INT", 1000, ("min", 0), (), "Share group assignment interval."),
    lc.Key("streams.session.timeout.ms", "INT", 45000, ("min", 1), (), "Session timeout of this streams group."),
    lc.Key("streams.heartbeat.interval.ms", "INT", 5000, ("min", 1), (), "Heartbeat interval of this streams group."),
    lc.Key("streams.num.standby.replicas", "INT", 0, ("min", 0), (), "Standby replicas per streams task."),
    lc.Key("streams.initial.rebalance.delay.ms", "INT", 3000, ("min", 0), (), "Delay of a new streams group's first "
           "assignment."),
    lc.Key("streams.assignment.interval.ms", "INT", 1000, ("min", 0), (), "Streams group assignment interval."),
    lc.Key("streams.rack.aware.assignment.tags", "LIST", [], (), (), "Rack tags the streams assignor balances on."),
    lc.Key("streams.assignor.name", "STRING", None, (), (), "The streams assignor to use."),
    lc.Key("errors.deadletterqueue.topic.name", "STRING", "", (), (), "The share group's dead-letter topic (KIP-1191)."),
    lc.Key("errors.deadletterqueue.copy.record.enable", "BOOLEAN", False, (), (), "Whether the dead-letter record "
           "copies the failed record (KIP-1191)."),
)}
_GROUP_FROM_CLUSTER = {"share.record.lock.duration.ms": "group_share_record_lock_duration_ms",
                       "consumer.session.timeout.ms": "group_consumer_session_timeout_ms",
                       "consumer.heartbeat.interval.ms": "group_consumer_heartbeat_interval_ms",
                       "share.session.timeout.ms": "group_share_session_timeout_ms",
                       "share.heartbeat.interval.ms": "group_share_heartbeat_interval_ms"}


def _auto_offset_reset_ok(value: str) -> bool:
    """ShareGroupAutoOffsetResetStrategy.Validator: latest, earliest or by_duration:<ISO-8601 duration>."""
    v = value.strip().lower()
    if v in ("latest", "earliest"):
        return True
    return v.startswith("by_duration:") and v[len("by_duration:"):].startswith(("p", "-p"))


def group_configs(cluster) -> dict[str, dict[str, str]]:
    """The dynamic group settings AlterConfigs has set: {group id: {name: value}}."""
    store = cluster.__dict__.get("group_configs")
    if store is None:
        store = cluster.group_configs = {}
    return store


def _validate_group(name: str, configs: dict[str, str | None]) -> None:
    """ControllerConfigurationValidator.validate(GROUP) -> GroupConfig.validate: names, types, bounds."""
    if not name:
        raise _Refused("INVALID_REQUEST", "Default group resources are not allowed.")
    nulls = [n for n, v in configs.items() if v is None]
    if nulls:
        raise lc.ConfigError(f"Null value not supported for group configs: {','.join(nulls)}")
    for n in configs:
        if n not in GROUP_CONFIGS:
            raise lc.ConfigError(f"Unknown group config name: {n}")
    for n, v in configs.items():
        lc.parse(GROUP_CONFIGS[n], v)
        if n == "share.auto.offset.reset" and not _auto_offset_reset_ok(v):
            raise lc.ConfigError(f"Invalid value {v} for configuration {n}: Invalid value `{v}` for configuration "
                                 f"{n}. The value must be either 'earliest', 'latest' or of the format "
                                 f"'by_duration:<PnDTnHnMn.nS.>'.")


class _Refused(Exception):
    """One resource's answer: (error name, message)."""

    def __init__(self, error: str, message: str | None = None):
        super().__init__(message)
        self.error, self.message = error, message


# ---- DescribeConfigs --------------------------------------------------------------------------------
def _entry(req: Request, name: str, value, source: int, synonyms: list, ctype: int, doc: str, read_only: bool,
           shown: str | None) -> dict:
    v = req.version
    entry = {"Name": name, "Value": shown, "ReadOnly": read_only, "IsSensitive": False}
    if v == 0:
        entry["IsDefault"] = source == lc.DEFAULT
    else:
        include = bool(req.body.get("IncludeSynonyms"))
        entry.update(ConfigSource=source, Synonyms=[{"Name": n, "Value": val, "Source": s} for n, val, s in synonyms]
                     if include else [])
    if v >= 3:
        entry.update(ConfigType=ctype, Documentation=doc if req.body.get("IncludeDocumentation") else None)
    return entry


def _topic_entries(cluster, req: Request, topic) -> list[dict]:
    out = []
    for name, key in lc.TOPIC_CONFIGS.items():
        if key.internal and name not in topic.configs:
            continue
        value, source, synonyms = lc.topic_entry(cluster, topic.configs, name, req.broker)
        out.append(_entry(req, name, value, source, synonyms, key.config_type, key.doc, False,
                          lc.to_string(key, value)))
    return out


def _broker_entries(cluster, req: Request, broker: int | None) -> list[dict]:
    out = []
    names = lc.BROKER_CONFIGS if broker is not None else lc.dynamic_broker(cluster).get("", {})
    for name in names:
        key = lc.BROKER_CONFIGS.get(name) or lc.Key(name, "STRING", None)
        value, source, synonyms = lc.broker_entry(cluster, name, broker) if name in lc.BROKER_CONFIGS else \
            (names[name], lc.DYNAMIC_DEFAULT_BROKER, [(name, names[name], lc.DYNAMIC_DEFAULT_BROKER)])
        out.append(_entry(req, name, value, source, synonyms, key.config_type, key.doc, not key.dynamic, value))
    return out


def _group_entries(cluster, req: Request, group: str) -> list[dict]:
    cfg, own = cluster.config, group_configs(cluster).get(group, {})
    out = []
    for name, key in GROUP_CONFIGS.items():
        if name in own:
            value, source = lc.to_string(key, lc.parse(key, own[name], checked=False)), lc.DYNAMIC_GROUP
        elif name == "share.auto.offset.reset":
            value, source = cfg.share_offset_reset(group), (lc.DYNAMIC_GROUP if group in cfg.share_group_offset_reset
                                                            else lc.DEFAULT)
        elif name in _GROUP_FROM_CLUSTER:
            value, source = str(getattr(cfg, _GROUP_FROM_CLUSTER[name])), lc.DEFAULT
        else:
            value, source = lc.to_string(key, key.default), lc.DEFAULT
        synonyms = [(name, value, source)]
        out.append(_entry(req, name, value, source, synonyms, key.config_type, key.doc, False, value))
    return out


def _broker_id(name: str) -> int:
    if not (name.lstrip("-").isdigit()):
        raise _Refused("INVALID_REQUEST", f"Broker id must be an integer, but it is: {name}")
    return int(name)


def _describe(cluster, req: Request, res: dict) -> dict:
    rtype, name = res.get("ResourceType"), res.get("ResourceName") or ""
    out = {"ErrorCode": 0, "ErrorMessage": None, "ResourceType": rtype, "ResourceName": name, "Configs": []}
    try:
        if rtype == TOPIC:
            problem = topic_name_problem(name)
            if problem:
                raise _Refused("INVALID_TOPIC_EXCEPTION", problem)
            topic = cluster.topics.get(name)
            if topic is None:
                raise _Refused("UNKNOWN_TOPIC_OR_PARTITION")
            entries = _topic_entries(cluster, req, topic)
        elif rtype == BROKER:
            if not name:
                entries = _broker_entries(cluster, req, None)
            elif _broker_id(name) == req.broker:
                entries = _broker_entries(cluster, req, req.broker)
            else:
                raise _Refused("INVALID_REQUEST", f"Unexpected broker id, expected {req.broker} or empty string, "
                                                  f"but received {name}")
        elif rtype == BROKER_LOGGER:
            if not name:
                raise _Refused("INVALID_REQUEST", "Broker id must not be empty")
            if _broker_id(name) != req.broker:
                raise _Refused("INVALID_REQUEST", f"Unexpected broker id, expected {req.broker} but received {name}")
            entries = [_entry(req, "root", "INFO", lc.DYNAMIC_BROKER_LOGGER, [], lc.CONFIG_TYPE["STRING"], None,
                              False, "INFO")]
        elif rtype == CLIENT_METRICS:
            if not name:
                raise _Refused("INVALID_REQUEST", "Client metrics subscription name must not be empty")
            entries = [_entry(req, n, v, lc.DEFAULT, [], lc.CONFIG_TYPE[t], None, False, v) for n, v, t in
                       (("interval.ms", "300000", "INT"), ("match", "", "LIST"), ("metrics", "", "LIST"))]
        else:    # GROUP (the only other type the authorization step lets through)
            if not name:
                raise _Refused("INVALID_REQUEST", "Group name must not be empty")
            entries = _group_entries(cluster, req, name)
    except _Refused as e:
        out.update(ErrorCode=CODE[e.error], ErrorMessage=e.message)
        return out
    keys = res.get("ConfigurationKeys")
    # ConfigHelperUtils.createResponseConfig: null or an EMPTY key list means every setting (kafka-python sends [])
    out["Configs"] = [e for e in entries if not keys or e["Name"] in keys]
    return out


def _auth_of(rtype) -> tuple[str, str] | None:
    """(ACL resource type, error when refused) of a config resource type (ConfigHelper and
    ControllerApis.authorizeAlterResource: BROKER, BROKER_LOGGER and CLIENT_METRICS are the cluster's)."""
    return {TOPIC: ("TOPIC", "TOPIC_AUTHORIZATION_FAILED"), GROUP: ("GROUP", "GROUP_AUTHORIZATION_FAILED"),
            BROKER: ("CLUSTER", "CLUSTER_AUTHORIZATION_FAILED"), BROKER_LOGGER: ("CLUSTER", "CLUSTER_AUTHORIZATION_FAILED"),
            CLIENT_METRICS: ("CLUSTER", "CLUSTER_AUTHORIZATION_FAILED")}.get(rtype)

ERRORS = {}
ERRORS["DescribeConfigs"] = rows(0, (
    "CLUSTER_AUTHORIZATION_FAILED", "TOPIC_AUTHORIZATION_FAILED", "GROUP_AUTHORIZATION_FAILED",
    "UNKNOWN_TOPIC_OR_PARTITION", "INVALID_TOPIC_EXCEPTION", "INVALID_REQUEST"),
    "KafkaApis.handleDescribeConfigsRequest, ConfigHelper.describeConfigs")


@handles("DescribeConfigs")
def describe_configs(cluster, req: Request) -> dict:
    resources = req.body.get("Resources") or []
    bad = next((r for r in resources if _auth_of(r.get("ResourceType")) is None), None)
    if bad is not None:
        # ConfigHelper.handleDescribeConfigsRequest throws for the whole request (getErrorResponse)
        msg = f"Unexpected resource type UNKNOWN for resource {bad.get('ResourceName')}"
        return {"ThrottleTimeMs": 0, "Results": [
            {"ErrorCode": CODE["INVALID_REQUEST"], "ErrorMessage": msg, "ResourceType": r.get("ResourceType"),
             "ResourceName": r.get("ResourceName"), "Configs": []} for r in resources]}
    allowed, denied = [], []
    for r in resources:
        rtype, name = r["ResourceType"], r.get("ResourceName") or ""
        kind, error = _auth_of(rtype)
        target = CLUSTER_RESOURCE if kind == "CLUSTER" else name
        (allowed if cluster.authorized(req.principal, kind, target, "DESCRIBE_CONFIGS") else denied).append((r, error))
    # authorized results first, then the refused ones (ConfigHelper: authorizedConfigs ++ unauthorizedConfigs)
    results = [_describe(cluster, req, r) for r, _ in allowed]
    results += [{"ErrorCode": CODE[e], "ErrorMessage": MESSAGES[CODE[e]], "ResourceType": r["ResourceType"],
                 "ResourceName": r.get("ResourceName"), "Configs": []} for r, e in denied]
    return {"ThrottleTimeMs": 0, "Results": results}


# ---- AlterConfigs / IncrementalAlterConfigs ----------------------------------------------------------
def _preprocess(req: Request, res: dict, incremental: bool) -> None:
    """ConfigAdminManager.preprocess for one resource (duplicates across resources are checked by
    the caller): raises _Refused for what the broker answers itself."""
    configs = res.get("Configs") or []
    names = [c.get("Name") for c in configs]
    if len(set(names)) != len(names):
        raise _Refused("INVALID_REQUEST", "Error due to duplicate config keys")
    nulls = [c["Name"] for c in configs if c.get("Value") is None
             and not (incremental and c.get("ConfigOperation") == DELETE)]
    if nulls:
        raise _Refused("INVALID_REQUEST", f"Null value not supported for : {', '.join(nulls)}")
    rtype, name = res.get("ResourceType"), res.get("ResourceName") or ""
    if rtype == BROKER:
        if name:
            if not name.lstrip("-").isdigit():
                raise _Refused("INVALID_REQUEST", f"Node id must be an integer, but it is: {name}")
            if int(name) != req.broker:
                raise _Refused("INVALID_REQUEST", f"Unexpected broker id, expected {req.broker}, but received {name}")
    elif rtype not in (TOPIC, CLIENT_METRICS, GROUP) and not (incremental and rtype == BROKER_LOGGER):
        raise _Refused("INVALID_REQUEST", f"Unknown resource type {rtype}")


def _list_op(op: int, name: str, old: str | None, value: str | None, key) -> str:
    """APPEND / SUBTRACT on a LIST setting (ConfigurationControlManager.getParts: an unset setting
    starts from its default); INVALID_CONFIG for any other type."""
    if key is None or key.type != "LIST":
        raise _Refused("INVALID_CONFIG", f"Can't {OP_NAMES[op]} to key {name} because its type is not LIST.")
    if old is None:
        old = lc.to_string(key, key.default) if key.default is not None else None
    parts = [p for p in (old or "").split(",") if p]
    for v in (value or "").split(","):
        if op == APPEND and v not in parts:
            parts.append(v)
        elif op == SUBTRACT and v in parts:
            parts.remove(v)
    return ",".join(parts)


def _new_values(current: dict[str, str], res: dict, incremental: bool, keys: dict) -> dict[str, str | None]:
    """The resource's settings after the change: legacy AlterConfigs replaces them all;
    IncrementalAlterConfigs applies SET/DELETE/APPEND/SUBTRACT one by one
    (ConfigurationControlManager.incrementalAlterConfigResource)."""
    if not incremental:
        return {c["Name"]: c.get("Value") for c in res.get("Configs") or []}
    out = dict(current)
    for c in res.get("Configs") or []:
        name, op, value = c["Name"], c.get("ConfigOperation"), c.get("Value")
        if op == SET:
            out[name] = value
        elif op == DELETE:
            out.pop(name, None)
        elif op in (APPEND, SUBTRACT):
            out[name] = _list_op(op, name, out.get(name), value, keys.get(name))
    return out


def _broker_change(cluster, res: dict, incremental: bool) -> dict[str, str]:
    """ConfigAdminManager.validateBrokerConfigChange -> DynamicBrokerConfig.validate: the new dynamic
    settings of a broker resource, or _Refused (INVALID_REQUEST, as KAFKA-13609 notes)."""
    name = res.get("ResourceName") or ""
    current = lc.dynamic_broker(cluster).get(name, {})
    if incremental:
        for c in res.get("Configs") or []:
            op, cname = c.get("ConfigOperation"), c["Name"]
            if op not in OP_NAMES:
                raise _Refused("INVALID_REQUEST", f"Unknown operations type {op}")
            if op in (APPEND, SUBTRACT):
                key = lc.BROKER_CONFIGS.get(cname)
                if key is None:
                    raise _Refused("INVALID_CONFIG", f"Unknown config name: {cname}")
                if key.type != "LIST":
                    verb = "append" if op == APPEND else "subtract"
                    raise _Refused("INVALID_CONFIG", f"Config value {verb} is not allowed for config key: {cname}")
    new = _new_values(current, res, incremental, lc.BROKER_CONFIGS)
    fixed = sorted(n for n in new if n in lc.BROKER_CONFIGS and not lc.BROKER_CONFIGS[n].dynamic)
    if fixed:
        raise _Refused("INVALID_REQUEST", f"Cannot update these configs dynamically: Set({', '.join(fixed)})")
    for n, v in new.items():
        if n in lc.BROKER_CONFIGS:
            try:
                lc.parse(lc.BROKER_CONFIGS[n], v)
            except lc.ConfigError as e:
                raise _Refused("INVALID_REQUEST", str(e)) from None
    return new


def _alter_one(cluster, req: Request, res: dict, incremental: bool, validate_only: bool) -> None:
    """One resource, in Kafka's order; raises _Refused with the resource's error."""
    _preprocess(req, res, incremental)
    rtype, name = res["ResourceType"], res.get("ResourceName") or ""
    if rtype == BROKER_LOGGER:
        # log4j levels on the broker itself (RuntimeLoggerManager): the model has none to change
        if not cluster.authorized(req.principal, "CLUSTER", CLUSTER_RESOURCE, "ALTER_CONFIGS"):
            raise _Refused("CLUSTER_AUTHORIZATION_FAILED", MESSAGES[CODE["CLUSTER_AUTHORIZATION_FAILED"]])
        return
    new_broker = _broker_change(cluster, res, incremental) if rtype == BROKER else None
    kind, error = _auth_of(rtype)
    if not cluster.authorized(req.principal, kind, CLUSTER_RESOURCE if kind == "CLUSTER" else name, "ALTER_CONFIGS"):
        raise _Refused(error, MESSAGES[CODE[error]])
    try:
        if rtype == TOPIC:
            if not name:
                raise _Refused("INVALID_REQUEST", "Default topic resources are not allowed.")
            problem = topic_name_problem(name)
            if problem:
                raise _Refused("INVALID_TOPIC_EXCEPTION", problem)
            topic = cluster.topics.get(name)
            new = _new_values(topic.configs if topic else {}, res, incremental, lc.TOPIC_CONFIGS)
            lc.validate_topic(new)
            if topic is None:                          # the controller's existence check, after validation
                raise _Refused("UNKNOWN_TOPIC_OR_PARTITION", f"The topic '{name}' does not exist.")
            if not validate_only:
                topic.configs.clear()
                topic.configs.update(new)
                cluster.emit(ev.ConfigsChanged, resource_type="TOPIC", resource=name, configs=tuple(new.items()),
                             api=req.api)
        elif rtype == GROUP:
            own = group_configs(cluster)
            new = _new_values(own.get(name, {}), res, incremental, GROUP_CONFIGS)
            _validate_group(name, new)
            if not validate_only:
                own[name] = new
                resets = cluster.config.share_group_offset_reset
                resets.pop(name, None)
                if "share.auto.offset.reset" in new:
                    resets[name] = new["share.auto.offset.reset"].strip().lower()
        elif rtype == BROKER:
            if not validate_only:
                lc.dynamic_broker(cluster)[name] = new_broker
                cluster.emit(ev.ConfigsChanged, resource_type="BROKER", resource=name,
                             configs=tuple(new_broker.items()), api=req.api)
        # CLIENT_METRICS subscriptions are accepted and kept by Kafka; the model has no client telemetry
    except lc.ConfigError as e:
        raise _Refused("INVALID_CONFIG", str(e)) from None


def _alter(cluster, req: Request, incremental: bool, each=None) -> dict:
    """Every resource's answer, in request order (ConfigAdminManager.reassemble*Response); `each`
    answers a resource that passed the broker's preprocessing instead of altering it."""
    body = req.body
    resources = body.get("Resources") or []
    validate_only = bool(body.get("ValidateOnly"))
    keys = [(r.get("ResourceType"), r.get("ResourceName")) for r in resources]
    out = []
    for res, key in zip(resources, keys, strict=True):
        code, message = 0, None
        try:
            if keys.count(key) > 1:
                raise _Refused("INVALID_REQUEST", "Each resource must appear at most once.")
            if each is None:
                _alter_one(cluster, req, res, incremental, validate_only)
            else:
                _preprocess(req, res, incremental)
                code, message = each
        except _Refused as e:
            code, message = CODE[e.error], e.message
        out.append({"ErrorCode": code, "ErrorMessage": message, "ResourceType": res.get("ResourceType"),
                    "ResourceName": res.get("ResourceName")})
    return shape(req.api + "Response", req.version, {"ThrottleTimeMs": 0, "Responses": out})


_ALTER_ROWS = ("ConfigAdminManager.preprocess (duplicates, nulls, broker ids, non-dynamic broker settings); "
               "ControllerApis.authorizeAlterResource; ConfigurationControlManager.validateAlterConfig "
               "(ControllerConfigurationValidator -> LogConfig.validate / GroupConfig.validate, then the "
               "existence check)")
ERRORS["AlterConfigs"] = rows(0, (
    "INVALID_REQUEST", "CLUSTER_AUTHORIZATION_FAILED", "TOPIC_AUTHORIZATION_FAILED", "GROUP_AUTHORIZATION_FAILED",
    "INVALID_CONFIG", "INVALID_TOPIC_EXCEPTION", "UNKNOWN_TOPIC_OR_PARTITION"), _ALTER_ROWS) + kafka_only(
    0, ("POLICY_VIOLATION",), "ControllerApis: alter.config.policy.class.name", "the model has no alter-config policy")
ERRORS["IncrementalAlterConfigs"] = rows(0, (
    "INVALID_REQUEST", "CLUSTER_AUTHORIZATION_FAILED", "TOPIC_AUTHORIZATION_FAILED", "GROUP_AUTHORIZATION_FAILED",
    "INVALID_CONFIG", "INVALID_TOPIC_EXCEPTION", "UNKNOWN_TOPIC_OR_PARTITION", "UNKNOWN_SERVER_ERROR"),
    _ALTER_ROWS + "; an unknown ConfigOperation makes the controller's switch throw (UNKNOWN_SERVER_ERROR)") + kafka_only(
    0, ("POLICY_VIOLATION",), "ControllerApis: alter.config.policy.class.name", "the model has no alter-config policy")


@handles("AlterConfigs")
def alter_configs(cluster, req: Request) -> dict:
    return _alter(cluster, req, incremental=False)


@handles("IncrementalAlterConfigs")
def incremental_alter_configs(cluster, req: Request) -> dict:
    forwarded = [r for r in req.body.get("Resources") or [] if r.get("ResourceType") in (TOPIC, GROUP, CLIENT_METRICS)]
    if any(c.get("ConfigOperation") not in OP_NAMES for r in forwarded for c in r.get("Configs") or []):
        # the controller's switch on a null OpType throws: the forwarded part of the request fails
        # whole (nothing changes), the resources the broker answered itself keep their answers
        return _alter(cluster, req, True, each=(CODE["UNKNOWN_SERVER_ERROR"], None))
    return _alter(cluster, req, incremental=True)
