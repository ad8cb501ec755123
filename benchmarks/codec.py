"""kipviz codec benchmark: encode/decode/annotate throughput against kafka-python and kio.

    python benchmarks/codec.py            (or: make bench)
    python benchmarks/codec.py --quick    (shorter runs, noisier numbers)

Messages (the same values go through every library; their bytes are checked to be identical):
  TxnOffsetCommitRequest v5   10 topics x 10 partitions
  OffsetCommitRequest v9      10 topics x 10 partitions
  MetadataResponse v12        3 brokers, 100 topics x 10 partitions, replicas/ISR of 3 brokers

Each number is the median of 5 runs. Ratios are kipviz speed / peer speed (higher is better for
kipviz), except "annotate/decode", which is a cost ratio (lower is better).
Targets: encode >= 5x kafka-python, decode >= 3x kafka-python, annotate <= 3x kipviz decode."""
from __future__ import annotations

import argparse
import gc
import io
import os
import platform
import statistics
import sys
import time
import uuid

from kipviz import codec

RUNS = 5
TARGET_ENCODE = 5.0      # kipviz encode at least this many times kafka-python's speed
TARGET_DECODE = 3.0      # kipviz decode at least this many times kafka-python's speed
TARGET_ANNOTATE = 3.0    # kipviz annotate at most this many times kipviz decode's cost


# ---- the messages ---------------------------------------------------------------------------------
def txn_offset_commit() -> dict:
    return {
        "TransactionalId": "payments-processor-0", "GroupId": "payments-consumers",
        "ProducerId": 4242, "ProducerEpoch": 7, "GenerationIdOrMemberEpoch": 12,
        "MemberId": "consumer-payments-1-5f1c2a9e", "GroupInstanceId": None,
        "Topics": [{"Name": f"topic-{t}", "Partitions": [
            {"PartitionIndex": p, "CommittedOffset": 1_000_000 + 1000 * t + p,
             "CommittedLeaderEpoch": 5, "CommittedMetadata": ""} for p in range(10)]}
            for t in range(10)],
    }


def offset_commit() -> dict:
    return {
        "GroupId": "payments-consumers", "GenerationIdOrMemberEpoch": 12,
        "MemberId": "consumer-payments-1-5f1c2a9e", "GroupInstanceId": None,
        "Topics": [{"Name": f"topic-{t}", "Partitions": [
            {"PartitionIndex": p, "CommittedOffset": 1_000_000 + 1000 * t + p,
             "CommittedLeaderEpoch": 5, "CommittedMetadata": ""} for p in range(10)]}
            for t in range(10)],
    }


def metadata_response() -> dict:
    brokers = [1, 2, 3]
    return {
        "ThrottleTimeMs": 0,
        "Brokers": [{"NodeId": b, "Host": f"broker-{b}.kafka.internal", "Port": 9092, "Rack": f"rack-{b}"}
                    for b in brokers],
        "ClusterId": "5L6g3nShT-eMCtK--X86sw", "ControllerId": 1,
        "Topics": [{
            "ErrorCode": 0, "Name": f"topic-{t}", "TopicId": uuid.UUID(int=(t + 1) * 0x9E3779B97F4A7C15),
            "IsInternal": False,
            "Partitions": [{
                "ErrorCode": 0, "PartitionIndex": p, "LeaderId": brokers[(t + p) % 3], "LeaderEpoch": 3,
                "ReplicaNodes": [brokers[(t + p + i) % 3] for i in range(3)],
                "IsrNodes": [brokers[(t + p + i) % 3] for i in range(3)],
                "OfflineReplicas": []} for p in range(10)],
            "TopicAuthorizedOperations": -2147483648} for t in range(100)],
    }


CASES = [
    # label, kipviz name, version, value, kafka-python class, kio module
    ("TxnOffsetCommit v5 10x10", "TxnOffsetCommitRequest", 5, txn_offset_commit,
     ("kafka.protocol.producer.transaction", "TxnOffsetCommitRequest"),
     ("kio.schema.txn_offset_commit.v5.request", "TxnOffsetCommitRequest")),
    ("OffsetCommit v9 10x10", "OffsetCommitRequest", 9, offset_commit,
     ("kafka.protocol.consumer.group", "OffsetCommitRequest"),
     ("kio.schema.offset_commit.v9.request", "OffsetCommitRequest")),
    ("Metadata v12 100x10", "MetadataResponse", 12, metadata_response,
     ("kafka.protocol.metadata.metadata", "MetadataResponse"),
     ("kio.schema.metadata.v12.response", "MetadataResponse")),
]


# ---- peers ------------------------------------------------------------------------------------------
def _import(module: str, name: str):
    mod = __import__(module, fromlist=[name])
    return getattr(mod, name)


def _kp_value(cls, f, x):
    """A kipviz value as kafka-python wants it for field f of data class cls."""
    if f.is_struct_array():
        return None if x is None else [_kp_struct(getattr(cls, f.type_str), e) for e in x]
    if f.is_struct():
        return None if x is None else _kp_struct(getattr(cls, f.type_str), x)
    if f._json.get("type") == "bitfield":          # kafka-python: a set of bit numbers, None for INT32_MIN
        if x == -2147483648:
            return None
        return {i for i in range(32) if x >> i & 1}
    return x


def _kp_key(f, value: dict):
    json_name = f._json["name"]
    if json_name in value:
        return json_name
    if json_name == "authorized_operations":
        keys = [k for k in value if k.endswith("AuthorizedOperations")]
    else:                                           # renamed fields: GenerationId -> GenerationIdOrMemberEpoch
        keys = [k for k in value if k.startswith(json_name)]
    if len(keys) != 1:
        raise KeyError(f"no kipviz field for kafka-python's {json_name}")
    return keys[0]


def _kp_struct(cls, value: dict, version: int | None = None):
    kw = {}
    for f in cls._struct._fields:
        if version is not None and not f.for_version_q(version):
            continue
        try:
            key = _kp_key(f, value)
        except KeyError:
            if version is None:                     # nested struct: fields of other versions
                continue
            raise
        kw[f.name] = _kp_value(cls, f, value[key])
    return cls(**kw) if version is None else cls[version](**kw)


class KafkaPython:
    name = "kafka-python"

    def __init__(self, spec, version, value, wire):
        cls = _import(*spec)
        obj = _kp_struct(cls, value, version)
        if obj.encode(version=version) != wire:
            raise AssertionError("kafka-python's bytes differ from kipviz's")
        self.encode = lambda: obj.encode(version=version)
        self.decode = lambda: cls.decode(wire, version=version)
        if self.decode() != obj:
            raise AssertionError("kafka-python decodes kipviz's bytes to a different message")


class Kio:
    name = "kio"

    def __init__(self, spec, version, value, wire):
        from kio.serial import entity_reader, entity_writer
        cls = _import(*spec)
        read, write = entity_reader(cls), entity_writer(cls)
        entity, size = read(wire, 0)
        if size != len(wire):
            raise AssertionError("kio read a different length")

        def encode():
            out = io.BytesIO()
            write(out, entity)
            return out.getvalue()
        if encode() != wire:
            raise AssertionError("kio's bytes differ from kipviz's")
        self.encode = encode
        self.decode = lambda: read(wire, 0)


# ---- timing -----------------------------------------------------------------------------------------
def _calibrate(fn, budget: float) -> int:
    """Calls per run so that one run takes about `budget` seconds."""
    fn()
    n = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        t = time.perf_counter() - t0
        if t >= budget / 5:
            return max(1, int(n * budget / t))
        n *= 2


def measure(fns: dict, budget: float, gc_on: bool = True) -> dict:
    """Seconds per call for each function: the median of RUNS runs. The runs of the different
    libraries are interleaved, so a change in machine load hits all of them alike."""
    counts = {k: _calibrate(fn, budget) for k, fn in fns.items()}
    times: dict = {k: [] for k in fns}
    was_on = gc.isenabled()
    try:
        for _ in range(RUNS):
            for k, fn in fns.items():
                n = counts[k]
                gc.collect()
                gc.enable() if gc_on else gc.disable()
                t0 = time.perf_counter()
                for _ in range(n):
                    fn()
                times[k].append((time.perf_counter() - t0) / n)
    finally:
        gc.enable() if was_on else gc.disable()
    return {k: statistics.median(v) for k, v in times.items()}


def kipviz_ops(name: str, version: int, value: dict, wire: bytes) -> dict:
    ops = {"encode": lambda: codec.encode(name, version, value),
           "decode": lambda: codec.decode(name, version, wire)}
    if name == "TxnOffsetCommitRequest":
        ops["annotate"] = lambda: codec.annotate(name, version, wire)
    return ops


def fmt_rate(sec: float | None, size: int) -> str:
    if sec is None:
        return f"{'n/a':>26}"
    return f"{1 / sec:>9,.0f} {size / sec / 1e6:>7.1f} {sec * 1e6:>8.1f}"


def fmt_ratio(x: float | None) -> str:
    return f"{'n/a':>8}" if x is None else f"{x:>7.2f}x"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="shorter runs (noisier)")
    ap.add_argument("--gc", choices=("on", "off"), default="on",
                    help="garbage collector during the timed loops (off: like timeit; default on)")
    ap.add_argument("--strict", action="store_true", help="exit with status 1 when a target is missed")
    args = ap.parse_args(argv)
    budget = 0.05 if args.quick else 0.25

    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"kipviz codec benchmark - Python {platform.python_version()} on {platform.machine()}, "
          f"{os.cpu_count()} CPUs, load {load:.2f}; median of {RUNS} interleaved runs, GC {args.gc}; "
          f"msg/s, MB/s, us/msg")
    head = (f"{'message':<26}{'op':<9}{'bytes':>7} | {'kipviz':^26} | {'kafka-python':^26} | {'kio':^26} |"
            f" {'vs k-p':>8} {'vs kio':>8}")
    print(head)
    print("-" * len(head))
    results = {}
    notes = []
    for label, name, version, make, kp_spec, kio_spec in CASES:
        value = make()
        wire = codec.encode(name, version, value)
        if codec.decode(name, version, wire) != value:
            raise SystemExit(f"{label}: kipviz does not round-trip its own bytes")
        peers = {}
        for cls, spec in ((KafkaPython, kp_spec), (Kio, kio_spec)):
            try:
                peers[cls.name] = cls(spec, version, value, wire)
            except ImportError as e:
                notes.append(f"{label}: {cls.name} n/a ({e})")
            except (AttributeError, KeyError, AssertionError, TypeError, ValueError) as e:
                notes.append(f"{label}: {cls.name} n/a ({type(e).__name__}: {e})")
        ops = kipviz_ops(name, version, value, wire)
        for op, fn in ops.items():
            fns = {"kipviz": fn}
            if op == "annotate":       # timed with decode, for the cost ratio
                fns["kipviz decode"] = ops["decode"]
            for pname in ("kafka-python", "kio"):
                peer = peers.get(pname)
                if peer is not None and hasattr(peer, op):
                    fns[pname] = getattr(peer, op)
            timed = measure(fns, budget, args.gc == "on")
            ours = timed["kipviz"]
            theirs = {p: timed.get(p) for p in ("kafka-python", "kio")}
            ratios = {p: (t / ours if t else None) for p, t in theirs.items()}
            results[(label, op)] = (ours, theirs, ratios, timed.get("kipviz decode"))
            print(f"{label:<26}{op:<9}{len(wire):>7} | {fmt_rate(ours, len(wire))} | "
                  f"{fmt_rate(theirs['kafka-python'], len(wire))} | {fmt_rate(theirs['kio'], len(wire))} |"
                  f" {fmt_ratio(ratios['kafka-python'])} {fmt_ratio(ratios['kio'])}")
            if op == "annotate":
                print(f"{'':<35}(annotate costs {ours / timed['kipviz decode']:.2f}x kipviz decode, "
                      f"{timed['kipviz decode'] * 1e6:.1f} us, timed alongside; neither peer annotates)")
    for note in notes:
        print("note:", note)

    print()
    print("targets")
    ok = True
    for label, *_ in CASES:
        for op, target in (("encode", TARGET_ENCODE), ("decode", TARGET_DECODE)):
            r = results[(label, op)][2]["kafka-python"]
            if r is None:
                print(f"  n/a   {op} >= {target:g}x kafka-python  {label}: kafka-python unavailable")
                continue
            verdict = "PASS" if r >= target else "MISS"
            ok &= verdict == "PASS"
            print(f"  {verdict}  {op} >= {target:g}x kafka-python  {label}: {r:.2f}x")
    label = CASES[0][0]
    ann, *_, dec = results[(label, "annotate")]
    cost = ann / dec
    verdict = "PASS" if cost <= TARGET_ANNOTATE else "MISS"
    ok &= verdict == "PASS"
    print(f"  {verdict}  annotate <= {TARGET_ANNOTATE:g}x kipviz decode  {label}: {cost:.2f}x")
    return 1 if args.strict and not ok else 0


if __name__ == "__main__":
    sys.exit(main())
