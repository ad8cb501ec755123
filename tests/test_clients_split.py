"""The client models are split as Kafka's clients are (issue 32; no class over 500 lines is
tests/test_class_size.py): the Consumer picks one membership strategy per group protocol; the range assignor and the
ConsumerProtocol bytes have one home below both the broker and the clients."""
import ast
from pathlib import Path

import pytest

from kipviz.broker import Cluster
from kipviz.clients import Consumer, Producer, consumer
from kipviz.clients.membership_classic import ClassicMembership
from kipviz.clients.membership_consumer import ConsumerGroupMembership
from kipviz.records import consumer_protocol

CLIENTS = Path(consumer.__file__).parent


@pytest.mark.parametrize(("protocol", "strategy"), [("consumer", ConsumerGroupMembership),
                                                    ("classic", ClassicMembership)])
def test_the_consumer_holds_one_membership_per_protocol(protocol, strategy):
    c = Consumer(Cluster(), "g", protocol=protocol)
    assert type(c.membership) is strategy and c.offsets.consumer is c and c.fetcher.consumer is c
    assert c.held_requests == []


def test_the_producer_holds_its_transaction_manager():
    p = Producer(Cluster(), "tx")
    assert p.transactions.producer is p and p.share_acks.producer is p and not p.transactions.started


def test_one_range_assignor_and_protocol_codec():
    # no other module of the package defines an assignor or the ConsumerProtocol codec again
    names = {"range_assign", "range_of_topic", "encode_assignment", "decode_assignment", "encode_subscription",
             "decode_subscription"}
    home = Path(consumer_protocol.__file__)
    again = [f"{p.name}:{n.name}" for p in sorted(home.parents[1].rglob("*.py")) if p != home
             for n in ast.walk(ast.parse(p.read_text())) if isinstance(n, ast.FunctionDef) and n.name in names]
    assert again == []
    assert [(m, list(r)) for m, r in consumer_protocol.range_of_topic(5, ["a", "b"])] == [("a", [0, 1, 2]),
                                                                                          ("b", [3, 4])]
    assert consumer_protocol.range_of_topic(1, ["a", "b"]) == [("a", range(0, 1))]
    assert consumer_protocol.range_of_topic(3, []) == []
