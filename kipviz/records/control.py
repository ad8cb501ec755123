"""Control records: the COMMIT / ABORT markers a transaction coordinator writes (and KRaft's own).

A control batch has the transactional and control attribute bits set and holds control records
whose key is always 4 bytes:

    key   = version int16 (0) + type int16      ABORT=0, COMMIT=1, LEADER_CHANGE=2,
                                                SNAPSHOT_HEADER=3, SNAPSHOT_FOOTER=4,
                                                KRAFT_VERSION=5, KRAFT_VOTERS=6
    value = version int16 (0) + coordinator_epoch int32        (COMMIT / ABORT: 6 bytes)

(`ControlRecordType.java`, `EndTransactionMarker.java`; `MemoryRecords.writeEndTransactionalMarker`
writes the batch: transactional + control, uncompressed, one record, BaseSequence -1 --
kipviz.records.markers.write_control_batch, above both this module and the batch layout.)
"""
from __future__ import annotations

import struct

from ..errors import DecodeError, EncodeError

CONTROL_TYPES = {0: "ABORT", 1: "COMMIT", 2: "LEADER_CHANGE", 3: "SNAPSHOT_HEADER",
                 4: "SNAPSHOT_FOOTER", 5: "KRAFT_VERSION", 6: "KRAFT_VOTERS"}
CONTROL_TYPE_IDS = {name: tid for tid, name in CONTROL_TYPES.items()}
END_TXN_TYPES = ("ABORT", "COMMIT")
_KEY = struct.Struct(">hh")
_END_TXN = struct.Struct(">hi")


def control_key(marker: str | int, version: int = 0) -> bytes:
    """The 4-byte control record key: version int16 + type int16."""
    tid = control_type_id(marker)
    return _KEY.pack(version, tid)


def end_txn_marker_value(coordinator_epoch: int, version: int = 0) -> bytes:
    """The 6-byte value of a COMMIT/ABORT marker: version int16 + coordinator_epoch int32."""
    if not isinstance(coordinator_epoch, int) or not -2**31 <= coordinator_epoch < 2**31:
        raise EncodeError(f"coordinator_epoch must be an int32, got {coordinator_epoch!r}",
                          "coordinator_epoch")
    return _END_TXN.pack(version, coordinator_epoch)


def control_type_id(marker) -> int:
    """A control record type's id from its name ("COMMIT", any case) or an int16 id; EncodeError otherwise."""
    if isinstance(marker, str) and marker.upper() in CONTROL_TYPE_IDS:
        return CONTROL_TYPE_IDS[marker.upper()]
    if isinstance(marker, int) and not isinstance(marker, bool) and -2**15 <= marker < 2**15:
        return marker
    raise EncodeError(f"unknown control record type {marker!r} "
                      f"(one of {', '.join(CONTROL_TYPE_IDS)})", "marker")


def parse_control(key, value, offset: int = 0, path: str = "") -> dict:
    """{"type": "COMMIT", "type_id": 1, "version": 0, "coordinator_epoch": 5, "value_version": 0}.

    `coordinator_epoch` and `value_version` are None for control types other than COMMIT/ABORT
    (their values are KRaft messages of their own). Malformed keys and markers raise DecodeError,
    as Kafka's InvalidRecordException does."""
    if key is None or len(key) < 4:
        raise DecodeError(f"control record key must be 4 bytes (version int16 + type int16), "
                          f"got {'null' if key is None else len(key)}", offset, path + ".key")
    version, tid = _KEY.unpack_from(key)
    if version < 0:
        raise DecodeError(f"negative control record key version {version}", offset, path + ".key")
    name = CONTROL_TYPES.get(tid, "UNKNOWN")
    out = {"type": name, "type_id": tid, "version": version, "coordinator_epoch": None,
           "value_version": None}
    if name in END_TXN_TYPES:
        if value is None or len(value) < 6:
            raise DecodeError(f"{name} marker value must be 6 bytes (version int16 + "
                              f"coordinator_epoch int32), got {'null' if value is None else len(value)}",
                              offset, path + ".value")
        vv, epoch = _END_TXN.unpack_from(value)
        if vv < 0:
            raise DecodeError(f"negative end-transaction marker version {vv}", offset, path + ".value")
        out["value_version"] = vv
        out["coordinator_epoch"] = epoch
    return out


def control_type_name(marker) -> str | None:
    """A control record's type name from its key bytes (4 bytes: version int16 + type int16), its
    type id or its name: "COMMIT", "ABORT", ... ("control type N" for an id ControlRecordType.java
    does not define); None when `marker` is none of these (a key shorter than 4 bytes)."""
    if isinstance(marker, str):
        return marker.upper()
    if isinstance(marker, (bytes, bytearray, memoryview)):
        if len(marker) < _KEY.size:
            return None
        marker = _KEY.unpack_from(bytes(marker))[1]
    if isinstance(marker, int) and not isinstance(marker, bool):
        return CONTROL_TYPES.get(marker, f"control type {marker}")
    return None
