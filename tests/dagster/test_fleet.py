"""The fleet model over 50 real tables: the sensors' ticks and the runs they request, in process, until nothing is
due; every needed service runs exactly once (judged from the timelines), quiet tables are untouched, the rows are
hudi-rs's before and after, and the fleet health asset and its check name exactly the tables in breach (counted from
the ``.hoodie/`` listings here, not from the code under test).

The 50 tables are 4 real tables written once (module scope) and copied: 41 quiet (one commit: nothing due), 3 MOR
tables whose compaction trigger fired (2 deltacommits, ``hoodie.compact.inline.max.delta.commits: 2``), 3 COW tables
with clean work (4 commits, 2 retained), 3 COW tables with clean and archive work (7 commits, keep 3..5). The sensors
request at most 2 runs per tick (the budget), so the tables are served over several ticks.
"""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from lake_orchestration.dagster import HudiTableConfig
from lake_orchestration.dagster.fleet import (
    COMPACTION_KEY,
    COMPACTION_POOL,
    HEALTH_CHECK,
    HEALTH_KEY,
    PARTITIONS_DEF,
    POOL_TAG,
    TABLE_TAG,
    build_fleet_definitions,
    use_fleet_model,
)
from lake_orchestration.hudi.model.properties import TableType
from tests.oracle import REWRITTEN_BY_SERVICES, assert_same_rows, hudi_rs_snapshot
from tests.trips import trips_options, write_trips_history

pytestmark = pytest.mark.dagster

QUIET, COMPACT, CLEAN, ARCHIVE = "quiet", "compact", "clean", "archive"
COUNTS = {QUIET: 41, COMPACT: 3, CLEAN: 3, ARCHIVE: 3}
BREACHING = {"quiet_00", "quiet_01", "quiet_02"}
"""Quiet tables whose policy allows no completed instant on the active timeline (max_active_instants: 0)."""
BUDGET = 2


def _options(kind: str) -> dict[str, Any]:
    if kind == COMPACT:
        return {
            "compaction_options": {"hoodie.compact.inline.max.delta.commits": 2},
            "clean_options": {"hoodie.cleaner.commits.retained": 10},
        }
    return {
        "clean_options": {"hoodie.cleaner.commits.retained": 2},
        "archive_options": {"hoodie.keep.min.commits": 3, "hoodie.keep.max.commits": 5},
    }


@pytest.fixture(scope="module")
def fleet_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The 50 tables: one real table per kind, copied."""
    src = tmp_path_factory.mktemp("fleet_src")
    cow = trips_options(table_type=TableType.COPY_ON_WRITE, hive_style_partitioning=True, small_file_limit=0)
    mor = trips_options(hive_style_partitioning=True, small_file_limit=0)
    write_trips_history(src / QUIET, mor, rows=40, upserts=0, fraction=0.3, partitions=1)
    write_trips_history(src / COMPACT, mor, rows=40, upserts=2, fraction=0.3, partitions=1)
    write_trips_history(src / CLEAN, cow, rows=40, upserts=3, fraction=0.3, partitions=1)
    write_trips_history(src / ARCHIVE, cow, rows=40, upserts=6, fraction=0.3, partitions=1)
    root = tmp_path_factory.mktemp("fleet")
    for kind, n in COUNTS.items():
        for i in range(n):
            shutil.copytree(src / kind, root / f"{kind}_{i:02d}")
    return root


def _configs(root: Path) -> list[HudiTableConfig]:
    out = []
    for path in sorted(root.iterdir()):
        kind = path.name.rsplit("_", 1)[0]
        policy = {"max_active_instants": 0} if path.name in BREACHING else {}
        out.append(
            HudiTableConfig(
                name=path.name,
                base_path=str(path),
                clean_dry_run=False,
                archive_dry_run=False,
                policy=policy,
                **_options(kind),
            )
        )
    return out


def _timeline_files(path: Path) -> list[str]:
    return sorted(p.name for p in (path / ".hoodie").iterdir() if p.is_file())


def _completed(path: Path, action: str) -> list[str]:
    return [n for n in _timeline_files(path) if n.endswith(f".{action}")]


def _archive_files(path: Path) -> list[str]:
    d = path / ".hoodie" / "archived"
    return sorted(p.name for p in d.iterdir()) if d.is_dir() else []


def _tick_all(defs: dg.Definitions, instance: dg.DagsterInstance, cursors: dict[str, str | None]) -> list[Any]:
    """One tick of every fleet sensor (the cursors advanced); their run requests, partitions added as Dagster's
    daemon would."""
    requests = []
    for sensor in defs.sensors:
        result = sensor(dg.build_sensor_context(instance=instance, definitions=defs, cursor=cursors.get(sensor.name)))
        cursors[sensor.name] = result.cursor
        for req in result.dynamic_partitions_requests or []:
            instance.add_dynamic_partitions(req.partitions_def_name, list(req.partition_keys))
        requests += result.run_requests or []
    return requests


def _docs_limits() -> list[dict[str, Any]]:
    """The ``concurrency:`` block of docs/dagster/fleet.md, as the page gives it."""
    import yaml

    from tests.conftest import REPO_ROOT

    page = (REPO_ROOT / "docs" / "dagster" / "fleet.md").read_text()
    block = page.split("```yaml\nconcurrency:", 1)[1].split("```", 1)[0]
    return yaml.safe_load("concurrency:" + block)["concurrency"]["runs"]["tag_concurrency_limits"]


def test_run_tags_meet_the_instance_limits(fleet_dir: Path) -> None:
    """Dagster 1.13 takes the ``concurrency: runs: tag_concurrency_limits`` of docs/dagster/fleet.md, and its run
    queue's counter (what the daemon dequeues by) holds the fleet's runs to one per table and two of the pool
    ``heavy`` (the clean_ tables' policy here). Before the main test: the tables still have their work."""
    from dagster._utils.tags import TagConcurrencyLimitsCounter

    configs = [
        c.model_copy(update={"policy": {"pool": "heavy"}}) if c.name.startswith(CLEAN) else c
        for c in _configs(fleet_dir)
    ]
    defs = build_fleet_definitions(tables=configs, budget_per_tick=10)
    overrides = {"concurrency": {"runs": {"tag_concurrency_limits": _docs_limits()}}}
    with dg.instance_for_test(overrides=overrides) as instance:
        requests = []
        for name in ("fleet__clean_sensor", "fleet__archive_sensor"):
            sensor = defs.resolve_sensor_def(name)
            requests += sensor(dg.build_sensor_context(instance=instance, definitions=defs)).run_requests
        limits = instance.get_concurrency_config().run_queue_config.tag_concurrency_limits
    assert len(requests) == 9  # clean: 3 clean_ + 3 archive_ tables; archive: 3 archive_ tables
    assert sum(1 for r in requests if r.tags[POOL_TAG] == "heavy") == 3
    counter = TagConcurrencyLimitsCounter(limits, [])
    launched = []
    for req in requests:
        if not counter.is_blocked(req):
            counter.update_counters_with_launched_item(req)
            launched.append(req)
    per_table = Counter(r.tags[TABLE_TAG] for r in launched)
    assert max(per_table.values()) == 1  # an archive_ table's clean or archive, not both
    heavy = {r.tags[TABLE_TAG] for r in requests if r.tags[POOL_TAG] == "heavy"}
    assert len(heavy & set(per_table)) == 2  # 2 of the 3 clean_ tables
    assert set(per_table) | heavy == {r.tags[TABLE_TAG] for r in requests}
    # the op-level limit: the compaction's execute step runs in the Dagster pool fleet_compaction
    plans = defs.resolve_assets_def(COMPACTION_KEY).node_def
    assert plans.node_named("fleet__compaction_execute_plan_op").definition.pool == COMPACTION_POOL


def test_fleet_runs_every_needed_service_once_and_names_the_tables_in_breach(fleet_dir: Path) -> None:
    configs = _configs(fleet_dir)
    assert len(configs) == 50 and use_fleet_model("auto", len(configs))
    defs = build_fleet_definitions(tables=configs, budget_per_tick=BUDGET)
    assert len(list(defs.sensors)) == 4 and len(list(defs.jobs)) == 6
    paths = {c.name: Path(c.base_path) for c in configs}
    before_files = {n: _timeline_files(p) for n, p in paths.items()}
    sample = ["compact_00", "clean_00", "archive_00"]
    before_rows = {n: hudi_rs_snapshot(paths[n]) for n in sample}

    runs: Counter[tuple[str, str]] = Counter()
    cursors: dict[str, str | None] = {}
    with dg.DagsterInstance.ephemeral() as instance:  # in memory: a run costs ~0.3 s, not ~3 s on sqlite
        for _ in range(12):
            requests = _tick_all(defs, instance, cursors)
            if not requests:
                break
            # the budget holds per sensor and tick
            per_job = Counter(r.job_name for r in requests)
            assert all(v <= BUDGET for k, v in per_job.items() if k != "fleet__compaction"), per_job
            for req in requests:
                runs[(req.job_name, req.tags[TABLE_TAG])] += 1
                result = defs.resolve_job_def(req.job_name).execute_in_process(
                    instance=instance, tags=req.tags, partition_key=req.partition_key, run_config=req.run_config or None
                )
                assert result.success, (req.job_name, req.tags)
        else:
            pytest.fail(f"the sensors still request runs after 12 rounds: {runs}")
        partitions = instance.get_dynamic_partitions(PARTITIONS_DEF)

        # every needed service ran exactly once, judged from the timelines; nothing else ran
        for name, path in paths.items():
            kind = name.rsplit("_", 1)[0]
            commits, cleans = _completed(path, "commit"), _completed(path, "clean")
            if kind == QUIET:
                assert _timeline_files(path) == before_files[name], f"{name} changed"
            elif kind == COMPACT:
                new_commits = [c for c in commits if c not in before_files[name]]
                assert len(new_commits) == 1 and not cleans, (name, new_commits, cleans)
                assert [p for p in partitions if p.startswith(f"{name}|")] == [f"{name}|{new_commits[0][:-7]}"]
            elif kind == CLEAN:
                assert len(cleans) == 1 and not _archive_files(path), (name, cleans)
            else:
                assert len(cleans) == 1 and len(_archive_files(path)) == 1, (name, cleans, _archive_files(path))
        assert {t for _, t in runs} == {n for n in paths if not n.startswith(QUIET)}
        assert all(runs[("fleet__compaction", n)] == 1 for n in paths if n.startswith(COMPACT))
        assert all(runs[("fleet__schedule_compaction", n)] == 1 for n in paths if n.startswith(COMPACT))
        assert all(runs[("fleet__clean", n)] == 1 for n in paths if n.startswith((CLEAN, ARCHIVE)))
        for n in sample:
            assert_same_rows(hudi_rs_snapshot(paths[n]), before_rows[n], ignore=REWRITTEN_BY_SERVICES)

        # a tick with nothing changed lists each table once and requests nothing
        assert _tick_all(defs, instance, cursors) == []

        # the fleet health asset and its check name exactly the tables in breach, counted here from the listings
        completed = {
            n: [f for f in _timeline_files(p) if "." in f and f.split(".")[-1] in _ACTIONS] for n, p in paths.items()
        }
        # each table's limit of completed instants on the active timeline: its policy's, else TablePolicy's default
        limit = {n: 0 if n in BREACHING else 60 for n in paths}
        expected = {n for n in paths if len(completed[n]) > limit[n]}
        assert expected == BREACHING
        result = defs.resolve_job_def("fleet__measure_health").execute_in_process(
            instance=instance, raise_on_error=False
        )
    (mat,) = result.asset_materializations_for_node("fleet__health") or [
        e.event_specific_data.materialization
        for e in result.all_events
        if e.event_type_value == "ASSET_MATERIALIZATION"
    ]
    md = {k: v.value for k, v in mat.metadata.items()}
    assert set(md["breaching_tables"]) == expected
    assert md["tables"] == 50 and md["tables_breaching"] == len(expected)
    table = mat.metadata["tables_health"]
    rows = {r.data["name"]: r.data for r in table.records}
    assert set(rows) == set(paths)
    assert {n for n, r in rows.items() if r["breaches"]} == expected
    (check,) = [
        e.asset_check_evaluation_data for e in result.all_events if e.event_type_value == "ASSET_CHECK_EVALUATION"
    ]
    assert check.asset_check_key == dg.AssetCheckKey(HEALTH_KEY, HEALTH_CHECK)
    assert not check.passed
    assert all(n in check.description for n in expected)
    assert not any(n in check.description for n in set(paths) - expected)


_ACTIONS = {"commit", "deltacommit", "clean", "replacecommit", "rollback", "savepoint"}
