"""Cluster settings, with released Kafka's defaults (../shared/kafka/FACTS.md, 'Other defaults')."""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

from ..schema import registry
from ..schema.releases import NEWEST


@dataclass(frozen=True, slots=True)
class Acl:
    """Allow (or deny) `principal` the `operation` on a resource; "*" matches any name."""
    principal: str                 # e.g. "User:alice", or "*"
    resource_type: str             # TOPIC, GROUP, TRANSACTIONAL_ID, CLUSTER
    resource_name: str             # a name, or "*"
    operation: str                 # READ, WRITE, DESCRIBE, CREATE, DELETE, ALTER, CLUSTER_ACTION, ALL
    allow: bool = True


@dataclass
class ClusterConfig:
    brokers: int = 1
    # Which Kafka release the brokers play: versions are served per the kit's labels
    # (since <= release, not removed). Default: the newest release (schema.releases.NEWEST).
    # None = released and accepted versions (trunk), for scenarios that show an accepted KIP.
    release: str | None = NEWEST
    api_versions: dict[str, tuple[int, int]] = field(default_factory=dict)   # per-API override
    transaction_version: int = 2           # transaction.version feature: 1 or 2 (KIP-890 part 2)
    acls: list[Acl] | None = None          # None: everyone may do everything
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
    share_version: int = 1                 # share.version feature; 2 switches on KIP-1289 (proposed)
    group_share_session_timeout_ms: int = 45000
    group_share_heartbeat_interval_ms: int = 5000
    group_share_delivery_count_limit: int = 5
    group_share_record_lock_duration_ms: int = 30000
    group_share_partition_max_record_locks: int = 200

    def proposals(self) -> frozenset[str]:
        """APIs whose *proposed* versions are served: KIP-1289's RPC needs share.version >= 2."""
        return frozenset({"TxnShareAcknowledge"}) if self.share_version >= 2 else frozenset()


def _version_key(text: str) -> tuple:
    return tuple(int(p) for p in text.lstrip("≤").split(".") if p.isdigit())


def served_versions(api: str, config: ClusterConfig) -> tuple[int, int] | None:
    """(min, max) of an API's request versions the brokers accept, or None if not served."""
    if api in config.api_versions:
        return config.api_versions[api]
    return _served(api, config.release, config.proposals())


@lru_cache(maxsize=1024)
def _served(api: str, release: str | None, proposals: frozenset) -> tuple[int, int] | None:
    spec = registry.get(api + "Request")
    ok = []
    for v in spec.versions:
        st = spec.status(v)
        if st is None or (st.status == "proposed" and api not in proposals):
            continue
        if st.status == "proposed":
            ok.append(v)
            continue
        if release is None:
            if st.removed is None:
                ok.append(v)
            continue
        rel = _version_key(release)
        if st.status != "released" or not st.since or _version_key(st.since) > rel:
            continue
        if st.removed and _version_key(st.removed) <= rel:
            continue
        ok.append(v)
    return (min(ok), max(ok)) if ok else None
