"""The fleet in the Dagster UI (issue 27): a code location of 24 tables from a config with ``defaults:`` serves the
fleet model (``fleet: auto``); the fleet health asset's page shows its table metadata, a row per table, and the
failed check naming the tables in breach; the sensors page lists one sensor per service kind, not one per table.

The tables are 3 real tables (a quiet one, one whose compaction trigger fired, one with clean work) copied; two
quiet tables have a policy that allows no completed instant on the active timeline, so they breach it.
``fleet__measure_health`` runs once in process against the webserver's instance before the browser looks.

``LAKE_ORCH_UPDATE_SCREENSHOT=1`` refreshes ``docs/img/dagster-fleet-health.png`` and
``docs/img/dagster-fleet-sensors.png`` (docs/dagster/fleet.md).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.browser.cdp import Browser
from tests.browser.test_dagster_backfill_ui import _popen
from tests.browser.test_dagster_ui import (
    TABLES_CONFIG_VARS,
    _dismiss_community_dialog,
    _free_port,
    _graphql,
    _kill_group,
    _wait_loaded,
    chromium,  # noqa: F401 - the fixture
)
from tests.conftest import REPO_ROOT

pytestmark = [pytest.mark.dagster, pytest.mark.browser]

IMG = REPO_ROOT / "docs" / "img"
UPDATE_SCREENSHOT = os.environ.get("LAKE_ORCH_UPDATE_SCREENSHOT") == "1"
BREACHING = ["orders_00", "orders_01"]


def _shot(browser: Browser, name: str, tmp_path: Path) -> None:
    path = (IMG if UPDATE_SCREENSHOT else tmp_path) / name
    time.sleep(0.5)
    browser.screenshot(path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.fixture
def fleet_location(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """24 tables, the fleet health measured once, a webserver: (url, dagster home)."""
    import dagster as dg

    from lake_orchestration.dagster.config import load_config_file
    from lake_orchestration.dagster.location import definitions_of
    from lake_orchestration.hudi.model.properties import TableType
    from tests.trips import trips_options, write_trips_history

    src, root = tmp_path / "src", tmp_path / "warehouse"
    mor = trips_options(hive_style_partitioning=True, small_file_limit=0)
    cow = trips_options(table_type=TableType.COPY_ON_WRITE, hive_style_partitioning=True, small_file_limit=0)
    write_trips_history(src / "quiet", mor, rows=30, upserts=0, fraction=0.3, partitions=1)
    write_trips_history(src / "compact", mor, rows=30, upserts=2, fraction=0.3, partitions=1)
    write_trips_history(src / "clean", cow, rows=30, upserts=3, fraction=0.3, partitions=1)
    tables = []
    for kind, prefix, n in (("quiet", "orders", 16), ("compact", "trips", 4), ("clean", "payments", 4)):
        for i in range(n):
            name = f"{prefix}_{i:02d}"
            shutil.copytree(src / kind, root / name)
            entry: dict[str, object] = {"name": name, "base_path": str(root / name)}
            if name in BREACHING:
                entry["policy"] = {"max_active_instants": 0}
            tables.append(entry)
    config = tmp_path / "lake_orchestration.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "defaults": {
                    "compaction_options": {"hoodie.compact.inline.max.delta.commits": 2},
                    "clean_options": {"hoodie.cleaner.commits.retained": 2},
                    "policy": {"max_log_files_per_slice": 20},
                },
                "tables": tables,
            },
            sort_keys=False,
        )
    )
    home, cwd = tmp_path / "dagster-home", tmp_path / "cwd"
    home.mkdir()
    cwd.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    defs = definitions_of(load_config_file(config))
    with dg.DagsterInstance.from_config(str(home)) as instance:
        result = defs.resolve_job_def("fleet__measure_health").execute_in_process(
            instance=instance, raise_on_error=False
        )
        assert result.success  # the check fails (tables in breach), the materialization succeeds

    env = {k: v for k, v in os.environ.items() if k not in TABLES_CONFIG_VARS}
    env.update(
        LAKE_ORCHESTRATION_CONFIG=str(config),
        DAGSTER_HOME=str(home),
        PYTHONPATH=str(REPO_ROOT),
        DAGSTER_DISABLE_TELEMETRY="1",
    )
    port = _free_port()
    exe = Path(sys.executable).parent / "dagster-webserver"
    web: subprocess.Popen[bytes] = _popen(
        [str(exe), "-w", str(REPO_ROOT / "workspace.yaml"), "-h", "127.0.0.1", "-p", str(port)],
        env,
        cwd,
        home / "webserver.log",
    )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_loaded(url, web, home / "webserver.log", timeout=90)
        yield url, home
    finally:
        _kill_group(web)


SENSORS = """
query { repositoriesOrError { ... on RepositoryConnection { nodes { sensors { name } jobs { name } } } } }
"""


def test_fleet_health_and_sensors_in_the_ui(
    chromium: str,  # noqa: F811
    fleet_location: tuple[str, Path],
    tmp_path: Path,
) -> None:
    url, _ = fleet_location
    (repo,) = _graphql(url, SENSORS)["repositoriesOrError"]["nodes"]  # type: ignore[index]
    sensors = sorted(s["name"] for s in repo["sensors"])
    assert sensors == sorted(
        ["fleet__compaction_sensor", "fleet__clean_sensor", "fleet__archive_sensor", "fleet__stale_inflight_sensor"]
    )
    with Browser(chromium) as browser:
        # the fleet health asset: its table metadata (a row per table)
        browser.goto(f"{url}/assets/fleet/health")
        browser.wait_for(lambda t: "tables_health" in t and "breaching_tables" in t, timeout=60, what="fleet/health")
        _dismiss_community_dialog(browser)
        browser.evaluate(
            "(() => { const el = [...document.querySelectorAll('*')].find(e => e.children.length === 0"
            " && (e.innerText || '').trim() === 'tables_health'); if (el) el.scrollIntoView(); })()"
        )
        text = browser.wait_for(lambda t: "trips_00" in t, timeout=30, what="a row per table")
        assert all(n in text for n in BREACHING)
        _shot(browser, "dagster-fleet-health.png", tmp_path)

        # its check: failed, naming the tables in breach
        browser.goto(f"{url}/assets/fleet/health?view=checks")
        text = browser.wait_for(lambda t: "tables_within_policy" in t, timeout=60, what="the checks of fleet/health")
        assert "Failed" in text or "failed" in text, text[:2000]
        _shot(browser, "dagster-fleet-health-check.png", tmp_path)

        # the sensors: one per service kind
        browser.goto(f"{url}/automation")
        text = browser.wait_for(
            lambda t: all(s in t for s in sensors) and t.count("Standard sensor") == 4 and t.count("Scheduled") == 3,
            timeout=60,
            what="the fleet's 4 sensors and 3 schedules on the automation page",
        )
        assert "trips_00__" not in text  # no per-table sensor
        _shot(browser, "dagster-fleet-sensors.png", tmp_path)
