"""Parquet base files with Hudi's meta columns and footer (reference/hudi/base-file.md §1, §4.4)."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from lake_orchestration.hudi.model.file_group import BaseFile
from lake_orchestration.hudi.model.instant import InstantTime
from lake_orchestration.hudi.model.schema import COMMIT_SEQNO, COMMIT_TIME, FILE_NAME, META_FIELDS
from lake_orchestration.hudi.write.bloom_filter import bloom_footer
from lake_orchestration.io.storage import Storage


def seqnos(instant: str, task_partition_id: int, n: int, start: int = 0) -> pa.Array:
    """``_hoodie_commit_seqno`` values ``{instant}_{taskPartitionId}_{recordIndex}``."""
    idx = pa.array(np.arange(start, start + n), pa.int64()).cast(pa.string())
    return pc.binary_join_element_wise(f"{instant}_{task_partition_id}_", idx, "")


def java_min_max(keys: pa.Array) -> tuple[str, str] | None:
    """Min and max record key in Java ``String.compareTo`` (UTF-16 code unit) order."""
    vals = [k for k in keys.to_pylist() if k is not None]
    if not vals:
        return None
    if all(k.isascii() for k in (min(vals), max(vals))) and all(v.isascii() for v in vals):
        return min(vals), max(vals)
    ordered = sorted(vals, key=lambda k: k.encode("utf-16-be"))
    return ordered[0], ordered[-1]


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
    """Write ``table`` (meta columns filled here unless preserved) as a new base file; returns its name.

    Args:
        table: rows with the user columns and, when ``preserve_commit_metadata``, their meta columns.
        avro_schema: writer schema with meta fields (goes to ``parquet.avro.schema``).
        arrow_schema: the exact Arrow schema to write (meta fields first).
    """
    bf = BaseFile(file_id, write_token, InstantTime(instant), ".parquet", partition_path=partition_path)
    n = table.num_rows
    task = int(write_token.split("-")[0])
    cols: dict[str, Any] = {}
    for f in arrow_schema:
        if f.name == FILE_NAME:
            cols[f.name] = pa.array([bf.name] * n, pa.string())
        elif f.name in (COMMIT_TIME, COMMIT_SEQNO) and not (preserve_commit_metadata and f.name in table.column_names):
            cols[f.name] = pa.array([instant] * n, pa.string()) if f.name == COMMIT_TIME else seqnos(instant, task, n)
        elif f.name in table.column_names:
            col = table.column(f.name)
            cols[f.name] = col.cast(f.type) if col.type != f.type else col
        else:
            cols[f.name] = pa.nulls(n, f.type)
    out = pa.table(cols, schema=arrow_schema)
    meta: dict[str, str] = {}
    if META_FIELDS[2] in out.column_names and n:
        keys = out.column(META_FIELDS[2]).combine_chunks()
        mm = java_min_max(keys)
        if mm is not None:
            meta["hoodie_min_record_key"], meta["hoodie_max_record_key"] = mm
        if with_bloom_filter:
            # Java's BLOOM index fails on a base file without a filter; SIMPLE ignores it.
            meta.update(bloom_footer(keys))
    meta["parquet.avro.schema"] = json.dumps(avro_schema, separators=(",", ":"))
    meta["writer.model.name"] = "avro"
    path = storage.join(partition_path, bf.name)
    with storage.open_output_stream(path) as sink:
        writer = pq.ParquetWriter(
            sink,
            arrow_schema,
            compression=compression,
            version="1.0",
            data_page_version="1.0",
            use_dictionary=True,
            write_statistics=True,
            use_compliant_nested_type=True,
            store_schema=False,
        )
        writer.write_table(out, row_group_size=max(1, min(n, 1_000_000)))
        writer.add_key_value_metadata(meta)
        writer.close()
    return BaseFile(file_id, write_token, InstantTime(instant), ".parquet", storage.size(path), partition_path)
