"""kipviz serve benchmark: a librdkafka producer and consumer through the socket edge.

    python benchmarks/serve.py               (20,000 records of 1 KB)
    python benchmarks/serve.py --records 5000
    python benchmarks/serve.py --rate 1000 --seconds 20   (paced: about 1,000 small requests/s)

A confluent-kafka (librdkafka) producer writes 1 KB records (acks=all, idempotent, no compression)
to a 3-partition topic on `kipviz serve` (one broker, 127.0.0.1, free port), then a consumer reads
them all back. Reported: requests/s and records/s over the produce and the consume phase; p50/p99
of the server-side request latency (frame read to response written, for requests answered at once;
held Fetches excluded); and the socket layer's cost against the model's own: the time inside
Cluster.dispatch (decode, handler, events, encode) versus the whole frame-in to frame-out time,
measured on the same requests in the same run. Targets (issue 22): the socket layer adds <= 30 %
to the model's cost; p99 <= 20 ms at 1,000 requests/s. Each target line says PASS or MISS.

--rate R: the paced load the p99 target names. A producer with linger.ms=0, the rate spread over four
producers (so nearly every record is its own Produce request), sends 100-byte records at R records/s, evenly spaced, while a consumer
group reads them; p50/p99 are over the requests of that window only."""
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
    ap.add_argument("--rate", type=int, default=0, help="paced mode: records/s, one small Produce each")
    ap.add_argument("--seconds", type=float, default=20.0, help="paced mode: how long")
    args = ap.parse_args()
    if args.rate:
        return paced(args.rate, args.seconds)
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


def paced(rate: int, seconds: float) -> None:
    with Server(brokers=1) as srv:
        admin = AdminClient({"bootstrap.servers": srv.bootstrap})
        for f in admin.create_topics([NewTopic("paced", 3, 1)]).values():
            f.result(30)
        # several producers: one client sends a request per round trip and batches what waits, so
        # spreading the rate over four keeps nearly every record its own Produce request
        ps = [Producer({"bootstrap.servers": srv.bootstrap, "acks": "all", "enable.idempotence": True,
                        "linger.ms": 0}) for _ in range(4)]
        c = Consumer({"bootstrap.servers": srv.bootstrap, "group.id": "paced", "auto.offset.reset": "earliest",
                      "fetch.wait.max.ms": 100})
        c.subscribe(["paced"])
        c.consume(1, 2.0)                              # joined before the window opens
        srv.timings.clear()
        r0, t0 = srv.requests, time.perf_counter()
        sent, got = 0, 0
        while (now := time.perf_counter()) < t0 + seconds:
            due = int((now - t0) * rate)
            while sent < due:
                ps[sent % len(ps)].produce("paced", value=b"x" * 100, key=b"%d" % sent)
                sent += 1
            for p in ps:
                p.poll(0)
            got += sum(1 for m in c.consume(500, 0.001) if m.error() is None)
        for p in ps:
            p.flush(30)
        took, reqs = time.perf_counter() - t0, srv.requests - r0
        timings = list(srv.timings)
        c.close()
        del p, ps, c, admin
    lat = [t * 1000 for _, t in timings]
    p50, p99 = pct(lat, 0.50), pct(lat, 0.99)
    print(f"paced (4 producers): {sent} records of 100 B at {rate}/s for {seconds:.0f} s; {reqs / took:,.0f} requests/s "
          f"served ({got} read back)")
    print(f"latency (answered at once, {len(lat)} requests): p50 {p50:.2f} ms, p99 {p99:.2f} ms")
    print(f"target p99 <= 20 ms at 1,000 requests/s: {'PASS' if p99 <= 20 and reqs / took >= 1000 else 'MISS'}"
          + ("" if reqs / took >= 1000 else " (the load did not reach 1,000 requests/s)"))


if __name__ == "__main__":
    tracemalloc.stop()
    main()
