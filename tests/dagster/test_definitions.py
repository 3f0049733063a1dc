"""The code location: demo or config file, `dagster definitions validate`, the demo ingest; table health."""

import importlib
import os
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest

from lake_orchestration.dagster import HudiConfigError, HudiTableConfig, build_hudi_definitions
from lake_orchestration.datagen import generate_trips
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.write import WriteOptions, write_table

pytestmark = pytest.mark.dagster


def test_definitions_code_location_loads_demo_table_asset(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAKE_ORCH_DEMO_DIR", str(tmp_path))
    sys.modules.pop("definitions", None)
    sys.modules.pop("definitions.definitions", None)
    module = importlib.import_module("definitions")
    defs = module.defs
    assert isinstance(defs, dg.Definitions)
    keys = {a.key for a in defs.resolve_all_asset_specs()}
    assert dg.AssetKey(["hudi", "demo_trips"]) in keys
    assert (tmp_path / "demo_trips" / ".hoodie" / "hoodie.properties").exists()


def test_table_asset_materialize_reports_health(hudi_fixture) -> None:
    from tests.conftest import HudiFixture

    base = hudi_fixture(HudiFixture.MOR_ROLLBACK)
    defs = build_hudi_definitions(tables=[HudiTableConfig(name="rb", base_path=str(base))])
    result = dg.materialize([defs.resolve_assets_def(dg.AssetKey(["hudi", "rb"]))])
    assert result.success
    (mat,) = result.asset_materializations_for_node("hudi__rb")
    md = {k: v.value for k, v in mat.metadata.items()}
    assert md["file_groups"] == 1
    assert md["log_files"] == 3
    assert md["table_type"] == "MERGE_ON_READ"


def _validate(tmp_path: Path, extra_env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    from tests.conftest import REPO_ROOT

    dagster_cli = Path(sys.executable).parent / "dagster"
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k != "LAKE_ORCHESTRATION_CONFIG"}
    env.update({"DAGSTER_HOME": str(home), "PYTHONPATH": str(REPO_ROOT), **extra_env})
    return subprocess.run(
        [str(dagster_cli), "definitions", "validate", "-w", "workspace.yaml"],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_dagster_definitions_validate_workspace_passes(tmp_path: Path) -> None:
    proc = _validate(tmp_path, {"LAKE_ORCH_DEMO_DIR": str(tmp_path / "demo")})
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "All code locations passed validation" in proc.stdout + proc.stderr


def _write_table(path: Path) -> None:
    write_table(
        str(path),
        generate_trips(60, partitions=2, seed=5),
        operation="bulk_insert",
        options=WriteOptions(table_name=path.name, record_key_fields=("uuid",), partition_fields=("city",)),
    )


def test_dagster_definitions_validate_workspace_with_config_file_passes(tmp_path: Path) -> None:
    _write_table(tmp_path / "trips")
    cfg = tmp_path / "lake.yaml"
    cfg.write_text(
        f"tables:\n  - name: trips\n    base_path: {tmp_path / 'trips'}\n"
        "    compaction_options: {hoodie.compact.inline.max.delta.commits: 2}\n"
        "  - name: orders\n    base_path: s3://lake/orders\n"
        "    storage: {provider: s3, region: eu-west-1, access_key_env: AK, secret_key_env: SK}\n"
    )
    proc = _validate(tmp_path, {"LAKE_ORCHESTRATION_CONFIG": str(cfg), "LAKE_ORCH_DEMO_DIR": str(tmp_path / "demo")})
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "All code locations passed validation" in proc.stdout + proc.stderr
    assert not (tmp_path / "demo").exists()  # a config file means no demo table


def test_dagster_definitions_validate_bad_config_fails_naming_file_and_entry(tmp_path: Path) -> None:
    cfg = tmp_path / "lake.yaml"
    cfg.write_text("tables:\n  - name: trips\n    base_path: /data/trips\n    storage: {provider: gcs}\n")
    proc = _validate(tmp_path, {"LAKE_ORCHESTRATION_CONFIG": str(cfg)})
    assert proc.returncode != 0
    out = proc.stdout + proc.stderr
    assert f"{cfg}: tables[0] ('trips'): entry: storage.provider 'gcs' does not match base_path '/data/trips'" in out


def test_location_reads_config_env_then_deprecated_alias_then_default_file(tmp_path: Path) -> None:
    from lake_orchestration.dagster.location import config_file_path, load_code_location

    _write_table(tmp_path / "a")
    (tmp_path / "lake_orchestration.yaml").write_text(f"tables:\n  - {{name: a, base_path: {tmp_path / 'a'}}}\n")
    legacy = tmp_path / "legacy.yaml"
    legacy.write_text(f"- {{name: legacy_a, base_path: {tmp_path / 'a'}}}\n")  # the old format: a bare list
    explicit = tmp_path / "explicit.yaml"
    explicit.write_text(f"tables:\n  - {{name: explicit_a, base_path: {tmp_path / 'a'}}}\n")
    env = {"LAKE_ORCHESTRATION_CONFIG": str(explicit), "LAKE_ORCH_TABLES_YAML": str(legacy)}

    def table_keys(environ: dict[str, str]) -> set[str]:
        defs = load_code_location(environ, cwd=tmp_path)
        return {a.key.to_user_string() for a in defs.resolve_all_asset_specs() if len(a.key.path) == 2}

    assert table_keys(env) == {"hudi/explicit_a"}
    assert table_keys({"LAKE_ORCH_TABLES_YAML": str(legacy)}) == {"hudi/legacy_a"}
    assert table_keys({}) == {"hudi/a"}
    assert config_file_path({}, cwd=tmp_path / "a") is None
    with pytest.raises(HudiConfigError, match=r"nope\.yaml: cannot read the config file"):
        load_code_location({"LAKE_ORCHESTRATION_CONFIG": str(tmp_path / "nope.yaml")}, cwd=tmp_path)


def test_demo_location_ingest_job_upserts_a_batch_read_back_by_hudi_rs(tmp_path: Path) -> None:
    from lake_orchestration.dagster.location import load_code_location
    from lake_orchestration.demo.definitions import demo_location
    from lake_orchestration.hudi.table.snapshot import read_snapshot_table
    from tests.oracle import assert_same_rows, hudi_rs_snapshot

    defs = load_code_location({"LAKE_ORCH_DEMO_DIR": str(tmp_path)}, cwd=tmp_path, fallback=demo_location)
    base = tmp_path / "demo_trips"
    assert defs.resolve_schedule_def("demo_trips__ingest_schedule").job_name == "demo_trips__ingest"
    table_node = defs.resolve_asset_graph().get(dg.AssetKey(["hudi", "demo_trips"]))
    assert dg.AssetKey(["demo", "trips_ingest"]) in table_node.parent_keys
    before = hudi_rs_snapshot(base)
    with dg.instance_for_test() as instance:
        result = defs.resolve_job_def("demo_trips__ingest").execute_in_process(instance=instance)
    assert result.success
    (mat,) = result.asset_materializations_for_node("demo__trips_ingest")
    md = {k: v.value for k, v in mat.metadata.items()}
    after = hudi_rs_snapshot(base)
    assert after.num_rows == before.num_rows + md["inserted"] - md["deleted"]
    assert md["inserted"] == 50 and md["updated"] > 0 and md["deleted"] > 0
    commits = set(after.column("_hoodie_commit_time").to_pylist())
    assert md["instants"][0] in commits  # updated and inserted rows carry the upsert's instant
    assert_same_rows(read_snapshot_table(HudiTable(str(base))), after)


def test_definitions_retry_policies_on_every_service_step(tmp_path: Path) -> None:
    cfg = HudiTableConfig(name="t", base_path=str(tmp_path / "t"), retry_max_retries=3, retry_delay_seconds=5)
    defs = build_hudi_definitions(tables=[cfg])
    expected = dg.RetryPolicy(max_retries=3, delay=5, backoff=dg.Backoff.EXPONENTIAL)
    compaction = defs.resolve_assets_def(dg.AssetKey(["hudi", "t", "compaction"])).node_def
    # the graph's ops: execute_plan, then commit, each with the policy (a failed commit is retried alone)
    assert [n.name for n in compaction.node_defs] == ["t__compaction_execute_plan_op", "t__compaction_commit_op"]
    assert all(n.retry_policy == expected for n in compaction.node_defs)
    for job, op in (("t__schedule_compaction", "t__schedule_compaction_op"), ("t__rollback", "t__rollback_op")):
        assert defs.resolve_job_def(job).graph.node_named(op).definition.retry_policy == expected


def test_pyspark_resource_embedded_default_and_overrides(tmp_path: Path) -> None:
    cfg = HudiTableConfig(name="t", base_path=str(tmp_path / "t"))
    default = build_hudi_definitions(tables=[cfg]).resources["pyspark"]
    assert default.spark_config["spark.master"] == "local[*]"
    custom = build_hudi_definitions(
        tables=[cfg], spark_config={"spark.master": "spark://h:7077", "spark.executor.memory": "4g"}
    ).resources["pyspark"]
    assert custom.spark_config["spark.master"] == "spark://h:7077"
    assert custom.spark_config["spark.executor.memory"] == "4g"
    with pytest.raises(HudiConfigError, match="expected Spark configuration keys"):
        build_hudi_definitions(tables=[cfg], spark_config={"executor.memory": "4g"})
    with pytest.raises(HudiConfigError, match=r"duplicate table names \['t'\]"):
        build_hudi_definitions(tables=[cfg, cfg])


def test_translator_override_renames_every_object_default_names_unchanged(tmp_path: Path) -> None:
    from lake_orchestration.dagster import DagsterHudiTranslator

    class LakeTranslator(DagsterHudiTranslator):
        def get_asset_key(self, table: HudiTableConfig) -> dg.AssetKey:
            return dg.AssetKey(["lake", table.name])

        def get_job_name(self, table: HudiTableConfig, job: str) -> str:  # type: ignore[override]
            return f"lake_{table.name}_{job}"

        def get_pool(self, table: HudiTableConfig) -> str:
            return "lake_pool"

    cfg = HudiTableConfig(name="t", base_path=str(tmp_path / "t"))
    defs = build_hudi_definitions(tables=[cfg], translator=LakeTranslator())
    keys = {a.key for a in defs.resolve_all_asset_specs()}
    assert keys == {dg.AssetKey(["lake", "t"]), dg.AssetKey(["lake", "t", "compaction"])}
    jobs = {j.name for j in defs.jobs}
    assert jobs == {f"lake_t_{j}" for j in ("compaction", "schedule_compaction", "rollback", "clean", "archive")}
    assert defs.resolve_schedule_def("lake_t_clean_schedule").job_name == "lake_t_clean"
    assert defs.resolve_assets_def(dg.AssetKey(["lake", "t"])).op.pool == "lake_pool"
    compaction = defs.resolve_assets_def(dg.AssetKey(["lake", "t", "compaction"])).node_def
    assert {n.pool for n in compaction.node_defs} == {"lake_pool"}
    checks = {(k.asset_key, k.name) for k in defs.resolve_asset_graph().asset_check_keys}
    assert (dg.AssetKey(["lake", "t"]), "log_files_per_slice") in checks
    # the default translator keeps the names of before
    default = build_hudi_definitions(tables=[cfg])
    assert {j.name for j in default.jobs} == {
        f"t__{j}" for j in ("compaction", "schedule_compaction", "rollback", "clean", "archive")
    }
    assert {s.name for s in default.sensors} == {
        "t__sync_compaction_plans_sensor",
        "t__pending_compaction_sensor",
        "t__stale_inflight_sensor",
    }
    assert {s.name for s in default.schedules} == {
        "t__schedule_compaction_schedule",
        "t__clean_schedule",
        "t__archive_schedule",
    }


def test_every_job_sensor_and_schedule_has_a_description(tmp_path: Path) -> None:
    """What the UI lists beside each name: a Hudi table's and a Paimon table's jobs, sensors and schedules, the demo's
    too; the sync sensor runs by default (it only registers partitions), the launching sensors are off."""
    from lake_orchestration.demo.definitions import build_demo_definitions

    tables = [
        HudiTableConfig(name="t", base_path=str(tmp_path / "t")),
        HudiTableConfig(name="p", base_path=str(tmp_path / "p"), format="paimon"),
    ]
    for defs in (build_hudi_definitions(tables=tables), build_demo_definitions(tmp_path / "demo", create=False)):
        jobs = [j for j in defs.resolve_all_job_defs() if not j.name.startswith("__")]
        named = [*jobs, *defs.sensors, *defs.schedules]
        assert named and not [o.name for o in named if not (o.description or "").strip()]
    status = {s.name: s.default_status for s in build_hudi_definitions(tables=tables[:1]).sensors}
    assert status["t__sync_compaction_plans_sensor"] == dg.DefaultSensorStatus.RUNNING
    assert status["t__pending_compaction_sensor"] == dg.DefaultSensorStatus.STOPPED
