"""The trips table most tests write (:func:`lake_orchestration.datagen.generate_trips`): its write options, and a
bulk insert followed by upserts."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pyarrow as pa

from lake_orchestration.datagen import generate_trips, generate_updates
from lake_orchestration.hudi.model.properties import TableType
from lake_orchestration.hudi.write import WriteOptions, write_table

TRIPS_OPTIONS = WriteOptions(
    table_name="t",
    table_type=TableType.MERGE_ON_READ,
    record_key_fields=("uuid",),
    partition_fields=("city",),
    precombine_field="ts",
)
"""A MERGE_ON_READ table ``t`` of trips: record key ``uuid``, partitioned by ``city``, precombine field ``ts``."""


def trips_options(**fields: Any) -> WriteOptions:
    """:data:`TRIPS_OPTIONS` with ``fields`` set (``WriteOptions`` field names; an unknown one raises TypeError)."""
    return replace(TRIPS_OPTIONS, **fields)


def write_trips_history(
    path: Path, options: WriteOptions, *, rows: int, upserts: int, fraction: float, partitions: int = 2, seed: int = 1
) -> pa.Table:
    """A trips table at ``path``: a bulk insert of ``rows`` trips in ``partitions`` cities, then ``upserts`` upserts
    of ``fraction`` of them (seed ``i``, timestamps ``(i + 1) * 10**6`` later), one commit each. Returns the rows of
    the bulk insert."""
    base = generate_trips(rows, partitions=partitions, seed=seed)
    write_table(str(path), base, operation="bulk_insert", options=options)
    for i in range(upserts):
        upd = generate_updates(base, fraction=fraction, seed=i, ts_offset=(i + 1) * 10**6)
        write_table(str(path), upd, operation="upsert", options=options)
    return base
