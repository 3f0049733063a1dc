"""The fleet (issue 27) on local storage: the YAML and its errors, discovery of a nested warehouse (Hudi and the
Java-written Paimon golden tables), probes and their order, ``lake-orch fleet status --json`` against figures
computed here from the timelines and hudi-rs, and ``lake-orch fleet run`` running each due service exactly once
(judged by the timelines, rows equal before and after by hudi-rs) while one broken table fails alone."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from lake_orchestration.cli.app import cli
from lake_orchestration.fleet import FleetConfigError, expand_entries, load_fleet
from lake_orchestration.fleet.discovery import DiscoveryError, discover_tables
from lake_orchestration.fleet.probe import order, probe
from lake_orchestration.io.storage import Storage
from tests.fleet.conftest import BROKEN_PLAN_INSTANT, DEFAULTS, EXPECTED_DUE, MDT_TABLE, TABLES, Warehouse
from tests.oracle import REWRITTEN_BY_SERVICES, assert_same_rows, hudi_rs_snapshot

COMPLETED_SUFFIXES = (".commit", ".deltacommit", ".replacecommit", ".clean", ".rollback", ".savepoint")


def write_config(path: Path, warehouse: Path, **extra: Any) -> Path:
    cfg = {
        "defaults": {**DEFAULTS, "policy": {"max_cleaner_lag_commits": 4}},
        "tables": [
            {"name": "priority_clean", "base_path": str(warehouse / "rides/cow_clean"), "policy": {"weight": 5}}
        ],
        "discover": [{"prefix": str(warehouse), **extra}],
    }
    path.write_text(yaml.safe_dump(cfg))
    return path


# -- the YAML --------------------------------------------------------------------------------------------------------
def _err(raw: dict[str, Any]) -> str:
    with pytest.raises(FleetConfigError) as e:
        expand_entries(raw, where="fleet.yaml")
    return str(e.value)


def test_yaml_defaults_overrides_and_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    raw = {
        "defaults": {
            "compaction_options": {"hoodie.compact.inline.max.delta.commits": 4},
            "clean_options": {"hoodie.cleaner.commits.retained": 3},
            "policy": {"weight": 2, "max_log_files_per_slice": 10},
            "storage": {"provider": "s3", "region": "eu-west-1", "access_key_env": "K", "secret_key_env": "S"},
        },
        "tables": [
            {"name": "a", "base_path": "s3://b/wh/a"},
            {
                "name": "b",
                "base_path": "s3://b/wh/b",
                "compaction_options": {"hoodie.compact.inline.max.delta.commits": 9},
                "policy": {"weight": 0.5},
                "storage": {"region": "us-east-1"},
            },
            {"name": "c", "base_path": "/local/c", "storage": {"provider": "local"}},
        ],
    }
    entries = expand_entries(raw, where="fleet.yaml")
    a, b, c = (t for t in load_fleet_entries(entries))
    assert a.options["hoodie.compact.inline.max.delta.commits"] == "4"
    assert b.options["hoodie.compact.inline.max.delta.commits"] == "9"  # the table's value wins
    assert b.options["hoodie.cleaner.commits.retained"] == "3"  # the default's other keys stay
    assert (a.policy.weight, b.policy.weight) == (2.0, 0.5)
    assert b.policy.max_log_files_per_slice == 10
    assert b.storage_options == {"region": "us-east-1"} and b.secret_env == {"access_key": "K", "secret_key": "S"}
    assert c.storage_options == {} and c.secret_env == {}  # another provider replaces the default's block
    # secrets: read when the table is opened, never stored; a missing variable is named
    monkeypatch.setenv("K", "the-key")
    monkeypatch.delenv("S", raising=False)
    with pytest.raises(FleetConfigError, match=r"'S'.*not set"):
        a.resolved_storage_options()
    monkeypatch.setenv("S", "the-secret")
    assert a.resolved_storage_options()["secret_key"] == "the-secret"
    assert "the-secret" not in repr(a) and "the-secret" not in json.dumps(entries)

    one = {"name": "t", "base_path": "/x/t"}
    # the Dagster code location's own top-level keys are accepted (one file for both shells)
    assert len(expand_entries({"tables": [one], "fleet": "auto", "fleet_budget_per_tick": 5}, where="f")) == 1
    assert "unknown key 'tabels' (did you mean 'tables'?)" in _err({"tabels": [one]})
    assert "unknown key 'base_pth' (did you mean 'base_path'?)" in _err({"tables": [{"name": "t", "base_pth": "/x"}]})
    msg = _err({"tables": [{**one, "policy": {"max_log_file_per_slice": 3}}]})
    assert "tables[0] ('t')" in msg and "did you mean 'max_log_files_per_slice'?" in msg
    msg = _err({"tables": [{**one, "compaction_options": {"hoodie.compact.inline.max.delta.comits": 3}}]})
    assert "hoodie.compact.inline.max.delta.commits" in msg and "fleet.yaml: tables[0]" in msg
    assert "expected a number > 0" in _err({"tables": [{**one, "policy": {"weight": 0}}]})
    assert "expected a number > 0, got None" in _err({"tables": [{**one, "policy": {"weight": None}}]})
    assert load_fleet_entries([{**one, "policy": {"max_small_files": None}}])[0].policy.max_small_files is None
    s3 = {"name": "t", "base_path": "s3://b/t"}
    msg = _err({"tables": [{**s3, "storage": {"provider": "s3", "access_key_env": "AKIA/x+y", "secret_key_env": "S"}}]})
    assert "NAME of an environment variable" in msg and "AKIA/x+y" not in msg
    assert "does not match base_path" in _err({"tables": [{**one, "storage": {"provider": "s3"}}]})
    assert "duplicate table name 't': /y/t and /x/t" in _err({"tables": [one, {"name": "t", "base_path": "/y/t"}]})
    assert "per table" in _err({"defaults": {"base_path": "/x"}, "tables": [one]})


def load_fleet_entries(entries: list[dict[str, Any]]) -> list[Any]:
    from lake_orchestration.fleet.config import tables_from_entries

    return tables_from_entries(entries, where="fleet.yaml")


def test_entry_keys_are_the_dagster_table_config_fields() -> None:
    """One file serves both shells: every key of a Dagster table entry is a key of a fleet entry, and back."""
    config = pytest.importorskip("lake_orchestration.dagster.config")
    from lake_orchestration.fleet.config import ENTRY_KEYS

    assert set(config.HudiTableConfig.model_fields) | {"policy"} >= ENTRY_KEYS - {"policy"}
    assert set(config.HudiTableConfig.model_fields) <= ENTRY_KEYS


# -- discovery -------------------------------------------------------------------------------------------------------
class CountingStorage(Storage):
    """A local Storage that records the directories it lists."""

    listed: list[str]

    def list_dir(self, path: str, *, missing_ok: bool = True) -> Any:
        self.listed.append(path)
        return super().list_dir(path, missing_ok=missing_ok)


def test_discovery_of_a_nested_warehouse(warehouse: Warehouse, tmp_path: Path) -> None:
    storage = CountingStorage(str(warehouse.root))
    storage.listed = []
    found = discover_tables(storage, str(warehouse.root))
    got = {t.name: (t.format, t.relative_path) for t in found}
    hudi = {rel.replace("/", "_"): ("hudi", rel) for rel in TABLES}
    paimon = {n: ("paimon", "default.db/" + n.removeprefix("default_")) for n in warehouse.paimon}
    assert got == {**hudi, **paimon}
    # level by level, never inside a table: one listing per directory above the tables, one per table root
    roots = [str(warehouse.root / rel) for _n, (_f, rel) in got.items()]
    assert not [p for p in storage.listed if any(p.startswith(r + "/") for r in roots)]
    dirs_above = {"", "rides", "sales", "deep", "deep/a", "deep/a/b", *(["default.db"] if warehouse.paimon else [])}
    assert len(storage.listed) == len(dirs_above) + len(got)
    # format filter, exclude globs, and a listed table not discovered twice
    assert {t.format for t in discover_tables(Storage(str(warehouse.root)), str(warehouse.root), format="paimon")} <= {
        "paimon"
    }
    overlapping = {"discover": [{"prefix": str(warehouse.root)}, {"prefix": str(warehouse.root / "rides")}]}
    assert len(expand_entries(overlapping, where="o.yaml")) == len(got)  # a table under both prefixes: once
    shallow = load_fleet(write_config(tmp_path / "s.yaml", warehouse.root, max_depth=2))
    assert "deep_a_b_mor_deep" not in {t.name for t in shallow} and "sales_mor_all" in {t.name for t in shallow}
    tables = load_fleet(write_config(tmp_path / "f.yaml", warehouse.root, exclude=["rides_*idle", "deep/*"]))
    names = [t.name for t in tables]
    assert names[0] == "priority_clean" and "rides_cow_clean" not in names
    assert "rides_mor_idle" not in names and "rides_cow_idle" not in names and "deep_a_b_mor_deep" not in names
    listed = CliRunner().invoke(cli, ["fleet", "tables", "--config", str(tmp_path / "f.yaml"), "--json"])
    assert listed.exit_code == 0, listed.output
    assert [t["name"] for t in json.loads(listed.stdout)] == names
    assert json.loads(listed.stdout)[0]["policy"]["weight"] == 5
    # two paths, one name: refused naming both
    for rel in ("x_y/t", "x/y_t"):
        (tmp_path / "clash" / rel / ".hoodie").mkdir(parents=True)
        (tmp_path / "clash" / rel / ".hoodie" / "hoodie.properties").write_text("hoodie.table.name=t\n")
    with pytest.raises(DiscoveryError, match=r"'x_y_t'.*x/y_t.*x_y/t|'x_y_t'.*x_y/t.*x/y_t"):
        discover_tables(Storage(str(tmp_path / "clash")), str(tmp_path / "clash"))


# -- probes and order -----------------------------------------------------------------------------------------------
def test_probe_due_services_and_order(warehouse: Warehouse, tmp_path: Path) -> None:
    tables = [t for t in load_fleet(write_config(tmp_path / "f.yaml", warehouse.root)) if t.format == "hudi"]
    probes = [probe(t) for t in tables]
    assert {p.name: p.due_services() for p in probes} == EXPECTED_DUE
    # unchanged: the same fingerprint, nothing judged
    again = [probe(t, previous=p.fingerprint) for t, p in zip(tables, probes, strict=True)]
    assert all(not p.changed and not p.due for p in again)
    # most overdue x weight first, one service per table, within the budget
    ranked = order(probes, tables, budget=10)
    assert ranked[0] == ("priority_clean", "clean")  # weight 5
    assert len({n for n, _s in ranked}) == len(ranked) == sum(1 for v in EXPECTED_DUE.values() if v)
    assert order(probes, tables, budget=2) == ranked[:2]
    assert "priority_clean" not in dict(order(probes, tables, budget=10, busy=["priority_clean"]))


# -- fleet status ----------------------------------------------------------------------------------------------------
def _timeline_figures(path: Path) -> dict[str, int]:
    """Cleaner lag, active instants and pending compactions from the names in ``.hoodie/``."""
    names = sorted(p.name for p in (path / ".hoodie").iterdir() if p.is_file())
    completed = [n for n in names if n.endswith(COMPLETED_SUFFIXES)]
    mdt = path / ".hoodie" / "metadata" / ".hoodie"
    in_mdt = {p.name.split(".")[0] for p in mdt.glob("*.deltacommit")} if mdt.is_dir() else None
    cleans = [n.split(".")[0] for n in completed if n.endswith(".clean")]
    writes = [n.split(".")[0] for n in completed if n.endswith((".commit", ".deltacommit", ".replacecommit"))]
    done = {n.split(".")[0] for n in completed}
    pending = {n.split(".")[0] for n in names if ".compaction." in n} - done
    return {
        "cleaner_lag_commits": sum(1 for w in writes if not cleans or w > max(cleans)),
        "active_instants": len(completed),
        "pending_compactions": len(pending),
        # data instants the metadata table has no completed deltacommit for
        "metadata_table_lag": 0 if in_mdt is None else sum(1 for n in completed if n.split(".")[0] not in in_mdt),
    }


def _slice_figures(path: Path) -> dict[str, int]:
    """Log files of the most loaded latest file slice and small base files, as hudi-rs lists the slices."""
    from hudi import HudiTableBuilder

    slices = HudiTableBuilder.from_base_uri(str(path)).build().get_file_slices()
    return {
        "max_log_files_per_slice": max((len(s.log_file_names) for s in slices), default=0),
        "small_files": sum(1 for s in slices if s.base_file_name and s.base_file_size < 104_857_600),
    }


def test_fleet_status_json_against_the_timelines(warehouse: Warehouse, tmp_path: Path) -> None:
    config = write_config(tmp_path / "f.yaml", warehouse.root)
    r = CliRunner().invoke(cli, ["fleet", "status", "--config", str(config), "--json"])
    assert r.exit_code == 2, r.output  # tables breach their policy: exit status 2
    out = json.loads(r.output)
    rows = {row["name"]: row for row in out["tables"]}
    paths = {"priority_clean": "rides/cow_clean"} | {
        rel.replace("/", "_"): rel for rel in TABLES if rel != "rides/cow_clean"
    }
    for name, rel in paths.items():
        row = rows[name]
        if name == "rides_broken":
            assert row["breaches"], row  # its unreadable plan: pending, or unreadable
            continue
        expected = _timeline_figures(warehouse.path(rel))
        if rel != MDT_TABLE:  # (hudi-rs would list its files from the metadata table that missed a commit)
            expected |= _slice_figures(warehouse.path(rel))
        assert {k: row[k] for k in expected} == expected, name
        assert row["format"] == "hudi"
        lag_breach = expected["cleaner_lag_commits"] > 4
        assert any(b.startswith("cleaner_lag_commits") for b in row["breaches"]) == lag_breach, name
    assert rows["sales_cow_archive"]["breaches"] == ["cleaner_lag_commits 5 > 4"]
    assert rows["rides_cow_mdt"]["breaches"] == ["metadata_table_lag 1 > 0"]
    for name in warehouse.paimon:
        assert rows[name]["format"] == "paimon" and rows[name]["error"] is None
    agg = out["aggregates"]
    assert agg["tables"] == len(rows) and agg["tables_breaching"] == sum(1 for r in rows.values() if r["breaches"])
    text = CliRunner().invoke(cli, ["fleet", "status", "--config", str(config), "--table", "sales_cow_archive"])
    assert text.exit_code == 2 and "! sales_cow_archive" in text.output and "1 in breach" in text.output
    ok = CliRunner().invoke(cli, ["fleet", "status", "--config", str(config), "--table", "rides_cow_idle"])
    assert ok.exit_code == 0 and "0 in breach" in ok.output
    bad = CliRunner().invoke(cli, ["fleet", "status", "--config", str(config), "--table", "rides_cow_idel"])
    assert bad.exit_code == 2 and "did you mean 'rides_cow_idle'" in bad.output


# -- fleet run -------------------------------------------------------------------------------------------------------
def _hoodie_names(path: Path) -> list[str]:
    return sorted(p.name for p in (path / ".hoodie").iterdir() if p.is_file())


def test_fleet_run_runs_each_due_service_once(warehouse: Warehouse, tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    shutil.copytree(warehouse.root, wh)
    config = write_config(tmp_path / "f.yaml", wh, exclude=["default_*", MDT_TABLE])
    paths = {"priority_clean": "rides/cow_clean"} | {
        rel.replace("/", "_"): rel for rel in TABLES if rel != "rides/cow_clean"
    }
    before = {n: hudi_rs_snapshot(wh / rel) for n, rel in paths.items() if n != "rides_broken"}
    names_before = {n: _hoodie_names(wh / rel) for n, rel in paths.items()}

    r = CliRunner().invoke(
        cli, ["fleet", "run", "--config", str(config), "--services", "compaction,clean,archive", "--json"]
    )
    assert r.exit_code == 1, r.output  # the broken table failed
    outcomes = json.loads(r.stdout)["outcomes"]
    ran = {(o["table"], o["service"]): o["status"] for o in outcomes}
    # the due services, and archival where the compaction's commit takes the timeline past hoodie.keep.max.commits
    expected = {(n, s) for n, services in EXPECTED_DUE.items() for s in services if s != "log_compaction"}
    expected |= {("rides_mor_due", "archive"), ("deep_a_b_mor_deep", "archive")}
    assert set(ran) == expected
    assert ran.pop(("rides_broken", "compaction")) == "failed"
    (broken,) = [o for o in outcomes if o["status"] == "failed"]
    assert broken["detail"].startswith("CorruptFileError") and broken["detail"].endswith("(2 attempts)")  # --retry 1
    assert set(ran.values()) == {"done"}, outcomes

    for name, rel in paths.items():
        names = _hoodie_names(wh / rel)
        new = sorted(set(names) - set(names_before[name]))
        compactions = [n for n in new if n.endswith(".commit") and rel.split("/")[-1].startswith("mor")]
        cleans = [n for n in new if n.endswith(".clean")]
        archived = list((wh / rel / ".hoodie" / "archived").glob("*.archive.*"))
        due = [s for (n, s) in expected if n == name and n != "rides_broken"]
        assert len(compactions) == ("compaction" in due), (name, new)
        assert len(cleans) == ("clean" in due), (name, new)
        assert bool(archived) == ("archive" in due), name
        if not due:
            assert names == names_before[name], name
        if name != "rides_broken":
            ours = hudi_rs_snapshot(wh / rel)
            assert ours is not None
            assert_same_rows(ours, before[name], ignore=REWRITTEN_BY_SERVICES)
    assert (wh / "rides/broken/.hoodie" / f"{BROKEN_PLAN_INSTANT}.compaction.requested").exists()

    # a second run finds nothing more to do: every service ran exactly once (the broken table fails again, alone)
    again = CliRunner().invoke(cli, ["fleet", "run", "--config", str(config), "--json"])
    assert again.exit_code == 1
    second = [(o["table"], o["service"], o["status"]) for o in json.loads(again.stdout)["outcomes"]]
    assert second == [("rides_broken", "compaction", "failed")], again.stdout
    dry = CliRunner().invoke(cli, ["fleet", "run", "--config", str(config), "--dry-run", "--table", "rides_mor_due"])
    assert dry.exit_code == 0 and "Nothing due on any table" in dry.stdout
    # nor do the planners find any: the probe misses nothing after compaction, clean and archival
    assert_probe_matches_planners(load_fleet(config))


def test_fleet_run_log_compaction(warehouse: Warehouse, tmp_path: Path) -> None:
    """Log compaction scheduled where enough deltacommits piled up, then run: one ``.logcompaction``, rows equal."""
    wh = tmp_path / "wh"
    shutil.copytree(warehouse.root / "rides/mor_due", wh / "rides/mor_due")
    shutil.copytree(warehouse.root / "rides/mor_idle", wh / "rides/mor_idle")
    config = tmp_path / "f.yaml"
    options = {"hoodie.log.compaction.blocks.threshold": 3}
    config.write_text(yaml.safe_dump({"defaults": {"compaction_options": options}, "discover": [{"prefix": str(wh)}]}))
    before = hudi_rs_snapshot(wh / "rides/mor_due")
    idle = _hoodie_names(wh / "rides/mor_idle")

    r = CliRunner().invoke(cli, ["fleet", "run", "--config", str(config), "--services", "log_compaction", "--json"])
    assert r.exit_code == 0, r.output
    assert [(o["table"], o["service"], o["status"]) for o in json.loads(r.stdout)["outcomes"]] == [
        ("rides_mor_due", "log_compaction", "done")
    ]
    names = _hoodie_names(wh / "rides/mor_due")
    (plan,) = [n.split(".")[0] for n in names if n.endswith(".logcompaction.requested")]
    assert f"{plan}.deltacommit" in names
    assert_same_rows(hudi_rs_snapshot(wh / "rides/mor_due"), before)
    assert _hoodie_names(wh / "rides/mor_idle") == idle
    again = CliRunner().invoke(cli, ["fleet", "run", "--config", str(config), "--services", "log_compaction"])
    assert again.exit_code == 0 and "Nothing due on any table" in again.stdout


def test_probe_agrees_with_the_planners(warehouse: Warehouse, tmp_path: Path) -> None:
    """The cheap probe (names of ``.hoodie/`` only) against the services' own planners on every table of the
    warehouse (a copy: scheduling writes plans): due exactly where the planner finds work. The run test checks the
    same after its run (compacted, cleaned and archived timelines)."""
    wh = tmp_path / "wh"
    shutil.copytree(warehouse.root, wh)
    assert_probe_matches_planners(load_fleet(write_config(tmp_path / "f.yaml", wh)))
    # the other count-based cleaner policy, on a fresh copy
    shutil.rmtree(wh)
    shutil.copytree(warehouse.root, wh)
    versions = {"hoodie.cleaner.policy": "KEEP_LATEST_FILE_VERSIONS", "hoodie.cleaner.fileversions.retained": "2"}
    tables = load_fleet(write_config(tmp_path / "v.yaml", wh))
    work = assert_probe_matches_planners(
        [
            dataclasses.replace(
                t, service_maps={**t.service_maps, "clean": versions}, options={**t.options, **versions}
            )
            for t in tables
        ]
    )
    assert {n for n, services in work.items() if "clean" in services} == {
        "priority_clean",
        "sales_cow_archive",
        "rides_cow_old",
    }
    # by hours: only the table with commits older than the window has slices to clean
    shutil.rmtree(wh)
    shutil.copytree(warehouse.root, wh)
    hours = {"hoodie.cleaner.policy": "KEEP_LATEST_BY_HOURS", "hoodie.cleaner.hours.retained": "1"}
    work = assert_probe_matches_planners(
        [
            dataclasses.replace(t, service_maps={**t.service_maps, "clean": hours}, options={**t.options, **hours})
            for t in tables
        ]
    )
    assert {n for n, services in work.items() if "clean" in services} == {"rides_cow_old"}


def assert_probe_matches_planners(tables: list[Any]) -> dict[str, set[str]]:
    """For each Hudi table (but the broken one): the probe's due services == the services whose planner has work
    (scheduling runs on the table: give it a copy). Returns the services with work, by table."""
    from lake_orchestration.hudi.services.archive import ArchiveConfig, plan_archive
    from lake_orchestration.hudi.services.clean import CleanConfig, run_clean
    from lake_orchestration.hudi.services.clustering import ClusteringConfig, schedule_clustering
    from lake_orchestration.hudi.services.compaction import CompactionConfig, schedule_compaction
    from lake_orchestration.hudi.services.log_compaction import schedule_log_compaction
    from lake_orchestration.hudi.table import HudiTable

    found: dict[str, set[str]] = {}
    for t in tables:
        if t.format != "hudi" or t.name == "rides_broken":
            continue
        due = probe(t).due
        table = HudiTable(t.base_path)
        work = {
            "clean": bool(run_clean(table, CleanConfig.from_options(t.service_options("clean")), dry_run=True).files),
            "archive": bool(
                plan_archive(
                    table, ArchiveConfig.from_options(t.service_options("archive"), table_properties={})
                ).instants
            ),
        }
        if table.config.table_type.value == "MERGE_ON_READ":
            cfg = CompactionConfig.from_options(t.service_options("compaction"))
            work["log_compaction"] = schedule_log_compaction(HudiTable(t.base_path), config=cfg).scheduled
            work["compaction"] = schedule_compaction(HudiTable(t.base_path), config=cfg).scheduled
        else:
            work["compaction"] = work["log_compaction"] = False
        ccfg = ClusteringConfig.from_options(t.service_options("clustering"))
        # off unless hoodie.clustering.async.enabled; then the planner's dry run (the trigger applies)
        work["clustering"] = (
            ccfg.async_enabled and schedule_clustering(table, config=ccfg, dry_run=True).plan is not None
        )
        assert {s: d.needed for s, d in due.items()} == work, t.name
        found[t.name] = {s for s, w in work.items() if w}
    return found
