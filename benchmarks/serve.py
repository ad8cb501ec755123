"""kipviz serve benchmark: a librdkafka producer and consumer through the socket edge.

    python benchmarks/serve.py               (20,000 records of 1 KB)
    python benchmarks/serve.py --records 5000

A confluent-kafka (librdkafka) producer writes 1 KB records (acks=all, idempotent, no compression)
to a 3-partition topic on `kipviz serve` (one broker, 127.0.0.1, free port), then a consumer reads
them all back. Reported: requests/s and records/s over the produce and the consume phase; p50/p99
of the server-side request latency (frame read to response written, for requests answered at once;
held Fetches excluded); and the socket layer's cost against the model's own: the time inside
Cluster.dispatch (decode, handler, events, encode) versus the whole frame-in to frame-out time,
measured on the same requests in the same run. Targets (issue 22): the socket layer adds <= 30 %
to the model's cost; p99 <= 20 ms. Each target line says PASS or MISS."""
from __future__ import annotations

import argparse
import statistics
import time
import tracemalloc

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kipviz.serve import Server


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=20_000)
    args = ap.parse_args()
    value = b"x" * 1024
    with Server(brokers=1) as srv:
        admin = AdminClient({"bootstrap.servers": srv.bootstrap})
        for f in admin.create_topics([NewTopic("bench", 3, 1)]).values():
            f.result(30)
        p = Producer({"bootstrap.servers": srv.bootstrap, "acks": "all", "enable.idempotence": True,
                      "linger.ms": 5, "batch.size": 65536})
        r0, t0 = srv.requests, time.perf_counter()
        for i in range(args.records):
            while True:
                try:
                    p.produce("bench", value=value, key=b"%d" % i)
                    break
                except BufferError:
                    p.poll(0.01)
        assert p.flush(120) == 0
        t_prod, r_prod = time.perf_counter() - t0, srv.requests - r0
        c = Consumer({"bootstrap.servers": srv.bootstrap, "group.id": "bench", "auto.offset.reset": "earliest",
                      "fetch.wait.max.ms": 100})
        c.subscribe(["bench"])
        r0, t0, got = srv.requests, time.perf_counter(), 0
        end = t0 + 300
        while got < args.records and time.perf_counter() < end:
            msgs = c.consume(1000, 0.5)
            got += sum(1 for m in msgs if m.error() is None)
        t_cons, r_cons = time.perf_counter() - t0, srv.requests - r0
        c.close()
        timings = list(srv.timings)
        events = srv.cluster.next_seq
        del p, c, admin                     # librdkafka handles go before the listeners do
    model = sum(m for m, _ in timings)
    total = sum(t for _, t in timings)
    lat = [t * 1000 for _, t in timings]
    overhead = (total - model) / model if model else float("nan")
    p50, p99 = pct(lat, 0.50), pct(lat, 0.99)
    print(f"records: {args.records} x 1 KB, acks=all, idempotent; {events} model events")
    print(f"produce: {t_prod:.2f} s, {args.records / t_prod:,.0f} records/s, {r_prod / t_prod:,.0f} requests/s")
    print(f"consume: {t_cons:.2f} s, {got / t_cons:,.0f} records/s, {r_cons / t_cons:,.0f} requests/s ({got} read)")
    print(f"latency (answered at once, {len(lat)} requests): p50 {p50:.2f} ms, p99 {p99:.2f} ms, "
          f"mean {statistics.fmean(lat):.2f} ms")
    mlat = [m * 1000 for m, _ in timings]
    print(f"  of which in the model: p50 {pct(mlat, 0.50):.2f} ms, p99 {pct(mlat, 0.99):.2f} ms")
    print(f"time in the model {model:.3f} s, frame-in to frame-out {total:.3f} s: socket layer +{overhead:.0%}")
    print(f"target socket layer <= 30 % of the model: {'PASS' if overhead <= 0.30 else 'MISS'}")
    print(f"target p99 <= 20 ms: {'PASS' if p99 <= 20 else 'MISS'}")


if __name__ == "__main__":
    tracemalloc.stop()
    main()
