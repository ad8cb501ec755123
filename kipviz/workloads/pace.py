"""Virtual time a client application spends between its requests: network round trips,
per-record processing, the producer's linger, the application's think time between polls.

    pace = Pace(seed=0)
    pace.spend(cluster, pace.round_trip())          # after a request: its round trip
    pace.spend(cluster, pace.processing(len(recs))) # between poll and produce

The cluster model answers a request at once and the workloads move its clock between steps; without
a Pace every transaction would begin and commit at the same virtual millisecond (0 ms durations,
no TX_PENDING residency, no lag to read). The draws come from their own seeded generator, so a
workload's other choices (keys, amounts, aborts) do not change with the pace, and the same seed
gives the same times. The defaults are a small data-centre deployment: round trips of ~1-5 ms,
~0.2-1 ms of work per record with a long tail, linger.ms 5, think time up to ~40 ms."""
from __future__ import annotations

import random
from dataclasses import dataclass, field

__all__ = ["Pace"]


@dataclass
class Pace:
    seed: int = 0
    rtt_ms: tuple[float, float] = (1.0, 5.0)          # uniform: one network round trip
    record_ms: float = 0.4                            # median processing time per record
    record_sigma: float = 0.6                         # log-normal spread of a batch's per-record time
    linger_ms: int = 5                                # producer linger.ms before a batch goes out
    think_ms: tuple[int, int] = (0, 40)               # between an application's iterations
    spent_ms: int = 0
    rng: random.Random = field(init=False, repr=False)

    def __post_init__(self):
        self.rng = random.Random(f"pace-{self.seed}")

    def round_trip(self, n: int = 1) -> int:
        lo, hi = self.rtt_ms
        return round(sum(self.rng.uniform(lo, hi) for _ in range(n)))

    def processing(self, records: int) -> int:
        """Time to process `records` records: a per-batch log-normal rate (slow batches happen)."""
        per = self.rng.lognormvariate(0.0, self.record_sigma) * self.record_ms
        return max(1, round(per * records))

    def produce(self, batches: int) -> int:
        """Linger plus one round trip per batch sent (batches to different partitions overlap
        little in a single-threaded sender loop)."""
        return self.linger_ms + self.round_trip(max(1, batches))

    def think(self) -> int:
        return self.rng.randint(*self.think_ms)

    def spend(self, cluster, ms: int) -> None:
        if ms > 0:
            self.spent_ms += ms
            cluster.advance(ms)
