"""Clustering in the fleet model (issue 29): opt-in per table (``clustering_options`` with
``hoodie.clustering.async.enabled: true``); the probe finds it due by Hudi's async trigger
(``hoodie.clustering.async.max.commits`` commits since the last replacecommit) and the runner runs it in Hudi's
``buildTableServicePipeline`` order (after compaction, before clean and archive). Oracles: the timeline files, hudi-rs
reads the rows as before."""

from __future__ import annotations

from pathlib import Path

import yaml

from lake_orchestration.datagen import generate_trips
from lake_orchestration.fleet.config import SERVICES_BY_FORMAT, load_fleet
from lake_orchestration.fleet.probe import probe
from lake_orchestration.fleet.runner import DONE, run_fleet
from lake_orchestration.hudi.model.properties import TableType
from lake_orchestration.hudi.write import write_table
from tests.oracle import REWRITTEN_BY_SERVICES, assert_same_rows, hudi_rs_snapshot
from tests.trips import trips_options

ENABLED = {"hoodie.clustering.async.enabled": True, "hoodie.clustering.async.max.commits": 2}


def test_clustering_due_by_the_async_trigger_runs_in_order_and_only_where_enabled(tmp_path: Path) -> None:
    assert SERVICES_BY_FORMAT["hudi"] == ("compaction", "log_compaction", "clustering", "clean", "archive")
    for name in ("on", "off"):
        for seed in (1, 2, 3):  # three bulk inserts: small file groups in two cities
            write_table(
                str(tmp_path / name),
                generate_trips(60, partitions=2, seed=seed),
                operation="bulk_insert",
                options=trips_options(table_type=TableType.COPY_ON_WRITE),
            )
    config = tmp_path / "fleet.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "tables": [
                    {"name": "on", "base_path": str(tmp_path / "on"), "clustering_options": ENABLED},
                    {"name": "off", "base_path": str(tmp_path / "off")},
                ]
            }
        )
    )
    tables = {t.name: t for t in load_fleet(config)}
    due = {n: probe(t).due["clustering"] for n, t in tables.items()}
    assert due["on"].needed and due["on"].overdue == 1.5, due["on"]  # 3 commits / async.max.commits 2
    assert not due["off"].needed and "hoodie.clustering.async.enabled" in due["off"].reason
    before = hudi_rs_snapshot(tmp_path / "on")

    result = run_fleet(tables.values(), services=["clustering"])

    assert [(o.table, o.service, o.status) for o in result.outcomes] == [("on", "clustering", DONE)]
    replaced = sorted(p.name for p in (tmp_path / "on" / ".hoodie").glob("*.replacecommit"))
    assert len(replaced) == 1 and replaced[0].split(".")[0] in result.outcomes[0].detail
    assert not list((tmp_path / "off" / ".hoodie").glob("*.replacecommit*"))
    assert_same_rows(hudi_rs_snapshot(tmp_path / "on"), before, ignore=REWRITTEN_BY_SERVICES)
    # no commit since the clustering: not due any more
    assert not probe(tables["on"]).due["clustering"].needed
