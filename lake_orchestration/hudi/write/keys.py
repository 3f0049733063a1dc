"""Record keys and partition paths as Hudi's key generators build them.

Mirrors ``SimpleKeyGenerator``, ``ComplexKeyGenerator`` and ``NonpartitionedKeyGenerator`` (0.14): a simple key is
the field's string value, a complex key is ``f1:v1,f2:v2``; null and empty values become ``__null__`` and
``__empty__``; partition paths are ``v`` or ``f=v`` (hive style) joined by ``/``, ``__HIVE_DEFAULT_PARTITION__`` for
null/empty values, URL-encoded when asked.
"""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import quote

import pyarrow as pa
import pyarrow.compute as pc

NULL_KEY = "__null__"
EMPTY_KEY = "__empty__"
DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"


def _as_str(col: pa.ChunkedArray | pa.Array) -> pa.ChunkedArray | pa.Array:
    if pa.types.is_string(col.type):
        return col
    if pa.types.is_timestamp(col.type) or pa.types.is_date(col.type):
        return pc.cast(col, pa.string())
    return pc.cast(col, pa.string())


def record_keys(table: pa.Table, fields: Sequence[str], *, complex_key: bool) -> pa.Array:
    """``_hoodie_record_key`` for every row."""
    if not fields:
        raise ValueError("A record key field is required (hoodie.table.recordkey.fields)")
    parts = []
    for f in fields:
        if f not in table.column_names:
            raise ValueError(f"Record key field {f!r} is not a column of the data (columns: {table.column_names})")
        s = _as_str(table.column(f))
        s = pc.if_else(pc.equal(s, ""), EMPTY_KEY, s)
        s = pc.fill_null(s, NULL_KEY)
        parts.append(pc.binary_join_element_wise(f"{f}:", s, "") if complex_key else s)
    out = parts[0] if len(parts) == 1 else pc.binary_join_element_wise(*parts, ",")
    if isinstance(out, pa.ChunkedArray):
        out = out.combine_chunks()
    if not complex_key and len(fields) == 1:
        nulls = pc.equal(out, NULL_KEY)
        if pc.any(nulls).as_py():
            raise ValueError(f"Record key field {fields[0]!r} has null values; a simple key cannot be null")
    return out


def partition_paths(table: pa.Table, fields: Sequence[str], *, hive_style: bool, url_encode: bool = False) -> pa.Array:
    """``_hoodie_partition_path`` for every row (empty strings for a non-partitioned table)."""
    if not fields:
        return pa.array([""] * table.num_rows, pa.string())
    parts = []
    for f in fields:
        if f not in table.column_names:
            raise ValueError(f"Partition field {f!r} is not a column of the data (columns: {table.column_names})")
        s = _as_str(table.column(f))
        s = pc.fill_null(pc.if_else(pc.equal(s, ""), DEFAULT_PARTITION, s), DEFAULT_PARTITION)
        if url_encode:
            s = pa.array([quote(v, safe="") for v in s.to_pylist()], pa.string())
        parts.append(pc.binary_join_element_wise(f"{f}=", s, "") if hive_style else s)
    out = parts[0] if len(parts) == 1 else pc.binary_join_element_wise(*parts, "/")
    return out.combine_chunks() if isinstance(out, pa.ChunkedArray) else out
