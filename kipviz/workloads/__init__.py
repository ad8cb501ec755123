"""Seeded workload drivers: long, reproducible runs of the client models against a Cluster.

    from kipviz.workloads import run_share_eos, Fault, random_faults
    result = run_share_eos(records=10_000, consumers=4, seed=1,
                           faults=random_faults(1, steps=200, count=5))
    result.stats, result.faults, result.check().summary()

share_eos: share-group read-process-write with KIP-1289 (proposed) transactional acknowledgements
and the seed's corner-case faults (kipviz/workloads/share_eos.py).
samples: the read-process-write workloads the sample data is written from (regular_eos ...,
kipviz/workloads/samples.py)."""
from .share_eos import ShareEosWorkload, WorkloadResult, run_share_eos
from .share_faults import DEFAULT_KINDS, FAULT_KINDS, FAULTS, Fault, random_faults

__all__ = ["run_share_eos", "ShareEosWorkload", "WorkloadResult", "Fault", "FAULT_KINDS", "FAULTS", "DEFAULT_KINDS",
           "random_faults"]
