"""Fleet health: one row per table (compaction backlog, cleaner lag, archival lag, metadata-table lag, small files)
and the breaches of its policy (:class:`~lake_orchestration.fleet.config.TablePolicy`).

Each Hudi row reads the table's timeline and file-system view (:func:`~lake_orchestration.hudi.table.health
.table_health`) and, when it has one, the metadata table's timeline; a Paimon row reads the latest snapshot's levels
(:func:`~lake_orchestration.paimon.health.paimon_table_health`). A table that cannot be read gets a row with
``error`` and the breach ``unreadable``: one bad table never hides the others.

The figures:

- ``max_log_files_per_slice``: log files of the most loaded latest file slice (Paimon: level-0 files of the most
  loaded bucket); ``pending_compactions``; ``oldest_pending_compaction_age_s``.
- ``cleaner_lag_commits``: completed write commits (commit, deltacommit, replacecommit) after the last completed
  clean, all of them without one.
- ``active_instants``: completed instants on the active timeline (what archival keeps below
  ``hoodie.keep.max.commits``).
- ``metadata_table_lag``: completed data-table instants (writes, clean, rollback) at or after the metadata table's
  first instant that the metadata table has no completed deltacommit for (0 without a metadata table).
- ``small_files``: latest base files smaller than ``hoodie.parquet.small.file.limit`` (Hudi's 104857600 bytes).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from lake_orchestration.config.keys import HoodieKey
from lake_orchestration.fleet.config import FleetTable, TablePolicy

SMALL_FILE_LIMIT_KEY = HoodieKey.PARQUET_SMALL_FILE_LIMIT.key
DEFAULT_SMALL_FILE_LIMIT = int(HoodieKey.PARQUET_SMALL_FILE_LIMIT.default or 0)
"""``hoodie.parquet.small.file.limit``'s default (Hudi ``HoodieCompactionConfig.PARQUET_SMALL_FILE_LIMIT``)."""

FIGURES = (
    "max_log_files_per_slice",
    "pending_compactions",
    "oldest_pending_compaction_age_s",
    "cleaner_lag_commits",
    "active_instants",
    "metadata_table_lag",
    "small_files",
)
"""The numeric figures of a row, in column order."""

_THRESHOLDS = {
    "max_log_files_per_slice": "max_log_files_per_slice",
    "pending_compactions": "max_pending_compactions",
    "oldest_pending_compaction_age_s": "max_pending_compaction_age_s",
    "cleaner_lag_commits": "max_cleaner_lag_commits",
    "active_instants": "max_active_instants",
    "metadata_table_lag": "max_metadata_table_lag",
    "small_files": "max_small_files",
}
"""Figure -> the :class:`TablePolicy` threshold judging it."""


@dataclass(frozen=True, kw_only=True)
class TableHealthRow:
    """The health of one table."""

    name: str
    format: str
    max_log_files_per_slice: int = 0
    pending_compactions: int = 0
    oldest_pending_compaction_age_s: float | None = None
    cleaner_lag_commits: int = 0
    active_instants: int = 0
    metadata_table_lag: int = 0
    small_files: int = 0
    latest_commit: str | None = None
    """Latest completed commit (Hudi instant time, Paimon snapshot id as text)."""
    breaches: tuple[str, ...] = ()
    """``figure value > threshold`` for each figure above its policy's threshold (``unreadable: ...``)."""
    error: str | None = None
    """Why the table could not be read (its figures are then zeros)."""

    def to_json_obj(self) -> dict[str, Any]:
        """Plain values."""
        return {
            "name": self.name,
            "format": self.format,
            **{f: getattr(self, f) for f in FIGURES},
            "latest_commit": self.latest_commit,
            "breaches": list(self.breaches),
            "error": self.error,
        }


def judge(row: TableHealthRow, policy: TablePolicy) -> tuple[str, ...]:
    """The breaches of ``row`` against ``policy``: one ``<figure> <value> > <threshold>`` per figure above it."""
    if row.error is not None:
        return (f"unreadable: {row.error}",)
    out = []
    for figure, key in _THRESHOLDS.items():
        limit = getattr(policy, key)
        value = getattr(row, figure)
        if limit is not None and value is not None and value > limit:
            shown = f"{value:.0f}" if isinstance(value, float) else str(value)
            out.append(f"{figure} {shown} > {limit:g}" if isinstance(limit, float) else f"{figure} {shown} > {limit}")
    return tuple(out)


@dataclass(frozen=True, kw_only=True)
class FleetHealth:
    """The rows of a fleet, and aggregates over them."""

    rows: list[TableHealthRow] = field(default_factory=list)
    measured_at: float = 0.0
    """Epoch seconds of the measurement."""

    @property
    def breaching(self) -> list[TableHealthRow]:
        """Rows with at least one breach."""
        return [r for r in self.rows if r.breaches]

    def aggregates(self) -> dict[str, Any]:
        """Fleet-level figures: tables, tables breaching, unreadable, and per figure the max and the sum."""
        out: dict[str, Any] = {
            "tables": len(self.rows),
            "tables_breaching": len(self.breaching),
            "tables_unreadable": sum(1 for r in self.rows if r.error is not None),
        }
        for f in FIGURES:
            values = [getattr(r, f) or 0 for r in self.rows]
            out[f"max_{f}"] = max(values, default=0)
            if f != "oldest_pending_compaction_age_s":
                out[f"total_{f}"] = sum(values)
        return out

    def as_records(self) -> list[dict[str, Any]]:
        """One JSON-ready dict per table."""
        return [r.to_json_obj() for r in self.rows]

    def to_json_obj(self) -> dict[str, Any]:
        """The whole view: ``tables`` (the records), ``aggregates``, ``measured_at``."""
        return {"measured_at": self.measured_at, "aggregates": self.aggregates(), "tables": self.as_records()}


def _hudi_row(table: FleetTable, now: float) -> TableHealthRow:
    from lake_orchestration.hudi.model.instant import Action
    from lake_orchestration.hudi.model.timeline import Timeline
    from lake_orchestration.hudi.table.health import table_health

    t = table.open()
    h = table_health(t)
    tl = t.timeline
    completed = tl.completed()
    writes = list(completed.with_actions(Action.COMMIT, Action.DELTA_COMMIT, Action.REPLACE_COMMIT))
    last_clean = completed.with_actions(Action.CLEAN).last
    lag = sum(1 for c in writes if last_clean is None or str(c.time) > str(last_clean.time))
    mdt_lag = 0
    if t.metadata_table_exists():
        mdt_names = [i.name for i in t.storage.list_dir(t.storage.join(".hoodie", "metadata", ".hoodie"))]
        mdt = Timeline.from_file_names([n for n in mdt_names], where=".hoodie/metadata/.hoodie")
        in_mdt = {str(i.time) for i in mdt.completed()}
        first = min((str(i.time) for i in mdt), default=None)
        data = completed.with_actions(
            Action.COMMIT, Action.DELTA_COMMIT, Action.REPLACE_COMMIT, Action.CLEAN, Action.ROLLBACK
        )
        mdt_lag = sum(1 for i in data if first is not None and str(i.time) >= first and str(i.time) not in in_mdt)
    limit = int(table.options.get(SMALL_FILE_LIMIT_KEY, DEFAULT_SMALL_FILE_LIMIT))
    latest = tl.latest_completed_commit_time()
    slices = t.fs_view().latest_merged_file_slices_before_or_on(str(latest)) if latest else []
    small = sum(1 for s in slices if s.base_file is not None and 0 < s.base_file.size < limit)
    age = h.oldest_pending_compaction_age(now=now)
    return TableHealthRow(
        name=table.name,
        format="hudi",
        max_log_files_per_slice=h.max_log_files_per_slice,
        pending_compactions=h.pending_compactions,
        oldest_pending_compaction_age_s=None if age is None else round(max(age, 0.0), 1),
        cleaner_lag_commits=lag,
        active_instants=len(completed),
        metadata_table_lag=mdt_lag,
        small_files=small,
        latest_commit=str(latest) if latest else None,
    )


def _paimon_row(table: FleetTable) -> TableHealthRow:
    from lake_orchestration.paimon.health import paimon_table_health

    h = paimon_table_health(table.open())
    return TableHealthRow(
        name=table.name,
        format="paimon",
        max_log_files_per_slice=h.max_level0_files,
        pending_compactions=0,
        latest_commit=None if h.snapshot_id is None else str(h.snapshot_id),
    )


def table_health_row(table: FleetTable, *, now: float | None = None) -> TableHealthRow:
    """The judged row of one table; a table that cannot be read gets ``error`` (never raises for it)."""
    from lake_orchestration.errors import LakeOrchestrationError

    now = time.time() if now is None else now
    try:
        row = _paimon_row(table) if table.format == "paimon" else _hudi_row(table, now)
    except (LakeOrchestrationError, OSError, ValueError) as err:
        row = TableHealthRow(name=table.name, format=table.format, error=f"{type(err).__name__}: {err}")
    return _with_breaches(row, table.policy)


def _with_breaches(row: TableHealthRow, policy: TablePolicy) -> TableHealthRow:
    from dataclasses import replace

    return replace(row, breaches=judge(row, policy))


def fleet_health(tables: Iterable[FleetTable], *, parallelism: int = 8, now: float | None = None) -> FleetHealth:
    """The health rows of ``tables`` (read ``parallelism`` at a time), in the tables' order."""
    tables = list(tables)
    now = time.time() if now is None else now
    with ThreadPoolExecutor(max_workers=max(1, min(parallelism, len(tables) or 1))) as pool:
        rows = list(pool.map(lambda t: table_health_row(t, now=now), tables))
    return FleetHealth(rows=rows, measured_at=now)


def breaching_names(health: FleetHealth) -> Sequence[str]:
    """The names of the tables in breach."""
    return [r.name for r in health.breaching]
