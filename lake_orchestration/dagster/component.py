"""``HudiTablesComponent``: the tables of :func:`build_hudi_definitions` declared in a ``defs.yaml``.

.. code-block:: yaml

    type: lake_orchestration.dagster.HudiTablesComponent
    attributes:
      spark_config:
        spark.master: "local[*]"
      tables:
        - name: trips
          base_path: s3://lake/trips
          storage: {provider: s3, region: eu-west-1, access_key_env: AWS_ACCESS_KEY_ID,
                    secret_key_env: AWS_SECRET_ACCESS_KEY}
          compaction_options: {hoodie.compact.inline.max.delta.commits: 5}

The attributes are those of the code location's config file (``tables:``, ``spark_config:``, ``fleet:``,
``fleet_budget_per_tick:``), and the component builds exactly what the code location builds: the per-table model
(``build_hudi_definitions(tables=..., spark_config=...)``), or the fleet model
(:func:`~lake_orchestration.dagster.fleet.build_fleet_definitions`) with ``fleet: true``, or ``auto`` (the default)
from 20 tables on.
"""

from typing import Literal

import dagster as dg
import pydantic

from lake_orchestration.dagster.config import HudiTableConfig, OptionValue
from lake_orchestration.dagster.definitions import build_hudi_definitions


class HudiTablesComponent(dg.Component, dg.Resolvable, dg.Model):
    """Hudi tables and their table services (compaction, rollback; clean and archive as they land) as a component.

    Every table gets the assets, checks, jobs, schedules and sensors of :func:`build_hudi_definitions`; the
    component adds the ``pyspark`` resource configured by ``spark_config``.
    """

    tables: list[HudiTableConfig]
    """The tables (``name``, ``base_path``, ``storage``, ``compaction_options``, ``clean_options``, ...)."""
    spark_config: dict[str, OptionValue] = {}  # noqa: RUF012 - pydantic copies field defaults
    """``spark.*`` configuration of the ``pyspark`` resource over the default (``spark.master=local[*]``)."""
    fleet: bool | Literal["auto"] = "auto"
    """The fleet model (shared jobs, one sensor per service kind) or the per-table model; ``auto``: the fleet model
    from 20 tables on."""
    fleet_budget_per_tick: int = pydantic.Field(default=20, ge=1)
    """Runs a fleet sensor requests at most per tick."""

    def build_defs(self, context: dg.ComponentLoadContext) -> dg.Definitions:
        """The definitions of every table (``context`` is unused: tables are named by absolute base paths)."""
        from lake_orchestration.dagster.fleet import build_fleet_definitions, use_fleet_model

        if use_fleet_model(self.fleet, len(self.tables)):
            return build_fleet_definitions(
                tables=self.tables, spark_config=self.spark_config, budget_per_tick=self.fleet_budget_per_tick
            )
        return build_hudi_definitions(tables=self.tables, spark_config=self.spark_config)
