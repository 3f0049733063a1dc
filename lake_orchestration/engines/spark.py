"""The Spark engine: file slices are the unit of work, shipped to executors with ``mapInArrow``.

The SparkSession is injected (from dagster-pyspark, or :func:`local_spark_session`), never created here. Only the
DataFrame API is used, so it also works over Spark Connect.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import asdict
from typing import Any

import pyarrow as pa

from lake_orchestration.hudi.log.scanner import InstantFilter
from lake_orchestration.hudi.model.file_group import BaseFile, FileGroupId, FileSlice, LogFile
from lake_orchestration.hudi.model.instant import InstantTime
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.table.snapshot import merge_config_for, read_file_slice, table_arrow_schema
from lake_orchestration.io.executor_options import options_for_executors


def slice_to_json(s: FileSlice) -> str:
    return json.dumps(
        {
            "partition": s.partition_path,
            "file_id": s.file_id,
            "base_instant": str(s.base_instant),
            "base_file": [s.base_file.name, s.base_file.size] if s.base_file else None,
            "log_files": [[lf.name, lf.size] for lf in s.log_files],
        }
    )


def slice_from_json(text: str) -> FileSlice:
    d = json.loads(text)
    p = d["partition"]
    base = BaseFile.parse(d["base_file"][0], partition_path=p, size=d["base_file"][1]) if d["base_file"] else None
    logs = tuple(LogFile.parse(n, partition_path=p, size=sz) for n, sz in d["log_files"])
    return FileSlice(FileGroupId(p, d["file_id"]), InstantTime(d["base_instant"]), base, logs)


class SparkEngine:
    """Runs per-slice tasks on Spark.

    Args:
        spark: an active SparkSession (classic or Spark Connect).
    """

    name = "spark"

    def __init__(self, spark: Any) -> None:
        self.spark = spark

    def read_snapshot(self, table: HudiTable) -> pa.Table:
        """The merged snapshot, one Spark task per file slice; returns an Arrow table on the driver."""
        df = self.snapshot_dataframe(table)
        if df is None:
            schema = table_arrow_schema(table)
            return schema.empty_table() if schema is not None else pa.table({})
        return df.toArrow()

    def snapshot_dataframe(self, table: HudiTable) -> Any:
        """A Spark DataFrame of the merged snapshot (None for a table with no completed commit)."""
        latest = table.timeline.latest_completed_commit_time()
        if latest is None:
            return None
        slices = table.fs_view().latest_merged_file_slices_before_or_on(str(latest))
        schema = table_arrow_schema(table)
        if schema is None or not slices:
            return None
        from pyspark.sql.pandas.types import from_arrow_schema

        spark_schema = from_arrow_schema(schema)
        flt = InstantFilter.from_timeline(table.timeline, latest_instant=str(latest))
        task = _SliceReadTask(
            base_uri=table.base_uri,
            storage_options=options_for_executors(table.base_uri, table.storage.options),
            flt=json.dumps({k: sorted(v) if isinstance(v, frozenset) else v for k, v in asdict(flt).items()}),
            merge=json.dumps(
                {
                    "semantics": merge_config_for(table).semantics.value,
                    "ordering_field": merge_config_for(table).ordering_field,
                    "key_field": merge_config_for(table).key_field,
                }
            ),
            schema=schema,
        )
        # one partition per file slice (no sparkContext: this must work over Spark Connect)
        ops = (
            self.spark.createDataFrame([(i, slice_to_json(s)) for i, s in enumerate(slices)], "idx int, slice string")
            .repartitionByRange(max(1, min(len(slices), 256)), "idx")
            .select("slice")
        )
        return ops.mapInArrow(task, spark_schema)


class _SliceReadTask:
    """Picklable per-partition function: read each slice of the batch and yield its merged rows. The storage options
    (completed for executors) travel only inside it."""

    def __init__(
        self, *, base_uri: str, storage_options: dict[str, str], flt: str, merge: str, schema: pa.Schema
    ) -> None:
        self.base_uri = base_uri
        self.storage_options = storage_options
        self.flt = flt
        self.merge = merge
        self.schema = schema

    def __repr__(self) -> str:  # never show the storage options
        return f"_SliceReadTask({self.base_uri!r})"

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from lake_orchestration.hudi.merge.record_merger import MergeConfig, conform
        from lake_orchestration.hudi.model.properties import MergeSemantics
        from lake_orchestration.io.storage import Storage

        storage = Storage(self.base_uri, options=self.storage_options)
        f = json.loads(self.flt)
        flt = InstantFilter(
            latest_instant=f["latest_instant"],
            completed=frozenset(f["completed"]),
            inflight=frozenset(f["inflight"]),
            timeline_start=f["timeline_start"],
        )
        m = json.loads(self.merge)
        cfg = MergeConfig(
            semantics=MergeSemantics(m["semantics"]), ordering_field=m["ordering_field"], key_field=m["key_field"]
        )
        for batch in batches:
            for text in batch.column(0).to_pylist():
                for t in read_file_slice(storage, slice_from_json(text), instant_filter=flt, merge_config=cfg):
                    yield from conform(t, self.schema).to_batches()
