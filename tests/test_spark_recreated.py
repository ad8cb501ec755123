"""kipviz.spark.recreated_offsets: a recreated topic's offsets by topic id (KIP-516)."""
from __future__ import annotations

import pytest

from kipviz import spark as ks
from kipviz.errors import KipvizError
from tests.spark_session import spark  # noqa: F401

pytestmark = pytest.mark.spark


def test_recreated_topic_offsets_restart_at_zero_under_the_new_id(spark):  # noqa: F811
    logs = ks.scenario_logs("kip516.stale_read", spark=spark)
    rows = [r.asDict() for r in ks.recreated_offsets(logs, "orders").orderBy("generation").collect()]
    ids = {(i["topic_id_b64"], i["deleted"]) for i in logs.source.topic_ids().filter("name = 'orders'").collect()}
    assert [(r["generation"], r["deleted"], r["partition"], r["first_offset"], r["last_offset"], r["records"],
             r["restarted"]) for r in rows] == [(1, True, 0, 0, 2, 3, False), (2, False, 0, 0, 4, 5, True)]
    assert {(r["topic_id_b64"], r["deleted"]) for r in rows} == ids
    assert rows[0]["topic_id_b64"] != rows[1]["topic_id_b64"]
    with pytest.raises(KipvizError, match="no topic 'nope' in this run; topics: orders"):
        ks.recreated_offsets(logs, "nope")
