"""The one engine factory: the CLI, Dagster and Airflow build their engine here, so a table's work takes the same
code path in every shell (the local engine's in-process speed-ups included).

``build_engine("local")`` is a :class:`~lake_orchestration.engines.local.LocalEngine`; ``build_engine("spark")`` a
Spark engine on the given session, or, without one, on an embedded session
(:func:`~lake_orchestration.engines.spark_session.local_spark_session`) started on the first task: work with no
tasks (a dry run, a clean with nothing to delete) answers without the ~15 s of a Spark JVM start.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal

from lake_orchestration.engines.base import Engine
from lake_orchestration.engines.local import LocalEngine

EngineName = Literal["local", "spark"]
ENGINE_NAMES: tuple[str, ...] = ("local", "spark")


def build_engine(
    name: str,
    *,
    spark_master: str | None = None,
    spark_conf: Mapping[str, str] | None = None,
    app_name: str = "lake-orchestration",
    threads: int = 1,
    session: Any = None,
) -> Engine:
    """The engine called ``name``.

    Args:
        name: ``local`` (in this process, ``threads`` tasks at a time) or ``spark``.
        spark_master: the master of the embedded session (default ``local[*]``); checked here, before any JVM.
        spark_conf: more settings of the embedded session.
        app_name: the embedded session's application name.
        threads: threads of the local engine.
        session: a SparkSession to run on (dagster-pyspark's); else the embedded one, started on the first task.

    Raises:
        ValueError: ``name`` is neither ``local`` nor ``spark``.
        EngineError: ``spark_master`` is not a Spark master URL.
    """
    if name == "local":
        return LocalEngine(threads=threads)
    if name != "spark":
        raise ValueError(f"engine {name!r}: expected one of {', '.join(ENGINE_NAMES)}")
    from lake_orchestration.engines.spark import SparkEngine

    if session is not None:
        return SparkEngine(session)
    from lake_orchestration.engines.spark_session import local_spark_session, validate_spark_master

    master = validate_spark_master(spark_master or "local[*]")
    conf = dict(spark_conf or {})
    return LazySparkEngine(lambda: SparkEngine(local_spark_session(master=master, app_name=app_name, conf=conf)))


class LazySparkEngine:
    """A Spark engine whose session starts on its first task (or when its ``spark`` session is asked for); an empty
    task set never starts it."""

    name = "spark"
    in_process = False

    def __init__(self, start: Callable[[], Any]) -> None:
        self._start = start
        self._engine: Any = None

    @property
    def started(self) -> bool:
        """True once Spark was started."""
        return self._engine is not None

    def _spark_engine(self) -> Any:
        if self._engine is None:
            self._engine = self._start()
        return self._engine

    def map_tasks(self, fn: Callable[..., Any], tasks: Any, *, description: str = "") -> list[Any]:
        """:meth:`SparkEngine.map_tasks`; ``[]`` for no tasks, without starting Spark."""
        if not tasks:
            return []
        return self._spark_engine().map_tasks(fn, tasks, description=description)  # type: ignore[no-any-return]

    def map_record_groups(self, fn: Callable[..., Any], groups: Any, *, description: str = "") -> list[Any]:
        """:meth:`SparkEngine.map_record_groups`; ``[]`` for no groups, without starting Spark."""
        if not groups:
            return []
        return self._spark_engine().map_record_groups(fn, groups, description=description)  # type: ignore[no-any-return]

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):  # pickling and copying look these up: never start Spark for them
            raise AttributeError(name)
        return getattr(self._spark_engine(), name)
