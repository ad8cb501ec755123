"""The live chart's LSO gap (kipviz.spark.live.LiveMetrics._watermarks) is never negative, also when a
transaction commits between the two watermark reads (it once drew the gap under the chart's axis)."""
from __future__ import annotations

import types

import confluent_kafka

from kipviz.spark.live import LiveMetrics


class _Growing:
    """A consumer over one partition whose log grows by a committed transaction after every read:
    the high watermark and the LSO move up together (LSO <= high watermark at any moment)."""
    log = {"hw": 10, "lso": 10}

    def __init__(self, conf):
        self.level = conf["isolation.level"]

    def list_topics(self, topic, timeout):
        md = types.SimpleNamespace(partitions={0: None}, error=None)
        return types.SimpleNamespace(topics={topic: md})

    def get_watermark_offsets(self, tp, timeout, cached):
        off = self.log["lso" if self.level == "read_committed" else "hw"]
        self.log["hw"] += 5                 # a transaction of 5 commits right after this read
        self.log["lso"] += 5
        return 0, off

    def close(self):
        pass


def test_the_lso_gap_is_never_negative_when_the_log_grows_between_reads(monkeypatch):
    monkeypatch.setattr(confluent_kafka, "Consumer", _Growing)
    m = LiveMetrics(None, "127.0.0.1:1", "out")
    m.committed = {("g", "out", 0): 12}
    gap, lag = m._watermarks()
    assert gap >= 0 and lag[0] >= 0, (gap, lag)
