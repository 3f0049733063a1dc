"""The YAML component (``defs.yaml``, loaded as Dagster loads a project's defs folder) equals the factory."""

import textwrap
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
from dagster.components.testing import create_defs_folder_sandbox

from lake_orchestration.dagster import HudiTableConfig, HudiTablesComponent, build_hudi_definitions

pytestmark = [
    pytest.mark.dagster,
    # Dagster's own component loader attaches beta code references to what it builds
    pytest.mark.filterwarnings("ignore::dagster.BetaWarning"),
    pytest.mark.filterwarnings("ignore::dagster.PreviewWarning"),
]

DEFS_YAML = """\
type: lake_orchestration.dagster.HudiTablesComponent
attributes:
  spark_config:
    spark.master: "local[2]"
    spark.executor.memory: 2g
  tables:
    - name: trips
      base_path: {trips}
      engine: local
      compaction_seq: LIFO
      schedule_cron: "*/5 * * * *"
      compaction_options:
        hoodie.compact.inline.max.delta.commits: 3
      clean_options:
        hoodie.cleaner.commits.retained: 10
      upstream_assets: [raw/trips]
    - name: orders
      base_path: s3://lake/orders
      storage:
        provider: s3
        region: eu-west-1
        access_key_env: AWS_ACCESS_KEY_ID
        secret_key_env: AWS_SECRET_ACCESS_KEY
      retry_max_retries: 4
      engine: spark
"""


def _factory(trips: Path) -> dg.Definitions:
    return build_hudi_definitions(
        tables=[
            HudiTableConfig(
                name="trips",
                base_path=str(trips),
                engine="local",
                compaction_seq="LIFO",
                schedule_cron="*/5 * * * *",
                compaction_options={"hoodie.compact.inline.max.delta.commits": "3"},
                clean_options={"hoodie.cleaner.commits.retained": "10"},
                upstream_assets=["raw/trips"],
            ),
            HudiTableConfig(
                name="orders",
                base_path="s3://lake/orders",
                storage={
                    "provider": "s3",
                    "region": "eu-west-1",
                    "access_key_env": "AWS_ACCESS_KEY_ID",
                    "secret_key_env": "AWS_SECRET_ACCESS_KEY",
                },
                retry_max_retries=4,
                engine="spark",
            ),
        ],
        spark_config={"spark.master": "local[2]", "spark.executor.memory": "2g"},
    )


def _signature(defs: dg.Definitions) -> dict[str, Any]:
    """Everything a user sees of the definitions, as comparable values."""
    graph = defs.resolve_asset_graph()
    assets = {}
    for key in graph.get_all_asset_keys():
        node = graph.get(key)
        if not node.is_executable:  # an upstream asset the table names (upstream_assets), defined elsewhere
            assets[key.to_user_string()] = {"external": True}
            continue
        ad = defs.resolve_assets_def(key)
        # an op-backed asset, or a graph-backed one (the compaction partition: execute_plan -> commit)
        ops = [ad.node_def] if isinstance(ad.node_def, dg.OpDefinition) else list(ad.node_def.iterate_op_defs())
        p = node.partitions_def
        assets[key.to_user_string()] = {
            "deps": sorted(k.to_user_string() for k in node.parent_keys),
            "partitions": (type(p).__name__, getattr(p, "name", None)) if p else None,
            "group": node.group_name,
            "kinds": sorted(node.kinds),
            "pool": sorted({str(o.pool) for o in ops}),
            "retry": " ".join(sorted({repr(o.retry_policy) for o in ops})),
            "resources": sorted(ad.required_resource_keys),
            # the component loader adds dagster/code_references and dagster/component_origin: Dagster's, not ours
            "metadata": {k: str(v) for k, v in ad.specs_by_key[key].metadata.items() if not k.startswith("dagster/")},
        }
    jobs = {}
    for job in defs.resolve_all_job_defs():
        if job.name.startswith("__"):  # Dagster's implicit asset job
            continue
        jobs[job.name] = sorted(
            (n.name, repr(n.definition.retry_policy) if isinstance(n.definition, dg.OpDefinition) else None)
            for n in job.graph.nodes
        )
    return {
        "assets": assets,
        "checks": sorted(f"{k.asset_key.to_user_string()}:{k.name}" for k in graph.asset_check_keys),
        "jobs": jobs,
        "schedules": sorted((s.name, s.cron_schedule, s.job_name) for s in defs.schedules or []),
        "sensors": sorted(
            (s.name, s.job_name if s.has_jobs else None, s.minimum_interval_seconds) for s in defs.sensors or []
        ),
        "resources": {
            k: (type(v).__name__, getattr(v, "spark_config", None)) for k, v in (defs.resources or {}).items()
        },
    }


def test_component_defs_yaml_builds_the_same_definitions_as_the_factory(tmp_path: Path) -> None:
    trips = tmp_path / "trips"
    with create_defs_folder_sandbox() as sandbox:
        defs_path = sandbox.scaffold_component(component_cls=HudiTablesComponent, defs_path="lake")
        (defs_path / "defs.yaml").write_text(DEFS_YAML.format(trips=trips))
        with sandbox.load_component_and_build_defs(defs_path=defs_path) as (component, from_yaml):
            assert isinstance(component, HudiTablesComponent)
            assert [t.name for t in component.tables] == ["trips", "orders"]
        with sandbox.build_all_defs() as project:  # the whole defs folder, as `dg` / a code location loads it
            whole = _signature(project)
    factory = _signature(_factory(trips))
    assert _signature(from_yaml) == factory
    assert whole == factory
    # the expected objects are all there (so the equality is not between two empty sets)
    assert set(factory["assets"]) == {
        "hudi/trips",
        "hudi/trips/compaction",
        "hudi/orders",
        "hudi/orders/compaction",
        "raw/trips",
    }
    assert factory["assets"]["hudi/trips"]["deps"] == ["raw/trips"]
    assert factory["assets"]["hudi/trips/compaction"]["partitions"] == (
        "DynamicPartitionsDefinition",
        "trips__compaction_instants",
    )
    assert "pyspark" in factory["assets"]["hudi/orders/compaction"]["resources"]
    assert "max_retries=4" in factory["assets"]["hudi/orders/compaction"]["retry"]
    assert {
        f"hudi/{t}:{c}"
        for t in ("trips", "orders")
        for c in ("oldest_pending_compaction_age", "log_files_per_slice", "active_timeline_length")
    } <= set(factory["checks"])
    assert {f"{t}__{j}" for t in ("trips", "orders") for j in ("compaction", "schedule_compaction", "rollback")} <= set(
        factory["jobs"]
    )
    assert ("trips__schedule_compaction_schedule", "*/5 * * * *", "trips__schedule_compaction") in factory["schedules"]
    assert {s[0] for s in factory["sensors"]} >= {
        f"{t}__{s}" for t in ("trips", "orders") for s in ("pending_compaction_sensor", "stale_inflight_sensor")
    }
    kind, conf = factory["resources"]["pyspark"]
    assert kind == "HudiPySparkResource"
    assert conf["spark.master"] == "local[2]" and conf["spark.executor.memory"] == "2g"


def test_component_invalid_attribute_fails_loading_with_its_location(tmp_path: Path) -> None:
    bad = textwrap.dedent("""\
        type: lake_orchestration.dagster.HudiTablesComponent
        attributes:
          tables:
            - name: trips
              base_path: /data/trips
              storage: {provider: s3}
        """)
    with create_defs_folder_sandbox() as sandbox:
        defs_path = sandbox.scaffold_component(component_cls=HudiTablesComponent, defs_path="lake")
        (defs_path / "defs.yaml").write_text(bad)
        with pytest.raises(Exception) as err:
            with sandbox.load_component_and_build_defs(defs_path=defs_path):
                pass
    chain, e = [], err.value
    while e is not None:
        chain.append(str(e))
        e = e.__cause__
    text = "\n".join(chain)
    assert "defs.yaml (HudiTablesComponent) (error)" in text
    assert "provider 's3' does not match base_path '/data/trips': expected s3:// or s3a://" in text


def test_component_table_asset_materializes_a_real_table(tmp_path: Path) -> None:
    from lake_orchestration.datagen import generate_trips
    from lake_orchestration.hudi.write import WriteOptions, write_table
    from tests.oracle import hudi_rs_snapshot

    path = tmp_path / "t"
    write_table(
        str(path),
        generate_trips(120, partitions=3, seed=3),
        operation="bulk_insert",
        options=WriteOptions(table_name="t", record_key_fields=("uuid",), partition_fields=("city",)),
    )
    component = HudiTablesComponent(tables=[HudiTableConfig(name="t", base_path=str(path), engine="local")])
    defs = dg.component_defs(component=component)
    result = dg.materialize([defs.resolve_assets_def(dg.AssetKey(["hudi", "t"]))])
    (mat,) = result.asset_materializations_for_node("hudi__t")
    files = set(hudi_rs_snapshot(path).column("_hoodie_file_name").to_pylist())  # one base file per file group
    assert mat.metadata["file_groups"].value == len(files) and mat.metadata["log_files"].value == 0
