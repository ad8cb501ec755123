"""The client models are split as Kafka's clients are (issue 32): no class over 500 lines; the
Consumer picks one membership strategy per group protocol; the range assignor and the
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


@pytest.mark.parametrize("path", sorted(CLIENTS.glob("*.py")), ids=lambda p: p.name)
def test_no_class_over_500_lines(path):
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.ClassDef):
            assert node.end_lineno - node.lineno < 500, (path.name, node.name)


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
    assert consumer.range_assign is consumer_protocol.range_assign
    assert consumer.encode_assignment is consumer_protocol.encode_assignment
    assert [(m, list(r)) for m, r in consumer_protocol.range_of_topic(5, ["a", "b"])] == [("a", [0, 1, 2]),
                                                                                          ("b", [3, 4])]
    assert consumer_protocol.range_of_topic(1, ["a", "b"]) == [("a", range(0, 1))]
    assert consumer_protocol.range_of_topic(3, []) == []
