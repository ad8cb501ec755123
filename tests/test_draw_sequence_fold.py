"""Sequence diagrams a learner can follow: errors placed on their topic-partitions, set-up and
repeated exchanges folded (unfolded on request), members named as their lanes."""
import re

from kipviz import scenarios
from kipviz.draw.sequence import error_places, member_names, sequence_diagram, sequence_svg
from kipviz.schema.events import ResponseSent


def _text(svg: str) -> str:
    return re.sub(r"<title>.*?</title>", "", svg, flags=re.S)


def test_each_error_is_placed_on_its_topic_partitions():
    t = scenarios.run("kip1319.error_order_v6")
    (v6,) = [e for e in t.events if isinstance(e, ResponseSent) and e.version == 6 and e.error_codes]
    ids = {name: tid[:8] for name, tid in t.result["ids"].items()}
    assert error_places(v6.body) == [(f"{ids['secret (deleted)']}…-0,1", 100), (f"{ids['secret']}…-0,9", 29),
                                     (f"{ids['orders']}…-7", 3)]
    (v5,) = [e for e in t.events if isinstance(e, ResponseSent) and e.version == 5 and e.error_codes]
    assert ("orders-7", 3) in error_places(v5.body) and ("hidden-0", 29) in error_places(v5.body)
    svg = _text(sequence_svg(t))
    # the place and its error, on one line or wrapped onto the next (narrow lanes)
    assert re.search(re.escape(f"{ids['secret']}…-0,9:") + r"(\s|</text><text[^>]*>)TOPIC_AUTHORIZATION_FAILED", svg)
    assert "UNKNOWN_TOPIC_ID, TOPIC_AUTHORIZATION_FAILED" not in svg      # no longer one arrow's list


def test_a_response_error_without_a_topic_stays_on_the_arrow():
    assert error_places({"ErrorCode": 35, "ApiKeys": []}) == []
    assert error_places({"ErrorCode": 0, "Topics": [{"Name": "a", "Partitions": [{"PartitionIndex": 0,
                                                                                   "ErrorCode": 0}]}]}) == []


def test_set_up_and_repeated_exchanges_fold_by_default_and_unfold_on_request():
    t = scenarios.run("kip1289.happy_commit")
    folded, full = sequence_svg(t), sequence_svg(t, fold=False)
    assert full == sequence_diagram(t.events, title=t.scenario.title)        # the library default draws all
    n_folded, n_full = folded.count('class="kv-req"'), full.count('class="kv-req"')
    assert n_folded < n_full * 0.7
    assert "set-up folded:" in folded and "set-up folded" not in full
    assert re.search(r"… \d+ more Produce v\d+ exchanges of loader folded", folded)
    # nothing with an error is ever folded
    assert folded.count("kv-error") == full.count("kv-error")
    h = [int(re.search(r'height="(\d+)"', s).group(1)) for s in (folded, full)]
    assert h[0] < h[1]


def test_member_ids_in_notes_are_the_lane_names():
    t = scenarios.run("kip1319.stale_member_epoch_v6")
    names = member_names(t.events)
    assert set(names.values()) == {"consumer-1", "consumer-2"}
    text = _text(sequence_svg(t, fold=False))
    assert not any(mid in text for mid in names)
    assert "member cg/consumer-2" in text


def test_a_group_forming_folds_into_one_band_on_request():
    """Issue 31: 05's stale-member-epoch diagram ran to 133 events, most of them the group forming."""
    t = scenarios.run("kip1319.stale_member_epoch_v6")
    folded = sequence_svg(t, fold_groups=True)
    assert sequence_svg(t) == sequence_svg(t, fold_groups=False)                # off unless asked
    assert "group membership folded: 4× ConsumerGroupHeartbeat of consumer-1, consumer-2" in folded
    heads = set(re.findall(r'<g class="kv-head kv-client"><title>([^<]*)</title>', folded))
    assert heads == {"producer"}                                     # the consumers only heartbeat: no lanes
    assert "TxnOffsetCommit v6" in folded and "STALE_MEMBER_EPOCH" in folded      # the case itself stays
    assert folded.count('class="kv-req"') < sequence_svg(t).count('class="kv-req"') - 3


def test_lane_titles_wrap_at_spaces_and_hyphens_never_inside_a_word():
    from kipviz.draw.sequence import _head_parts, wrap_name
    assert [p[0] for p in _head_parts("enricher-consumer", 86)] == ["enricher-", "consumer"]
    assert [p[0] for p in _head_parts("reader-uncommitted", 86)] == ["reader-", "uncommitted"]   # a size smaller
    # a word longer than the lane: cut with a hyphen added, never silently
    assert wrap_name("averyveryverylongclientid", 60, 10) == ["averyvery-", "verylongc-", "lientid"]
