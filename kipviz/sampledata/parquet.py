"""Deterministic Parquet writing: fixed settings (schema.py) and row groups of exactly
ROW_GROUP_ROWS rows whatever the sizes of the chunks handed in, so the bytes of a file depend
only on its rows, never on how a run was chunked."""
from __future__ import annotations

import hashlib

import pyarrow as pa
import pyarrow.parquet as pq

from .files import new_file
from .schema import COMPRESSION, COMPRESSION_LEVEL, DICTIONARY, ROW_GROUP_ROWS, SCHEMAS


def record_batch(schema: pa.Schema, columns: dict) -> pa.RecordBatch:
    """Columns ({name: list or Arrow array}, every field of `schema` present) as one record batch."""
    return pa.RecordBatch.from_arrays(
        [a if isinstance(a, pa.Array) else pa.array(a, type=f.type)
         for a, f in zip((columns[f.name] for f in schema), schema, strict=True)], schema=schema)


class TableWriter:
    """Rows of one dataset kind ("topic", "batch", "request", "event") into one new Parquet file
    (kipviz.sampledata.files.new_file: never an existing file or a link)."""

    def __init__(self, path, kind: str, private: bool = False):
        self.path = path
        self.kind = kind
        self.schema = SCHEMAS[kind]
        self.group = ROW_GROUP_ROWS[kind]
        self.rows = 0
        self._pending: list[pa.RecordBatch] = []
        self._pending_rows = 0
        self._file = new_file(path, private)
        self._writer = pq.ParquetWriter(
            self._file, self.schema, compression=COMPRESSION, compression_level=COMPRESSION_LEVEL,
            use_dictionary=DICTIONARY[kind], write_statistics=True, store_schema=True, version="2.6",
            data_page_version="1.0")

    def write_columns(self, columns: dict) -> None:
        """Append rows given column-wise ({name: list or Arrow array}, every column present)."""
        if len(columns[self.schema[0].name]):
            self.write_batch(record_batch(self.schema, columns))

    def write_batch(self, batch: pa.RecordBatch) -> None:
        """Queue a record batch (written in row groups of the writer's size)."""
        if not batch.num_rows:
            return
        self._pending.append(batch)
        self._pending_rows += batch.num_rows
        self.rows += batch.num_rows
        while self._pending_rows >= self.group:
            self._flush(self.group)

    def _flush(self, n: int) -> None:
        table = pa.Table.from_batches(self._pending, schema=self.schema)
        head, rest = table.slice(0, n), table.slice(n)
        self._writer.write_table(head.combine_chunks(), row_group_size=n)
        self._pending = rest.combine_chunks().to_batches() if rest.num_rows else []
        self._pending_rows = rest.num_rows

    def close(self) -> int:
        """Write what is queued and finish the file; the rows written."""
        if self._pending_rows:
            self._flush(self._pending_rows)
        self._writer.close()
        self._file.close()
        return self.rows


def sha256(path) -> str:
    """The SHA-256 of a file, as hex."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
