"""The snapshot read on an engine: one engine task per file slice (a Spark DataFrame of the merged rows on the Spark
engine), the Hudi side of what the engine runs; the engine itself knows nothing of Hudi.

Example (on Spark; see ``docs/snippets/read_on_spark.py``)::

    df = snapshot_dataframe(SparkEngine(spark), HudiTable(path))  # a DataFrame: the work stays on the cluster
    rows = read_snapshot_on(SparkEngine(spark), HudiTable(path))  # or collected as a pyarrow.Table
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from lake_orchestration.hudi.log.scanner import InstantFilter
from lake_orchestration.hudi.merge.record_merger import MergeConfig, conform
from lake_orchestration.hudi.model.file_group import FileSlice
from lake_orchestration.hudi.table.hudi_table import HudiTable
from lake_orchestration.hudi.table.snapshot import (
    merge_config_for,
    read_file_slice,
    read_snapshot_table,
    table_arrow_schema,
)
from lake_orchestration.io.storage import Storage


@dataclass(frozen=True)
class SliceReadTask:
    """One file slice to read: an engine task (see :mod:`lake_orchestration.engines.base`)."""

    base_uri: str
    file_slice: FileSlice
    storage_options: dict[str, Any] = field(default_factory=dict, repr=False)
    """Storage options (secrets: never shown in a repr, never encoded as data)."""


@dataclass(frozen=True)
class ReadSlices:
    """The engine's task function: the merged rows of a slice, as of ``instant_filter``, with ``schema``'s columns
    (picklable: it travels to the executors with the filter, the merge config and the schema)."""

    instant_filter: InstantFilter
    merge: MergeConfig
    schema: pa.Schema

    def __call__(self, task: SliceReadTask) -> Iterator[pa.Table]:
        storage = Storage(task.base_uri, options=task.storage_options)
        for t in read_file_slice(storage, task.file_slice, instant_filter=self.instant_filter, merge_config=self.merge):
            yield conform(t, self.schema)


def snapshot_dataframe(engine: Any, table: HudiTable) -> Any:
    """A DataFrame of the merged snapshot (lazy), one engine task per file slice, on an engine with ``map_arrow``
    (the Spark engine); None for a table with no completed commit."""
    latest = table.timeline.latest_completed_commit_time()
    if latest is None:
        return None
    slices = table.fs_view().latest_merged_file_slices_before_or_on(str(latest))
    schema = table_arrow_schema(table)
    if schema is None or not slices:
        return None
    fn = ReadSlices(
        InstantFilter.from_timeline(table.timeline, latest_instant=str(latest)), merge_config_for(table), schema
    )
    tasks = [SliceReadTask(table.base_uri, s, storage_options=table.storage.options) for s in slices]
    return engine.map_arrow(fn, tasks, schema, description=f"snapshot read of {table.base_uri}")


def read_snapshot_on(engine: Any, table: HudiTable) -> pa.Table:
    """The merged snapshot as an Arrow table: read by ``engine`` (one task per file slice) when it can return rows
    (the Spark engine's ``map_arrow``), else in this process (:func:`~.snapshot.read_snapshot_table`)."""
    if not hasattr(engine, "map_arrow"):
        return read_snapshot_table(table)
    df = snapshot_dataframe(engine, table)
    if df is None:
        schema = table_arrow_schema(table)
        return schema.empty_table() if schema is not None else pa.table({})
    return engine.collect_arrow(df, description=f"snapshot read of {table.base_uri}")  # type: ignore[no-any-return]
