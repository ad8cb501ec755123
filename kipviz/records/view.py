"""The decoded view of a record the event log carries (RecordAppended's `record`, `key` and
`value`): the one place that knows its field names, read by the pictures and the summaries.

    internal_view(topic, key, value, record)  -> {"record", "key", "value", "tombstone"} or None
    field(decoded_key, "TransactionalId")     -> a field of a decoded key or value
    marker_type(key, record)                  -> "COMMIT" / "ABORT" / "control"
    record_epoch(value)                       -> the epoch an internal record carries, or None

The view is kipviz.records.decode_internal's (the broker appends that view with the bytes); the
share coordinator's records carry {"type", "key", "value"} (kipviz.broker.shares); a control
marker's record carries {"type": "COMMIT", ...} (kipviz.records.control). Field names are the
record definitions' own (kipviz/defs/records/*.json), which mix camelCase ("generation") and
PascalCase ("TransactionalId"): fields are matched without regard to case."""
from __future__ import annotations

from ..schema.topics import INTERNAL_TOPICS
from .control import control_type_name
from .internal import decode_internal

__all__ = ["field", "internal_view", "marker_type", "record_epoch", "EPOCH_FIELDS"]

# the epoch each kind of coordinator record carries (ConsumerGroupMemberMetadataValue's MemberEpoch,
# ShareSnapshotValue's StateEpoch, ...), in the order they are looked for
EPOCH_FIELDS = ("MemberEpoch", "Epoch", "GroupEpoch", "AssignmentEpoch", "StateEpoch")


def field(d, *names, default=None):
    """A field of a decoded key or value by any of `names`, case-insensitively; `default` when
    `d` is not a mapping or has none of them."""
    if not isinstance(d, dict):
        return default
    low = {str(k).lower(): v for k, v in d.items()}
    for n in names:
        if n.lower() in low:
            return low[n.lower()]
    return default


def internal_view(topic: str, key, value, record) -> dict | None:
    """{"record": name, "key": {...}, "value": {...} or None, "tombstone": bool} of an appended
    record: the decoded view it carries, else its bytes decoded (an internal topic's), else the
    share coordinator's {"type", "key", "value"}; None when there is nothing to read."""
    rec = record if isinstance(record, dict) else {}
    if "record" in rec and ("key" in rec or "value" in rec):
        return rec
    if key is not None and topic in INTERNAL_TOPICS:
        try:
            return decode_internal(key, value, topic=topic)
        except Exception:  # noqa: BLE001 - a picture never fails on one odd record
            pass
    if rec:
        return {"record": field(rec, "record", "type"), "key": field(rec, "key", default=rec),
                "value": field(rec, "value"), "tombstone": bool(field(rec, "tombstone", default=False))}
    return None


def marker_type(key, record) -> str:
    """"COMMIT" / "ABORT" (or another control type) of a control record: from its record's "type",
    else from its key's bytes (kipviz.records.control); "control" when neither says."""
    t = field(record, "type")
    name = control_type_name(t) if isinstance(t, (str, int)) else None
    if name is None and key is not None:
        name = control_type_name(key)
    return name or "control"


def record_epoch(value):
    """The epoch an internal record's value carries (EPOCH_FIELDS), or None."""
    return field(value, *EPOCH_FIELDS)
