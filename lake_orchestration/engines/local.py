"""The local engine: the same task functions, run in this process.

Tasks run one after the other by default, in task order (the write token of each is the one its service set). With
``threads=N`` they run on a thread pool (pyarrow releases the GIL in decoding, merging and writing): results still
come back in task order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import pyarrow as pa

from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.table.snapshot import read_snapshot_table

T = TypeVar("T")
R = TypeVar("R")


class LocalEngine:
    """In-process engine for tests, small tables and ``--engine local``.

    Args:
        threads: run up to this many tasks at once on threads (1: one after the other, in this thread).
    """

    name = "local"

    def __init__(self, *, threads: int = 1) -> None:
        if threads < 1:
            raise ValueError(f"LocalEngine(threads={threads}): expected an integer >= 1")
        self.threads = threads

    def map_tasks(self, fn: Callable[[T], list[R]], tasks: Sequence[T], *, description: str = "") -> list[R]:
        if self.threads == 1 or len(tasks) <= 1:
            return [r for t in tasks for r in fn(t)]
        with ThreadPoolExecutor(max_workers=min(self.threads, len(tasks))) as pool:
            return [r for rs in pool.map(fn, tasks) for r in rs]

    def map_record_groups(
        self,
        fn: Callable[[T, pa.Table], list[R]],
        groups: Sequence[tuple[T, pa.Table]],
        *,
        description: str = "",
    ) -> list[R]:
        return self.map_tasks(lambda g: fn(*g), groups, description=description)

    def read_snapshot(self, table: HudiTable) -> pa.Table:
        return read_snapshot_table(table)
