"""Topic auto-creation through the controller, in bounded steps.

In Kafka 4 a broker does not create an auto-created topic itself: AutoTopicCreationManager
(core/src/main/scala/kafka/server/AutoTopicCreationManager.scala, sendCreateTopicRequest) sends a
CreateTopics request to the active controller and answers the Metadata request at once with
UNKNOWN_TOPIC_OR_PARTITION for the topic; a topic whose creation is already in flight gets the
same answer (filterCreatableTopics: `inflightTopics.add` fails). The client asks again and sees
the topic once the controller created it.

The model queues the names (`request`) and creates them after the request that asked, at most
CREATES_PER_STEP topics per step: one step after every request the cluster handles and after
every clock step (Cluster._after), so one Metadata request naming 5,000 new topics answers at
once and the others' requests go on between the steps."""
from __future__ import annotations

from ..schema import events as ev

CREATES_PER_STEP = 25


class AutoCreates:
    def __init__(self, cluster):
        self.cluster = cluster
        self.pending: dict[str, int] = {}       # name -> partitions, in request order
        self._timer: int | None = None

    def request(self, name: str) -> bool:
        """Queue `name` for creation; False if it is already in flight."""
        if name in self.pending:
            return False
        self.pending[name] = self.cluster.config.default_partitions
        self._arm()
        return True

    def _arm(self) -> None:
        # a timer a millisecond on only wakes a driver waiting on the clock (kipviz serve's ticker):
        # the step itself runs in Cluster._after, once per request or clock step, so a clock step
        # that covers many milliseconds still makes one step
        if self._timer is None:
            self._timer = self.cluster.clock.schedule(self.cluster.now + 1, self._fire)

    def _fire(self) -> None:
        self._timer = None

    def step(self) -> int:
        """Create up to CREATES_PER_STEP of the waiting topics (the controller's CreateTopics);
        returns how many were created."""
        c = self.cluster
        made = 0
        cap = c.config.max_cluster_partitions
        held = sum(len(t.partitions) for t in c.topics.by_name.values())
        for name in list(self.pending)[:CREATES_PER_STEP]:
            partitions = self.pending.pop(name)
            if c.topics.get(name) is not None or c.topics.colliding(name):
                continue                     # created meanwhile, or the controller refuses it
            if held + partitions > cap:
                c.emit(ev.TopicNotAutoCreated, topic=name, held=held, limit=cap)
                continue
            c.create_topic(name, partitions)
            c.emit(ev.TopicAutoCreated, topic=name)
            held += partitions
            made += 1
        if self.pending:
            self._arm()
        return made
