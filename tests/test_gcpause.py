"""The collector settings of long runs (kipviz.gcpause), and the reason they are safe: a run's
requests leave no cyclic garbage behind, so a collector that runs rarely holds nothing back."""
import gc

import pytest

from kipviz.broker.handlers.metadata import shape
from kipviz.codec.fit import complete_body
from kipviz.gcpause import YOUNG_LIMIT, gc_paused, rare_collections
from kipviz.sampledata.generate import share_eos_options
from kipviz.schema.error_codes import error_codes
from kipviz.workloads import ShareEosWorkload


@pytest.fixture
def collector_off():
    """The collector off for the test (so cyclic garbage stays until counted), then restored."""
    was = gc.isenabled()
    gc.collect()
    gc.disable()
    yield
    gc.collect()
    if was:
        gc.enable()


def test_rare_collections_raises_the_young_threshold_and_restores_it():
    before = gc.get_threshold()
    with rare_collections():
        assert gc.get_threshold() == (max(before[0], YOUNG_LIMIT), before[1], before[2])
    assert gc.get_threshold() == before
    with pytest.raises(ValueError), rare_collections():
        raise ValueError("boom")
    assert gc.get_threshold() == before


def test_gc_paused_leaves_a_disabled_collector_disabled(collector_off):
    with gc_paused():
        assert not gc.isenabled()
    assert not gc.isenabled()


def test_body_builders_leave_no_cyclic_garbage(collector_off):
    body = {"Topics": [{"Name": "t", "Partitions": [{"PartitionIndex": 0, "ErrorCode": 3}]}], "ErrorCode": 0}
    for _ in range(50):
        assert error_codes(body) == (3,)
        filled = complete_body("TxnOffsetCommitRequest", 4, {"TransactionalId": "tx", "Topics": [
            {"Name": "t", "Partitions": [{"PartitionIndex": 0, "CommittedOffset": 5}]}]})
        assert filled["Topics"][0]["Partitions"][0]["CommittedLeaderEpoch"] == -1
        shaped = shape("MetadataResponse", 12, {"Topics": [{"Name": None, "ErrorCode": 3}]})
        assert shaped["Topics"][0]["Partitions"] == []
    assert gc.collect() == 0


def test_a_share_eos_run_leaves_cyclic_garbage_only_per_fault(collector_off):
    # 5,000 records, 5 faults: before the body builders were module-level functions this left
    # about 10,000 cyclic objects (a few per request); what remains is the faults' tracebacks
    result = ShareEosWorkload(**share_eos_options(5_000, 5)).run()
    assert result.stats["records_committed"] == 5_000 and result.stats["faults_fired"] == 5
    assert gc.collect() < 500
