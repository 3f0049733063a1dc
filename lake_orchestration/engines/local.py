"""The local engine: the same task functions, run in this process; the default engine of every service.

Tasks run one after the other by default, in task order (the write token of each is the one its service set). With
``threads=N`` they run on a thread pool (pyarrow releases the GIL in decoding, merging and writing): results still
come back in task order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, TypeVar

import pyarrow as pa

if TYPE_CHECKING:
    from lake_orchestration.engines.base import Engine

T = TypeVar("T")
R = TypeVar("R")


class LocalEngine:
    """In-process engine: the default of every service, for tests, small tables and ``--engine local``.

    Args:
        threads: run up to this many tasks at once on threads (1: one after the other, in this thread).
    """

    name = "local"

    def __init__(self, *, threads: int = 1) -> None:
        if threads < 1:
            raise ValueError(f"LocalEngine(threads={threads}): expected an integer >= 1")
        self.threads = threads

    @property
    def in_process(self) -> bool:
        """True with one thread: the tasks run here one after the other, so a service may run them itself (and
        keep state between them, e.g. compaction's decoded log blocks); see :mod:`lake_orchestration.engines.base`."""
        return self.threads == 1

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


def or_local(engine: Engine | None) -> Engine:
    """``engine``, or a one-thread :class:`LocalEngine` when it is omitted: the one place an omitted engine is
    resolved (a service's ``engine: Engine | None = None`` parameter starts with ``engine = or_local(engine)``)."""
    return engine if engine is not None else LocalEngine()
