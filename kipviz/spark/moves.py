"""Share-record state changes (KIP-932, and KIP-1289's TX_PENDING) out of a run's events, with the
record key "group/topic-partition@offset" split into columns by plain string functions.

    m = share_moves(src.events)                               # every share group's records
    m = share_moves(src.events, group="sg", topic="in")       # one group's records of one topic
    df = split_key(df)                                        # any frame with a share-record `key`

Columns: group, topic, partition, offset, seq, time_ms, from_state, to_state, cause. The TX_PENDING
analyses and the exactly-once verification read the moves from here; numeric partition/offset
columns make their grouping cheaper than the key text."""
from __future__ import annotations

from ..eos.checker import MACHINE

__all__ = ["share_moves", "share_events", "split_key", "partition_offset_after", "MOVE_COLUMNS"]

MOVE_COLUMNS = ("group", "topic", "partition", "offset", "seq", "time_ms", "from_state", "to_state", "cause")


def share_events(events):
    """The share-record StateChanged events, key unsplit."""
    from pyspark.sql import functions as F
    return events.filter((F.col("kind") == "StateChanged") & (F.col("machine") == MACHINE))


def split_key(df):
    """df + group, topic, partition, offset split from its share-record `key` (null partition and
    offset where the key does not split: nothing is dropped silently)."""
    from pyspark.sql import functions as F
    # a group id may hold "/", a topic name may not: the record part follows the last "/"
    rec = F.substring_index("key", "/", -1)                       # topic-partition@offset
    df = df.withColumn("_tp", F.substring_index(rec, "@", 1)).withColumn("_p", F.substring_index("_tp", "-", -1))
    return (df.withColumn("group", F.expr("left(key, length(key) - length(substring_index(key, '/', -1)) - 1)"))
            .withColumn("topic", F.expr("left(_tp, length(_tp) - length(_p) - 1)"))
            .withColumn("partition", F.col("_p").try_cast("int"))
            .withColumn("offset", F.substring_index("key", "@", -1).try_cast("bigint")).drop("_tp", "_p"))


def partition_offset_after(text, prefix: str):
    """(partition int, offset bigint) columns parsed from `text` = prefix + "partition@offset"
    (a share-record key after "group/topic-", a source header after "topic-"); null where the
    rest does not parse. `text`: a column or a column name."""
    from pyspark.sql import functions as F
    rest = F.substring(text, len(prefix) + 1, 1 << 30)
    return (F.substring_index(rest, "@", 1).try_cast("int"), F.substring_index(rest, "@", -1).try_cast("bigint"))


def share_moves(events, *, group: str | None = None, topic: str | None = None):
    """The share-record moves (see the module docstring); with `group` and `topic` only that
    group's records of that topic (a key whose rest does not split belongs to another topic whose
    name starts alike, e.g. in-1's "in-1-0@5" for topic in)."""
    from pyspark.sql import functions as F
    e = share_events(events)
    if group is None or topic is None:
        return split_key(e).select(*MOVE_COLUMNS)
    prefix = f"{group}/{topic}-"
    p, o = partition_offset_after("key", prefix)
    out = e.filter(F.col("key").startswith(prefix)).select(
        F.lit(group).alias("group"), F.lit(topic).alias("topic"), p.alias("partition"), o.alias("offset"),
        *MOVE_COLUMNS[4:])
    return out.filter(F.col("partition").isNotNull() & F.col("offset").isNotNull())
