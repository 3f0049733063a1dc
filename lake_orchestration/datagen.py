"""Reproducible trips-like data for demos, tests and benchmarks (the shape of Hudi's quickstart table).

Columns: ``uuid`` (record key), ``ts`` (long, the ordering field), ``rider``, ``driver``, ``fare`` (double),
``begin_lat``/``begin_lon`` (double), ``distance_km`` (float), ``trip_date`` (date), ``city`` (the partition).
Updates get a larger ``ts`` than any row they update, so event-time and commit-time ordering agree.
"""

from __future__ import annotations

import uuid
from datetime import date, timedelta

import numpy as np
import pyarrow as pa

CITIES = ("san_francisco", "sao_paulo", "chennai", "amsterdam", "singapore", "lagos", "sydney", "toronto")
TRIPS_SCHEMA = pa.schema(
    [
        ("uuid", pa.string()),
        ("ts", pa.int64()),
        ("rider", pa.string()),
        ("driver", pa.string()),
        ("fare", pa.float64()),
        ("begin_lat", pa.float64()),
        ("begin_lon", pa.float64()),
        ("distance_km", pa.float32()),
        ("trip_date", pa.date32()),
        ("city", pa.string()),
    ]
)
_BASE_TS = 1_695_000_000_000


def generate_trips(rows: int, *, partitions: int = 3, seed: int = 42, ts_offset: int = 0) -> pa.Table:
    """``rows`` new trips spread over ``partitions`` cities (at most 8)."""
    if not 1 <= partitions <= len(CITIES):
        raise ValueError(f"partitions must be 1..{len(CITIES)}, got {partitions}")
    rng = np.random.default_rng(seed)
    raw = rng.bytes(16 * rows)  # random version-4 UUIDs: distinct seeds give distinct keys
    keys = [str(uuid.UUID(bytes=raw[16 * i : 16 * i + 16], version=4)) for i in range(rows)]
    return pa.table(
        {
            "uuid": pa.array(keys, pa.string()),
            "ts": pa.array(_BASE_TS + ts_offset + rng.integers(0, 1_000_000, rows), pa.int64()),
            "rider": pa.array([f"rider-{c}" for c in rng.integers(0, 500, rows)], pa.string()),
            "driver": pa.array([f"driver-{c}" for c in rng.integers(0, 500, rows)], pa.string()),
            "fare": pa.array(np.round(rng.uniform(5, 120, rows), 2), pa.float64()),
            "begin_lat": pa.array(rng.uniform(-90, 90, rows), pa.float64()),
            "begin_lon": pa.array(rng.uniform(-180, 180, rows), pa.float64()),
            "distance_km": pa.array(rng.uniform(0.5, 40, rows).astype(np.float32), pa.float32()),
            "trip_date": pa.array(
                [date(2024, 1, 1) + timedelta(days=int(d)) for d in rng.integers(0, 365, rows)], pa.date32()
            ),
            "city": pa.array([CITIES[i] for i in rng.integers(0, partitions, rows)], pa.string()),
        },
        schema=TRIPS_SCHEMA,
    )


def generate_updates(base: pa.Table, *, fraction: float, seed: int = 7, ts_offset: int = 10_000_000) -> pa.Table:
    """Updated versions of a random ``fraction`` of ``base``'s rows (same key and city, new fare, larger ts)."""
    rng = np.random.default_rng(seed)
    n = round(base.num_rows * fraction)
    idx = np.sort(rng.choice(base.num_rows, size=n, replace=False)) if n else np.array([], dtype=np.int64)
    upd = base.take(pa.array(idx, pa.int64()))
    ts = upd.column("ts").to_numpy() + ts_offset
    fare = np.round(rng.uniform(5, 120, n), 2)
    upd = upd.set_column(upd.schema.get_field_index("ts"), "ts", pa.array(ts, pa.int64()))
    return upd.set_column(upd.schema.get_field_index("fare"), "fare", pa.array(fare, pa.float64()))


def pick_deletes(base: pa.Table, *, fraction: float, seed: int = 11) -> pa.Table:
    """A random ``fraction`` of ``base``'s rows, to delete."""
    rng = np.random.default_rng(seed)
    n = round(base.num_rows * fraction)
    idx = np.sort(rng.choice(base.num_rows, size=n, replace=False)) if n else np.array([], dtype=np.int64)
    return base.take(pa.array(idx, pa.int64()))


def with_delete_flags(parts: list[pa.Table], *, deleted_index: int | None) -> pa.Table:
    """Concatenate row sets, adding ``_hoodie_is_deleted`` (true for the set at ``deleted_index``)."""
    if deleted_index is None:
        return pa.concat_tables(parts)
    flagged = [
        t.append_column("_hoodie_is_deleted", pa.array([i == deleted_index] * t.num_rows, pa.bool_()))
        for i, t in enumerate(parts)
    ]
    return pa.concat_tables(flagged)
