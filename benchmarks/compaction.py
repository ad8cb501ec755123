"""__consumer_offsets under a long commit loop, with and without the log cleaner.

    python benchmarks/compaction.py               # 100,000 commits, 1 MiB segments
    python benchmarks/compaction.py --commits 20000

Each commit is one OffsetCommit frame through Cluster.handle (one group, one partition, the
offset going up). The log cleaner runs every log.cleaner.backoff.ms (15,000 ms) of virtual time;
the loop moves the clock 10 ms per commit. Prints the largest size the group's __consumer_offsets
partition reached and its size at the end, with the cleaner and without."""
from __future__ import annotations

import argparse
import time

from kipviz.broker import Cluster

SEGMENT = 1 << 20


def run(commits: int, cleaner: bool, step_ms: int = 10) -> tuple[int, int, float]:
    c = Cluster(brokers=1, seed=1, log_cleaner_backoff_ms=15000 if cleaner else None)
    c.create_topic("orders", 1)
    c.topics.get("__consumer_offsets").configs["segment.bytes"] = str(SEGMENT)     # offsets.topic.segment.bytes
    c.start_log_cleaner()
    _topic, p = c.coordinator_partition(0, "g1")
    log = c.topics.partition("__consumer_offsets", p)
    peak = 0
    t0 = time.perf_counter()
    for i in range(commits):
        body = {"GroupId": "g1", "GenerationIdOrMemberEpoch": -1, "MemberId": "", "GroupInstanceId": None,
                "Topics": [{"Name": "orders", "Partitions": [{"PartitionIndex": 0, "CommittedOffset": i,
                                                              "CommittedLeaderEpoch": -1, "CommittedMetadata": ""}]}]}
        assert c.call("OffsetCommit", 9, body)["Topics"][0]["Partitions"][0]["ErrorCode"] == 0
        c.advance(step_ms)
        c.take_events()
        peak = max(peak, log.held_bytes)
    return peak, log.held_bytes, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--commits", type=int, default=100_000)
    a = ap.parse_args()
    for cleaner in (True, False):
        peak, end, secs = run(a.commits, cleaner)
        print(f"{'with' if cleaner else 'without'} the cleaner: {a.commits:,} commits, partition never above "
              f"{peak / 1e6:.2f} MB, {end / 1e6:.2f} MB at the end ({secs:.1f} s)")


if __name__ == "__main__":
    main()
