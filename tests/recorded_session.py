"""One recorded session of real clients, shared by the explain tests: `kipviz serve --record`
(kipviz.serve.Server) with a librdkafka transactional producer committing 20 records to `orders`
and a kafka-python group consumer reading them back read_committed and committing."""
from __future__ import annotations

from pathlib import Path

from kipviz.serve import Server


def record_session(out: Path, *, release: str, transactional_id: str, group: str) -> tuple[int, int]:
    """Record the session into `out` (traffic.pcap and the sample-data layout): (records read, broker port)."""
    import confluent_kafka as ck
    import kafka
    from confluent_kafka.admin import AdminClient, NewTopic
    with Server(record=out, release=release) as srv:
        admin = AdminClient({"bootstrap.servers": srv.bootstrap})     # kept: its futures need the handle
        for f in admin.create_topics([NewTopic("orders", 2, 1)]).values():
            f.result(20)
        p = ck.Producer({"bootstrap.servers": srv.bootstrap, "transactional.id": transactional_id})
        p.init_transactions(20)
        p.begin_transaction()
        for i in range(20):
            p.produce("orders", key=b"k%d" % i, value=b"v%d" % i)
        p.commit_transaction(20)
        del p
        c = kafka.KafkaConsumer("orders", bootstrap_servers=srv.bootstrap, group_id=group,
                                auto_offset_reset="earliest", isolation_level="read_committed",
                                consumer_timeout_ms=4000, client_id="reader")
        got = [m.value for m in c]
        c.commit()
        c.close()
        port = int(srv.bootstrap.rsplit(":", 1)[1])
    return len(got), port
