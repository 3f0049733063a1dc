"""Run JSON-described tasks on Spark: one row per task, ``mapInArrow`` calls an importable task function.

Used by the table services to spread per-file-group work over executors; only the DataFrame API is used, so
Spark Connect works too. The task function takes one payload (JSON text) and returns result JSON texts.

Storage options never travel in a DataFrame (nor in a plan, a job description or a log line): a payload's
``storage_options`` is taken out of it on the driver, completed with what the driver resolves from its environment
(:func:`~lake_orchestration.io.executor_options.options_for_executors`), and shipped inside the pickled task
function, which puts it back into the payload on the executor.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from lake_orchestration.io.executor_options import options_for_executors

STORAGE_OPTIONS = "storage_options"
"""The payload key whose value is shipped in the task function instead of the payload (it holds secrets)."""

_CLOSURE_LIMIT = 1 << 20
"""Payloads up to this many bytes in all travel inside the task closure; larger sets go through a DataFrame."""


def run_json_tasks(spark: Any, payloads: list[str], task: str) -> list[str]:
    """Run ``task`` (``"module:function"``) on every payload, one Spark task per payload; returns all results.

    The tasks are ``spark.range(n, numPartitions=n)`` (partition i holds exactly the id i) and the payloads travel
    in the pickled task function: no local DataFrame upload and no range partitioning (whose bound sampling is a
    job of its own). Payload sets above 1 MiB (the pickled function goes to every task) are uploaded as a
    DataFrame and range-partitioned instead. A payload's ``storage_options`` go in the task function either way,
    completed with the driver's environment (see the module doc).
    """
    if not payloads:
        return []
    payloads, shared = _split_storage_options(payloads)
    n = len(payloads)
    if sum(len(p) for p in payloads) <= _CLOSURE_LIMIT:
        df = spark.range(n, numPartitions=n)
        fn = _Task(task, payloads, shared=shared)
    else:
        df = spark.createDataFrame(list(enumerate(payloads)), "idx int, payload string")
        # range partitioning on the index gives exactly one payload per partition (hash partitioning does not)
        df = df.repartitionByRange(n, "idx")
        fn = _Task(task, shared=shared)
    rows = df.mapInArrow(fn, "result string").collect()
    return [r["result"] for r in rows]


def _split_storage_options(payloads: list[str]) -> tuple[list[str], dict[str, str]]:
    """Payloads without their ``storage_options`` (JSON objects with a ``base_uri``), and the per-table options
    completed for executors, keyed by base URI."""
    out: list[str] = []
    shared: dict[str, str] = {}
    for p in payloads:
        d = json.loads(p) if p.startswith("{") else None
        if not isinstance(d, dict) or STORAGE_OPTIONS not in d or not isinstance(d.get("base_uri"), str):
            out.append(p)
            continue
        opts = d.pop(STORAGE_OPTIONS) or {}
        base_uri = d["base_uri"]
        if base_uri not in shared:
            shared[base_uri] = json.dumps(options_for_executors(base_uri, opts))
        out.append(json.dumps(d))
    return out, shared


def _with_storage_options(payload: str, shared: dict[str, str]) -> str:
    if not shared or not payload.startswith("{"):
        return payload
    d = json.loads(payload)
    opts = shared.get(d.get("base_uri")) if isinstance(d, dict) else None
    if opts is None:
        return payload
    d[STORAGE_OPTIONS] = json.loads(opts)
    return json.dumps(d)


class _Task:
    """Picklable per-partition function; ``shared`` (storage options per base URI) travels only inside it."""

    def __init__(self, task: str, payloads: list[str] | None = None, *, shared: dict[str, str] | None = None) -> None:
        self.task = task
        self.payloads = payloads
        self.shared = shared or {}

    def __repr__(self) -> str:  # never show the payloads' storage options
        return f"_Task({self.task!r})"

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
                out.extend(fn(_with_storage_options(payload, self.shared)))
        if out:
            yield pa.RecordBatch.from_pydict({"result": out})


def warm_up(payload: str) -> list[str]:
    """A no-op task that imports the per-file-group code, so Python workers are started before timed work."""
    import lake_orchestration.hudi.services.compaction.executor  # noqa: F401

    return []
