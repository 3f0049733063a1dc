"""Parquet base files with Hudi's meta columns and footer (reference/hudi/base-file.md §1, §4.4).

:class:`BaseFileWriter` streams batches into one base file (bounded memory: the bloom filter and min/max keys are
accumulated as rows arrive) and writes the footer Java Hudi expects: ``org.apache.hudi.bloomfilter`` (DYNAMIC_V0),
``hoodie_bloom_filter_type_code``, ``hoodie_min_record_key``/``hoodie_max_record_key`` (Java string order),
``parquet.avro.schema`` and ``writer.model.name``.

Physical layout as Java Hudi writes it (parquet-mr through ``HoodieBaseParquetWriter``), set by
:class:`ParquetWriteConfig`: row groups closed by size (``hoodie.parquet.block.size`` of compressed data, not one per
incoming batch), ``hoodie.parquet.page.size`` pages and dictionary page limit, dictionary encoding as
``hoodie.parquet.dictionary.enabled`` says, and the codec at parquet-mr's default level (zlib's default 6 for gzip,
where Arrow defaults to 9 at twice the CPU for the same size; 3 for zstd).
"""

from __future__ import annotations

import json
import math
import queue
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from lake_orchestration.config.keys import HoodieKey
from lake_orchestration.config.options import option, parse_options
from lake_orchestration.hudi.model.bloom_filter import HoodieBloomFilter
from lake_orchestration.hudi.model.file_group import BaseFile
from lake_orchestration.hudi.model.instant import InstantTime
from lake_orchestration.hudi.model.schema import COMMIT_SEQNO, COMMIT_TIME, FILE_NAME, RECORD_KEY
from lake_orchestration.io.storage import Storage

#: parquet-mr's default compression levels (Hadoop's ``zlib.compress.level`` = zlib's default 6; ZstandardCodec's
#: ``parquet.compression.codec.zstd.level`` = 3). Arrow's own defaults differ (gzip 9, zstd 1).
JAVA_COMPRESSION_LEVELS: dict[str, int] = {"gzip": 6, "zstd": 3}

#: A row group is also closed once its buffered rows take this much memory (Arrow), whatever the block size.
MAX_BUFFER_BYTES = 512 * 1024 * 1024

_SAMPLE_ROWS = 16_384


@dataclass(frozen=True, kw_only=True)
class ParquetWriteConfig:
    """How base files are laid out: Hudi's ``hoodie.parquet.*`` storage settings (defaults of Hudi 0.14/0.15)."""

    compression: str = option(HoodieKey.PARQUET_COMPRESSION_CODEC, "gzip", parse=str.lower)
    """``hoodie.parquet.compression.codec``."""
    compression_level: int | None = None
    """Codec level; None = parquet-mr's default for the codec (:data:`JAVA_COMPRESSION_LEVELS`)."""
    block_size: int = option(HoodieKey.PARQUET_BLOCK_SIZE, 120 * 1024 * 1024, minimum=1)
    """``hoodie.parquet.block.size``: bytes of compressed data per row group."""
    page_size: int = option(HoodieKey.PARQUET_PAGE_SIZE, 1024 * 1024, minimum=1)
    """``hoodie.parquet.page.size``: data page size and dictionary page limit."""
    dictionary_enabled: bool = option(HoodieKey.PARQUET_DICTIONARY_ENABLED, True)
    """``hoodie.parquet.dictionary.enabled``."""

    @classmethod
    def from_options(
        cls, options: Mapping[str, str] | None, *, service: str = "", **overrides: Any
    ) -> ParquetWriteConfig:
        """Read the ``hoodie.parquet.*`` keys from ``options`` (absent keys keep Hudi's defaults).

        Raises:
            InvalidOptionError: a size that is not an integer >= 1, a dictionary flag that is not true/false.
        """
        return parse_options(cls, options, service=service, **overrides)

    @property
    def level(self) -> int | None:
        """The compression level passed to Arrow."""
        if self.compression_level is not None:
            return self.compression_level
        return JAVA_COMPRESSION_LEVELS.get(self.compression.lower())


def _leaf_paths(schema: pa.Schema) -> list[str]:
    """Parquet column paths (``a.b``, ``l.list.element``) of the leaves of ``schema``, as the writer names them."""
    sink = pa.BufferOutputStream()
    pq.write_table(schema.empty_table(), sink, version="1.0", use_compliant_nested_type=True, store_schema=False)
    ps = pq.read_metadata(pa.BufferReader(sink.getvalue())).schema
    return [ps.column(i).path for i in range(len(ps))]


def seqnos(instant: InstantTime, task_partition_id: int, n: int, start: int = 0) -> pa.Array:
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

    Rows are buffered until a row group is full, as parquet-mr does: a row group holds about
    ``hoodie.parquet.block.size`` bytes of compressed data (the size per row is measured on the row groups written
    so far; before the first one, taken from ``row_bytes_hint`` or from encoding a sample of the first rows), and
    at most :data:`MAX_BUFFER_BYTES` of Arrow data in memory.

    Args:
        storage: the table's storage.
        partition_path: relative partition path.
        file_id, write_token, instant: the name parts.
        avro_schema: writer schema with meta fields (``parquet.avro.schema``).
        arrow_schema: the exact Arrow schema written (meta fields first).
        compression: ``hoodie.parquet.compression.codec`` (overrides ``config.compression`` when given).
        preserve_commit_metadata: keep incoming ``_hoodie_commit_time``/``_hoodie_commit_seqno`` (compaction,
            copy-on-write merges); otherwise they are set to ``instant`` and a new sequence number.
        config: row group, page, dictionary and codec settings (Hudi's defaults when None).
        unique_columns: columns unique by construction, written without dictionary (parquet-mr would try a
            dictionary and fall back to PLAIN in every column chunk); ``_hoodie_commit_seqno`` and
            ``_hoodie_record_key`` always are.
        row_bytes_hint: expected compressed bytes per row (e.g. the base file being rewritten), for sizing the
            first row group.
    """

    def __init__(
        self,
        storage: Storage,
        *,
        partition_path: str,
        file_id: str,
        write_token: str,
        instant: InstantTime,
        avro_schema: dict[str, Any],
        arrow_schema: pa.Schema,
        compression: str | None = None,
        preserve_commit_metadata: bool = False,
        with_bloom_filter: bool = True,
        config: ParquetWriteConfig | None = None,
        unique_columns: tuple[str, ...] = (),
        row_bytes_hint: float | None = None,
    ) -> None:
        self.storage = storage
        self.base_file = BaseFile(file_id, write_token, InstantTime(instant), ".parquet", partition_path=partition_path)
        self.instant = instant
        self.task = int(write_token.split("-")[0])
        self.schema = arrow_schema
        self.avro_schema = avro_schema
        self.preserve = preserve_commit_metadata
        cfg = config or ParquetWriteConfig()
        if compression is not None and compression.lower() != cfg.compression:
            cfg = ParquetWriteConfig(
                compression=compression.lower(),
                compression_level=cfg.compression_level,
                block_size=cfg.block_size,
                page_size=cfg.page_size,
                dictionary_enabled=cfg.dictionary_enabled,
            )
        self.config = cfg
        self.rows = 0
        self._min: str | None = None
        self._max: str | None = None
        self._bloom = HoodieBloomFilter.create() if with_bloom_filter and RECORD_KEY in arrow_schema.names else None
        self.path = storage.join(partition_path, self.base_file.name)
        self._props = self._writer_properties(cfg, arrow_schema, (COMMIT_SEQNO, RECORD_KEY, *unique_columns))
        # a single record key field holds the record keys again: buffered once when equal (same bytes written)
        self._key_field = (
            unique_columns[0] if len(unique_columns) == 1 and unique_columns[0] in arrow_schema.names else None
        )
        self._buffer: list[pa.Table] = []
        self._buffered_rows = 0
        self._buffered_bytes = 0
        self._written_rows = 0
        self._row_bytes = row_bytes_hint if row_bytes_hint and row_bytes_hint > 0 else None
        self._sink = storage.open_output_stream(self.path)
        self._start = self._tell()
        # _hoodie_file_name is one value per file: buffered and written as a dictionary array (same Parquet column,
        # BYTE_ARRAY UTF8, dictionary-encoded as before; no string per row in memory, no hashing when encoding)
        self._name_dict = pa.array([self.base_file.name], pa.string())
        self._arrow_schema = arrow_schema
        i = arrow_schema.get_field_index(FILE_NAME)
        if i >= 0 and arrow_schema.field(i).type == pa.string():
            f = arrow_schema.field(i)
            self._arrow_schema = arrow_schema.set(i, f.with_type(pa.dictionary(pa.int32(), pa.string())))
        self._writer = pq.ParquetWriter(self._sink, self._arrow_schema, **self._props)

    def _tell(self) -> int | None:
        """Bytes written to the sink so far (None when the stream cannot tell: sizes stay estimated)."""
        try:
            return self._sink.tell()
        except (OSError, NotImplementedError):
            return None

    @staticmethod
    def _writer_properties(cfg: ParquetWriteConfig, schema: pa.Schema, unique: tuple[str, ...]) -> dict[str, Any]:
        use_dictionary: bool | list[str] = cfg.dictionary_enabled
        if cfg.dictionary_enabled:
            skip = {u for u in unique if u in schema.names}
            if skip:
                use_dictionary = [p for p in _leaf_paths(schema) if p.split(".", 1)[0] not in skip]
        return {
            "compression": cfg.compression,
            "compression_level": cfg.level,
            "version": "1.0",
            "data_page_version": "1.0",
            "use_dictionary": use_dictionary,
            "data_page_size": cfg.page_size,
            "dictionary_pagesize_limit": cfg.page_size,
            "write_statistics": True,
            "use_compliant_nested_type": True,
            "store_schema": False,
        }

    def write(self, table: pa.Table | pa.RecordBatch) -> None:
        """Append rows (user columns, plus meta columns when preserved)."""
        n = table.num_rows
        if n == 0:
            return
        cols: dict[str, Any] = {}
        names = table.schema.names
        for f in self.schema:
            if f.name == FILE_NAME:
                ids = pa.array(np.zeros(n, dtype=np.int32))
                name = pa.DictionaryArray.from_arrays(ids, self._name_dict)
                cols[f.name] = name if self._arrow_schema.field(f.name).type == name.type else name.dictionary_decode()
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
        if self._key_field is not None and RECORD_KEY in cols:
            key, field = cols[RECORD_KEY], cols[self._key_field]
            if key is not field and key.type == field.type and key.equals(field):
                cols[RECORD_KEY] = field
        out = pa.table(cols, schema=self._arrow_schema)
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
        self._buffer.append(out)
        self._buffered_rows += n
        self._buffered_bytes += out.nbytes
        self.rows += n
        self._flush_full()

    def _group_rows(self) -> int | None:
        """Rows of the next row group once the buffer can fill one, else None."""
        if self._buffered_bytes >= MAX_BUFFER_BYTES:
            per_row = self._buffered_bytes / self._buffered_rows
            return max(1, min(self._buffered_rows, int(MAX_BUFFER_BYTES / per_row)))
        if self._row_bytes is None:
            if self._buffered_bytes < self.config.block_size:
                return None  # compressed data is no larger than Arrow's: the group cannot be full yet
            self._row_bytes = self._sample_row_bytes()
        rows = max(1, math.ceil(self.config.block_size / self._row_bytes))
        return rows if self._buffered_rows >= rows else None

    def _sample_row_bytes(self) -> float:
        """Compressed bytes per row of a sample of the buffered rows, encoded with this file's settings."""
        sample = pa.concat_tables(self._buffer).slice(0, _SAMPLE_ROWS)
        sink = pa.BufferOutputStream()
        w = pq.ParquetWriter(sink, self._arrow_schema, **self._props)
        w.write_table(sample, row_group_size=sample.num_rows)
        w.close()
        return max(1.0, sink.getvalue().size / sample.num_rows)

    def _flush_full(self) -> None:
        while self._buffered_rows and (rows := self._group_rows()) is not None:
            self._write_group(rows)

    def _write_group(self, rows: int) -> None:
        data = pa.concat_tables(self._buffer) if len(self._buffer) > 1 else self._buffer[0]
        group, rest = data.slice(0, rows), data.slice(rows)
        self._writer.write_table(group, row_group_size=max(1, group.num_rows))
        self._written_rows += group.num_rows
        self._buffer = [rest] if rest.num_rows else []
        self._buffered_rows = rest.num_rows
        self._buffered_bytes = rest.nbytes if rest.num_rows else 0
        pos = self._tell()
        written = pos - self._start if pos is not None and self._start is not None else 0
        if written > 0:
            self._row_bytes = max(1.0, written / self._written_rows)

    def close(self) -> BaseFile:
        """Write the last row group and the footer, close the file and return it with its size."""
        if self._buffered_rows:
            self._write_group(self._buffered_rows)
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
