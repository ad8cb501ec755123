"""The typed events' constructors (kipviz.schema.events._slot_init): the same parameters, defaults
and frozen instances as the dataclasses declare."""
import dataclasses
import inspect
import pickle

import pytest

from kipviz.schema import events as ev

CLASSES = (ev.Event, ev.RequestReceived, ev.ResponseSent, ev.StateChanged, ev.RecordAppended, ev.TopicCreated,
           ev.TxnOffsetCommitFallback)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_signature_follows_the_fields(cls):
    params = list(inspect.signature(cls).parameters.values())
    fs = dataclasses.fields(cls)
    assert [p.name for p in params] == [f.name for f in fs]
    for p, f in zip(params, fs, strict=True):
        if f.default is not dataclasses.MISSING:
            assert p.default == f.default
        elif f.default_factory is dataclasses.MISSING:
            assert p.default is inspect.Parameter.empty


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_every_field_set_by_position_or_name_and_frozen(cls):
    fs = dataclasses.fields(cls)
    values = {f.name: f"v{i}" for i, f in enumerate(fs)}
    by_pos, by_name = cls(*values.values()), cls(**values)
    assert dataclasses.asdict(by_pos) == values == dataclasses.asdict(by_name)
    assert by_pos == by_name and hash(by_pos) == hash(by_name)
    assert pickle.loads(pickle.dumps(by_pos)) == by_pos
    with pytest.raises(dataclasses.FrozenInstanceError):
        by_pos.seq = 1


def test_a_mutable_default_is_refused():
    @dataclasses.dataclass(frozen=True, slots=True)
    class Holder(ev.Event):
        items: tuple = dataclasses.field(default_factory=tuple)
    with pytest.raises(TypeError, match="immutable default"):
        ev._slot_init(Holder)


def test_defaults():
    r = ev.RecordAppended(1, 2, "t", 0, 5, {})
    assert (r.key, r.producer_id, r.transactional, r.broker) == (None, -1, False, 0)
    assert ev.StateChanged(1, 2, "m", "k", "A", "B", "c").status == "released"
    with pytest.raises(TypeError, match="missing"):
        ev.StateChanged(1, 2)
    with pytest.raises(TypeError, match="unexpected keyword"):
        ev.TopicCreated(1, 2, "x", "id", bogus=1)
