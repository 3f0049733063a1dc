"""Opening a base file for reading: a Parquet base file, or a METADATA_ONLY bootstrap skeleton stitched with its
source file.

A skeleton (``<fileId>_<token>_00000000000001.parquet``) holds only the five ``_hoodie_*`` meta columns, row for row
in the order of the source file it stands for (:attr:`BaseFile.bootstrap_source`); the record's data columns are
read from the source file, outside the table. Mirrors the stitching of Java's ``HoodieBootstrapRecordIterator`` /
``BootstrapOperator`` read path: meta columns of row *i* of the skeleton next to the data columns of row *i* of the
source. A hive-style source (Spark's ``partitionBy`` output: ``city=sf/part-0.parquet`` without a ``city`` column)
gets its partition columns from the folder, as Java's read does (Spark's partition discovery with type inference off:
string values, ``__HIVE_DEFAULT_PARTITION__`` null), after the source's columns.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from typing import Protocol
from urllib.parse import unquote, urlparse

import pyarrow as pa
import pyarrow.parquet as pq

from lake_orchestration.errors import CorruptFileError
from lake_orchestration.hudi.model.file_group import BaseFile
from lake_orchestration.hudi.model.schema import META_FIELDS
from lake_orchestration.io.storage import Storage


class BaseFileReadable(Protocol):
    """What the readers of a base file use (``pyarrow.parquet.ParquetFile`` has it)."""

    @property
    def schema_arrow(self) -> pa.Schema: ...

    @property
    def metadata(self) -> pq.FileMetaData: ...

    def iter_batches(self, batch_size: int = ..., columns: Sequence[str] | None = ...) -> Iterator[pa.RecordBatch]: ...

    def read(self, columns: Sequence[str] | None = ...) -> pa.Table: ...


HIVE_DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"
"""Spark's/Hive's folder value of a null partition value."""


def hive_partition_values(partition_path: str) -> list[tuple[str, str | None]]:
    """(column, value) of every ``<column>=<value>`` segment of ``partition_path``, as Spark's partition discovery
    reads folder names (``ExternalCatalogUtils.unescapePathName``; the default partition is null)."""
    out: list[tuple[str, str | None]] = []
    for seg in partition_path.split("/") if partition_path else []:
        name, eq, value = seg.partition("=")
        if eq and name:
            text = unquote(value)
            out.append((unquote(name), None if text == HIVE_DEFAULT_PARTITION else text))
    return out


def with_folder_partition_columns(data: pa.Table, partition_path: str) -> pa.Table:
    """``data`` with the hive-style partition columns of ``partition_path`` it lacks appended (string, constant)."""
    for name, value in hive_partition_values(partition_path):
        if name not in data.column_names:
            data = data.append_column(pa.field(name, pa.string()), pa.array([value] * data.num_rows, pa.string()))
    return data


@functools.lru_cache(maxsize=16)
def _root_storage(root: str, options: tuple[tuple[str, str], ...]) -> Storage:
    """One storage per store root (``/``, ``s3://bucket``, ``hdfs://nn:8020``) and options: every source file of
    a read opens through it (no new file system or object-store client per file)."""
    return Storage(root, options=dict(options) or None)


def source_storage_and_path(storage: Storage, source: str) -> tuple[Storage, str]:
    """A storage holding the bootstrap source file ``source`` (a Hadoop path as the bootstrap index records it:
    ``file:/data/src/p/a.parquet``, ``s3a://bucket/src/p/a.parquet`` or a bare local path) and its path there.

    The table's storage options are used for the source's store too.
    """
    parsed = urlparse(source)
    scheme = parsed.scheme.lower()
    if scheme in ("", "file"):
        path = "/" + parsed.path.lstrip("/") if scheme == "file" else source
        return _root_storage("/", ()), path
    root = _root_storage(f"{parsed.scheme}://{parsed.netloc}", tuple(sorted(storage.options.items())))
    return root, root.join(parsed.path)


class BootstrapBaseFile:
    """A skeleton base file and its source file, read as one base file (meta columns, then the source's columns).

    Raises:
        CorruptFileError: the two files do not have the same number of rows (the skeleton would be stitched to
            other records), naming both.
    """

    def __init__(
        self,
        skeleton: pq.ParquetFile,
        source: pq.ParquetFile,
        *,
        skeleton_uri: str,
        source_uri: str,
        partition_path: str = "",
    ) -> None:
        """``partition_path``: the skeleton's partition (= source folder); its hive-style columns that the source
        lacks are appended with the folder's values."""
        self._skeleton = skeleton
        self._source = source
        if skeleton.metadata.num_rows != source.metadata.num_rows:
            raise CorruptFileError(
                skeleton_uri,
                f"bootstrap skeleton has {skeleton.metadata.num_rows} rows but its source file {source_uri} has "
                f"{source.metadata.num_rows}: the source was changed after the bootstrap",
            )
        meta = [f for f in skeleton.schema_arrow if f.name in META_FIELDS]
        data = [f for f in source.schema_arrow if f.name not in META_FIELDS]
        self._meta_names = [f.name for f in meta]
        self._data_names = [f.name for f in data]
        names = {f.name for f in meta + data}
        self._folder_values = {n: v for n, v in hive_partition_values(partition_path) if n not in names}
        folder = [pa.field(n, pa.string()) for n in self._folder_values]
        self._schema = pa.schema(meta + data + folder)

    @property
    def schema_arrow(self) -> pa.Schema:
        return self._schema

    @property
    def metadata(self) -> pq.FileMetaData:
        """The skeleton's footer (row count, bloom filter, record key range: the skeleton carries them)."""
        return self._skeleton.metadata

    def _split(self, columns: Sequence[str] | None) -> tuple[list[str], list[str]]:
        if columns is None:
            return self._meta_names, self._data_names
        wanted = set(columns)
        return [c for c in self._meta_names if c in wanted], [c for c in self._data_names if c in wanted]

    def _folder(self, columns: Sequence[str] | None) -> list[str]:
        return [n for n in self._folder_values if columns is None or n in columns]

    def iter_batches(self, batch_size: int = 131_072, columns: Sequence[str] | None = None) -> Iterator[pa.RecordBatch]:
        """Batches of the stitched rows (row ``i`` of the skeleton next to row ``i`` of the source, then the folder's
        partition columns the source lacks)."""
        folder = self._folder(columns)
        if not folder:
            yield from self._stitched(batch_size, columns)
            return
        meta, data = self._split(columns)
        # at least one stored column to count rows by (dropped when not asked for)
        stored = [*meta, *data] or self._meta_names[:1]
        for batch in self._stitched(batch_size, stored):
            arrays = [batch.column(n) for n in (*meta, *data)]
            arrays += [pa.array([self._folder_values[n]] * batch.num_rows, pa.string()) for n in folder]
            yield pa.RecordBatch.from_arrays(arrays, names=[*meta, *data, *folder])

    def _stitched(self, batch_size: int, columns: Sequence[str] | None) -> Iterator[pa.RecordBatch]:
        meta, data = self._split(columns)
        if not data:
            yield from self._skeleton.iter_batches(batch_size=batch_size, columns=meta)
            return
        if not meta:
            yield from self._source.iter_batches(batch_size=batch_size, columns=data)
            return
        skeleton = _Aligned(self._skeleton.iter_batches(batch_size=batch_size, columns=meta))
        for batch in self._source.iter_batches(batch_size=batch_size, columns=data):
            left = skeleton.take(batch.num_rows)
            yield pa.RecordBatch.from_arrays(
                [*left.columns, *batch.columns], names=[*left.schema.names, *batch.schema.names]
            )

    def read(self, columns: Sequence[str] | None = None) -> pa.Table:
        meta, data = self._split(columns)
        batches = list(self.iter_batches(columns=columns))
        if batches:
            return pa.Table.from_batches(batches)
        return pa.schema([self._schema.field(n) for n in (*meta, *data, *self._folder(columns))]).empty_table()


class _Aligned:
    """Rows of a batch stream taken ``n`` at a time, whatever the stream's batch boundaries."""

    def __init__(self, batches: Iterator[pa.RecordBatch]) -> None:
        self._batches = batches
        self._held: list[pa.RecordBatch] = []
        self._rows = 0

    def take(self, n: int) -> pa.RecordBatch:
        while self._rows < n:
            nxt = next(self._batches)
            self._held.append(nxt)
            self._rows += nxt.num_rows
        joined = pa.Table.from_batches(self._held).combine_chunks()
        out = joined.slice(0, n)
        rest = joined.slice(n)
        self._held = rest.to_batches() if rest.num_rows else []
        self._rows = rest.num_rows
        return out.to_batches()[0] if out.num_rows else pa.RecordBatch.from_pylist([], schema=joined.schema)


def open_base_file(storage: Storage, base_file: BaseFile) -> BaseFileReadable:
    """The base file ``base_file`` of the table in ``storage``, opened for reading: the Parquet file itself, or for a
    bootstrap skeleton (``base_file.bootstrap_source`` set) the skeleton stitched with its source file.

    Raises:
        CorruptFileError: a file that is not readable Parquet, or a skeleton whose row count differs from its
            source's.
        StorageError: a file that cannot be read (a missing source file included).
    """
    pf = storage.open_parquet(storage.join(base_file.relative_path))
    if base_file.bootstrap_source is None:
        return pf
    src_storage, src_path = source_storage_and_path(storage, base_file.bootstrap_source)
    source = src_storage.open_parquet(src_path)
    return BootstrapBaseFile(
        pf,
        source,
        skeleton_uri=storage.uri(storage.join(base_file.relative_path)),
        source_uri=base_file.bootstrap_source,
        partition_path=base_file.partition_path,
    )
