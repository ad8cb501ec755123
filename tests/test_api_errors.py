"""The per-version error table (kipviz.broker.api_errors) against two judges: what the model's own
handlers answer in every scenario, and what Kafka 4.3's response schemas say each version adds."""
from __future__ import annotations

import re

import pytest

from kipviz import scenarios
from kipviz.broker.api_errors import ERROR_ROWS, errors_by_version
from kipviz.broker.error_codes import ERRORS, name_of
from kipviz.broker.events import ResponseSent
from kipviz.schema.check import reference_root

# "Version 4 adds the support for new error code PRODUCER_FENCED." / "Starting in version 6, we may
# return KAFKA_STORAGE_ERROR" / "Version 4 added KAFKA_STORAGE_ERROR as a possible error code." /
# "Version 13 replaces topic names with topic IDs (KIP-516). May return UNKNOWN_TOPIC_ID error code."
_SAYS = re.compile(r"[Vv]ersion (\d+)[^.\n]*?(?:error code|may return|added|May return) ([A-Z][A-Z_]{5,})"
                   r"|[Vv]ersion (\d+)[^\n]*?May return ([A-Z][A-Z_]{5,})")


def first_versions(api: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for name, lo, _hi, _src in ERROR_ROWS[api]:
        out[name] = min(lo, out.get(name, lo))
    return out


def test_every_error_a_scenario_answers_is_declared_for_its_version():
    undeclared = {}
    for c in scenarios.catalog():
        for e in scenarios.run(c["name"]).events:
            if isinstance(e, ResponseSent) and e.api in ERROR_ROWS and e.error_codes:
                declared = set(errors_by_version(e.api).get(e.version, ()))
                for code in e.error_codes:
                    if name_of(code) != "NONE" and name_of(code) not in declared:
                        undeclared.setdefault((e.api, e.version, name_of(code)), c["name"])
    assert not undeclared, undeclared


# the reference snapshot carries no share-group schemas (ShareFetch/ShareAcknowledge) and
# TxnShareAcknowledge is proposed: their rows are checked by the scenario test above only
@pytest.mark.parametrize("api", [a for a in ERROR_ROWS if not a.startswith(("Share", "TxnShare"))])
def test_the_version_that_adds_an_error_matches_kafkas_schema_comment(api):
    ref = reference_root()
    path = ref / "message-4.3" / f"{api}Response.json" if ref else None
    if path is None or not path.is_file():
        pytest.skip(f"needs Kafka 4.3's {api}Response.json under ../shared/kafka (absent here)")
    said = {}
    for line in path.read_text().splitlines():
        if not line.strip().startswith("//"):
            continue
        for m in _SAYS.finditer(line):
            v, name = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
            if name in ERRORS:
                said.setdefault(name, int(v))
    assert said, f"no error comment parsed in {path.name}"
    ours = first_versions(api)
    wrong = {n: (ours.get(n), v) for n, v in said.items() if ours.get(n) != v}
    assert not wrong, f"{api}: error -> (kit's first version, Kafka's comment): {wrong}"
