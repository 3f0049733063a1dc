"""Incremental pulls: the rows a Hudi table changed since the previous DAG run, written to a Parquet file.

:class:`HudiIncrementalPullOperator` reads the table's changes since its checkpoint with Hudi's incremental query
(:func:`~lake_orchestration.hudi.table.incremental.read_incremental`: ``hoodie.datasource.read.begin.instanttime``
exclusive, each record at its latest version in the range; compaction and clustering never make old rows look new),
writes them to one Parquet file at a templated path (local, or the table's object store with the connection's
storage options) and returns a small dict as its XCom (``path``, ``rows``, ``begin``, ``end`` ...), never the rows.
The first run reads a snapshot (or the changes after ``hoodie.datasource.read.begin.instanttime`` when given).

Where the checkpoint lives (Airflow 3.3's state stores):

* **between DAG runs**: the asset state store of the operator's ``checkpoint_asset`` (an outlet of the task:
  by default ``Asset("hudi_changes.<dag_id>.<task_id>")``), key :data:`CHECKPOINT_KEY`. That store is made for
  watermarks: not scoped to a DAG run, kept until deleted (no retention expiry, unlike XComs and the task state
  store), readable by a sensor (:class:`~lake_orchestration.airflow.sensors.HudiNewCommitsSensor`) and by the UI/API,
  and a downstream DAG scheduled on the asset runs after each pull. The previous run's XCom
  (``xcom_pull(include_prior_dates=True)``) was not chosen: it orders runs by logical date, which asset-triggered
  and manual runs of Airflow 3 do not have, and ``airflow db clean`` would silently reset it to a snapshot.
  It is advanced only after the output file is written, and only forward, so a failed task does not advance it.
* **across the retries of one run**: the task state store (scoped to the DAG run, shared by its tries), key
  :data:`RANGE_KEY`, pins the run's range (begin, end) before the output is written: a retry re-reads the same
  range and writes the same file, also when the try that failed had advanced the checkpoint already.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from airflow.sdk import Asset

from lake_orchestration.airflow.hooks import HudiTableLocation
from lake_orchestration.airflow.operators import HudiTableOperator
from lake_orchestration.config.keys import HoodieKey
from lake_orchestration.errors import InvalidOptionError

if TYPE_CHECKING:
    import pyarrow as pa
    from airflow.sdk import Context

    from lake_orchestration.hudi.table import HudiTable

CHECKPOINT_KEY = "hudi_incremental_checkpoint"
"""Key of the checkpoint in the asset state store: ``{"instant": <last instant read>, "base_path": <table>}``."""

RANGE_KEY = "hudi_incremental_range"
"""Key of the run's pinned range in the task state store: ``{"begin", "end", "snapshot"}``."""


def as_asset(value: Asset | str, *, source: str) -> Asset:
    """An ``Asset`` (a string is its name)."""
    if isinstance(value, Asset):
        return value
    if isinstance(value, str) and value.strip():
        return Asset(name=value.strip())
    raise TypeError(f"{source}: checkpoint_asset is {type(value).__name__} {value!r}, expected an Asset or a name")


def read_checkpoint(context: Context, asset: Asset, base_path: str) -> str | None:
    """The checkpoint (last instant read) stored on ``asset``, None before the first pull.

    Raises:
        InvalidOptionError: the checkpoint was stored for another table (the asset was pointed at a new table:
            delete its ``hudi_incremental_checkpoint`` state to start over with a snapshot).
    """
    stored = context["asset_state_store"][asset].get(CHECKPOINT_KEY)
    if stored is None:
        return None
    if not isinstance(stored, dict) or not isinstance(stored.get("instant"), str):
        raise InvalidOptionError(
            f"asset {asset.name!r}: state {CHECKPOINT_KEY!r} is {stored!r}, expected "
            '{"instant": "<instant time>", "base_path": "<table>"}'
        )
    where = str(stored.get("base_path") or "")
    if where and where.rstrip("/") != base_path.rstrip("/"):
        raise InvalidOptionError(
            f"asset {asset.name!r}: the checkpoint {stored['instant']} in state {CHECKPOINT_KEY!r} is of table "
            f"{where}, not of {base_path}; delete that state key (or use another checkpoint_asset) to start over"
        )
    return stored["instant"]


@dataclass(frozen=True)
class Changes:
    """What a pull read: the rows and the range they cover."""

    rows: pa.Table
    begin: str | None
    """The exclusive lower bound (None: a snapshot)."""
    end: str
    """The checkpoint after this pull: the last instant read (its completion time under
    ``USE_TRANSITION_TIME``); ``begin`` when nothing was new."""
    commits: int
    """Completed commits in the range (compaction and other table services included)."""
    as_of: str | None = None
    """The snapshot's instant (a snapshot only)."""
    full_table_scan: bool = False


def read_changes(table: HudiTable, *, begin: str, end: str | None, options: Mapping[str, str]) -> Changes:
    """The changes in ``(begin, end]`` (``end`` None: up to the latest completed commit)."""
    from lake_orchestration.hudi.table.incremental import read_incremental

    got = read_incremental(table, begin_instant_time=begin, end_instant_time=end, options=options)
    return Changes(got.table, begin, got.checkpoint, len(got.instants), full_table_scan=got.full_table_scan)


def read_first_snapshot(
    table: HudiTable, *, options: Mapping[str, str], as_of: str | None = None, end: str | None = None
) -> Changes:
    """The snapshot as of ``as_of`` (None: the latest completed commit the hollow-commit policy lets a checkpoint
    pass, so the next incremental read misses no commit still pending), and the checkpoint after it (``end``:
    given on a retry)."""
    import pyarrow as pa

    from lake_orchestration.hudi.table import read_snapshot_table
    from lake_orchestration.hudi.table.incremental import (
        HollowCommitError,
        HollowCommitPolicy,
        first_hollow_commit,
        hollow_commit_policy,
        read_incremental,
    )
    from lake_orchestration.hudi.table.snapshot import table_arrow_schema

    completed = list(table.timeline.completed_commits())
    if as_of is None:
        policy = hollow_commit_policy(options)
        if policy is not HollowCommitPolicy.USE_TRANSITION_TIME:
            hollow = first_hollow_commit(table, completed)
            if hollow is not None and policy is HollowCommitPolicy.FAIL:
                raise HollowCommitError(table.base_uri, str(hollow[0].time), str(hollow[1].time))
            if hollow is not None:
                completed = [i for i in completed if i.time < hollow[0].time]
        if not completed:  # nothing committed yet: the next pull reads every commit
            schema = table_arrow_schema(table)
            return Changes(schema.empty_table() if schema is not None else pa.table({}), None, "0", 0)
        as_of = str(completed[-1].time)
        end = as_of
        if policy is HollowCommitPolicy.USE_TRANSITION_TIME:
            # the checkpoint is a completion time under this policy: that of the last instant to complete
            end = read_incremental(table, begin_instant_time=as_of, options=options).checkpoint
    rows = read_snapshot_table(table, as_of=as_of, options=options)
    commits = len([i for i in completed if i.time <= as_of])
    return Changes(rows, None, end or as_of, commits, as_of=as_of)


def _write_parquet(rows: pa.Table, uri: str, location: HudiTableLocation) -> str:
    """Write ``rows`` to ``uri`` as one Parquet file, replacing it whole (local: a temporary file renamed over it;
    an object store: one PUT). Returns the URI written."""
    import os
    import uuid

    import pyarrow as pa
    import pyarrow.parquet as pq

    from lake_orchestration.errors import StorageError
    from lake_orchestration.io.storage import Storage

    scheme = urlparse(uri).scheme.lower()
    table_scheme = urlparse(location.base_path).scheme.lower()
    if scheme in ("", "file"):
        path = urlparse(uri).path if scheme == "file" else uri
        parent = os.path.dirname(os.path.abspath(path))
        tmp = os.path.join(parent, f".{os.path.basename(path)}.{uuid.uuid4().hex}.tmp")
        try:
            os.makedirs(parent, exist_ok=True)
            pq.write_table(rows, tmp)
            os.replace(tmp, path)
        except OSError as err:
            if os.path.exists(tmp):
                os.remove(tmp)
            raise StorageError(f"Cannot write the changes ({err})", path=path) from err
        return path
    parent_uri, _, name = uri.rstrip("/").rpartition("/")
    # the table's object store: the connection's storage options (credentials, endpoint) apply
    options = location.storage_options if scheme == table_scheme else {}
    storage = Storage(parent_uri, options=options)
    sink = pa.BufferOutputStream()
    pq.write_table(rows, sink)
    storage.write_bytes(storage.join(name), sink.getvalue().to_pybytes())
    return uri


class HudiIncrementalPullOperator(HudiTableOperator):
    """Write the table's changes since the previous successful pull to ``output_path`` (one Parquet file).

    Returns ``{"path", "rows", "begin", "end", "commits", "snapshot", "full_table_scan"}`` (also the ``extra`` of
    the asset event on ``checkpoint_asset``): ``begin`` the previous checkpoint (None on a snapshot), ``end`` the new
    one (the last instant read). The rows carry Hudi's meta columns (``_hoodie_commit_time`` ...), each record at
    its latest version in the range.

    Args:
        output_path: where the file goes (templated: ``"/data/changes/{{ run_id }}.parquet"``,
            ``"s3://bucket/changes/{{ run_id }}.parquet"``). On the table's object store (same scheme) the
            connection's storage options are used; a rerun of the task replaces the file.
        checkpoint_asset: the asset (an outlet of the task) whose state store keeps the checkpoint; default
            ``Asset("hudi_changes.<dag_id>.<task_id>")``. Give the same asset to a
            :class:`~lake_orchestration.airflow.sensors.HudiNewCommitsSensor` to wait for changes past it.
        options: Hudi's read options: ``hoodie.datasource.read.begin.instanttime`` (the first run's exclusive begin
            instead of a snapshot), ``hoodie.read.timeline.holes.resolution.policy`` (FAIL, BLOCK,
            USE_TRANSITION_TIME), ``hoodie.datasource.read.incr.fallback.fulltablescan.enable`` (a range whose files
            clean removed falls back to the snapshot filtered by commit time instead of failing).
    """

    template_fields: Sequence[str] = (*HudiTableOperator.template_fields, "output_path")
    ui_color = "#e0f0e3"

    def __init__(self, *, output_path: str, checkpoint_asset: Asset | str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.output_path = output_path
        source = f"{type(self).__name__} {self.task_id!r}"
        if checkpoint_asset is None:
            if not self.has_dag():
                raise ValueError(f"{source}: not in a DAG, so give checkpoint_asset (the asset keeping the checkpoint)")
            checkpoint_asset = Asset(name=f"hudi_changes.{self.dag_id}.{self.task_id}")
        self.checkpoint_asset = as_asset(checkpoint_asset, source=source)
        if self.checkpoint_asset not in self.outlets:
            self.outlets = [*self.outlets, self.checkpoint_asset]
        if HoodieKey.READ_END_INSTANTTIME.key in self.options:
            raise InvalidOptionError(
                f"{source}: {HoodieKey.READ_END_INSTANTTIME.key} is not an option of a pull: each run reads up to "
                "the latest completed commit and the next one begins there"
            )
        begin = self.options.get(HoodieKey.READ_BEGIN_INSTANTTIME.key)
        if begin is not None and "{{" not in str(begin) and not str(begin).strip().isdigit():
            raise InvalidOptionError(
                f"{source}: {HoodieKey.READ_BEGIN_INSTANTTIME.key}={begin!r}, expected an instant time "
                "(yyyyMMddHHmmssSSS, or 0 for every commit)"
            )

    def execute(self, context: Context) -> dict[str, Any]:
        location = self.location()
        options = self.service_options(location)
        output = str(self.output_path or "").strip()
        if not output:
            raise InvalidOptionError(f"task {self.task_id!r}: output_path is empty, expected a file path or URI")
        map_index = getattr(context.get("ti"), "map_index", -1)
        if map_index is not None and map_index >= 0:
            raise InvalidOptionError(
                f"task {self.task_id!r} is mapped (map index {map_index}): its mapped tasks would share the one "
                f"checkpoint on asset {self.checkpoint_asset.name!r}; use one pull task (and asset) per table"
            )
        table = location.open_table()
        task_state = context["task_state_store"]
        pinned = task_state.get(RANGE_KEY)
        if isinstance(pinned, dict):  # a retry of this run: the range its first try read
            self.log.info("Retry: reading the range of this run's first try again: %s", pinned)
            begin = pinned.get("begin")
            if pinned.get("snapshot"):
                changes = read_first_snapshot(table, options=options, as_of=pinned.get("as_of"), end=pinned["end"])
            else:
                changes = read_changes(table, begin=str(begin), end=str(pinned["end"]), options=options)
        else:
            checkpoint = read_checkpoint(context, self.checkpoint_asset, location.base_path)
            begin = checkpoint or options.get(HoodieKey.READ_BEGIN_INSTANTTIME.key)
            if begin is None:
                changes = read_first_snapshot(table, options=options)
            else:
                changes = read_changes(table, begin=str(begin), end=None, options=options)
            pin = {"begin": begin, "end": changes.end, "snapshot": begin is None, "as_of": changes.as_of}
            task_state.set(RANGE_KEY, pin)
        snapshot = begin is None
        path = _write_parquet(changes.rows, output, location)
        self.log.info(
            "%s: %d changed row(s) %s -> %s",
            location.base_path,
            changes.rows.num_rows,
            "snapshot" if snapshot else f"after {begin} up to {changes.end}",
            path,
        )
        # the output is durable: advance the checkpoint (forward only: a rerun of an older run leaves it)
        store = context["asset_state_store"][self.checkpoint_asset]
        current = read_checkpoint(context, self.checkpoint_asset, location.base_path)
        if current is None or changes.end > current:
            store.set(CHECKPOINT_KEY, {"instant": changes.end, "base_path": location.base_path})
        result = {
            "path": path,
            "rows": changes.rows.num_rows,
            "begin": begin,
            "end": changes.end,
            "commits": changes.commits,
            "snapshot": snapshot,
            "full_table_scan": changes.full_table_scan,
        }
        # the asset event carries it too: a DAG scheduled on the asset finds the file in triggering_asset_events
        context["outlet_events"][self.checkpoint_asset].extra = result
        return result
