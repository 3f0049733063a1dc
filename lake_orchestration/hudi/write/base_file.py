"""Parquet base files with Hudi's meta columns and footer (reference/hudi/base-file.md §1, §4.4).

:class:`BaseFileWriter` streams batches into one base file (bounded memory: the bloom filter and min/max keys are
accumulated as rows arrive) and writes the footer Java Hudi expects: ``org.apache.hudi.bloomfilter`` (DYNAMIC_V0),
``hoodie_bloom_filter_type_code``, ``hoodie_min_record_key``/``hoodie_max_record_key`` (Java string order),
``parquet.avro.schema`` and ``writer.model.name``.
"""

from __future__ import annotations

import json
import queue
import threading
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from lake_orchestration.hudi.model.file_group import BaseFile
from lake_orchestration.hudi.model.instant import InstantTime
from lake_orchestration.hudi.model.schema import COMMIT_SEQNO, COMMIT_TIME, FILE_NAME, RECORD_KEY
from lake_orchestration.hudi.write.bloom_filter import HoodieBloomFilter
from lake_orchestration.io.storage import Storage


def seqnos(instant: str, task_partition_id: int, n: int, start: int = 0) -> pa.Array:
    """``_hoodie_commit_seqno`` values ``{instant}_{taskPartitionId}_{recordIndex}``."""
    idx = pa.array(np.arange(start, start + n), pa.int64()).cast(pa.string())
    return pc.binary_join_element_wise(f"{instant}_{task_partition_id}_", idx, "")


def constant_strings(value: str, n: int) -> pa.Array:
    """A string column holding ``value`` n times, built in C++ (a Python list of n strings is slow at scale)."""
    return pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, dtype=np.int32)), pa.array([value])).dictionary_decode()


def _java_key(k: str) -> bytes:
    return k.encode("utf-16-be")


def java_min_max(keys: pa.Array) -> tuple[str, str] | None:
    """Min and max record key in Java ``String.compareTo`` (UTF-16 code unit) order."""
    if keys.null_count == len(keys):
        return None
    if pc.all(pc.string_is_ascii(keys)).as_py() is not False:
        # for ASCII, Java's UTF-16 order equals Arrow's byte order: no Python objects needed
        mm = pc.min_max(keys)
        return mm["min"].as_py(), mm["max"].as_py()
    vals = [k for k in keys.to_pylist() if k is not None]
    return min(vals, key=_java_key), max(vals, key=_java_key)


class BaseFileWriter:
    """Writes one base file ``{fileId}_{writeToken}_{instant}.parquet`` batch by batch.

    Args:
        storage: the table's storage.
        partition_path: relative partition path.
        file_id, write_token, instant: the name parts.
        avro_schema: writer schema with meta fields (``parquet.avro.schema``).
        arrow_schema: the exact Arrow schema written (meta fields first).
        preserve_commit_metadata: keep incoming ``_hoodie_commit_time``/``_hoodie_commit_seqno`` (compaction,
            copy-on-write merges); otherwise they are set to ``instant`` and a new sequence number.
    """

    def __init__(
        self,
        storage: Storage,
        *,
        partition_path: str,
        file_id: str,
        write_token: str,
        instant: str,
        avro_schema: dict[str, Any],
        arrow_schema: pa.Schema,
        compression: str = "gzip",
        preserve_commit_metadata: bool = False,
        with_bloom_filter: bool = True,
    ) -> None:
        self.storage = storage
        self.base_file = BaseFile(file_id, write_token, InstantTime(instant), ".parquet", partition_path=partition_path)
        self.instant = instant
        self.task = int(write_token.split("-")[0])
        self.schema = arrow_schema
        self.avro_schema = avro_schema
        self.preserve = preserve_commit_metadata
        self.rows = 0
        self._min: str | None = None
        self._max: str | None = None
        self._bloom = HoodieBloomFilter.create() if with_bloom_filter and RECORD_KEY in arrow_schema.names else None
        self.path = storage.join(partition_path, self.base_file.name)
        self._sink = storage.open_output_stream(self.path)
        self._writer = pq.ParquetWriter(
            self._sink,
            arrow_schema,
            compression=compression,
            version="1.0",
            data_page_version="1.0",
            use_dictionary=True,
            write_statistics=True,
            use_compliant_nested_type=True,
            store_schema=False,
        )

    def write(self, table: pa.Table | pa.RecordBatch) -> None:
        """Append rows (user columns, plus meta columns when preserved)."""
        n = table.num_rows
        if n == 0:
            return
        cols: dict[str, Any] = {}
        names = table.schema.names
        for f in self.schema:
            if f.name == FILE_NAME:
                cols[f.name] = constant_strings(self.base_file.name, n)
            elif f.name in (COMMIT_TIME, COMMIT_SEQNO) and not (self.preserve and f.name in names):
                cols[f.name] = (
                    constant_strings(self.instant, n)
                    if f.name == COMMIT_TIME
                    else seqnos(self.instant, self.task, n, self.rows)
                )
            elif f.name in names:
                col = table.column(f.name)
                cols[f.name] = col.cast(f.type) if col.type != f.type else col
            else:
                cols[f.name] = pa.nulls(n, f.type)
        out = pa.table(cols, schema=self.schema)
        if RECORD_KEY in out.column_names:
            keys = out.column(RECORD_KEY).combine_chunks()
            mm = java_min_max(keys)
            if mm is not None:
                lo, hi = mm
                if self._min is None or _java_key(lo) < _java_key(self._min):
                    self._min = lo
                if self._max is None or _java_key(hi) > _java_key(self._max):
                    self._max = hi
            if self._bloom is not None:
                self._bloom.add_all(keys)
        self._writer.write_table(out, row_group_size=max(1, min(n, 1_000_000)))
        self.rows += n

    def close(self) -> BaseFile:
        """Write the footer, close the file and return it with its size."""
        meta: dict[str, str] = {}
        if self._min is not None and self._max is not None:
            meta["hoodie_min_record_key"], meta["hoodie_max_record_key"] = self._min, self._max
            if self._bloom is not None:
                # Java's BLOOM index fails on a base file without a filter; SIMPLE ignores it.
                meta.update(self._bloom.footer())
        meta["parquet.avro.schema"] = json.dumps(self.avro_schema, separators=(",", ":"))
        meta["writer.model.name"] = "avro"
        self._writer.add_key_value_metadata(meta)
        self._writer.close()
        self._sink.close()
        bf = self.base_file
        return BaseFile(
            bf.file_id, bf.write_token, bf.instant, ".parquet", self.storage.size(self.path), bf.partition_path
        )


class WriteBehind:
    """Feeds a :class:`BaseFileWriter` from a background thread, so producing batch i+1 overlaps writing batch i.

    Parquet encoding and compression (pyarrow) and the bloom filter hashing (numpy) release the GIL, so the caller's
    read and merge of the next batch runs while the previous one is written. At most ``depth`` batches wait in the
    queue (bounded memory). An error on the writer thread is raised by the next :meth:`write` or by :meth:`close`.
    """

    _DONE = object()

    def __init__(self, writer: BaseFileWriter, depth: int = 2) -> None:
        self.writer = writer
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=depth)
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name=f"write-behind {writer.base_file.name}", daemon=True)
        self._thread.start()

    @property
    def rows(self) -> int:
        return self.writer.rows

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is self._DONE:
                return
            if self._error is None:
                try:
                    self.writer.write(item)
                except BaseException as err:  # re-raised on the caller's thread
                    self._error = err

    def _check(self) -> None:
        if self._error is not None:
            self.abort()
            raise self._error

    def write(self, table: pa.Table | pa.RecordBatch) -> None:
        """Queue rows for writing (blocks while ``depth`` batches are waiting)."""
        self._check()
        if table.num_rows:
            self._queue.put(table)

    def close(self) -> BaseFile:
        """Wait for the queued batches, then close the file (see :meth:`BaseFileWriter.close`)."""
        self.abort()
        self._check()
        return self.writer.close()

    def abort(self) -> None:
        """Stop the writer thread after the queued batches (the file is left unclosed)."""
        if self._thread.is_alive():
            self._queue.put(self._DONE)
            self._thread.join()


def write_base_file(
    storage: Storage,
    table: pa.Table,
    *,
    partition_path: str,
    file_id: str,
    write_token: str,
    instant: str,
    avro_schema: dict[str, Any],
    arrow_schema: pa.Schema,
    compression: str = "gzip",
    preserve_commit_metadata: bool = False,
    with_bloom_filter: bool = True,
) -> BaseFile:
    """Write ``table`` as one new base file (see :class:`BaseFileWriter`)."""
    w = BaseFileWriter(
        storage,
        partition_path=partition_path,
        file_id=file_id,
        write_token=write_token,
        instant=instant,
        avro_schema=avro_schema,
        arrow_schema=arrow_schema,
        compression=compression,
        preserve_commit_metadata=preserve_commit_metadata,
        with_bloom_filter=with_bloom_filter,
    )
    w.write(table)
    return w.close()
