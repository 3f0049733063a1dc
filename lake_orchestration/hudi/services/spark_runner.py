"""Run JSON-described tasks on Spark: one row per task, ``mapInArrow`` calls an importable task function.

Used by the table services to spread per-file-group work over executors; only the DataFrame API is used, so
Spark Connect works too. The task function takes one payload (JSON text) and returns result JSON texts.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from typing import Any

import pyarrow as pa

_CLOSURE_LIMIT = 1 << 20
"""Payloads up to this many bytes in all travel inside the task closure; larger sets go through a DataFrame."""


def run_json_tasks(spark: Any, payloads: list[str], task: str) -> list[str]:
    """Run ``task`` (``"module:function"``) on every payload, one Spark task per payload; returns all results.

    The tasks are ``spark.range(n, numPartitions=n)`` (partition i holds exactly the id i) and the payloads travel
    in the pickled task function: no local DataFrame upload and no range partitioning (whose bound sampling is a
    job of its own). Payload sets above 1 MiB (the pickled function goes to every task) are uploaded as a
    DataFrame and range-partitioned instead.
    """
    if not payloads:
        return []
    n = len(payloads)
    if sum(len(p) for p in payloads) <= _CLOSURE_LIMIT:
        df = spark.range(n, numPartitions=n)
        fn = _Task(task, payloads)
    else:
        df = spark.createDataFrame(list(enumerate(payloads)), "idx int, payload string")
        # range partitioning on the index gives exactly one payload per partition (hash partitioning does not)
        df = df.repartitionByRange(n, "idx")
        fn = _Task(task)
    rows = df.mapInArrow(fn, "result string").collect()
    return [r["result"] for r in rows]


class _Task:
    def __init__(self, task: str, payloads: list[str] | None = None) -> None:
        self.task = task
        self.payloads = payloads

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        # A Spark task owns one core: keep Arrow's own thread pool from competing with the other tasks.
        pa.set_cpu_count(1)
        module, _, name = self.task.partition(":")
        fn = getattr(importlib.import_module(module), name)
        out: list[str] = []
        for b in batches:
            if self.payloads is not None:  # rows of spark.range: payload ids
                todo = [self.payloads[i] for i in b.column(0).to_pylist()]
            else:  # rows (idx, payload)
                todo = b.column(1).to_pylist()
            for payload in todo:
                out.extend(fn(payload))
        if out:
            yield pa.RecordBatch.from_pydict({"result": out})


def warm_up(payload: str) -> list[str]:
    """A no-op task that imports the per-file-group code, so Python workers are started before timed work."""
    import lake_orchestration.hudi.services.compaction.executor  # noqa: F401

    return []
