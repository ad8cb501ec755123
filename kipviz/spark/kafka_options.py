"""The options of the kipviz-kafka source (kipviz.spark.kafka_source) and the offset ranges they
name, as Spark's own Kafka source reads them (Spark's
docs/streaming/structured-streaming-kafka-integration.md and
connector/kafka-0-10-sql/.../kafka010/KafkaSourceProvider.scala):

    kafka.bootstrap.servers            required; every other kafka.X is librdkafka's property X
    subscribe | subscribePattern | assign   exactly one: "a,b" | a regex | {"a":[0,1]}
    startingOffsets                    earliest | latest | {"a":{"0":23,"1":-2}}  (-2 earliest, -1 latest;
                                       batch default earliest, latest not allowed; streaming default latest)
    endingOffsets                      batch only: latest (default) | {"a":{"0":50,"1":-1}} (-1 latest, no -2)
    kafka.isolation.level              read_uncommitted (default) | read_committed: the end is the LSO
    includeHeaders                     false (default) | true: a `headers` column
    maxOffsetsPerTrigger               streaming: at most this many offsets per micro-batch, split over the
                                       partitions in proportion to what each has waiting (KafkaMicroBatchStream)
    minPartitions                      split offset ranges so there are at least this many input partitions
    failOnDataLoss                     true (default): an offset no longer in the log fails the query
    kafkaConsumer.pollTimeoutMs        how long a task waits for a record before it fails (Spark: 120000;
                                       the kit: 30000, so a dead broker fails a notebook cell in seconds)
    groupIdPrefix, kafka.group.id      the group.id of the reading consumers (they assign, never join)
    metadataTimeoutMs                  the kit's: how long the driver waits for partitions and watermarks
                                       (default 10000)

Pure Python with confluent-kafka: what the driver (Spark's Python planner worker) asks the cluster
-- partitions, watermarks -- lives here too, so a bad option or an unreachable cluster is one
KipvizError line before any task starts."""
from __future__ import annotations

import json
import math
import re
import uuid
from dataclasses import dataclass

from ..errors import KipvizError

NAME = "kipviz-kafka"
EARLIEST, LATEST = -2, -1
POLL_TIMEOUT_MS = 30_000
METADATA_TIMEOUT_S = 10.0
# Spark refuses these Kafka settings (KafkaSourceProvider.validateGeneralOptions): the source
# chooses them itself
_REFUSED = {"auto.offset.reset": "use startingOffsets", "key.deserializer": "keys are bytes",
            "value.deserializer": "values are bytes", "enable.auto.commit": "the source commits nothing",
            "interceptor.classes": "not supported"}
_SUBSCRIBE = ("subscribe", "subscribepattern", "assign")


def source_error(text: str) -> KipvizError:
    """The one error every bad option, offset or broker answer of the source gives."""
    return KipvizError(f"{NAME}: {text}")


def bool_option(opts: dict, name: str, default: bool) -> bool:
    """Option `name` of `opts` (keys lower-cased: Spark's options ignore case), true or false."""
    v = opts.get(name.lower())
    if v is None:
        return default
    if str(v).strip().lower() not in ("true", "false"):
        raise source_error(f"option {name} must be true or false, got {v!r}")
    return str(v).strip().lower() == "true"


def _int(opts: dict, name: str, default: int | None, least: int = 1) -> int | None:
    v = opts.get(name.lower())
    if v is None:
        return default
    try:
        n = int(str(v).strip())
    except ValueError:
        raise source_error(f"option {name} must be an integer, got {v!r}") from None
    if n < least:
        raise source_error(f"option {name} must be {least} or more, got {n}")
    return n


def _json(text: str, name: str):
    try:
        return json.loads(text)
    except ValueError as e:
        raise source_error(f"option {name} is not JSON ({e}): {text[:80]!r}") from None


def _offsets_spec(text: str | None, name: str, default: str):
    """'earliest' / 'latest' / {topic: {partition: offset}} (partitions as ints)."""
    text = (text or default).strip()
    if text.lower() in ("earliest", "latest"):
        return text.lower()
    spec = _json(text, name)
    if not isinstance(spec, dict) or not all(isinstance(v, dict) for v in spec.values()):
        raise source_error(f'option {name} must be earliest, latest or {{"topic":{{"0":23}}}}, got {text[:80]!r}')
    out = {}
    for topic, parts in spec.items():
        for p, off in parts.items():
            try:
                out[(topic, int(p))] = int(off)
            except (TypeError, ValueError):
                raise source_error(f"option {name}: {topic}[{p}] = {off!r} is not a partition and an offset") from None
    return out


@dataclass
class Options:
    """The source's options, checked. `conf` is the librdkafka configuration of every consumer."""
    conf: dict
    subscribe: list | None = None
    pattern: str | None = None
    assign: list | None = None
    starting: object = "earliest"
    ending: object = "latest"
    include_headers: bool = False
    max_offsets: int | None = None
    min_partitions: int | None = None
    fail_on_data_loss: bool = True
    poll_timeout_ms: int = POLL_TIMEOUT_MS
    read_committed: bool = False
    metadata_timeout_s: float = METADATA_TIMEOUT_S

    @property
    def bootstrap(self) -> str:
        """The bootstrap servers."""
        return self.conf["bootstrap.servers"]


def _subscription(o: Options, opts: dict, kind: str) -> None:
    """subscribe, subscribePattern or assign, as Spark's Kafka source reads them."""
    if kind == "subscribe":
        o.subscribe = [t.strip() for t in opts["subscribe"].split(",") if t.strip()]
        if not o.subscribe:
            raise source_error("option subscribe names no topic")
    elif kind == "subscribepattern":
        o.pattern = opts["subscribepattern"]
        try:
            re.compile(o.pattern)
        except re.error as e:
            raise source_error(f"option subscribePattern is not a regular expression ({e})") from None
    else:
        spec = _json(opts["assign"], "assign")
        if not isinstance(spec, dict) or not all(isinstance(v, list) and all(isinstance(p, int) for p in v)
                                                 for v in spec.values()):
            raise source_error(f'option assign must be JSON like {{"topicA":[0,1]}}, got {opts["assign"][:80]!r}')
        o.assign = sorted((t, p) for t, ps in spec.items() for p in ps)


def _offset_range(o: Options, opts: dict, streaming: bool) -> None:
    """startingOffsets and endingOffsets, with the combinations Spark refuses."""
    o.starting = _offsets_spec(opts.get("startingoffsets"), "startingOffsets", "latest" if streaming else "earliest")
    if not streaming and (o.starting == "latest" or (isinstance(o.starting, dict) and LATEST in o.starting.values())):
        raise source_error("startingOffsets latest (or -1) is not allowed for a batch query, as in Spark")
    if opts.get("endingoffsets") and streaming:
        raise source_error("option endingOffsets is for batch queries only, as in Spark")
    o.ending = _offsets_spec(opts.get("endingoffsets"), "endingOffsets", "latest")
    if o.ending == "earliest" or (isinstance(o.ending, dict) and EARLIEST in o.ending.values()):
        raise source_error("endingOffsets earliest (or -2) is not allowed, as in Spark")


def parse(options, *, streaming: bool) -> Options:
    """Spark's data source options (case-insensitive names) -> Options; KipvizError naming the option."""
    opts = {str(k).lower(): str(v) for k, v in dict(options).items()}
    conf = {k[6:]: v for k, v in opts.items() if k.startswith("kafka.")}
    if not conf.get("bootstrap.servers"):
        raise source_error("option kafka.bootstrap.servers is required (host:port of the cluster's brokers)")
    for k, why in _REFUSED.items():
        if k in conf:
            raise source_error(f"Kafka option kafka.{k} is not supported: {why}")
    given = [k for k in _SUBSCRIBE if opts.get(k)]
    if len(given) != 1:
        raise source_error("give exactly one of the options subscribe, subscribePattern, assign"
                     + (f" (got {', '.join(given)})" if given else ""))
    o = Options(conf={**conf, "group.id": conf.get("group.id") or f"{opts.get('groupidprefix', 'spark-kafka-source')}-"
                      f"{uuid.uuid4()}", "enable.auto.commit": False, "enable.partition.eof": True})
    _subscription(o, opts, given[0])
    _offset_range(o, opts, streaming)
    o.include_headers = bool_option(opts, "includeHeaders", False)
    o.fail_on_data_loss = bool_option(opts, "failOnDataLoss", True)
    o.max_offsets = _int(opts, "maxOffsetsPerTrigger", None)
    o.min_partitions = _int(opts, "minPartitions", None)
    o.poll_timeout_ms = _int(opts, "kafkaConsumer.pollTimeoutMs", POLL_TIMEOUT_MS)
    o.metadata_timeout_s = _int(opts, "metadataTimeoutMs", int(METADATA_TIMEOUT_S * 1000)) / 1000
    level = conf.get("isolation.level", "read_uncommitted").lower()
    if level not in ("read_uncommitted", "read_committed"):
        raise source_error(f"kafka.isolation.level must be read_uncommitted or read_committed, got {level!r}")
    o.read_committed = level == "read_committed"
    # Kafka's Java consumer, which Spark's source runs, reads uncommitted by default; librdkafka
    # defaults to read_committed, so the level is always spelled out
    o.conf["isolation.level"] = level
    return o


# ---- what the driver asks the cluster -------------------------------------------------------------
def consumer(conf: dict):
    """A confluent-kafka Consumer for `conf`; a property librdkafka does not know: KipvizError."""
    from confluent_kafka import Consumer, KafkaException
    try:
        return Consumer({"log_level": 3, **conf})
    except (KafkaException, ValueError, TypeError) as e:
        raise source_error(f"the Kafka client refuses the kafka.* options: {_kafka_text(e)}") from None


def _kafka_text(e) -> str:
    err = e.args[0] if getattr(e, "args", None) else e
    return err.str() if hasattr(err, "str") else str(err)


class Cluster:
    """The driver's view of the cluster: partitions and watermarks, each call bounded in time."""

    def __init__(self, o: Options):
        self.o, self.timeout_s = o, o.metadata_timeout_s
        self.c = consumer(o.conf)

    def close(self) -> None:
        """Close the admin client."""
        self.c.close()

    def _metadata(self, topic: str | None = None):
        from confluent_kafka import KafkaException
        try:
            return self.c.list_topics(topic, timeout=self.timeout_s)
        except KafkaException as e:
            raise source_error(f"no broker of {self.o.bootstrap} answered within {self.timeout_s:g} s "
                         f"(kafka.bootstrap.servers): {_kafka_text(e)}") from None

    def partitions(self) -> list[tuple[str, int]]:
        """(topic, partition) of every partition the subscription names; a topic that does not
        exist, or an assigned partition it does not have: KipvizError."""
        if self.o.pattern is not None:
            md = self._metadata()
            rx = re.compile(self.o.pattern)
            return sorted((t, p) for t, tm in md.topics.items() if rx.fullmatch(t) and tm.error is None
                          for p in tm.partitions)
        topics = self.o.subscribe or sorted({t for t, _ in self.o.assign})
        md = self._metadata()            # all topics at once: asking for one unknown topic waits out the timeout
        have = {}
        for t in topics:
            tm = md.topics.get(t)
            if tm is None or tm.error is not None:
                raise source_error(f"topic {t!r} does not exist on {self.o.bootstrap}"
                             + (f" ({tm.error.str()})" if tm is not None and tm.error is not None else ""))
            have[t] = sorted(tm.partitions)
        if self.o.subscribe:
            return [(t, p) for t in topics for p in have[t]]
        missing = [f"{t}-{p}" for t, p in self.o.assign if p not in have[t]]
        if missing:
            raise source_error(f"assign names partitions the cluster does not have: {', '.join(missing)}")
        return list(self.o.assign)

    def watermarks(self, tps) -> dict[tuple[str, int], tuple[int, int]]:
        """(low, high) of each partition; high is the last stable offset under read_committed
        (librdkafka's ListOffsets carries the consumer's isolation level, as Spark's
        KafkaOffsetReaderAdmin passes it to the admin client's listOffsets)."""
        from confluent_kafka import KafkaException, TopicPartition
        out = {}
        for t, p in tps:
            try:
                out[(t, p)] = self.c.get_watermark_offsets(TopicPartition(t, p), timeout=self.timeout_s, cached=False)
            except KafkaException as e:
                raise source_error(f"the offsets of {t}-{p} did not come within {self.timeout_s:g} s: {_kafka_text(e)}") \
                    from None
            if out[(t, p)] is None:
                raise source_error(f"the offsets of {t}-{p} did not come within {self.timeout_s:g} s")
        return out


def resolve(spec, tps, marks: dict, name: str, *, fail_on_data_loss: bool = True) -> dict:
    """{(topic, partition): offset} of `spec` (earliest / latest / JSON) over `tps`; a JSON offset
    outside [low, high]: KipvizError (failOnDataLoss), else the nearest end of the log."""
    out = {}
    for tp in tps:
        low, high = marks[tp]
        want = spec if isinstance(spec, str) else spec.get(tp, EARLIEST if name == "startingOffsets" else LATEST)
        off = {"earliest": low, "latest": high, EARLIEST: low, LATEST: high}.get(want, want)
        if not low <= off <= high:
            if fail_on_data_loss or off > high:
                raise source_error(f"{name}: offset {off} of {tp[0]}-{tp[1]} is out of range: the log holds "
                             f"[{low}, {high})")
            off = low
        out[tp] = off
    if isinstance(spec, dict):
        unknown = sorted(set(spec) - set(tps))
        if unknown:
            raise source_error(f"{name} names partitions the query does not read: "
                         f"{', '.join(f'{t}-{p}' for t, p in unknown)}")
    return out


def ranges(start: dict, end: dict, min_partitions: int | None = None) -> list[tuple[str, int, int, int]]:
    """(topic, partition, from, until) of every non-empty range, a range cut into pieces so that
    there are about min_partitions in all (KafkaOffsetRangeCalculator: in proportion to size)."""
    rs = []
    for tp, until in sorted(end.items()):
        frm = start[tp]
        if until < frm:
            raise source_error(f"the end offset {until} of {tp[0]}-{tp[1]} is before its start {frm}")
        if until > frm:
            rs.append((tp[0], tp[1], frm, until))
    if not min_partitions or min_partitions <= len(rs):
        return rs
    total = sum(u - f for _, _, f, u in rs)
    out = []
    for t, p, f, u in rs:
        pieces = max(1, math.ceil((u - f) / total * min_partitions))
        step = math.ceil((u - f) / pieces)
        out += [(t, p, a, min(a + step, u)) for a in range(f, u, step)]
    return out


def rate_limit(limit: int, start: dict, latest: dict) -> dict:
    """The end offsets of a micro-batch of at most `limit` offsets: each partition gets its share
    of the limit in proportion to what it has waiting, at least one offset when it has any
    (KafkaMicroBatchStream.rateLimit: "don't completely starve small topicpartitions")."""
    sizes = {tp: e - start[tp] for tp, e in latest.items() if e - start[tp] > 0}
    total = sum(sizes.values())
    if total < 1:
        return dict(latest)
    out = {}
    for tp, e in latest.items():
        if tp not in sizes:
            out[tp] = e
            continue
        share = limit * (sizes[tp] / total)
        out[tp] = min(e, start[tp] + int(math.ceil(share) if share < 1 else math.floor(share)))
    return out


def to_json(offsets: dict) -> dict:
    """{(topic, partition): offset} -> Spark's Kafka offset JSON {"topic": {"0": offset}}."""
    out: dict = {}
    for (t, p), off in sorted(offsets.items()):
        out.setdefault(t, {})[str(p)] = off
    return out


def from_json(doc: dict) -> dict:
    """Offsets from their JSON form ({topic: {partition: offset}}) to {(topic, partition): offset}."""
    return {(t, int(p)): int(off) for t, parts in doc.items() for p, off in parts.items()}
