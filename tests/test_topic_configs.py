"""Topic configs as Kafka 4.4's LogConfig validates and keeps them (kipviz.broker.log_config), through
real request frames (Cluster.call encodes each request and decodes the answer): CreateTopics refuses
a bad setting with INVALID_CONFIG and Kafka's message and creates nothing; a good one is kept and
DescribeConfigs shows it as a dynamic topic config with its synonyms; AlterConfigs and
IncrementalAlterConfigs change it; the settings act on retention and Produce."""
from __future__ import annotations

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kipviz.broker import Cluster
from kipviz.broker import log_config as lc
from kipviz.records import read_batches, write_batch
from kipviz.schema.error_codes import CODE

TOPIC, BROKER = 2, 4


def create(c, name, configs=(), *, validate_only=False, partitions=1, version=7):
    body = {"Topics": [{"Name": name, "NumPartitions": partitions, "ReplicationFactor": 1, "Assignments": [],
                        "Configs": [{"Name": k, "Value": v} for k, v in configs]}],
            "timeoutMs": 1000, "validateOnly": validate_only}
    return c.call("CreateTopics", version, body)["Topics"][0]


def describe(c, rtype, name, keys=None, *, synonyms=True, docs=False, version=4, broker=0):
    body = {"Resources": [{"ResourceType": rtype, "ResourceName": name, "ConfigurationKeys": keys}],
            "IncludeSynonyms": synonyms, "IncludeDocumentation": docs}
    res = c.call("DescribeConfigs", version, body, broker=broker)["Results"][0]
    return res, {e["Name"]: e for e in res["Configs"]}


def incremental(c, rtype, name, ops, *, validate_only=False, broker=0):
    body = {"Resources": [{"ResourceType": rtype, "ResourceName": name,
                           "Configs": [{"Name": k, "ConfigOperation": op, "Value": v} for k, op, v in ops]}],
            "ValidateOnly": validate_only}
    return c.call("IncrementalAlterConfigs", 1, body, broker=broker)["Responses"][0]


BAD = [
    ([("no.such.config", "1")], "Unknown topic config name: no.such.config"),
    ([("retention.ms", "abc")], "Invalid value abc for configuration retention.ms: Not a number of type LONG"),
    ([("cleanup.policy", "bogus")],
     "Invalid value bogus for configuration cleanup.policy: String must be one of: compact, delete"),
    ([("cleanup.policy", "compact,delete,compact")], "Configuration 'cleanup.policy' values must not be duplicated."),
    ([("segment.bytes", "1000")], "Invalid value 1000 for configuration segment.bytes: Value must be at least 1048576"),
    ([("min.cleanable.dirty.ratio", "1.5")],
     "Invalid value 1.5 for configuration min.cleanable.dirty.ratio: Value must be no more than 1"),
    ([("compression.type", "GZIP")], "Invalid value GZIP for configuration compression.type: String must be one of: "
                                     "uncompressed, zstd, lz4, snappy, gzip, producer"),
    ([("max.message.bytes", "9999999999")],
     "Invalid value 9999999999 for configuration max.message.bytes: Not a number of type INT"),
    ([("unclean.leader.election.enable", "yes")], "Invalid value yes for configuration "
                                                  "unclean.leader.election.enable: Expected value to be either true or false"),
    ([("retention.ms", None)], "Null value not supported for topic configs: retention.ms"),
    ([("min.compaction.lag.ms", "10"), ("max.compaction.lag.ms", "5")],
     "conflict topic config setting min.compaction.lag.ms (10) > max.compaction.lag.ms (5)"),
    ([("message.downconversion.enable", "true")], "Unknown topic config name: message.downconversion.enable"),
    ([("remote.storage.enable", "true")], "Tiered Storage functionality is disabled in the broker. Topic cannot be "
                                          "configured with remote log storage."),
]


@pytest.mark.parametrize("configs,message", BAD, ids=[b[1][:40] for b in BAD])
def test_create_topics_refuses_a_bad_config_with_kafkas_message_and_creates_nothing(configs, message):
    c = Cluster()
    for validate_only in (True, False):
        res = create(c, "t", configs, validate_only=validate_only)
        assert (res["ErrorCode"], res["ErrorMessage"]) == (CODE["INVALID_CONFIG"], message)
    assert c.topics.get("t") is None and c.internal_errors == []


def test_config_errors_come_after_the_name_checks_and_before_the_partition_checks():
    # ReplicationControlManager.createTopics: names and existence, then configs, then createTopic
    c = Cluster()
    assert create(c, "bad name!", [("no.such", "1")])["ErrorCode"] == CODE["INVALID_TOPIC_EXCEPTION"]
    res = c.call("CreateTopics", 7, {"Topics": [{"Name": "t", "NumPartitions": 0, "ReplicationFactor": 1,
                                                 "Assignments": [], "Configs": [{"Name": "no.such", "Value": "1"}]}],
                                     "timeoutMs": 1000, "validateOnly": False})["Topics"][0]
    assert res["ErrorCode"] == CODE["INVALID_CONFIG"]


def test_a_valid_config_is_kept_and_described_as_a_dynamic_topic_config_with_synonyms():
    c = Cluster()
    res = create(c, "compacted", [("cleanup.policy", "compact"), ("retention.ms", " 1000 ")])
    assert res["ErrorCode"] == 0
    # CreateTopics v5+ answers every setting in force, sorted by name (computeEffectiveTopicConfigs)
    created = {e["Name"]: e for e in res["Configs"]}
    assert [e["Name"] for e in res["Configs"]] == sorted(created)
    assert (created["cleanup.policy"]["Value"], created["cleanup.policy"]["ConfigSource"]) == ("compact", 1)
    assert (created["segment.bytes"]["Value"], created["segment.bytes"]["ConfigSource"]) == ("1073741824", 5)
    _, got = describe(c, TOPIC, "compacted", docs=True)
    policy = got["cleanup.policy"]
    assert (policy["Value"], policy["ConfigSource"], policy["ReadOnly"], policy["ConfigType"]) == ("compact", 1, False, 7)
    assert policy["Synonyms"] == [{"Name": "cleanup.policy", "Value": "compact", "Source": 1},
                                  {"Name": "log.cleanup.policy", "Value": "delete", "Source": 5}]
    assert policy["Documentation"] == lc.TOPIC_CONFIGS["cleanup.policy"].doc
    assert got["retention.ms"]["Value"] == "1000"          # parsed: the stored " 1000 " is described trimmed
    # log.retention.ms has no default (only log.retention.hours): ConfigHelper drops synonyms before it
    assert got["retention.ms"]["Synonyms"][1:] == []
    assert got["segment.ms"]["ConfigSource"] == 5 and got["segment.ms"]["Synonyms"] == []
    assert got["max.message.bytes"]["Synonyms"] == [{"Name": "message.max.bytes", "Value": "1048588", "Source": 5}]
    _, plain = describe(c, TOPIC, "compacted", ["cleanup.policy"], synonyms=False)
    assert list(plain) == ["cleanup.policy"] and plain["cleanup.policy"]["Synonyms"] == []
    assert plain["cleanup.policy"]["Documentation"] is None
    assert "internal.segment.bytes" not in got


def test_describe_of_an_unknown_topic_and_of_other_brokers():
    c = Cluster(brokers=2)
    res, _ = describe(c, TOPIC, "nope")
    assert (res["ErrorCode"], res["ErrorMessage"]) == (CODE["UNKNOWN_TOPIC_OR_PARTITION"], None)
    res, _ = describe(c, BROKER, "1", broker=0)
    assert res["ErrorCode"] == CODE["INVALID_REQUEST"]
    assert res["ErrorMessage"] == "Unexpected broker id, expected 0 or empty string, but received 1"


def test_incremental_alter_configs_set_delete_append_and_subtract():
    c = Cluster()
    create(c, "t")
    assert incremental(c, TOPIC, "t", [("cleanup.policy", 2, "compact")])["ErrorCode"] == 0     # APPEND to the default
    assert c.topics.get("t").configs == {"cleanup.policy": "delete,compact"}
    assert incremental(c, TOPIC, "t", [("cleanup.policy", 3, "delete"), ("retention.ms", 0, "5000")])["ErrorCode"] == 0
    assert c.topics.get("t").configs == {"cleanup.policy": "compact", "retention.ms": "5000"}
    assert incremental(c, TOPIC, "t", [("retention.ms", 1, None)])["ErrorCode"] == 0               # DELETE
    assert c.topics.get("t").configs == {"cleanup.policy": "compact"}
    bad = incremental(c, TOPIC, "t", [("retention.ms", 2, "1")])
    assert (bad["ErrorCode"], bad["ErrorMessage"]) == (CODE["INVALID_CONFIG"],
                                                       "Can't APPEND to key retention.ms because its type is not LIST.")
    bad = incremental(c, TOPIC, "t", [("retention.ms", 0, "-5")])
    assert bad["ErrorMessage"] == "Invalid value -5 for configuration retention.ms: Value must be at least -1"
    assert incremental(c, TOPIC, "t", [("retention.ms", 0, "7")], validate_only=True)["ErrorCode"] == 0
    assert c.topics.get("t").configs == {"cleanup.policy": "compact"}      # nothing changed
    # validation comes before the existence check (ConfigurationControlManager.validateAlterConfig)
    assert incremental(c, TOPIC, "gone", [("no.such", 0, "1")])["ErrorCode"] == CODE["INVALID_CONFIG"]
    gone = incremental(c, TOPIC, "gone", [("retention.ms", 0, "1")])
    assert (gone["ErrorCode"], gone["ErrorMessage"]) == (CODE["UNKNOWN_TOPIC_OR_PARTITION"], "The topic 'gone' does not exist.")
    dup = incremental(c, TOPIC, "t", [("retention.ms", 0, "1"), ("retention.ms", 0, "2")])
    assert (dup["ErrorCode"], dup["ErrorMessage"]) == (CODE["INVALID_REQUEST"], "Error due to duplicate config keys")


def test_legacy_alter_configs_replaces_every_dynamic_setting():
    c = Cluster()
    create(c, "t", [("retention.ms", "1000"), ("cleanup.policy", "compact")])
    body = {"Resources": [{"ResourceType": TOPIC, "ResourceName": "t",
                           "Configs": [{"Name": "segment.ms", "Value": "60000"}]}], "ValidateOnly": False}
    assert c.call("AlterConfigs", 2, body)["Responses"][0]["ErrorCode"] == 0
    assert c.topics.get("t").configs == {"segment.ms": "60000"}


def test_broker_configs_dynamic_defaults_per_broker_values_and_read_only_settings():
    c = Cluster(brokers=2, log_retention_bytes=5000)
    create(c, "t")
    assert incremental(c, BROKER, "", [("log.retention.ms", 0, "2000")])["ErrorCode"] == 0
    assert incremental(c, BROKER, "1", [("log.retention.ms", 0, "3000")], broker=1)["ErrorCode"] == 0
    fixed = incremental(c, BROKER, "0", [("num.partitions", 0, "3")])
    assert (fixed["ErrorCode"], fixed["ErrorMessage"]) == (CODE["INVALID_REQUEST"],
                                                           "Cannot update these configs dynamically: Set(num.partitions)")
    other = incremental(c, BROKER, "1", [("log.retention.ms", 0, "1")], broker=0)
    assert other["ErrorMessage"] == "Unexpected broker id, expected 0, but received 1"
    # the cluster-wide resource lists its dynamic defaults only (ConfigHelper)
    res, defaults = describe(c, BROKER, "")
    assert list(defaults) == ["log.retention.ms"] and defaults["log.retention.ms"]["ConfigSource"] == 3
    _, b1 = describe(c, BROKER, "1", ["log.retention.ms", "log.retention.bytes", "node.id", "num.partitions"], broker=1)
    assert (b1["log.retention.ms"]["Value"], b1["log.retention.ms"]["ConfigSource"]) == ("3000", 2)
    assert [s["Source"] for s in b1["log.retention.ms"]["Synonyms"]] == [2, 3, 5]
    assert (b1["log.retention.bytes"]["Value"], b1["log.retention.bytes"]["ConfigSource"]) == ("5000", 4)
    assert b1["node.id"]["ReadOnly"] and not b1["log.retention.ms"]["ReadOnly"]
    assert b1["num.partitions"]["ConfigSource"] == 5
    # a topic without its own retention.ms takes the answering broker's (DescribeConfigs reads its own)
    _, t0 = describe(c, TOPIC, "t", ["retention.ms"], broker=0)
    _, t1 = describe(c, TOPIC, "t", ["retention.ms"], broker=1)
    assert (t0["retention.ms"]["Value"], t0["retention.ms"]["ConfigSource"]) == ("2000", 3)
    assert (t1["retention.ms"]["Value"], t1["retention.ms"]["ConfigSource"]) == ("3000", 2)


def test_a_broker_entry_is_read_only_exactly_when_its_own_name_is_not_dynamic():
    """ConfigHelper.createBrokerConfigEntry: readOnly = !DynamicBrokerConfig.AllDynamicConfigs.contains(name),
    for every broker setting the kit describes; alterable exactly when not read-only."""
    c = Cluster(brokers=1)
    _, entries = describe(c, BROKER, "0")
    assert set(entries) == set(lc.BROKER_CONFIGS)
    for name, e in entries.items():
        assert e["ReadOnly"] is (name not in lc.ALL_DYNAMIC_CONFIGS), name
    # DynamicLogConfig: a topic setting's first broker synonym only (log.retention.hours is not)
    assert not entries["log.retention.ms"]["ReadOnly"] and entries["log.retention.hours"]["ReadOnly"]
    # DynamicProducerStateManagerConfig: dynamic, and the model's producer expiry follows the altered value
    assert not entries["producer.id.expiration.ms"]["ReadOnly"]
    from kipviz.broker.handlers.data import expire_producers
    from kipviz.broker.handlers.metadata import model_state
    create(c, "t")
    model_state(c)["producers"][(c.topics.get("t").topic_id, 0, 7)] = {"t": -5000, "batches": []}   # idle 5 s
    assert expire_producers(c) == 0                                       # the default: a day
    assert incremental(c, BROKER, "0", [("producer.id.expiration.ms", 0, "1000")])["ErrorCode"] == 0
    assert expire_producers(c) == 1
    # Kafka 4.0 took advertised.listeners out of DynamicListenerConfig.ReconfigurableConfigs (KAFKA-18405,
    # apache/kafka#18508): read-only on a 4.x broker, and refused by AlterConfigs
    assert entries["advertised.listeners"]["ReadOnly"] and entries["broker.id"]["ReadOnly"]
    fixed = incremental(c, BROKER, "0", [("advertised.listeners", 0, "PLAINTEXT://h:1")])
    assert fixed["ErrorMessage"] == "Cannot update these configs dynamically: Set(advertised.listeners)"


# ---- the settings act ------------------------------------------------------------------------------
def produce(c, topic, values, *, acks=-1, compression="none", version=11):
    batch = write_batch([(b"k", v) for v in values], compression=compression, base_timestamp=123)
    body = {"TransactionalId": None, "Acks": acks, "TimeoutMs": 1000,
            "TopicData": [{"Name": topic, "PartitionData": [{"Index": 0, "Records": batch}]}]}
    return c.call("Produce", version, body)["Responses"][0]["PartitionResponses"][0]


def test_max_message_bytes_per_topic():
    c = Cluster()
    create(c, "small", [("max.message.bytes", "200")])
    create(c, "big")
    payload = [os.urandom(300)]
    assert produce(c, "small", payload)["ErrorCode"] == CODE["MESSAGE_TOO_LARGE"]
    assert produce(c, "big", payload)["ErrorCode"] == 0
    incremental(c, TOPIC, "small", [("max.message.bytes", 1, None)])     # back to message.max.bytes
    assert produce(c, "small", payload)["ErrorCode"] == 0


def test_log_append_time_stamps_the_broker_time_and_a_topic_codec_recompresses():
    c = Cluster(start_ms=5_000)
    create(c, "stamped", [("message.timestamp.type", "LogAppendTime"), ("compression.type", "gzip")])
    r = produce(c, "stamped", [b"x" * 50], compression="lz4")
    assert (r["ErrorCode"], r["LogAppendTimeMs"]) == (0, 5_000)
    stored = read_batches(c.topics.partition("stamped", 0).batches[0])[0]
    assert (stored["compression"], stored["timestamp_type"], stored["max_timestamp"]) == ("gzip", "LogAppendTime", 5_000)
    create(c, "plain")
    assert produce(c, "plain", [b"x"])["LogAppendTimeMs"] == -1


def test_min_insync_replicas_refuses_acks_all_below_it():
    c = Cluster(brokers=3)
    body = {"Topics": [{"Name": "t", "NumPartitions": 1, "ReplicationFactor": 2, "Assignments": [],
                        "Configs": [{"Name": "min.insync.replicas", "Value": "2"}]}], "timeoutMs": 1000,
            "validateOnly": False}
    assert c.call("CreateTopics", 7, body)["Topics"][0]["ErrorCode"] == 0
    assert produce(c, "t", [b"a"])["ErrorCode"] == 0
    c.down.add(1)                                    # the follower's broker is gone: ISR {0}
    r = produce(c, "t", [b"b"])
    assert r["ErrorCode"] == CODE["NOT_ENOUGH_REPLICAS"] and "min.isr requirement of 2" in r["ErrorMessage"]
    assert produce(c, "t", [b"c"], acks=1)["ErrorCode"] == 0


def test_retention_follows_the_topic_setting_and_leaves_compacted_topics_alone():
    c = Cluster(log_segment_bytes=200)
    create(c, "deleted", [("retention.bytes", "0")])
    create(c, "compacted", [("retention.bytes", "0"), ("cleanup.policy", "compact")])
    for _ in range(4):
        produce(c, "deleted", [os.urandom(100)])
        produce(c, "compacted", [os.urandom(100)])
    from kipviz.broker import retention
    retention.enforce(c)
    assert c.topics.partition("deleted", 0).log_start_offset > 0
    assert c.topics.partition("compacted", 0).log_start_offset == 0


# ---- ConfigDef's number parsing, against Java's Long.parseLong / Integer.parseInt ------------------
@settings(max_examples=200, deadline=None)
@given(st.one_of(st.integers(-2**70, 2**70).map(str), st.text(alphabet="+-0123456789 _x.e", max_size=8)))
def test_numbers_parse_as_java_parses_them(text):
    key = lc.TOPIC_CONFIGS["retention.bytes"]          # LONG, no validator
    t = text.strip()
    java_ok = t != "" and (t[0] in "+-" and t[1:].isdigit() and t[1:].isascii() or t.isdigit() and t.isascii()) \
        and -2**63 <= int(t) < 2**63
    if java_ok:
        assert lc.parse(key, text) == int(t)
    else:
        with pytest.raises(lc.ConfigError, match="Not a number of type LONG"):
            lc.parse(key, text)
