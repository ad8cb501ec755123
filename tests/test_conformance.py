"""Kit definitions match real Kafka's schema files at every version both have.

The reference files live in ../shared/kafka (always present in CI); in a clone without them
these tests skip and say so."""
from __future__ import annotations

import pytest

from kipviz.schema import registry
from kipviz.schema.check import check_spec, reference_root, references
from kipviz.schema.loader import load_dir

ROOT = reference_root()
pytestmark = pytest.mark.skipif(ROOT is None, reason="Kafka reference schemas (../shared/kafka) not found; "
                                "set KIPVIZ_KAFKA_REF to check conformance")


@pytest.fixture(scope="module")
def refs():
    return references()


@pytest.mark.parametrize("name", sorted(registry.messages()))
def test_kit_definition_matches_kafka(name, refs):
    assert check_spec(registry.get(name), refs) == []


def test_every_reference_version_of_kit_messages_is_covered(refs):
    """A kit definition never drops a version real Kafka has."""
    for d, specs in refs.items():
        for name, ref in specs.items():
            if name in registry.messages():
                kit = registry.get(name)
                missing = [v for v in ref.versions if v not in kit.valid]
                assert not missing, f"{name}: versions {missing} of {d} missing"


def test_official_directories_load_completely():
    for d in ("message-2024-10", "message-4.3", "records"):
        assert len(load_dir(ROOT / d)) >= 20


def test_renames_are_recorded_as_aliases(refs):
    """Field names match Kafka's except where a KIP renamed one (then the old name is an alias)."""
    spec = registry.get("TxnOffsetCommitRequest")
    field = spec.field_at("GenerationIdOrMemberEpoch")
    assert refs["message-4.3"]["TxnOffsetCommitRequest"].field_at("GenerationId").versions == field.versions
