"""Sample data for the Spark analyses: a workload (or scenario) run on the cluster model, written as
Parquet in the "kipviz-sample/2" format (sample_data/README.md documents every dataset).

    from kipviz.sampledata import generate
    manifest = generate("regular_eos", "out/regular_eos", records=10_000, seed=0)

    DIR/topics/<topic>.parquet    data records, with the columns of Spark's Kafka source
                                  (internal topics: topics/internal/consumer_offsets.parquet, ...;
                                  one file per topic whatever its name: writer.dataset_stem)
    DIR/batches/<topic>.parquet   the raw record batches (control markers included)
    DIR/requests.parquet          every request/response frame the model handled
    DIR/events.parquet            the model's event log
    DIR/manifest.json             what ran, the topics (ids, deleted ones), row counts and sha256s
"""
from ..workloads.samples import WORKLOADS
from .generate import generate, names

__all__ = ["generate", "names", "WORKLOADS"]
