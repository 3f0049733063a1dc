"""The Airflow provider end to end: the example DAGs run by ``airflow dags test`` (Airflow 3.3 in its own venv, a
temporary SQLite metadata DB, no scheduler or triggerer), the table checked here with hudi-rs and our reader."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pyarrow.compute as pc
import pytest

from lake_orchestration.datagen import generate_trips, generate_updates
from lake_orchestration.hudi.model.properties import TableType
from lake_orchestration.hudi.services.compaction import schedule_compaction
from lake_orchestration.hudi.table import HudiTable, read_snapshot_table
from lake_orchestration.hudi.table.archived_timeline import ArchivedTimeline
from lake_orchestration.hudi.write import WriteOptions, write_table
from tests.airflow.conftest import AirflowRunner, DagRunResult
from tests.oracle import REWRITTEN_BY_SERVICES, assert_same_rows, hudi_rs_snapshot
from tests.trips import trips_options, write_trips_history

pytestmark = [pytest.mark.slow, pytest.mark.airflow]


def _opts(table_type: TableType = TableType.MERGE_ON_READ) -> WriteOptions:
    return trips_options(table_type=table_type, hive_style_partitioning=True, small_file_limit=0)


def _update_city(path: Path, base, city: str, n: int) -> None:  # type: ignore[no-untyped-def]
    part = base.filter(pc.equal(base.column("city"), city))
    write_table(
        str(path),
        generate_updates(part, fraction=0.3, seed=n, ts_offset=(n + 1) * 10**7),
        operation="upsert",
        options=_opts(),
    )


def _mor_table(tmp_path: Path, updated: int = 2) -> tuple[Path, list[str]]:
    """A MOR table of two city partitions, the first ``updated`` of them with a log file; returns the path and the
    cities."""
    path = tmp_path / "t"
    base = generate_trips(200, partitions=2, seed=1)
    write_table(str(path), base, operation="bulk_insert", options=_opts())
    cities = sorted(set(base.column("city").to_pylist()))
    for n, city in enumerate(cities[:updated]):
        _update_city(path, base, city, n)
    return path, cities


def _hoodie_files(path: Path) -> set[str]:
    return {p.name for p in (path / ".hoodie").iterdir() if p.is_file()}


def _json_out(stdout: str) -> object:
    """The JSON an ``airflow ... -o json`` command prints last (warnings may come before it on stdout)."""
    lines = [line for line in stdout.splitlines() if line.strip()]
    return json.loads(lines[-1]) if lines else []


def _result(stdout: str) -> Any:
    """The JSON a driver script printed after ``RESULT`` (Airflow and py4j log to stdout too)."""
    (line,) = [line for line in stdout.splitlines() if line.startswith("RESULT ")]
    return json.loads(line.removeprefix("RESULT "))


def _run_driver(
    airflow: AirflowRunner, script: str, *args: str, env: dict[str, str], timeout: float | None = None
) -> Any:
    """Run ``python -c script args`` in the Airflow venv (in its home, with ``env``); fails with its stderr unless it
    exits 0, else returns what it printed after ``RESULT``."""
    proc = subprocess.run(
        [str(airflow.python), "-c", script, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=airflow.home,
    )
    assert proc.returncode == 0, proc.stderr[-6000:]
    return _result(proc.stdout)


def _ok(run: DagRunResult) -> None:
    assert run.state == "success" and all(s in ("success", "skipped") for s in run.tasks.values()), (
        f"{run.dag_id}: run {run.state}, tasks {run.tasks}\n{run.output[-8000:]}"
    )


def test_provider_info_valid_against_airflow_schema_and_registers_hudi_connection(airflow: AirflowRunner) -> None:
    script = """
import json, importlib.resources
import jsonschema
from importlib.metadata import entry_points
from airflow.providers_manager import ProvidersManager
(ep,) = [e for e in entry_points(group="apache_airflow_provider") if e.value.startswith("lake_orchestration.")]
info = ep.load()()
schema = json.loads(importlib.resources.files("airflow").joinpath("provider_info.schema.json").read_text())
jsonschema.validate(info, schema)
pm = ProvidersManager()
hook = pm.hooks["hudi"]
hook_class = hook.hook_class_name if hook else None
# what the UI's connection form reads: the API's hook metadata (GET /ui/connections/hook_meta)
from airflow.api_fastapi.core_api.services.ui.connections import HookMetaService
(meta,) = [m for m in HookMetaService.hook_meta_data() if m.connection_type == "hudi"]
import importlib.util
print("RESULT", json.dumps({"info": info, "providers": sorted(pm.providers), "hook": hook_class,
                            "form": meta.model_dump(mode="json"),
                            "dagster": importlib.util.find_spec("dagster") is not None}))
"""
    proc = airflow.cli("--help")  # the CLI starts with the provider installed
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = _run_driver(airflow, script, env=airflow.env(Path("/nonexistent")))
    assert got["info"]["package-name"] == "lake-orchestration" in got["providers"]
    assert got["hook"] == "lake_orchestration.airflow.hooks.HudiTableHook"
    # the connection form Airflow 3.3 serves: labels, placeholders and hidden fields from the provider info
    form = got["form"]
    assert form["hook_name"] == "Apache Hudi table", form
    fields = form["standard_fields"]
    assert fields is not None, f"no field behaviour for the hudi connection form: {form}"
    labels = {name: (f or {}).get("title") for name, f in fields.items()}
    assert {k: labels[k] for k in ("host", "login", "password")} == {
        "host": "Base path",
        "login": "Access key",
        "password": "Secret key",
    }, form
    assert fields["port"]["hidden"] and fields["url_schema"]["hidden"], form
    assert fields["host"]["placeholder"] == "s3://bucket/tables/trips", form
    if not os.environ.get("AIRFLOW_PYTHON"):  # the venv of `pip install .[airflow]` alone: the extra needs no Dagster
        assert got["dagster"] is False, "pip install .[airflow] installed dagster"


def test_example_dags_import_without_errors(airflow: AirflowRunner) -> None:
    env = airflow.env(Path("/nonexistent"))
    proc = airflow.cli("dags", "reserialize", env=env)
    assert proc.returncode == 0, proc.stderr[-4000:]
    errors = airflow.cli("dags", "list-import-errors", "-o", "json", env=env)
    assert errors.returncode == 0 and _json_out(errors.stdout) == [], errors.stdout + errors.stderr[-3000:]
    listed = airflow.cli("dags", "list", "-o", "json", env=env)
    assert {d["dag_id"] for d in _json_out(listed.stdout)} == {
        "hudi_archive",
        "hudi_clean",
        "hudi_clustering",
        "hudi_compaction",
        "hudi_compaction_on_commit",
        "hudi_compaction_on_new_plans",
        "hudi_fleet_compaction",
        "hudi_incremental_pull",
        "hudi_rollback_stale",
    }


def test_compaction_dag_schedules_then_mapped_execute_commits_both_plans(
    airflow: AirflowRunner, tmp_path: Path
) -> None:
    path, cities = _mor_table(tmp_path, updated=1)
    first = schedule_compaction(HudiTable(str(path)), force=True)  # an older plan (first city), left pending
    assert first.scheduled
    _update_city(path, generate_trips(200, partitions=2, seed=1), cities[1], 5)
    before = hudi_rs_snapshot(path)

    run = airflow.dags_test("hudi_compaction", path, {"hoodie.compact.inline.max.delta.commits": "1"})

    _ok(run)
    new = run.result("schedule")
    assert new and new != str(first.instant)
    assert run.result("schedule", key="schedule")["scheduled"] is True
    plans = [str(first.instant), new]
    assert run.result("list_pending") == plans  # FIFO
    executed = run.mapped_results("execute")
    assert [r["instant"] for r in executed] == plans and not any(r["already_committed"] for r in executed)
    assert all(r["operations"] == 1 and r["rows_written"] > 0 for r in executed)
    # the mapped tasks are labelled by their plan's instant (map_index_template), not 0, 1
    assert [run.map_labels[("execute", i)] for i in range(len(plans))] == plans, run.map_labels
    table = HudiTable(str(path))
    assert not list(table.timeline.pending_compactions())
    assert {f"{p}.commit" for p in plans} <= _hoodie_files(path)
    assert_same_rows(hudi_rs_snapshot(path), before, ignore=REWRITTEN_BY_SERVICES)
    assert_same_rows(read_snapshot_table(table), before, ignore=REWRITTEN_BY_SERVICES)

    again = airflow.dags_test("hudi_compaction", path)  # nothing to schedule, nothing pending: no mapped task
    _ok(again)
    assert again.result("schedule") is None and again.result("list_pending") == []
    assert ("execute", 0) not in again.tasks


def test_clustering_dag_schedules_then_mapped_execute_commits_the_replacecommit(
    airflow: AirflowRunner, tmp_path: Path
) -> None:
    import pyarrow.parquet as pq

    path = tmp_path / "t"
    for seed in (1, 2, 3):  # three bulk inserts: three small file groups per city
        write_table(
            str(path),
            generate_trips(120, partitions=2, seed=seed),
            operation="bulk_insert",
            options=_opts(TableType.COPY_ON_WRITE),
        )
    before = hudi_rs_snapshot(path)

    run = airflow.dags_test("hudi_clustering", path, {"hoodie.clustering.plan.strategy.sort.columns": "fare"})

    _ok(run)
    plan = run.result("schedule")
    assert plan and run.result("schedule", key="schedule")["scheduled"] is True
    assert run.result("list_pending") == [plan]
    (executed,) = run.mapped_results("execute")
    assert executed["instant"] == plan and not executed["already_committed"]
    assert executed["file_groups_replaced"] == 6 and executed["rows_written"] == 360
    assert run.map_labels[("execute", 0)] == plan
    assert f"{plan}.replacecommit" in _hoodie_files(path)
    new_files = list(path.rglob(f"*_{plan}.parquet"))
    assert new_files
    for f in new_files:  # each new base file sorted by the sort column (read with pyarrow)
        fares = pq.read_table(f, columns=["fare"]).column("fare").to_pylist()
        assert fares == sorted(fares), f
    assert_same_rows(hudi_rs_snapshot(path), before, ignore=REWRITTEN_BY_SERVICES)


def test_deferrable_sensor_fires_when_a_plan_appears_and_its_plan_is_committed(
    airflow: AirflowRunner, tmp_path: Path
) -> None:
    path, _ = _mor_table(tmp_path)
    before = hudi_rs_snapshot(path)
    log = tmp_path / "dags-test.log"
    proc = airflow.start("hudi_compaction_on_new_plans", path, log)
    try:
        deadline = time.monotonic() + 120
        while "running trigger in line" not in log.read_text():
            assert proc.poll() is None, f"the DAG ended before its sensor deferred:\n{log.read_text()[-6000:]}"
            assert time.monotonic() < deadline, f"the sensor did not defer:\n{log.read_text()[-6000:]}"
            time.sleep(0.5)
        while "No pending compaction plan on" not in log.read_text():  # the trigger checked the plan-less table
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()[-6000:]
            time.sleep(0.2)
        plan = schedule_compaction(HudiTable(str(path)), force=True)
        assert plan.scheduled
    finally:
        run = airflow.finish("hudi_compaction_on_new_plans", proc, log)

    _ok(run)
    assert run.result("wait_for_plans") == [str(plan.instant)]
    assert [r["instant"] for r in run.mapped_results("execute")] == [str(plan.instant)]
    assert f"{plan.instant}.commit" in _hoodie_files(path)
    assert_same_rows(hudi_rs_snapshot(path), before, ignore=REWRITTEN_BY_SERVICES)


def test_clean_dag_cleans_old_file_slices_and_leaves_a_completed_clean(airflow: AirflowRunner, tmp_path: Path) -> None:
    path = tmp_path / "t"
    write_trips_history(path, _opts(TableType.COPY_ON_WRITE), rows=60, upserts=4, fraction=0.5)
    before = hudi_rs_snapshot(path)
    parquet_before = {p.name for p in path.rglob("*.parquet")}

    run = airflow.dags_test("hudi_clean", path)

    _ok(run)
    result = run.result("clean")
    assert len(result["instants"]) == 1 and result["deleted"] > 0 and result["failed"] == 0
    (instant,) = result["instants"]
    assert {f"{instant}.clean.requested", f"{instant}.clean.inflight", f"{instant}.clean"} <= _hoodie_files(path)
    gone = parquet_before - {p.name for p in path.rglob("*.parquet")}
    assert len(gone) == result["deleted"] == result["file_count"]
    assert gone == {f for files in result["files"].values() for f in files}
    assert_same_rows(hudi_rs_snapshot(path), before)


def test_archive_dag_moves_old_instants_to_the_archived_timeline(airflow: AirflowRunner, tmp_path: Path) -> None:
    path = tmp_path / "t"
    write_trips_history(path, _opts(TableType.COPY_ON_WRITE), rows=40, upserts=5, fraction=0.1)
    times = sorted(n.split(".")[0] for n in _hoodie_files(path) if n.endswith(".commit"))
    before = hudi_rs_snapshot(path)

    run = airflow.dags_test("hudi_archive", path)

    _ok(run)
    archived = run.result("archive")["archive"]
    assert len(times) == 6  # > keep.max 3: archive down to keep.min 2
    kept = sorted(n.split(".")[0] for n in _hoodie_files(path) if n.endswith(".commit"))
    assert kept == times[4:]
    assert not {n for n in _hoodie_files(path) if n.split(".")[0] in times[:4]}
    entries = ArchivedTimeline.load(HudiTable(str(path)).storage)
    assert sorted({str(e.instant.time) for e in entries}) == times[:4]
    assert archived["archived_instants"] and run.result("archive")["merge"] is not None
    assert_same_rows(hudi_rs_snapshot(path), before)


def test_rollback_dag_sensor_finds_the_failed_write_and_rollback_removes_it(
    airflow: AirflowRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, _ = _mor_table(tmp_path)
    before = hudi_rs_snapshot(path)

    def crash(*args: object, **kwargs: object) -> None:
        raise RuntimeError("killed before the commit")

    monkeypatch.setattr(HudiTable, "transition_to_completed", crash)
    upd = generate_updates(generate_trips(200, partitions=2, seed=1), fraction=0.5, seed=7, ts_offset=10**9)
    with pytest.raises(RuntimeError, match="killed before the commit"):
        write_table(str(path), upd, operation="upsert", options=_opts())
    monkeypatch.undo()
    (failed,) = list(HudiTable(str(path)).timeline.pending())
    time.sleep(0.5)  # its heartbeat (left behind by the failed writer) expires at 2 x 200 ms

    run = airflow.dags_test("hudi_rollback_stale", path, {"hoodie.client.heartbeat.interval_in_ms": "200"})

    _ok(run)
    (stale,) = run.result("wait_for_stale_writes")
    assert (stale["instant"], stale["action"]) == (str(failed.time), "deltacommit")
    (rolled,) = run.result("rollback")
    assert rolled["instant"] == str(failed.time) and rolled["rollback_instant"]
    assert f"{rolled['rollback_instant']}.rollback" in _hoodie_files(path)
    assert not [n for n in _hoodie_files(path) if n.startswith(str(failed.time))]
    assert not list(HudiTable(str(path)).timeline.pending())
    assert_same_rows(hudi_rs_snapshot(path), before)


_COMMIT_TRIGGER = """
import asyncio, json, sys, threading
from lake_orchestration.airflow.triggers import HudiCommitTrigger
from lake_orchestration.datagen import generate_trips, generate_updates
from lake_orchestration.hudi.write import WriteOptions, write_table

path = sys.argv[1]
opts = WriteOptions(table_name="t", record_key_fields=("uuid",), partition_fields=("city",), precombine_field="ts",
                    hive_style_partitioning=True, small_file_limit=0)

def writes():
    base = generate_trips(200, partitions=2, seed=1)
    for n in range(2):
        upd = generate_updates(base, fraction=0.2, seed=10 + n, ts_offset=(n + 5) * 10**8)
        write_table(path, upd, operation="upsert", options=opts)

async def main():
    trigger = HudiCommitTrigger(hudi_conn_id="hudi_default", base_path=path, poll_interval=0.1)
    events = trigger.run()
    first = asyncio.ensure_future(events.__anext__())
    await asyncio.sleep(1.0)  # the trigger has its baseline
    await asyncio.to_thread(writes)
    got = [(await asyncio.wait_for(first, 30)).payload]
    got.append((await asyncio.wait_for(events.__anext__(), 30)).payload)
    print("RESULT", json.dumps({"events": got, "serialized": trigger.serialize()}))

asyncio.run(main())
"""


def test_commit_trigger_fires_once_per_commit_completed_after_it_started(
    airflow: AirflowRunner, tmp_path: Path
) -> None:
    path, _ = _mor_table(tmp_path)
    baseline = sorted(n.split(".")[0] for n in _hoodie_files(path) if n.endswith(".deltacommit"))
    got = _run_driver(airflow, _COMMIT_TRIGGER, str(path), env=airflow.env(path), timeout=180)
    new = sorted(
        n.split(".")[0] for n in _hoodie_files(path) if n.endswith(".deltacommit") and n.split(".")[0] not in baseline
    )
    assert len(new) == 2
    assert got["events"] == [{"base_path": str(path), "instant": t, "action": "deltacommit"} for t in new]
    classpath, kwargs = got["serialized"]
    assert classpath == "lake_orchestration.airflow.triggers.HudiCommitTrigger"
    assert kwargs == {
        "hudi_conn_id": "hudi_default",
        "base_path": str(path),
        "poll_interval": 0.1,
        "after_instant": None,
    }


_HOOK = """
import json
from airflow.sdk import Connection
from lake_orchestration.airflow.hooks import HudiTableHook, location_from_connection
from lake_orchestration.errors import InvalidOptionError

extra = {
    "storage_options": {"region": "eu-west-1", "anonymous": "false", "connect_timeout": "5"},
    "session_token": "token-123",
    "hoodie_options": {"k": 5},
}
conn = Connection(conn_id="lake", conn_type="hudi", host="s3://bucket/t", login="AKIAKEY", password="secret-key",
                  extra=json.dumps(extra))
loc = location_from_connection(conn)
over = location_from_connection(conn, base_path="s3://bucket/other")
errors = []
for bad in (Connection(conn_id="nopath", conn_type="hudi"),
            Connection(conn_id="badextra", conn_type="hudi", host="/t", extra=json.dumps({"storage_options": [1]}))):
    try:
        location_from_connection(bad)
    except InvalidOptionError as err:
        errors.append(str(err))
print("RESULT", json.dumps({
    "base_path": loc.base_path, "storage": loc.storage_options, "hoodie": loc.hoodie_options,
    "merged": loc.service_options({"k": "6", "j": 1}), "repr": repr(loc), "override": over.base_path,
    "errors": errors, "env_conn": HudiTableHook("hudi_default").get_conn().base_path,
}))
"""


def test_hook_location_secrets_only_in_storage_options_operator_path_and_options_win(
    airflow: AirflowRunner, tmp_path: Path
) -> None:
    env = {**airflow.env(tmp_path), "AIRFLOW_CONN_HUDI_DEFAULT": '{"conn_type": "hudi", "host": "/data/trips"}'}
    got = _run_driver(airflow, _HOOK, env=env, timeout=120)
    assert got["base_path"] == "s3://bucket/t" and got["override"] == "s3://bucket/other"
    assert got["storage"] == {  # typed as the CLI and Dagster type them (a connection's extra holds text)
        "region": "eu-west-1",
        "anonymous": False,
        "connect_timeout": 5.0,
        "access_key": "AKIAKEY",
        "secret_key": "secret-key",
        "session_token": "token-123",
    }
    assert got["hoodie"] == {"k": "5"} and got["merged"] == {"k": "6", "j": "1"}
    assert "secret-key" not in got["repr"] and "AKIAKEY" not in got["repr"]
    assert got["errors"][0].startswith("Airflow connection 'nopath': no table base path")
    assert "'badextra': extra 'storage_options' is list [1]" in got["errors"][1]
    assert got["env_conn"] == "/data/trips"


_SPARK_EXECUTE = """
import json, sys
from lake_orchestration.airflow.operators import HudiExecuteCompactionOperator

op = HudiExecuteCompactionOperator(task_id="execute", instant=sys.argv[2], base_path=sys.argv[1], engine="spark",
                                   spark_master="local[2]")
first = op.execute({})
print("RESULT", json.dumps({"first": first, "again": op.execute({})}))
"""


@pytest.mark.spark
def test_execute_operator_on_spark_commits_the_plan_and_a_rerun_is_a_no_op(
    airflow: AirflowRunner, tmp_path: Path
) -> None:
    path, _ = _mor_table(tmp_path)
    plan = schedule_compaction(HudiTable(str(path)), force=True)
    before = hudi_rs_snapshot(path)
    got = _run_driver(airflow, _SPARK_EXECUTE, str(path), str(plan.instant), env=airflow.env(path), timeout=600)
    assert got["first"]["instant"] == str(plan.instant) and got["first"]["operations"] == 2
    assert got["first"]["already_committed"] is False
    assert got["again"] == {"instant": str(plan.instant), "already_committed": True}
    assert f"{plan.instant}.commit" in _hoodie_files(path)
    assert_same_rows(hudi_rs_snapshot(path), before, ignore=REWRITTEN_BY_SERVICES)


_PENDING_TRIGGER_ROUND_TRIP = """
import asyncio, importlib, json, sys
from lake_orchestration.airflow.triggers import HudiPendingCompactionTrigger

path = sys.argv[1]

async def main():
    made = HudiPendingCompactionTrigger(hudi_conn_id="hudi_default", base_path=path, poll_interval=0.1, seq="LIFO",
                                        max_plans=2)
    classpath, kwargs = made.serialize()
    # what the triggerer does: import the class path, build the trigger from the serialized kwargs, run it
    module, _, name = classpath.rpartition(".")
    rebuilt = getattr(importlib.import_module(module), name)(**json.loads(json.dumps(kwargs)))
    event = await asyncio.wait_for(rebuilt.run().__anext__(), 60)
    print("RESULT", json.dumps({"serialized": [classpath, kwargs], "again": list(rebuilt.serialize()),
                                "event": event.payload}))

asyncio.run(main())
"""


def test_pending_compaction_trigger_serialised_and_rebuilt_keeps_lifo(airflow: AirflowRunner, tmp_path: Path) -> None:
    """The triggerer rebuilds a deferred sensor's trigger from ``serialize()`` (in another process, after a restart):
    the rebuilt trigger keeps ``seq=LIFO`` and ``max_plans``, and its event lists the newest plans first."""
    path, cities = _mor_table(tmp_path, updated=1)
    plans = [str(schedule_compaction(HudiTable(str(path)), force=True).instant)]  # the first city's file group
    _update_city(path, generate_trips(200, partitions=2, seed=1), cities[1], 6)
    plans.append(str(schedule_compaction(HudiTable(str(path)), force=True).instant))  # the second city's
    assert plans == sorted(plans) and plans[0] != plans[1]
    got = _run_driver(airflow, _PENDING_TRIGGER_ROUND_TRIP, str(path), env=airflow.env(path), timeout=180)
    classpath, kwargs = got["serialized"]
    assert classpath == "lake_orchestration.airflow.triggers.HudiPendingCompactionTrigger"
    assert kwargs["seq"] == "LIFO" and kwargs["max_plans"] == 2
    assert got["again"] == got["serialized"], "a rebuilt trigger serialises to the same kwargs"
    assert got["event"] == {"status": "success", "instants": [plans[1], plans[0]]}, "LIFO: newest plan first"


_UNKNOWN_KEYS = '''
import json, sys
from pathlib import Path
from airflow.dag_processing.dagbag import DagBag
from lake_orchestration.airflow.hooks import HudiTableHook
from lake_orchestration.airflow.operators import HudiScheduleCompactionOperator

typo = "hoodie.compact.inline.max.delta.commit"
dags = Path(sys.argv[1])
dags.mkdir()
(dags / "typo_dag.py").write_text(f"""
import pendulum
from airflow.sdk import DAG
from lake_orchestration.airflow.operators import HudiScheduleCompactionOperator
with DAG(dag_id="typo", schedule=None, start_date=pendulum.datetime(2026, 1, 1, tz="UTC")):
    HudiScheduleCompactionOperator(task_id="schedule", options={{"{typo}": "1"}})
""")
bag = DagBag(dag_folder=str(dags))
passed = HudiScheduleCompactionOperator(task_id="p", options={typo: "1"}, passthrough_keys=[typo]).options
errors = {}
for name, make in {
    "hook": lambda: HudiTableHook("hudi_default").get_conn(),
    # a task's start: execute() reads the connection before it opens the table (there is none at the path)
    "execute": lambda: HudiScheduleCompactionOperator(task_id="s", base_path="/no-table").execute({}),
    "not_hudi": lambda: HudiScheduleCompactionOperator(task_id="x", passthrough_keys=["compaction.max_memory"]),
}.items():
    try:
        make()
    except Exception as err:
        errors[name] = [type(err).__name__, str(err)]
print("RESULT", json.dumps({"parse": sorted(bag.import_errors.values()), "dags": sorted(bag.dag_ids),
    "errors": errors, "passed": passed, "conn_passed": HudiTableHook("hudi_pass").get_conn().hoodie_options}))
'''


def test_unknown_hoodie_option_keys_refused_at_dag_parse_and_from_the_connection_with_a_hint(
    airflow: AirflowRunner, tmp_path: Path
) -> None:
    """A typo in an operator's ``options`` is a DAG import error, one in the connection's ``hoodie_options`` fails
    the task at start (``execute``, before the table is opened); both name the key, the closest known key and
    ``passthrough_keys``, which lets a key we do not model through (the CLI's ``--option-passthrough``)."""
    typo, known = "hoodie.compact.inline.max.delta.commit", "hoodie.compact.inline.max.delta.commits"
    env = {
        **airflow.env(tmp_path, {typo: "1"}),
        "AIRFLOW_CONN_HUDI_PASS": json.dumps(
            {"conn_type": "hudi", "host": "/t", "extra": {"hoodie_options": {typo: "1"}, "passthrough_keys": [typo]}}
        ),
    }
    got = _run_driver(airflow, _UNKNOWN_KEYS, str(tmp_path / "dags"), env=env, timeout=120)
    assert got["dags"] == [], got
    (parse_error,) = got["parse"]
    assert f"Unknown Hudi option '{typo}' (did you mean {known}?) in options of task 'schedule'" in parse_error
    assert "passthrough_keys" in parse_error
    kind, message = got["errors"]["hook"]
    assert kind == "UnknownOptionError", got["errors"]
    assert message.startswith(
        f"Unknown Hudi option '{typo}' (did you mean {known}?) in extra 'hoodie_options' of Airflow connection "
        "'hudi_default'"
    ), message
    assert "passthrough_keys" in message
    kind, message = got["errors"]["not_hudi"]
    assert kind == "InvalidOptionError" and "['compaction.max_memory'] are not Hudi keys" in message, message
    assert got["passed"] == {typo: "1"} and got["conn_passed"] == {typo: "1"}

    kind, message = got["errors"]["execute"]
    assert kind == "UnknownOptionError" and f"'{typo}' (did you mean {known}?)" in message, message
