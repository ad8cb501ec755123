"""A sans-IO model of Kafka's consumer, talking to a kipviz Cluster in real frames.

    c = Consumer(cluster, "rpw-group", client_id="app", protocol="consumer")   # KIP-848
    c.subscribe(["in"])
    records = c.poll()                 # join/heartbeat as needed, positions, one Fetch round
    c.commit()                         # OffsetCommit of the current positions
    producer.send_offsets_to_transaction({(r.topic, r.partition): r.offset + 1 ...}, c.group_metadata())
    c.close()                          # leave the group

Every request is encoded with kipviz.codec and answered by `cluster.handle(frame)`; decisions are
typed ClientDid events (schema/events.py: VersionChosen, Joined, MemberEpochBumped,
AssignmentChanged, PartitionsRevoked, Fenced, PositionSet, Retried, ...). poll() never moves the
virtual clock by itself: heartbeats go out when `heartbeat.interval.ms` has passed on the cluster's
clock (the scenario moves it); only retry backoff advances it, like the producer model.

The Consumer is the facade Kafka's consumer is, over parts split as Kafka splits them:

* versions, the wire, FindCoordinator and metadata: ClientBase (clients/base.py), as
  kipviz.clients.Producer: ApiVersions first, then min(client max, broker max) per API (the client
  max is the kit's newest non-proposed version).
* membership, one strategy per group protocol (`.membership`): protocol="consumer" (KIP-848,
  clients/membership_consumer.py, ConsumerMembershipManager.java) or protocol="classic"
  (JoinGroup / SyncGroup / Heartbeat, clients/membership_classic.py, ConsumerCoordinator.java).
* positions, committed offsets and commits (`.offsets`, clients/offsets.py:
  OffsetsRequestManager.java, CommitRequestManager.java).
* Fetch and the aborted-transaction filter of read_committed (`.fetcher`, clients/fetcher.py:
  Fetcher.java, FetchCollector.java, CompletedFetch.java).

The subscription, the assigned partitions and their positions (Kafka's SubscriptionState) and the
member's id, epoch or generation stay here, where every part reads them."""
from __future__ import annotations

import itertools
import weakref

from ..records.consumer_protocol import (
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
    range_assign,
)
from ..schema import events as ev
from ..schema.coordinators import GROUP_KEY
from ..schema.error_codes import NAME
from .base import ClientBase, Retry
from .consumer_errors import (
    CommitFailedError,
    ConsumerError,
    RebalanceInProgressError,
)
from .fetcher import ISOLATION, ConsumerRecord, Fetcher
from .membership_classic import ClassicMembership
from .membership_consumer import ConsumerGroupMembership
from .offsets import RESET, Offsets

_COUNTERS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()     # cluster -> counter of default ids


def _default_client_id(cluster) -> str:
    counter = _COUNTERS.setdefault(cluster, itertools.count(1))
    return f"consumer-{next(counter)}"


class Consumer(ClientBase):
    """The consumer's public API over its membership, offsets and fetcher (see the module)."""

    SOFTWARE_NAME = "kipviz-consumer"

    def __init__(self, cluster, group_id: str | None, *, client_id: str | None = None, protocol: str = "consumer",
                 isolation: str = "read_committed", group_instance_id: str | None = None,
                 bootstrap_broker: int = 0, principal: str = "User:ANONYMOUS", auto_offset_reset: str = "earliest",
                 max_poll_records: int = 500, session_timeout_ms: int = 45000, heartbeat_interval_ms: int = 3000,
                 rebalance_timeout_ms: int = 300000, server_assignor: str | None = None, retries: int = 20,
                 retry_backoff_ms: int = 100, client_versions: dict[str, int] | None = None):
        if protocol not in ("consumer", "classic"):
            raise ValueError("protocol is 'consumer' (KIP-848) or 'classic'")
        if isolation not in ISOLATION:
            raise ValueError("isolation is 'read_committed' or 'read_uncommitted'")
        if auto_offset_reset not in (*RESET, "none"):
            raise ValueError("auto_offset_reset is 'earliest', 'latest' or 'none'")
        super().__init__(cluster, client_id or _default_client_id(cluster), bootstrap_broker=bootstrap_broker,
                         principal=principal, retries=retries, retry_backoff_ms=retry_backoff_ms,
                         client_versions=client_versions)
        self.group_id = group_id
        self.protocol = protocol
        self.isolation = ISOLATION[isolation]
        self.group_instance_id = group_instance_id
        self.auto_offset_reset = auto_offset_reset
        self.max_poll_records = max_poll_records
        self.session_timeout_ms = session_timeout_ms
        self.heartbeat_interval_ms = heartbeat_interval_ms      # classic; KIP-848 takes the coordinator's
        self.rebalance_timeout_ms = rebalance_timeout_ms        # max.poll.interval.ms
        self.server_assignor = server_assignor
        # the member
        self.state = "UNSUBSCRIBED"      # UNSUBSCRIBED, JOINING, SYNCING, STABLE, ASSIGNED (manual), CLOSED
        self.member_id = ""
        self.member_epoch = 0            # KIP-848
        self.generation = -1             # classic
        self._last_heartbeat: int | None = None
        # the subscription state
        self._subscription: list[str] = []
        self._subscription_changed = False
        self._manual = False
        self._assigned: set[tuple[str, int]] = set()
        self._positions: dict[tuple[str, int], int] = {}
        # the parts
        self.membership = (ConsumerGroupMembership if protocol == "consumer" else ClassicMembership)(self)
        self.offsets = Offsets(self)
        self.fetcher = Fetcher(self)

    # ---- ClientBase hooks and events --------------------------------------------------------------
    def _unsupported(self, api: str, message: str) -> ConsumerError:
        return self.fail(ConsumerError("UNSUPPORTED_VERSION", message, api=api))

    def _api_versions_failed(self, code: int) -> ConsumerError:
        return self.fail(ConsumerError(code, api="ApiVersions"))

    def _retries_exhausted(self, code: int, message: str, api: str) -> ConsumerError:
        return self.fail(ConsumerError(code, message, api=api))

    def _coordinator_error(self, code: int, api: str) -> ConsumerError:
        return self.fail(ConsumerError(code, api=api))

    def fail(self, err: ConsumerError) -> ConsumerError:
        """Record a ClientError for `err` and return it for raising."""
        self.did(ev.ClientError, error=err.error, code=err.code, api=err.api, error_class=type(err).__name__)
        return err

    # ---- versions ----------------------------------------------------------------------------------
    def version(self, api: str, floor: int | None = None) -> int:
        """min(client max, broker max); ConsumerError(UNSUPPORTED_VERSION) if none fits (or the
        best is below `floor`, e.g. OffsetCommit v9 for a KIP-848 member)."""
        return self.choose_version(api, floor=floor)

    # ---- coordinator and metadata ------------------------------------------------------------------
    def group_coordinator(self) -> int:
        """The group's coordinator (FindCoordinator once, again after a coordinator error)."""
        if self._coordinator is None:
            self._coordinator = self._find_coordinator(GROUP_KEY, self.group_id)
        return self._coordinator

    def coordinator_call(self, api: str, version: int, body: dict) -> dict:
        """A request to the group coordinator; its decoded answer."""
        return self.call(api, version, body, self.group_coordinator())

    def name_of(self, topic_id) -> str | None:
        """The topic name of a topic id (metadata of the subscription fetched if it is new)."""
        if topic_id not in self._names and self._subscription:
            self._fetch_metadata(sorted(self._subscription))
        return self._names.get(topic_id)

    def kip848_membership(self) -> ConsumerGroupMembership:
        """The KIP-848 membership, for an answer only it acts on (STALE_MEMBER_EPOCH: heartbeat;
        UNKNOWN_MEMBER_ID from OffsetFetch: fenced); a classic member gets one with nothing sent."""
        m = self.membership
        return m if isinstance(m, ConsumerGroupMembership) else ConsumerGroupMembership(self)

    # ---- subscription and assignment ---------------------------------------------------------------
    def subscribe(self, topics) -> None:
        """Subscribe to topics by name; the group assigns partitions at the next poll()."""
        if self.group_id is None:
            raise ConsumerError("INVALID_GROUP_ID", "subscribe() needs a group id; use assign()")
        self._require_open()
        topics = sorted(set(topics))
        if topics != self._subscription:
            self._subscription = topics
            self._subscription_changed = True
            self.membership.subscription_changed()
        self._manual = False
        if self.state == "UNSUBSCRIBED":
            self.set_state("JOINING", "subscribe")
        self.did(ev.Subscribed, topics=tuple(topics))

    def assign(self, partitions) -> None:
        """Manual assignment (no group membership); positions come from the group's committed
        offsets if there is a group id, else from auto_offset_reset."""
        self._require_open()
        self._manual = True
        self._assigned = {tuple(tp) for tp in partitions}
        self._positions = {tp: p for tp, p in self._positions.items() if tp in self._assigned}
        self.set_state("ASSIGNED", "assign")
        self.did(ev.Assigned, partitions=tuple(sorted(self._assigned)))

    def assignment(self) -> set[tuple[str, int]]:
        """The assigned (topic, partition) pairs."""
        return set(self._assigned)

    def position(self, tp) -> int | None:
        """The next offset poll() fetches from `tp` (None: not known yet)."""
        return self._positions.get(tuple(tp))

    def positions(self) -> dict[tuple[str, int], int]:
        """Every known position."""
        return dict(self._positions)

    def seek(self, tp, offset: int) -> None:
        """Fetch `tp` from `offset` next."""
        tp = tuple(tp)
        if tp not in self._assigned:
            raise ConsumerError("ILLEGAL_STATE", f"{tp} is not assigned")
        self._positions[tp] = offset
        self.did(ev.Seeked, topic=tp[0], partition=tp[1], offset=offset)

    def seek_to_committed(self) -> dict[tuple[str, int], int | None]:
        """Rewind every assigned partition to its committed offset (what an exactly-once loop does
        after aborting a transaction: the records are read and processed again)."""
        for tp in list(self._positions):
            del self._positions[tp]
        self.did(ev.Rewound, partitions=tuple(sorted(self._assigned)))
        self.offsets.init_positions()
        return {tp: self._positions.get(tp) for tp in sorted(self._assigned)}

    @property
    def held_requests(self) -> list[str]:
        """APIs of the requests the coordinator is holding for this member (classic JoinGroup/SyncGroup)."""
        return self.membership.held_requests

    def set_assignment(self, new: set[tuple[str, int]], why: str) -> None:
        """The assigned partitions are now `new`: the revoked ones lose their positions."""
        new = set(new)
        revoked = sorted(self._assigned - new)
        added = sorted(new - self._assigned)
        if revoked:
            self.did(ev.PartitionsRevoked, partitions=tuple(revoked), reason=why)
        for tp in revoked:
            self._positions.pop(tp, None)
        self._assigned = new
        if added or revoked:
            self.did(ev.AssignmentChanged, partitions=tuple(sorted(new)), added=tuple(added), revoked=tuple(revoked),
                      reason=why)

    def lose_partitions(self, why: str) -> None:
        """Drop every partition and position without committing (fenced, reset, closed)."""
        if self._assigned:
            self.did(ev.PartitionsLost, partitions=tuple(sorted(self._assigned)), reason=why)
        self._assigned = set()
        self._positions = {}

    def _require_open(self) -> None:
        if self.state == "CLOSED":
            raise ConsumerError("ILLEGAL_STATE", "the consumer is closed")

    # ---- group metadata (for the transactional producer) ---------------------------------------------
    def group_metadata(self) -> dict:
        """ConsumerGroupMetadata: what producer.send_offsets_to_transaction needs (KIP-447): the
        group id, the generation (classic) or member epoch (KIP-848), member id, instance id."""
        generation = self.member_epoch if self.protocol == "consumer" else self.generation
        if not self.member_id or self._manual:
            generation = -1
        out = {"group_id": self.group_id, "generation_id": generation, "member_id": self.member_id if not
               self._manual else "", "group_instance_id": self.group_instance_id}
        if self.protocol == "consumer":
            out["member_epoch"] = generation
        return out

    # ---- poll ----------------------------------------------------------------------------------------
    def poll(self, max_records: int | None = None) -> list[ConsumerRecord]:
        """Keep the membership alive (join, acknowledge, heartbeat when due), find the positions of
        new partitions, then one Fetch round. Returns the records (possibly none)."""
        self._require_open()
        if self.state == "UNSUBSCRIBED":
            raise ConsumerError("ILLEGAL_STATE", "subscribe() or assign() first")
        self.heartbeat()
        if not self._assigned:
            return []
        self.offsets.init_positions()
        return self.fetcher.fetch(max_records or self.max_poll_records)

    def heartbeat(self) -> None:
        """What the consumer's background thread does between polls: join, acknowledge and heartbeat
        when due (classic: also collect held JoinGroup/SyncGroup answers), without fetching."""
        self._require_open()
        if self._manual or self.state == "UNSUBSCRIBED":
            return
        self.membership.maintain()

    # ---- offsets -------------------------------------------------------------------------------------
    def committed(self, partitions=None, *, require_stable: bool | None = None) -> dict:
        """The group's committed offsets: {(topic, partition): offset or None}. With require_stable
        (default: when read_committed, like Java) a partition whose offsets a transaction still holds
        raises ConsumerError("UNSTABLE_OFFSET_COMMIT") naming the partitions."""
        return self.offsets.committed(partitions, require_stable=require_stable)

    def commit(self, offsets: dict | None = None) -> dict[tuple[str, int], int]:
        """OffsetCommit (synchronous): {(topic, partition): offset or (offset, metadata)}; by default
        the current positions of the assigned partitions. Returns what was committed."""
        self._require_open()
        if self.group_id is None:
            raise ConsumerError("INVALID_GROUP_ID", "no group id to commit to")
        return self.offsets.commit(offsets)

    # ---- close ---------------------------------------------------------------------------------------------
    def close(self) -> None:
        """Leave the group (KIP-848: heartbeat with epoch -1, or -2 for a static member; classic:
        LeaveGroup) and drop every partition. Nothing is committed here."""
        if self.state == "CLOSED":
            return
        try:
            if not self._manual and self.member_id and self.group_id is not None:
                self.membership.leave()
        except (ConsumerError, Retry) as e:
            self.did(ev.LeaveFailed, error=getattr(e, "error", None) or NAME.get(getattr(e, "code", -1)))
        self.lose_partitions("close")
        self.membership.closed()
        self.set_state("CLOSED", "close")


__all__ = ["Consumer", "ConsumerRecord", "ConsumerError", "CommitFailedError", "RebalanceInProgressError",
           "encode_subscription", "decode_subscription", "encode_assignment", "decode_assignment", "range_assign"]
