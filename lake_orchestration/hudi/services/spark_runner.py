"""Run JSON-described tasks on Spark: one row per task, ``mapInArrow`` calls an importable task function.

Used by the table services to spread per-file-group work over executors; only the DataFrame API is used, so
Spark Connect works too. The task function takes one payload (JSON text) and returns result JSON texts.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from typing import Any

import pyarrow as pa


def run_json_tasks(spark: Any, payloads: list[str], task: str) -> list[str]:
    """Run ``task`` (``"module:function"``) on every payload, one Spark task per payload; returns all results."""
    if not payloads:
        return []
    df = spark.createDataFrame([(i, p) for i, p in enumerate(payloads)], "idx int, payload string")
    # range partitioning on the index gives exactly one payload per partition (hash partitioning does not)
    df = df.repartitionByRange(len(payloads), "idx")
    rows = df.mapInArrow(_Task(task), "result string").collect()
    return [r["result"] for r in rows]


class _Task:
    def __init__(self, task: str) -> None:
        self.task = task

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        # A Spark task owns one core: keep Arrow's own thread pool from competing with the other tasks.
        pa.set_cpu_count(1)
        module, _, name = self.task.partition(":")
        fn = getattr(importlib.import_module(module), name)
        out: list[str] = []
        for b in batches:
            for payload in b.column(1).to_pylist():
                out.extend(fn(payload))
        if out:
            yield pa.RecordBatch.from_pydict({"result": out})


def warm_up(payload: str) -> list[str]:
    """A no-op task that imports the per-file-group code, so Python workers are started before timed work."""
    import lake_orchestration.hudi.services.compaction.executor  # noqa: F401

    return []
