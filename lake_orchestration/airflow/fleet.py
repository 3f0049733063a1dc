"""A fleet of tables in Airflow: one service mapped over the tables whose probe says it is due.

The fleet is the YAML of :mod:`lake_orchestration.fleet.config` (``defaults:`` + ``tables:`` + ``discover:``, the
file the Dagster code location and ``lake-orch fleet`` read). Two operators and a DAG factory:

* :class:`FleetDueTablesOperator` probes every table (one listing of ``.hoodie/`` each) and returns the names of
  those where ``service`` is due, most overdue x weight first, at most ``budget`` of them: the input of
* :class:`FleetServiceOperator`, mapped with ``.expand(table=...)``: one task per table (labelled by the table's
  name), running the service with the table's options through the same core verbs as ``lake-orch fleet run``; it
  returns ``{"table", "service", "status", "detail"}``. A failing table fails its own mapped task only.
* :func:`fleet_service_dag` builds the two-task DAG (the example ``hudi_fleet_compaction`` is one).

Limits per group: give the mapped task an Airflow ``pool`` (``pool="compaction"``) and ``max_active_tis_per_dag``;
at most one service runs per table within a run (one mapped task per table).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from airflow.sdk import DAG, BaseOperator

if TYPE_CHECKING:
    from airflow.sdk import Context

TABLE_MAP_INDEX = "{{ task.table }}"
"""The ``map_index_template`` of :class:`FleetServiceOperator`: the table's name."""


def due_tables(config: str, service: str, *, budget: int | None = None) -> list[str]:
    """The names of the fleet's tables where ``service`` is due, most overdue x weight first (at most ``budget``)."""
    from lake_orchestration.fleet.config import load_fleet
    from lake_orchestration.fleet.probe import probe

    tables = [t for t in load_fleet(config) if service in t.services]
    scored = []
    for t in tables:
        p = probe(t)
        d = p.due.get(service)
        if d is not None and d.needed:
            scored.append((-d.overdue * t.policy.weight, t.name))
    names = [name for _score, name in sorted(scored)]
    return names if budget is None else names[:budget]


class FleetDueTablesOperator(BaseOperator):
    """Returns the tables of the fleet ``config`` where ``service`` is due (see :func:`due_tables`).

    Args:
        config: the fleet's YAML file (templated: ``"{{ var.value.lake_orch_fleet_config }}"``).
        service: ``compaction``, ``log_compaction``, ``clustering``, ``clean`` or ``archive``.
        budget: at most this many tables per run (None: all that are due).
    """

    template_fields: Sequence[str] = ("config",)
    ui_color = "#e8f4d9"

    def __init__(self, *, config: str, service: str, budget: int | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.config = config
        self.service = service
        self.budget = budget

    def execute(self, context: Context) -> list[str]:
        names = due_tables(self.config, self.service, budget=self.budget)
        self.log.info("%s due on %d table(s): %s", self.service, len(names), ", ".join(names) or "none")
        return names


class FleetServiceOperator(BaseOperator):
    """Runs ``service`` on one table of the fleet ``config`` (mapped over the tables: ``.expand(table=...)``).

    Args:
        config: the fleet's YAML file (templated).
        table: the table's name in the fleet (templated; the mapped argument).
        service: ``compaction``, ``log_compaction``, ``clustering``, ``clean`` or ``archive``.

    Raises:
        LakeOrchestrationError: the service failed (this table's task fails; the other mapped tasks go on).
    """

    template_fields: Sequence[str] = ("config", "table")
    ui_color = "#d6ecf7"

    def __init__(
        self,
        *,
        config: str,
        table: str,
        service: str,
        map_index_template: str | None = TABLE_MAP_INDEX,
        **kwargs: Any,
    ) -> None:
        super().__init__(map_index_template=map_index_template, **kwargs)
        self.config = config
        self.table = table
        self.service = service

    def execute(self, context: Context) -> dict[str, Any]:
        from lake_orchestration.fleet.config import load_fleet
        from lake_orchestration.fleet.runner import run_service

        by_name = {t.name: t for t in load_fleet(self.config)}
        if self.table not in by_name:
            raise ValueError(f"table {self.table!r}: not in the fleet {self.config}; expected one of {sorted(by_name)}")
        status, detail = run_service(by_name[self.table], self.service)
        self.log.info("%s on %s: %s (%s)", self.service, self.table, status, detail)
        return {"table": self.table, "service": self.service, "status": status, "detail": detail}


def fleet_service_dag(
    dag_id: str,
    *,
    config: str,
    service: str,
    budget: int | None = None,
    pool: str | None = None,
    retries: int = 1,
    **dag_kwargs: Any,
) -> DAG:
    """A DAG that maps ``service`` over the fleet's tables where it is due: ``due`` >> ``run`` (mapped per table).

    Args:
        dag_id: the DAG's id.
        config: the fleet's YAML file (templated).
        service: the service to map.
        budget: at most this many tables per run.
        pool: the Airflow pool of the mapped tasks (a fleet-wide limit on the service); None: the default pool.
        retries: retries of each table's task.
        dag_kwargs: ``schedule``, ``start_date``, ``catchup``, ``tags`` ... of the DAG.
    """
    with DAG(dag_id=dag_id, **dag_kwargs) as dag:
        due = FleetDueTablesOperator(task_id="due", config=config, service=service, budget=budget)
        extra: dict[str, Any] = {"pool": pool} if pool else {}
        FleetServiceOperator.partial(task_id="run", config=config, service=service, retries=retries, **extra).expand(
            table=due.output
        )
    return dag
