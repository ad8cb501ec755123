"""Record the bundled captures of two classic client mistakes, real clients against `kipviz serve`.

    python tools/make_mistake_captures.py OUT_DIR [--port N]   (zombie_producer.pcap, late_commit.pcap)

- zombie_producer.pcap: a transactional librdkafka producer ("writer-old") keeps writing after a
  second instance with the same transactional.id ("writer-new") started: InitProducerId bumps
  the epoch and aborts the old transaction, the old instance's next Produce is answered
  INVALID_PRODUCER_EPOCH and it is fenced (TransactionManager: a fatal error), the new one commits.
- late_commit.pcap: a librdkafka group consumer ("billing-a") processes its records for longer
  than max.poll.interval.ms, so it leaves the group and "billing-b" takes its partitions; its
  commit afterwards is answered UNKNOWN_MEMBER_ID (the group coordinator's
  ClassicGroup.validateOffsetCommit), and the records it processed are read again by billing-b.

The broker listens on 9092 (or --port), so `kipviz explain FILE` reads them with its default port. The
clients' timing makes each recording differ a little from the last; what the learner finds does not.
"""
from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PORT = 9092
BOOT = f"127.0.0.1:{PORT}"


def _use_port(port: int) -> None:
    global PORT, BOOT
    PORT, BOOT = port, f"127.0.0.1:{port}"


@contextmanager
def served(folder: Path):
    """`kipviz serve --record folder` on 127.0.0.1:9092 for the block; stopped (SIGINT) after it."""
    srv = subprocess.Popen([sys.executable, "-m", "kipviz.cli", "serve", "--port", str(PORT), "--seed", "7",
                            "--record", str(folder)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           start_new_session=True, cwd=ROOT)
    try:
        line = srv.stdout.readline()
        if "bootstrap.servers" not in line:
            raise SystemExit(f"kipviz serve did not start on port {PORT}: {srv.stderr.read().strip()[-200:]}")
        yield
    finally:
        srv.send_signal(signal.SIGINT)
        try:
            srv.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            srv.kill()
            srv.wait(10)


def zombie_producer() -> None:
    from confluent_kafka import KafkaException, Producer
    conf = {"bootstrap.servers": BOOT, "transactional.id": "orders-writer"}
    old = Producer({**conf, "client.id": "writer-old"})
    old.init_transactions(10)
    old.begin_transaction()
    old.produce("orders", key=b"o1", value=b"order 1")
    old.flush(10)
    new = Producer({**conf, "client.id": "writer-new"})       # a restart while the old instance lives on
    new.init_transactions(10)
    try:
        old.produce("orders", key=b"o2", value=b"order 2")
        old.flush(10)
        old.commit_transaction(10)
    except KafkaException as e:
        if not e.args[0].fatal():
            raise
    else:
        raise SystemExit("the old producer was not fenced")
    new.begin_transaction()
    new.produce("orders", key=b"o1", value=b"order 1")
    new.commit_transaction(10)


def late_commit() -> None:
    from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": BOOT})
    admin.create_topics([NewTopic("invoices", 2, 1)])["invoices"].result(10)
    p = Producer({"bootstrap.servers": BOOT, "client.id": "invoicing"})
    for i in range(20):
        p.produce("invoices", key=b"k%d" % i, value=b"invoice %d" % i, partition=i % 2)
    p.flush(10)
    conf = {"bootstrap.servers": BOOT, "group.id": "billing", "enable.auto.commit": False,
            "auto.offset.reset": "earliest", "session.timeout.ms": 6000, "max.poll.interval.ms": 6000}
    a = Consumer({**conf, "client.id": "billing-a"})
    a.subscribe(["invoices"])
    got, end = [], time.time() + 15
    while time.time() < end and len(got) < 20:
        m = a.poll(0.5)
        if m is not None and not m.error():
            got.append(m)
    b = Consumer({**conf, "client.id": "billing-b"})
    b.subscribe(["invoices"])
    for _ in range(18):            # billing-a "processes" past max.poll.interval.ms; billing-b takes over
        b.poll(0.5)
    try:
        a.commit(offsets=[TopicPartition("invoices", q, max(m.offset() for m in got if m.partition() == q) + 1)
                          for q in (0, 1)], asynchronous=False)
    except KafkaException:
        pass
    else:
        raise SystemExit("the late commit was accepted")
    for _ in range(6):
        b.poll(0.5)
    a.close()
    b.close()


def main() -> int:
    args = sys.argv[1:]
    if len(args) not in (1, 3) or (len(args) == 3 and (args[1] != "--port" or not args[2].isdigit())):
        print("usage: " + __doc__.strip().splitlines()[2].strip())
        return 2
    if len(args) == 3:
        _use_port(int(args[2]))
    out = Path(args[0])
    out.mkdir(parents=True, exist_ok=True)
    for name, run in (("zombie_producer", zombie_producer), ("late_commit", late_commit)):
        with tempfile.TemporaryDirectory() as tmp:
            rec = Path(tmp) / "rec"
            with served(rec):
                run()
            shutil.copyfile(rec / "traffic.pcap", out / f"{name}.pcap")
        print(f"wrote {out / name}.pcap")
    return 0


if __name__ == "__main__":
    sys.exit(main())
