"""Official Kafka schema directories drive the same codec; Kafka's Uuid text form."""
from __future__ import annotations

import random

import pytest

from kipviz import codec, uuids
from kipviz.schema.check import reference_root
from kipviz.schema.loader import load_dir

from .test_codec_golden import SEED_BODY, SEED_EXAMPLE

ROOT = reference_root()


@pytest.mark.skipif(ROOT is None, reason="Kafka reference schemas (../shared/kafka) not found")
def test_official_directory_specs_encode_like_the_kit():
    official = load_dir(ROOT / "message-4.3")
    spec = official["TxnOffsetCommitRequest"]
    value = dict(SEED_EXAMPLE)
    assert codec.encode(spec, 5, value) == SEED_BODY
    assert codec.decode(spec, 5, SEED_BODY)["GenerationId"] == 5     # Kafka's own field name
    # an API the kit does not define, straight from Kafka's files
    dg = official["DeleteGroupsRequest"]
    body = codec.encode(dg, 2, {"GroupsNames": ["a", "bb"]})
    assert codec.decode(dg, 2, body) == {"GroupsNames": ["a", "bb"]}


def test_uuid_text_form_and_reserved_values():
    assert uuids.to_kafka_str(uuids.ZERO_UUID) == "AAAAAAAAAAAAAAAAAAAAAA"
    assert uuids.to_kafka_str(uuids.ONE_UUID) == "AAAAAAAAAAAAAAAAAAAAAQ"
    assert uuids.METADATA_TOPIC_ID == uuids.ONE_UUID
    rng = random.Random(7)
    for _ in range(2000):
        u = uuids.random_uuid(rng)
        s = uuids.to_kafka_str(u)
        assert len(s) == 22 and not s.startswith("-") and u not in uuids.RESERVED
        assert uuids.from_kafka_str(s) == u
    for bad in ("", "abc", "A" * 25, "!!!!!!!!!!!!!!!!!!!!!!"):
        with pytest.raises(ValueError):
            uuids.from_kafka_str(bad)
