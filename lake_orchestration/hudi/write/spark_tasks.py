"""Run file-group write tasks on Spark: one group of records per task, shipped with ``mapInArrow``.

The records of every file group are put in one DataFrame with a group column, repartitioned by it, and each
Spark task writes the groups of its partition and returns their write stats as JSON rows. Only the DataFrame
API is used, so this also works over Spark Connect. The contexts, with the storage options completed for executors
(:func:`~lake_orchestration.io.executor_options.options_for_executors`), travel only inside the pickled task
function: never in the DataFrame, a plan, a job description or a log line.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import asdict
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from lake_orchestration.hudi.model.commit_metadata import WriteStat
from lake_orchestration.hudi.write.file_group_writer import FileGroupWriteContext, write_file_group
from lake_orchestration.io.executor_options import options_for_executors

GROUP_COLUMN = "__lo_group"


def run_tasks_on_spark(spark: Any, tasks: list[tuple[FileGroupWriteContext, pa.Table]]) -> list[WriteStat]:
    if not tasks:
        return []
    tables = []
    contexts = {}
    executor_options: dict[str, dict] = {}
    for n, (ctx, recs) in enumerate(tasks):
        if ctx.base_uri not in executor_options:
            executor_options[ctx.base_uri] = options_for_executors(ctx.base_uri, ctx.storage_options)
        contexts[n] = json.dumps({**asdict(ctx), "storage_options": executor_options[ctx.base_uri]})
        tables.append(recs.append_column(GROUP_COLUMN, pa.array([n] * recs.num_rows, pa.int32())))
    data = pa.concat_tables(tables, promote_options="permissive")
    df = spark.createDataFrame(data)
    # one Spark partition per file group up to a bound (no sparkContext: this must work over Spark Connect)
    parallelism = max(1, min(len(tasks), 256))
    df = df.repartitionByRange(parallelism, GROUP_COLUMN)
    fn = _WriteGroups(contexts, data.schema)
    rows = df.mapInArrow(fn, "stat string").collect()
    return [WriteStat.from_json_obj(json.loads(r["stat"])) for r in rows]


class _WriteGroups:
    """Picklable task: collect each group's batches of the partition, write the group, yield its stats."""

    def __init__(self, contexts: dict[int, str], schema: pa.Schema) -> None:
        self.contexts = contexts
        self.schema = schema

    def __repr__(self) -> str:  # never show the contexts' storage options
        return f"_WriteGroups({len(self.contexts)} groups)"

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext

        tc = TaskContext.get()
        stage = tc.stageId() if tc else 1
        attempt = tc.taskAttemptId() if tc else 0
        parts: dict[int, list[pa.Table]] = {}
        for b in batches:
            t = pa.Table.from_batches([b])
            for g in pc.unique(t.column(GROUP_COLUMN)).to_pylist():
                parts.setdefault(g, []).append(t.filter(pc.equal(t.column(GROUP_COLUMN), g)))
        out = []
        for g, ts in parts.items():
            recs = pa.concat_tables(ts).drop_columns([GROUP_COLUMN])
            recs = pa.Table.from_arrays(
                [recs.column(f.name).cast(f.type) for f in self.schema if f.name != GROUP_COLUMN],
                schema=pa.schema([f for f in self.schema if f.name != GROUP_COLUMN]),
            )
            ctx = FileGroupWriteContext(**json.loads(self.contexts[g]))
            ctx = FileGroupWriteContext(**{**asdict(ctx), "stage_id": stage, "attempt_id": attempt})
            for s in write_file_group(recs, ctx):
                out.append(json.dumps(s.to_json_obj()))
        if out:
            yield pa.RecordBatch.from_pydict({"stat": out})
