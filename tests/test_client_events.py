"""The clients' typed decisions (schema/events.py, the clients section): each class cites the Kafka
source it follows and is emitted by a client model; its `label` is the note the sequence diagram
drew for the untyped action it replaces (action word, then name=value pairs), its `text` a
sentence."""
from pathlib import Path

import pytest

from kipviz.broker import Cluster
from kipviz.clients import Consumer, Producer
from kipviz.schema import events as ev

CLIENT_CLASSES = sorted((c for c in ev.event_classes().values() if issubclass(c, ev.ClientDid)),
                        key=lambda c: c.__name__)
CLIENTS_SRC = "\n".join(p.read_text() for p in (Path(ev.__file__).parent.parent / "clients").glob("*.py"))


@pytest.mark.parametrize("cls", CLIENT_CLASSES, ids=lambda c: c.__name__)
def test_each_class_cites_its_source_has_an_action_and_is_emitted(cls):
    assert cls.ACTION and cls.__doc__ and (".java" in cls.__doc__ or "KIP-" in cls.__doc__)
    assert f"ev.{cls.__name__}," in CLIENTS_SRC or f"ev.{cls.__name__})" in CLIENTS_SRC


@pytest.mark.parametrize(("event", "label"), [
    (ev.VersionChosen(0, 0, "p", "Produce", 11, 12, 11),
     "version: api=Produce, version=11, client_max=12, broker_max=11"),
    (ev.ApiVersionsLearned(0, 0, "c", 4, None, 80), "api-versions: version=4, apis=80"),
    (ev.ApiVersionsLearned(0, 0, "p", 4, 2, 80), "api-versions: version=4, transaction_version=2, apis=80"),
    (ev.PartitionsRevoked(0, 0, "c", (("in", 0), ("in", 1)), "rejoin (eager)"),
     "revoke: partitions=[('in', 0), ('in', 1)], reason=rejoin (eager)"),
    (ev.ClientError(0, 0, "p", "UNSUPPORTED_VERSION", 35, "TxnShareAcknowledge", "UnsupportedVersionError",
                    synchronous=True, bytes_sent=0),
     "error: error=UNSUPPORTED_VERSION, code=35, api=TxnShareAcknowledge, kind=UnsupportedVersionError, "
     "synchronous=True, bytes_sent=0"),
    (ev.ProducerIdSet(0, 0, "p", 7, 1, -1, -1, "InitProducerId"),
     "producer-id: producer_id=7, producer_epoch=1, previous=(-1, -1), reason=InitProducerId"),
    (ev.Sent(0, 0, "p", "out", 0, 3, 12, None), "sent: topic=out, partition=0, offset=3, version=12"),
    (ev.Sent(0, 0, "p", "out", 0, 3, 12, 5), "sent: topic=out, partition=0, offset=3, version=12, records=5"),
    (ev.FetchFailed(0, 0, "c", None, None, "NOT_LEADER_OR_FOLLOWER"), "fetch-error: error=NOT_LEADER_OR_FOLLOWER"),
    (ev.Left(0, 0, "c", "m-1", -1, None, "NONE"), "leave: member_id=m-1, member_epoch=-1, error=NONE"),
    (ev.Committed(0, 0, "c", (("in", 0, 4),), 3), "committed: offsets={'in-0': 4}, generation=3"),
    (ev.AbortedSkipped(0, 0, "c", "in", 0, 9, 2, 4),
     "skip-aborted: topic=in, partition=0, producer_id=9, offsets=[2, 4]"),
    (ev.AssignedAsLeader(0, 0, "c", 1, "range", (("m-1", (("in", (0, 1)),)),)),
     "assign-as-leader: generation=1, assignor=range, plan={'m-1': {'in': [0, 1]}}"),
    (ev.ShareAcksSent(0, 0, "p", "sg", "m", 2, 3),
     "share-acks-sent: group_id=sg, member_id=m, member_epoch=2, records=3, status=proposed, kip=KIP-1289"),
    (ev.TxnOffsetCommitFailed(0, 0, "p", "in", 1, "UNKNOWN_TOPIC_ID", "retriable", 6),
     "txn-offset-commit-error: topic=in, partition=1, error=UNKNOWN_TOPIC_ID, kind=retriable, version=6"),
])
def test_label_is_the_old_diagram_note(event, label):
    assert event.label == label
    assert isinstance(event.text, str) and event.text and "{" not in event.text


def test_a_run_speaks_in_sentences():
    c = Cluster()
    c.create_topic("in", 2)
    p = Producer(c, "tx", client_id="p")
    p.init_transactions()
    p.begin_transaction()
    p.send("in", b"k", b"v", partition=0)
    p.commit_transaction()
    con = Consumer(c, "g", client_id="c", protocol="classic")
    con.subscribe(["in"])
    for _ in range(4):
        con.poll()
    con.commit()
    con.close()
    said = [e for e in c.events if isinstance(e, ev.ClientDid)]
    kinds = {type(e) for e in said}
    assert {ev.VersionChosen, ev.ProducerIdSet, ev.Sent, ev.TransactionEnded, ev.JoinSent, ev.AssignedAsLeader,
            ev.PositionSet, ev.Fetched, ev.Committed, ev.Left} <= kinds
    assert all(e.text and e.client in e.text for e in said)
