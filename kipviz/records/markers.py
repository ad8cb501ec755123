"""Transaction marker batches: a control record (kipviz.records.control) written in a batch
(kipviz.records.batch), the one module that needs both layouts."""
from __future__ import annotations

from ..errors import EncodeError
from .batch import write_batch
from .control import CONTROL_TYPES, END_TXN_TYPES, control_key, control_type_id, end_txn_marker_value


def write_control_batch(marker: str | int = "COMMIT", producer_id: int = -1, producer_epoch: int = -1,
                        coordinator_epoch: int = 0, base_offset: int = 0, timestamp: int = 0,
                        partition_leader_epoch: int = -1, timestamp_type="CreateTime") -> bytes:
    """A transaction marker batch exactly as MemoryRecords.writeEndTransactionalMarker builds it:
    transactional + control, uncompressed, one record (key 4 bytes, value 6 bytes), BaseSequence -1."""
    tid = control_type_id(marker)
    if CONTROL_TYPES.get(tid) not in END_TXN_TYPES:
        raise EncodeError(f"write_control_batch writes COMMIT or ABORT markers, not {marker!r}", "marker")
    record = {"key": control_key(tid), "value": end_txn_marker_value(coordinator_epoch),
              "headers": [], "timestamp": timestamp, "offset_delta": 0}
    return write_batch([record], base_offset=base_offset, partition_leader_epoch=partition_leader_epoch,
                       compression="none", timestamp_type=timestamp_type, is_transactional=True,
                       is_control=True, producer_id=producer_id, producer_epoch=producer_epoch,
                       base_sequence=-1, base_timestamp=timestamp, max_timestamp=timestamp)
