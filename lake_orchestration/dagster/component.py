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

The attributes are those of the code location's config file (``tables:``, ``spark_config:``), and the component
builds exactly what ``build_hudi_definitions(tables=..., spark_config=...)`` builds.
"""

import dagster as dg

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

    def build_defs(self, context: dg.ComponentLoadContext) -> dg.Definitions:
        """The definitions of every table (``context`` is unused: tables are named by absolute base paths)."""
        return build_hudi_definitions(tables=self.tables, spark_config=self.spark_config)
