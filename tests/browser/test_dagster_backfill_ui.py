"""A real browser on the path of issue 25: plans scheduled by the CLI become partitions without anything running
them, *Materialize… -> only missing -> Launch backfill* runs them, the table's health plots show the pending plans
appear and go.

One table (MOR, the code location's config file, the in-process engine by default), ``lake-orch compaction
schedule`` twice (one plan per city), then one ``dagster-webserver`` and one ``dagster-daemon`` (the sync sensor runs
by default and registers the plans; the backfill daemon launches the backfill's runs). Headless Chromium (Debian's
package, over the DevTools protocol: ``tests/browser/cdp.py``) clicks what a user clicks. The expected instants come
from the table's timeline; the committed table is compared with hudi-rs' read of it from before.

``LAKE_ORCH_UPDATE_SCREENSHOT=1`` refreshes the screenshots of docs/dagster/compaction.md in ``docs/img/``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.browser.cdp import Browser
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


def _shot(browser: Browser, name: str, tmp_path: Path) -> None:
    path = (IMG if UPDATE_SCREENSHOT else tmp_path) / name
    time.sleep(0.5)  # let fades finish before the picture
    browser.screenshot(path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _click(browser: Browser, selector_js: str, what: str, timeout: float = 20) -> None:
    """Click the element ``selector_js`` (a JS expression yielding it or null) once it exists."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        js = f"(() => {{ const el = {selector_js}; if (el && !el.disabled) {{ el.click(); return true; }}"
        js += " return false; })()"
        if browser.evaluate(js):
            return
        time.sleep(0.25)
    pytest.fail(f"could not click {what}; the page shows:\n{browser.text()[:2000]}")


def _button(text: str) -> str:
    return f"[...document.querySelectorAll('button')].find(b => b.innerText.trim().startsWith({text!r}))"


def _plots(browser: Browser, url: str) -> None:
    """The overview of ``hudi/t``, its Metadata section switched to Plots: one plot per numeric metadata key over
    the materializations and observations (the health the services and sensors record)."""
    browser.goto(f"{url}/assets/hudi/t")
    browser.wait_for(lambda t: "Metadata" in t and "Plots" in t, timeout=60, what="the overview of hudi/t")
    _click(browser, _button("Plots"), "Plots")
    browser.wait_for(lambda t: "pending_compactions" in t and "Loading plots" not in t, timeout=30, what="the plots")
    # the picture: the plot of pending_compactions at the top
    browser.evaluate(
        "(() => { const el = [...document.querySelectorAll('*')].find(e => e.children.length === 0"
        " && (e.innerText || '').trim() === 'pending_compactions'); if (el) el.scrollIntoView(); })()"
    )


def _pending(base: Path) -> list[str]:
    from lake_orchestration.hudi.table import HudiTable

    return [str(i.time) for i in HudiTable(str(base)).timeline.pending_compactions()]


def _popen(args: list[str], env: dict[str, str], cwd: Path, log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(args, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)


@pytest.fixture
def served(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, Path, list[str], Path]]:
    """The table with two plans scheduled by the CLI, served by a webserver and a daemon: (url, table, plans, home)."""
    from lake_orchestration.cli.app import cli
    from tests.dagster.test_compaction_partitions import _mor, _upsert

    base = _mor(tmp_path, city=0)
    plans = []
    for city in (0, 1):
        if city:
            _upsert(base, 2, city=1)
        result = CliRunner().invoke(
            cli,
            ["compaction", "schedule", str(base), "--option", "hoodie.compact.inline.max.delta.commits=1"],
            catch_exceptions=False,
        )
        assert result.exit_code == 0, result.output
        plans.append(_pending(base)[-1])
    assert _pending(base) == plans and len(set(plans)) == 2

    home, cwd = tmp_path / "dagster-home", tmp_path / "cwd"
    home.mkdir()
    cwd.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")  # the queued run coordinator: the daemon
    import dagster as dg

    # the instance's storage created once here: the webserver and the daemon starting together would both migrate it
    dg.DagsterInstance.from_config(str(home)).dispose()
    config = tmp_path / "lake_orchestration.yaml"
    config.write_text(
        f"tables:\n  - name: t\n    base_path: {base}\n    retry_max_retries: 0\n"
        "    compaction_options:\n      hoodie.compact.inline.max.delta.commits: 1\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in TABLES_CONFIG_VARS}
    env.update(
        LAKE_ORCHESTRATION_CONFIG=str(config),
        DAGSTER_HOME=str(home),
        PYTHONPATH=str(REPO_ROOT),
        DAGSTER_DISABLE_TELEMETRY="1",
    )
    bin_dir = Path(sys.executable).parent
    port = _free_port()
    workspace = str(REPO_ROOT / "workspace.yaml")
    web = _popen(
        [str(bin_dir / "dagster-webserver"), "-w", workspace, "-h", "127.0.0.1", "-p", str(port)],
        env, cwd, home / "webserver.log",
    )  # fmt: skip
    daemon = _popen([str(bin_dir / "dagster-daemon"), "run", "-w", workspace], env, cwd, home / "daemon.log")
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_loaded(url, web, home / "webserver.log", timeout=90)
        yield url, base, plans, home
    finally:
        _kill_group(daemon)
        _kill_group(web)


PARTITIONS = """
query { assetNodeOrError(assetKey: {path: ["hudi", "t", "compaction"]}) {
  ... on AssetNode { partitionKeys assetPartitionStatuses {
    ... on DefaultPartitionStatuses { materializedPartitions failedPartitions materializingPartitions } } } } }
"""


def _statuses(url: str) -> dict[str, list[str]]:
    node = _graphql(url, PARTITIONS)["assetNodeOrError"]
    return {"keys": node["partitionKeys"], **node["assetPartitionStatuses"]}  # type: ignore[index]


def test_cli_plans_are_partitions_and_materialize_missing_runs_them(
    chromium: str,  # noqa: F811
    served: tuple[str, Path, list[str], Path],
    tmp_path: Path,
) -> None:
    from tests.oracle import REWRITTEN_BY_SERVICES, assert_same_rows, hudi_rs_snapshot

    url, base, plans, home = served
    before = hudi_rs_snapshot(base)
    logs = lambda: "\n".join(f"{p.name}:\n{p.read_text()[-2500:]}" for p in home.glob("*.log"))  # noqa: E731

    # the daemon's first tick of t__sync_compaction_plans_sensor registers both plans; nothing runs them
    deadline = time.monotonic() + 120
    while sorted(_statuses(url)["keys"]) != sorted(plans) and time.monotonic() < deadline:
        time.sleep(1)
    status = _statuses(url)
    assert sorted(status["keys"]) == sorted(plans), logs()
    assert not status["materializedPartitions"] and not status["materializingPartitions"]

    with Browser(chromium) as browser:
        # 1. the partitions page: both plans, missing
        browser.goto(f"{url}/assets/hudi/t/compaction?view=partitions")
        browser.wait_for(lambda t: all(p in t for p in plans) and "Missing (2)" in t, timeout=45, what="2 missing")
        _dismiss_community_dialog(browser)
        _shot(browser, "dagster-backfill-1-partitions.png", tmp_path)

        # 2. the table's health plots: the sync sensor's observation counts two pending plans
        _plots(browser, url)
        _shot(browser, "dagster-backfill-2-health-pending.png", tmp_path)

        # 3. Materialize… -> only failed and missing -> Launch backfill
        browser.goto(f"{url}/assets/hudi/t/compaction?view=partitions")
        browser.wait_for(lambda t: "Missing (2)" in t, timeout=45, what="the partitions page")
        _click(browser, _button("Materialize"), "Materialize…")
        # until hudi/t is materialized once the UI asks "Are you sure?" (the upstream has no materialization; the
        # sensors' observations do not count): the plans do not need it, so Confirm
        text = browser.wait_for(
            lambda t: "Launch backfill" in t or "Are you sure?" in t, timeout=30, what="the partitions dialog"
        )
        if "Launch backfill" not in text:
            _click(browser, _button("Confirm"), "Confirm")
        browser.wait_for(lambda t: "Launch backfill" in t, timeout=30, what="the partitions dialog")
        missing = (
            "[...document.querySelectorAll('[role=dialog] *')]"
            ".find(e => e.children.length === 0 && (e.innerText || '').trim() === 'Missing')"
        )
        _click(browser, missing, "Partition selection: Missing")
        browser.wait_for(lambda t: "2 partitions" in t, timeout=15, what="2 partitions selected")
        _shot(browser, "dagster-backfill-3-materialize-missing.png", tmp_path)
        _click(browser, _button("Launch backfill"), "Launch backfill")

        # the backfill daemon launches one run per plan; each commits its plan
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            status = _statuses(url)
            if sorted(status["materializedPartitions"]) == sorted(plans) or status["failedPartitions"]:
                break
            time.sleep(2)
        assert sorted(status["materializedPartitions"]) == sorted(plans), (status, logs())
        assert _pending(base) == []
        # what the health plot draws: the observations of hudi/t, oldest first, count 2 pending plans, then 1, then 0
        import dagster as dg

        with dg.DagsterInstance.from_config(str(home)) as instance:
            records = instance.fetch_observations(dg.AssetKey(["hudi", "t"]), limit=50, ascending=True).records
            counts = [r.asset_observation.metadata["pending_compactions"].value for r in records]  # type: ignore[union-attr]
        assert counts[0] == 2 and counts[-1] == 0 and 1 in counts, counts
        assert_same_rows(hudi_rs_snapshot(base), before, ignore=REWRITTEN_BY_SERVICES)

        # 4. the partitions page: both materialized
        browser.goto(f"{url}/assets/hudi/t/compaction?view=partitions")
        browser.wait_for(lambda t: "Materialized (2)" in t, timeout=45, what="2 materialized")
        _shot(browser, "dagster-backfill-4-materialized.png", tmp_path)

        # 5. the health plots: the commits' observations bring pending_compactions back to 0
        _plots(browser, url)
        _shot(browser, "dagster-backfill-5-health-done.png", tmp_path)
