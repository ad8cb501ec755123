"""How a subscribed consumer keeps its place in its group: one strategy per group protocol, as
Kafka's consumer has one per protocol (classic: consumer/internals/ConsumerCoordinator.java over
AbstractCoordinator.java, in membership_classic; consumer, KIP-848:
consumer/internals/ConsumerMembershipManager.java, in membership_consumer).

A strategy works on its Consumer's shared state (member id, epoch or generation, the assigned
partitions, the consumer's state) and sends through its wire; what only one protocol keeps (the
held JoinGroup / SyncGroup of the classic protocol, the owned partitions last sent of KIP-848)
stays in the strategy."""
from __future__ import annotations


class Membership:
    """The strategy's interface and what both protocols share."""

    PROTOCOL = ""

    def __init__(self, consumer):
        self.consumer = consumer
        self.rejoin_reason: str | None = None

    @property
    def held_requests(self) -> list[str]:
        """APIs of the requests the coordinator is holding for this member."""
        return []

    def maintain(self) -> None:
        """Join, acknowledge and heartbeat as due (what the consumer's background thread does)."""
        raise NotImplementedError

    def leave(self) -> None:
        """Leave the group on close, if this member is in it."""
        raise NotImplementedError

    def subscription_changed(self) -> None:
        """subscribe() changed the topics (KIP-848 sends them with the next heartbeat)."""

    def closed(self) -> None:
        """The consumer closed: forget what is in flight."""

    def request_rejoin(self, why: str) -> None:
        """Join again at the next poll (AbstractCoordinator.java requestRejoin)."""
        self.rejoin_reason = why
        self.consumer.set_state("JOINING", why)

    def heartbeat_due(self) -> bool:
        """heartbeat.interval.ms has passed on the cluster's clock since the last heartbeat."""
        c = self.consumer
        return c._last_heartbeat is None or c.cluster.now - c._last_heartbeat >= c.heartbeat_interval_ms
