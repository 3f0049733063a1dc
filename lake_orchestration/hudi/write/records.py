"""Turning user rows into Hudi records: keys, partition paths, precombine, the operation of each row."""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from lake_orchestration.hudi.model.properties import TableConfig
from lake_orchestration.hudi.model.schema import IS_DELETED_FIELD, META_FIELDS, PARTITION_PATH, RECORD_KEY
from lake_orchestration.hudi.write.keys import partition_paths, record_keys

OP_COLUMN = "__lo_op"
"""Per-row operation after tagging: ``I`` insert, ``U`` update, ``D`` delete."""
FILE_ID_COLUMN = "__lo_file_id"
"""Target file id after tagging (empty for inserts not yet assigned)."""


def is_complex_key(cfg: TableConfig) -> bool:
    return len(cfg.record_key_fields) > 1 or "Complex" in (cfg.key_generator_class or "")


def with_keys(data: pa.Table, cfg: TableConfig) -> pa.Table:
    """User rows plus ``_hoodie_record_key`` and ``_hoodie_partition_path`` (any meta columns given are dropped)."""
    data = data.select([c for c in data.column_names if c not in META_FIELDS])
    keys = record_keys(data, cfg.record_key_fields, complex_key=is_complex_key(cfg))
    parts = partition_paths(
        data, cfg.partition_fields, hive_style=cfg.hive_style_partitioning, url_encode=cfg.url_encode_partitioning
    )
    return data.append_column(RECORD_KEY, keys).append_column(PARTITION_PATH, parts)


def precombine(data: pa.Table, ordering_field: str | None) -> pa.Table:
    """Keep one row per (partition, key): the greatest ordering value, ties to the later row.

    Mirrors the ``preCombine`` of the payload (``hoodie.combine.before.upsert``).
    """
    n = data.num_rows
    if n == 0:
        return data
    cols: dict[str, Any] = {"k": data.column(RECORD_KEY), "p": data.column(PARTITION_PATH), "i": np.arange(n)}
    by = ["i"]
    if ordering_field and ordering_field in data.column_names:
        col = data.column(ordering_field)
        cols["o"] = col.cast(pa.int64()) if pa.types.is_timestamp(col.type) else col
        by = ["o", "i"]
    df = pl.DataFrame(pa.table(cols))
    if df.select(pl.struct("p", "k").n_unique()).item() == n:
        return data
    keep = df.sort(by, nulls_last=False).unique(subset=["p", "k"], keep="last").sort("i")["i"].to_numpy()
    return data.take(pa.array(keep))


def deleted_mask(data: pa.Table, *, all_deleted: bool) -> np.ndarray:
    """Rows that are deletes: every row of a ``delete``, else rows with ``_hoodie_is_deleted = true``."""
    if all_deleted:
        return np.ones(data.num_rows, dtype=bool)
    if IS_DELETED_FIELD in data.column_names:
        return pc.fill_null(data.column(IS_DELETED_FIELD), False).to_numpy(zero_copy_only=False).astype(bool)
    return np.zeros(data.num_rows, dtype=bool)
