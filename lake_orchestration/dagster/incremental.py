"""Changes downstream: a Hudi table's new rows handed to the Dagster assets that consume it.

* :class:`HudiIncrementalIOManager` loads a Hudi table (the upstream asset) as the rows changed since the downstream
  asset's previous materialization: Hudi's incremental query (:func:`~lake_orchestration.hudi.table.read_incremental`)
  from the checkpoint that materialization recorded in its metadata (``hudi/incremental_checkpoint/<upstream>``);
  the first materialization gets a snapshot (every row, checkpoint = the latest completed instant). The loader adds
  the new checkpoint to the downstream asset's materialization metadata itself, so the checkpoint advances exactly
  when the downstream asset succeeds: a failed run records no materialization, and the next run gets the same
  changes again.
* :func:`hudi_new_commits_sensor` requests the downstream assets when new commits land on the table (cursor: the
  last completed instant); an instant that changes no row (a compaction or log compaction) requests nothing.

A compaction, log compaction or clustering rewrites records without changing their ``_hoodie_commit_time``, so
they never make old rows look new: the incremental query returns nothing for them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import dagster as dg
import pyarrow as pa
from pydantic import Field

from lake_orchestration.config.keys import HoodieKey
from lake_orchestration.dagster.config import HudiTableConfig
from lake_orchestration.dagster.errors import (
    PERMANENT_ERRORS,
    DagsterHudiError,
    PermanentHudiError,
    SensorCursorError,
)
from lake_orchestration.errors import InvalidOptionError, LakeOrchestrationError
from lake_orchestration.hudi.model.instant import Action
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.table.incremental import (
    HollowCommitError,
    HollowCommitPolicy,
    IncrementalQueryError,
    first_hollow_commit,
    hollow_commit_policy,
    read_incremental,
)
from lake_orchestration.hudi.table.snapshot import read_snapshot_table
from lake_orchestration.io.storage_options import parse_storage_options

CHECKPOINT_KEY = "hudi/incremental_checkpoint"
"""Prefix of the metadata key a downstream materialization records its checkpoint under, one per upstream table:
``hudi/incremental_checkpoint/<upstream asset key>`` (e.g. ``hudi/incremental_checkpoint/hudi/trips``)."""

ROWS_KEY = "hudi/incremental_rows"
"""Prefix of the metadata key holding how many changed rows the materialization received (informational)."""

READ_OPTIONS = (
    HoodieKey.READ_TIMELINE_HOLES_RESOLUTION_POLICY,
    HoodieKey.READ_INCR_FALLBACK_FULLTABLESCAN,
    HoodieKey.METADATA_ENABLE,
)
"""The Hudi read options the IO manager takes (the range itself comes from the checkpoint)."""

HISTORY_LIMIT = 100
"""Materializations of the downstream asset searched (newest first) for a checkpoint when the latest has none (one
reported by hand, or from another loader)."""

_WRITES = (Action.COMMIT, Action.DELTA_COMMIT, Action.REPLACE_COMMIT)
_NO_ROW_CHANGES = ("compaction", "logcompaction")  # <t>.<action>.requested beside a completed commit/deltacommit


def checkpoint_key(upstream: dg.AssetKey | str) -> str:
    """The metadata key of the checkpoint a downstream asset records for ``upstream`` (an asset key or a name)."""
    name = upstream.to_user_string() if isinstance(upstream, dg.AssetKey) else str(upstream)
    return f"{CHECKPOINT_KEY}/{name}"


@dataclass(frozen=True)
class HudiChanges:
    """What :class:`HudiIncrementalIOManager` loads when the downstream input is annotated ``HudiChanges``.

    Attributes:
        table: the rows (all columns, meta columns included).
        checkpoint: the next run's begin instant (the last completed instant read).
        begin_instant_time: the exclusive begin instant (the previous checkpoint); None for the first run's snapshot.
        instants: the completed instants read (the snapshot's: the instant it was read as of).
        source: the upstream asset key (user string), or the table's URI when the input has no asset.
        full_table_scan: the rows come from the incremental query's full-table-scan fallback.
    """

    table: pa.Table
    checkpoint: str
    begin_instant_time: str | None
    instants: tuple[str, ...]
    source: str
    full_table_scan: bool = False

    @property
    def snapshot(self) -> bool:
        """True for the first run: every row of the table, not the changes since a checkpoint."""
        return self.begin_instant_time is None

    @property
    def num_rows(self) -> int:
        return self.table.num_rows

    def metadata(self) -> dict[str, Any]:
        """The materialization metadata that records this load's checkpoint (what the loader adds by itself)."""
        return {
            checkpoint_key(self.source): dg.MetadataValue.text(self.checkpoint),
            f"{ROWS_KEY}/{self.source}": dg.MetadataValue.int(self.num_rows),
        }


@contextmanager
def _hudi_errors(table: str, uri: str) -> Iterator[None]:
    """A :class:`~lake_orchestration.errors.LakeOrchestrationError` leaves as a :class:`DagsterHudiError`
    (:class:`PermanentHudiError` for configuration and table-format errors), like the services' steps."""
    try:
        yield
    except LakeOrchestrationError as err:
        cls = PermanentHudiError if isinstance(err, PERMANENT_ERRORS) else DagsterHudiError
        raise cls(f"{type(err).__name__}: {err}", table=table, table_uri=uri, error=type(err).__name__) from err


def _read_options(options: Mapping[str, Any], *, where: str) -> dict[str, str]:
    allowed = {k for key in READ_OPTIONS for k in key.lookup_keys}
    out: dict[str, str] = {}
    for k, v in options.items():
        if k not in allowed:
            raise InvalidOptionError(
                f"{where}: option {k!r} is not one the incremental loader takes; expected one of "
                f"{[key.key for key in READ_OPTIONS]} (the range comes from the downstream asset's checkpoint)"
            )
        out[k] = str(v).lower() if isinstance(v, bool) else str(v)
    hollow_commit_policy(out)  # fails now on a bad value
    return out


def _previous_checkpoint(instance: dg.DagsterInstance, asset: dg.AssetKey, key: str) -> str | None:
    """The checkpoint the latest materialization of ``asset`` carrying ``key`` recorded (None: there is none)."""

    def value(entry: Any) -> str | None:
        mat = entry.asset_materialization if entry is not None else None
        md = mat.metadata.get(key) if mat is not None else None
        return str(md.value) if md is not None else None

    latest = instance.get_latest_materialization_event(asset)
    if latest is None:
        return None
    found = value(latest)
    if found is not None:
        return found
    for record in instance.fetch_materializations(asset, limit=HISTORY_LIMIT).records:
        found = value(record.event_log_entry)
        if found is not None:
            return found
    return None


def _snapshot(table: HudiTable, options: Mapping[str, str]) -> tuple[pa.Table, str, tuple[str, ...]]:
    """Every row as of the latest completed instant a checkpoint may stand on (the hollow-commit policy applies as
    for an incremental range), that instant (the checkpoint) and the instants read."""
    from lake_orchestration.hudi.table.incremental import _completion_times

    if not table.config.populate_meta_fields:
        raise IncrementalQueryError(
            table.base_uri,
            f"{HoodieKey.POPULATE_META_FIELDS.key}=false: the table has no _hoodie_commit_time column, so the changes "
            "after a first snapshot cannot be selected (Java refuses incremental queries on such tables too)",
        )
    policy = hollow_commit_policy(options)
    completed = list(table.timeline.completed().with_actions(*_WRITES))
    if policy is not HollowCommitPolicy.USE_TRANSITION_TIME:
        hollow = first_hollow_commit(table, completed)
        if hollow is not None:
            if policy is HollowCommitPolicy.FAIL:
                raise HollowCommitError(table.base_uri, str(hollow[0].time), str(hollow[1].time))
            completed = [i for i in completed if i.time < hollow[0].time]
    if not completed:
        return _empty(table), "0", ()
    as_of = str(completed[-1].time)
    rows = read_snapshot_table(table, as_of=as_of, options=options)
    checkpoint = as_of
    if policy is HollowCommitPolicy.USE_TRANSITION_TIME:  # the next range selects by completion time
        checkpoint = max(_completion_times(table, completed).values())
    return rows, checkpoint, (as_of,)


def _empty(table: HudiTable) -> pa.Table:
    from lake_orchestration.hudi.table.snapshot import table_arrow_schema

    schema = table_arrow_schema(table)
    return schema.empty_table() if schema is not None else pa.table({})


def _as_annotated(changes: HudiChanges, typing_type: Any) -> Any:
    """The loaded value in the type the input is annotated with: ``HudiChanges``, a pandas or polars DataFrame, or
    (anything else) the pyarrow Table."""
    if isinstance(typing_type, type):
        if issubclass(typing_type, HudiChanges):
            return changes
        module = typing_type.__module__.split(".")[0]
        if module == "pandas" and typing_type.__name__ == "DataFrame":
            return changes.table.to_pandas()
        if module == "polars" and typing_type.__name__ == "DataFrame":
            import polars as pl

            return pl.from_arrow(changes.table)
    return changes.table


class HudiIncrementalIOManager(dg.ConfigurableIOManager):
    """Loads a Hudi table as the rows changed since the downstream asset's previous materialization.

    Use it as the input manager of the downstream asset's input (``dg.AssetIn(key=..., input_manager_key=...)``) or
    as the IO manager of the upstream table asset (``dg.AssetSpec(...).with_io_manager_key(...)``). The first
    materialization of the downstream asset gets a snapshot (every row); each later one gets Hudi's incremental
    query from the checkpoint the previous one recorded (``hudi/incremental_checkpoint/<upstream>``; exclusive),
    up to the latest completed instant. The loader records the new checkpoint in the downstream asset's
    materialization metadata, so it advances only when the downstream asset succeeds.

    The value is a ``pyarrow.Table`` (all columns, meta columns included); annotate the input ``HudiChanges`` for the
    rows with their checkpoint and instants, or ``pandas.DataFrame`` / ``polars.DataFrame``. The table is read-only
    here: Dagster outputs are never written to it (:meth:`handle_output` refuses).
    """

    base_path: str = Field(description="The Hudi table's base path or URI (file, s3://, gs://, hdfs://).")
    storage_options: dict[str, Any] = Field(
        default_factory=dict,
        description="Storage options of the table's file system (the pyarrow.fs constructor's, e.g. region, "
        "endpoint_override); parsed as the CLI and the table configs parse them.",
    )
    options: dict[str, str] = Field(
        default_factory=dict,
        description="Hudi read options: hoodie.read.timeline.holes.resolution.policy (FAIL, BLOCK, "
        "USE_TRANSITION_TIME), hoodie.datasource.read.incr.fallback.fulltablescan.enable, hoodie.metadata.enable.",
    )

    def handle_output(self, context: dg.OutputContext, obj: Any) -> None:
        raise dg.DagsterInvariantViolationError(
            f"HudiIncrementalIOManager only loads the changes of {self.base_path}: it does not write asset outputs "
            f"(output {context.name!r}); give the Hudi table asset an observation or no function, and its writers "
            "their own jobs"
        )

    def open_table(self) -> HudiTable:
        """The table, opened with the parsed storage options."""
        opts = parse_storage_options(self.storage_options, source=f"HudiIncrementalIOManager({self.base_path})")
        return HudiTable(self.base_path, storage_options=opts)

    def load_changes(self, previous: str | None, *, source: str) -> HudiChanges:
        """The rows changed after checkpoint ``previous`` (None: a snapshot), without Dagster."""
        with _hudi_errors(source, self.base_path):
            options = _read_options(self.options, where=f"HudiIncrementalIOManager({self.base_path}).options")
            table = self.open_table()
            if previous is None:
                rows, checkpoint, instants = _snapshot(table, options)
                return HudiChanges(rows, checkpoint, None, instants, source)
            if not _is_instant_like(previous):
                raise InvalidOptionError(
                    f"{checkpoint_key(source)}={previous!r} in the downstream asset's previous materialization: "
                    "expected an instant time (yyyyMMddHHmmssSSS, or 0); report a materialization with a valid "
                    "checkpoint to resume from, or remove the asset's materializations to start with a snapshot"
                )
            result = read_incremental(table, begin_instant_time=previous, options=options)
            return HudiChanges(
                result.table,
                result.checkpoint,
                previous,
                tuple(str(i.time) for i in result.instants),
                source,
                full_table_scan=result.full_table_scan,
            )

    def load_input(self, context: dg.InputContext) -> Any:
        source = context.asset_key.to_user_string() if context.has_asset_key else self.base_path
        key = checkpoint_key(source)
        try:
            step = context.step_context
        except dg.DagsterInvariantViolationError:  # build_input_context without a step: nothing to record on
            step = None
        downstream = sorted(step.get_output_asset_keys(), key=lambda k: k.to_user_string()) if step else []
        previous: str | None = None
        if downstream:
            found = [_previous_checkpoint(context.instance, k, key) for k in downstream]
            # several assets of one step: the oldest checkpoint (a repeat, never a gap); one without: a snapshot
            previous = None if any(f is None for f in found) else min(found)  # type: ignore[type-var]
        changes = self.load_changes(previous, source=source)
        what = "snapshot" if changes.snapshot else f"changes after {previous}"
        context.log.info(
            f"Hudi {what} of {self.base_path}: {changes.num_rows} rows from {len(changes.instants)} instant(s); "
            f"checkpoint {changes.checkpoint}" + (" (full table scan fallback)" if changes.full_table_scan else "")
        )
        for asset in downstream:
            step.add_asset_metadata(changes.metadata(), asset_key=asset)  # type: ignore[union-attr]
        return _as_annotated(changes, context.dagster_type.typing_type)


def _is_instant_like(value: str) -> bool:
    """An instant time or a shorter prefix such as ``0`` (what an incremental query's begin instant accepts)."""
    return value.isdigit() and len(value) <= 20


def _cursor_time(value: Any) -> str:
    if not isinstance(value, str) or not _is_instant_like(value):
        raise ValueError(f"{value!r} is not an instant time")
    return value


@dataclass(frozen=True, kw_only=True)
class NewCommitsCursor:
    """The cursor of :func:`hudi_new_commits_sensor`: the last completed instant it has seen, and the write instants
    still pending before it (a commit that completes after a later one still triggers a run)."""

    last_completed: str | None = None
    pending: frozenset[str] = frozenset()

    EXPECTED = '{"last_completed": "<instant>", "pending": [instants]} or an instant time'

    def to_json(self) -> str:
        return json.dumps({"last_completed": self.last_completed, "pending": sorted(self.pending)})

    @classmethod
    def from_json(cls, cursor: str | None, *, table: str, sensor: str) -> NewCommitsCursor:
        """Decode a cursor (None or empty: the first evaluation; a bare instant time: the last completed instant).

        Raises:
            SensorCursorError: neither the JSON form nor an instant time.
        """
        if not cursor or not cursor.strip():
            return cls()
        text = cursor.strip()
        try:
            if text.isdigit():
                return cls(last_completed=_cursor_time(text))
            data = json.loads(text)
            if not isinstance(data, dict) or "last_completed" not in data:
                raise KeyError("last_completed")
            last = data["last_completed"]
            pending = data.get("pending", [])
            if not isinstance(pending, list):
                raise TypeError("'pending' is not a list")
            return cls(
                last_completed=_cursor_time(last) if last is not None else None,
                pending=frozenset(_cursor_time(p) for p in pending),
            )
        except (ValueError, KeyError, TypeError) as err:
            raise SensorCursorError(
                table=table, sensor=sensor, cursor=cursor, expected=cls.EXPECTED, detail=str(err)
            ) from err


def new_commits(table: HudiTable, cursor: NewCommitsCursor) -> tuple[list[str], NewCommitsCursor]:
    """The completed commits, deltacommits and replacecommits that change rows and that ``cursor`` has not seen,
    and the cursor after them, from the table's timeline as listed once.

    A completed compaction or log compaction (its ``.compaction.requested`` / ``.logcompaction.requested`` file
    beside the commit) changes no row and is not returned, but the cursor moves past it. Clustering is returned (its
    plan would take a read per replacecommit to tell apart; its run finds no change).
    """
    names = table.timeline_file_names()
    writes = list(table.timeline.with_actions(*_WRITES))
    completed = [str(i.time) for i in writes if i.is_completed]

    def changes_rows(t: str) -> bool:
        return not any(f"{t}.{a}.requested" in names for a in _NO_ROW_CHANGES)

    last = cursor.last_completed
    fresh = [t for t in completed if (last is None or t > last or t in cursor.pending) and changes_rows(t)]
    newest = max([*completed, *([last] if last else [])], default=None)
    pending = frozenset(str(i.time) for i in writes if not i.is_completed and newest is not None and i.time < newest)
    return fresh, NewCommitsCursor(last_completed=newest, pending=pending)


def hudi_new_commits_sensor(
    table: HudiTableConfig | str,
    asset_selection: dg.AssetSelection | Sequence[dg.AssetKey | dg.AssetsDefinition | str],
    *,
    storage_options: Mapping[str, Any] | None = None,
    name: str | None = None,
    minimum_interval_seconds: int = 30,
    default_status: dg.DefaultSensorStatus = dg.DefaultSensorStatus.STOPPED,
) -> dg.SensorDefinition:
    """A sensor that requests ``asset_selection`` (the assets that load the table's changes) when new commits land.

    Each tick lists the table's timeline once. A completed commit, deltacommit or replacecommit after the cursor
    (or one that was pending before it and has completed since) requests one run of the selection, keyed by the
    newest such instant; a compaction or log compaction alone requests nothing (it changes no row). The cursor is
    the last completed instant (:class:`NewCommitsCursor`); the first tick requests a run if the table has any
    commit, so the downstream assets get their first snapshot.

    Args:
        table: the table's :class:`~lake_orchestration.dagster.HudiTableConfig`, or its base path.
        asset_selection: the downstream assets to request.
        storage_options: with a base path: its storage options (a config brings its own).
        name: the sensor's name (default ``<table>__new_commits_sensor``).
        minimum_interval_seconds: between ticks.
        default_status: STOPPED (Dagster's default) or RUNNING.
    """
    if isinstance(table, HudiTableConfig):
        table_name, base_path = table.name, table.base_path

        def open_table() -> HudiTable:
            return table.open_table()  # type: ignore[return-value]
    else:
        base_path = str(table)
        table_name = base_path.rstrip("/").rsplit("/", 1)[-1] or base_path
        opts = parse_storage_options(storage_options, source=f"hudi_new_commits_sensor({base_path})")

        def open_table() -> HudiTable:
            return HudiTable(base_path, storage_options=opts)

    sensor_name = name or f"{table_name}__new_commits_sensor"

    @dg.sensor(
        name=sensor_name,
        asset_selection=asset_selection,
        minimum_interval_seconds=minimum_interval_seconds,
        default_status=default_status,
        description=(
            f"Requests the assets that consume {table_name}'s changes when a commit, deltacommit or replacecommit "
            "that changes rows completes on its timeline (a compaction alone requests nothing). Cursor: the last "
            "completed instant."
        ),
    )
    def _sensor(context: dg.SensorEvaluationContext) -> dg.SensorResult:
        cursor = NewCommitsCursor.from_json(context.cursor, table=table_name, sensor=sensor_name)
        with _hudi_errors(table_name, base_path):
            fresh, after = new_commits(open_table(), cursor)
        if not fresh:
            return dg.SensorResult(
                skip_reason=f"no new commit changing rows on {table_name} after {after.last_completed}",
                cursor=after.to_json() if after != cursor else None,
            )
        newest = max(fresh)
        return dg.SensorResult(
            run_requests=[
                dg.RunRequest(run_key=newest, tags={"hudi/instant": newest, "hudi/new_commits": str(len(fresh))})
            ],
            cursor=after.to_json(),
        )

    return _sensor
