"""Cluster settings, with released Kafka's defaults (docs/facts.md#defaults-the-model-uses)."""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

from ..schema import registry, releases
from .authorizer import Acl

__all__ = ["Acl", "ClusterConfig", "served_versions", "SHARE_MARKER_ROUTINGS", "KIT_SUGGESTION"]


# KIP-1289's marker hook, as written and as the kit suggests it could be (key -> what and whose).
# "source" says who proposes it: the KIP's page, or the kit (a suggestion, not part of the KIP).
SHARE_MARKER_ROUTINGS: dict[str, dict] = {
    "page": {"source": "KIP-1289", "label": "KIP-1289 as written",
             "what": "the broker receiving the marker for __share_group_state-N resolves only the share "
                     "partitions it leads (the KIP-1289 page, 'Existing RPCs NOT changed': the hook \"broadcasts to all "
                     "SharePartition instances on that broker\")"},
    "forward-to-leader": {"source": "kit", "label": "the kit's suggestion, not KIP-1289",
                          "what": "the broker receiving the marker forwards it to the leader of every share "
                                  "partition whose state lives in __share_group_state-N; each leader resolves "
                                  "its own"},
    "participants": {"source": "kit", "label": "the kit's suggestion, not KIP-1289",
                     "what": "the transaction coordinator tracks every share partition a transaction staged "
                             "acknowledgements on as a participant (registered by the share-partition leader "
                             "at TxnShareAcknowledge, next to __share_group_state-N) and at EndTxn sends "
                             "WriteTxnMarkers for it to the share partition's current leader, which resolves "
                             "its own; the marker on __share_group_state-N resolves nothing"},
}
KIT_SUGGESTION = "kit's suggestion"


@dataclass
class ClusterConfig:
    brokers: int = 1
    # Which Kafka release the brokers play: versions are served per the kit's labels
    # (since <= release, not removed). Default: the newest release (4.4). None = every released and
    # accepted version (trunk-like: also versions no release serves by default).
    release: str | None = releases.NEWEST
    api_versions: dict[str, tuple[int, int]] = field(default_factory=dict)   # per-API override
    transaction_version: int = 2           # transaction.version feature: 1 or 2 (KIP-890 part 2)
    # The authorizer (kipviz.broker.authorizer, StandardAuthorizer's semantics). None: no authorizer
    # is configured (everyone may do everything; CreateAcls answers SECURITY_DISABLED); a list (also
    # []) switches it on with these bindings, which CreateAcls/DeleteAcls then change.
    acls: list[Acl] | None = None
    super_users: tuple[str, ...] = ()       # super.users: principals allowed everything
    allow_everyone_if_no_acl_found: bool = False   # allow.everyone.if.no.acl.found
    offsets_topic_partitions: int = 50     # offsets.topic.num.partitions
    transaction_topic_partitions: int = 50  # transaction.state.log.num.partitions
    share_state_topic_partitions: int = 50  # share.coordinator.state.topic.num.partitions
    offset_metadata_max_bytes: int = 4096
    group_consumer_session_timeout_ms: int = 45000
    group_consumer_heartbeat_interval_ms: int = 5000
    group_classic_min_session_timeout_ms: int = 6000
    group_classic_max_session_timeout_ms: int = 1800000
    group_initial_rebalance_delay_ms: int = 0
    transaction_timeout_ms: int = 60000     # the producer's default transaction.timeout.ms
    transaction_max_timeout_ms: int = 900000
    transaction_abort_timed_out_interval_ms: int = 10000
    transactional_id_expiration_ms: int = 604800000      # 7 days
    transaction_remove_expired_interval_ms: int = 3600000
    default_partitions: int = 1
    auto_create_topics: bool = False
    share_version: int = 1                 # share.version feature at the start; 2 switches on KIP-1289 (proposed)
    # The proposals whose code the model may run in this run (kipviz.broker.features: each is on
    # while its feature level is finalized). Fixed for a run.
    proposed_kips: frozenset[str] = frozenset({"KIP-1289"})
    # KIP-1289 (proposed): which share partitions a WriteTxnMarkers on __share_group_state-N
    # resolves -- one of SHARE_MARKER_ROUTINGS. "page" is the KIP as written; the others are the
    # kit's suggestions for what the KIP would need, never on unless a run asks for them.
    share_marker_routing: str = "page"
    group_share_session_timeout_ms: int = 45000
    group_share_heartbeat_interval_ms: int = 5000
    group_share_delivery_count_limit: int = 5
    group_share_record_lock_duration_ms: int = 30000
    group_share_partition_max_record_locks: int = 200
    # ---- fields for a live cluster (kipviz serve); defaults keep the scenarios' frames as they were ----
    # advertised.listeners per broker id: (host, port). None: "broker-N":9092 for every broker.
    advertised_listeners: dict[int, tuple[str, int]] | None = None
    # advertised.listeners on other listeners (`kipviz serve --users`: SASL_PLAINTEXT): listener name ->
    # broker id -> (host, port). The PLAINTEXT ones are advertised_listeners above.
    named_listeners: dict[str, dict[int, tuple[str, int]]] = field(default_factory=dict)
    # Fetch/ShareFetch long polling (Kafka's DelayedFetch / DelayedShareFetch): with nothing to return
    # the request is held up to MaxWaitMs or until MinBytes arrive. False (the kit's scenarios, which
    # drive time themselves): answered at once, as if MaxWaitMs were 0. `kipviz serve` sets True.
    long_poll: bool = False
    # share.auto.offset.reset (group-coordinator/.../coordinator/group/GroupConfig.java:
    # SHARE_AUTO_OFFSET_RESET_DEFAULT = ShareGroupAutoOffsetResetStrategy.LATEST): where a share
    # group with no state starts; a group's own setting goes in share_group_offset_reset.
    share_auto_offset_reset: str = "latest"
    share_group_offset_reset: dict[str, str] = field(default_factory=dict)
    # log retention (cleanup.policy=delete; kipviz.broker.retention): the broker defaults
    # log.retention.bytes / log.retention.ms / log.segment.bytes (server-common ServerLogConfigs:
    # -1, 7 days, 1 GiB), overridden per topic by retention.bytes / retention.ms / segment.bytes.
    log_retention_bytes: int = -1
    log_retention_ms: int = 604800000
    log_segment_bytes: int = 1073741824
    # log.retention.check.interval.ms: Kafka's is 300000 (5 min). None: the retention task does not
    # run (the kit's scenarios keep every record); `kipviz serve` runs it (Cluster.start_log_retention).
    log_retention_check_interval_ms: int | None = None
    # log.cleaner.backoff.ms (CleanerConfig: 15000): how often the log cleaner looks for a compacted
    # log to clean (kipviz.broker.cleaner). None: it does not run; `kipviz serve` runs it.
    log_cleaner_backoff_ms: int | None = None
    # share.coordinator.state.topic.prune.interval.ms and .cold.partition.snapshot.interval.ms
    # (ShareCoordinatorConfig: both 300000): how often the share coordinator deletes the redundant
    # prefix of each __share_group_state partition, and re-snapshots a share partition whose last
    # ShareSnapshot is older than that (kipviz.broker.shares). None: neither task runs (scenarios
    # keep every record); `kipviz serve` runs both (Cluster.start_share_state_pruning).
    share_state_prune_interval_ms: int | None = None
    share_cold_partition_snapshot_interval_ms: int = 300000
    # producer.id.expiration.ms (1 day): an idle producer's state is forgotten (checked with retention)
    producer_id_expiration_ms: int = 86400000
    # cluster.events bound: None keeps every event (scenarios); N keeps the newest N, handing older
    # ones to events_spill (e.g. a recording) or dropping them.
    events_max: int | None = None
    events_spill: object = None            # callable(list[Event]) or None
    # ... and about this many bytes (kipviz.broker.event_buffer): older events are slimmed (frames
    # and long bytes dropped), spilled to events_spill, or dropped. None: no byte bound.
    events_max_bytes: int | None = None

    # Bounds on the work one request can cause (docs/limits.md). message.max.bytes is Kafka's
    # (LogConfig.DEFAULT_MAX_MESSAGE_BYTES, 1 MiB + 12); the other two are the kit's own limits,
    # which a user may raise: Kafka has no cluster-wide partition cap and no per-Produce record cap.
    message_max_bytes: int = 1048588       # message.max.bytes: a larger produced batch -> MESSAGE_TOO_LARGE
    max_produce_records: int = 100_000     # kit: records (+ headers) one Produce appends -> MESSAGE_TOO_LARGE
    max_cluster_partitions: int = 20_000   # kit: partitions the model holds -> CreateTopics POLICY_VIOLATION

    def share_offset_reset(self, group_id: str) -> str:
        return self.share_group_offset_reset.get(group_id, self.share_auto_offset_reset)

    def advertised(self, broker: int, listener: str = "PLAINTEXT") -> tuple[str, int]:
        """The host and port clients on `listener` are told to reach `broker` at (advertised.listeners:
        a client is told the endpoints of the listener it connected to, as KafkaApis answers by
        request.context.listenerName)."""
        named = self.named_listeners.get(listener) if listener != "PLAINTEXT" else None
        if named and broker in named:
            return named[broker]
        if self.advertised_listeners and broker in self.advertised_listeners:
            return self.advertised_listeners[broker]
        return f"broker-{broker}", 9092

    def enabled(self, kip: str) -> bool:
        """Whether the model may run proposal `kip`'s code in this run (fixed for the run; whether it
        is on now also needs its feature level: kipviz.broker.features: Features.on)."""
        return kip in self.proposed_kips

    def bootstrap_levels(self) -> dict[str, int]:
        """The finalized feature levels a cluster starts with (its bootstrap metadata)."""
        return {"transaction.version": self.transaction_version, "share.version": self.share_version}

    def proposals(self) -> frozenset[str]:
        """APIs whose *proposed* versions are served at the starting feature levels (a running
        cluster's: Cluster.features.proposed_apis())."""
        from .features import proposed_apis
        return proposed_apis(self, self.bootstrap_levels())


def served_versions(api: str, config: ClusterConfig, features=None) -> tuple[int, int] | None:
    """(min, max) of an API's request versions the brokers accept, or None if not served; with a
    cluster's `features` (kipviz.broker.features.Features) at its finalized levels now, else at the
    configuration's starting levels."""
    if api in config.api_versions:
        return config.api_versions[api]
    return _served(api, config.release, config.proposals() if features is None else features.proposed_apis())


@lru_cache(maxsize=1024)
def _served(api: str, release: str | None, proposals: frozenset) -> tuple[int, int] | None:
    # the rule lives with the releases (kipviz.schema.releases.served): one rule for the broker,
    # the CLI's `list --release` and the release matrix
    return releases.served(registry.get(api + "Request"), release, proposals)
